//! Tool-call / tool-result pairing repair (anchor-core §4.4, with the reference's
//! later additions). Providers reject transcripts where an assistant's tool calls
//! are not followed at once by one result each; this pass makes them valid:
//!
//! - results move directly after the assistant that called them, one per call in
//!   call order; a call without a result gets a synthetic error result;
//! - results nobody called (orphans) and second results for one id are dropped; a
//!   real result replaces a synthetic one;
//! - a tool-call id used by an earlier assistant is dropped from later ones (an
//!   assistant left with nothing but reasoning or blank text is dropped);
//! - assistants that ended in `error` / `aborted` keep no tool calls, claim no ids
//!   and get no synthetic results;
//! - a single OpenAI function call followed by reasoning is reordered so the
//!   reasoning comes first; the search for late results looks past display-only
//!   assistants.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::{json, Value};

use super::Entry;
use crate::message::TOOL_CALL_TYPES;

/// Text of the synthetic result inserted for a call whose result is missing.
pub const MISSING_TOOL_RESULT_TEXT: &str = "[lossless-claw] missing tool result in session history; inserted synthetic error result for transcript repair.";

const FUNCTION_CALL_TYPES: &[&str] = &["functionCall", "function_call"];
const THINKING_LIKE_TYPES: &[&str] = &["thinking", "redacted_thinking", "reasoning"];

/// What the repair passes changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "AssembleRepairStats")]
pub struct RepairStats {
    /// Synthetic error results inserted for calls without a result.
    pub synthetic_tool_results: usize,
    /// Tool results dropped because no preceding assistant called them.
    pub dropped_orphan_results: usize,
    /// Second (and later) results for one call id dropped.
    pub dropped_duplicate_results: usize,
    /// Tool-call blocks dropped because an earlier assistant used the same id.
    pub dropped_duplicate_tool_calls: usize,
    /// Tool-call blocks stripped from `error` / `aborted` assistants.
    pub stripped_terminal_tool_calls: usize,
    /// Tool-call blocks stripped because their result is not in the assembled
    /// context (evicted, summarized, or placed before the call).
    pub stripped_unpaired_tool_calls: usize,
    /// Tool results moved next to their call.
    pub moved_tool_results: usize,
    /// Messages dropped because nothing sendable was left in them.
    pub dropped_empty_messages: usize,
    /// Messages dropped because the host marked them `excludeFromContext`.
    pub dropped_excluded_messages: usize,
    /// Tool results without a call id presented as assistant text.
    pub downgraded_tool_results: usize,
}

/// `v[key]` when `v` is an object. A message or block has a handful of fields,
/// and comparing their names is cheaper than hashing `key` (serde_json's ordered
/// map hashes with SipHash): in an assembly these lookups were a fifth of the
/// core's time. A larger object is looked up by hash.
pub fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    let obj = v.as_object()?;
    if obj.len() > SCANNED_FIELDS {
        return obj.get(key);
    }
    obj.iter().find_map(|(k, x)| (k == key).then_some(x))
}

/// The most fields [`field`] compares one by one.
const SCANNED_FIELDS: usize = 16;

/// The `role` of a message ("" when absent).
pub fn role(v: &Value) -> &str {
    field(v, "role").and_then(Value::as_str).unwrap_or("")
}

fn block_type(b: &Value) -> &str {
    field(b, "type").and_then(Value::as_str).unwrap_or("")
}

