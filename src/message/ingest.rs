//! Maps one AgentMessage (as JSON) to the rows the store writes.
//!
//! Layout, compatible with the reference readers:
//! - `messages.content`: the plain text (text blocks joined by `\n`; a bash
//!   execution as `$ command\noutput`), `token_count` from [`crate::tokens`].
//! - one `message_parts` row per block with `part_type`, `text_content` and the tool
//!   columns; `metadata` = `{originalRole, rawType, raw?}` where `raw` (the block as
//!   given) is kept only when the columns cannot rebuild the block exactly.
//! - the text is stored once where `messages.content` alone rebuilds the content
//!   for the reference's readers too (see [`single_text_block`]): a user message
//!   with string content or one text block, and an assistant message made of one
//!   non-empty text block, have no part; a tool result made of one text block has
//!   one part without text (its call id, name and error flag), marked
//!   `topLevelReasoningOnly` so the reference's reader takes the content from
//!   `messages.content`, as it does for its own parts that carry no content block.
//! - `messages.lcm_envelope`: the message without its content (content replaced by
//!   a marker: 0 a string, 1 blocks, 2 verbatim JSON, 3 one text block), so the
//!   message rebuilds byte-exact.
//! - `messages.identity_hash` is left NULL: nothing here reads it, and the reference
//!   plugin fills NULL hashes itself when it opens the file (its startup backfill).

use serde_json::{json, Map, Value};

use super::{db_role, REASONING_TYPES, RUNTIME_ROLES, TOOL_CALL_TYPES, TOOL_RESULT_TYPES};
use crate::error::{LcmError, Result};
use crate::params::json_kind;
use crate::{timestamp, tokens};

/// Envelope marker: the content was a string.
pub const CONTENT_STRING: i64 = 0;
/// Envelope marker: the content was an array of blocks.
pub const CONTENT_BLOCKS: i64 = 1;
/// Envelope marker: the content was another JSON value, kept as JSON text in the
/// first part.
pub const CONTENT_VERBATIM: i64 = 2;

/// Envelope marker: the content was one plain text block `[{"type":"text","text":…}]`
/// whose text is `messages.content` (no part carries it).
pub const CONTENT_TEXT_BLOCK: i64 = 3;

/// Tokens charged for an inline image (base64 data is not text the model reads).
pub const IMAGE_TOKENS: i64 = 1600;

/// A `messages` row ready to insert.
#[derive(Debug, Clone)]
pub struct NewMessage {
    /// DB role (`user`, `assistant`, `tool`, `system`).
    pub role: &'static str,
    /// Plain-text content.
    pub content: String,
    /// Estimated tokens.
    pub token_count: i64,
    /// SQLite UTC text; `None` means "now".
    pub created_at: Option<String>,
    /// Transcript entry id, when the host supplied one.
    pub transcript_entry_id: Option<String>,
    /// The lossless envelope JSON.
    pub envelope: String,
    /// The part rows.
    pub parts: Vec<NewPart>,
}

/// A `message_parts` row ready to insert.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NewPart {
    /// Reference part type.
    pub part_type: &'static str,
    /// Block index.
    pub ordinal: i64,
    /// Text of a text, reasoning or tool-result block.
    pub text_content: Option<String>,
    /// Tool-call id.
    pub tool_call_id: Option<String>,
    /// Tool name.
    pub tool_name: Option<String>,
    /// Tool input as JSON text.
    pub tool_input: Option<String>,
    /// Tool output as JSON text.
    pub tool_output: Option<String>,
    /// Metadata JSON.
    pub metadata: String,
}

