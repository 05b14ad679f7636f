//! Compiled templates: the common chat-template code run without minijinja's VM.
//!
//! Profiles of chat renders put 65–82% of the time in minijinja's interpreter: every
//! loop iteration, attribute access and comparison goes through its stack machine,
//! its frame and loop objects and its fuel accounting. Chat templates use a small
//! part of Jinja — loops over messages, `if`, `set`, namespaces, attribute and item
//! access, string concatenation, a few tests, filters and string methods — so that
//! part is compiled here (from minijinja's own syntax tree, so parsing and whitespace
//! handling are minijinja's) into a tree walked directly over minijinja values.
//!
//! Exactness comes from falling back, not from re-implementing everything: each
//! compiled operation handles the value kinds whose behaviour it mirrors exactly and
//! gives up on anything else (an error, a `raise_exception`, a macro, an unusual
//! type). A render that gives up is rendered again by minijinja from the start —
//! templates have no side effects — so output and error messages are always the
//! interpreter's. The parity corpus runs with this path on; a differential test
//! compares both paths on every corpus template and case.

mod builtins;
mod closure;
mod eval;
mod ir;
mod lower;

use std::sync::atomic::{AtomicU32, Ordering};

use minijinja::machinery;
use minijinja::syntax::SyntaxConfig;
use minijinja::{Environment, Value};

use super::clock::Clock;
use ir::{MacroDef, Name, Stmt};

/// A template compiled for the fast path.
pub(crate) struct Program {
    body: Vec<Stmt>,
    names: Vec<Box<str>>,
    macros: Vec<MacroDef>,
    /// Per name: the environment defines a global of that name (a function).
    globals: Vec<bool>,
    /// Renders that fell back to the interpreter and renders that finished here.
    bailed: AtomicU32,
    finished: AtomicU32,
    /// Renders not tried here because too many fell back.
    skipped: AtomicU32,
    /// Length of the last finished output, to size the next one's buffer.
    last_len: AtomicU32,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("statements", &self.body.len())
            .field("bailed", &self.bailed.load(Ordering::Relaxed))
            .field("finished", &self.finished.load(Ordering::Relaxed))
            .finish()
    }
}

/// After this many fallbacks a template whose renders mostly fall back tries the
/// compiled path only once every [`RETRY_EVERY`] renders (each failed attempt is
/// wasted work; the occasional retry lets it recover when the traffic changes).
const BAIL_PATIENCE: u32 = 32;
const RETRY_EVERY: u32 = 64;

impl Program {
    /// Compiles `source` as `env` would parse it. `None` when the template cannot
    /// take the fast path at all (a syntax error, or top-level code that always
    /// falls back).
    pub(crate) fn compile(
        env: &Environment<'_>,
        source: &str,
        syntax: SyntaxConfig,
    ) -> Option<Self> {
        let ast = machinery::parse(source, "<compiled>", syntax).ok()?;
        let lowered = lower::lower(&ast);
        if lowered.body.iter().any(|s| matches!(s, Stmt::Bail)) {
            return None;
        }
        let globals = lowered
            .names
            .iter()
            .map(|name| env.globals().any(|(g, _)| g == &**name))
            .collect();
        Some(Program {
            body: lowered.body,
            names: lowered.names,
            macros: lowered.macros,
            globals,
            bailed: AtomicU32::new(0),
            finished: AtomicU32::new(0),
            skipped: AtomicU32::new(0),
            last_len: AtomicU32::new(0),
        })
    }

    /// Renders with `ctx`, or `None` when the interpreter must render instead.
    pub(crate) fn render(&self, ctx: &Value, clock: Clock, fuel: u64) -> Option<String> {
        let bailed = self.bailed.load(Ordering::Relaxed);
        if bailed > BAIL_PATIENCE
            && bailed > self.finished.load(Ordering::Relaxed)
            && !self
                .skipped
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(RETRY_EVERY)
        {
            return None;
        }
        match eval::Run::new(self, ctx, clock, fuel).run() {
            Ok(out) => {
                saturating_increment(&self.finished);
                self.last_len.store(
                    u32::try_from(out.len()).unwrap_or(u32::MAX),
                    Ordering::Relaxed,
                );
                Some(out)
            }
            Err(eval::Bail) => {
                saturating_increment(&self.bailed);
                None
            }
        }
    }

    /// (renders finished here, renders handed to the interpreter).
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            u64::from(self.finished.load(Ordering::Relaxed)),
            u64::from(self.bailed.load(Ordering::Relaxed)),
        )
    }

    fn is_global(&self, name: Name) -> bool {
        self.globals[name as usize]
    }

    fn output_hint(&self) -> usize {
        (self.last_len.load(Ordering::Relaxed) as usize).saturating_add(64)
    }
}

fn saturating_increment(counter: &AtomicU32) {
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1));
}

#[cfg(test)]
mod differential;
#[cfg(test)]
mod tests;
