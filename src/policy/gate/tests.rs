//! The examples `policy/commands.jsonc` keeps beside each program: lines
//! the gate must judge plain and lines it must judge dangerous.

use super::Gate;

#[test]
fn every_program_s_examples_hold() {
    let gate = Gate::new(&[], &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    let mut missing = Vec::new();
    for (name, entry) in gate.table.programs_with_entries() {
        let examples = &entry.examples;
        if examples.dangerous.is_empty() {
            missing.push(name);
        }
        for line in &examples.plain {
            let verdict = gate.check(line, dir.path(), None);
            if !verdict.dangers.is_empty() {
                wrong.push(format!(
                    "{name}: `{line}` should be plain: {:?}",
                    verdict.dangers
                ));
            }
        }
        for line in &examples.dangerous {
            if gate.check(line, dir.path(), None).dangers.is_empty() {
                wrong.push(format!("{name}: `{line}` should be dangerous"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(
        missing.is_empty(),
        "programs without dangerous examples: {missing:?}"
    );
}
