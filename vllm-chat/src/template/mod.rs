//! The Jinja environment: minijinja configured to render as transformers' jinja2 does.
//!
//! transformers compiles chat templates in an `ImmutableSandboxedEnvironment` with
//! `trim_blocks`, `lstrip_blocks`, the `loopcontrols` extension, a `{% generation %}`
//! tag, and three additions: a Python `json.dumps`-based `tojson`, `raise_exception`
//! and `strftime_now`. Templates read Python string and dict methods
//! (`.strip()`, `.items()`, …), provided here by minijinja-contrib's pycompat layer.
//!
//! Templates come from model repositories and requests, so they are untrusted: each
//! render runs on a fuel budget and a recursion limit and every failure is an error
//! value, never a panic.

mod alloc;
mod clock;
mod compiled;
pub mod content_format;
mod context;
mod filters;
mod guard;
mod identical;
mod message_cache;
mod pyjson;
mod pyrepr;
mod tool_cache;
mod value;

pub(crate) use context::RenderContext;
pub(crate) use message_cache::MessageCache;
pub(crate) use pyjson::write_string as write_json_string;
pub(crate) use pyrepr::write_float;
pub(crate) use tool_cache::ToolCache;
pub(crate) use value::from_json;

pub use clock::Clock;
pub use content_format::ContentFormat;

use std::collections::HashMap;

use minijinja::value::{Kwargs, Rest};
use minijinja::{Environment, Error, ErrorKind, State, Value, syntax::SyntaxConfig};

use crate::RenderError;

/// Limits that keep an untrusted template from running away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Instructions one render may execute (minijinja fuel).
    pub fuel: u64,
    /// Maximum nesting of macro calls, includes and loops.
    pub recursion: usize,
    /// Bytes of rendered output (the prompt text) one render may produce.
    pub max_output_bytes: usize,
    /// Largest string (or list, at 24 bytes per item) one template operation may make:
    /// `format` widths, `indent`/`center`/`ljust`/`rjust`/`zfill` widths, `tojson`
    /// output (and its indent), `join`, `replace`, `expandtabs`, `string`, `list`; and, in
    /// templates sent with requests, the operators `+`, `*` and `~` (list items at 32
    /// bytes each).
    pub max_value_bytes: usize,
    /// Bytes the operators (`+`, `*`, `~`) of a template sent with a request may make in
    /// one render, all their results counted (list items at 32 bytes each).
    pub max_made_bytes: usize,
    /// Bytes of converted messages a renderer keeps across requests.
    pub message_cache_bytes: usize,
    /// Bytes of converted tool lists a renderer keeps across requests.
    pub tool_cache_bytes: usize,
    /// Messages and tool lists larger than this are converted for their request only,
    /// never cached.
    pub cache_entry_bytes: usize,
}

impl Default for Limits {
    /// 50 million instructions (a 100-turn conversation with tools takes well under
    /// one million), a recursion depth of 200, 64 MiB of output, 16 MiB per operation,
    /// 256 MiB made by a request template's operators in one render, caches of 64 MiB (messages) and 16 MiB (tool lists) holding entries of up to 1 MiB.
    fn default() -> Self {
        Limits {
            fuel: 50_000_000,
            recursion: 200,
            max_output_bytes: 64 << 20,
            max_value_bytes: 16 << 20,
            max_made_bytes: 256 << 20,
            message_cache_bytes: 64 << 20,
            tool_cache_bytes: 16 << 20,
            cache_entry_bytes: 1 << 20,
        }
    }
}

/// How often templates were rendered by the compiled fast path
/// ([`ChatRenderer::fast_path_stats`](crate::ChatRenderer::fast_path_stats)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FastPathStats {
    /// Templates compiled for the fast path (the others always use the interpreter).
    pub templates: usize,
    /// Renders the fast path finished.
    pub finished: u64,
    /// Renders the fast path handed to the interpreter (an error, a feature it does
    /// not compile, an unusual value).
    pub fell_back: u64,
}

