//! Delta-by-delta parity with vLLM 0.33.0's detokenizer, over the golden fixtures produced by
//! `scripts/gen_fixtures.py` for six real `tokenizer.json` tokenizers, Mistral's tekken and a
//! mistral-common SentencePiece model.

mod common;

use std::sync::Arc;

use common::{Case, MODELS, WithoutTable};
use vllm_detok::{DecodeOptions, FinishKind, IncrementalDecoder, LogprobText, Tokenizer};

fn finish_kind(name: &str) -> FinishKind {
    match name {
        "length" => FinishKind::Length,
        "stop_token" => FinishKind::StopToken,
        "abort" => FinishKind::Abort,
        other => panic!("unknown finish kind {other}"),
    }
}

/// Replays one case; returns a description of the first difference.
fn replay(tokenizer: Arc<dyn Tokenizer>, case: &Case) -> Result<(), String> {
    let o = &case.options;
    let options = DecodeOptions {
        skip_special_tokens: o.skip_special_tokens,
        spaces_between_special_tokens: o.spaces_between_special_tokens,
        stop: o.stop.clone(),
        include_stop_str_in_output: o.include_stop_str_in_output,
        min_tokens: o.min_tokens,
    };
    let mut decoder =
        IncrementalDecoder::new(tokenizer, &case.prompt, options).map_err(|e| e.to_string())?;
    for (i, step) in case.steps.iter().enumerate() {
        let delta = match &step.finish {
            Some(kind) => decoder.finish(&step.ids, finish_kind(kind)),
            None => decoder.push(&step.ids),
        }
        .map_err(|e| format!("step {i}: {e}"))?;
        let stop = delta.stop.as_ref().map(|s| s.stop.clone());
        let kept = delta
            .stop
            .as_ref()
            .map_or(step.ids.len(), |s| s.tokens_kept);
        if delta.text != step.text || stop != step.stop || kept != step.kept {
            return Err(format!(
                "step {i} ids {:?}: got {:?} stop {:?} kept {kept}, vLLM {:?} stop {:?} kept {}",
                step.ids, delta.text, stop, step.text, step.stop, step.kept
            ));
        }
        let expect_finished = step.finish.is_some() || step.stop.is_some();
        if delta.finished != expect_finished {
            return Err(format!(
                "step {i}: finished {} != {expect_finished}",
                delta.finished
            ));
        }
    }
    Ok(())
}

fn check_model(name: &str) {
    check_cases(name, common::tokenizer(name), false);
}

/// Replays every case of `name`'s fixture (those whose prompt ends mid-character are skipped
/// when `skip_mid_char_prompts`).
fn check_cases(name: &str, tokenizer: Arc<dyn Tokenizer>, skip_mid_char_prompts: bool) {
    let fixture = common::fixture(name);
    assert_eq!(fixture.model, name);
    assert!(fixture.cases.len() >= 100);
    let mut failures = Vec::new();
    for (n, case) in fixture.cases.iter().enumerate() {
        if skip_mid_char_prompts && case.leak {
            continue;
        }
        if let Err(e) = replay(tokenizer.clone(), case) {
            failures.push(format!(
                "case {n} (prompt {:?}, leak {}, finish {}, options skip={} spaces={} include={} min={} stop={:?}): {e}",
                case.prompt,
                case.leak,
                case.finish,
                case.options.skip_special_tokens,
                case.options.spaces_between_special_tokens,
                case.options.include_stop_str_in_output,
                case.options.min_tokens,
                case.options.stop
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{name}: {} of {} cases differ:\n{}",
        failures.len(),
        fixture.cases.len(),
        failures.join("\n")
    );
}

#[test]
fn deltas_match_vllm_qwen3() {
    check_model("qwen3");
}

#[test]
fn deltas_match_vllm_llama3() {
    check_model("llama3");
}

#[test]
fn deltas_match_vllm_llama3_1() {
    check_model("llama3_1");
}

#[test]
fn deltas_match_vllm_deepseek_v3() {
    check_model("deepseek_v3");
}

#[test]
fn deltas_match_vllm_gemma3() {
    check_model("gemma3");
}

#[test]
fn deltas_match_vllm_gptoss() {
    check_model("gptoss");
}

/// vLLM's slow detokenizer over `MistralTokenizer` (see the generator's notes on the two
/// vLLM bugs the fixture leaves out).
#[test]
fn deltas_match_vllm_mistral_tekken() {
    check_cases("mistral_tekken", common::tekken(), false);
}

/// vLLM's slow detokenizer over `MistralTokenizer` wrapping mistral-common's SentencePiece
/// v7 model.
#[test]
fn deltas_match_vllm_mistral_spm_v7() {
    check_cases("mistral_spm_v7", common::sentencepiece(), false);
}

/// `decode` of a Mistral tokenizer against vLLM's `MistralTokenizer.decode` (transformers'
/// `MistralCommonBackend`), both `skip_special_tokens` values.
fn check_whole_decodes(name: &str, tokenizer: &dyn Tokenizer) {
    let fixture = common::fixture(name);
    assert!(fixture.decodes.len() >= 100);
    for (n, d) in fixture.decodes.iter().enumerate() {
        let got = tokenizer.decode(&d.ids, d.skip_special_tokens).unwrap();
        assert_eq!(
            got, d.text,
            "{name} decode {n} ids {:?} skip {}",
            d.ids, d.skip_special_tokens
        );
    }
}

#[test]
fn tekken_decode_matches_vllm() {
    check_whole_decodes("mistral_tekken", common::tekken().as_ref());
}

#[test]
fn sentencepiece_decode_matches_vllm() {
    check_whole_decodes("mistral_spm_v7", common::sentencepiece().as_ref());
}

fn without_table(name: &str) -> Arc<dyn Tokenizer> {
    Arc::new(WithoutTable::new(common::tokenizer(name)))
}

#[test]
fn window_path_matches_vllm_gemma3() {
    check_cases("gemma3", without_table("gemma3"), false);
}

/// Without the byte table, a prompt that ends mid-character is split at token granularity:
/// a prompt token holding complete characters *and* the start of the split one is kept
/// pending whole, where the byte table (and the fixture) keep only the split character's
/// bytes. Those cases are covered by `deltas_match_vllm_qwen3`.
#[test]
fn window_path_matches_vllm_qwen3() {
    check_cases("qwen3", without_table("qwen3"), true);
}

#[test]
fn logprob_token_text_matches_vllm() {
    let tokenizers = MODELS
        .iter()
        .map(|&name| (name, common::tokenizer(name) as Arc<dyn Tokenizer>))
        .chain([
            ("mistral_tekken", common::tekken() as Arc<dyn Tokenizer>),
            (
                "mistral_spm_v7",
                common::sentencepiece() as Arc<dyn Tokenizer>,
            ),
        ]);
    for (name, tokenizer) in tokenizers {
        let fixture = common::fixture(name);
        let mut text = LogprobText::new(tokenizer);
        for (n, position) in fixture.logprobs.iter().enumerate() {
            let got: Vec<String> = text
                .position(&position.ids)
                .unwrap()
                .into_iter()
                .map(|c| c.into_owned())
                .collect();
            assert_eq!(
                got, position.tokens,
                "{name} position {n} ids {:?}",
                position.ids
            );
        }
    }
}
