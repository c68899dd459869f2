//! Rebuilds AgentMessages from stored rows. Rows written by this engine carry an
//! envelope and rebuild byte-exact; rows written by the reference plugin are rebuilt
//! the way its assembler does (raw block when kept, else from the columns).

use serde_json::{json, Map, Value};

use super::ingest::{
    CONTENT_BLOCKS, CONTENT_STRING, CONTENT_TEXT_BLOCK, CONTENT_VERBATIM, NO_CONTENT_BLOCK,
};
use crate::timestamp;

/// A stored `messages` row with its parts, as read for rebuilding.
#[derive(Debug, Clone)]
pub struct StoredMessage {
    /// messages.message_id
    pub message_id: i64,
    /// DB role.
    pub role: String,
    /// Plain-text content column.
    pub content: String,
    /// Our envelope, when this engine wrote the row.
    pub envelope: Option<String>,
    /// `messages.created_at` (SQLite UTC text), when read; rebuilds the `timestamp`
    /// of rows written without an envelope.
    pub created_at: Option<String>,
    /// Parts in ordinal order.
    pub parts: Vec<StoredPart>,
}

/// A stored `message_parts` row.
#[derive(Debug, Clone, Default)]
pub struct StoredPart {
    /// Reference part type.
    pub part_type: String,
    /// text_content column.
    pub text_content: Option<String>,
    /// tool_call_id column.
    pub tool_call_id: Option<String>,
    /// tool_name column.
    pub tool_name: Option<String>,
    /// tool_input column.
    pub tool_input: Option<String>,
    /// tool_output column.
    pub tool_output: Option<String>,
    /// metadata column.
    pub metadata: Option<String>,
}

/// The columns of a `message_parts` row that a message's readable text is made of
/// (`compaction::source::MessageText`), borrowed from a [`StoredPart`] or straight
/// from the row being read.
#[derive(Debug, Clone, Copy, Default)]
pub struct PartText<'a> {
    /// Reference part type.
    pub part_type: &'a str,
    /// text_content column.
    pub text_content: Option<&'a str>,
    /// tool_name column.
    pub tool_name: Option<&'a str>,
    /// tool_input column.
    pub tool_input: Option<&'a str>,
    /// tool_output column.
    pub tool_output: Option<&'a str>,
}

impl StoredPart {
    /// The columns its text is made of, borrowed.
    pub fn text_view(&self) -> PartText<'_> {
        PartText {
            part_type: &self.part_type,
            text_content: self.text_content.as_deref(),
            tool_name: self.tool_name.as_deref(),
            tool_input: self.tool_input.as_deref(),
            tool_output: self.tool_output.as_deref(),
        }
    }

    /// True for a part the reference's reader leaves out of the content (it carries
    /// metadata only; see [`NO_CONTENT_BLOCK`]).
    fn holds_no_block(&self) -> bool {
        self.meta().get(NO_CONTENT_BLOCK) == Some(&Value::Bool(true))
    }

    fn meta(&self) -> Map<String, Value> {
        self.metadata
            .as_deref()
            .and_then(|m| serde_json::from_str::<Value>(m).ok())
            .and_then(|v| match v {
                Value::Object(o) => Some(o),
                _ => None,
            })
            .unwrap_or_default()
    }
}

/// Rebuilds one message.
pub fn rebuild(m: &StoredMessage) -> Value {
    if let Some(env) = m.envelope.as_deref().and_then(parse_object) {
        return from_envelope(env, m);
    }
    legacy(m)
}

fn parse_object(s: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(s).ok()? {
        Value::Object(o) => Some(o),
        _ => None,
    }
}

