//! The one builder of summarizer input. The block layout (`[time] [role]`
//! headers for messages, `[earliest – latest]` for child summaries, blank-line
//! separated) comes from [`crate::prompts::source`]; this module supplies the text
//! of a stored message (including its tool calls), the children's time order, and
//! [`input_for`], which compaction, rewrite and doctor all call, so a summary is
//! always re-made from exactly the text compaction gave the summarizer.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::error::Result;
use crate::message::rebuild::{PartText, StoredMessage};
use crate::prompts::source::{
    condensed_source_text, leaf_source_text, messages_time_range, summaries_time_range,
};
pub use crate::prompts::source::{SourceMessage, SourceSummary};
use crate::store::dag::Sources;
use crate::store::derived::MsgRow;
use crate::store::sources;
use crate::summarize::SummarizeInput;
use crate::timeformat::Zone;

/// How the source blocks are rendered.
#[derive(Debug, Clone, Copy)]
pub struct Render<'a> {
    /// Zone of the headers' times.
    pub zone: &'a Zone,
    /// Whether headers carry times (`false` keeps roles only); the time range
    /// prompt variable is filled either way.
    pub timestamps: bool,
    /// Tags whose blocks are left out of user messages (`stripInjectedContextTags`).
    pub strip_tags: &'a [String],
}

/// The reference's `stripInjectedContextTags`: blocks memory plugins inject into
/// user messages.
pub const DEFAULT_INJECTED_TAGS: [&str; 4] = [
    "active_memory_plugin",
    "relevant-memories",
    "relevant_memories",
    "hindsight_memories",
];

/// Compiled matchers of tag lists, by list (an engine has one list; the map holds
/// as many entries as distinct configurations in the process).
static TAG_MATCHERS: std::sync::OnceLock<
    std::sync::Mutex<HashMap<Vec<String>, std::sync::Arc<regex::Regex>>>,
> = std::sync::OnceLock::new();

fn tag_matcher(tags: &[String]) -> Option<std::sync::Arc<regex::Regex>> {
    let tags: Vec<String> = tags
        .iter()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    if tags.is_empty() {
        return None;
    }
    let cache = TAG_MATCHERS.get_or_init(Default::default);
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = map.get(&tags) {
        return Some(r.clone());
    }
    let alternatives: Vec<String> = tags
        .iter()
        .map(|t| {
            let t = regex::escape(t);
            format!(r"<{t}(?:\s[^>]*)?>.*?</{t}\s*>")
        })
        .collect();
    let r = regex::Regex::new(&format!("(?is){}", alternatives.join("|"))).ok()?;
    let r = std::sync::Arc::new(r);
    map.insert(tags, r.clone());
    Some(r)
}

/// `text` without the blocks of `tags` (`<tag …>…</tag>`, case-insensitive), and
/// without the blank space they leave at its ends; unchanged when there is none.
pub fn strip_injected(text: String, tags: &[String]) -> String {
    let Some(matcher) = tag_matcher(tags) else {
        return text;
    };
    if !matcher.is_match(&text) {
        return text;
    }
    matcher.replace_all(&text, "").trim().to_owned()
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
    // Each source once, in id order, with its text; `None` for a message the host
    // keeps out of the model's context, which stays out of its summary too (the
    // leaf still covers it).
    let mut read: Vec<(MsgRow, Option<SourceMessage>)> = Vec::with_capacity(ids.len());
    sources::messages(conn, ids, |source, parts| {
        let shown = if crate::message::envelope_excluded_from_context(source.envelope) {
            None
        } else {
            let mut text = MessageText::with_capacity(source.content.len());
            while let Some(part) = parts.next_part()? {
                text.push(part);
            }
            let mut text = text.finish(source.content);
            if source.role == "user" && !render.strip_tags.is_empty() {
                text = strip_injected(text, render.strip_tags);
            }
            Some(SourceMessage::new(
                &source.row.created_at,
                source.role,
                text,
            ))
        };
        read.push((source.row, shown));
        Ok(())
    })?;
    let (rows, msgs): (Vec<MsgRow>, Vec<Option<SourceMessage>>) =
        in_order_given(read, ids).into_iter().unzip();
    let msgs: Vec<SourceMessage> = msgs.into_iter().flatten().collect();
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
    Ok((input, rows))
}

