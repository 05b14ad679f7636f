//! The template environment against transformers' jinja2 environment: each case of
//! `tests/fixtures/jinja_features.json` (scripts/gen_jinja_fixtures.py) is a small
//! template rendered by transformers, or the error jinja2 raised.

use serde_json::Value;
use vllm_chat::{Clock, ContentFormat, Limits, RenderError, RendererOptions, template::render_str};

#[test]
fn features_render_like_jinja2() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/jinja_features.json"
    );
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut failures = Vec::new();
    // The compiled fast path (falling back to the checked interpreter), then the checked
    // interpreter alone: a request template's operators run behind size checks that must
    // not change a result.
    for interpreter_only in [false, true] {
        let options = RendererOptions {
            clock: Clock::Fixed(1_768_473_045),
            interpreter_only,
            ..Default::default()
        };
        for case in fixture["cases"].as_array().unwrap() {
            let template = case["template"].as_str().unwrap();
            let got = render_str(template, &fixture["context"], &options);
            match (&got, case.get("output")) {
                (Ok(out), Some(want)) if out == want.as_str().unwrap() => {}
                (Err(_), None) => {}
                _ => failures.push(format!(
                    "{template:?} (interpreter only: {interpreter_only}): ours {got:?}, jinja2 {}",
                    case.get("output").unwrap_or(&case["error"])
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn raise_exception_is_a_typed_error_with_the_template_message() {
    let err = render_str(
        "{{ raise_exception('Only user and assistant roles are supported!') }}",
        &Value::Null,
        &RendererOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, RenderError::Template(m) if m == "Only user and assistant roles are supported!"),
        "{err:?}"
    );
}

#[test]
fn runaway_templates_are_stopped() {
    let options = RendererOptions {
        limits: Limits {
            fuel: 1_000_000,
            recursion: 100,
            ..Limits::default()
        },
        ..Default::default()
    };
    let endless =
        "{% for i in range(100000) %}{% for j in range(100000) %}{{ i }}{% endfor %}{% endfor %}";
    assert!(matches!(
        render_str(endless, &Value::Null, &options),
        Err(RenderError::Template(_))
    ));
    let recursive = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}";
    assert!(matches!(
        render_str(recursive, &Value::Null, &options),
        Err(RenderError::Template(_))
    ));
    assert!(matches!(
        render_str("{% for %}", &Value::Null, &options),
        Err(RenderError::TemplateSyntax(_))
    ));
}

#[test]
fn content_format_names_match_vllm() {
    assert_eq!(ContentFormat::String.as_str(), "string");
    assert_eq!(ContentFormat::OpenAi.as_str(), "openai");
}

/// A tag chaining thousands of operators would overflow minijinja's recursive parser
/// and compiler (an abort); it is refused as a syntax error instead, on a thread with
/// tokio's 2 MiB stack. A long but sane chain still renders.
#[test]
fn endless_operator_chains_are_refused_not_crashing() {
    let check = |source: String| {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || render_str(&source, &Value::Null, &RendererOptions::default()))
            .expect("thread")
            .join()
            .expect("no crash")
    };
    let sum = |n: usize| format!("{{{{ {} }}}}", vec!["'a'"; n].join(" + "));
    assert_eq!(check(sum(1_001)).expect("renders").len(), 1_001);
    for source in [
        sum(100_000),
        format!("{{{{ x{} }}}}", "|string".repeat(50_000)),
        format!("{{{{ x{} }}}}", ".a".repeat(50_000)),
        format!(
            "{{% if {} %}}{{% endif %}}",
            vec!["x"; 50_000].join(" and ")
        ),
    ] {
        assert!(
            matches!(check(source), Err(RenderError::TemplateSyntax(_))),
            "refused"
        );
    }
}
