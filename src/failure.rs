//! What a command reports when it fails, and the exit statuses: 0 done,
//! 1 the task failed ([`EXIT_FAILED`]), 2 usage or configuration
//! ([`EXIT_USAGE`]), 3 the model stopped without running a call it wrote
//! ([`EXIT_INCOMPLETE`]), 4 a refusal stopped the work ([`EXIT_REFUSED`]).
//! Each error becomes one [`Failure`] at the edge, with
//! its causes and a hint for what to do.

/// Exit status for usage and configuration errors.
pub const EXIT_USAGE: u8 = 2;
/// Exit status when the model ended without running a call it wrote.
pub const EXIT_INCOMPLETE: u8 = 3;
/// Exit status when a rule, the managed policy or a person refused a call
/// that would change files or run a command, and nothing else did either.
pub const EXIT_REFUSED: u8 = 4;
/// Exit status when the task failed.
pub const EXIT_FAILED: u8 = 1;

/// An error to report at the top level: the message, its causes, an optional
/// hint and the exit status.
#[derive(Debug)]
pub struct Failure {
    /// What failed.
    pub message: String,
    /// Each underlying cause, outermost first.
    pub causes: Vec<String>,
    /// What the user can do about it.
    pub hint: Option<String>,
    /// The process exit status.
    pub exit: u8,
}

impl Failure {
    /// A failure from an error value and its source chain.
    pub fn new(error: &dyn std::error::Error, exit: u8) -> Self {
        let mut causes = Vec::new();
        let mut source = error.source();
        while let Some(cause) = source {
            causes.push(cause.to_string());
            source = cause.source();
        }
        Self {
            message: error.to_string(),
            causes,
            hint: None,
            exit,
        }
    }

    /// A failure with only a message.
    pub fn message(message: impl Into<String>, exit: u8) -> Self {
        Self {
            message: message.into(),
            causes: Vec::new(),
            hint: None,
            exit,
        }
    }

    /// Adds a hint.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// A client error as a top-level failure with a hint for the usual causes.
    pub fn from_client(error: &crate::client::Error, base_url: &str) -> Self {
        let failure = Self::new(error, EXIT_FAILED);
        match error {
            crate::client::Error::Connect { .. } if error.is_certificate_problem() => failure.with_hint(
                format!("The server's certificate is not trusted: {}", crate::client::CERTIFICATE_FIX),
            ),
            crate::client::Error::Connect { .. } => failure.with_hint(format!(
                "Is the model server running at `{base_url}`? Set `base_url` in `~/.config/offcode/offcode.jsonc` or `OFFCODE_BASE_URL`"
            )),
            crate::client::Error::Status { status: 401 | 403, .. } => failure.with_hint(
                "Set the endpoint's API key with `OFFCODE_API_KEY` or `api_key` in the config",
            ),
            crate::client::Error::Status { status: 404, .. } => failure.with_hint(
                "Check `base_url` (it usually ends in `/v1`) and the model name (`offcode models`)",
            ),
            _ => failure,
        }
    }

    /// Writes the report a user sees: `error:`, each cause, the hint.
    pub fn report(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        writeln!(out, "error: {}", self.message)?;
        for cause in &self.causes {
            writeln!(out, "  Caused by: {cause}")?;
        }
        if let Some(hint) = &self.hint {
            writeln!(out, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

impl From<crate::config::Error> for Failure {
    fn from(error: crate::config::Error) -> Self {
        let hint = match &error {
            // `offcode config` would stop at the same file.
            crate::config::Error::Read { .. } | crate::config::Error::Invalid { .. } => {
                "Fix the file at the place named above; every offcode command reads it, so they \
                 all stop here until it is fixed"
            }
            crate::config::Error::BadValue { .. } | crate::config::Error::Merged(_) => {
                "Fix the value named above; `offcode config` shows where each setting comes from"
            }
        };
        Self::new(&error, EXIT_USAGE).with_hint(hint)
    }
}