fn non_empty_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    field(v, key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// The id of a tool-call block: `id`, else `call_id`.
pub fn call_id(block: &Value) -> Option<&str> {
    non_empty_str(block, "id").or_else(|| non_empty_str(block, "call_id"))
}

/// True for a block whose `type` is a tool call in any provider's spelling.
pub fn is_tool_call(block: &Value) -> bool {
    TOOL_CALL_TYPES.contains(&block_type(block))
}

/// The call id a tool-result message answers: `toolCallId`, else `toolUseId`.
pub fn result_id(v: &Value) -> Option<&str> {
    non_empty_str(v, "toolCallId").or_else(|| non_empty_str(v, "toolUseId"))
}

/// Reasoning blocks the provider layer strips before sending.
pub fn is_thinking_like(block: &Value) -> bool {
    THINKING_LIKE_TYPES.contains(&block_type(block))
}

/// A text block whose text is empty or whitespace.
pub fn is_blank_text(block: &Value) -> bool {
    block_type(block) == "text"
        && field(block, "text")
            .and_then(Value::as_str)
            .is_some_and(|t| t.trim().is_empty())
}

fn is_terminal(v: &Value) -> bool {
    let reason = match field(v, "stopReason") {
        Some(Value::String(s)) => Some(s.as_str()),
        _ => field(v, "stop_reason").and_then(Value::as_str),
    };
    matches!(reason, Some("error" | "aborted"))
}

fn is_synthetic(v: &Value) -> bool {
    field(v, "isError") == Some(&Value::Bool(true))
        && field(v, "content")
            .and_then(Value::as_array)
            .is_some_and(|c| {
                c.iter().any(|b| {
                    block_type(b) == "text"
                        && field(b, "text").and_then(Value::as_str)
                            == Some(MISSING_TOOL_RESULT_TEXT)
                })
            })
}

/// A candidate result replaces `existing` only when there is none, or when it is
/// real and the existing one synthetic.
fn should_use(existing: Option<&Value>, candidate: &Value) -> bool {
    existing.is_none_or(|e| is_synthetic(e) && !is_synthetic(candidate))
}

#[derive(Debug, Clone)]
struct Call {
    id: String,
    name: Option<String>,
}

/// What filtering an assistant's tool calls would do, without doing it.
#[derive(Debug, Default)]
struct Plan {
    /// Block indexes to remove.
    drop: Vec<usize>,
    /// Whether the dropped blocks were dropped as terminal (else as duplicates).
    terminal: bool,
    /// Tool calls that stay, in block order.
    kept: Vec<Call>,
}

fn plan_calls(msg: &Value, is_seen: &dyn Fn(&str) -> bool, drop_all: bool) -> Plan {
    let mut plan = Plan {
        terminal: drop_all,
        ..Plan::default()
    };
    let Some(blocks) = field(msg, "content").and_then(Value::as_array) else {
        return plan;
    };
    let mut local: HashSet<&str> = HashSet::new();
    for (i, b) in blocks.iter().enumerate() {
        let Some(id) = call_id(b).filter(|_| is_tool_call(b)) else {
            continue;
        };
        if drop_all || is_seen(id) || local.contains(id) {
            plan.drop.push(i);
            continue;
        }
        local.insert(id);
        plan.kept.push(Call {
            id: id.to_owned(),
            name: field(b, "name").and_then(Value::as_str).map(str::to_owned),
        });
    }
    plan
}

/// True when the content left after the plan is empty or only reasoning / blank text.
fn empty_after(msg: &Value, plan: &Plan) -> bool {
    let Some(blocks) = field(msg, "content").and_then(Value::as_array) else {
        return false;
    };
    blocks
        .iter()
        .enumerate()
        .filter(|(i, _)| !plan.drop.contains(i))
        .all(|(_, b)| is_thinking_like(b) || is_blank_text(b))
}

fn apply(e: &mut Entry, plan: &Plan) {
    if plan.drop.is_empty() {
        return;
    }
    if let Some(blocks) = e
        .message_mut()
        .get_mut("content")
        .and_then(Value::as_array_mut)
    {
        let mut i = 0;
        blocks.retain(|_| {
            let keep = !plan.drop.contains(&i);
            i += 1;
            keep
        });
        e.tokens = None;
    }
}

fn count_drops(plan: &Plan, stats: &mut RepairStats) {
    if plan.terminal {
        stats.stripped_terminal_tool_calls += plan.drop.len();
    } else {
        stats.dropped_duplicate_tool_calls += plan.drop.len();
    }
}

/// Puts reasoning first in an assistant made of exactly one OpenAI function call
/// plus reasoning blocks where some reasoning follows the call.
fn normalize_reasoning(e: &mut Entry) {
    let Some(blocks) = field(&e.message, "content").and_then(Value::as_array) else {
        return;
    };
    let (mut saw_call, mut late_reasoning, mut function_calls) = (false, false, 0);
    for b in blocks {
        let ty = block_type(b);
        if ty == "reasoning" || ty == "thinking" {
            late_reasoning |= saw_call;
        } else if TOOL_CALL_TYPES.contains(&ty) {
            saw_call = true;
            function_calls += usize::from(FUNCTION_CALL_TYPES.contains(&ty));
        } else {
            return;
        }
    }
    if !late_reasoning || function_calls != 1 {
        return;
    }
    if let Some(blocks) = e
        .message_mut()
        .get_mut("content")
        .and_then(Value::as_array_mut)
    {
        let (mut reasoning, calls): (Vec<Value>, Vec<Value>) = blocks
            .drain(..)
            .partition(|b| matches!(block_type(b), "reasoning" | "thinking"));
        reasoning.extend(calls);
        *blocks = reasoning;
    }
}

fn synthetic(call: &Call) -> Entry {
    Entry::synthetic(json!({
        "role": "toolResult",
        "toolCallId": call.id,
        "toolName": call.name.as_deref().unwrap_or("unknown"),
        "content": [{"type": "text", "text": MISSING_TOOL_RESULT_TEXT}],
        "isError": true,
    }))
}

/// The repair pass; see the module docs.
pub fn repair(input: Vec<Entry>, stats: &mut RepairStats) -> Vec<Entry> {
    let mut results_at: HashMap<String, Vec<usize>> = HashMap::new();
    for (k, e) in input.iter().enumerate() {
        if role(&e.message) == "toolResult" {
            if let Some(id) = result_id(&e.message) {
                results_at.entry(id.to_owned()).or_default().push(k);
            }
        }
    }
    Repair {
        msgs: input.into_iter().map(Some).collect(),
        results_at,
        out: Vec::new(),
        result_pos: HashMap::new(),
        seen_calls: HashSet::new(),
        stats,
    }
    .run()
}

struct Repair<'s> {
    /// Input slots; `None` once a message was emitted, moved or dropped.
    msgs: Vec<Option<Entry>>,
    /// Result id → the input indexes of the tool results carrying it, ascending
    /// (a slot's role and id never change while it holds its message).
    results_at: HashMap<String, Vec<usize>>,
    out: Vec<Entry>,
    /// Result id → its position in `out`.
    result_pos: HashMap<String, usize>,
    /// Tool-call ids already emitted.
    seen_calls: HashSet<String>,
    stats: &'s mut RepairStats,
}

