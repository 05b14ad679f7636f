//! Exactness of prompt encoding (`ChatRenderer::encode`, `SegmentEncoder`, the ids-only
//! byte-level BPE and its parallel split) against the reference, plain
//! `tokenizers::Tokenizer::encode`, on every vendored HF tokenizer: random and
//! adversarial text (scripts, combining marks and NFC-changing sequences, long digit
//! runs, whitespace runs of every kind, partial and adjacent special tokens, very long
//! words), with and without `add_special_tokens`, sequential and parallel.

mod common;

use vllm_chat::tokenizer::{ParallelEncoding, SegmentEncoder, Tokenizer as OurTokenizer};

const MODELS: &[&str] = &[
    "qwen3",
    "llama3",
    "llama3_1",
    "deepseek_v3",
    "gemma3",
    "gptoss",
];

/// Fewer random cases in unoptimized builds (`cargo test`), all of them with `--release`.
fn cases(release: usize) -> usize {
    if cfg!(debug_assertions) {
        release / 8
    } else {
        release
    }
}

/// xorshift64: deterministic, so a failure names its seed and reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "the",
    " the",
    "The",
    "hello",
    " world",
    "don't",
    "I'M",
    "we'LL",
    "'s",
    "'",
    "ſ",
    "'ſ",
    "café",
    "cafe\u{301}",
    "e\u{301}\u{301}",
    "\u{301}",
    "Å",
    "A\u{30a}",
    "Ω",
    "\u{2126}",
    "\u{958}",
    "क\u{93c}",
    "हिन्दी",
    "ि",
    "世界",
    "こんにちは",
    "한국어",
    "\u{1100}\u{1161}\u{11a8}",
    "\u{ac00}\u{11a8}",
    "Привет",
    "مرحبا",
    "٣٤٥",
    "Ⅻ",
    "½",
    "²",
    "0",
    "7",
    "42",
    "123",
    "2024",
    "3.14159",
    "1,000,000",
    "🚀",
    "👍🏽",
    "👨‍👩‍👧",
    "\u{200b}",
    "\u{200d}",
    "\u{feff}",
    "_",
    "-",
    "—",
    "...",
    "?!",
    "$",
    "{\"a\": 1}",
    "</tool_call>",
    "```python\n",
    "\\n",
    "#",
    "@@",
    "://",
    "\u{fffd}",
    "\u{10ffff}",
    "\u{e000}",
    "x\u{0}y",
    "\u{7f}",
    "\u{85}",
];

const SPACES: &[&str] = &[
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\r\n",
    "\n\n",
    "\n\n\n",
    " \n",
    "\n ",
    " \n ",
    "\r",
    "\u{a0}",
    "\u{3000}",
    "\u{2028}",
    "\u{2029}",
    "\u{b}",
    "\u{c}",
    "\u{1680}",
    "\u{2003}",
    "\t\n\t",
    "    \n    ",
];

