use super::*;
use crate::tools::DynTool;
use pretty_assertions::assert_eq;

fn hunks(patch: &str) -> Vec<Hunk> {
    parse(patch).unwrap().remove(0).hunks
}

#[test]
fn applies_with_wrong_line_numbers() {
    let original = "a\nb\nc\nd\ne\n";
    let patch = "--- a/f\n+++ b/f\n@@ -40,3 +40,3 @@\n c\n-d\n+D\n e\n";
    assert_eq!(
        apply_hunks(original, &hunks(patch), "f").unwrap(),
        "a\nb\nc\nD\ne\n"
    );
}

#[test]
fn keeps_crlf_and_missing_final_newline() {
    let patch = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n";
    assert_eq!(
        apply_hunks("one\r\ntwo\r\n", &hunks(patch), "f").unwrap(),
        "one\r\n2\r\n"
    );
    assert_eq!(
        apply_hunks("one\ntwo", &hunks(patch), "f").unwrap(),
        "one\n2"
    );
}

#[test]
fn rejection_shows_expected_and_actual_lines() {
    let patch = "--- a/f\n+++ b/f\n@@ -2,2 +2,2 @@\n b\n-x\n+y\n";
    let error = apply_hunks("a\nb\nc\n", &hunks(patch), "f").unwrap_err();
    assert_eq!(
        error,
        "hunk 1 of `f` does not match the file; nothing was changed.\nHunk: @@ -2,2 +2,2 @@\nExpected these lines:\n  |b\n  |x\nThe file has at line 2:\n  |b\n  |c\nRead the file again and send a patch against its current text."
    );
}

#[test]
fn parses_new_deleted_and_several_files() {
    let files = parse(
            "diff --git a/x b/x\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n",
        )
        .unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(
        (files[0].old_path.clone(), files[0].new_path.clone()),
        (None, Some("new.txt".into()))
    );
    assert_eq!(
        (files[1].old_path.clone(), files[1].new_path.clone()),
        (Some("old.txt".into()), None)
    );
    assert_eq!(
        apply_hunks("", &files[0].hunks, "new.txt").unwrap(),
        "one\ntwo\n"
    );
}

#[test]
fn insertion_without_context_goes_after_the_stated_line() {
    let patch = "--- a/f\n+++ b/f\n@@ -1,0 +2 @@\n+X\n";
    assert_eq!(
        apply_hunks("a\nb\n", &hunks(patch), "f").unwrap(),
        "a\nX\nb\n"
    );
}

#[test]
fn removed_lines_that_start_with_two_dashes() {
    let patch = "--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1 @@\n--- note\n select 1;\n";
    assert_eq!(
        apply_hunks("-- note\nselect 1;\n", &hunks(patch), "q.sql").unwrap(),
        "select 1;\n"
    );
}

#[test]
fn final_newline_markers_work_both_ways() {
    let add = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n";
    assert_eq!(apply_hunks("a", &hunks(add), "f").unwrap(), "a\n");
    let remove = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n";
    assert_eq!(apply_hunks("a\n", &hunks(remove), "f").unwrap(), "a");
}

#[test]
fn mixed_line_endings_are_kept_per_line() {
    let patch = "--- a/f\n+++ b/f\n@@ -2 +2 @@\n-b\n+B\n";
    assert_eq!(
        apply_hunks("a\r\nb\nc\r\n", &hunks(patch), "f").unwrap(),
        "a\r\nB\nc\r\n"
    );
}

#[tokio::test]
async fn two_sections_for_one_file_compose() {
    let (dir, context) = crate::tools::tests::context();
    std::fs::write(dir.path().join("f"), "a\nb\nc\n").unwrap();
    let patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+A\n--- a/f\n+++ b/f\n@@ -3 +3 @@\n-c\n+C\n";
    let output = Patch
        .call(serde_json::json!({"patch": patch}), &context)
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f")).unwrap(),
        "A\nb\nC\n"
    );
    assert_eq!(output.output, "updated f (+2 -2)");
}

#[test]
fn text_without_headers_is_explained() {
    assert!(
        parse("just some text")
            .unwrap_err()
            .starts_with("no file headers found")
    );
}
