//! What a model directory contributes to rendering: chat templates, special tokens,
//! the tokenizer, generation defaults and the context length.
//!
//! Files read, as transformers and vLLM read them: `tokenizer.json`,
//! `tokenizer_config.json` (`chat_template` as a string or a list of named
//! templates, `bos_token`/`eos_token`/… as strings or `AddedToken` objects,
//! `extra_special_tokens`), `chat_template.jinja` and `chat_template.json` (which
//! take precedence over `tokenizer_config.json`), `additional_chat_templates/*.jinja`,
//! `generation_config.json` and `config.json`.

use std::path::Path;

use serde_json::{Map, Value};

use crate::RenderError;

/// The chat templates of a model: one unnamed template or several named ones.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatTemplates {
    /// A single template.
    Single(String),
    /// Named templates (`default`, `tool_use`, `rag`, …), in file order.
    Named(Vec<(String, String)>),
}

/// The contents of a model directory that matter for rendering.
#[derive(Debug, Clone, Default)]
pub struct ModelFiles {
    /// `tokenizer.json`, if present.
    pub tokenizer_json: Option<Vec<u8>>,
    /// The chat template(s), if any.
    pub chat_templates: Option<ChatTemplates>,
    /// Special tokens given to templates (`bos_token`, `eos_token`, …), in
    /// transformers' `special_tokens_map` order.
    pub special_tokens: Vec<(String, String)>,
    /// `generation_config.json` (sampling defaults), if present.
    pub generation_config: Option<Map<String, Value>>,
    /// `config.json`, if present.
    pub config: Option<Map<String, Value>>,
    /// `tokenizer_config.json`'s `model_max_length`, if present.
    pub model_max_length: Option<u64>,
}

/// The keys of transformers' `SPECIAL_TOKENS_ATTRIBUTES`, in `special_tokens_map` order.
const SPECIAL_TOKEN_KEYS: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
];

fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, RenderError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(RenderError::Io {
            path: path.display().to_string(),
            source,
        }),
    }
}

fn read_json(path: &Path) -> Result<Option<Map<String, Value>>, RenderError> {
    let Some(bytes) = read_optional(path)? else {
        return Ok(None);
    };
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(_) => Err(RenderError::ModelFile {
            path: path.display().to_string(),
            message: "not a JSON object".into(),
        }),
        Err(e) => Err(RenderError::ModelFile {
            path: path.display().to_string(),
            message: e.to_string(),
        }),
    }
}

fn token_content(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("content").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

fn templates_from_value(v: &Value) -> Option<ChatTemplates> {
    match v {
        Value::String(s) => Some(ChatTemplates::Single(s.clone())),
        Value::Array(items) => Some(ChatTemplates::Named(
            items
                .iter()
                .filter_map(|item| {
                    Some((
                        item.get("name")?.as_str()?.to_owned(),
                        item.get("template")?.as_str()?.to_owned(),
                    ))
                })
                .collect(),
        )),
        _ => None,
    }
}

impl ModelFiles {
    /// Reads a model directory. Missing files are fine; unreadable or malformed ones are errors.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, RenderError> {
        let dir = dir.as_ref();
        let tokenizer_config = read_json(&dir.join("tokenizer_config.json"))?.unwrap_or_default();
        let mut files = ModelFiles::from_tokenizer_config(&tokenizer_config);
        files.tokenizer_json = read_optional(&dir.join("tokenizer.json"))?;
        files.generation_config = read_json(&dir.join("generation_config.json"))?;
        files.config = read_json(&dir.join("config.json"))?;

        // chat_template.json / chat_template.jinja override tokenizer_config.json.
        if let Some(map) = read_json(&dir.join("chat_template.json"))?
            && let Some(t) = map.get("chat_template").and_then(templates_from_value)
        {
            files.chat_templates = Some(t);
        }
        if let Some(bytes) = read_optional(&dir.join("chat_template.jinja"))? {
            files.chat_templates = Some(ChatTemplates::Single(
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
        let extra_dir = dir.join("additional_chat_templates");
        if let Ok(entries) = std::fs::read_dir(&extra_dir) {
            let mut named: Vec<(String, String)> = match files.chat_templates.take() {
                Some(ChatTemplates::Single(t)) => vec![("default".into(), t)],
                Some(ChatTemplates::Named(v)) => v,
                None => Vec::new(),
            };
            let mut paths: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
            paths.sort();
            for path in paths {
                if path.extension().and_then(|e| e.to_str()) != Some("jinja") {
                    continue;
                }
                let Some(name) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned)
                else {
                    continue;
                };
                if let Some(bytes) = read_optional(&path)? {
                    named.push((name, String::from_utf8_lossy(&bytes).into_owned()));
                }
            }
            files.chat_templates = Some(ChatTemplates::Named(named));
        }
        Ok(files)
    }

    /// What `tokenizer_config.json` says: templates and special tokens.
    pub fn from_tokenizer_config(config: &Map<String, Value>) -> Self {
        let mut special_tokens = Vec::new();
        for key in SPECIAL_TOKEN_KEYS {
            if let Some(tok) = config.get(key).and_then(token_content) {
                special_tokens.push((key.to_owned(), tok));
            }
        }
        if let Some(Value::Object(extra)) = config.get("extra_special_tokens") {
            for (k, v) in extra {
                if let Some(tok) = token_content(v)
                    && !special_tokens.iter().any(|(key, _)| key == k)
                {
                    special_tokens.push((k.clone(), tok));
                }
            }
        }
        ModelFiles {
            chat_templates: config.get("chat_template").and_then(templates_from_value),
            special_tokens,
            model_max_length: config.get("model_max_length").and_then(Value::as_u64),
            ..ModelFiles::default()
        }
    }

    /// The model's context length: `config.json`'s `max_position_embeddings` (or the
    /// usual alternatives), as vLLM derives `max_model_len`.
    pub fn max_model_len(&self) -> Option<u64> {
        let config = self.config.as_ref()?;
        let text_config = config.get("text_config").and_then(Value::as_object);
        for key in [
            "max_position_embeddings",
            "n_positions",
            "max_seq_len",
            "seq_length",
            "max_sequence_length",
        ] {
            let v = config
                .get(key)
                .or_else(|| text_config.and_then(|t| t.get(key)));
            if let Some(v) = v.and_then(Value::as_u64) {
                return Some(v);
            }
        }
        None
    }
}
