//! Pure selection over a snapshot of the context list: where the fresh tail starts,
//! which raw messages the next leaf pass takes, and which same-depth run of
//! summaries the next condensed pass takes. No I/O; every boundary is unit-tested.

use crate::assembler::tail::{self, is_raw};
use crate::config::EngineOptions;
use crate::store::messages::ContextItem;

/// The knobs selection depends on, resolved from the engine options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Newest raw messages protected from compaction (0 disables the tail).
    pub fresh_tail_count: i64,
    /// Optional token cap on the tail (never splits the newest user turn).
    pub fresh_tail_max_tokens: Option<i64>,
    /// Token cap of one chunk (leaf and condensed).
    pub chunk_tokens: i64,
    /// Depth-0 summaries needed before they are condensed.
    pub leaf_min_fanout: i64,
    /// Depth ≥ 1 summaries needed before they are condensed.
    pub condensed_min_fanout: i64,
    /// Fanout of any depth under pressure.
    pub hard_fanout: i64,
    /// Minimum tokens of a condensed chunk: max(condensedTargetTokens, ⌊leafChunkTokens × 0.1⌋).
    pub condensed_min_chunk_tokens: i64,
}

impl Limits {
    /// Resolves the limits from the options.
    pub fn from_options(o: &EngineOptions) -> Limits {
        Limits {
            fresh_tail_count: o.fresh_tail_count.max(0),
            fresh_tail_max_tokens: o.fresh_tail_max_tokens.filter(|t| *t >= 0),
            chunk_tokens: o.leaf_chunk_tokens.max(1),
            leaf_min_fanout: o.leaf_min_fanout.max(1),
            condensed_min_fanout: o.condensed_min_fanout.max(1),
            hard_fanout: o.condensed_min_fanout_hard.max(1),
            condensed_min_chunk_tokens: o.condensed_target_tokens.max(o.leaf_chunk_tokens / 10),
        }
    }

    /// The limits of a call under `budget`: the tail capped by
    /// [`crate::config::fresh_tail_cap`].
    pub fn for_budget(o: &EngineOptions, budget: i64) -> Limits {
        Limits {
            fresh_tail_max_tokens: crate::config::fresh_tail_cap(o, budget).filter(|t| *t >= 0),
            ..Limits::from_options(o)
        }
    }

    /// Sources a condensed pass over summaries of `depth` needs.
    pub fn fanout(&self, depth: i64, hard: bool) -> i64 {
        match (hard, depth) {
            (true, _) => self.hard_fanout,
            (false, 0) => self.leaf_min_fanout,
            (false, _) => self.condensed_min_fanout,
        }
    }
}

fn summary_depth(item: &ContextItem) -> Option<i64> {
    match (&item.summary_id, item.item_type.as_str()) {
        (Some(_), "summary") => Some(item.depth.unwrap_or(0)),
        _ => None,
    }
}

fn tokens_of(item: &ContextItem) -> i64 {
    item.token_count.max(0)
}

/// Index (into `items`) of the first item of the fresh tail; `items.len()` when
/// there is no tail. The rule is the assembler's ([`tail::fresh_tail_index`]), so
/// compaction never compacts what assembly protects.
pub fn fresh_tail_start(items: &[ContextItem], limits: &Limits) -> usize {
    tail::fresh_tail_index(items, limits.fresh_tail_count, limits.fresh_tail_max_tokens)
}

/// Σ tokens of raw messages before the tail (the leaf trigger's measure).
pub fn raw_tokens_before(items: &[ContextItem], tail: usize) -> i64 {
    items[..tail.min(items.len())]
        .iter()
        .filter(|i| is_raw(i))
        .map(tokens_of)
        .sum()
}

/// A run of raw messages for one leaf pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafChunk {
    /// Index of the first item in the snapshot.
    pub start: usize,
    /// The messages, in context order.
    pub message_ids: Vec<i64>,
    /// Σ of their stored token counts.
    pub tokens: i64,
}

