//! The result of a tool call: what the model gets, what the person sees,
//! and how the call ended, as fields.

use crate::protocol::ToolDisplay;

/// The result of a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent facts of one result, each read on its own"
)]
pub struct ToolOutput {
    /// False when the call failed; the model is told.
    pub ok: bool,
    /// What the model receives.
    pub output: String,
    /// One line for progress displays.
    pub summary: String,
    /// A richer form for the UI, never sent to the model.
    pub display: Option<ToolDisplay>,
    /// A change asked for is in the file already: nothing was written,
    /// and the file is as the call would leave it.
    pub in_place: bool,
    /// Why the call failed or was refused, for the person: without the
    /// words meant for the model alone. `None` when it worked, and for a
    /// command that ran (its [`ToolDisplay::Command`] says how it ended).
    pub reason: Option<String>,
    /// offcode held a change back before it ran (a rewrite of a file that
    /// exists, a call written as a file's content): nothing was written.
    pub held_back: bool,
    /// A rule, the managed policy or a person said no: not run.
    pub denied: bool,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(output: impl Into<String>, summary: impl Into<String>) -> Self {
        Self {
            ok: true,
            output: output.into(),
            summary: summary.into(),
            display: None,
            in_place: false,
            reason: None,
            held_back: false,
            denied: false,
        }
    }

    /// A command's result: the model's text is what it printed and how it
    /// ended; the display keeps the two apart.
    pub fn command(output: String, end: crate::protocol::CommandEnd) -> Self {
        let text = format!("{output}\n[{}]", end.describe());
        Self {
            ok: end.ok(),
            output: text.trim_start_matches('\n').to_owned(),
            summary: format!(
                "{}, {} of output",
                end.describe(),
                crate::protocol::count(output.lines().count(), "line")
            ),
            display: Some(ToolDisplay::Command { output, end }),
            in_place: false,
            reason: None,
            held_back: false,
            denied: false,
        }
    }

    /// How a call that ran ended, as the tool says: worked or failed.
    pub fn ran(&self) -> crate::protocol::CallOutcome {
        if self.ok {
            crate::protocol::CallOutcome::Ok
        } else {
            crate::protocol::CallOutcome::Failed
        }
    }

    /// The event saying call `call_id` of `name` ended with this result.
    pub fn end_event(
        &self,
        call_id: &str,
        name: &str,
        outcome: crate::protocol::CallOutcome,
    ) -> crate::protocol::ToolCallEndEvent {
        crate::protocol::ToolCallEndEvent {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            outcome,
            summary: self.summary.clone(),
            output: self.output.clone(),
            display: self.display.clone(),
            reason: self.reason.clone(),
        }
    }

    /// Adds the display form.
    #[must_use]
    pub fn with_display(mut self, display: ToolDisplay) -> Self {
        self.display = Some(display);
        self
    }

    /// A refused or failed call: `reason` for the person and the model,
    /// `advice` for the model alone ("Do not try to get around this…").
    pub fn refused(reason: &str, advice: &str) -> Self {
        let mut refused = Self::error(reason);
        refused.output = format!("{} {advice}", refused.output);
        refused
    }

    /// What the person is shown of a failure: its reason, or the model's
    /// text when there is none.
    pub fn shown_reason(&self) -> &str {
        self.reason.as_deref().unwrap_or(&self.output)
    }

    /// A failed result whose text is the reason.
    pub fn error(reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Self {
            ok: false,
            summary: reason.lines().next().unwrap_or_default().to_owned(),
            output: format!("Error: {reason}"),
            display: None,
            in_place: false,
            reason: Some(reason),
            held_back: false,
            denied: false,
        }
    }
}