fn from_envelope(env: Map<String, Value>, m: &StoredMessage) -> Value {
    let mut out = Map::with_capacity(env.len());
    for (k, v) in env {
        if k == "content" {
            let content = match v.as_i64() {
                Some(CONTENT_STRING) => Value::String(
                    m.parts
                        .first()
                        .and_then(|p| p.text_content.clone())
                        .unwrap_or_else(|| m.content.clone()),
                ),
                Some(CONTENT_BLOCKS) => Value::Array(m.parts.iter().map(block_from_part).collect()),
                Some(CONTENT_TEXT_BLOCK) => json!([{"type": "text", "text": m.content}]),
                Some(CONTENT_VERBATIM) => m
                    .parts
                    .first()
                    .and_then(|p| p.text_content.as_deref())
                    .and_then(|t| serde_json::from_str(t).ok())
                    .unwrap_or(Value::Null),
                _ => v,
            };
            out.insert(k, content);
        } else {
            out.insert(k, v);
        }
    }
    Value::Object(out)
}

/// One content block from a part: the kept raw block, else the canonical shape.
pub fn block_from_part(p: &StoredPart) -> Value {
    let meta = p.meta();
    if let Some(raw) = meta.get("raw") {
        return raw.clone();
    }
    let raw_type = meta.get("rawType").and_then(Value::as_str).unwrap_or("");
    let text = p.text_content.clone().unwrap_or_default();
    match (p.part_type.as_str(), raw_type) {
        ("reasoning", "thinking") | ("reasoning", "") => {
            json!({"type": "thinking", "thinking": text})
        }
        ("reasoning", other) => json!({"type": other, "text": text}),
        ("tool", _) if meta.get("originalRole").and_then(Value::as_str) == Some("toolResult") => {
            let output = p.tool_output.clone().unwrap_or(text);
            json!({"type": "text", "text": output})
        }
        ("tool", _) => {
            let args = p
                .tool_input
                .as_deref()
                .map(|s| serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_owned())))
                .unwrap_or_else(|| json!({}));
            let ty = if raw_type.is_empty() {
                "toolCall"
            } else {
                raw_type
            };
            json!({"type": ty, "id": p.tool_call_id.clone().unwrap_or_default(),
                   "name": p.tool_name.clone().unwrap_or_default(), "arguments": args})
        }
        _ => json!({"type": "text", "text": text}),
    }
}

