//! What the summarizer reads of each source. The block layout (`[time] [role]`
//! headers for messages, `[earliest – latest]` for child summaries, blank-line
//! separated) comes from [`crate::prompts::source`]; this module supplies the text
//! of a stored message (including its tool calls) and the children's time order.

use crate::message::rebuild::StoredMessage;
pub use crate::prompts::source::{SourceMessage, SourceSummary};

/// The readable text of a stored message: text blocks, tool calls with their
/// arguments, tool results and media markers, in block order. Reasoning is left out
/// (it is not part of what the conversation said). Falls back to the content column.
pub fn message_text(m: &StoredMessage) -> String {
    let mut out: Vec<String> = Vec::new();
    for p in &m.parts {
        let text = p.text_content.as_deref().unwrap_or("").trim();
        match p.part_type.as_str() {
            "text" if !text.is_empty() => out.push(text.to_owned()),
            "tool" => out.push(tool_text(p)),
            "file" => out.push("[Media attachment]".into()),
            _ => {}
        }
    }
    let joined = out
        .into_iter()
        .filter(|s| !s.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    if joined.trim().is_empty() {
        m.content.trim().to_owned()
    } else {
        joined
    }
}

fn tool_text(p: &crate::message::rebuild::StoredPart) -> String {
    let name = p.tool_name.as_deref().unwrap_or("tool");
    match (&p.tool_input, &p.tool_output, &p.text_content) {
        (Some(input), None, _) => format!("[tool call {name}] {input}"),
        (_, Some(output), _) => format!("[tool result {name}] {output}"),
        (_, _, Some(t)) if !t.trim().is_empty() => t.trim().to_owned(),
        _ => format!("[tool {name}]"),
    }
}

/// Children of a condensed pass in time order (stable for equal times), so the
/// summarizer reads them chronologically.
pub fn in_time_order(mut children: Vec<SourceSummary>) -> Vec<SourceSummary> {
    children.sort_by_key(|c| (c.earliest_at.or(c.latest_at), c.latest_at));
    children
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::rebuild::StoredPart;

    #[test]
    fn children_are_read_in_time_order() {
        let kids = vec![
            SourceSummary::new("2026-02-18T10:00:00Z", "2026-02-18T11:00:00Z", "b"),
            SourceSummary::new("2026-02-17T10:00:00Z", "2026-02-17T11:00:00Z", "a"),
            SourceSummary::new("2026-02-18T10:00:00Z", "2026-02-18T10:30:00Z", "c"),
        ];
        let order: Vec<String> = in_time_order(kids).into_iter().map(|k| k.content).collect();
        assert_eq!(order, ["a", "c", "b"]);
    }

    #[test]
    fn message_text_keeps_tool_calls_and_drops_reasoning() {
        let part =
            |ty: &str, text: Option<&str>, name: Option<&str>, input: Option<&str>| StoredPart {
                part_type: ty.into(),
                text_content: text.map(Into::into),
                tool_name: name.map(Into::into),
                tool_input: input.map(Into::into),
                ..StoredPart::default()
            };
        let m = StoredMessage {
            message_id: 1,
            role: "assistant".into(),
            content: "Running it.".into(),
            envelope: None,
            created_at: None,
            parts: vec![
                part("reasoning", Some("secret plan"), None, None),
                part("text", Some("Running it."), None, None),
                part("tool", None, Some("exec"), Some(r#"{"cmd":"ls"}"#)),
            ],
        };
        assert_eq!(
            message_text(&m),
            "Running it.\n[tool call exec] {\"cmd\":\"ls\"}"
        );
        let bare = StoredMessage {
            parts: vec![],
            content: "plain".into(),
            ..m
        };
        assert_eq!(message_text(&bare), "plain");
    }
}