/// Compiled chat templates, keyed by name, sharing one configured environment.
pub(crate) struct TemplateSet {
    env: Environment<'static>,
    syntax: SyntaxConfig,
    clock: Clock,
    limits: Limits,
    /// Fast-path programs by template name (absent: the interpreter renders).
    programs: HashMap<String, compiled::Program>,
    /// Compile templates for the fast path (off: minijinja renders everything).
    fast_path: bool,
    /// Render through [`guard`]'s checked bytecode instead of minijinja's templates
    /// (templates sent with requests).
    guarded: bool,
    /// A checked set's template sources. They are kept out of `env`, so that no
    /// `include`, `import` or `extends` can reach an unchecked copy of them.
    guarded_sources: HashMap<String, String>,
}

impl std::fmt::Debug for TemplateSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateSet")
            .field(
                "templates",
                &self
                    .env
                    .templates()
                    .map(|(n, _)| n)
                    .chain(self.guarded_sources.keys().map(String::as_str))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl TemplateSet {
    /// An environment with transformers' settings, the given clock and limits for
    /// templates that come with the model; `fast_path` compiles templates for
    /// [`compiled`] rendering too.
    pub(crate) fn new(clock: Clock, limits: Limits, fast_path: bool) -> Self {
        let mut env = Environment::new();
        // trim/lstrip on; keep_trailing_newline off, as jinja2's default.
        let syntax = SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .unwrap_or_default();
        env.set_syntax(syntax.clone());
        env.set_fuel(Some(limits.fuel));
        env.set_recursion_limit(limits.recursion);
        let max = limits.max_value_bytes;
        env.set_unknown_method_callback(move |state, value, method, args| {
            alloc::check_method(state, value, method, args, max)?;
            minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
        });
        alloc::guard_filters(&mut env, max);
        env.add_filter(
            "tojson",
            move |state: &State, value: &Value, indent: Option<Value>, kwargs: Kwargs| {
                tojson(state, value, indent, kwargs, max)
            },
        );
        env.add_filter("map", filters::map);
        env.add_filter("select", filters::select);
        env.add_filter("reject", filters::reject);
        env.add_filter("selectattr", filters::selectattr);
        env.add_filter("rejectattr", filters::rejectattr);
        env.add_filter("wordcount", wordcount);
        env.add_test("none", |v: &Value| value::is_none(v));
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", move |format: &str| {
            clock.strftime_now(format)
        });
        guard::install(&mut env, limits);
        TemplateSet {
            env,
            syntax,
            clock,
            limits,
            programs: HashMap::new(),
            fast_path,
            guarded: false,
            guarded_sources: HashMap::new(),
        }
    }

    /// An environment for templates sent with requests: minijinja renders them with
    /// [`guard`]'s size checks on every operator and write (never the fast path).
    pub(crate) fn untrusted(clock: Clock, limits: Limits) -> Self {
        TemplateSet {
            guarded: true,
            ..TemplateSet::new(clock, limits, false)
        }
    }

    /// Compiles `source` under `name` (replacing a template of that name).
    pub(crate) fn add(&mut self, name: &str, source: &str) -> Result<(), RenderError> {
        check_operator_chains(source, self.syntax.clone())?;
        let source = rewrite_generation_tags(source);
        if self.guarded {
            // On the source minijinja compiles (`{% generation %}` rewritten), which
            // must parse for the check to see its constants.
            guard::check_constants(&source, self.syntax.clone(), self.limits.max_value_bytes)
                .map_err(|e| RenderError::Template(describe(&e)))?;
        }
        self.programs.remove(name);
        let program = match self.fast_path {
            true => compiled::Program::compile(&self.env, &source, self.syntax.clone()),
            false => None,
        };
        if self.guarded {
            guard::Guarded::compile(name, &source, self.syntax.clone())
                .map_err(|e| RenderError::TemplateSyntax(describe(&e)))?;
            self.guarded_sources.insert(name.to_owned(), source);
        } else {
            self.env
                .add_template_owned(name.to_owned(), source)
                .map_err(|e| RenderError::TemplateSyntax(describe(&e)))?;
        }
        if let Some(program) = program {
            self.programs.insert(name.to_owned(), program);
        }
        Ok(())
    }

    /// How the compiled fast path has served this set's templates.
    pub(crate) fn fast_path_stats(&self) -> FastPathStats {
        let mut stats = FastPathStats {
            templates: self.programs.len(),
            ..FastPathStats::default()
        };
        for program in self.programs.values() {
            let (finished, fell_back) = program.counts();
            stats.finished += finished;
            stats.fell_back += fell_back;
        }
        stats
    }

    /// True when a template of this name was added.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.guarded_sources.contains_key(name) || self.env.get_template(name).is_ok()
    }

    /// Renders template `name` with `ctx`.
    pub(crate) fn render(&self, name: &str, ctx: Value) -> Result<String, RenderError> {
        let max = self.limits.max_output_bytes;
        // The fast path charges every byte it makes to the fuel, so it cannot allocate
        // much more than the fuel; its output is checked against the same limit.
        if let Some(program) = self.programs.get(name)
            && let Some(out) = program.render(&ctx, self.clock, self.limits.fuel)
        {
            if out.len() > max {
                return Err(alloc::output_too_large(max));
            }
            return Ok(out);
        }
        if let Some(source) = self.guarded_sources.get(name) {
            let program = guard::Guarded::compile(name, source, self.syntax.clone())
                .map_err(|e| RenderError::TemplateSyntax(describe(&e)))?;
            return match program.render(&self.env, ctx) {
                Ok(Some(out)) => Ok(out),
                Ok(None) => Err(alloc::output_too_large(max)),
                Err(e) => Err(RenderError::Template(describe(&e))),
            };
        }
        let template = self
            .env
            .get_template(name)
            .map_err(|e| RenderError::Template(describe(&e)))?;
        let mut out = alloc::Bounded::new(max);
        match template.render_captured_to(ctx, &mut out) {
            Ok(_) => String::from_utf8(out.buf).map_err(|e| RenderError::Template(e.to_string())),
            Err(_) if out.full => Err(alloc::output_too_large(max)),
            Err(e) => Err(RenderError::Template(describe(&e))),
        }
    }
}