/// Validates and maps one message. Only a message that is not an object, or has no
/// non-empty string `role`, is bad input: every role and every content shape is
/// stored losslessly (see [`text_of_other`] for the plain text of the host's other
/// roles).
pub fn map_message(message: &Value, entry_id: Option<String>) -> Result<NewMessage> {
    let obj = message.as_object().ok_or_else(|| {
        LcmError::invalid(format!(
            "message must be an object, got {}",
            json_kind(message)
        ))
    })?;
    let runtime_role = match obj.get("role") {
        Some(Value::String(r)) if !r.trim().is_empty() => r.as_str(),
        Some(Value::String(_)) => return Err(LcmError::invalid("message.role is empty")),
        Some(other) => {
            return Err(LcmError::invalid(format!(
                "message.role must be a string, got {}",
                json_kind(other)
            )))
        }
        None => return Err(LcmError::invalid("message has no role")),
    };
    let role = db_role(runtime_role);
    let text_block = single_text_block(runtime_role, obj);
    let (content, parts, token_count) = match (obj.get("content"), text_block) {
        (_, Some(text)) => (
            text.to_owned(),
            text_block_parts(runtime_role, obj),
            tokens::estimate(text),
        ),
        (Some(Value::String(s)), _) => (
            s.clone(),
            string_parts(s, runtime_role, obj),
            tokens::estimate(s),
        ),
        (Some(Value::Array(blocks)), _) => map_blocks(blocks, runtime_role, obj),
        (None, _) if obj.contains_key("command") => bash_execution(obj, runtime_role),
        (None, _) => contentless(obj, runtime_role),
        (Some(other), _) => verbatim_content(other, runtime_role, obj),
    };
    let (content, token_count) = match text_of_other(runtime_role, obj) {
        Some(text) if content.is_empty() => {
            let n = tokens::estimate(&text);
            (text, n)
        }
        _ => (content, token_count),
    };
    Ok(NewMessage {
        role,
        content,
        token_count,
        created_at: created_at(obj),
        transcript_entry_id: entry_id,
        envelope: envelope(obj, text_block.is_some()),
        parts,
    })
}

/// Plain text of a message of a role the reference has no mapping for, when its
/// content gives none: a summary entry by its `summary`, anything else by its JSON
/// (so it stays searchable and summarizable).
fn text_of_other(runtime_role: &str, obj: &Map<String, Value>) -> Option<String> {
    if RUNTIME_ROLES.contains(&runtime_role) {
        return None;
    }
    if let Some(Value::String(s)) = obj.get("summary") {
        return Some(s.clone());
    }
    Some(compact(obj))
}

/// A message without content and without a command (a summary entry, a plugin's own
/// role): one agent part; its fields live in the envelope.
fn contentless(obj: &Map<String, Value>, runtime_role: &str) -> (String, Vec<NewPart>, i64) {
    let text = match obj.get("summary") {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    agent_part(text, runtime_role, runtime_role, obj)
}

/// Content that is neither a string nor an array (kept verbatim: its JSON is the
/// part's text and the envelope marks it [`CONTENT_VERBATIM`]).
fn verbatim_content(
    content: &Value,
    runtime_role: &str,
    obj: &Map<String, Value>,
) -> (String, Vec<NewPart>, i64) {
    agent_part(compact(content), "verbatim", runtime_role, obj)
}

fn created_at(obj: &Map<String, Value>) -> Option<String> {
    let v = obj
        .get("timestamp")
        .or_else(|| obj.get("createdAt"))
        .or_else(|| obj.get("created_at"))?;
    let t = match v {
        Value::Number(n) => n.as_f64().and_then(|ms| timestamp::from_millis(ms as i64)),
        Value::String(s) => timestamp::parse(s),
        _ => None,
    }?;
    Some(timestamp::to_sqlite(t))
}

/// The text of a message whose content `messages.content` alone rebuilds, for the
/// reference's readers as for ours: content that is exactly one canonical text
/// block, in a user message, a non-empty assistant message, or a tool result (the
/// reference rebuilds a user row without content parts as its string, which is what
/// it makes of one text block too; an assistant or tool-result row as
/// `[{type:"text", text: content}]`). A message carrying top-level tool fields it
/// would not read from a tool result's part (a user or assistant with a
/// `toolCallId`) keeps its parts.
fn single_text_block<'a>(runtime_role: &str, obj: &'a Map<String, Value>) -> Option<&'a str> {
    let Some(Value::Array(blocks)) = obj.get("content") else {
        return None;
    };
    let [Value::Object(b)] = blocks.as_slice() else {
        return None;
    };
    if !is_canonical("text", b) || b.get("type").and_then(Value::as_str) != Some("text") {
        return None;
    }
    let text = b.get("text").and_then(Value::as_str)?;
    let tool_fields =
        top_level_call_id(obj).is_some() || str_field(obj, &["toolName", "tool_name"]).is_some();
    match runtime_role {
        "toolResult" | "tool" => Some(text),
        "user" if !tool_fields => Some(text),
        "assistant" if !tool_fields && !text.is_empty() => Some(text),
        _ => None,
    }
}

