//! Hostile request templates: each one that would allocate gigabytes returns an error,
//! quickly, and the render's peak allocation stays within a bound (measured with a
//! counting allocator; the cases run one after another in one test).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use vllm_chat::template::render_str;
use vllm_chat::{Limits, RenderError, RendererOptions};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            let now = CURRENT.fetch_add(new_size - layout.size(), Ordering::Relaxed)
                + (new_size - layout.size());
            PEAK.fetch_max(now, Ordering::Relaxed);
        } else {
            CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const HOSTILE: &[(&str, &str)] = &[
    ("a lazy sequence, printed", "{{ ['abcdefgh'] * n }}"),
    ("a lazy sequence, joined", "{{ (['ab'] * n)|join(',') }}"),
    (
        "a lazy sequence, joined by a method",
        "{{ ','.join(['ab'] * n) }}",
    ),
    (
        "a lazy sequence, as a string",
        "{{ (['ab'] * n)|string|length }}",
    ),
    ("format width", "{{ '%1000000000s'|format('a') }}"),
    ("format precision", "{{ '%.1000000000f'|format(1.5) }}"),
    ("str.format width", "{{ '{:>1000000000}'.format('a') }}"),
    (
        "tojson indent",
        "{{ {'a': [1, 2]}|tojson(indent=1000000000) }}",
    ),
    (
        "tojson indent, many items",
        "{{ range(100000)|list|tojson(indent=1000) }}",
    ),
    ("tojson of a lazy sequence", "{{ ([1] * n)|tojson }}"),
    ("indent width", "{{ 'a\nb\nc'|indent(1000000000) }}"),
    ("center", "{{ 'x'.center(1000000000) }}"),
    ("ljust", "{{ 'x'.ljust(1000000000) }}"),
    ("zfill", "{{ '1'.zfill(1000000000) }}"),
    ("expandtabs", "{{ ('\t' * 1000).expandtabs(1000000) }}"),
    (
        "replace growth",
        "{{ ('x' * 1000)|replace('x', 'y' * 1000000) }}",
    ),
    (
        "str.replace growth",
        "{{ ('x' * 1000).replace('x', 'y' * 1000000) }}",
    ),
    ("list of a lazy sequence", "{{ (([1] * n)|list)|length }}"),
    ("a lazy sequence, sorted", "{{ ([1] * n)|sort|length }}"),
    (
        "a lazy sequence, reversed",
        "{{ ([1] * n)|reverse|length }}",
    ),
    (
        "a lazy sequence, unique",
        "{{ ([1] * n)|unique|list|length }}",
    ),
    (
        "a lazy sequence, batched",
        "{{ ([1] * n)|batch(3)|length }}",
    ),
    ("a lazy sequence, sliced", "{{ ([1] * n)|slice(3)|length }}"),
    (
        "a constant repeated list",
        "{{ (['ab'] * 100000000) ~ '' }}",
    ),
    (
        "a constant repeated list beside a generation tag",
        "{% generation %}{% endgeneration %}{{ (['ab'] * 100000000) ~ '' }}",
    ),
    (
        "list doubling",
        "{% set ns = namespace(x=[1]) %}{% for i in range(40) %}{% set ns.x = ns.x + ns.x %}{% endfor %}{{ ns.x|length }}",
    ),
    (
        "tuple doubling",
        "{% set ns = namespace(x=(1,)) %}{% for i in range(40) %}{% set ns.x = ns.x + ns.x %}{% endfor %}{{ ns.x|length }}",
    ),
    ("a lazy sequence, concatenated", "{{ (['ab'] * n) ~ '' }}"),
    (
        "string doubling with ~",
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
    ),
    (
        "string doubling with +",
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}",
    ),
    (
        "string repetition",
        "{% set ns = namespace(s='x' * 1000) %}{% for i in range(40) %}{% set ns.s = ns.s * 2 %}{% endfor %}{{ ns.s|length }}",
    ),
    (
        "many distinct large strings, kept",
        "{% set ns = namespace(l=[], s='x' * 1000000) %}{% for i in range(1000) %}{% set ns.l = ns.l + [ns.s ~ i] %}{% endfor %}{{ ns.l|length }}",
    ),
    (
        "output of raw text",
        "{% for i in range(10000) %}{% for j in range(10000) %}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{% endfor %}{% endfor %}",
    ),
    (
        "output size",
        "{% for i in range(100) %}{{ 'x' * 1000000 }}{% endfor %}",
    ),
];