/// The oldest contiguous run of raw messages before the tail: leading summaries are
/// skipped, a summary ends the run, and the run stops before exceeding `chunk_tokens`
/// (always at least one message, so an oversized message is a chunk of its own) or
/// once it reaches the cap.
pub fn oldest_leaf_chunk(items: &[ContextItem], tail: usize, limits: &Limits) -> Option<LeafChunk> {
    let window = &items[..tail.min(items.len())];
    let start = window.iter().position(is_raw)?;
    let mut chunk = LeafChunk {
        start,
        message_ids: Vec::new(),
        tokens: 0,
    };
    for item in window[start..].iter().take_while(|i| is_raw(i)) {
        let t = tokens_of(item);
        if !chunk.message_ids.is_empty() && chunk.tokens + t > limits.chunk_tokens {
            break;
        }
        chunk.message_ids.extend(item.message_id);
        chunk.tokens += t;
        if chunk.tokens >= limits.chunk_tokens {
            break;
        }
    }
    Some(chunk)
}

/// A run of same-depth summaries for one condensed pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryChunk {
    /// Index of the first item in the snapshot.
    pub start: usize,
    /// Depth of the sources (the new summary gets depth + 1).
    pub depth: i64,
    /// The summaries, in context order.
    pub summary_ids: Vec<String>,
    /// Σ of their token counts.
    pub tokens: i64,
}

/// The oldest contiguous run of summaries of `depth` before the tail. Until the run
/// starts, other items are skipped; after it starts, a raw message or a summary of
/// another depth ends it (depths never mix). Capped like a leaf chunk.
pub fn oldest_chunk_at_depth(
    items: &[ContextItem],
    tail: usize,
    depth: i64,
    limits: &Limits,
) -> Option<SummaryChunk> {
    let window = &items[..tail.min(items.len())];
    let start = window
        .iter()
        .position(|i| summary_depth(i) == Some(depth))?;
    let mut chunk = SummaryChunk {
        start,
        depth,
        summary_ids: Vec::new(),
        tokens: 0,
    };
    for item in window[start..]
        .iter()
        .take_while(|i| summary_depth(i) == Some(depth))
    {
        let t = tokens_of(item);
        if !chunk.summary_ids.is_empty() && chunk.tokens + t > limits.chunk_tokens {
            break;
        }
        chunk.summary_ids.extend(item.summary_id.clone());
        chunk.tokens += t;
        if chunk.tokens >= limits.chunk_tokens {
            break;
        }
    }
    Some(chunk)
}

/// Whether a chunk may be condensed: enough sources for its depth's fanout and at
/// least the minimum chunk tokens.
pub fn is_eligible(chunk: &SummaryChunk, limits: &Limits, hard: bool) -> bool {
    chunk.summary_ids.len() as i64 >= limits.fanout(chunk.depth, hard)
        && chunk.tokens >= limits.condensed_min_chunk_tokens
}

/// Distinct depths of the summaries before the tail, ascending.
pub fn depths_before(items: &[ContextItem], tail: usize) -> Vec<i64> {
    let mut d: Vec<i64> = items[..tail.min(items.len())]
        .iter()
        .filter_map(summary_depth)
        .collect();
    d.sort_unstable();
    d.dedup();
    d
}

/// The shallowest depth (below `max_depth`, when given) whose oldest run is
/// eligible, and that run.
pub fn condensation_candidate(
    items: &[ContextItem],
    tail: usize,
    limits: &Limits,
    hard: bool,
    max_depth: Option<i64>,
) -> Option<SummaryChunk> {
    depths_before(items, tail)
        .into_iter()
        .filter(|d| max_depth.is_none_or(|m| *d < m))
        .filter_map(|d| oldest_chunk_at_depth(items, tail, d, limits))
        .find(|c| is_eligible(c, limits, hard))
}

/// Whether a sweep should condense: the summaries before the fresh tail (index
/// `tail`) weigh more than `prefix_target` tokens, or the whole list more than
/// `target`.
pub fn under_pressure(items: &[ContextItem], tail: usize, prefix_target: i64, target: i64) -> bool {
    let prefix: i64 = items[..tail.min(items.len())]
        .iter()
        .filter(|i| summary_depth(i).is_some())
        .map(|i| i.token_count)
        .sum();
    prefix > prefix_target || items.iter().map(|i| i.token_count).sum::<i64>() > target
}

