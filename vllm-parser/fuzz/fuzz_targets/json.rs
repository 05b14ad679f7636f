//! Python-compatible JSON: no panic; what loads accepts, dumps writes back to text
//! that loads to the same value (NaN aside).
#![no_main]

use libfuzzer_sys::fuzz_target;
use vllm_parser::json;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(value) = json::loads(text) {
        let written = json::dumps(&value);
        if !written.contains("NaN") {
            assert_eq!(json::loads(&written).as_ref(), Ok(&value), "{written}");
        }
        let _ = json::dumps_ascii(&value);
    }
    let mut extent = json::Extent::new();
    let _ = extent.feed(text);
    // Truncated JSON completed like `partial_json_parser`: no panic, and
    // complete JSON reads as `loads` reads it (unless it starts with
    // whitespace, which the library's completion mis-slices).
    let partial = json::loads_partial(text);
    if let Ok(value) = json::loads(text)
        && !text.starts_with(char::is_whitespace)
        && !json::dumps(&value).contains("NaN")
    {
        assert_eq!(partial.as_ref(), Some(&value), "{text}");
    }
});
