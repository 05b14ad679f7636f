//! Differential test of `serving::xgrammar_regex` (xgrammar 0.2.8's
//! `Grammar.from_regex`) and `serving::python_re` (vLLM 0.33.0's
//! `_may_write`) against the real ones on `scripts/gen_xgrammar_regexes.py`'s
//! corpus (`tests/fixtures/serving/xgrammar_regexes.json.gz`): where this
//! crate decides, it must agree; undecided answers are counted.

use serde_json::Value;
use vllm_parser::serving::{python_re, xgrammar_regex};

mod jsonl_fixture;

#[test]
fn regex_predicates_agree_with_xgrammar_and_vllm() {
    let (header, entries) = jsonl_fixture::read("serving/xgrammar_regexes.json.gz");
    let char_sets: Vec<Vec<char>> = header["char_sets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|set| {
            set.as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().chars().next().unwrap())
                .collect()
        })
        .collect();
    let mut failures = Vec::new();
    let (mut compile_undecided, mut may_undecided, mut decided) = (0, 0, 0);
    let mut examples: Vec<&str> = Vec::new();
    for entry in &entries {
        let pattern = entry["pattern"].as_str().unwrap();
        let ours = xgrammar_regex::from_regex_compiles(pattern);
        match (ours, &entry["compiles"]) {
            (None, _) => {
                compile_undecided += 1;
                examples.push(pattern);
            }
            (Some(ours), Value::Bool(theirs)) if ours == *theirs => decided += 1,
            (Some(ours), theirs) => {
                failures.push(format!(
                    "from_regex {pattern:?}: ours {ours}, xgrammar {theirs}"
                ));
            }
        }
        for (chars, theirs) in char_sets.iter().zip(entry["may_write"].as_array().unwrap()) {
            match (python_re::may_write(pattern, chars), theirs) {
                (None, _) => {
                    may_undecided += 1;
                    examples.push(pattern);
                }
                (Some(ours), Value::Bool(theirs)) if ours == *theirs => decided += 1,
                (Some(ours), theirs) => failures.push(format!(
                    "_may_write({pattern:?}, {chars:?}): ours {ours}, vLLM {theirs}"
                )),
            }
        }
    }
    eprintln!(
        "{} patterns, {decided} answers decided; undecided: from_regex {compile_undecided}, \
         _may_write {may_undecided}",
        entries.len()
    );
    examples.dedup();
    eprintln!(
        "undecided, for example: {:?}",
        &examples[..examples.len().min(40)]
    );
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures[..failures.len().min(60)].join("\n")
    );
}

/// `_in_class` tests `\d`, `\s`, `\w` with the `regex` module: this crate's
/// tables must match it wherever it decides.
#[test]
fn categories_match_the_regex_module() {
    let (header, _) = jsonl_fixture::read("serving/xgrammar_regexes.json.gz");
    let mut failures = Vec::new();
    let mut undecided = 0;
    for (name, letter) in [("\\d", 'd'), ("\\s", 's'), ("\\w", 'w')] {
        let ranges: Vec<(u32, u32)> = header["categories"][name]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r[0].as_u64().unwrap() as u32, r[1].as_u64().unwrap() as u32))
            .collect();
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            let theirs = ranges
                .iter()
                .any(|&(lo, hi)| lo <= u32::from(c) && u32::from(c) <= hi);
            match python_re::category_matches(letter, c) {
                None => undecided += 1,
                Some(ours) if ours == theirs => {}
                Some(ours) => failures.push(format!(
                    "{name} {c:?} (U+{:04X}): ours {ours}",
                    u32::from(c)
                )),
            }
        }
    }
    eprintln!("category answers undecided: {undecided}");
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures[..failures.len().min(60)].join("\n")
    );
}
