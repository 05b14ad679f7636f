//! Stop strings deep into a long output, past where the held text is compacted: the decoder
//! with stop strings against the text the same decoder gives without them, over the
//! 4,000-token benchmark stream of real text.

mod common;

use std::sync::Arc;

use vllm_detok::{DecodeOptions, FinishKind, IncrementalDecoder, Tokenizer};

struct Plain {
    tokenizer: Arc<dyn Tokenizer>,
    prompt: Vec<u32>,
    ids: Vec<u32>,
    /// The whole text, and its byte length after each token.
    text: String,
    ends: Vec<usize>,
}

fn plain(name: &str) -> Plain {
    let tokenizer: Arc<dyn Tokenizer> = common::tokenizer(name);
    let bench = common::fixture(name).bench;
    let mut decoder =
        IncrementalDecoder::new(tokenizer.clone(), &bench.prompt, DecodeOptions::default())
            .unwrap();
    let mut text = String::new();
    let mut ends = Vec::new();
    for &id in &bench.ids {
        decoder.push_into(&[id], &mut text).unwrap();
        ends.push(text.len());
    }
    Plain {
        tokenizer,
        prompt: bench.prompt,
        ids: bench.ids,
        text,
        ends,
    }
}

fn options(stop: &[&str], include: bool) -> DecodeOptions {
    DecodeOptions {
        stop: stop.iter().map(|s| s.to_string()).collect(),
        include_stop_str_in_output: include,
        ..DecodeOptions::default()
    }
}

#[test]
fn unmatched_stop_strings_hold_back_the_last_characters() {
    for name in ["qwen3", "llama3"] {
        let plain = plain(name);
        let stops = ["\u{0}never", "\u{0}\u{0}absent stop"];
        assert!(stops.iter().all(|s| !plain.text.contains(s)));
        let hold_back = stops.iter().map(|s| s.chars().count()).max().unwrap() - 1;
        let mut decoder = IncrementalDecoder::new(
            plain.tokenizer.clone(),
            &plain.prompt,
            options(&stops, false),
        )
        .unwrap();
        let mut out = String::new();
        let (mut plain_chars, mut out_chars, mut prev_end) = (0, 0, 0);
        for (&id, &end) in plain.ids.iter().zip(&plain.ends) {
            let before = out.len();
            decoder.push_into(&[id], &mut out).unwrap();
            plain_chars += plain.text[prev_end..end].chars().count();
            out_chars += out[before..].chars().count();
            prev_end = end;
            assert!(plain.text.starts_with(&out), "{name}");
            assert_eq!(out_chars, plain_chars.saturating_sub(hold_back), "{name}");
        }
        decoder
            .finish_into(&[], FinishKind::Length, &mut out)
            .unwrap();
        assert_eq!(out, plain.text, "{name}");
    }
}

#[test]
fn stop_strings_far_into_the_output_cut_the_plain_text() {
    let plain = plain("qwen3");
    assert!(plain.text.len() > 8_000);
    for at in [2_000, 5_000, plain.text.len() - 40] {
        let start = (at..).find(|&i| plain.text.is_char_boundary(i)).unwrap();
        let stop: String = plain.text[start..].chars().take(6).collect();
        let found = plain.text.find(&stop).unwrap();
        let stop_end = found + stop.len();
        // The token that completes the stop string is the last one kept.
        let tokens = plain.ends.partition_point(|&end| end < stop_end) + 1;
        for include in [false, true] {
            for chunk in [1, 3] {
                let mut decoder = IncrementalDecoder::new(
                    plain.tokenizer.clone(),
                    &plain.prompt,
                    options(&["\u{0}never", &stop], include),
                )
                .unwrap();
                let mut out = String::new();
                let mut matched = None;
                for ids in plain.ids.chunks(chunk) {
                    if let Some(stop) = decoder.push_into(ids, &mut out).unwrap() {
                        matched = Some(stop);
                        break;
                    }
                }
                let matched = matched.expect("the stop string matches");
                let cut = if include { stop_end } else { found };
                assert_eq!(out, plain.text[..cut], "at {at}, include {include}");
                assert_eq!(matched.index, 1);
                assert_eq!(matched.text_len, out.chars().count());
                assert_eq!(decoder.num_output_tokens(), tokens);
                assert!(decoder.is_finished());
            }
        }
    }
}
