//! The tiktoken backend against the `tiktoken` package, over the synthetic rank file and the
//! golden data of `scripts/gen_tiktoken_fixture.py`.

use std::collections::HashMap;
use std::io::Read;
use std::sync::Arc;

use serde::Deserialize;
use vllm_detok::{DecodeOptions, FinishKind, IncrementalDecoder, TiktokenTokenizer, Tokenizer};

#[derive(Deserialize)]
struct Fixture {
    special_tokens: HashMap<String, u32>,
    streams: Vec<Stream>,
}

#[derive(Deserialize)]
struct Stream {
    ids: Vec<u32>,
    text: String,
    text_skipping_special_tokens: String,
}

fn load() -> (Arc<TiktokenTokenizer>, Fixture) {
    let dir = env!("CARGO_MANIFEST_DIR");
    let mut json = Vec::new();
    let file = std::fs::File::open(format!("{dir}/tests/fixtures/tiktoken.json.gz")).unwrap();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut json)
        .unwrap();
    let fixture: Fixture = serde_json::from_slice(&json).unwrap();
    let tokenizer = TiktokenTokenizer::from_file(
        format!("{dir}/tests/data/synthetic.tiktoken"),
        fixture.special_tokens.clone(),
    )
    .unwrap();
    assert!(fixture.streams.len() >= 300);
    (Arc::new(tokenizer), fixture)
}

fn expected(stream: &Stream, skip_special_tokens: bool) -> &str {
    if skip_special_tokens {
        &stream.text_skipping_special_tokens
    } else {
        &stream.text
    }
}

#[test]
fn decode_matches_tiktoken() {
    let (tokenizer, fixture) = load();
    for (n, stream) in fixture.streams.iter().enumerate() {
        for skip in [false, true] {
            let got = tokenizer.decode(&stream.ids, skip).unwrap();
            assert_eq!(got, expected(stream, skip), "stream {n} skip {skip}");
        }
    }
}

/// Streamed one token at a time and several at a time, the text released by the end is
/// tiktoken's decoding (every stream ends in plain text).
#[test]
fn streamed_text_matches_tiktoken() {
    let (tokenizer, fixture) = load();
    for (n, stream) in fixture.streams.iter().enumerate() {
        for skip in [false, true] {
            for size in [1, 3] {
                let options = DecodeOptions {
                    skip_special_tokens: skip,
                    ..DecodeOptions::default()
                };
                let mut decoder = IncrementalDecoder::new(tokenizer.clone(), &[], options).unwrap();
                let mut text = String::new();
                for chunk in stream.ids.chunks(size) {
                    text.push_str(&decoder.push(chunk).unwrap().text);
                }
                text.push_str(&decoder.finish(&[], FinishKind::Length).unwrap().text);
                assert_eq!(
                    text,
                    expected(stream, skip),
                    "stream {n} skip {skip} size {size}"
                );
            }
        }
    }
}

#[test]
fn malformed_rank_files_are_errors() {
    for ranks in [
        &b"aGk=\n"[..],
        b"aGk= x\n",
        b"aGk= 1 2\n",
        b"a!k= 1\n",
        b"\xff 1\n",
    ] {
        assert!(
            TiktokenTokenizer::from_rank_file(ranks, []).is_err(),
            "{:?}",
            String::from_utf8_lossy(ranks)
        );
    }
}
