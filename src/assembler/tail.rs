//! The fresh-tail rule shared by assembly and compaction: which newest raw messages
//! are protected (never evicted from context, never compacted).
//!
//! Walk the raw-message items from newest to oldest, protecting each one, and stop
//! once `count` items are protected **and** the newest user message is among them;
//! stop earlier when the next item would take the protected tokens over `max_tokens`,
//! but only after the newest user message and at least one item are protected. So the
//! newest user turn (the user message and everything after it) is never split.

use crate::store::messages::ContextItem;

/// The tail-start value meaning "nothing is protected": every ordinal is below it.
pub const NO_TAIL: i64 = i64::MAX;

/// The ordinal of the first protected item; [`NO_TAIL`] when nothing is protected
/// (`count <= 0`, or no raw messages). Items with `ordinal < start` are evictable
/// (compaction candidates); items with `ordinal >= start` form the tail, including
/// any summary items that sit among the protected messages.
///
/// `items` must be in ordinal order, as [`crate::store::messages::context_items`]
/// returns them; a message item's `role` is its DB role (`user`, `assistant`,
/// `tool`, `system`) and `token_count` its stored estimate. A negative `max_tokens`
/// means no cap.
pub fn fresh_tail_start(items: &[ContextItem], count: i64, max_tokens: Option<i64>) -> i64 {
    if count <= 0 {
        return NO_TAIL;
    }
    let raw = || items.iter().rev().filter(|i| i.item_type == "message");
    let newest_user = raw()
        .find(|i| i.role.as_deref() == Some("user"))
        .map(|i| i.ordinal);
    let cap = max_tokens.filter(|t| *t >= 0);
    let (mut start, mut protected, mut tokens) = (NO_TAIL, 0i64, 0i64);
    for item in raw() {
        let user_protected = newest_user.is_none_or(|u| start <= u);
        if user_protected && protected >= count {
            break;
        }
        let over_cap = cap.is_some_and(|c| tokens.saturating_add(item.token_count) > c);
        if user_protected && protected > 0 && over_cap {
            break;
        }
        start = item.ordinal;
        protected += 1;
        tokens = tokens.saturating_add(item.token_count);
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Items from a compact spec: `u`/`a`/`t` = user/assistant/tool message, `s` =
    /// summary; each with the given tokens.
    fn items(spec: &[(&str, i64)]) -> Vec<ContextItem> {
        spec.iter()
            .enumerate()
            .map(|(i, (kind, tokens))| {
                let role = match *kind {
                    "u" => Some("user"),
                    "a" => Some("assistant"),
                    "t" => Some("tool"),
                    _ => None,
                };
                ContextItem {
                    ordinal: i as i64,
                    item_type: if *kind == "s" { "summary" } else { "message" }.into(),
                    message_id: role.map(|_| i as i64 + 100),
                    summary_id: (*kind == "s").then(|| format!("sum_{i}")),
                    token_count: *tokens,
                    depth: (*kind == "s").then_some(0),
                    role: role.map(str::to_owned),
                }
            })
            .collect()
    }

    #[test]
    fn protects_the_newest_count_messages() {
        let it = items(&[("s", 9), ("u", 1), ("a", 1), ("u", 1), ("a", 1), ("t", 1)]);
        assert_eq!(fresh_tail_start(&it, 3, None), 3);
        assert_eq!(fresh_tail_start(&it, 5, None), 1);
        assert_eq!(fresh_tail_start(&it, 50, None), 1);
    }

    #[test]
    fn never_splits_the_newest_user_turn() {
        let it = items(&[("u", 1), ("a", 1), ("t", 1), ("a", 1), ("t", 1), ("a", 1)]);
        // Count 2 would start inside the turn; the tail reaches back to the user message.
        assert_eq!(fresh_tail_start(&it, 2, None), 0);
        // The token cap does not cut the newest user turn either.
        assert_eq!(fresh_tail_start(&it, 2, Some(1)), 0);
    }

    #[test]
    fn token_cap_applies_once_the_user_turn_is_protected() {
        let it = items(&[
            ("u", 10),
            ("a", 10),
            ("u", 10),
            ("a", 10),
            ("u", 5),
            ("a", 5),
        ]);
        assert_eq!(fresh_tail_start(&it, 10, Some(19)), 4);
        assert_eq!(fresh_tail_start(&it, 10, Some(20)), 3);
        assert_eq!(fresh_tail_start(&it, 10, Some(30)), 2);
        assert_eq!(fresh_tail_start(&it, 10, None), 0);
        // The newest message alone over the cap is still protected.
        let big = items(&[("u", 10), ("a", 500)]);
        assert_eq!(fresh_tail_start(&big, 1, Some(50)), 0);
        let only = items(&[("a", 10), ("a", 500)]);
        assert_eq!(fresh_tail_start(&only, 5, Some(50)), 1);
    }

    #[test]
    fn no_tail_when_disabled_or_without_messages() {
        let it = items(&[("s", 1), ("s", 1)]);
        assert_eq!(fresh_tail_start(&it, 8, None), NO_TAIL);
        let it = items(&[("u", 1)]);
        assert_eq!(fresh_tail_start(&it, 0, None), NO_TAIL);
        assert_eq!(fresh_tail_start(&[], 8, None), NO_TAIL);
    }

    #[test]
    fn summaries_inside_the_tail_do_not_count() {
        let it = items(&[("u", 1), ("a", 1), ("s", 1), ("u", 1), ("a", 1)]);
        assert_eq!(fresh_tail_start(&it, 3, None), 1);
    }

    #[test]
    fn negative_cap_means_no_cap() {
        let it = items(&[("u", 10), ("a", 10), ("u", 10)]);
        assert_eq!(fresh_tail_start(&it, 3, Some(-1)), 0);
    }
}
