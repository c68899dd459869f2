//! Source text of a pass: what the summarizer reads. A leaf reads its messages as
//! blocks `[<time> | <role>]\n<text>`; a condensed pass reads its children as
//! `[<earliest> – <latest>]\n<content>`, in time order. Blocks are joined by a
//! blank line. Times are formatted in the configured zone.

use chrono::{DateTime, Utc};

use crate::message::rebuild::StoredMessage;
use crate::timefmt::Zone;
use crate::timestamp;

/// One message of a leaf chunk, as read from the store.
#[derive(Debug, Clone)]
pub struct LeafMessage {
    /// The message.
    pub message_id: i64,
    /// DB role.
    pub role: String,
    /// When it was written.
    pub created_at: Option<DateTime<Utc>>,
    /// What the summarizer should read (text, tool calls and results; no reasoning).
    pub text: String,
}

/// One child of a condensed chunk, as read from the store.
#[derive(Debug, Clone)]
pub struct Child {
    /// The summary.
    pub summary_id: String,
    /// Earliest source time (falls back to the row's creation time).
    pub earliest: Option<DateTime<Utc>>,
    /// Latest source time (falls back to the row's creation time).
    pub latest: Option<DateTime<Utc>>,
    /// The summary text.
    pub content: String,
}

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

/// Parses a stored time, if any.
pub fn parse_time(v: Option<&str>) -> Option<DateTime<Utc>> {
    v.and_then(timestamp::parse)
}

fn stamp(zone: &Zone, t: Option<DateTime<Utc>>) -> String {
    t.map(|t| zone.format_timestamp(t))
        .unwrap_or_else(|| "unknown time".into())
}

/// The leaf source text; messages without text are left out.
pub fn leaf_text(zone: &Zone, messages: &[LeafMessage]) -> String {
    messages
        .iter()
        .filter(|m| !m.text.trim().is_empty())
        .map(|m| {
            format!(
                "[{} | {}]\n{}",
                stamp(zone, m.created_at),
                m.role,
                m.text.trim()
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The condensed source text, children in time order (stable for equal times).
pub fn condensed_text(zone: &Zone, children: &[Child]) -> String {
    let mut ordered: Vec<&Child> = children
        .iter()
        .filter(|c| !c.content.trim().is_empty())
        .collect();
    ordered.sort_by_key(|c| (c.earliest, c.latest));
    ordered
        .iter()
        .map(|c| {
            format!(
                "[{} – {}]\n{}",
                stamp(zone, c.earliest),
                stamp(zone, c.latest),
                c.content.trim()
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The formatted span of a set of times (`None` when no time is known).
pub fn span(zone: &Zone, times: impl IntoIterator<Item = Option<DateTime<Utc>>>) -> Option<String> {
    let known: Vec<DateTime<Utc>> = times.into_iter().flatten().collect();
    let (min, max) = (known.iter().min()?, known.iter().max()?);
    Some(zone.format_range(*min, *max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::rebuild::StoredPart;

    fn t(s: &str) -> Option<DateTime<Utc>> {
        timestamp::parse(s)
    }

    #[test]
    fn leaf_blocks_carry_time_and_role_and_skip_empty_messages() {
        let z = Zone::parse("America/Los_Angeles").unwrap();
        let ms = vec![
            LeafMessage {
                message_id: 1,
                role: "user".into(),
                created_at: t("2026-02-17T23:37:00Z"),
                text: "deploy it".into(),
            },
            LeafMessage {
                message_id: 2,
                role: "assistant".into(),
                created_at: t("2026-02-17T23:38:00Z"),
                text: "  ".into(),
            },
            LeafMessage {
                message_id: 3,
                role: "tool".into(),
                created_at: t("2026-02-17T23:39:00Z"),
                text: "ok".into(),
            },
        ];
        assert_eq!(
            leaf_text(&z, &ms),
            "[2026-02-17 15:37 PST | user]\ndeploy it\n\n[2026-02-17 15:39 PST | tool]\nok"
        );
        assert_eq!(
            span(&z, ms.iter().map(|m| m.created_at)).as_deref(),
            Some("2026-02-17 15:37–15:39 PST")
        );
    }

    #[test]
    fn condensed_children_are_in_time_order_with_range_headers() {
        let z = Zone::utc();
        let c = |id: &str, e: &str, l: &str| Child {
            summary_id: id.into(),
            earliest: t(e),
            latest: t(l),
            content: format!("about {id}"),
        };
        let text = condensed_text(
            &z,
            &[
                c("b", "2026-02-18T10:00:00Z", "2026-02-18T11:00:00Z"),
                c("a", "2026-02-17T10:00:00Z", "2026-02-17T11:00:00Z"),
            ],
        );
        assert_eq!(
            text,
            "[2026-02-17 10:00 UTC – 2026-02-17 11:00 UTC]\nabout a\n\n[2026-02-18 10:00 UTC – 2026-02-18 11:00 UTC]\nabout b"
        );
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
