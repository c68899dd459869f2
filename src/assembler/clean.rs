//! Clean-ups before the pairing repair: tool calls whose result is not in the
//! assembled context are stripped, assistant content becomes block arrays without
//! blank text, and messages with nothing sendable are dropped (strict providers
//! such as Bedrock reject empty content).

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};

use super::pairing::{
    call_id, field, is_blank_text, is_thinking_like, is_tool_call, result_id, role, RepairStats,
};
use super::Entry;
use crate::error::Result;

/// Strips tool-call blocks that have no result later in the selection. Outside the
/// fresh tail such a call is always stripped; inside it, the call stays (and gets a
/// synthetic result) only when no result with its id exists anywhere in the
/// context — otherwise the pair is out of order and the call goes. `known` holds the
/// result ids of the loaded items; `lookup` answers for the items not loaded.
/// Assistants left with no blocks are dropped.
pub fn strip_unpaired_calls(
    entries: &mut Vec<Entry>,
    tail_start: i64,
    known: &HashSet<String>,
    lookup: impl FnOnce(&[String]) -> Result<HashSet<String>>,
    stats: &mut RepairStats,
) -> Result<()> {
    let mut results: HashMap<&str, Vec<i64>> = HashMap::new();
    for e in entries.iter() {
        if let Some(id) = result_id(&e.message) {
            results.entry(id).or_default().push(e.ordinal);
        }
    }
    let paired = |id: &str, ordinal: i64| {
        results
            .get(id)
            .is_some_and(|o| o.iter().any(|x| *x > ordinal))
    };
    let mut decisions: Vec<Vec<(usize, String)>> = Vec::with_capacity(entries.len());
    let mut ask: Vec<String> = Vec::new();
    for e in entries.iter() {
        let mut unpaired = Vec::new();
        if role(&e.message) == "assistant" {
            if let Some(blocks) = field(&e.message, "content").and_then(Value::as_array) {
                for (i, b) in blocks.iter().enumerate() {
                    let Some(id) = call_id(b).filter(|_| is_tool_call(b)) else {
                        continue;
                    };
                    if !paired(id, e.ordinal) {
                        if e.ordinal >= tail_start && !known.contains(id) {
                            ask.push(id.to_owned());
                        }
                        unpaired.push((i, id.to_owned()));
                    }
                }
            }
        }
        decisions.push(unpaired);
    }
    let elsewhere = if ask.is_empty() {
        HashSet::new()
    } else {
        lookup(&ask)?
    };
    let mut kept = Vec::with_capacity(entries.len());
    for (mut e, unpaired) in entries.drain(..).zip(decisions) {
        let strip: Vec<usize> = unpaired
            .into_iter()
            .filter(|(_, id)| {
                e.ordinal < tail_start || known.contains(id) || elsewhere.contains(id)
            })
            .map(|(i, _)| i)
            .collect();
        if strip.is_empty() {
            kept.push(e);
            continue;
        }
        stats.stripped_unpaired_tool_calls += strip.len();
        if let Some(blocks) = e
            .message_mut()
            .get_mut("content")
            .and_then(Value::as_array_mut)
        {
            let mut i = 0;
            blocks.retain(|_| {
                let keep = !strip.contains(&i);
                i += 1;
                keep
            });
            if blocks.is_empty() {
                stats.dropped_empty_messages += 1;
                continue;
            }
        }
        e.tokens = None;
        kept.push(e);
    }
    *entries = kept;
    Ok(())
}

/// Assistant string content becomes `[{type:"text", text}]`; blank text blocks are
/// removed from assistant block arrays.
pub fn normalize_assistants(entries: &mut [Entry]) {
    for e in entries.iter_mut() {
        if role(&e.message) != "assistant" {
            continue;
        }
        let changes = match field(&e.message, "content") {
            Some(Value::String(_)) => true,
            Some(Value::Array(blocks)) => blocks.iter().any(is_blank_text),
            _ => false,
        };
        if !changes {
            continue;
        }
        let Some(content) = e.message_mut().get_mut("content") else {
            continue;
        };
        match content {
            Value::String(s) => {
                let text = std::mem::take(s);
                *content = json!([{"type": "text", "text": text}]);
            }
            Value::Array(blocks) => {
                let before = blocks.len();
                blocks.retain(|b| !is_blank_text(b));
                if blocks.len() != before {
                    e.tokens = None;
                }
            }
            _ => {}
        }
    }
}

/// True when a provider would reject the message as empty: content missing, null,
/// blank or `[]`; or an assistant whose blocks are all reasoning or all blank text.
pub fn is_empty_message(v: &Value) -> bool {
    match field(v, "content") {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.trim().is_empty(),
        Some(Value::Array(blocks)) => {
            blocks.is_empty()
                || (role(v) == "assistant"
                    && (blocks.iter().all(is_thinking_like) || blocks.iter().all(is_blank_text)))
        }
        Some(_) => false,
    }
}

/// Drops the messages the host marked as not for the model's context
/// ([`crate::message::excluded_from_context`]); a tool call whose result goes is
/// then unpaired and stripped like any other.
pub fn drop_excluded(entries: &mut Vec<Entry>, stats: &mut RepairStats) {
    let before = entries.len();
    entries.retain(|e| !crate::message::excluded_from_context(&e.message));
    stats.dropped_excluded_messages += before - entries.len();
}

/// Drops the messages [`is_empty_message`] rejects.
pub fn drop_empty(entries: &mut Vec<Entry>, stats: &mut RepairStats) {
    let before = entries.len();
    entries.retain(|e| !is_empty_message(&e.message));
    stats.dropped_empty_messages += before - entries.len();
}
