//! What the core says once, when a session starts, before the first turn.

use super::state::AgentState;
use crate::protocol::EventMsg;

impl AgentState {
    /// What the user should know before the first turn: problems with the
    /// instructions and skills, an untrusted project config, how commands
    /// run, the server's facts and skipped session lines.
    pub(super) fn startup_warnings(&mut self) {
        for warning in self.request.context().warnings.clone() {
            self.warn(0, &warning);
        }
        if self.config.tls.insecure_skip_verify && self.config.base_url.starts_with("https") {
            self.warn(0, crate::client::net::INSECURE_WARNING);
        }
        match self.shell.status() {
            crate::confine::Status::Confined { .. } => {}
            crate::confine::Status::Off => self.warn(
                0,
                "Shell commands run UNCONFINED: your config says `\"sandbox\": \"off\"`, so a command can write anywhere you can and reach the network",
            ),
            crate::confine::Status::Unavailable { reason } => {
                let message = format!(
                    "Shell commands cannot be confined ({reason}); every command will ask before it runs. `offcode doctor` explains"
                );
                self.warn(0, &message);
            }
        }
        self.record_start_agent();
        self.adopt_server_facts(0);
        if self.session.skipped_lines > 0 {
            self.emit(
                0,
                EventMsg::Warning {
                    message: format!(
                        "{} unreadable lines in `{}` were skipped",
                        self.session.skipped_lines,
                        self.session.path.display()
                    ),
                },
            );
        }
    }
}
