use std::time::Duration;

use super::*;
use crate::config::ValidateConfig;

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn commands(files: &[(&str, &str)]) -> Option<Vec<String>> {
    match plan(project(files).path(), &ValidateConfig::default()) {
        Plan::Run { commands, .. } => Some(commands),
        _ => None,
    }
}

#[test]
fn the_project_type_gives_the_default_commands() {
    type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a [&'a str]>);
    let cases: [Case; 9] = [
        (&[("Cargo.toml", "[package]")], Some(&["cargo test"])),
        (
            &[("go.mod", "module x")],
            Some(&["go build ./...", "go test ./..."]),
        ),
        (
            &[("package.json", r#"{"scripts": {"test": "vitest run"}}"#)],
            Some(&["npm test"]),
        ),
        // npm's placeholder fails by design: not a test suite.
        (
            &[(
                "package.json",
                r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#,
            )],
            None,
        ),
        (
            &[("pyproject.toml", ""), ("tests/test_a.py", "")],
            Some(&["pytest -q"]),
        ),
        (
            &[("Makefile", "all:\n\tcc a.c\ncheck: all\n\t./a\n")],
            Some(&["make check"]),
        ),
        (&[("Makefile", "test:\n\t./t\n")], Some(&["make test"])),
        (&[("README.md", "hi")], None),
        (
            &[("calc.py", ""), ("test_calc.py", "")],
            Some(&["python3 -m unittest -q"]),
        ),
    ];
    for (files, expected) in cases {
        assert_eq!(
            commands(files),
            expected.map(|c| c.iter().map(|s| (*s).to_owned()).collect()),
            "{files:?}"
        );
    }
}

#[test]
fn the_config_decides_over_the_project_type() {
    let dir = project(&[("Cargo.toml", "")]);
    let config = ValidateConfig {
        commands: Some(vec!["cargo clippy".into(), " ".into()]),
        ..ValidateConfig::default()
    };
    assert_eq!(
        plan(dir.path(), &config),
        Plan::Run {
            commands: vec!["cargo clippy".into()],
            from: "config `validate`".into()
        }
    );
    let off = ValidateConfig {
        enabled: false,
        ..ValidateConfig::default()
    };
    assert_eq!(plan(dir.path(), &off), Plan::Off);
    let empty = ValidateConfig {
        commands: Some(Vec::new()),
        ..ValidateConfig::default()
    };
    assert_eq!(plan(dir.path(), &empty), Plan::Off);
    assert!(matches!(
        plan(project(&[]).path(), &ValidateConfig::default()),
        Plan::Nothing(_)
    ));
}

#[test]
fn a_failure_is_summed_up_in_a_few_words() {
    let cargo_test = "running 3 tests\ntest a ... FAILED\n\ntest result: FAILED. 1 passed; 2 failed; 0 ignored\n\n[exit code: 101]";
    assert_eq!(summarize(cargo_test), "2 failed");
    let cargo_check = "error[E0308]: mismatched types\n --> src/lib.rs:2:5\nerror: cannot find value `x`\nerror: could not compile `s` (lib) due to 2 previous errors\n\n[exit code: 101]";
    assert_eq!(summarize(cargo_check), "2 errors");
    let go = "--- FAIL: TestA (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL\n[exit code: 1]";
    assert_eq!(summarize(go), "2 tests failed");
    let go_build = "# sample\n./two.go:3:31: cannot use \"two\" (untyped string constant) as int value in return statement\n\n[exit code: 1]";
    assert_eq!(summarize(go_build), "1 error");
    let unittest = "F\n----\nRan 1 test in 0.000s\n\nFAILED (failures=1)\n\n[exit code: 1]";
    assert_eq!(summarize(unittest), "failures: 1");
    let pytest = "F.\n==== 1 failed, 1 passed in 0.02s ====\n\n[exit code: 1]";
    assert_eq!(summarize(pytest), "1 failed");
    assert_eq!(summarize("weird\n\n[exit code: 2]"), "exit code: 2");
}

#[test]
fn the_failing_part_comes_first_and_the_end_is_kept() {
    let mut output: Vec<String> = (0..300).map(|n| format!("   Compiling dep{n}")).collect();
    output.push("error[E0308]: mismatched types".into());
    output.push(" --> src/lib.rs:2:5".into());
    output.extend((0..100).map(|n| format!("note {n}")));
    output.push("[exit code: 101]".into());
    let part = failing_part(&output.join("\n"));
    let lines: Vec<&str> = part.lines().collect();
    assert_eq!(lines[0], "[… 298 lines before left out …]");
    assert!(lines[3].starts_with("error[E0308]"), "{part}");
    assert_eq!(*lines.last().unwrap(), "[exit code: 101]");
    assert!(part.contains("lines left out"), "{part}");
    assert!(lines.len() <= FAILING_LINES + 3, "{}", lines.len());
    // Short output is kept whole.
    assert_eq!(
        failing_part("error: x\n[exit code: 1]\n"),
        "error: x\n[exit code: 1]"
    );
}

#[test]
fn a_change_by_a_command_is_seen_in_tracked_files_only() {
    let dir = project(&[
        ("src/a.rs", "fn a() {}"),
        (".gitignore", "target/\n"),
        ("target/out", "old"),
    ]);
    let since = SystemTime::now() + Duration::from_secs(2);
    assert!(!changed_since(dir.path(), since));
    // Build output under an ignored folder is not a change.
    let since = SystemTime::now() - Duration::from_secs(1);
    let old = SystemTime::now() - Duration::from_mins(1);
    for path in ["src/a.rs", ".gitignore", "target/out"] {
        let file = std::fs::File::options()
            .write(true)
            .open(dir.path().join(path))
            .unwrap();
        file.set_modified(old).unwrap();
    }
    std::fs::write(dir.path().join("target/out"), "new").unwrap();
    assert!(!changed_since(dir.path(), since));
    std::fs::write(dir.path().join("src/b.rs"), "fn b() {}").unwrap();
    assert!(changed_since(dir.path(), since));
}
