//! The model checks of `offcode doctor`: a request that offers one tool
//! (called natively, refused, or not at all), what the model does with
//! reasoning, and whether the server counts tokens.

use std::time::Instant;

use serde_json::json;

use super::{Memory, Report, millis};
use crate::cancel::Cancel;
use crate::client::inline::{InlineParser, describe_tools};
use crate::client::wire::{ChatRequest, FunctionSpec, ToolSpec};
use crate::client::{self, Assembled, Client};
use crate::context::text_message;
use crate::failure::Failure;
use crate::servers::ToolSupport;

/// The tool the probe asks the model to call.
const PROBE_TOOL: &str = "report_status";
const PROBE_PROMPT: &str = "This is a connection check. Call the report_status tool with status \"ok\". Do not write anything else.";

/// What the tool-calling probe saw.
pub(super) struct Probe {
    /// The server refused `tools` (no parser).
    refused: bool,
    /// The response used for the checks (native, or text after a refusal).
    response: Result<Assembled, client::Error>,
    /// Calls read from the response's text.
    text_calls: usize,
    /// Inline reasoning was found in the text, and whether it was a lone
    /// `</think>`.
    inline_reasoning: bool,
    lone_close: bool,
    millis: u128,
}

pub(super) fn probe_tool() -> ToolSpec {
    ToolSpec {
        kind: "function",
        function: FunctionSpec {
            name: PROBE_TOOL.to_owned(),
            description: "Report a status word.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {"status": {"type": "string"}},
                "required": ["status"]
            }),
        },
    }
}

/// Asks the model to call a tool natively; when the server refuses, the
/// same through the text.
pub(super) async fn probe_tools(
    client: &Client,
    config: &crate::config::Config,
    model: &str,
) -> Probe {
    let tools = vec![probe_tool()];
    let mut config = config.clone();
    config.max_tokens = Some(config.max_tokens.unwrap_or(1024).min(1024));
    config.retry.max_retries = config.retry.max_retries.min(1);
    let started = Instant::now();
    let messages = vec![
        text_message("system", "You are a helpful assistant."),
        text_message("user", PROBE_PROMPT),
    ];
    let request = ChatRequest::streaming(model, &messages, &tools, &config);
    let mut response = client
        .stream_chat(&request, &Cancel::default(), &mut |_| {})
        .await;
    let refused = response.as_ref().is_err_and(client::Error::refuses_tools);
    if refused {
        let system = format!("You are a helpful assistant.\n\n{}", describe_tools(&tools));
        let messages = vec![
            text_message("system", &system),
            text_message("user", PROBE_PROMPT),
        ];
        let request = ChatRequest::streaming(model, &messages, &[], &config);
        response = client
            .stream_chat(&request, &Cancel::default(), &mut |_| {})
            .await;
    }
    let mut parser = InlineParser::new(&tools, false, refused);
    let mut text_calls = 0;
    if let Ok(assembled) = &response {
        parser.push(&assembled.content);
        text_calls = parser
            .finish(assembled.finish_reason.as_deref() == Some("length"))
            .1
            .len();
    }
    Probe {
        refused,
        text_calls,
        inline_reasoning: parser.saw_reasoning(),
        lone_close: parser.saw_lone_close(),
        response,
        millis: millis(started),
    }
}

/// The fixes to name for the server at hand: llama.cpp's flags are not
/// vLLM's.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fixes {
    pub(super) llama_cpp: bool,
}

impl Fixes {
    /// For a server that reads no tool calls, or not this model's.
    fn tool_parser(self, wrong_one: bool) -> String {
        match (self.llama_cpp, wrong_one) {
            (true, false) => "start llama-server with `--jinja` (it reads tool calls with the model's chat template; for a GGUF whose template has no tools, add `--chat-template-file`)".to_owned(),
            (true, true) => "check that llama-server runs with `--jinja` and the model's own chat template (`--chat-template-file` when the GGUF's has no tools); small models often write their calls as text anyway, which offcode reads".to_owned(),
            (false, false) => format!("start vLLM with {}", client::TOOL_PARSER_FLAGS),
            (false, true) => format!(
                "start vLLM with the parser for this model: {}",
                client::TOOL_PARSER_FLAGS
            ),
        }
    }

