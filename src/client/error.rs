//! Errors of the model client, and reading the error bodies servers send.

use std::time::Duration;

use serde_json::Value;

/// The vLLM flags that make it parse tool calls, for the models they fit.
pub const TOOL_PARSER_FLAGS: &str = "`--enable-auto-tool-choice --tool-call-parser hermes` (Qwen2.5, Qwen3, Hermes; `qwen3_coder` for Qwen3-Coder, `mistral` for Mistral, `llama3_json` for Llama 3.1+)";

/// What to do about a certificate that is not trusted.
pub const CERTIFICATE_FIX: &str =
    "give the server's CA certificate (PEM) as `tls.ca_file` in the config, or `SSL_CERT_FILE`";

/// What went wrong talking to the model server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No connection could be made, or (for a timeout after connecting)
    /// the server did not answer in time; the message names the phase.
    #[error("{}", connect_message(url, source))]
    Connect {
        /// The URL requested.
        url: String,
        /// The underlying error.
        #[source]
        source: ureq::Error,
    },
    /// The server answered with an error status.
    #[error("The server answered HTTP {status}: {message}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// What the server said.
        message: String,
        /// The error's `code` (number or string), as text.
        code: Option<String>,
        /// From a `Retry-After` header.
        retry_after: Option<Duration>,
    },
    /// The server reported an error inside the stream.
    #[error("The server reported an error during the response: {message}")]
    InBand {
        /// What the server said.
        message: String,
        /// The error's `code` (number or string), as text.
        code: Option<String>,
    },
    /// A chunk could not be understood.
    #[error("The server sent a malformed chunk ({reason}): `{excerpt}`")]
    Malformed {
        /// Why.
        reason: String,
        /// The start of the chunk.
        excerpt: String,
    },
    /// The body ended without `[DONE]`.
    #[error("The response ended early: the connection closed before `[DONE]`")]
    Truncated,
    /// An event exceeded the size limit.
    #[error("The server sent an event larger than {} MiB", super::sse::MAX_EVENT_BYTES >> 20)]
    TooLarge,
    /// Reading the response failed (connection reset, ...).
    #[error("The connection broke while reading the response")]
    Read(#[source] std::io::Error),
    /// Nothing arrived within the idle timeout.
    #[error("No data from the server for {} s (timeouts.idle_ms)", .0.as_secs())]
    IdleTimeout(Duration),
    /// A response that should be JSON was not.
    #[error("The server's answer to {what} was not understood: {reason}")]
    BadResponse {
        /// What was asked.
        what: String,
        /// Why.
        reason: String,
    },
    /// The connection settings are wrong (`tls.ca_file`, a proxy).
    #[error("{0}")]
    Setup(String),
    /// The request was cancelled.
    #[error("Cancelled")]
    Cancelled,
}

/// What a connection error means for a person: which phase failed.
fn connect_message(url: &str, source: &ureq::Error) -> String {
    use ureq::Timeout;
    match source {
        ureq::Error::Timeout(Timeout::Resolve | Timeout::Connect) => format!(
            "Could not connect to `{url}`: no connection was made in time (timeouts.connect_ms)"
        ),
        ureq::Error::Timeout(Timeout::SendRequest | Timeout::SendBody | Timeout::PerWrite) => {
            format!("Connected to `{url}`, but sending the request did not finish in time")
        }
        ureq::Error::Timeout(Timeout::RecvBody) => {
            format!("Connected to `{url}`, but its answer stopped arriving before it was whole")
        }
        ureq::Error::Timeout(_) => format!(
            "Connected to `{url}`, but the server sent no answer in time (it accepted the \
             connection and said nothing; a server still loading its model does this)"
        ),
        _ => format!("Could not connect to `{url}`"),
    }
}

impl Error {
    /// Whether trying the same request again may succeed: connection
    /// failures, 429, 5xx and streams cut short. Never other 4xx.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Connect { .. } => !self.is_certificate_problem(),
            Self::Truncated | Self::Read(_) => true,
            Self::Status { status, .. } => *status == 429 || *status >= 500,
            Self::InBand { .. }
            | Self::Malformed { .. }
            | Self::TooLarge
            | Self::IdleTimeout(_)
            | Self::BadResponse { .. }
            | Self::Setup(_)
            | Self::Cancelled => false,
        }
    }

    /// The server refused a request with `tools` because it cannot parse
    /// tool calls (vLLM without `--enable-auto-tool-choice`).
    pub fn refuses_tools(&self) -> bool {
        matches!(
            self,
            Self::Status { status: 400, message, .. }
                if message.contains("--enable-auto-tool-choice") || message.contains("--tool-call-parser")
        )
    }

    /// The connection failed because the server's certificate was not
    /// trusted (or TLS could not be set up): trying again cannot help.
    pub fn is_certificate_problem(&self) -> bool {
        let Self::Connect { source, .. } = self else {
            return false;
        };
        matches!(
            source,
            ureq::Error::Tls(_) | ureq::Error::Rustls(_) | ureq::Error::Pem(_)
        ) || super::error_chain(source).contains("certificate")
    }

    /// The server's requested delay before a retry.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// For an HTTP error status, the status code.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// `message` and `code` of an error body: flat (`{"object":"error",...}`),
/// wrapped (`{"error":{...}}`), or not JSON at all.
pub fn parse_error_body(body: &str) -> (String, Option<String>) {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        let text = body.trim();
        let text: String = text.chars().take(500).collect();
        return (
            if text.is_empty() {
                "(empty body)".to_owned()
            } else {
                text
            },
            None,
        );
    };
    let object = value
        .get("error")
        .filter(|e| e.is_object())
        .unwrap_or(&value);
    let message = match object.get("message").or_else(|| value.get("error")) {
        Some(Value::String(text)) => text.clone(),
        Some(other) if !other.is_null() => other.to_string(),
        _ => value.to_string(),
    };
    (message, code_text(object.get("code")))
}

/// An error object's `code`, which servers send as a number or a string.
pub fn code_text(code: Option<&Value>) -> Option<String> {
    match code? {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// A `Retry-After` value in seconds (HTTP dates are ignored).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(3600.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn flat_wrapped_and_plain_bodies() {
        assert_eq!(
            parse_error_body(
                r#"{"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}"#
            ),
            ("bad".to_owned(), Some("400".to_owned()))
        );
        assert_eq!(
            parse_error_body(
                r#"{"error":{"message":"Incorrect API key","code":"invalid_api_key"},"request_id":"x"}"#
            ),
            (
                "Incorrect API key".to_owned(),
                Some("invalid_api_key".to_owned())
            )
        );
        assert_eq!(
            parse_error_body(r#"{"error":"plain"}"#),
            ("plain".to_owned(), None)
        );
        assert_eq!(
            parse_error_body("<html>502</html>\n"),
            ("<html>502</html>".to_owned(), None)
        );
        assert_eq!(parse_error_body(""), ("(empty body)".to_owned(), None));
    }

    #[test]
    fn retry_after_seconds() {
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn only_transient_failures_retry() {
        let status = |status| Error::Status {
            status,
            message: String::new(),
            code: None,
            retry_after: None,
        };
        assert!(status(429).is_retryable());
        assert!(status(503).is_retryable());
        assert!(!status(400).is_retryable());
        assert!(!status(404).is_retryable());
        assert!(Error::Truncated.is_retryable());
        assert!(!Error::Cancelled.is_retryable());
    }
}
