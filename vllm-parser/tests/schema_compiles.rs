//! `json_schema_grammar::compiles` against xgrammar 0.2.8's
//! `Grammar.from_json_schema` (`scripts/gen_schema_compiles.py`,
//! `tests/fixtures/serving/schema_compiles.json.gz`): where it decides, it
//! must give xgrammar's answer; the undecided share is reported.

use vllm_parser::serving::json_schema_grammar::compiles;

mod jsonl_fixture;

#[test]
fn compiles_answers_as_xgrammar() {
    let (header, entries) = jsonl_fixture::read("serving/schema_compiles.json.gz");
    assert_eq!(header["xgrammar_version"], "0.2.8");
    let mut failures = Vec::new();
    let (mut decided, mut refused) = (0, 0);
    let mut undecided: Vec<String> = Vec::new();
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    for entry in &entries {
        let expected = entry["compiles"].as_bool().unwrap();
        match compiles(&entry["schema"]) {
            Ok(ours) if ours == expected => {
                decided += 1;
                refused += usize::from(!ours);
            }
            Ok(ours) => failures.push(format!(
                "{}: ours {ours}, xgrammar {expected} {}",
                entry["schema"], entry["error"]
            )),
            Err(reason) => {
                *reasons.entry(format!("{reason:?}")).or_default() += 1;
                undecided.push(format!("{} ({reason:?})", entry["schema"]));
            }
        }
    }
    eprintln!(
        "decided {decided} of {} schemas ({refused} refused), {} undecided {reasons:?}, \
         for example:\n{}",
        entries.len(),
        undecided.len(),
        undecided[..undecided.len().min(20)].join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The sweep exercises every check: most schemas are decided.
    assert!(decided * 10 >= entries.len() * 9, "only {decided} decided");
}