/// Ids of up to `n` summaries before index `before` (optionally only of `depth`),
/// oldest first: the previous_context of a pass.
pub fn previous_summaries(
    items: &[ContextItem],
    before: usize,
    depth: Option<i64>,
    n: usize,
) -> Vec<String> {
    let mut ids: Vec<String> = items[..before.min(items.len())]
        .iter()
        .rev()
        .filter(|i| summary_depth(i).is_some_and(|d| depth.is_none_or(|want| d == want)))
        .filter_map(|i| i.summary_id.clone())
        .take(n)
        .collect();
    ids.reverse();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: &str, tokens: i64) -> ContextItem {
        ContextItem {
            ordinal: 0,
            item_type: crate::store::messages::ContextItemType::Message,
            message_id: Some(0),
            summary_id: None,
            token_count: tokens,
            depth: None,
            role: Some(role.into()),
        }
    }

    fn sum(depth: i64, tokens: i64) -> ContextItem {
        ContextItem {
            ordinal: 0,
            item_type: crate::store::messages::ContextItemType::Summary,
            message_id: None,
            summary_id: Some(String::new()),
            token_count: tokens,
            depth: Some(depth),
            role: None,
        }
    }

    /// Numbers ordinals and ids so chunks can be asserted by id.
    fn list(mut items: Vec<ContextItem>) -> Vec<ContextItem> {
        for (i, it) in items.iter_mut().enumerate() {
            it.ordinal = i as i64;
            if it.message_id.is_some() {
                it.message_id = Some(i as i64 + 100);
            } else {
                it.summary_id = Some(format!("s{i}"));
            }
        }
        items
    }

    fn limits(tail: i64) -> Limits {
        Limits {
            fresh_tail_count: tail,
            fresh_tail_max_tokens: None,
            chunk_tokens: 100,
            leaf_min_fanout: 3,
            condensed_min_fanout: 2,
            hard_fanout: 2,
            condensed_min_chunk_tokens: 20,
        }
    }

    #[test]
    fn tail_starts_at_the_nth_newest_raw_message() {
        let items = list(vec![
            sum(0, 10),
            msg("user", 5),
            msg("assistant", 5),
            msg("user", 5),
            msg("assistant", 5),
        ]);
        assert_eq!(fresh_tail_start(&items, &limits(2)), 3);
        assert_eq!(fresh_tail_start(&items, &limits(4)), 1);
        assert_eq!(fresh_tail_start(&items, &limits(9)), 1, "all raw protected");
        assert_eq!(
            fresh_tail_start(&items, &limits(0)),
            5,
            "0 disables the tail"
        );
        assert_eq!(fresh_tail_start(&[], &limits(3)), 0);
    }

    #[test]
    fn tail_never_splits_the_newest_user_turn() {
        // The newest user message is 4 raw messages back; a tail of 2 grows to it.
        let items = list(vec![
            msg("user", 5),
            msg("assistant", 5),
            msg("user", 5),
            msg("assistant", 5),
            msg("toolResult", 5),
            msg("assistant", 5),
        ]);
        assert_eq!(fresh_tail_start(&items, &limits(2)), 2);
        // A token cap cannot cut into that turn either …
        let mut l = limits(2);
        l.fresh_tail_max_tokens = Some(1);
        assert_eq!(fresh_tail_start(&items, &l), 2);
        // … but it stops the tail from growing past it.
        let mut l = limits(5);
        l.fresh_tail_max_tokens = Some(20);
        assert_eq!(fresh_tail_start(&items, &l), 2);
        l.fresh_tail_max_tokens = Some(25);
        assert_eq!(fresh_tail_start(&items, &l), 1);
    }

    #[test]
    fn leaf_chunk_is_the_oldest_contiguous_raw_run_capped_at_chunk_tokens() {
        let items = list(vec![
            sum(0, 10),
            msg("user", 40),
            msg("assistant", 40),
            msg("user", 40),
            sum(0, 10),
            msg("user", 5),
        ]);
        let c = oldest_leaf_chunk(&items, items.len(), &limits(0)).unwrap();
        assert_eq!(
            (c.start, c.message_ids.clone(), c.tokens),
            (1, vec![101, 102], 80)
        );
        // A summary ends the run.
        let items = list(vec![msg("user", 10), sum(0, 10), msg("user", 10)]);
        let c = oldest_leaf_chunk(&items, 3, &limits(0)).unwrap();
        assert_eq!(c.message_ids, vec![100]);
        // Nothing before the tail → no chunk.
        assert_eq!(oldest_leaf_chunk(&items, 0, &limits(0)), None);
    }

    #[test]
    fn an_oversized_message_is_a_chunk_of_its_own_and_reaching_the_cap_stops() {
        let items = list(vec![msg("user", 500), msg("assistant", 10)]);
        let c = oldest_leaf_chunk(&items, 2, &limits(0)).unwrap();
        assert_eq!((c.message_ids.len(), c.tokens), (1, 500));
        let items = list(vec![msg("user", 60), msg("assistant", 40), msg("user", 1)]);
        let c = oldest_leaf_chunk(&items, 3, &limits(0)).unwrap();
        assert_eq!(
            (c.message_ids.len(), c.tokens),
            (2, 100),
            "exactly at the cap"
        );
        let items = list(vec![msg("user", 60), msg("assistant", 41), msg("user", 1)]);
        let c = oldest_leaf_chunk(&items, 3, &limits(0)).unwrap();
        assert_eq!(c.message_ids.len(), 1, "one token over the cap stays out");
    }

    #[test]
    fn condensed_chunks_are_contiguous_and_never_mix_depths() {
        let items = list(vec![
            sum(1, 10),
            sum(0, 10),
            sum(0, 10),
            sum(1, 10),
            sum(0, 10),
            msg("user", 10),
        ]);
        let c = oldest_chunk_at_depth(&items, 6, 0, &limits(0)).unwrap();
        assert_eq!(c.summary_ids, ["s1", "s2"]);
        let c = oldest_chunk_at_depth(&items, 6, 1, &limits(0)).unwrap();
        assert_eq!(c.summary_ids, ["s0"], "a depth mismatch ends the run");
        assert_eq!(depths_before(&items, 6), [0, 1]);
        assert_eq!(oldest_chunk_at_depth(&items, 6, 2, &limits(0)), None);
    }

    #[test]
    fn fanout_and_minimum_tokens_gate_condensation_shallowest_first() {
        let items = list(vec![
            sum(0, 10),
            sum(0, 10),
            sum(1, 15),
            sum(1, 15),
            msg("user", 1),
        ]);
        let l = limits(0);
        // d0 has 2 < leafMinFanout 3; d1 has 2 ≥ 2 and 30 ≥ 20 tokens.
        let c = condensation_candidate(&items, 5, &l, false, None).unwrap();
        assert_eq!((c.depth, c.summary_ids.len()), (1, 2));
        // Under pressure the hard fanout (2) admits d0 first.
        let c = condensation_candidate(&items, 5, &l, true, None).unwrap();
        assert_eq!(c.depth, 0);
        // A depth limit excludes d1.
        assert_eq!(condensation_candidate(&items, 5, &l, false, Some(1)), None);
        // Below the minimum chunk tokens nothing is eligible.
        let mut strict = l;
        strict.condensed_min_chunk_tokens = 31;
        assert_eq!(condensation_candidate(&items, 5, &strict, true, None), None);
        // The tail hides what is after it.
        assert_eq!(condensation_candidate(&items, 2, &l, false, None), None);
    }

    #[test]
    fn limits_follow_the_options() {
        let o = EngineOptions::default();
        let l = Limits::from_options(&o);
        assert_eq!(l.condensed_min_chunk_tokens, 2000);
        assert_eq!(
            (l.fanout(0, false), l.fanout(3, false), l.fanout(0, true)),
            (8, 4, 2)
        );
        let o = EngineOptions {
            leaf_chunk_tokens: 50_000,
            condensed_target_tokens: 100,
            ..EngineOptions::default()
        };
        assert_eq!(Limits::from_options(&o).condensed_min_chunk_tokens, 5000);
    }

    #[test]
    fn previous_summaries_are_the_nearest_before_the_chunk_oldest_first() {
        let items = list(vec![
            sum(0, 1),
            sum(1, 1),
            sum(0, 1),
            msg("user", 1),
            sum(0, 1),
        ]);
        assert_eq!(previous_summaries(&items, 3, None, 2), ["s1", "s2"]);
        assert_eq!(previous_summaries(&items, 3, Some(0), 2), ["s0", "s2"]);
        assert_eq!(previous_summaries(&items, 0, None, 2), Vec::<String>::new());
    }
}
