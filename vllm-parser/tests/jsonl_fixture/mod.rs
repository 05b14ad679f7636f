//! The gzip JSON-lines fixtures the serving tests replay, as the generator
//! scripts write them (`scripts/gen_fixtures.py`'s `write_jsonl_gz`): a header
//! line, then one entry per line.

use std::path::Path;

use serde_json::Value;

/// The header and the entries of `tests/fixtures/<relative>`.
pub fn read(relative: &str) -> (Value, Vec<Value>) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(relative);
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(
            std::fs::File::open(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())),
        ),
        &mut text,
    )
    .unwrap();
    let mut lines = text.lines().map(|l| serde_json::from_str(l).unwrap());
    let header = lines.next().expect("a header line");
    (header, lines.collect())
}