#[test]
fn hostile_templates_fail_quickly_within_bounded_memory() {
    // The defaults are 64 MiB of output and 16 MiB per operation; smaller limits keep
    // this test quick in debug builds (a refused lazy sequence is still iterated to its
    // end by minijinja's formatting).
    assert_eq!(Limits::default().max_output_bytes, 64 << 20);
    assert_eq!(Limits::default().max_value_bytes, 16 << 20);
    let options = RendererOptions {
        limits: Limits {
            fuel: 5_000_000,
            max_output_bytes: 8 << 20,
            max_value_bytes: 2 << 20,
            max_made_bytes: 16 << 20,
            ..Limits::default()
        },
        ..RendererOptions::default()
    };
    for (what, source) in HOSTILE {
        eprintln!("{what} …");
        let base = CURRENT.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let start = Instant::now();
        // `n` is a variable: a constant count is refused before the template runs.
        let context = serde_json::json!({"n": 100_000_000});
        let result = render_str(source, &context, &options);
        let elapsed = start.elapsed();
        let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
        let Err(RenderError::Template(message)) = &result else {
            panic!("{what}: {result:?}");
        };
        assert!(
            message.contains("Limits::")
                || message.contains("fuel")
                || message.contains("not JSON serializable"),
            "{what}: {message}"
        );
        assert!(elapsed < Duration::from_secs(30), "{what}: {elapsed:?}");
        // 8 MiB of output or 2 MiB per value, with room for the copies around them.
        assert!(peak < 32 << 20, "{what}: peak {} MiB", peak >> 20);
        eprintln!("{what}: {message} ({elapsed:?}, peak {} KiB)", peak >> 10);
    }
    // Ordinary uses of the same operations still render.
    let ok = "{{ '%5s|%.2f'|format('a', 1.5) }}{{ {'a': [1]}|tojson(indent=2) }}{{ 'a\nb'|indent(4) }}{{ ['a', 'b']|join(', ') }}{{ 'ab'|replace('a', 'xy') }}";
    let out = render_str(ok, &serde_json::Value::Null, &options).unwrap();
    assert_eq!(out, "    a|1.50{\n  \"a\": [\n    1\n  ]\n}a\n    ba, bxyb");
    // Keyword arguments reach the checked builtins.
    let ok = "{{ [{'a': 'x'}, {'a': 'y'}]|join(',', attribute='a') }}|{{ [{'a': 'y'}, {'a': 'x'}]|sort(attribute='a', reverse=true)|map(attribute='a')|join }}|{{ ['b', 'A', 'a']|unique(case_sensitive=true)|join }}";
    let out = render_str(ok, &serde_json::Value::Null, &options).unwrap();
    assert_eq!(out, "x,y|yx|bAa");
    // And the operators, with minijinja's own semantics (lists, tuples, numbers, the
    // operands' order, undefined values, strings with numbers).
    // (Variables, so that no operation is folded into a constant at compile time.)
    let ok = "{% set one, l, t, s, big = 1, [1], (1,), 'ab', 170141183460469231731687303715884105727 %}{{ l + [2, 3] }}|{{ t + (2,) }}|{{ one + 2.5 }}|{{ s ~ one ~ none }}|{{ s * 2 }}|{{ 3 * s }}|{{ l * 2 }}|{{ s ~ nothing ~ 'y' }}|{{ big + one }}|{{ s + 'c' }}";
    let interpreter = RendererOptions {
        interpreter_only: true,
        ..options
    };
    let out = render_str(ok, &serde_json::Value::Null, &interpreter).unwrap();
    assert_eq!(
        out,
        "[1, 2, 3]|(1, 2)|3.5|ab1None|abab|ababab|[1, 1]|aby|170141183460469231731687303715884105728|abc"
    );
}

/// A checked template cannot reach an unchecked copy of itself: its source is not
/// among the templates `include`, `import` and `extends` find.
#[test]
fn a_request_template_cannot_include_itself() {
    let options = RendererOptions::default();
    for source in [
        "{% include 'template' %}",
        "{% import 'template' as t %}",
        "{% extends 'template' %}",
        "{% from 'template' import m %}",
    ] {
        let result = render_str(source, &serde_json::Value::Null, &options);
        let Err(RenderError::Template(message)) = &result else {
            panic!("{source}: {result:?}");
        };
        assert!(message.contains("not found"), "{source}: {message}");
    }
}
