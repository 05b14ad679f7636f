//! The SentencePiece backend over mistral-common's real v7 model: what it loads, and that a
//! corrupted model file is an error, never a panic. Decoding itself is checked against vLLM
//! in `parity.rs`.

mod common;

use std::io::Read;

use rand::{Rng, SeedableRng, rngs::StdRng};
use vllm_detok::{SentencePieceTokenizer, Tokenizer};

fn model_bytes() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/models/mistral_spm_v7/tokenizer.model.v7.gz"
    );
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[test]
fn loads_mistral_v7() {
    let tokenizer = common::sentencepiece();
    assert_eq!(tokenizer.vocab_size(), 32768);
    assert_eq!(tokenizer.token_piece(1).as_deref(), Some("<s>"));
    assert_eq!(tokenizer.token_piece(5).as_deref(), Some("[TOOL_CALLS]"));
    assert_eq!(tokenizer.token_piece(32768), None);
    // "▁Hello" "," "▁world" "!": the first piece loses its `▁` (SentencePiece's rule).
    let ids = [1, 23325, 29493, 2294, 29576, 2];
    assert_eq!(tokenizer.decode(&ids, true).unwrap(), "Hello, world!");
    assert_eq!(
        tokenizer.decode(&ids, false).unwrap(),
        "<s>\u{2581}Hello,\u{2581}world!</s>"
    );
}

#[test]
fn corrupted_models_fail_cleanly() {
    let model = model_bytes();
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..200 {
        let mut bytes = model.clone();
        match rng.random_range(0..3) {
            0 => bytes.truncate(rng.random_range(0..model.len())),
            1 => {
                for _ in 0..rng.random_range(1..8) {
                    let i = rng.random_range(0..bytes.len());
                    bytes[i] = rng.random();
                }
            }
            _ => {
                let i = rng.random_range(0..bytes.len());
                let junk: Vec<u8> = (0..rng.random_range(1..16)).map(|_| rng.random()).collect();
                bytes.splice(i..i, junk);
            }
        }
        // Either outcome is fine; decoding what loaded must not panic either.
        if let Ok(tokenizer) = SentencePieceTokenizer::from_bytes(&bytes) {
            let ids: Vec<u32> = (0..64).map(|_| rng.random_range(0..40_000)).collect();
            let _ = tokenizer.decode(&ids, true);
            let _ = tokenizer.stream_decode(&ids, false);
        }
    }
}
