//! Parsing and merging of config layers.

use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn problem(text: &str) -> (Option<usize>, Option<usize>, String) {
    let p = parse_file(text).expect_err("should fail");
    (p.line, p.column, p.message)
}

#[test]
fn an_empty_file_sets_nothing() {
    assert!(parse_file("").unwrap().is_empty());
    assert!(parse_file(" \n\t\n").unwrap().is_empty());
}

#[test]
fn a_file_cut_short_is_reported_where_it_ends() {
    let (line, column, message) =
        problem("{\n  \"model\": \"x\",\n  \"permission\": {\n    \"bash\": \"ask\"\n");
    assert_eq!((line, column), (Some(4), Some(18)), "{message}");
    assert!(message.contains("ends before"), "{message}");
    // An open string: at its end too, not at the object's start.
    let (line, column, message) = problem("{ \"model\": \"x");
    assert_eq!(line, Some(1), "{message}");
    assert!(column >= Some(14), "{column:?} {message}");
}

#[test]
fn comments_and_trailing_commas_are_accepted() {
    let map = parse_file("{\n // note\n model: 'q', /* x */ max_steps: 3,\n}").unwrap();
    assert_eq!(Value::Object(map), json!({"model": "q", "max_steps": 3}));
}

#[test]
fn unknown_nested_key_names_line_and_column() {
    assert_eq!(
        problem("{\n  \"retry\": {\n    \"max_retry\": 3\n  }\n}"),
        (
            Some(3),
            Some(5),
            "unknown field `max_retry`, expected one of `max_retries`, `initial_delay_ms`, `max_delay_ms`"
                .to_owned()
        )
    );
}

#[test]
fn wrong_type_and_bad_values_are_positioned() {
    assert_eq!(
        problem("{\n  max_steps: 'ten'\n}"),
        (Some(2), Some(14), "expected number".to_owned())
    );
    assert_eq!(
        problem("{ base_url: 'localhost:8000' }"),
        (
            Some(1),
            Some(13),
            "`localhost:8000` is not an http:// or https:// URL".to_owned()
        )
    );
    assert_eq!(
        problem("{ temperature: 3 }"),
        (Some(1), Some(16), "3 is outside 0 to 2".to_owned())
    );
    assert_eq!(problem("{ max_steps: 0 }").2, "must be at least 1");
}

#[test]
fn syntax_errors_are_positioned() {
    assert_eq!(problem("{ model: 'x'\n  oops }").0, Some(2));
    assert_eq!(problem("[1]").2, "expected opening brace");
}

#[test]
fn later_layers_win_leaf_by_leaf_and_sources_follow() {
    let mut merged = Merged::default();
    let global = Source::File(PathBuf::from("/g.jsonc"));
    let project = Source::File(PathBuf::from("/p.jsonc"));
    merged.apply(
        parse_file("{model: 'a', retry: {max_retries: 1, max_delay_ms: 9}}").unwrap(),
        &global,
    );
    merged.apply(parse_file("{retry: {max_retries: 5}}").unwrap(), &project);
    assert_eq!(
        Value::Object(merged.tree.clone()),
        json!({"model": "a", "retry": {"max_retries": 5, "max_delay_ms": 9}})
    );
    assert_eq!(merged.source_of("retry.max_retries"), project);
    assert_eq!(merged.source_of("retry.max_delay_ms"), global);
    assert_eq!(merged.source_of("max_steps"), Source::Default);
}
