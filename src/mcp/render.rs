//! A `tools/call` result as text for the model: text as it is, images,
//! audio and resources described (never dumped), the whole cut past the
//! size limit with a marker that says so.

use serde_json::Value;

use super::wire::{CallResult, Content};

fn format_size(bytes: usize) -> String {
    crate::protocol::format_size(u64::try_from(bytes).unwrap_or(u64::MAX))
}

/// The result's text, and whether the tool reported an error.
pub fn result_text(result: Value, limit: usize) -> (String, bool) {
    let result: CallResult = serde_json::from_value(result).unwrap_or_default();
    let mut parts: Vec<String> = result.content.iter().map(describe).collect();
    if parts.is_empty()
        && let Some(structured) = result.structured_content
    {
        parts.push(structured.to_string());
    }
    if parts.is_empty() {
        parts.push("(the tool returned nothing)".to_owned());
    }
    (cut(&parts.join("\n"), limit), result.is_error)
}

/// One content item as text.
fn describe(item: &Content) -> String {
    let data_size = |data: &str| format_size(data.len() / 4 * 3);
    match item.kind.as_str() {
        "text" => item.text.clone(),
        "image" | "audio" => format!(
            "[{}: {}, {}, not shown]",
            item.kind,
            or_unknown(&item.mime_type),
            data_size(&item.data)
        ),
        "resource" => {
            let resource = &item.resource;
            let size = match (&resource.text, &resource.blob) {
                (Some(text), _) => format!("{} of text", format_size(text.len())),
                (_, Some(blob)) => format!("{} of data", data_size(blob)),
                _ => "empty".to_owned(),
            };
            format!(
                "[resource {}: {}, {size}, not shown]",
                or_unknown(&resource.uri),
                or_unknown(&resource.mime_type)
            )
        }
        "resource_link" => format!(
            "[resource link {}: {}]",
            or_unknown(&item.uri),
            or_unknown(&item.name)
        ),
        other => format!("[{} content, not shown]", or_unknown(other)),
    }
}

fn or_unknown(text: &str) -> &str {
    if text.is_empty() { "unknown" } else { text }
}

/// `text` cut to `limit` bytes (at a character boundary) with a marker.
pub fn cut(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… cut by offcode: the result was {}, only the first {} are shown (mcp_limits.result_bytes)]",
        &text[..end],
        format_size(text.len()),
        format_size(end)
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn images_and_resources_are_described_not_dumped() {
        let data = "QUJD".repeat(1_000);
        let result = json!({"content": [
            {"type": "image", "data": data, "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///n.txt", "mimeType": "text/plain", "text": "secret words"}},
            {"type": "text", "text": "two attachments"}
        ]});
        let (text, failed) = result_text(result, 10_000);
        assert!(!failed);
        assert_eq!(
            text,
            "[image: image/png, 2.9 KB, not shown]\n[resource file:///n.txt: text/plain, 12 B of text, not shown]\ntwo attachments"
        );
    }

    #[test]
    fn a_long_result_is_cut_with_a_marker_and_an_error_is_flagged() {
        let (text, failed) = result_text(
            json!({"content": [{"type": "text", "text": "é".repeat(100)}], "isError": true}),
            51,
        );
        assert!(failed);
        assert!(text.starts_with(&"é".repeat(25)), "{text}");
        assert!(
            text.ends_with("[… cut by offcode: the result was 200 B, only the first 50 B are shown (mcp_limits.result_bytes)]"),
            "{text}"
        );
        let (text, _) = result_text(json!({"structuredContent": {"n": 1}}), 100);
        assert_eq!(text, "{\"n\":1}");
    }
}
