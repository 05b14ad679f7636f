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

mod eval;
mod ir;
mod lower;

use std::sync::atomic::{AtomicU32, Ordering};

use minijinja::machinery;
use minijinja::syntax::SyntaxConfig;
use minijinja::{Environment, Value};

use super::clock::Clock;
use ir::{Name, Stmt};

/// A template compiled for the fast path.
pub(crate) struct Program {
    body: Vec<Stmt>,
    names: Vec<Box<str>>,
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
mod tests {
    use serde_json::json;

    use super::super::{Clock, Limits, TemplateSet, from_json};

    /// Renders `source` with the compiled path (which must finish) and with the
    /// interpreter; both must agree.
    fn check(source: &str, ctx: serde_json::Value) -> String {
        let clock = Clock::Fixed(1_768_473_045);
        let mut fast = TemplateSet::new(clock, Limits::default(), true);
        let mut slow = TemplateSet::new(clock, Limits::default(), false);
        fast.add("t", source).expect("compiles");
        slow.add("t", source).expect("compiles");
        let ctx = from_json(&ctx);
        let program = fast
            .programs
            .get("t")
            .unwrap_or_else(|| panic!("not compiled: {source:?}"));
        let got = program
            .render(&ctx, clock, Limits::default().fuel)
            .unwrap_or_else(|| panic!("fast path fell back on {source:?}"));
        let want = slow.render("t", ctx).expect("interpreter renders");
        assert_eq!(got, want, "{source}");
        got
    }

