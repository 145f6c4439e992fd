//! The session's title: after the first turn of an interactive session,
//! the hidden `title` agent names it in the background, and the name is
//! recorded between ops (`/sessions` and `offcode sessions` show it).
//! Headless runs and subagents are not named: their first request is
//! their name, and a run should not wait for one more request.

use super::state::AgentState;
use crate::cancel::Cancel;
use crate::client::wire::ChatRequest;
use crate::context::text_message;
use crate::session::{EntryBody, Message};

/// Characters of the first request the title agent is shown.
const SHOWN: usize = 2_000;
/// Characters a title keeps.
const LONGEST: usize = 60;

impl AgentState {
    /// After a turn: when it was the session's first request, asks the
    /// `title` agent (unless a config disabled it) for a name, in the
    /// background. A failure leaves the session named by its request.
    pub(super) fn ask_title(&mut self) {
        let mut requests = self.session.messages.iter().filter_map(|m| match m {
            Message::User { content } => Some(content),
            _ => None,
        });
        let (Some(first), None) = (requests.next(), requests.next()) else {
            self.titles.wanted = false;
            return;
        };
        if !std::mem::take(&mut self.titles.wanted) {
            return;
        }
        let Some(agent) = self.agents.get(crate::agents::TITLE).cloned() else {
            return;
        };
        let task: String = first.chars().take(SHOWN).collect();
        // The title agent's model, else `small_model`, else the session's.
        let reference = agent
            .model
            .clone()
            .or_else(|| self.base_config.small_model.clone())
            .unwrap_or_else(|| self.model().to_owned());
        let Ok((config, client)) = self.hidden_route(&reference, Some(&agent)) else {
            return;
        };
        let model = config.route.model.clone();
        let sender = self.titles.sender.clone();
        tokio::spawn(async move {
            let messages = [
                text_message("system", &agent.prompt),
                text_message("user", &task),
            ];
            let mut request = ChatRequest::streaming(&model, &messages, &[], &config);
            request.max_tokens = Some(64);
            let answer = client
                .stream_chat(&request, &Cancel::default(), &mut |_| {})
                .await;
            if let Some(title) = answer.ok().and_then(|a| clean(&a.content)) {
                let _ = sender.send(title);
            }
        });
    }

    /// Records a title that came back.
    pub(super) fn record_title(&mut self, title: String) {
        let _ = self.record(0, EntryBody::Title { title });
    }
}

/// The title in a model's answer: its first line without quotes, a
/// `Title:` label or a final full stop, at most [`LONGEST`] characters;
/// `None` when nothing is left or the model still reasoned in its text.
fn clean(answer: &str) -> Option<String> {
    let answer = match answer.rfind("</think>") {
        Some(end) => &answer[end + "</think>".len()..],
        None if answer.contains("<think>") => return None,
        None => answer,
    };
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line.trim_start_matches('#').trim();
    let line = ["Title:", "title:", "标题：", "标题:"]
        .iter()
        .find_map(|label| line.strip_prefix(label))
        .unwrap_or(line)
        .trim();
    let quotes: &[char] = &['"', '\'', '`', '*', '“', '”', '「', '」', '《', '》'];
    let stops: &[char] = &['.', '。'];
    let line = line
        .trim_end_matches(stops)
        .trim_matches(quotes)
        .trim_end_matches(stops)
        .trim();
    let title: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
    let title: String = title.chars().take(LONGEST).collect();
    (!title.is_empty()).then_some(title)
}

#[cfg(test)]
mod tests {
    use super::{LONGEST, clean};

    #[test]
    fn a_title_is_the_answer_s_first_line_without_decoration() {
        assert_eq!(
            clean("\n\"Fix the parser's panic on empty input.\"\nBecause...").as_deref(),
            Some("Fix the parser's panic on empty input")
        );
        assert_eq!(
            clean("Title: **Add retries**").as_deref(),
            Some("Add retries")
        );
        assert_eq!(
            clean("标题：「修复登录超时」。").as_deref(),
            Some("修复登录超时")
        );
        assert_eq!(
            clean("<think>short</think>\n# Port the config loader").as_deref(),
            Some("Port the config loader")
        );
        assert_eq!(
            clean(&"long ".repeat(40)).map(|t| t.chars().count()),
            Some(LONGEST)
        );
    }

    #[test]
    fn no_title_from_an_empty_or_unfinished_answer() {
        assert_eq!(clean("  \n "), None);
        assert_eq!(clean("<think>the user wants"), None);
        assert_eq!(clean("\"\""), None);
    }
}