    /// For reasoning that arrives inside the text.
    fn reasoning(self) -> &'static str {
        if self.llama_cpp {
            "start llama-server with `--jinja --reasoning-format deepseek`"
        } else {
            "start vLLM with `--reasoning-parser qwen3` (Qwen3, QwQ) or `--reasoning-parser deepseek_r1` (DeepSeek-R1)"
        }
    }
}

pub(super) fn report_tools(
    probe: &Probe,
    report: &mut Report,
    remember: &Memory<'_>,
    fixes: Fixes,
) -> Result<(), Failure> {
    let response = match &probe.response {
        Ok(response) => response,
        Err(error) => {
            return report.problem(
                &format!(
                    "a test chat request failed: {}",
                    client::error_chain(error)
                ),
                "check the server's log; `offcode run \"hello\"` shows the same error with more context",
            );
        }
    };
    let native = response.tool_calls.iter().any(|c| c.name == PROBE_TOOL);
    if probe.refused {
        remember.set(|known| known.tool_calls = Some(ToolSupport::Text));
        let works = if probe.text_calls > 0 {
            "offcode falls back to calls in the text, which works with this model but is less reliable"
        } else {
            "and the model did not call the tool through the text either"
        };
        return report.problem(
            &format!(
                "the server has no tool-call parser: requests with tools are refused; {works}"
            ),
            &fixes.tool_parser(false),
        );
    }
    if native {
        remember.set(|known| known.tool_calls = Some(ToolSupport::Native));
        return report.ok(&format!(
            "tool calling works natively ({} ms)",
            probe.millis
        ));
    }
    if probe.text_calls > 0 {
        return report.problem(
            "the tool call came back as text: the server's tool-call parser does not match this model (offcode reads such calls anyway)",
            &fixes.tool_parser(true),
        );
    }
    report.problem(
        "the model did not call the offered tool",
        "use a model trained for tool calling (Qwen2.5/Qwen3, Llama 3.1+, Mistral...) and its chat template; `finish_reason` was length? raise `max_tokens`",
    )
}

pub(super) fn report_reasoning(
    probe: &Probe,
    report: &mut Report,
    remember: &Memory<'_>,
    fixes: Fixes,
) -> Result<(), Failure> {
    let Ok(response) = &probe.response else {
        return Ok(());
    };
    remember.set(|known| known.think_open = probe.lone_close);
    if probe.inline_reasoning {
        return report.problem(
            "the model's reasoning arrives inside the text (`<think>`…`</think>`): the server has no reasoning parser (offcode separates it meanwhile)",
            fixes.reasoning(),
        );
    }
    if response.reasoning.as_deref().is_some_and(|r| !r.is_empty()) {
        return report.ok("reasoning arrives in its own field");
    }
    report.note("no reasoning seen (not a thinking model, or thinking is off)")
}

pub(super) fn tokenize(
    client: &Client,
    model: &str,
    report: &mut Report,
    fixes: Fixes,
) -> Result<(), Failure> {
    if fixes.llama_cpp {
        // llama.cpp counts text (`content`), not a chat request.
        return match client.tokenize_text("hello") {
            Some(count) if count > 0 => report.note(
                "/tokenize counts text (llama.cpp's form): offcode estimates whole requests and corrects the estimate by the usage the server reports",
            ),
            _ => report.note(
                "no /tokenize route: offcode estimates token counts until the server reports usage",
            ),
        };
    }
    match client.tokenize(model, &[text_message("user", "hello")], &[]) {
        Ok(Some(_)) => report.ok("/tokenize counts tokens exactly"),
        _ => report.note(
            "no /tokenize route: offcode estimates token counts until the server reports usage (vLLM has it; a proxy may hide it)",
        ),
    }
}