/// Reference-style rebuild for rows without an envelope: role and content as the
/// reference's assembler rebuilds them (parts flagged [`NO_CONTENT_BLOCK`] left out
/// of the content, which then falls back to the content column), plus every field its columns and part
/// metadata carry — `timestamp` (ms, from `created_at`) and, on a tool result,
/// `toolCallId`, `toolName` and `isError`.
fn legacy(m: &StoredMessage) -> Value {
    let first_meta = m.parts.first().map(StoredPart::meta).unwrap_or_default();
    let original = first_meta.get("originalRole").and_then(Value::as_str);
    let role = match (original, m.role.as_str()) {
        (Some("toolResult"), _) | (None, "tool") => "toolResult",
        (Some("assistant"), _) | (None, "assistant") => "assistant",
        _ => "user",
    };
    let blocks: Vec<Value> = m
        .parts
        .iter()
        .filter(|p| !p.holds_no_block())
        .map(block_from_part)
        .collect();
    let content = match (role, blocks.as_slice()) {
        ("user", []) => Value::String(m.content.clone()),
        ("user", [only]) if only.get("type") == Some(&json!("text")) => {
            only.get("text").cloned().unwrap_or_default()
        }
        (_, []) => json!([{"type": "text", "text": m.content}]),
        _ => Value::Array(blocks),
    };
    let mut out = Map::new();
    out.insert("role".into(), json!(role));
    out.insert("content".into(), content);
    if role == "toolResult" {
        let call_id = m
            .parts
            .iter()
            .find_map(|p| p.tool_call_id.clone())
            .or_else(|| {
                first_meta
                    .get("toolCallId")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
        if let Some(id) = call_id {
            out.insert("toolCallId".into(), json!(id));
        }
        let name = m
            .parts
            .iter()
            .find_map(|p| p.tool_name.clone())
            .or_else(|| {
                first_meta
                    .get("toolName")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
        if let Some(name) = name {
            out.insert("toolName".into(), json!(name));
        }
        let is_error = m
            .parts
            .iter()
            .find_map(|p| p.meta().get("isError").and_then(Value::as_bool));
        if let Some(flag) = is_error {
            out.insert("isError".into(), json!(flag));
        }
    }
    let ms = m
        .created_at
        .as_deref()
        .and_then(timestamp::parse)
        .map(|t| t.timestamp_millis());
    if let Some(ms) = ms {
        out.insert("timestamp".into(), json!(ms));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ingest::map_message;

    fn round_trip(v: Value) -> Value {
        let n = map_message(&v, None).unwrap();
        let stored = StoredMessage {
            message_id: 1,
            role: n.role.to_string(),
            content: n.content.clone(),
            envelope: Some(n.envelope.clone()),
            created_at: None,
            parts: n
                .parts
                .iter()
                .map(|p| StoredPart {
                    part_type: p.part_type.to_string(),
                    text_content: p.text_content.clone(),
                    tool_call_id: p.tool_call_id.clone(),
                    tool_name: p.tool_name.clone(),
                    tool_input: p.tool_input.clone(),
                    tool_output: p.tool_output.clone(),
                    metadata: Some(p.metadata.clone()),
                })
                .collect(),
        };
        rebuild(&stored)
    }

    #[test]
    fn messages_round_trip_exactly() {
        let cases = [
            json!({"role":"user","content":"hello","timestamp":5}),
            json!({"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"x"},
                {"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a","n":1.5}}],"stopReason":"toolUse"}),
            json!({"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"out"}],"isError":false}),
            json!({"role":"user","content":[{"type":"text","text":"see"},{"type":"image","data":"AAAA","mimeType":"image/png"}]}),
            json!({"timestamp":1,"role":"assistant","content":[{"text":"odd order","type":"text"},{"type":"toolCall","id":"c","name":"n","arguments":"{\"raw\":1}"}]}),
            json!({"role":"user","content":[]}),
            json!({"role":"assistant","command":"ls","output":"a\nb"}),
            json!({"role":"bashExecution","command":"ls","output":"a\nb","exitCode":0,"cancelled":false,"truncated":false,"timestamp":9}),
            json!({"role":"custom","customType":"note","content":[{"type":"text","text":"n"}],"display":true,"details":{"k":1}}),
            json!({"role":"branchSummary","summary":"s","fromId":"e1","timestamp":3}),
            json!({"role":"compactionSummary","summary":"c","tokensBefore":10,"timestamp":4}),
            json!({"role":"myPlugin","payload":{"x":[1,2]}}),
            json!({"role":"user","content":42}),
            json!({"role":"user","content":{"text":"x"}}),
            json!({"role":"assistant","content":["bare",{"type":"text","text":"t"},null]}),
            // One text block: the text is stored once (content column).
            json!({"role":"user","content":[{"type":"text","text":"block"}],"timestamp":6}),
            json!({"role":"assistant","content":[{"type":"text","text":"only text"}],"stopReason":"stop"}),
            json!({"role":"assistant","content":[{"type":"text","text":""}]}),
            json!({"role":"toolResult","toolCallId":"c2","toolName":"exec","content":[{"type":"text","text":""}],"isError":true}),
            json!({"role":"toolResult","content":[{"type":"text","text":"no id"}]}),
            json!({"role":"tool","tool_call_id":"c3","content":[{"type":"text","text":"snake"}]}),
            json!({"role":"toolResult","toolCallId":"c4","content":[{"text":"key order","type":"text"}]}),
            json!({"role":"toolResult","toolCallId":"c5","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}),
            json!({"role":"toolResult","toolCallId":"c6","content":[{"type":"text","text":"x","extra":1}]}),
            json!({"role":"user","toolCallId":"c7","content":[{"type":"text","text":"odd user"}]}),
            json!({"role":"system","content":[{"type":"text","text":"sys"}]}),
            json!({"role":"custom","customType":"n","content":[{"type":"text","text":"c"}]}),
        ];
        for c in cases {
            let back = round_trip(c.clone());
            assert_eq!(back.to_string(), c.to_string());
        }
    }

    #[test]
    fn one_text_block_is_stored_once_and_reference_style_readers_rebuild_it() {
        let result = json!({"role":"toolResult","toolCallId":"call_1","toolName":"read",
            "content":[{"type":"text","text":"file body"}],"isError":false});
        let n = map_message(&result, None).unwrap();
        assert_eq!(n.content, "file body");
        let [part] = n.parts.as_slice() else {
            panic!("one part: {:?}", n.parts)
        };
        assert_eq!(
            part.text_content, None,
            "the text lives in messages.content only"
        );
        assert_eq!(part.tool_call_id.as_deref(), Some("call_1"));
        assert_eq!(part.tool_name.as_deref(), Some("read"));
        assert!(part.metadata.contains(r#""topLevelReasoningOnly":true"#));
        // Without the envelope (the reference's view of the rows): same content,
        // role, call id, name and error flag.
        let stored = StoredMessage {
            message_id: 1,
            role: n.role.into(),
            content: n.content.clone(),
            envelope: None,
            created_at: None,
            parts: vec![StoredPart {
                part_type: part.part_type.into(),
                text_content: None,
                tool_call_id: part.tool_call_id.clone(),
                tool_name: part.tool_name.clone(),
                metadata: Some(part.metadata.clone()),
                ..StoredPart::default()
            }],
        };
        assert_eq!(rebuild(&stored), result);
        for (msg, parts) in [
            (
                json!({"role":"user","content":[{"type":"text","text":"hi"}]}),
                0,
            ),
            (
                json!({"role":"assistant","content":[{"type":"text","text":"ok"}]}),
                0,
            ),
            (
                json!({"role":"assistant","content":[{"type":"text","text":""}]}),
                1,
            ),
            (
                json!({"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}),
                2,
            ),
        ] {
            assert_eq!(map_message(&msg, None).unwrap().parts.len(), parts, "{msg}");
        }
    }

    #[test]
    fn reference_rows_rebuild_timestamp_and_tool_result_fields() {
        let m = StoredMessage {
            message_id: 7,
            role: "tool".into(),
            content: "ENOENT".into(),
            envelope: None,
            created_at: Some("2026-02-17 07:37:00".into()),
            parts: vec![StoredPart {
                part_type: "tool".into(),
                tool_call_id: Some("call_9".into()),
                tool_name: Some("read".into()),
                tool_output: Some("ENOENT".into()),
                metadata: Some(
                    r#"{"originalRole":"toolResult","toolCallId":"call_9","toolName":"read","isError":true}"#.into(),
                ),
                ..StoredPart::default()
            }],
        };
        assert_eq!(
            rebuild(&m),
            json!({"role":"toolResult","content":[{"type":"text","text":"ENOENT"}],
                   "toolCallId":"call_9","toolName":"read","isError":true,"timestamp":1771313820000i64})
        );
    }

    #[test]
    fn a_plain_user_string_has_no_part_and_both_readers_rebuild_it() {
        let v = json!({"role":"user","content":"just text"});
        let n = map_message(&v, None).unwrap();
        assert!(n.parts.is_empty());
        let mut stored = StoredMessage {
            message_id: 1,
            role: n.role.to_string(),
            content: n.content.clone(),
            envelope: Some(n.envelope.clone()),
            created_at: None,
            parts: Vec::new(),
        };
        assert_eq!(rebuild(&stored), v);
        // The reference's readers have no envelope: content column, user role.
        stored.envelope = None;
        assert_eq!(rebuild(&stored), v);
        // A user string that carries tool fields keeps its part.
        let tool = json!({"role":"user","content":"x","toolCallId":"c1"});
        assert_eq!(map_message(&tool, None).unwrap().parts.len(), 1);
    }
}
