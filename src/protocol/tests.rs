//! The wire format of the typed fields.

use super::*;
use serde_json::json;

fn end(outcome: CallOutcome) -> ToolCallEndEvent {
    ToolCallEndEvent {
        call_id: "c1".into(),
        name: "bash".into(),
        outcome,
        summary: String::new(),
        output: String::new(),
        display: None,
        reason: None,
    }
}

#[test]
fn a_call_outcome_keeps_ok_on_the_wire_and_reads_the_first_format() {
    let refused = serde_json::to_value(end(CallOutcome::Refused)).unwrap();
    assert_eq!(refused["ok"], false);
    assert_eq!(refused["outcome"], "refused");
    assert_eq!(
        serde_json::to_value(end(CallOutcome::Ok)).unwrap()["ok"],
        true
    );
    for outcome in [
        CallOutcome::Ok,
        CallOutcome::Failed,
        CallOutcome::Refused,
        CallOutcome::Aborted,
    ] {
        let text = serde_json::to_string(&end(outcome)).unwrap();
        let back: ToolCallEndEvent = serde_json::from_str(&text).unwrap();
        assert_eq!(back.outcome, outcome);
    }
    let first = json!({"call_id": "c", "name": "read", "ok": false, "summary": "", "output": ""});
    let read: ToolCallEndEvent = serde_json::from_value(first).unwrap();
    assert_eq!(read.outcome, CallOutcome::Failed);
}

#[test]
fn a_mandate_keeps_mandatory_on_the_wire() {
    let mut request = ApprovalRequestEvent {
        call_id: "c".into(),
        tool: "bash".into(),
        arguments: json!({"command": "ls"}),
        reason: None,
        rule: "r".into(),
        session_allowed: false,
        session_rules: Vec::new(),
        dangerous: false,
        dangers: Vec::new(),
        notes: Vec::new(),
        mandate: Some(Mandate::NoConfinement),
        confinement: None,
        unconfined: false,
        runs_unconfined: false,
        preview: None,
        agent: None,
    };
    let value = serde_json::to_value(&request).unwrap();
    assert_eq!(value["mandatory"], true);
    assert_eq!(value["mandate"], "no_confinement");
    let back: ApprovalRequestEvent = serde_json::from_value(value).unwrap();
    assert_eq!(back, request);
    request.mandate = None;
    let value = serde_json::to_value(&request).unwrap();
    assert_eq!(value["mandatory"], false);
    assert!(value.get("mandate").is_none());
    assert_eq!(
        serde_json::from_value::<ApprovalRequestEvent>(value).unwrap(),
        request
    );
}

#[test]
fn deciders_are_written_as_before() {
    for (decider, text) in [
        (Decider::Policy, "policy"),
        (Decider::User, "user"),
        (Decider::Session, "session"),
        (Decider::Headless, "headless"),
    ] {
        assert_eq!(serde_json::to_value(decider).unwrap(), text);
    }
}