/// A random adversarial text, with the tokenizer's added tokens and their prefixes.
fn random_text(rng: &mut Rng, specials: &[String], max_items: usize) -> String {
    let mut text = String::new();
    let items = 1 + rng.below(max_items);
    for _ in 0..items {
        match rng.below(14) {
            0..=4 => text.push_str(WORDS[rng.below(WORDS.len())]),
            5..=7 => text.push_str(SPACES[rng.below(SPACES.len())]),
            8 => {
                // A digit run.
                for _ in 0..1 + rng.below(40) {
                    text.push(char::from(b'0' + rng.below(10) as u8));
                }
            }
            9 => {
                // A whitespace run.
                for _ in 0..1 + rng.below(30) {
                    text.push_str(SPACES[rng.below(SPACES.len())]);
                }
            }
            10 if !specials.is_empty() => {
                let special = &specials[rng.below(specials.len())];
                if rng.below(3) == 0 {
                    // A partial special token.
                    let cut = rng.below(special.len());
                    let cut = (0..=cut).rev().find(|&i| special.is_char_boundary(i));
                    text.push_str(&special[..cut.unwrap_or(0)]);
                } else {
                    text.push_str(special);
                }
            }
            11 => {
                // A random code point from a mix of planes.
                let ranges: &[(u32, u32)] = &[
                    (0x20, 0x7f),
                    (0x80, 0x2ff),
                    (0x300, 0x36f),
                    (0x370, 0x10ff),
                    (0x1100, 0x11ff),
                    (0x2000, 0x2bff),
                    (0x3000, 0x9fff),
                    (0xac00, 0xd7a3),
                    (0xf900, 0xffff),
                    (0x1f300, 0x1faff),
                    (0x20000, 0x2a6df),
                ];
                let (lo, hi) = ranges[rng.below(ranges.len())];
                for _ in 0..1 + rng.below(6) {
                    let c = lo + rng.below((hi - lo + 1) as usize) as u32;
                    text.push(char::from_u32(c).unwrap_or('?'));
                }
            }
            12 => {
                // A very long word.
                let letters = ["a", "z", "é", "ж", "語", "ab", "\u{301}", "0"];
                let letter = letters[rng.below(letters.len())];
                let max = if rng.below(8) == 0 { 3000 } else { 60 };
                let n = 1 + rng.below(max);
                for _ in 0..n {
                    if rng.below(10) == 0 {
                        text.push_str(letters[rng.below(letters.len())]);
                    } else {
                        text.push_str(letter);
                    }
                }
            }
            _ => {
                // Random ASCII, punctuation heavy.
                for _ in 0..1 + rng.below(12) {
                    text.push(char::from(0x20 + rng.below(0x5f) as u8));
                }
            }
        }
    }
    text
}

struct Model {
    name: &'static str,
    _dir: common::ModelDir,
    reference: tokenizers::Tokenizer,
    ours: OurTokenizer,
    specials: Vec<String>,
}

fn load(name: &'static str) -> Model {
    let dir =
        common::ModelDir::new(name).unwrap_or_else(|| panic!("testdata/models/{name} missing"));
    let path = dir.0.join("tokenizer.json");
    let reference = tokenizers::Tokenizer::from_file(&path).expect("reference tokenizer");
    let ours = OurTokenizer::from_file(&path).expect("our tokenizer");
    let mut specials: Vec<String> = reference
        .get_added_tokens_decoder()
        .values()
        .map(|t| t.content.clone())
        .collect();
    specials.sort();
    // Gemma has thousands (unused) of added tokens: keep a spread.
    let step = (specials.len() / 64).max(1);
    let specials = specials.into_iter().step_by(step).collect();
    Model {
        name,
        _dir: dir,
        reference,
        ours,
        specials,
    }
}

fn reference_ids(model: &Model, text: &str, special: bool) -> Vec<u32> {
    model
        .reference
        .encode(text, special)
        .expect("reference encode")
        .get_ids()
        .to_vec()
}

fn check_random(model: &Model, encoder: &SegmentEncoder, seed: u64, cases: usize, items: usize) {
    let mut rng = Rng(seed);
    for case in 0..cases {
        let text = random_text(&mut rng, &model.specials, items);
        for special in [false, true] {
            let got = encoder.encode_with(&model.ours, &text, special).unwrap();
            let want = reference_ids(model, &text, special);
            assert!(
                got == want,
                "{}: seed {seed:#x} case {case} add_special_tokens={special}: {text:?}\n got {got:?}\nwant {want:?}",
                model.name
            );
        }
        // The bound that lets a prompt too long for the context be refused unencoded.
        let bound = encoder.min_tokens(&text);
        let count = encoder.encode(&model.ours, &text).unwrap().len();
        assert!(
            bound <= count,
            "{}: min_tokens {bound} > {count} tokens for {text:?}",
            model.name
        );
    }
}

/// Which vendored tokenizers take the ids-only path (the others use `tokenizers`).
#[test]
fn fast_path_covers_the_gpt4_split_tokenizers() {
    for name in MODELS {
        let model = load(name);
        let encoder = SegmentEncoder::new(&model.ours);
        let want = matches!(*name, "qwen3" | "llama3" | "llama3_1");
        assert_eq!(encoder.is_fast(), want, "{name}");
    }
}

