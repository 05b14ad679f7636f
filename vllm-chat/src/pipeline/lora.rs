//! LoRA adapters as a vLLM server serves them: the adapters loaded at start-up
//! (`--lora-modules`) and at run time (`/v1/load_lora_adapter`,
//! `/v1/unload_lora_adapter`), by name, with the ids the engines know them by.
//!
//! The rules and messages are vllm-rs 0.33.0's (checked side by side by
//! `examples/scripts/control_conformance.py`): a name may not shadow the served model
//! or an adapter already loaded (unless `load_inplace`), and a run-time adapter on the
//! local file system must lie under one of the `VLLM_RUNTIME_LORA_ALLOWED_PATH_PREFIXES`
//! (a client must not make the engines read arbitrary files); other paths are hub
//! ids, for the engines to resolve.

use std::path::{Path, PathBuf};
use std::sync::RwLock;

use serde::Deserialize;
use vllm_client::EngineCoreClient;
use vllm_client::protocol::LoRARequest;

use super::ApiError;

/// An adapter given at start-up (`--lora-modules name=path` or
/// `{"name": …, "path": …, "base_model_name": …}`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct LoraModule {
    /// The model name requests use.
    pub name: String,
    /// Where the engines load it from.
    pub path: String,
    /// The base model it was trained on (`/v1/models` reports it as the parent).
    #[serde(default)]
    pub base_model_name: Option<String>,
}

impl LoraModule {
    /// Parses one `--lora-modules` value: `name=path` or a JSON object.
    pub fn parse(arg: &str) -> Result<Self, String> {
        if arg.trim_start().starts_with('{') {
            return serde_json::from_str(arg).map_err(|e| {
                format!("--lora-modules {arg}: not a {{\"name\", \"path\"}} object: {e}")
            });
        }
        match arg.split_once('=') {
            Some((name, path)) if !name.is_empty() && !path.is_empty() => Ok(Self {
                name: name.to_owned(),
                path: path.to_owned(),
                base_model_name: None,
            }),
            _ => Err(format!(
                "--lora-modules {arg}: expected name=path or a JSON object"
            )),
        }
    }
}

/// The body of `POST /v1/load_lora_adapter`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct LoadLoraBody {
    /// The adapter's model name.
    pub lora_name: String,
    /// Where the engines load it from.
    pub lora_path: String,
    /// Reload an adapter already loaded under this name (same id).
    #[serde(default)]
    pub load_inplace: bool,
}

/// The body of `POST /v1/unload_lora_adapter`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct UnloadLoraBody {
    /// The adapter's model name.
    pub lora_name: String,
}

/// Why a load or unload was refused: each API renders it its own way (the HTTP
/// endpoints with vllm-rs's HTTP messages, [`LoraError::api_error`]; a gRPC server with
/// its status codes).
#[derive(Debug, Clone, PartialEq)]
pub enum LoraError {
    /// A load without a name.
    EmptyName,
    /// A load without a path.
    EmptyPath,
    /// An unload without a name.
    MissingName,
    /// The name is the served model's.
    ConflictsWithBase(String),
    /// An adapter of this name is loaded (and the load is not in place).
    AlreadyLoaded(String),
    /// No adapter of this name is loaded.
    NotLoaded(String),
    /// A local path the rules refuse (the message says which rule).
    Path(&'static str),
    /// The engines refused or failed (the error as the HTTP endpoint reports it).
    Engine(ApiError),
}

impl LoraError {
    /// The error as vllm-rs's `/v1/load_lora_adapter` and `/v1/unload_lora_adapter`
    /// answer it.
    pub fn api_error(self) -> ApiError {
        match self {
            LoraError::EmptyName => ApiError::bad_request("lora_name must not be empty", None),
            LoraError::EmptyPath => ApiError::bad_request("lora_path must not be empty", None),
            LoraError::MissingName => ApiError::bad_request(
                "'lora_name' needs to be provided to unload a LoRA adapter.",
                Some("lora_name"),
            ),
            LoraError::ConflictsWithBase(name) => ApiError::bad_request(
                format!("LoRA adapter `{name}` conflicts with a served base model"),
                Some("lora_name"),
            ),
            LoraError::AlreadyLoaded(name) => ApiError::bad_request(
                format!(
                    "LoRA adapter `{name}` is already loaded. If you want to load the adapter \
                     in place, set 'load_inplace' to true."
                ),
                Some("lora_name"),
            ),
            LoraError::NotLoaded(name) => {
                ApiError::not_found(format!("The model `{name}` does not exist."), Some("model"))
            }
            LoraError::Path(message) => ApiError::bad_request(message, Some("lora_path")),
            LoraError::Engine(error) => error,
        }
    }
}

/// The adapters a server offers, by name.
#[derive(Debug)]
pub struct LoraRegistry {
    served_model_name: String,
    /// `VLLM_RUNTIME_LORA_ALLOWED_PATH_PREFIXES`, canonical; `None` when unset.
    allowed_prefixes: Option<Vec<PathBuf>>,
    adapters: RwLock<Vec<LoRARequest>>,
    /// Load and unload one at a time (each is an engine round trip).
    changes: tokio::sync::Mutex<()>,
}

impl LoraRegistry {
    /// An empty registry for a server of `served_model_name`; `allowed_prefixes` are
    /// the directories run-time adapters may be loaded from.
    pub fn new(
        served_model_name: impl Into<String>,
        allowed_prefixes: Option<Vec<PathBuf>>,
    ) -> Self {
        let allowed_prefixes = allowed_prefixes.map(|prefixes| {
            prefixes
                .into_iter()
                .map(|p| p.canonicalize().unwrap_or(p))
                .collect()
        });
        Self {
            served_model_name: served_model_name.into(),
            allowed_prefixes,
            adapters: RwLock::new(Vec::new()),
            changes: tokio::sync::Mutex::new(()),
        }
    }