/// The parts of a [`single_text_block`] message: none for a user or assistant; for a
/// tool result, one `text` part without text carrying what the reference reads from
/// parts (role, call id, name, error flag), flagged `topLevelReasoningOnly` — the
/// reference's mark of a part that holds no content block, so its reader rebuilds
/// the content from `messages.content` (`[{type:"text", text: content}]`) instead of
/// from this part.
fn text_block_parts(runtime_role: &str, obj: &Map<String, Value>) -> Vec<NewPart> {
    if runtime_role != "toolResult" && runtime_role != "tool" {
        return Vec::new();
    }
    let mut meta = base_metadata(runtime_role, obj);
    meta.insert("rawType".into(), json!("text"));
    meta.insert(NO_CONTENT_BLOCK.into(), json!(true));
    vec![NewPart {
        part_type: "text",
        ordinal: 0,
        text_content: None,
        tool_call_id: top_level_call_id(obj),
        tool_name: str_field(obj, &["toolName", "tool_name"]),
        metadata: compact(&meta),
        ..NewPart::default()
    }]
}

/// The part-metadata key with which the reference marks a part that holds no
/// content block (its reader leaves such parts out of the content and falls back to
/// `messages.content` when no other part remains).
pub const NO_CONTENT_BLOCK: &str = "topLevelReasoningOnly";

/// The message's JSON with its content replaced by a marker (see
/// [`CONTENT_STRING`] and the others), written straight from the object.
fn envelope(obj: &Map<String, Value>, text_block: bool) -> String {
    compact(&Envelope { obj, text_block })
}

/// The envelope's marker for a message's content: how [`map_message`] stored it.
fn content_marker(content: &Value, text_block: bool) -> i64 {
    match content {
        Value::String(_) => CONTENT_STRING,
        Value::Array(_) if text_block => CONTENT_TEXT_BLOCK,
        Value::Array(_) => CONTENT_BLOCKS,
        _ => CONTENT_VERBATIM,
    }
}

/// A message object seen as its envelope: every member in order, the content's
/// value replaced by its marker.
struct Envelope<'a> {
    obj: &'a Map<String, Value>,
    text_block: bool,
}

