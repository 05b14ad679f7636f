//! The known failure modes of other detokenizers, as readable scenarios on real tokenizers.

mod common;

use std::sync::Arc;

use vllm_detok::{DecodeOptions, FinishKind, HfTokenizer, IncrementalDecoder, Tokenizer};

fn encode(tokenizer: &HfTokenizer, text: &str) -> Vec<u32> {
    tokenizer
        .inner()
        .encode(text, false)
        .unwrap()
        .get_ids()
        .to_vec()
}

/// Ids of the single-byte tokens spelling `bytes` (byte-level alphabet or `<0xXX>`).
fn byte_tokens(tokenizer: &HfTokenizer, bytes: &[u8]) -> Vec<u32> {
    let table = tokenizer.decode_table().unwrap();
    bytes
        .iter()
        .map(|&b| {
            tokenizer
                .inner()
                .token_to_id(&format!("<0x{b:02X}>"))
                .unwrap_or_else(|| {
                    (0..table.len() as u32)
                        .find(|&id| table.token_bytes(id, false) == [b])
                        .unwrap()
                })
        })
        .collect()
}

fn decode_pushes(
    tokenizer: Arc<dyn Tokenizer>,
    prompt: &[u32],
    pushes: &[&[u32]],
    options: DecodeOptions,
) -> Vec<String> {
    let mut decoder = IncrementalDecoder::new(tokenizer, prompt, options).unwrap();
    let mut deltas: Vec<String> = pushes
        .iter()
        .map(|ids| decoder.push(ids).unwrap().text)
        .collect();
    deltas.push(decoder.finish(&[], FinishKind::Length).unwrap().text);
    deltas
}

/// vLLM primes `DecodeStream` with the whole prompt; when the prompt ends inside a character
/// the stream is never primed and the first delta repeats the whole prompt.
#[test]
fn prompt_ending_mid_character_does_not_leak() {
    for name in ["qwen3", "llama3", "gemma3"] {
        let tokenizer = common::tokenizer(name);
        let emoji = "😀".as_bytes();
        let mut prompt = encode(&tokenizer, "Say a smiley:");
        prompt.extend(byte_tokens(&tokenizer, &emoji[..2]));
        let rest = byte_tokens(&tokenizer, &emoji[2..]);
        let more = encode(&tokenizer, " done");
        let deltas = decode_pushes(
            tokenizer,
            &prompt,
            &[&rest[..1], &rest[1..], &more],
            Default::default(),
        );
        assert_eq!(deltas, ["", "😀", " done", ""], "{name}");
    }
}

/// Tekken's ids of the single-byte tokens spelling `text` (rank `b` is byte `b`).
fn tekken_bytes(text: &[u8]) -> Vec<u32> {
    let specials = 1000;
    text.iter().map(|&b| specials + u32::from(b)).collect()
}

/// vLLM's slow detokenizer (which Mistral tokenizers take) drops the character that a prompt
/// ending mid-character starts and the output completes.
#[test]
fn tekken_prompt_ending_mid_character_keeps_the_character() {
    let emoji = "😀".as_bytes();
    let mut prompt = vec![1];
    prompt.extend(tekken_bytes(b"Say a smiley:"));
    prompt.extend(tekken_bytes(&emoji[..2]));
    let rest = tekken_bytes(&emoji[2..]);
    let more = tekken_bytes(b" done");
    let deltas = decode_pushes(
        common::tekken(),
        &prompt,
        &[&rest[..1], &rest[1..], &more],
        Default::default(),
    );
    assert_eq!(deltas, ["", "😀", " done", ""]);
}

/// With `skip_special_tokens = false`, vLLM's `MistralTokenizer` decodes every token on its
/// own, so a character split across tokens streams as U+FFFD characters.
#[test]
fn tekken_split_character_is_whole_without_skipping_special_tokens() {
    let ids = tekken_bytes("中文 😀".as_bytes());
    let singles: Vec<&[u32]> = ids.chunks(1).collect();
    let options = DecodeOptions {
        skip_special_tokens: false,
        ..DecodeOptions::default()
    };
    let deltas = decode_pushes(common::tekken(), &[1], &singles, options);
    assert_eq!(deltas.concat(), "中文 😀");
}

/// Speculative decoding delivers several tokens per engine output: the text must be the same
/// as one token at a time, with nothing lost or repeated.
#[test]
fn multi_token_pushes_equal_single_token_pushes() {
    // One tokenizer per kind of decoding (the fixtures cover all six with multi-token pushes).
    for name in ["qwen3", "gemma3"] {
        let tokenizer = common::tokenizer(name);
        let mut ids = encode(&tokenizer, "Grüße 👋🏽 中文字符 and code: fn main() {}");
        ids.extend(byte_tokens(&tokenizer, "€".as_bytes()));
        let options = DecodeOptions {
            stop: vec!["zzz".into()],
            ..DecodeOptions::default()
        };
        let singles: Vec<&[u32]> = ids.chunks(1).collect();
        let one = decode_pushes(tokenizer.clone(), &[], &singles, options.clone()).concat();
        for size in [2, 3, 5, 7] {
            let chunks: Vec<&[u32]> = ids.chunks(size).collect();
            let many = decode_pushes(tokenizer.clone(), &[], &chunks, options.clone()).concat();
            assert_eq!(many, one, "{name} chunks of {size}");
        }
        assert_eq!(one, "Grüße 👋🏽 中文字符 and code: fn main() {}€", "{name}");
    }
}

/// Hold-back is counted in characters, as Python does: a multi-byte stop string never splits
/// a character, and text before it is released as soon as it cannot be part of a match.
#[test]
fn stop_strings_hold_back_characters_not_bytes() {
    let tokenizer = common::tokenizer("qwen3");
    let ids = encode(&tokenizer, "café 中文 end");
    let options = DecodeOptions {
        stop: vec!["中文".into()],
        ..DecodeOptions::default()
    };
    let mut decoder = IncrementalDecoder::new(tokenizer, &[], options).unwrap();
    let mut text = String::new();
    let mut stopped = None;
    for &id in &ids {
        let delta = decoder.push(&[id]).unwrap();
        text.push_str(&delta.text);
        if delta.finished {
            stopped = delta.stop;
            break;
        }
    }
    assert_eq!(text, "café ");
    let stop = stopped.expect("stop string matched");
    assert_eq!((stop.stop.as_str(), stop.text_len), ("中文", 5));
}

/// vllm-rs rejects `spaces_between_special_tokens = false`; vLLM emits consecutive added
/// tokens as their bare content.
#[test]
fn spaces_between_special_tokens_false_is_supported() {
    let tokenizer = common::tokenizer("qwen3");
    let start = tokenizer.inner().token_to_id("<|im_start|>").unwrap();
    let end = tokenizer.inner().token_to_id("<|im_end|>").unwrap();
    let options = DecodeOptions {
        skip_special_tokens: false,
        spaces_between_special_tokens: false,
        ..DecodeOptions::default()
    };
    let deltas = decode_pushes(tokenizer, &[], &[&[start, end, start]], options);
    assert_eq!(deltas.concat(), "<|im_start|><|im_end|><|im_start|>");
}
