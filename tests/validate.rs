//! The validation loop, as a user meets it: an edit turn ends only once
//! the project builds and its tests pass, the failure reaching the model
//! in between; the attempt limit ends it as incomplete; validation is a
//! command like any other, asked about and confined.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::{Workspace, chunks, mock, notes, run, sse};

/// The validation events of a `--json` run.
fn validations(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "validation")
        .collect()
}

fn read(path: &str) -> Vec<String> {
    chunks::tool_answer("", &[("r", "read", json!({ "path": path }))])
}

fn write(path: &str, content: &str) -> Vec<String> {
    chunks::tool_answer(
        "",
        &[("w", "write", json!({"path": path, "content": content}))],
    )
}

/// Where the real toolchain lives, for a run with a home of its own.
fn toolchain(ws: &Workspace, command: &mut std::process::Command) {
    let home = PathBuf::from(std::env::var("HOME").unwrap());
    let rustup = std::env::var("RUSTUP_HOME").map_or_else(|_| home.join(".rustup"), PathBuf::from);
    let cargo = std::env::var("CARGO_HOME").map_or_else(|_| home.join(".cargo"), PathBuf::from);
    command
        .env("RUSTUP_HOME", rustup)
        .env("CARGO_HOME", cargo)
        .env("CARGO_TARGET_DIR", ws.root.join("target"));
}

#[test]
fn a_rust_edit_that_breaks_the_build_goes_back_to_the_model_until_it_passes() {
    let ws = Workspace::new();
    std::fs::write(
        ws.root.join("Cargo.toml"),
        "[package]\nname = \"sample\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(ws.root.join("src")).unwrap();
    let good = "pub fn two() -> i32 {\n    2\n}\n\n#[test]\nfn it_is_two() {\n    assert_eq!(two(), 2);\n}\n";
    std::fs::write(ws.root.join("src/lib.rs"), good).unwrap();
    std::fs::write(ws.root.join(".gitignore"), "target/\n").unwrap();
    let server = mock();
    server.push(sse(&read("src/lib.rs")));
    // The first edit breaks the build; the model says it is done.
    server.push(sse(&write(
        "src/lib.rs",
        &good.replace("    2\n", "    \"two\"\n"),
    )));
    server.push(sse(&chunks::text_answer("Changed it.")));
    // Told what failed, it fixes it.
    server.push(sse(&write("src/lib.rs", good)));
    server.push(sse(&chunks::text_answer("Fixed the type.")));
    let mut command = ws.offcode(
        &server.base_url(),
        &[
            "run",
            "--json",
            "--yes",
            "--model",
            "mock-model",
            "make two a string",
        ],
    );
    toolchain(&ws, &mut command);
    let output = run(command);
    assert_eq!(output.code, 0, "{}\n{}", output.stderr, output.stdout);
    let events = validations(&output.stdout);
    let statuses: Vec<&str> = events
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["running", "failed", "running", "passed"],
        "{events:#?}"
    );
    assert_eq!(events[0]["command"], "cargo test");
    assert_eq!(events[0]["from"], "Cargo.toml");
    assert_eq!(events[1]["summary"], "1 error", "{events:#?}");
    // The failure reached the model, failing part first.
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 5);
    let told = notes(&bodies[3]);
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(
        told[0].contains("Validation failed: `cargo test` (1 error), attempt 1 of 3")
            && told[0].contains("mismatched types"),
        "{}",
        told[0]
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("src/lib.rs")).unwrap(),
        good
    );
    // The session keeps both runs.
    let session = std::fs::read_to_string(ws.session_files().pop().unwrap()).unwrap();
    assert!(
        session.contains(r#""type":"validation","command":"cargo test","ok":false"#),
        "{session}"
    );
    assert!(
        session.contains(r#""type":"validation","command":"cargo test","ok":true"#),
        "{session}"
    );
}

#[test]
fn a_go_edit_that_breaks_the_build_goes_back_to_the_model_until_build_and_tests_pass() {
    // Go comes from release/setup.sh (Debian's golang-go).
    let ws = Workspace::new();
    std::fs::write(ws.root.join("go.mod"), "module sample\n\ngo 1.19\n").unwrap();
    let good = "package sample\n\nfunc Two() int { return 2 }\n";
    std::fs::write(ws.root.join("two.go"), good).unwrap();
    std::fs::write(
        ws.root.join("two_test.go"),
        "package sample\n\nimport \"testing\"\n\nfunc TestTwo(t *testing.T) {\n\tif Two() != 2 {\n\t\tt.Fatal(\"not two\")\n\t}\n}\n",
    )
    .unwrap();
    let server = mock();
    server.push(sse(&read("two.go")));
    server.push(sse(&write(
        "two.go",
        &good.replace("return 2", "return \"two\""),
    )));
    server.push(sse(&chunks::text_answer("Changed it.")));
    server.push(sse(&write("two.go", good)));
    server.push(sse(&chunks::text_answer("Fixed the type.")));
    let output = ws.run_task(
        &server.base_url(),
        &["--json", "--yes"],
        "make Two a string",
    );
    assert!(
        !output.stdout.contains("executable file not found"),
        "go is not installed: run release/setup.sh"
    );
    assert_eq!(output.code, 0, "{}\n{}", output.stderr, output.stdout);
    let events = validations(&output.stdout);
    let steps: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            (
                e["command"].as_str().unwrap().to_owned(),
                e["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let step = |command: &str, status: &str| (command.to_owned(), status.to_owned());
    assert_eq!(
        steps,
        [
            step("go build ./...", "running"),
            step("go build ./...", "failed"),
            step("go build ./...", "running"),
            step("go build ./...", "passed"),
            step("go test ./...", "running"),
            step("go test ./...", "passed"),
        ],
        "{events:#?}"
    );
    assert_eq!(events[0]["from"], "go.mod");
    assert_eq!(events[1]["summary"], "1 error");
    let told = notes(&server.chat_bodies()[3]);
    assert!(
        told[0].contains("Validation failed: `go build ./...` (1 error), attempt 1 of 3")
            && told[0].contains("cannot use"),
        "{}",
        told[0]
    );
}

#[test]
fn validation_that_still_fails_at_the_attempt_limit_ends_the_turn_incomplete() {
    let ws = Workspace::new();
    std::fs::write(
        ws.root.join("offcode.jsonc"),
        r#"{ "validate": { "commands": ["grep -q fixed notes.txt"], "attempts": 2 } }"#,
    )
    .unwrap();
    // A project's validate command runs once the folder is trusted.
    let trusted = crate::support::run(ws.offcode("http://127.0.0.1:9/v1", &["trust"]));
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    let server = mock();
    for content in ["broken", "still broken"] {
        server.push(sse(&write("notes.txt", content)));
        server.push(sse(&chunks::text_answer("Done.")));
    }
    let output = ws.run_task(&server.base_url(), &["--yes"], "fix notes.txt");
    assert_eq!(output.code, 3, "{}", output.stderr);
    assert!(
        output.stderr.contains(
            "The task is not done: `grep -q fixed notes.txt` still fails (exit code: 1) after 2 validations"
        ),
        "{}",
        output.stderr
    );
    assert!(
        output
            .stderr
            .contains("→ validate grep -q fixed notes.txt (config `validate`)"),
        "{}",
        output.stderr
    );
    // Told after the first, not asked again after the last.
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 4);
    assert!(notes(&bodies[2])[0].contains("attempt 1 of 2"));
    assert_eq!(notes(&bodies[3]).len(), 1);
}

#[test]
fn a_turn_that_changed_nothing_is_not_validated_and_no_known_project_is_said_once() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("hello.txt"), "hello\n").unwrap();
    let server = mock();
    server.push(sse(&chunks::tool_answer(
        "",
        &[("r", "read", json!({"path": "hello.txt"}))],
    )));
    server.push(sse(&chunks::text_answer("It says hello.")));
    let read = ws.run_task(&server.base_url(), &["--json"], "what does it say");
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert!(validations(&read.stdout).is_empty(), "{}", read.stdout);
    assert!(!read.stdout.contains("not validated"), "{}", read.stdout);
    // A change where nothing says how to validate: said, and done.
    server.push(sse(&write("notes.txt", "x")));
    server.push(sse(&chunks::text_answer("Wrote it.")));
    let changed = ws.run_task(&server.base_url(), &["--yes"], "write notes");
    assert_eq!(changed.code, 0, "{}", changed.stderr);
    assert_eq!(
        changed
            .stderr
            .matches("The changes were not validated: no Cargo.toml")
            .count(),
        1,
        "{}",
        changed.stderr
    );
}