impl serde::Serialize for Envelope<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.obj.len()))?;
        for (k, v) in self.obj {
            if k == "content" {
                map.serialize_entry(k, &content_marker(v, self.text_block))?;
            } else {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

/// Compact JSON text of a value: `serde_json` writing into one buffer, without
/// `Display`'s formatter in between. JSON values and their maps (string keys)
/// always serialize, so the empty fallback is never taken.
fn compact<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Reference metadata for parts of tool-result messages: top-level call id, name,
/// error flag.
fn base_metadata(runtime_role: &str, obj: &Map<String, Value>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("originalRole".into(), json!(runtime_role));
    if runtime_role == "toolResult" || runtime_role == "tool" {
        for key in ["toolCallId", "toolName", "isError"] {
            if let Some(v) = obj.get(key) {
                m.insert(key.into(), v.clone());
            }
        }
    }
    m
}

fn top_level_call_id(obj: &Map<String, Value>) -> Option<String> {
    str_field(
        obj,
        &["toolCallId", "tool_call_id", "toolUseId", "tool_use_id"],
    )
}

fn str_field(obj: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The parts of a message whose content is a string. A plain user message gets
/// none: `messages.content` alone rebuilds it, for the reference's readers (a user
/// row without parts is its string content) and for ours (the envelope marks the
/// content as a string), so a part row would only store the text a second time.
fn string_parts(text: &str, runtime_role: &str, obj: &Map<String, Value>) -> Vec<NewPart> {
    let part = string_part(text, runtime_role, obj);
    let plain_user =
        runtime_role == "user" && part.tool_call_id.is_none() && part.tool_name.is_none();
    if plain_user {
        Vec::new()
    } else {
        vec![part]
    }
}

fn string_part(text: &str, runtime_role: &str, obj: &Map<String, Value>) -> NewPart {
    let meta = base_metadata(runtime_role, obj);
    NewPart {
        part_type: "text",
        ordinal: 0,
        text_content: Some(text.to_owned()),
        tool_call_id: top_level_call_id(obj),
        tool_name: str_field(obj, &["toolName", "tool_name"]),
        metadata: compact(&meta),
        ..NewPart::default()
    }
}

fn bash_execution(obj: &Map<String, Value>, runtime_role: &str) -> (String, Vec<NewPart>, i64) {
    let command = obj.get("command").map(value_text).unwrap_or_default();
    let output = obj.get("output").map(value_text).unwrap_or_default();
    let content = format!("$ {command}\n{output}");
    agent_part(content, "bashExecution", runtime_role, obj)
}

/// A message stored as one `agent` part holding `text` (its `rawType` named in the
/// part's metadata): the text, the part, the text's tokens.
fn agent_part(
    text: String,
    raw_type: &str,
    runtime_role: &str,
    obj: &Map<String, Value>,
) -> (String, Vec<NewPart>, i64) {
    let mut meta = base_metadata(runtime_role, obj);
    meta.insert("rawType".into(), json!(raw_type));
    let part = NewPart {
        part_type: "agent",
        ordinal: 0,
        text_content: Some(text.clone()),
        metadata: compact(&meta),
        ..NewPart::default()
    };
    let n = tokens::estimate(&text);
    (text, vec![part], n)
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => compact(other),
    }
}

fn map_blocks(
    blocks: &[Value],
    runtime_role: &str,
    obj: &Map<String, Value>,
) -> (String, Vec<NewPart>, i64) {
    let mut texts: Vec<&str> = Vec::new();
    let mut parts = Vec::with_capacity(blocks.len());
    let mut token_count = 0i64;
    for (i, block) in blocks.iter().enumerate() {
        let Some(b) = block.as_object() else {
            parts.push(bare_block(i as i64, block, runtime_role, obj));
            token_count += tokens::estimate(&value_text(block));
            continue;
        };
        let ty = b.get("type").and_then(Value::as_str).unwrap_or("");
        if ty == "text" {
            if let Some(t) = b.get("text").and_then(Value::as_str) {
                texts.push(t);
            }
        }
        let (part, tokens) = map_block(i as i64, ty, b, block, runtime_role, obj);
        token_count += tokens;
        parts.push(part);
    }
    (texts.join("\n"), parts, token_count)
}

/// A content entry that is not an object (kept as given in the metadata's `raw`).
fn bare_block(
    ordinal: i64,
    block: &Value,
    runtime_role: &str,
    obj: &Map<String, Value>,
) -> NewPart {
    let mut meta = base_metadata(runtime_role, obj);
    meta.insert("raw".into(), block.clone());
    NewPart {
        part_type: "agent",
        ordinal,
        text_content: Some(value_text(block)),
        metadata: compact(&meta),
        ..NewPart::default()
    }
}

fn part_type_of(ty: &str) -> &'static str {
    if ty == "text" {
        "text"
    } else if REASONING_TYPES.contains(&ty) {
        "reasoning"
    } else if TOOL_CALL_TYPES.contains(&ty) || TOOL_RESULT_TYPES.contains(&ty) {
        "tool"
    } else if ty == "image" || ty == "file" {
        "file"
    } else {
        "agent"
    }
}

/// True when the block is exactly the canonical shape the columns rebuild.
fn is_canonical(ty: &str, b: &Map<String, Value>) -> bool {
    let keys_are =
        |names: &[&str]| b.len() == names.len() && b.keys().zip(names).all(|(k, n)| k == n);
    match ty {
        "text" => keys_are(&["type", "text"]) && b["text"].is_string(),
        "thinking" => keys_are(&["type", "thinking"]) && b["thinking"].is_string(),
        "toolCall" => {
            keys_are(&["type", "id", "name", "arguments"])
                && b["id"].is_string()
                && b["name"].is_string()
                && !b["arguments"].is_string()
        }
        _ => false,
    }
}

fn json_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => compact(other),
    }
}