/// Sources read in id order, put in the order of `ids` (unknown ids skipped, a
/// repeated one repeated): a leaf chunk's ids ascend and need nothing done.
fn in_order_given<T: Clone>(read: Vec<(MsgRow, T)>, ids: &[i64]) -> Vec<(MsgRow, T)> {
    if ids.windows(2).all(|w| w[0] < w[1]) {
        return read;
    }
    let at: HashMap<i64, usize> = read
        .iter()
        .enumerate()
        .map(|(i, (r, _))| (r.id, i))
        .collect();
    ids.iter()
        .filter_map(|id| at.get(id).map(|&i| read[i].clone()))
        .collect()
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

/// The readable text of a stored message (see [`MessageText`]).
pub fn message_text(m: &StoredMessage) -> String {
    let mut text = MessageText::default();
    for p in &m.parts {
        text.push(p.text_view());
    }
    text.finish(&m.content)
}

/// The readable text of a stored message, built part by part in block order: text
/// blocks, tool calls with their arguments, tool results and media markers, one
/// per line. Reasoning is left out (it is not part of what the conversation said).
/// With none of those, the content column. The one rule, for parts held in a
/// [`StoredMessage`] ([`message_text`]) or borrowed from the rows being read.
#[derive(Debug, Default)]
pub struct MessageText {
    out: String,
}

impl MessageText {
    /// A builder with room for about `bytes` of text.
    pub fn with_capacity(bytes: usize) -> MessageText {
        MessageText {
            out: String::with_capacity(bytes),
        }
    }

    /// Adds a part's text, if it has any.
    pub fn push(&mut self, p: PartText<'_>) {
        let text = p.text_content.unwrap_or("").trim();
        match p.part_type {
            "text" if !text.is_empty() => self.line(&[text]),
            "tool" => self.tool(p),
            "file" => self.line(&["[Media attachment]"]),
            _ => {}
        }
    }

    fn tool(&mut self, p: PartText<'_>) {
        let name = p.tool_name.unwrap_or("tool");
        match (p.tool_input, p.tool_output, p.text_content) {
            (Some(input), None, _) => self.line(&["[tool call ", name, "] ", input]),
            (_, Some(output), _) => self.line(&["[tool result ", name, "] ", output]),
            (_, _, Some(t)) if !t.trim().is_empty() => self.line(&[t.trim()]),
            _ => self.line(&["[tool ", name, "]"]),
        }
    }

    /// One line made of `pieces`; a blank one adds nothing.
    fn line(&mut self, pieces: &[&str]) {
        if pieces.iter().all(|p| p.trim().is_empty()) {
            return;
        }
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        for p in pieces {
            self.out.push_str(p);
        }
    }

    /// The text: the lines added, else the trimmed `content`.
    pub fn finish(mut self, content: &str) -> String {
        if self.out.is_empty() {
            self.out.push_str(content.trim());
        }
        self.out
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
    #[test]
    fn injected_tag_blocks_leave_user_text_for_the_summarizer() {
        let tags: Vec<String> = super::DEFAULT_INJECTED_TAGS
            .iter()
            .map(|t| (*t).to_owned())
            .collect();
        let text = "<relevant-memories>\nuser likes tea\n</relevant-memories>\nWhat now? <Hindsight_Memories kind=\"x\">old</Hindsight_Memories> ok";
        assert_eq!(super::strip_injected(text.into(), &tags), "What now?  ok");
        // No tag, an unclosed tag, another tag, or no list: unchanged.
        for same in [
            "plain text",
            "<relevant-memories> never closed",
            "<memories>kept</memories>",
            "한국어 <relevant_memoriesx>kept</relevant_memoriesx>",
        ] {
            assert_eq!(super::strip_injected(same.into(), &tags), same);
        }
        assert_eq!(super::strip_injected(text.into(), &[]), text);
    }

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

    /// The rule as first written: each part's piece, blank ones dropped, joined by
    /// new lines; the trimmed content when nothing is left.
    fn model(parts: &[StoredPart], content: &str) -> String {
        let mut out: Vec<String> = Vec::new();
        for p in parts {
            let text = p.text_content.as_deref().unwrap_or("").trim();
            let name = p.tool_name.as_deref().unwrap_or("tool");
            match p.part_type.as_str() {
                "text" if !text.is_empty() => out.push(text.to_owned()),
                "tool" => out.push(match (&p.tool_input, &p.tool_output, &p.text_content) {
                    (Some(i), None, _) => format!("[tool call {name}] {i}"),
                    (_, Some(o), _) => format!("[tool result {name}] {o}"),
                    (_, _, Some(t)) if !t.trim().is_empty() => t.trim().to_owned(),
                    _ => format!("[tool {name}]"),
                }),
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
            content.trim().to_owned()
        } else {
            joined
        }
    }

    fn text_strategy() -> impl proptest::strategy::Strategy<Value = Option<String>> {
        use proptest::prelude::*;
        prop_oneof![
            Just(None),
            Just(Some(String::new())),
            Just(Some(" \u{a0}\u{3000}\n".to_owned())),
            crate::text::strategies::text(12).prop_map(Some),
        ]
    }

    proptest::proptest! {
        #[test]
        fn message_text_is_the_rule_on_any_parts(
            parts in proptest::collection::vec(
                (
                    proptest::sample::select(vec!["text", "tool", "file", "reasoning", "patch"]),
                    text_strategy(),
                    text_strategy(),
                    text_strategy(),
                    text_strategy(),
                ),
                0..6,
            ),
            content in text_strategy(),
        ) {
            let parts: Vec<StoredPart> = parts
                .into_iter()
                .map(|(ty, text, name, input, output)| StoredPart {
                    part_type: ty.into(),
                    text_content: text,
                    tool_name: name,
                    tool_input: input,
                    tool_output: output,
                    ..StoredPart::default()
                })
                .collect();
            let content = content.unwrap_or_default();
            let m = StoredMessage {
                message_id: 1,
                role: "assistant".into(),
                content: content.clone(),
                envelope: None,
                created_at: None,
                parts,
            };
            proptest::prop_assert_eq!(message_text(&m), model(&m.parts, &content));
        }
    }

    #[test]
    fn leaf_sources_come_in_the_order_given_and_hidden_ones_are_counted() {
        use crate::store::conversations::SessionRef;
        use serde_json::json;
        let mut conn = Connection::open_in_memory().unwrap();
        crate::store::migrate::migrate(&mut conn).unwrap();
        let msgs: Vec<_> = (0..6)
            .map(|i| {
                let m = json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
                    "content": format!("message {i}"), "timestamp": 1771313820000i64 + i * 60_000});
                crate::message::ingest::map_message(&m, None).unwrap()
            })
            .collect();
        let s = SessionRef {
            session_id: "s".into(),
            session_key: None,
        };
        let out = crate::store::messages::insert_batch(&mut conn, &s, msgs).unwrap();
        let id: Vec<i64> = out.messages.iter().map(|m| m.message_id.unwrap()).collect();
        let zone = Zone::utc();
        let render = Render {
            zone: &zone,
            timestamps: false,
            strip_tags: &[],
        };
        let read = |ids: Vec<i64>| {
            input_with_rows(&conn, &Sources::Messages(ids), render, &HashMap::new()).unwrap()
        };
        let (input, rows) = read(vec![id[3], id[1], id[3], 999, id[0]]);
        let got: Vec<i64> = rows.iter().map(|r| r.id).collect();
        assert_eq!(got, [id[3], id[1], id[3], id[0]]);
        assert_eq!(
            input.source_text,
            "[assistant]\nmessage 3\n\n[assistant]\nmessage 1\n\n[assistant]\nmessage 3\n\n[user]\nmessage 0"
        );
        assert_eq!((input.child_count, input.hidden_count), (4, 0));
        // A message kept out of the model's context stays out of the text, counted.
        conn.execute(
            "UPDATE messages SET lcm_envelope = ?1 WHERE message_id = ?2",
            rusqlite::params![r#"{"v":1,"excludeFromContext":true}"#, id[2]],
        )
        .unwrap();
        let (input, rows) = read(id[1..4].to_vec());
        assert_eq!(rows.len(), 3);
        assert_eq!(
            input.source_text,
            "[assistant]\nmessage 1\n\n[assistant]\nmessage 3"
        );
        assert_eq!((input.child_count, input.hidden_count), (2, 1));
    }
}