/// Renders one template source with a JSON context in the renderer's environment
/// (same filters, clock and limits), checked as a template sent with a request is:
/// handy to check a template or a feature.
pub fn render_str(
    source: &str,
    context: &serde_json::Value,
    options: &crate::RendererOptions,
) -> Result<String, RenderError> {
    let mut set = TemplateSet::new(options.clock, options.limits, !options.interpreter_only);
    set.guarded = true;
    set.add("template", source)?;
    let ctx = match context {
        serde_json::Value::Null => Value::from(()),
        other => from_json(other),
    };
    set.render("template", ctx)
}

/// Most operators (`+`, `~`, `|`, `.`, `[`, `and`, …) one tag may chain.
///
/// minijinja parses `a + b + c …` into a tree as deep as the chain and compiles it
/// recursively, so a tag with thousands of operators overflows the stack (an abort,
/// not an error) — before any limit of ours applies. Real templates use a few dozen;
/// jinja2 gives up on such chains too (Python's recursion limit).
const MAX_OPERATORS_PER_TAG: usize = 1_000;

/// Refuses a template with a tag chaining more than [`MAX_OPERATORS_PER_TAG`]
/// operators. Lexer errors are left for minijinja to report.
fn check_operator_chains(source: &str, syntax: SyntaxConfig) -> Result<(), RenderError> {
    use minijinja::machinery::{Token, tokenize};
    let mut operators = 0usize;
    for token in tokenize(source, false, syntax) {
        let Ok((token, _)) = token else {
            return Ok(());
        };
        match token {
            Token::VariableStart | Token::BlockStart => operators = 0,
            Token::Plus
            | Token::Minus
            | Token::Mul
            | Token::Div
            | Token::FloorDiv
            | Token::Pow
            | Token::Mod
            | Token::Dot
            | Token::Tilde
            | Token::Pipe
            | Token::Eq
            | Token::Ne
            | Token::Gt
            | Token::Gte
            | Token::Lt
            | Token::Lte
            | Token::BracketOpen
            | Token::ParenOpen
            | Token::Ident("and" | "or" | "not" | "is" | "in" | "if") => {
                operators += 1;
                if operators > MAX_OPERATORS_PER_TAG {
                    return Err(RenderError::TemplateSyntax(format!(
                        "a tag chains more than {MAX_OPERATORS_PER_TAG} operators"
                    )));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The message of a template error: a `raise_exception` text as the template wrote
/// it, else minijinja's description of what failed.
fn describe(err: &Error) -> String {
    match (err.kind(), err.detail()) {
        (ErrorKind::InvalidOperation, Some(detail)) => detail.to_owned(),
        (_, Some(detail)) => format!("{}: {detail}", err.kind()),
        (_, None) => err.kind().to_string(),
    }
}

/// `{% generation %}…{% endgeneration %}` (transformers' assistant-mask tag) renders its
/// body unchanged. Rewriting it to an always-true `if` keeps the whitespace control
/// (`-`, trim/lstrip) of the original tags.
fn rewrite_generation_tags(source: &str) -> String {
    if !source.contains("generation") {
        return source.to_owned();
    }
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find("{%") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("%}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let core = inner.trim_matches(|c: char| c == '-' || c == '+' || c.is_whitespace());
        let replacement = match core {
            "generation" => Some("if true"),
            "endgeneration" => Some("endif"),
            _ => None,
        };
        out.push_str("{%");
        match replacement {
            Some(r) => {
                let lead = &inner[..inner.len() - inner.trim_start_matches(['-', '+']).len()];
                let trail = &inner[inner.trim_end_matches(['-', '+']).len()..];
                out.push_str(lead);
                out.push(' ');
                out.push_str(r);
                out.push(' ');
                out.push_str(trail);
            }
            None => out.push_str(inner),
        }
        out.push_str("%}");
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// `raise_exception(message)`: fails the render with the template's message.
fn raise_exception(message: Rest<Value>) -> Result<Value, Error> {
    let text = message
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(" ");
    Err(Error::new(ErrorKind::InvalidOperation, text))
}

/// `wordcount`: jinja2 counts `\w+` runs (letters, digits and `_`, Unicode-aware).
fn wordcount(s: &str) -> usize {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .count()
}

/// `tojson`: Python's `json.dumps` with transformers' defaults (`ensure_ascii=False`).
fn tojson(
    state: &State,
    value: &Value,
    indent: Option<Value>,
    kwargs: Kwargs,
    max: usize,
) -> Result<Value, Error> {
    // The indent string is made from the argument first: bound it.
    let width = match &indent {
        Some(v) => Some(v.clone()),
        None => kwargs.get::<Option<Value>>("indent")?,
    };
    if let Some(w) = width.filter(|w| w.kind() == minijinja::value::ValueKind::Number)
        && i64::try_from(w).unwrap_or(i64::MAX) > max as i64
    {
        return Err(alloc::too_large("tojson's indent", max));
    }
    let opts = pyjson::DumpOptions::from_kwargs(indent, &kwargs)?;
    alloc::check_tojson(state, value, opts.indent.as_deref(), max)?;
    pyjson::dumps(value, &opts)
}

#[cfg(test)]
mod tests {
    use super::rewrite_generation_tags;

    #[test]
    fn generation_tags_become_plain_blocks() {
        assert_eq!(
            rewrite_generation_tags("a{%- generation -%}b{% endgeneration %}c{{ x }}"),
            "a{%- if true -%}b{% endif %}c{{ x }}"
        );
    }
}
