//! The compiled constructs against the interpreter, one by one, and the fallbacks.

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
        "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }}{{ greet('b', '?') }}{{ greet(name='c') }}{{ greet('d', punct='.') }}{{ greet() }}",
        "{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{{ m() }}{% set x = 2 %}{{ m() }}",
        "{% macro m() %}{% if flag %}{% set y = 1 %}{% endif %}[{{ y }}]{% endmacro %}{{ m() }}{% set y = 5 %}{{ m() }}",
        "{% macro r(k) %}{{ k }}{% if k > 0 %}{{ r(k - 1) }}{% endif %}{% endmacro %}{{ r(3) }}",
        "{% macro roles(ms) %}{% for m in ms %}{{ loop.index }}{{ m.role }}{% endfor %}{% endmacro %}{% for m in messages %}{{ roles(messages[:loop.index]) }}|{% endfor %}{{ roles(messages) | length }}",
        "{% macro d(a=b, b='B') %}{{ a }}{{ b }}{% endmacro %}{{ d() }}{{ d(b='x') }}{% macro uses_ctx() %}{{ n }}{{ messages | length }}{% endmacro %}{{ uses_ctx() }}",
        "{% for m in messages %}{% macro inner() %}{{ m.role }}{% endmacro %}{{ inner() }}{% endfor %}",
        "{{ messages | selectattr('role', 'equalto', 'user') | list | length }}{{ messages | rejectattr('content') | list | length }}{% for m in messages | selectattr('tool_calls', 'defined') %}{{ m.role }}{% endfor %}{{ [1, none, 'a'] | reject('none') | list }}{{ ['a', 1] | select('string') | list }}{{ none | selectattr('x') | list }}{% for t in messages[2:3] | selectattr('tool_calls.0.function.name', 'eq', 'f') %}{{ t.role }}{% endfor %}",
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
    // Calls the compiled path does not take: too many arguments, an unknown keyword.
    for call in ["f(1, 2)", "f(b=1)", "f(1, a=2)", "f.name"] {
        let source = format!("{{% macro f(a) %}}{{{{ a }}}}{{% endmacro %}}{{{{ {call} }}}}");
        fast.add("call", &source).unwrap();
        assert!(
            fast.programs["call"].render(&ctx, clock, 1_000).is_none(),
            "{call}"
        );
    }
    let err = fast.render("t", ctx).unwrap_err();
    assert!(err.to_string().contains("no: boom"), "{err}");
    // A program whose top level always bails is not kept at all.
    fast.add("m", "{% filter upper %}x{% endfilter %}").unwrap();
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
