//! The context list a compaction run works on in memory: the stored items in order,
//! each with its stored ordinal (a run leaves gaps until its phase ends), and their
//! token sum kept up to date. A pass plans from it, and a written (or queued) pass
//! is applied to it, without re-reading the list or summing it again: replacing a
//! run moves only the shorter side of the list (the few summaries before a leaf
//! chunk, not the many messages after it), so a pass costs the same at any length.

use super::pass::snapshot_tokens;
use crate::store::messages::ContextItem;

/// Spent slots at the front are dropped once they are this many and half the buffer.
const RECLAIM_AT: usize = 1024;

/// The in-memory context list (see the module doc).
#[derive(Debug, Clone)]
pub struct ContextList {
    /// The list is `items[front..]`; the slots before `front` are spent.
    items: Vec<ContextItem>,
    front: usize,
    tokens: i64,
}

impl ContextList {
    /// A list as read from the store (ordinal order).
    pub fn new(items: Vec<ContextItem>) -> ContextList {
        let tokens = snapshot_tokens(&items);
        ContextList {
            items,
            front: 0,
            tokens,
        }
    }

    /// The items, in order.
    pub fn items(&self) -> &[ContextItem] {
        &self.items[self.front..]
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.items.len() - self.front
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Σ tokens of the items (the stored context token count).
    pub fn tokens(&self) -> i64 {
        self.tokens
    }

    /// The last item's ordinal + 1 (what the store reports as `next_ordinal`).
    pub fn next_ordinal(&self) -> i64 {
        self.items().last().map_or(0, |i| i.ordinal + 1)
    }

    /// Whether the ordinals are not 0..n-1.
    pub fn has_gaps(&self) -> bool {
        self.items()
            .iter()
            .enumerate()
            .any(|(i, item)| item.ordinal != i as i64)
    }

    /// Numbers the items 0..n-1 (what closing the stored list's gaps did).
    pub fn renumber(&mut self) {
        let front = self.front;
        for (i, item) in self.items[front..].iter_mut().enumerate() {
            item.ordinal = i as i64;
        }
    }

    /// Replaces the `count` (≥ 1) items from index `start` by `item`, moving the
    /// shorter side: the items before the run when they are fewer than those after
    /// it, else the items after it. Other items keep their ordinals.
    pub fn replace(&mut self, start: usize, count: usize, item: ContextItem) {
        let (abs, end) = (self.front + start, self.front + start + count);
        let removed = snapshot_tokens(&self.items[abs..end]);
        self.tokens += snapshot_tokens(std::slice::from_ref(&item)) - removed;
        if count == 0 || start > self.items.len() - end {
            self.items.splice(abs..end, std::iter::once(item));
            return;
        }
        // The item takes the run's last slot; the items before the run move up
        // behind it over the rest of the run, which ends up in front (spent).
        self.items[end - 1] = item;
        self.items[self.front..end - 1].rotate_right(count - 1);
        self.front += count - 1;
        if self.front >= RECLAIM_AT && self.front * 2 >= self.items.len() {
            self.items.drain(..self.front);
            self.front = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(ordinal: i64, tokens: i64) -> ContextItem {
        ContextItem {
            ordinal,
            item_type: crate::store::messages::ContextItemType::Message,
            message_id: Some(ordinal + 100),
            summary_id: None,
            token_count: tokens,
            depth: None,
            role: Some("user".into()),
        }
    }

    fn summary(ordinal: i64, tokens: i64) -> ContextItem {
        ContextItem {
            ordinal,
            item_type: crate::store::messages::ContextItemType::Summary,
            message_id: None,
            summary_id: Some(format!("s{ordinal}")),
            token_count: tokens,
            depth: Some(0),
            role: None,
        }
    }

    /// Replacing runs anywhere gives what a plain splice gives, tokens included,
    /// across reclaims of the spent front.
    #[test]
    fn replace_matches_a_splice_on_both_sides() {
        let n = 5000;
        let mut list = ContextList::new((0..n).map(|i| item(i, i % 7 - 1)).collect());
        let mut plain: Vec<ContextItem> = list.items().to_vec();
        let mut seed = 11u64;
        let mut rnd = |m: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            (seed >> 33) as usize % m
        };
        while plain.len() > 3 {
            let start = if rnd(3) == 0 {
                rnd(plain.len() - 1)
            } else {
                rnd(plain.len().min(40))
            };
            let count = 1 + rnd((plain.len() - start).min(60));
            let s = summary(plain[start].ordinal, rnd(50) as i64);
            plain.splice(start..start + count, std::iter::once(s.clone()));
            list.replace(start, count, s);
            assert_eq!(list.len(), plain.len());
            let same = list
                .items()
                .iter()
                .zip(&plain)
                .all(|(a, b)| a.ordinal == b.ordinal && a.summary_id == b.summary_id);
            assert!(same);
            assert_eq!(
                list.tokens(),
                plain.iter().map(|i| i.token_count.max(0)).sum::<i64>()
            );
        }
        assert_eq!(list.next_ordinal(), plain.last().unwrap().ordinal + 1);
        assert!(list.has_gaps());
        list.renumber();
        assert!(!list.has_gaps());
    }
}
