//! The fresh-tail rule shared by assembly and compaction: which newest raw messages
//! are protected (never evicted from context, never compacted).
//!
//! Walk the raw-message items from newest to oldest, protecting each one, and stop
//! once `count` items are protected **and** the newest user message is among them;
//! stop earlier when the next item would take the protected tokens over `max_tokens`,
//! but only after the newest user message and at least one item are protected. So the
//! newest user turn (the user message and everything after it) is never split.

use crate::error::Result;
use crate::store::messages::ContextItem;

/// The tail-start value meaning "nothing is protected": every ordinal is below it.
pub const NO_TAIL: i64 = i64::MAX;

/// Whether the fresh-tail rule counts an item: a message item with a message id
/// (a "raw message"; summaries and dangling message items are not counted).
pub fn is_raw(item: &ContextItem) -> bool {
    item.item_type == crate::store::messages::ContextItemType::Message && item.message_id.is_some()
}

fn is_user(item: &ContextItem) -> bool {
    item.role.as_deref() == Some("user")
}

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
    items
        .get(fresh_tail_index(items, count, max_tokens))
        .map_or(NO_TAIL, |i| i.ordinal)
}

/// The same rule as [`fresh_tail_start`], as an index into `items`: the first
/// protected item, `items.len()` when nothing is protected. Compaction works on
/// positions in its snapshot of the list, so it asks for this form.
pub fn fresh_tail_index(items: &[ContextItem], count: i64, max_tokens: Option<i64>) -> usize {
    let any_user = items.iter().filter(|i| is_raw(i)).any(is_user);
    let mut walk = TailWalk::new(count, max_tokens);
    for (idx, item) in items.iter().enumerate().rev().filter(|(_, i)| is_raw(i)) {
        // While no user message has been offered, any user message is older.
        match walk.offer(idx as i64, is_user(item), item.token_count, || Ok(any_user)) {
            Ok(true) => continue,
            _ => break,
        }
    }
    match walk.start() {
        NO_TAIL => items.len(),
        start => usize::try_from(start).unwrap_or(items.len()),
    }
}

/// The fresh-tail rule as a walk over the raw-message items, newest first, for
/// callers that read the context list lazily (assembly streams it). The newest user
/// message need not be known in advance: when the rule depends on whether an older
/// one exists, [`TailWalk::offer`] asks once.
#[derive(Debug, Clone)]
pub struct TailWalk {
    count: i64,
    cap: Option<i64>,
    protected: i64,
    tokens: i64,
    start: i64,
    /// The newest user message, once offered.
    newest_user: Option<i64>,
    /// Whether a user message exists older than everything offered, once asked.
    older_user: Option<bool>,
}

impl TailWalk {
    /// A walk protecting `count` messages, capped at `max_tokens` (negative: no cap).
    pub fn new(count: i64, max_tokens: Option<i64>) -> TailWalk {
        TailWalk {
            count,
            cap: max_tokens.filter(|t| *t >= 0),
            protected: 0,
            tokens: 0,
            start: NO_TAIL,
            newest_user: None,
            older_user: None,
        }
    }

    /// Offers the next older raw message (a message item with a message id); true
    /// when it is protected; negative token counts count as 0. After the
    /// first false the tail is complete and later offers must not be made.
    /// `older_user_exists` answers whether a user message exists older than this one
    /// (asked at most once, only while no user message has been offered).
    pub fn offer(
        &mut self,
        ordinal: i64,
        is_user: bool,
        tokens: i64,
        older_user_exists: impl FnOnce() -> Result<bool>,
    ) -> Result<bool> {
        if self.count <= 0 {
            return Ok(false);
        }
        let tokens = tokens.max(0);
        if is_user && self.newest_user.is_none() {
            self.newest_user = Some(ordinal);
        }
        let over_cap = self
            .cap
            .is_some_and(|c| self.tokens.saturating_add(tokens) > c);
        let limited = self.protected >= self.count || (self.protected > 0 && over_cap);
        if limited && self.user_protected(older_user_exists)? {
            return Ok(false);
        }
        self.start = ordinal;
        self.protected += 1;
        self.tokens = self.tokens.saturating_add(tokens);
        Ok(true)
    }

    /// Whether the newest user message is already protected (trivially so when the
    /// list has no user message).
    fn user_protected(&mut self, older_user_exists: impl FnOnce() -> Result<bool>) -> Result<bool> {
        if let Some(u) = self.newest_user {
            return Ok(self.start <= u);
        }
        let older = match self.older_user {
            Some(v) => v,
            None => *self.older_user.insert(older_user_exists()?),
        };
        Ok(!older)
    }

    /// The tail start so far ([`NO_TAIL`] when nothing is protected).
    pub fn start(&self) -> i64 {
        self.start
    }
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
                    item_type: if *kind == "s" {
                        crate::store::messages::ContextItemType::Summary
                    } else {
                        crate::store::messages::ContextItemType::Message
                    },
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

    /// The index form and the ordinal form are one rule: on random lists (with
    /// gaps in the ordinals, dangling message items, any count and cap) the index
    /// names the item whose ordinal is the start.
    #[test]
    fn index_and_ordinal_forms_agree_on_random_lists() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let kinds = ["u", "a", "t", "s"];
        for _ in 0..2000 {
            let len = next(30) as usize;
            let spec: Vec<(&str, i64)> = (0..len)
                .map(|_| (kinds[next(4) as usize], next(60) as i64 - 5))
                .collect();
            let mut it = items(&spec);
            for (i, item) in it.iter_mut().enumerate() {
                item.ordinal = 3 * i as i64 + 7;
            }
            if len > 0 && next(5) == 0 {
                it[next(len as u64) as usize].message_id = None;
            }
            let count = next(12) as i64 - 1;
            let cap = match next(3) {
                0 => None,
                1 => Some(next(200) as i64),
                _ => Some(-1),
            };
            let idx = fresh_tail_index(&it, count, cap);
            assert!(idx <= it.len());
            let want = it.get(idx).map_or(NO_TAIL, |i| i.ordinal);
            assert_eq!(
                fresh_tail_start(&it, count, cap),
                want,
                "{spec:?} {count} {cap:?}"
            );
            // The tail starts at a raw message, and everything before it is evictable.
            if let Some(first) = it.get(idx) {
                assert!(is_raw(first), "{spec:?} {count} {cap:?}");
            }
        }
    }

    #[test]
    fn negative_cap_means_no_cap() {
        let it = items(&[("u", 10), ("a", 10), ("u", 10)]);
        assert_eq!(fresh_tail_start(&it, 3, Some(-1)), 0);
    }
}