    #[test]
    fn compiled_constructs_render_as_the_interpreter() {
        let messages = json!({"messages": [
            {"role": "system", "content": "  sys  "},
            {"role": "user", "content": "hi <think>x</think> there"},
            {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"b": 1, "a": [1, 2]}}}]},
            {"role": "tool", "content": "42"},
        ], "n": 3, "flag": false});
        let cases = [
            "{% for m in messages %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }}|{% endfor %}",
            "{% for m in messages %}{{ loop.previtem.role if loop.previtem is defined else '-' }}>{{ loop.nextitem.role if loop.nextitem is defined else '-' }} {% endfor %}",
            "{% for m in messages[::-1] %}{{ m.role }} {% endfor %}{% for m in messages[1:3] %}{{ m['role'] }} {% endfor %}{{ messages[-1].content }}{{ 'abcdef'[1:4] }}{{ 'abcdef'[::-2] }}",
            "{% set ns = namespace(a=0, s='') %}{% for m in messages %}{% set ns.a = ns.a + 1 %}{% set ns.s = ns.s ~ m.role[0] %}{% endfor %}{{ ns.a }}{{ ns.s }}",
            "{% for m in messages if m.role != 'system' %}{{ m.role }}{{ loop.index }}{% else %}none{% endfor %}{% for x in [] %}x{% else %}empty{% endfor %}",
            "{% for m in messages %}{% if m.role == 'tool' %}{% break %}{% endif %}{% if m.role == 'system' %}{% continue %}{% endif %}{{ m.role }}{% endfor %}",
            "{% for m in messages %}{% set last = m.role %}{% endfor %}{{ last is defined }}{% set x = 1 %}{% for m in messages %}{% set x = x + 1 %}{% endfor %}{{ x }}",
            "{{ messages[0].content | trim }}|{{ messages[0].content.strip() }}|{{ messages[0].content.lstrip() }}|{{ messages[0].content.rstrip() }}|{{ 'xxhixx'.strip('x') }}",
            "{{ messages[1].content.split('</think>')[-1].lstrip() }}|{{ messages[1].content.split() | length }}|{{ 'a,b,c'.split(',', 1) }}",
            "{{ messages[1].content.startswith('hi') }}{{ messages[1].content.endswith('re') }}{{ '<think>' in messages[1].content }}{{ 'zz' not in messages[1].content }}{{ 'user' in ['user', 'x'] }}{{ 'role' in messages[0] }}",
            "{{ messages[2].tool_calls[0].function.arguments | tojson }}{{ messages[2].tool_calls[0].function | tojson(indent=2) }}{{ messages | length }}",
            "{% for k, v in messages[2].tool_calls[0].function.arguments.items() %}{{ k }}={{ v }};{% endfor %}{{ messages[0].get('role') }}{{ messages[0].get('nope', 'dflt') }}",
            "{{ messages[2].content is none }}{{ messages[2].content is not none }}{{ n is number }}{{ n is integer }}{{ flag is false }}{{ flag is boolean }}{{ messages is sequence }}{{ messages[0] is mapping }}{{ 'x' is string }}{{ undefined_var is undefined }}",
            "{{ n + 2 }}{{ n - 5 }}{{ n * 2 }}{{ n % 2 }}{{ 7 % n }}{{ -n }}{{ 'a' ~ n ~ flag }}{{ n > 2 }}{{ n <= 2 }}{{ (n and 'yes') }}{{ (flag or 'no') }}{{ flag and 'x' }}{{ 'x' if flag }}|{{ 'y' if not flag else 'z' }}",
            "{{ messages[0].role + ':' + messages[0].content + '|' }}{{ 'n=' ~ n }}{% set s = 'a' + 'b' + messages[3].content %}{{ s }}{{ messages[0].role.upper() }}{{ 'ABC'.lower() }}",
            "{% if strftime_now is defined %}{{ strftime_now('%d %b %Y') }}{% endif %}{% if tools is not defined %}no tools{% endif %}",
            "{{ ['a', 1, none] | join('-') }}|{{ [1, 2] | join }}|{{ n | string }}{{ flag | string }}{{ messages[2].content | string }}|{{ missing | default('d') }}{{ '' | default('e', true) }}{{ 'x' | default('f') }}",
            "{% for k, v in messages[0] | items %}{{ k }}:{{ v }};{% endfor %}{{ messages | list | length }}{% for c in (messages[1:] | list) %}{{ c.role }}{% endfor %}",
            "{%- for m in messages -%}\n  {{- m.role -}}\n{%- endfor %}\n{{ messages | length }}\n",
        ];
        for source in cases {
            check(source, messages.clone());
        }
    }

    #[test]
    fn unsupported_values_fall_back_to_the_interpreter() {
        let clock = Clock::Fixed(0);
        let mut fast = TemplateSet::new(clock, Limits::default(), true);
        // `raise_exception`, a macro and an unknown filter are left to minijinja.
        fast.add(
            "t",
            "{% if fail %}{{ raise_exception('no: ' ~ fail) }}{% endif %}{{ x | upper }}",
        )
        .unwrap();
        let ctx = from_json(&json!({"fail": "boom", "x": "a"}));
        let program = fast.programs.get("t").unwrap();
        assert!(program.render(&ctx, clock, 1_000).is_none());
        let err = fast.render("t", ctx).unwrap_err();
        assert!(err.to_string().contains("no: boom"), "{err}");
        // A program whose top level always bails is not kept at all.
        fast.add("m", "{% macro f() %}x{% endmacro %}{{ f() }}")
            .unwrap();
        assert!(!fast.programs.contains_key("m"));
        // A template that keeps falling back is tried again now and then.
        fast.add(
            "retry",
            "{% if fail %}{{ raise_exception('no') }}{% endif %}ok",
        )
        .unwrap();
        let program = &fast.programs["retry"];
        let failing = from_json(&json!({"fail": true}));
        let passing = from_json(&json!({"fail": false}));
        assert!(program.render(&passing, clock, 1_000).is_some());
        for _ in 0..40 {
            assert!(program.render(&failing, clock, 1_000).is_none());
        }
        let retried = (0..200)
            .filter(|_| program.render(&passing, clock, 1_000).is_some())
            .count();
        assert!((1..=10).contains(&retried), "{retried}");
        // Fuel runs out in the compiled path too (then the interpreter reports it).
        fast.add(
            "loop",
            "{% for m in xs %}{% for n in xs %}{{ n }}{% endfor %}{% endfor %}",
        )
        .unwrap();
        let xs = from_json(&json!({"xs": (0..100).collect::<Vec<_>>()}));
        assert!(fast.programs["loop"].render(&xs, clock, 500).is_none());
    }
}

/// Random templates over the compiled constructs: wherever the fast path finishes,
/// its output must be what minijinja renders (and minijinja must not fail).
#[cfg(test)]
mod differential {
    use serde_json::json;

    use super::super::{Clock, Limits, TemplateSet, from_json};