#[test]
fn random_text_matches_tokenizers_on_every_vendored_tokenizer() {
    for (i, name) in MODELS.iter().enumerate() {
        let model = load(name);
        let encoder = SegmentEncoder::new(&model.ours);
        let cases = cases(if encoder.is_fast() { 2000 } else { 400 });
        check_random(&model, &encoder, 0x5eed_0000 + i as u64, cases, 24);
        // A second pass reads the segment cache.
        check_random(&model, &encoder, 0x5eed_0000 + i as u64, cases / 4, 24);
    }
}

#[test]
fn parallel_encoding_matches_tokenizers_and_sequential() {
    for (i, name) in MODELS.iter().enumerate() {
        let model = load(name);
        let parallel = SegmentEncoder::new(&model.ours).with_parallelism(ParallelEncoding {
            min_bytes: 64,
            max_threads: 7,
        });
        let sequential =
            SegmentEncoder::new(&model.ours).with_parallelism(ParallelEncoding::sequential());
        let mut rng = Rng(0xbeef_0000 + i as u64);
        let cases = cases(if parallel.is_fast() { 240 } else { 24 });
        for case in 0..cases {
            let text = random_text(&mut rng, &model.specials, 400);
            let want = reference_ids(&model, &text, false);
            let seq = sequential.encode(&model.ours, &text).unwrap();
            let par = parallel.encode(&model.ours, &text).unwrap();
            assert!(seq == want, "{name}: case {case} sequential: {text:?}");
            assert!(par == want, "{name}: case {case} parallel: {text:?}");
        }
    }
}

/// One long message of prose, code and numbers, as the long-prompt benchmark uses,
/// with few (one huge line) and many cut points.
#[test]
fn long_prompts_match_tokenizers() {
    let mut prose = String::new();
    let mut rng = Rng(0x10ad);
    while prose.len() < 300_000 {
        prose.push_str(WORDS[rng.below(WORDS.len())]);
        prose.push(' ');
        if rng.below(40) == 0 {
            prose.push_str(".\n\n");
        }
    }
    let one_line: String = prose.replace('\n', " ");
    for name in ["qwen3", "llama3_1"] {
        let model = load(name);
        let encoder = SegmentEncoder::new(&model.ours).with_parallelism(ParallelEncoding {
            min_bytes: 16 * 1024,
            max_threads: 4,
        });
        for text in [&prose, &one_line] {
            let text = format!("<|im_start|>user\n{text}<|im_end|>\n");
            assert!(
                encoder.encode(&model.ours, &text).unwrap() == reference_ids(&model, &text, false),
                "{name}"
            );
        }
    }
}

/// `min_tokens` never exceeds the real count, on texts built to pack the most bytes
/// into each token: the longest vocabulary entries repeated, long runs of one
/// character, decomposed Hangul that NFC composes to a third of its bytes, and added
/// tokens back to back.
#[test]
fn min_tokens_is_a_lower_bound_on_dense_texts() {
    for name in MODELS {
        let model = load(name);
        let encoder = SegmentEncoder::new(&model.ours);
        if !encoder.is_fast() {
            assert_eq!(encoder.min_tokens("any text"), 0, "{name}");
            continue;
        }
        let vocab = model.ours.get_vocab(false);
        let mut longest: Vec<(&String, &u32)> = vocab.iter().collect();
        longest.sort_by_key(|(token, _)| std::cmp::Reverse(token.len()));
        let mut texts: Vec<String> = longest
            .iter()
            .take(20)
            .map(|(_, id)| model.ours.decode(&[**id], false).unwrap().repeat(50))
            .collect();
        for unit in [
            " ",
            "\n",
            "a",
            "=",
            "-",
            "0",
            "\u{1100}\u{1161}\u{11a8}",
            "\u{ac00}",
        ] {
            texts.push(unit.repeat(20_000));
        }
        texts.push(model.specials.concat().repeat(100));
        for text in texts {
            let bound = encoder.min_tokens(&text);
            let count = reference_ids(&model, &text, false).len();
            assert!(
                bound >= 1 && bound <= count,
                "{name}: min_tokens {bound}, {count} tokens"
            );
        }
    }
}