fn map_block(
    ordinal: i64,
    ty: &str,
    b: &Map<String, Value>,
    block: &Value,
    runtime_role: &str,
    obj: &Map<String, Value>,
) -> (NewPart, i64) {
    let part_type = part_type_of(ty);
    let mut meta = base_metadata(runtime_role, obj);
    meta.insert("rawType".into(), json!(ty));
    if !is_canonical(ty, b) {
        meta.insert("raw".into(), block.clone());
    }
    let mut part = NewPart {
        part_type,
        ordinal,
        ..NewPart::default()
    };
    let tokens = match part_type {
        "text" => {
            let t = b.get("text").map(value_text).unwrap_or_default();
            let n = tokens::estimate(&t);
            part.text_content = Some(t);
            n
        }
        "reasoning" => {
            let t = str_field(b, &["thinking", "text", "summary"]).unwrap_or_default();
            let n = tokens::estimate(&t);
            part.text_content = Some(t);
            n
        }
        "tool" => fill_tool_columns(&mut part, ty, b, obj),
        "file" if b.contains_key("data") => IMAGE_TOKENS,
        _ => tokens::estimate(&compact(block)),
    };
    if part.tool_call_id.is_none() && (runtime_role == "toolResult" || runtime_role == "tool") {
        part.tool_call_id = top_level_call_id(obj);
        part.tool_name = str_field(obj, &["toolName", "tool_name"]);
    }
    part.metadata = compact(&meta);
    (part, tokens)
}