    /// xorshift64*: deterministic, no dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[(self.next() % items.len() as u64) as usize]
        }
    }

    const ATOMS: &[&str] = &[
        "messages",
        "m",
        "n",
        "flag",
        "s",
        "missing",
        "ns.x",
        "'user'",
        "'a b '",
        "1",
        "0",
        "-1",
        "none",
        "true",
        "[1, 'a']",
        "''",
        "loop.index0",
        "loop.last",
        "m.role",
        "m['content']",
        "messages[0]",
        "messages[-1].content",
        "m.tool_calls",
    ];
    const BINARY: &[&str] = &[
        "+", "~", "==", "!=", "<", ">=", "in", "not in", "and", "or", "-", "*", "%",
    ];
    const SUFFIX: &[&str] = &[
        "|length",
        "|trim",
        "|string",
        "|default('d')",
        "|default('e', true)",
        "|join(',')",
        "|tojson",
        "|list",
        "|items",
        " is defined",
        " is none",
        " is string",
        " is mapping",
        " is sequence",
        " is number",
        " is false",
        ".strip()",
        ".split()",
        ".split(' ', 1)",
        ".startswith('a')",
        ".endswith(' ')",
        ".upper()",
        ".get('role')",
        ".items()",
        "[0]",
        "[-1]",
        "[1:]",
        "[::-1]",
        "[:n]",
        ".role",
        "['content']",
        ".lstrip('a')",
    ];

    fn expr(rng: &mut Rng, depth: u32) -> String {
        let atom = rng.pick(ATOMS).to_owned();
        if depth == 0 {
            return atom;
        }
        match rng.next() % 6 {
            0 => format!(
                "({} {} {})",
                expr(rng, depth - 1),
                rng.pick(BINARY),
                expr(rng, depth - 1)
            ),
            1 => format!("({}){}", expr(rng, depth - 1), rng.pick(SUFFIX)),
            2 => format!("(not {})", expr(rng, depth - 1)),
            3 => format!(
                "({} if {} else {})",
                expr(rng, depth - 1),
                expr(rng, depth - 1),
                expr(rng, depth - 1)
            ),
            _ => atom,
        }
    }

    fn template(rng: &mut Rng) -> String {
        let mut body = String::from("{% set ns = namespace(x='') %}");
        for _ in 0..1 + rng.next() % 3 {
            let inner = match rng.next() % 6 {
                4 => format!(
                    "{{% for k, v in m.items() %}}{{{{ k }}}}{{{{ loop.index }}}}{{% set s = {} %}}{{% endfor %}}{{{{ s }}}}",
                    expr(rng, 1)
                ),
                5 => format!(
                    "{{% set t = {} %}}{{% for x in messages[1:] %}}{{{{ loop.first }}}}{{{{ t }}}}{{% set t = x.role %}}{{% endfor %}}{{{{ t }}}}",
                    expr(rng, 1)
                ),
                0 => format!("{{% set ns.x = {} %}}", expr(rng, 2)),
                1 => format!(
                    "{{% if {} %}}[{{{{ {} }}}}]{{% endif %}}",
                    expr(rng, 2),
                    expr(rng, 2)
                ),
                2 => format!("{{% set s = {} %}}{{{{ s }}}}", expr(rng, 2)),
                _ => format!("{{{{ {} }}}}", expr(rng, 2)),
            };
            let filter = match rng.next() % 3 {
                0 => format!(" if {}", expr(rng, 1)),
                _ => String::new(),
            };
            body.push_str(&format!(
                "{{% for m in messages{filter} %}}{inner}{{% if {} %}}{{% break %}}{{% endif %}}{{% else %}}E{{% endfor %}}{{{{ {} }}}}|",
                expr(rng, 1),
                expr(rng, 2)
            ));
        }
        body.push_str("{{ ns.x }}");
        body
    }

    #[test]
    fn random_templates_render_as_the_interpreter() {
        let ctx = from_json(&json!({
            "messages": [
                {"role": "user", "content": " a b "},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "1"}]},
                {"role": "tool", "content": "a"},
            ],
            "n": 2, "flag": false, "s": "abc",
        }));
        let clock = Clock::Fixed(0);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut finished, mut total) = (0, 0);
        for _ in 0..6000 {
            let source = template(&mut rng);
            let mut fast = TemplateSet::new(clock, Limits::default(), true);
            let mut slow = TemplateSet::new(clock, Limits::default(), false);
            if fast.add("t", &source).is_err() {
                continue;
            }
            slow.add("t", &source).expect("same syntax");
            total += 1;
            let Some(program) = fast.programs.get("t") else {
                continue;
            };
            if let Some(got) = program.render(&ctx, clock, Limits::default().fuel) {
                finished += 1;
                let want = slow.render("t", ctx.clone());
                assert_eq!(Ok(got), want.map_err(|e| e.to_string()), "{source}");
            }
        }
        // The generator must exercise the fast path, not only its fallbacks.
        assert!(finished * 10 > total, "{finished} of {total} finished");
    }
}
