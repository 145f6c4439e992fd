//! What decides whether a call runs: the policy, the rules allowed for the
//! session, who answers questions, and the run of identical calls the
//! doom-loop check counts. Plain data and its rules; asking a person and
//! recording the answer are the core's (`permit.rs`).

use std::hash::{DefaultHasher, Hash, Hasher};

use std::sync::Arc;

use serde_json::Value;

use crate::policy::{Action, AgentRules, Decision, Policy, PolicySource, Rule};
use crate::protocol::Decider;
use crate::session::{AllowedRule, ToolCall};
use crate::tools::ToolOutput;

/// What decides whether a call runs: the policy, the rules the user
/// allowed for the session, who answers questions, and the run of
/// identical calls the doom-loop check counts. One per agent.
pub(super) struct Permits {
    pub(super) policy: Arc<PolicySource>,
    /// Rules the user allowed for the rest of the session.
    pub(super) session_rules: Vec<Rule>,
    /// The agent profile's rules.
    pub(super) agent: AgentRules,
    /// Who answers approval requests.
    pub(super) approver: Decider,
    /// The last call asked for and how many times in a row.
    pub(super) last_call: Option<(String, String)>,
    pub(super) repeats: u32,
    /// The last call that ran, its result's hash, and how many times in a
    /// row it ran with that same result.
    pub(super) answered: Option<((String, String), u64, u32)>,
    /// The turn only asks a question (a small model's): no file changes.
    pub(super) question: bool,
    /// Files a `write` of this turn may create (they did not exist when
    /// it was asked for): a small model rewrites only those whole.
    pub(super) creating: std::collections::HashSet<std::path::PathBuf>,
}

/// Runs of one call with one result after which the same call is refused:
/// it would only give the same again (a small model reading one file six
/// times, each approved by `--yes`).
pub(super) const SAME_ANSWERS: u32 = 2;

/// Who asked for a call: it decides how it is shown and whether it counts
/// as one of the model's repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Caller {
    /// The model, in its answer (or recovered from its text).
    Model,
    /// The person, with `!command`.
    Person,
    /// offcode, validating the model's changes.
    Validation,
}

/// The id prefix of offcode's own validation runs.
pub(super) const VALIDATION_ID: &str = "validate_";

impl Permits {
    /// `allowed` are the session's earlier "allow for this session" rules.
    pub(super) fn new(
        policy: Arc<PolicySource>,
        allowed: &[AllowedRule],
        approver: Decider,
    ) -> Self {
        Self {
            policy,
            session_rules: allowed
                .iter()
                .map(|a| Rule::for_session(a.permission.clone(), a.pattern.clone()))
                .collect(),
            approver,
            agent: AgentRules::default(),
            last_call: None,
            repeats: 0,
            answered: None,
            question: false,
            creating: std::collections::HashSet::new(),
        }
    }

    /// The policy, for a subagent's core.
    pub(super) fn policy(&self) -> Arc<PolicySource> {
        Arc::clone(&self.policy)
    }

    /// Who answers questions, for a subagent's core.
    pub(super) fn approver(&self) -> Decider {
        self.approver
    }

    /// Lays the agent profile's rules over the config's.
    pub(super) fn set_agent(&mut self, rules: AgentRules) {
        self.agent = rules;
    }

    /// A new turn: whether it only asks a question (so no file may
    /// change), and no file created by it yet.
    pub(super) fn new_turn(&mut self, question: bool) {
        self.question = question;
        self.creating.clear();
    }

    /// Whether the policy lets `tool` run with `arguments` without asking
    /// anyone (the runtime's own reads are never put to the person).
    pub(super) fn allows_unasked(&self, tool: &str, arguments: &Value) -> bool {
        self.action(tool, arguments) == Some(Action::Allow)
    }

    /// Whether the policy denies `tool` with `arguments` outright.
    pub(super) fn denies(&self, tool: &str, arguments: &Value) -> bool {
        self.action(tool, arguments) == Some(Action::Deny)
    }

    /// What the policy says of a call, without asking anyone; `None` when
    /// it cannot be loaded.
    fn action(&self, tool: &str, arguments: &Value) -> Option<Action> {
        let policy = self.policy.current().ok()?;
        Some(
            policy
                .decide_as(tool, arguments, &self.agent, &self.session_rules)
                .action,
        )
    }

    /// Something other than the model's calls happened (a user message, a
    /// command the user ran): the run of identical calls is broken.
    pub(super) fn break_repeats(&mut self) {
        self.last_call = None;
        self.answered = None;
    }

    /// Takes in the result of a call that ran; only results that worked
    /// count (a failure may be worth trying again: a server restarted).
    pub(super) fn answered(&mut self, call: &ToolCall, output: &ToolOutput) {
        if !output.ok {
            self.answered = None;
            return;
        }
        let output = &output.output;
        let mut hasher = DefaultHasher::new();
        output.hash(&mut hasher);
        let hash = hasher.finish();
        let key = (call.name.clone(), call.arguments.clone());
        match &mut self.answered {
            Some((last, last_hash, times)) if *last == key && *last_hash == hash => *times += 1,
            _ => self.answered = Some((key, hash, 1)),
        }
    }

    /// The refusal of `call` when it ran [`SAME_ANSWERS`] times in a row
    /// with the same result: whoever answers questions, it is not run.
    pub(super) fn answered_again(&self, call: &ToolCall) -> Option<ToolOutput> {
        let (key, _, times) = self.answered.as_ref()?;
        (*times >= SAME_ANSWERS && key.0 == call.name && key.1 == call.arguments).then(|| {
            ToolOutput::error(format!(
                "Not run: you made this exact `{}` call {times} times in a row and got the same result each time (above); it would give the same again. Use that result and go on with the task, or say why it cannot be done.",
                call.name
            ))
        })
    }

    /// How many times in a row this exact call has now been asked for.
    pub(super) fn count_repeat(&mut self, call: &ToolCall) -> u32 {
        let key = (call.name.clone(), call.arguments.clone());
        if self.last_call.as_ref() == Some(&key) {
            self.repeats += 1;
        } else {
            self.last_call = Some(key);
            self.repeats = 1;
        }
        self.repeats
    }

    /// The same call asked for again and again is matched as `doom_loop`
    /// too, and the stricter answer stands.
    pub(super) fn doom_loop(
        &mut self,
        policy: &Policy,
        call: &ToolCall,
        caller: Caller,
        decision: &mut Decision,
    ) {
        // offcode's own validation runs are not the model's repeats.
        if caller == Caller::Validation {
            return;
        }
        let repeats = self.count_repeat(call);
        if repeats < DOOM_LOOP_REPEATS {
            return;
        }
        let doom = policy.decide_as(
            "doom_loop",
            &Value::String(call.name.clone()),
            &self.agent,
            &self.session_rules,
        );
        if doom.action > decision.action {
            decision.action = doom.action;
            decision.rule = format!(
                "{} (the same `{}` call {repeats} times in a row)",
                doom.rule, call.name
            );
            decision.mandate = doom.mandate;
            decision.source = doom.source;
            decision.session_rules = Vec::new();
        }
    }
}

/// The same call this many times in a row is matched as `doom_loop`.
const DOOM_LOOP_REPEATS: u32 = 3;
