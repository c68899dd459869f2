//! The one builder of summarizer input. The block layout (`[time] [role]`
//! headers for messages, `[earliest – latest]` for child summaries, blank-line
//! separated) comes from [`crate::prompts::source`]; this module supplies the text
//! of a stored message (including its tool calls), the children's time order, and
//! [`input_for`], which compaction, rewrite and doctor all call, so a summary is
//! always re-made from exactly the text compaction gave the summarizer.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::error::Result;
use crate::message::rebuild::StoredMessage;
use crate::prompts::source::{
    condensed_source_text, leaf_source_text, messages_time_range, summaries_time_range,
};
pub use crate::prompts::source::{SourceMessage, SourceSummary};
use crate::store::dag::Sources;
use crate::store::derived::MsgRow;
use crate::store::sources;
use crate::summarize::SummarizeInput;
use crate::timefmt::Zone;

/// How the source blocks are rendered.
#[derive(Debug, Clone, Copy)]
pub struct Render<'a> {
    /// Zone of the headers' times.
    pub zone: &'a Zone,
    /// Whether headers carry times (`false` keeps roles only); the time range
    /// prompt variable is filled either way.
    pub timestamps: bool,
}

/// The summarizer input for `sources`: `source_text`, `child_count` and
/// `time_range` filled, everything else default. Child summaries are read in time
/// order; `overlay` holds texts that win over the stored ones (by summary id).
pub fn input_for(
    conn: &Connection,
    sources: &Sources,
    render: Render<'_>,
    overlay: &HashMap<String, String>,
) -> Result<SummarizeInput> {
    Ok(input_with_rows(conn, sources, render, overlay)?.0)
}

/// [`input_for`], with the source messages' columns of a leaf (none for a
/// condensed node), as read for the input: a leaf's derived columns are computed
/// from them ([`crate::store::derived::leaf`]) without reading the messages again.
pub fn input_with_rows(
    conn: &Connection,
    sources: &Sources,
    render: Render<'_>,
    overlay: &HashMap<String, String>,
) -> Result<(SummarizeInput, Vec<MsgRow>)> {
    match sources {
        Sources::Messages(ids) => leaf_input(conn, ids, render),
        Sources::Summaries(ids) => Ok((condensed_input(conn, ids, render, overlay)?, Vec::new())),
    }
}

fn leaf_input(
    conn: &Connection,
    ids: &[i64],
    render: Render<'_>,
) -> Result<(SummarizeInput, Vec<MsgRow>)> {
    let rows = sources::messages(conn, ids)?;
    // A message the host keeps out of the model's context stays out of its summary
    // too (the leaf still covers it).
    let msgs: Vec<SourceMessage> = rows
        .iter()
        .filter(|r| !crate::message::envelope_excluded_from_context(r.message.envelope.as_deref()))
        .map(|r| SourceMessage::new(&r.row.created_at, &r.message.role, message_text(&r.message)))
        .collect();
    let time_range = messages_time_range(&msgs, render.zone);
    let shown: Vec<SourceMessage> = if render.timestamps {
        msgs
    } else {
        msgs.into_iter()
            .map(|m| SourceMessage {
                created_at: None,
                ..m
            })
            .collect()
    };
    let input = SummarizeInput {
        source_text: leaf_source_text(&shown, render.zone),
        child_count: shown.len(),
        hidden_count: rows.len() - shown.len(),
        time_range,
        ..SummarizeInput::default()
    };
    Ok((input, rows.into_iter().map(|r| r.row).collect()))
}

fn condensed_input(
    conn: &Connection,
    ids: &[String],
    render: Render<'_>,
    overlay: &HashMap<String, String>,
) -> Result<SummarizeInput> {
    let children: Vec<SourceSummary> = sources::summaries(conn, ids)?
        .into_iter()
        .map(|s| {
            let at = |t: &Option<String>| t.clone().unwrap_or_else(|| s.created_at.clone());
            let text = overlay.get(&s.summary_id).unwrap_or(&s.content);
            SourceSummary::new(&at(&s.earliest_at), &at(&s.latest_at), text)
        })
        .collect();
    let children = in_time_order(children);
    let time_range = summaries_time_range(&children, render.zone);
    let shown: Vec<SourceSummary> = if render.timestamps {
        children
    } else {
        children
            .into_iter()
            .map(|c| SourceSummary {
                earliest_at: None,
                latest_at: None,
                ..c
            })
            .collect()
    };
    Ok(SummarizeInput {
        source_text: condensed_source_text(&shown, render.zone),
        child_count: shown.len(),
        time_range,
        ..SummarizeInput::default()
    })
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
