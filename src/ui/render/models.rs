//! `/models`: every endpoint's models, grouped by provider, the one in
//! use marked, each under the name `/models NAME` switches to.

use unicode_width::UnicodeWidthStr;

use super::{Line, Lines, Role, truncate};
use crate::protocol::{ModelInfo, ProviderInfo, format_tokens};

/// The model list at `width`: one group per endpoint when there are
/// providers (its label and URL, or why it did not answer), else one
/// table of the server's models.
pub fn models(
    models: &[ModelInfo],
    providers: &[ProviderInfo],
    current: &str,
    width: usize,
) -> Vec<Line> {
    let id_width = models
        .iter()
        .map(|m| m.id.width())
        .max()
        .unwrap_or(0)
        .min(width.saturating_sub(12).max(8));
    let row = |m: &ModelInfo| {
        let mark = if m.id == current { "* " } else { "  " };
        let context = m.context.map_or_else(|| "-".to_owned(), format_tokens);
        let id = truncate(&m.id, id_width);
        let pad = " ".repeat(id_width.saturating_sub(id.width()));
        let mut line = Line::new()
            .with(Role::Code, format!("{mark}{id}{pad}"))
            .with(Role::Dim, format!("  {context:>7}"));
        if let Some(name) = &m.name {
            let room = width.saturating_sub(id_width + 11);
            if room > 4 {
                line = line.with(Role::Dim, format!("  {}", truncate(name, room)));
            }
        }
        line
    };
    let mut lines = vec![Line::new().with(
        Role::Dim,
        format!("  {:<id_width$}  {:>7}", "MODEL", "CONTEXT"),
    )];
    if providers.is_empty() {
        lines.extend(models.iter().map(row));
        return lines;
    }
    for provider in providers {
        let mut head = Line::new().with(Role::Label, provider.label.clone());
        if provider.label != provider.base_url {
            head = head.with(Role::Dim, format!("  {}", provider.base_url));
        }
        lines.push(super::fit(&head, width));
        if let Some(error) = &provider.error {
            let text = format!("  did not answer: {error}");
            lines.push(Line::new().with(Role::Warning, truncate(&text, width)));
        }
        lines.extend(
            models
                .iter()
                .filter(|m| m.provider == provider.key)
                .map(row),
        );
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: &str, provider: Option<&str>, context: Option<u64>) -> ModelInfo {
        ModelInfo {
            id: id.to_owned(),
            provider: provider.map(str::to_owned),
            name: None,
            context,
        }
    }

    fn text(lines: &[Line]) -> Vec<String> {
        lines.iter().map(Line::plain).collect()
    }

    #[test]
    fn providers_are_groups_with_the_model_in_use_marked_and_a_silent_one_said() {
        let listed = [
            info("gpu/coder", Some("gpu"), Some(65536)),
            info("small/qwen", Some("small"), None),
        ];
        let providers = [
            ProviderInfo {
                key: Some("gpu".into()),
                label: "GPU box".into(),
                base_url: "http://gpu1:8000/v1".into(),
                error: None,
            },
            ProviderInfo {
                key: Some("small".into()),
                label: "small".into(),
                base_url: "http://cpu:8080/v1".into(),
                error: Some("could not connect".into()),
            },
        ];
        let shown = text(&models(&listed, &providers, "gpu/coder", 60));
        assert_eq!(
            shown,
            [
                "  MODEL       CONTEXT",
                "GPU box  http://gpu1:8000/v1",
                "* gpu/coder     65.5k",
                "small  http://cpu:8080/v1",
                "  did not answer: could not connect",
                "  small/qwen        -",
            ]
        );
        // At 40 columns nothing is wider than the screen.
        for line in models(&listed, &providers, "gpu/coder", 40) {
            assert!(line.plain().width() <= 40, "{}", line.plain());
        }
    }
}