#[test]
fn validation_is_a_command_like_any_other_asked_about_and_refused_without_a_person() {
    let ws = Workspace::new();
    // A command that asks (it writes a file); a headless run without
    // --yes refuses it, so it never runs.
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        r#"{ "validate": "touch validated-marker", "permission": { "edit": "allow" } }"#,
    )
    .unwrap();
    let server = mock();
    server.push(sse(&write("notes.txt", "x")));
    server.push(sse(&chunks::text_answer("Wrote it.")));
    let output = ws.run_task(&server.base_url(), &[], "write notes");
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(ws.root.join("notes.txt").exists(), "{}", output.stderr);
    assert!(!ws.root.join("validated-marker").exists());
    assert!(
        output
            .stderr
            .contains("The changes were not validated: `touch validated-marker` was not run"),
        "{}",
        output.stderr
    );
    // The person reads why, not the words meant for the model.
    assert!(!output.stderr.contains("Do not try"), "{}", output.stderr);
    assert!(
        !output.stderr.contains("Permission denied"),
        "{}",
        output.stderr
    );
}

#[test]
fn offcodes_own_validation_runs_never_trip_the_repeated_call_rule() {
    let ws = Workspace::new();
    std::fs::write(
        ws.home.join(".config/offcode/offcode.jsonc"),
        r#"{ "permission": { "edit": "allow", "bash": { "grep *": "allow" } },
             "validate": { "commands": ["grep -q fixed notes.txt"], "attempts": 3 } }"#,
    )
    .unwrap();
    let server = mock();
    server.push(sse(&write("notes.txt", "broken")));
    // The model claims it is done three times without a call: the same
    // validation runs three times in a row, offcode's, not the model's.
    for _ in 0..3 {
        server.push(sse(&chunks::text_answer("Done.")));
    }
    // No --yes: a question about a repeat would be refused.
    let output = ws.run_task(&server.base_url(), &["--json"], "fix notes.txt");
    assert_eq!(output.code, 3, "{}", output.stderr);
    let runs = validations(&output.stdout);
    let failed: Vec<_> = runs.iter().filter(|v| v["status"] == "failed").collect();
    assert_eq!(failed.len(), 3, "{runs:#?}");
    assert!(
        !output.stdout.contains("doom_loop") && !runs.iter().any(|v| v["status"] == "not_run"),
        "{}",
        output.stdout
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("notes.txt")).unwrap(),
        "broken"
    );
}
