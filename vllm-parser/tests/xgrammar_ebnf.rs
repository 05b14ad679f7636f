//! Differential test of `serving::xgrammar_ebnf` (xgrammar 0.2.8's
//! `Grammar.from_ebnf`, vLLM 0.33.0's `grammar_is_likely_lark`) against the
//! real ones on `scripts/gen_xgrammar_ebnf.py`'s corpus
//! (`tests/fixtures/serving/xgrammar_ebnf.json.gz`): where this crate
//! decides, it must agree; undecided answers are counted, and vLLM's
//! `choice_as_grammar` texts must all be decided (they all compile).

use std::collections::BTreeMap;

use vllm_parser::serving::xgrammar_ebnf::{from_ebnf_compiles, grammar_is_likely_lark};

mod jsonl_fixture;

#[test]
fn from_ebnf_agrees_with_xgrammar() {
    let (_, entries) = jsonl_fixture::read("serving/xgrammar_ebnf.json.gz");
    let mut failures = Vec::new();
    let mut undecided = Vec::new();
    let mut counts: BTreeMap<(&str, bool), usize> = BTreeMap::new();
    for entry in &entries {
        let text = entry["text"].as_str().unwrap();
        let kind = entry["kind"].as_str().unwrap();
        let theirs = entry["compiles"].as_bool().unwrap();
        match from_ebnf_compiles(text) {
            None => undecided.push(text),
            Some(ours) if ours == theirs => *counts.entry((kind, theirs)).or_default() += 1,
            Some(ours) => failures.push(format!("{text:?}: ours {ours}, xgrammar {theirs}")),
        }
        if kind == "choice" && (!theirs || from_ebnf_compiles(text).is_none()) {
            failures.push(format!(
                "choice_as_grammar {text:?} not decided as compiling"
            ));
        }
        let lark = entry["lark"].as_bool().unwrap();
        if grammar_is_likely_lark(text) != lark {
            failures.push(format!("grammar_is_likely_lark({text:?}): vLLM {lark}"));
        }
    }
    eprintln!(
        "{} grammars; decided (kind, compiles): {counts:?}; undecided {}: {:?}",
        entries.len(),
        undecided.len(),
        &undecided[..undecided.len().min(10)]
    );
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures[..failures.len().min(60)].join("\n")
    );
    assert!(undecided.is_empty(), "the corpus is all decided");
}