/// Results gathered for the calls of one assistant.
struct Span {
    ids: HashSet<String>,
    /// Call id → (result, its input index).
    results: HashMap<String, (Entry, usize)>,
    remainder: Vec<Entry>,
    /// Input index of the first message that went to `remainder`.
    first_remainder: Option<usize>,
}

impl Repair<'_> {
    fn run(mut self) -> Vec<Entry> {
        let n = self.msgs.len();
        let mut i = 0;
        while i < n {
            let Some(mut e) = self.msgs[i].take() else {
                i += 1;
                continue;
            };
            match role(&e.message) {
                "assistant" => {}
                "toolResult" => {
                    self.stats.dropped_orphan_results += 1;
                    i += 1;
                    continue;
                }
                _ => {
                    self.out.push(e);
                    i += 1;
                    continue;
                }
            }
            normalize_reasoning(&mut e);
            let terminal = is_terminal(&e.message);
            let plan = plan_calls(&e.message, &|id| self.seen_calls.contains(id), terminal);
            if !plan.drop.is_empty() {
                count_drops(&plan, self.stats);
                if empty_after(&e.message, &plan) {
                    i += 1;
                    continue;
                }
                apply(&mut e, &plan);
            }
            if !terminal {
                self.seen_calls
                    .extend(plan.kept.iter().map(|c| c.id.clone()));
            }
            if terminal || plan.kept.is_empty() {
                self.out.push(e);
                i += 1;
                continue;
            }
            i = self.pair(e, plan.kept, i + 1);
        }
        self.out
    }

    /// Emits the assistant `e` with one result per call; returns where to go on.
    fn pair(&mut self, e: Entry, calls: Vec<Call>, from: usize) -> usize {
        let mut span = Span {
            ids: calls.iter().map(|c| c.id.clone()).collect(),
            results: HashMap::new(),
            remainder: Vec::new(),
            first_remainder: None,
        };
        let j = self.scan_span(&mut span, from);
        let mut later = self.later_results(&span, j + 1);
        self.out.push(e);
        if let Some(first) = span.first_remainder {
            self.stats.moved_tool_results +=
                span.results.values().filter(|(_, at)| *at > first).count();
        }
        for call in &calls {
            let mut chosen = span.results.remove(&call.id).map(|(r, _)| r);
            if let Some(idx) = later.remove(&call.id) {
                let candidate = self.msgs[idx].as_ref().map(|c| &c.message);
                if candidate.is_some_and(|c| should_use(chosen.as_ref().map(|x| &*x.message), c)) {
                    chosen = self.msgs[idx].take();
                    self.stats.moved_tool_results += 1;
                }
            }
            match chosen {
                Some(r) => self.push_result(r),
                None => {
                    self.stats.synthetic_tool_results += 1;
                    self.push_result(synthetic(call));
                }
            }
        }
        self.out.append(&mut span.remainder);
        j
    }

    /// Walks from `from` to the next assistant that makes tool calls, collecting this
    /// span's results and the other messages; returns that assistant's index (or n).
    fn scan_span(&mut self, span: &mut Span, from: usize) -> usize {
        let n = self.msgs.len();
        let mut j = from;
        while j < n {
            let Some(next) = self.msgs[j].as_ref() else {
                j += 1;
                continue;
            };
            match role(&next.message) {
                "assistant" => {
                    if let Some(slot) = self.msgs[j].as_mut() {
                        normalize_reasoning(slot);
                    }
                    let next = self.msgs[j].as_ref().expect("slot checked above");
                    let terminal = is_terminal(&next.message);
                    let plan =
                        plan_calls(&next.message, &|id| self.seen_calls.contains(id), terminal);
                    if !terminal && !plan.kept.is_empty() {
                        if !plan.drop.is_empty() {
                            self.look_past(span, j, &plan);
                        }
                        return j;
                    }
                    let mut taken = self.msgs[j].take().expect("slot checked above");
                    if !plan.drop.is_empty() {
                        count_drops(&plan, self.stats);
                        if empty_after(&taken.message, &plan) {
                            j += 1;
                            continue;
                        }
                    }
                    apply(&mut taken, &plan);
                    span.first_remainder.get_or_insert(j);
                    span.remainder.push(taken);
                }
                "toolResult" => {
                    let taken = self.msgs[j].take().expect("slot checked above");
                    self.collect_result(span, taken, j);
                }
                _ => {
                    span.first_remainder.get_or_insert(j);
                    span.remainder
                        .push(self.msgs[j].take().expect("slot checked above"));
                }
            }
            j += 1;
        }
        n
    }

    /// A result inside the span: kept for its call (true), or dropped as duplicate /
    /// orphan.
    fn collect_result(&mut self, span: &mut Span, r: Entry, at: usize) -> bool {
        let Some(id) = result_id(&r.message).filter(|id| span.ids.contains(*id)) else {
            self.stats.dropped_orphan_results += 1;
            return false;
        };
        if self.result_pos.contains_key(id) {
            self.stats.dropped_duplicate_results += 1;
            return false;
        }
        let id = id.to_owned();
        let existing = span.results.get(&id).map(|(x, _)| &*x.message);
        let had = existing.is_some();
        let used = should_use(existing, &r.message);
        if used {
            span.results.insert(id, (r, at));
        }
        if had {
            self.stats.dropped_duplicate_results += 1;
        }
        used
    }

    /// The next assistant mixes stale duplicate calls with new ones: look past it
    /// (up to the assistant after it that makes calls) for late results of this span.
    fn look_past(&mut self, span: &mut Span, j: usize, next: &Plan) {
        let ahead: HashSet<&str> = next.kept.iter().map(|c| c.id.as_str()).collect();
        let seen = |id: &str| self.seen_calls.contains(id) || ahead.contains(id);
        let mut found = Vec::new();
        for k in j + 1..self.msgs.len() {
            let Some(c) = self.msgs[k].as_ref() else {
                continue;
            };
            match role(&c.message) {
                "assistant" => {
                    let terminal = is_terminal(&c.message);
                    if !terminal && !plan_calls(&c.message, &seen, terminal).kept.is_empty() {
                        break;
                    }
                }
                "toolResult" if result_id(&c.message).is_some_and(|id| span.ids.contains(id)) => {
                    found.push(k);
                }
                _ => {}
            }
        }
        for k in found {
            let r = self.msgs[k].take().expect("index found above");
            if self.collect_result(span, r, 0) {
                self.stats.moved_tool_results += 1;
            }
        }
    }

    /// Results for this span's calls beyond the next calling assistant: id → index.
    fn later_results(&self, span: &Span, from: usize) -> HashMap<String, usize> {
        let mut later: HashMap<String, usize> = HashMap::new();
        for id in &span.ids {
            if self.result_pos.contains_key(id) {
                continue;
            }
            let Some(at) = self.results_at.get(id) else {
                continue;
            };
            let mut best: Option<usize> = None;
            for &k in &at[at.partition_point(|&k| k < from)..] {
                let Some(c) = self.msgs[k].as_ref() else {
                    continue;
                };
                let existing = best
                    .and_then(|x| self.msgs[x].as_ref())
                    .map(|x| &*x.message);
                if should_use(existing, &c.message) {
                    best = Some(k);
                }
            }
            if let Some(k) = best {
                later.insert(id.clone(), k);
            }
        }
        later
    }

    fn push_result(&mut self, r: Entry) {
        let Some(id) = result_id(&r.message).map(str::to_owned) else {
            self.out.push(r);
            return;
        };
        if let Some(&pos) = self.result_pos.get(&id) {
            if should_use(Some(&self.out[pos].message), &r.message) {
                self.out[pos] = r;
            }
            self.stats.dropped_duplicate_results += 1;
            return;
        }
        self.result_pos.insert(id, self.out.len());
        self.out.push(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assembler::Source;

    proptest::proptest! {
        #[test]
        fn a_field_is_what_get_finds(
            keys in proptest::collection::vec("[a-cA-C_]{0,3}|role|content|[😀가]{1,2}", 0..40),
            probe in "[a-cA-C_]{0,3}|role|content|[😀가]{1,2}",
        ) {
            let obj: serde_json::Map<String, Value> =
                keys.iter().enumerate().map(|(i, k)| (k.clone(), json!(i))).collect();
            let v = Value::Object(obj);
            proptest::prop_assert_eq!(field(&v, &probe), v.get(&probe));
            let not_an_object = json!([1, 2]);
            proptest::prop_assert_eq!(field(&not_an_object, &probe), None);
        }
    }

    fn entries(msgs: &[Value]) -> Vec<Entry> {
        msgs.iter()
            .enumerate()
            .map(|(i, m)| Entry {
                message: crate::assembler::SharedMessage::new(m.clone()),
                tokens: Some(1),
                wire: None,
                ordinal: i as i64,
                source: Source::Message,
            })
            .collect()
    }

    fn fix(msgs: &[Value]) -> (Vec<Value>, RepairStats) {
        let mut stats = RepairStats::default();
        let out = repair(entries(msgs), &mut stats);
        let out = out.into_iter().map(|e| Value::clone(&e.message)).collect();
        (out, stats)
    }

    fn user(t: &str) -> Value {
        json!({"role": "user", "content": t})
    }
    fn call(ids: &[&str]) -> Value {
        let blocks: Vec<Value> = ids
            .iter()
            .map(|id| json!({"type": "toolCall", "id": id, "name": format!("tool_{id}"), "arguments": {}}))
            .collect();
        json!({"role": "assistant", "content": blocks, "stopReason": "toolUse"})
    }
    fn result(id: &str, text: &str) -> Value {
        json!({"role": "toolResult", "toolCallId": id, "toolName": format!("tool_{id}"),
               "content": [{"type": "text", "text": text}], "isError": false})
    }
    fn say(t: &str) -> Value {
        json!({"role": "assistant", "content": [{"type": "text", "text": t}]})
    }
    fn missing(id: &str, name: &str) -> Value {
        json!({"role": "toolResult", "toolCallId": id, "toolName": name,
               "content": [{"type": "text", "text": MISSING_TOOL_RESULT_TEXT}], "isError": true})
    }

    #[test]
    fn well_formed_transcripts_pass_unchanged() {
        let msgs = [
            user("q"),
            call(&["a", "b"]),
            result("a", "1"),
            result("b", "2"),
            say("done"),
        ];
        let (out, stats) = fix(&msgs);
        assert_eq!(out, msgs);
        assert_eq!(stats, RepairStats::default());
    }

    #[test]
    fn orphan_results_are_dropped() {
        let (out, stats) = fix(&[user("q"), result("x", "?"), say("a"), result("y", "?")]);
        assert_eq!(out, [user("q"), say("a")]);
        assert_eq!(stats.dropped_orphan_results, 2);
    }

    #[test]
    fn missing_results_get_the_synthetic_error_result() {
        let (out, stats) = fix(&[user("q"), call(&["a", "b"]), result("b", "2"), user("next")]);
        assert_eq!(
            out,
            [
                user("q"),
                call(&["a", "b"]),
                missing("a", "tool_a"),
                result("b", "2"),
                user("next")
            ]
        );
        assert_eq!(stats.synthetic_tool_results, 1);
        let nameless =
            json!({"role": "assistant", "content": [{"type": "toolUse", "id": "z", "input": {}}]});
        let (out, _) = fix(std::slice::from_ref(&nameless));
        assert_eq!(out, [nameless, missing("z", "unknown")]);
    }

    #[test]
    fn results_move_next_to_their_call_in_call_order() {
        let (out, stats) = fix(&[
            call(&["a", "b"]),
            user("interrupt"),
            result("b", "2"),
            say("x"),
            result("a", "1"),
        ]);
        assert_eq!(
            out,
            [
                call(&["a", "b"]),
                result("a", "1"),
                result("b", "2"),
                user("interrupt"),
                say("x")
            ]
        );
        assert!(stats.moved_tool_results >= 2);
    }

    #[test]
    fn duplicate_results_keep_the_first() {
        let (out, stats) = fix(&[
            call(&["a"]),
            result("a", "first"),
            result("a", "second"),
            say("ok"),
            result("a", "third"),
        ]);
        assert_eq!(out, [call(&["a"]), result("a", "first"), say("ok")]);
        assert_eq!(
            stats.dropped_duplicate_results + stats.dropped_orphan_results,
            2
        );
    }

    #[test]
    fn duplicate_call_ids_keep_the_first_assistant() {
        let mixed = json!({"role": "assistant", "content": [
            {"type": "text", "text": "again"},
            {"type": "toolCall", "id": "a", "name": "tool_a", "arguments": {}}]});
        let only_dup = json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hm"},
            {"type": "toolCall", "id": "a", "name": "tool_a", "arguments": {}}]});
        let (out, stats) = fix(&[call(&["a"]), result("a", "1"), mixed, only_dup, user("u")]);
        assert_eq!(
            out,
            [call(&["a"]), result("a", "1"), say("again"), user("u")]
        );
        assert_eq!(stats.dropped_duplicate_tool_calls, 2);
    }

    #[test]
    fn error_and_aborted_turns_lose_their_calls_and_get_no_results() {
        let aborted = json!({"role": "assistant", "stopReason": "aborted", "content": [
            {"type": "text", "text": "partial"},
            {"type": "toolCall", "id": "a", "name": "tool_a", "arguments": {}}]});
        let errored = json!({"role": "assistant", "stop_reason": "error", "content": [
            {"type": "toolCall", "id": "b", "name": "tool_b", "arguments": {}}]});
        let (out, stats) = fix(&[user("q"), aborted, errored, call(&["a"]), result("a", "1")]);
        let stripped = json!({"role": "assistant", "stopReason": "aborted", "content": [{"type": "text", "text": "partial"}]});
        // The aborted turn did not claim "a": the later valid call keeps it.
        assert_eq!(out, [user("q"), stripped, call(&["a"]), result("a", "1")]);
        assert_eq!(stats.stripped_terminal_tool_calls, 2);
        assert_eq!(stats.synthetic_tool_results, 0);
    }

    #[test]
    fn a_real_result_replaces_a_synthetic_one() {
        let (out, _) = fix(&[call(&["a"]), missing("a", "tool_a"), result("a", "real")]);
        assert_eq!(out, [call(&["a"]), result("a", "real")]);
    }

    #[test]
    fn late_results_are_found_past_display_only_and_calling_assistants() {
        let (out, _) = fix(&[call(&["a"]), say("thinking aloud"), result("a", "1")]);
        assert_eq!(out, [call(&["a"]), result("a", "1"), say("thinking aloud")]);
        let (out, stats) = fix(&[
            call(&["a"]),
            call(&["b"]),
            result("b", "2"),
            result("a", "1"),
        ]);
        assert_eq!(
            out,
            [
                call(&["a"]),
                result("a", "1"),
                call(&["b"]),
                result("b", "2")
            ]
        );
        assert_eq!(stats.synthetic_tool_results, 0);
    }

    #[test]
    fn a_single_function_call_gets_its_reasoning_first() {
        let m = json!({"role": "assistant", "content": [
            {"type": "functionCall", "call_id": "f1", "name": "run", "arguments": "{}"},
            {"type": "reasoning", "id": "rs_1"}]});
        let (out, _) = fix(&[m, result("f1", "ok")]);
        assert_eq!(out[0]["content"][0]["type"], "reasoning");
        assert_eq!(out[0]["content"][1]["call_id"], "f1");
        assert_eq!(out[1], result("f1", "ok"));
    }

    #[test]
    fn changed_messages_lose_their_cached_tokens() {
        let aborted = json!({"role": "assistant", "stopReason": "error", "content": [
            {"type": "text", "text": "partial"},
            {"type": "toolCall", "id": "a", "name": "tool_a", "arguments": {}}]});
        let mut stats = RepairStats::default();
        let out = repair(entries(&[user("q"), aborted]), &mut stats);
        assert_eq!(out[0].tokens, Some(1));
        assert_eq!(out[1].tokens, None);
    }
}
