//! Random templates over the compiled constructs: wherever the fast path finishes,
//! its output must be what minijinja renders (and minijinja must not fail).

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
    ".replace('a', 'xy')",
    ".replace(' ', '', 1)",
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
    let mut body = format!(
        "{{% set ns = namespace(x='') %}}{{% macro mac(a, b='z') %}}<{{{{ a }}}}{{{{ b }}}}{{{{ {} }}}}>{{% endmacro %}}",
        expr(rng, 1)
    );
    for _ in 0..1 + rng.next() % 3 {
        let inner = match rng.next() % 8 {
            6 => format!("{{{{ mac({}) }}}}", expr(rng, 1)),
            7 => format!(
                "{{% set s = mac({}, b={}) %}}{{{{ s }}}}",
                expr(rng, 1),
                expr(rng, 1)
            ),
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