fn fill_tool_columns(
    part: &mut NewPart,
    ty: &str,
    b: &Map<String, Value>,
    obj: &Map<String, Value>,
) -> i64 {
    let is_result = TOOL_RESULT_TYPES.contains(&ty);
    let id_keys: &[&str] = if is_result {
        &[
            "toolCallId",
            "tool_call_id",
            "toolUseId",
            "tool_use_id",
            "call_id",
        ]
    } else {
        &["id", "call_id", "toolCallId", "tool_call_id"]
    };
    part.tool_call_id = str_field(b, id_keys).or_else(|| top_level_call_id(obj));
    part.tool_name = str_field(b, &["name", "toolName", "tool_name"]);
    let mut tokens = part.tool_name.as_deref().map(tokens::estimate).unwrap_or(0);
    if let Some(input) = ["arguments", "input", "toolInput"]
        .iter()
        .find_map(|k| b.get(*k))
    {
        let text = json_text(input);
        tokens += tokens::estimate(&text);
        part.tool_input = Some(text);
    }
    if let Some(output) = ["output", "toolOutput", "content"]
        .iter()
        .find_map(|k| b.get(*k))
    {
        let text = json_text(output);
        tokens += tokens::estimate(&text);
        part.tool_output = Some(text);
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Any JSON value, its strings hostile Unicode, its numbers integers and floats
    /// of every size.
    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            crate::text::strategies::text(12).prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec((crate::text::strategies::text(6), inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// The envelope written straight from the object is the object cloned with
        /// its content replaced by the marker, byte for byte (members in order,
        /// strings escaped and numbers written as `serde_json` writes a value).
        #[test]
        fn envelope_is_the_object_with_its_content_marked(
            members in prop::collection::vec((crate::text::strategies::text(6), any_json()), 0..5),
            content in prop::option::of(any_json()),
            at in 0usize..6,
            text_block in any::<bool>(),
        ) {
            let mut obj: Map<String, Value> = members.into_iter().collect();
            if let Some(c) = content {
                obj.shift_remove("content");
                let at = at.min(obj.len());
                obj.shift_insert(at, "content".into(), c);
            }
            let mut oracle = obj.clone();
            if let Some(v) = oracle.get_mut("content") {
                *v = json!(content_marker(v, text_block));
            }
            prop_assert_eq!(envelope(&obj, text_block), Value::Object(oracle).to_string());
            let whole = Value::Object(obj);
            prop_assert_eq!(compact(&whole), whole.to_string());
        }
    }

    #[test]
    fn user_string_message() {
        let m = map_message(
            &json!({"role":"user","content":"hi there","timestamp":1771313820000i64}),
            None,
        )
        .unwrap();
        assert_eq!(m.role, "user");
        assert_eq!(m.content, "hi there");
        assert_eq!(m.token_count, 2);
        assert_eq!(m.created_at.as_deref(), Some("2026-02-17 07:37:00"));
        assert!(m.parts.is_empty(), "messages.content alone rebuilds it");
        assert_eq!(
            m.envelope,
            r#"{"role":"user","content":0,"timestamp":1771313820000}"#
        );
    }

    #[test]
    fn assistant_blocks_map_to_parts_and_keep_raw_only_when_needed() {
        let m = map_message(
            &json!({"role":"assistant","content":[
                {"type":"thinking","thinking":"hmm"},
                {"type":"text","text":"a"},
                {"type":"toolCall","id":"call_1","name":"exec","arguments":{"command":"ls"}},
                {"text":"b","type":"text"}
            ]}),
            None,
        )
        .unwrap();
        assert_eq!(m.content, "a\nb");
        let types: Vec<_> = m.parts.iter().map(|p| p.part_type).collect();
        assert_eq!(types, ["reasoning", "text", "tool", "text"]);
        assert!(!m.parts[1].metadata.contains("\"raw\""));
        assert!(m.parts[3].metadata.contains("\"raw\""));
        assert_eq!(m.parts[2].tool_call_id.as_deref(), Some("call_1"));
        assert_eq!(
            m.parts[2].tool_input.as_deref(),
            Some(r#"{"command":"ls"}"#)
        );
    }

    #[test]
    fn bad_input_is_rejected_with_a_reason() {
        let e = map_message(&json!({"content":"x"}), None).unwrap_err();
        assert!(e.message.contains("no role"));
        let e = map_message(&json!({"role":7,"content":"x"}), None).unwrap_err();
        assert!(e.message.contains("a number"));
        let e = map_message(&json!("hello"), None).unwrap_err();
        assert!(e.message.contains("object"));
    }

    #[test]
    fn host_roles_get_the_reference_db_role_and_text() {
        let cases = [
            (
                json!({"role":"bashExecution","command":"ls -la","output":"a\nb","exitCode":0}),
                "$ ls -la\na\nb",
            ),
            (
                json!({"role":"custom","customType":"t","content":"remember this","display":true}),
                "remember this",
            ),
            (
                json!({"role":"branchSummary","summary":"went left","fromId":"e2"}),
                "went left",
            ),
            (
                json!({"role":"compactionSummary","summary":"earlier work","tokensBefore":9}),
                "earlier work",
            ),
            (
                json!({"role":"myPlugin","content":[{"type":"text","text":"plugin says"}]}),
                "plugin says",
            ),
            (
                json!({"role":"myPlugin","n":1}),
                r#"{"role":"myPlugin","n":1}"#,
            ),
        ];
        for (msg, text) in cases {
            let m = map_message(&msg, None).unwrap();
            assert_eq!(m.role, "assistant", "{msg}");
            assert_eq!(m.content, text, "{msg}");
            assert_eq!(m.token_count, tokens::estimate(text), "{msg}");
        }
    }
}