    /// The prefixes of `VLLM_RUNTIME_LORA_ALLOWED_PATH_PREFIXES` (comma-separated).
    pub fn allowed_prefixes_from_env() -> Option<Vec<PathBuf>> {
        let value = std::env::var("VLLM_RUNTIME_LORA_ALLOWED_PATH_PREFIXES").ok()?;
        let prefixes: Vec<PathBuf> = value
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .collect();
        (!prefixes.is_empty()).then_some(prefixes)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<LoRARequest>> {
        self.adapters.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Vec<LoRARequest>> {
        self.adapters.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The adapter a request's `model` names, if it names one.
    pub fn get(&self, name: &str) -> Option<LoRARequest> {
        self.read().iter().find(|a| a.lora_name == name).cloned()
    }

    /// The adapters, in the order they were loaded.
    pub fn list(&self) -> Vec<LoRARequest> {
        self.read().clone()
    }

    fn next_id(&self) -> i64 {
        self.read().iter().map(|a| a.lora_int_id).max().unwrap_or(0) + 1
    }

    /// Loads a `--lora-modules` adapter at start-up (no path rules: the operator chose
    /// it).
    pub async fn load_static(
        &self,
        client: &EngineCoreClient,
        module: &LoraModule,
    ) -> Result<(), ApiError> {
        let _one_at_a_time = self.changes.lock().await;
        self.check_name(&module.name, false)
            .map_err(LoraError::api_error)?;
        let mut request = LoRARequest::new(&module.name, self.next_id(), &module.path);
        request.base_model_name = module.base_model_name.clone();
        self.add(client, request)
            .await
            .map_err(LoraError::api_error)?;
        Ok(())
    }

    /// `POST /v1/load_lora_adapter`: the success text, or vllm-rs's error.
    pub async fn load(
        &self,
        client: &EngineCoreClient,
        body: &LoadLoraBody,
    ) -> Result<String, ApiError> {
        self.load_adapter(client, &body.lora_name, &body.lora_path, body.load_inplace)
            .await
            .map_err(LoraError::api_error)?;
        Ok(format!(
            "Success: LoRA adapter '{}' added successfully.",
            body.lora_name
        ))
    }

    /// Loads adapter `name` from `path` at run time (the path rules apply), or reloads
    /// it under the same id with `inplace`: the adapter as loaded.
    pub async fn load_adapter(
        &self,
        client: &EngineCoreClient,
        name: &str,
        path: &str,
        inplace: bool,
    ) -> Result<LoRARequest, LoraError> {
        let _one_at_a_time = self.changes.lock().await;
        if name.is_empty() {
            return Err(LoraError::EmptyName);
        }
        if path.is_empty() {
            return Err(LoraError::EmptyPath);
        }
        self.check_name(name, inplace)?;
        self.check_path(path)?;
        let id = self
            .get(name)
            .map_or_else(|| self.next_id(), |a| a.lora_int_id);
        let mut request = LoRARequest::new(name, id, path);
        request.load_inplace = inplace;
        self.add(client, request).await
    }

    /// `POST /v1/unload_lora_adapter`: the success text, or vllm-rs's error.
    pub async fn unload(
        &self,
        client: &EngineCoreClient,
        body: &UnloadLoraBody,
    ) -> Result<String, ApiError> {
        self.unload_adapter(client, &body.lora_name)
            .await
            .map_err(LoraError::api_error)?;
        Ok(format!(
            "Success: LoRA adapter '{}' removed successfully.",
            body.lora_name
        ))
    }

    /// Unloads adapter `name` from the engines: the adapter as it was loaded.
    pub async fn unload_adapter(
        &self,
        client: &EngineCoreClient,
        name: &str,
    ) -> Result<LoRARequest, LoraError> {
        let _one_at_a_time = self.changes.lock().await;
        if name.is_empty() {
            return Err(LoraError::MissingName);
        }
        let Some(adapter) = self.get(name) else {
            return Err(LoraError::NotLoaded(name.to_owned()));
        };
        let removed = client.remove_lora(adapter.lora_int_id).await.map_err(|e| {
            LoraError::Engine(ApiError::internal(format!(
                "failed to remove LoRA adapter: {e}"
            )))
        })?;
        if !removed {
            return Err(LoraError::Engine(ApiError::internal(format!(
                "engine rejected removal of LoRA adapter `{}` with id {}",
                adapter.lora_name, adapter.lora_int_id
            ))));
        }
        self.write().retain(|a| a.lora_name != name);
        Ok(adapter)
    }

    fn check_name(&self, name: &str, inplace: bool) -> Result<(), LoraError> {
        if name == self.served_model_name {
            return Err(LoraError::ConflictsWithBase(name.to_owned()));
        }
        if !inplace && self.get(name).is_some() {
            return Err(LoraError::AlreadyLoaded(name.to_owned()));
        }
        Ok(())
    }

    /// A run-time adapter's path: hub ids pass; local paths must lie under an allowed
    /// prefix.
    fn check_path(&self, path: &str) -> Result<(), LoraError> {
        let local = path.starts_with('/') || path.starts_with('.') || path.starts_with('~');
        if !local {
            return Ok(());
        }
        let Some(prefixes) = &self.allowed_prefixes else {
            return Err(LoraError::Path(
                "Local LoRA adapter paths require VLLM_RUNTIME_LORA_ALLOWED_PATH_PREFIXES to be \
                 configured.",
            ));
        };
        if !path.starts_with('/') {
            return Err(LoraError::Path(
                "Local LoRA adapter paths must be absolute and under one of the prefixes \
                 configured by VLLM_RUNTIME_LORA_ALLOWED_PATH_PREFIXES.",
            ));
        }
        // Canonical, so that `..` and links cannot leave the prefixes.
        let Ok(canonical) = Path::new(path).canonicalize() else {
            return Err(LoraError::Path(
                "Local LoRA adapter path must exist and be accessible.",
            ));
        };
        if prefixes.iter().any(|prefix| canonical.starts_with(prefix)) {
            Ok(())
        } else {
            Err(LoraError::Path(
                "Local LoRA adapter path is outside the configured allowed prefixes.",
            ))
        }
    }

    async fn add(
        &self,
        client: &EngineCoreClient,
        request: LoRARequest,
    ) -> Result<LoRARequest, LoraError> {
        client.add_lora(&request).await.map_err(|e| {
            LoraError::Engine(ApiError::internal(format!(
                "failed to load LoRA adapter `{}`: {e}",
                request.lora_name
            )))
        })?;
        let mut adapters = self.write();
        let mut stored = request;
        stored.load_inplace = false;
        match adapters
            .iter_mut()
            .find(|a| a.lora_name == stored.lora_name)
        {
            Some(existing) => *existing = stored.clone(),
            None => adapters.push(stored.clone()),
        }
        Ok(stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lora_modules_parse_both_forms() {
        assert_eq!(
            LoraModule::parse("sql=/loras/sql").unwrap(),
            LoraModule {
                name: "sql".into(),
                path: "/loras/sql".into(),
                base_model_name: None
            }
        );
        let json =
            LoraModule::parse(r#"{"name": "a", "path": "/p", "base_model_name": "b"}"#).unwrap();
        assert_eq!(json.base_model_name.as_deref(), Some("b"));
        assert!(LoraModule::parse("no-path").is_err());
    }

    #[test]
    fn local_paths_need_an_allowed_prefix() {
        let dir = std::env::temp_dir().join(format!("lora-prefix-{}", std::process::id()));
        let inside = dir.join("adapter");
        std::fs::create_dir_all(&inside).unwrap();
        let open = LoraRegistry::new("m", None);
        assert!(open.check_path("org/hub-adapter").is_ok());
        assert!(open.check_path(inside.to_str().unwrap()).is_err());
        let guarded = LoraRegistry::new("m", Some(vec![dir.clone()]));
        assert!(guarded.check_path(inside.to_str().unwrap()).is_ok());
        let escape = format!("{}/../..", inside.display());
        let error = guarded.check_path(&escape).unwrap_err().api_error();
        assert_eq!(
            error.message,
            "Local LoRA adapter path is outside the configured allowed prefixes."
        );
        assert!(guarded.check_path("./relative").is_err());
        assert!(guarded.check_path("/no/such/dir").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
