//! The hard budget: what `assemble` returns never exceeds `tokenBudget` unless the
//! newest user turn alone does. When the selected context (the fresh tail included)
//! or the host's live messages are over the budget, the oldest messages are dropped
//! first, never the newest user message or anything after it; a tool result whose
//! call was dropped goes with it, so the output never starts a pair half-way and
//! never ends on a call without its result (the end is never touched).

use std::collections::HashSet;

use serde_json::Value;

use super::pairing::{call_id, field, is_tool_call, result_id, role};

/// What the clamp keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clamp {
    /// One flag per message: kept or not.
    pub keep: Vec<bool>,
    /// Messages dropped for the budget.
    pub dropped: usize,
    /// Their tokens.
    pub dropped_tokens: i64,
    /// Tokens of the kept messages.
    pub tokens: i64,
}

/// Clamps `messages` (with their token `costs`) to `budget`.
pub fn clamp(messages: &[&Value], costs: &[i64], budget: i64) -> Clamp {
    let n = messages.len();
    let mut keep = vec![true; n];
    let mut tokens: i64 = costs.iter().sum();
    let floor = messages
        .iter()
        .rposition(|m| role(m) == "user")
        .unwrap_or(0);
    let mut dropped_calls: HashSet<&str> = HashSet::new();
    let mut i = 0;
    while tokens > budget && i < floor {
        keep[i] = false;
        tokens -= costs[i];
        dropped_calls.extend(call_ids(messages[i]));
        i += 1;
    }
    for j in i..n {
        if result_id(messages[j]).is_some_and(|id| dropped_calls.contains(id)) {
            keep[j] = false;
            tokens -= costs[j];
        }
    }
    let dropped = keep.iter().filter(|k| !**k).count();
    let dropped_tokens = costs.iter().sum::<i64>() - tokens;
    Clamp {
        keep,
        dropped,
        dropped_tokens,
        tokens,
    }
}

fn call_ids(m: &Value) -> impl Iterator<Item = &str> {
    field(m, "content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| is_tool_call(b))
        .filter_map(call_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drops_oldest_first_keeps_the_newest_user_turn_and_orphan_results_go_too() {
        let m = [
            json!({"role":"user","content":"old"}),
            json!({"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"x","arguments":{}}]}),
            json!({"role":"toolResult","toolCallId":"c1","content":[{"type":"text","text":"r"}]}),
            json!({"role":"assistant","content":[{"type":"text","text":"mid"}]}),
            json!({"role":"user","content":"new"}),
            json!({"role":"assistant","content":[{"type":"text","text":"answer"}]}),
        ];
        let refs: Vec<&Value> = m.iter().collect();
        let costs = [10, 10, 10, 10, 10, 10];
        let c = clamp(&refs, &costs, 35);
        assert_eq!(c.keep, [false, false, false, true, true, true]);
        assert_eq!((c.dropped, c.dropped_tokens, c.tokens), (3, 30, 30));
        // The call dropped, its result goes with it even though it would fit.
        let c = clamp(&refs, &costs, 45);
        assert_eq!(c.keep, [false, false, false, true, true, true]);
        assert_eq!(c.tokens, 30);
        let c = clamp(&refs, &costs, 50);
        assert_eq!(c.keep, [false, true, true, true, true, true]);
        // The newest user turn stays even when it alone is over.
        let c = clamp(&refs, &costs, 5);
        assert_eq!(c.keep, [false, false, false, false, true, true]);
        assert_eq!(c.tokens, 20);
        // Under the budget nothing changes.
        assert_eq!(clamp(&refs, &costs, 60).dropped, 0);
    }
}
