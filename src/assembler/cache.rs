//! What the previous assembly of a conversation prepared, kept so the next turn —
//! whose context is mostly the same — does not re-render the same summaries or
//! rebuild the same messages.
//!
//! Nothing is trusted blindly: a cached summary is used only when the row read this
//! turn has the same kind, depth, descendant count, times and content (its source
//! links are written once, with the summary); a cached message only when its stored
//! content and envelope are unchanged (message rows are immutable). After each
//! assembly the cache holds exactly the items that assembly used, so its size
//! follows the budget; at most [`MAX_CONVERSATIONS`] conversations are kept.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::Mutex;

use super::xml::{escape_text, SummaryView};
use crate::store::context::MessageColumns;

/// Conversations whose last assembly is kept.
pub const MAX_CONVERSATIONS: usize = 8;

/// The per-engine cache; cheap to share (one short lock per assembly).
#[derive(Debug, Default)]
pub struct Cache {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    by_conversation: HashMap<i64, Prepared>,
    /// Least recently used first.
    order: VecDeque<i64>,
}

/// The items one assembly of a conversation prepared.
#[derive(Debug, Default)]
pub struct Prepared {
    /// Summary id → its presentation.
    pub summaries: HashMap<String, CachedSummary>,
    /// Message id → its rebuilt form.
    pub messages: HashMap<i64, CachedMessage>,
}

/// A summary's presentation and the row it was made from.
#[derive(Debug, Clone)]
pub struct CachedSummary {
    /// The row it was rendered from, parents included, content left out (it is in
    /// `text`, escaped, at `content`).
    pub view: SummaryView,
    /// The rendered element.
    pub text: String,
    /// Where the escaped content sits in `text`.
    pub content: Range<usize>,
    /// Its token estimate.
    pub cost: i64,
    /// Its wire count as a user message ([`super::wire_tokens`]).
    pub wire: i64,
}

/// A rebuilt message and the stored columns it was rebuilt from.
#[derive(Debug, Clone)]
pub struct CachedMessage {
    /// messages.content when it was rebuilt.
    pub content: String,
    /// messages.lcm_envelope when it was rebuilt.
    pub envelope: Option<String>,
    /// The message as presented (shared with the assemblies that use it).
    pub message: super::SharedMessage,
    /// Whether presenting it downgraded a tool result.
    pub downgraded: bool,
    /// Its wire count as presented ([`super::wire_tokens`]).
    pub wire: i64,
}

impl Cache {
    /// An empty cache.
    pub fn new() -> Cache {
        Cache::default()
    }

    /// Takes a conversation's prepared items out (empty when none), so the
    /// assembly works without holding the lock.
    pub fn take(&self, conversation_id: i64) -> Prepared {
        let Ok(mut inner) = self.inner.lock() else {
            return Prepared::default();
        };
        inner.order.retain(|c| *c != conversation_id);
        inner
            .by_conversation
            .remove(&conversation_id)
            .unwrap_or_default()
    }

    /// Takes every conversation's prepared items out, leaving the cache empty (a
    /// closing engine drops them off the threads a host waits on).
    pub fn drain(&self) -> Vec<Prepared> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.order.clear();
        inner.by_conversation.drain().map(|(_, p)| p).collect()
    }

    /// Stores what an assembly used, evicting the least recently used conversation
    /// beyond [`MAX_CONVERSATIONS`].
    pub fn put(&self, conversation_id: i64, prepared: Prepared) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        inner.order.retain(|c| *c != conversation_id);
        inner.order.push_back(conversation_id);
        inner.by_conversation.insert(conversation_id, prepared);
        while inner.order.len() > MAX_CONVERSATIONS {
            if let Some(old) = inner.order.pop_front() {
                inner.by_conversation.remove(&old);
            }
        }
    }
}

impl CachedSummary {
    /// True when `row` (read this turn, parents possibly not loaded) is the row this
    /// presentation was made from.
    pub fn matches(&self, row: &SummaryView) -> bool {
        let v = &self.view;
        v.kind == row.kind
            && v.depth == row.depth
            && v.descendant_count == row.descendant_count
            && v.earliest_at == row.earliest_at
            && v.latest_at == row.latest_at
            && self.content_is(&row.content)
    }

    /// Whether the escaped content held here is `raw`'s. Escaping turns every
    /// special byte (`&` included) into an entity that starts with `&`, so a cached
    /// content without `&` is its raw text unchanged: compared as is, with no
    /// escaping per turn.
    fn content_is(&self, raw: &str) -> bool {
        let Some(cached) = self.text.get(self.content.clone()) else {
            return false;
        };
        match memchr::memchr(b'&', cached.as_bytes()) {
            None => cached == raw,
            Some(_) => cached == escape_text(raw),
        }
    }
}

impl CachedMessage {
    /// True when the stored columns are those this message was rebuilt from.
    pub fn matches(&self, stored: &MessageColumns) -> bool {
        self.content == stored.content && self.envelope.as_deref() == stored.envelope
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cached(content: &str) -> (CachedSummary, SummaryView) {
        let view = SummaryView {
            summary_id: "sum_0123456789abcdef".into(),
            kind: crate::store::summaries::SummaryKind::Leaf,
            depth: 0,
            descendant_count: 0,
            earliest_at: None,
            latest_at: None,
            created_at: None,
            parents: Vec::new(),
            content: content.into(),
        };
        let format = crate::config::SummaryFormat::Xml;
        let text = super::super::xml::render(&view, format, crate::timeformat::Zone::utc());
        let range = super::super::xml::content_range(&text, format).unwrap();
        let c = CachedSummary {
            view: SummaryView {
                content: String::new(),
                ..view.clone()
            },
            text,
            content: range,
            cost: 0,
            wire: 0,
        };
        (c, view)
    }

    #[test]
    fn a_cached_summary_matches_exactly_its_own_content() {
        let with = |row: &SummaryView, content: &str| SummaryView {
            content: content.into(),
            ..row.clone()
        };
        for old in [
            "plain text",
            "a & b < c",
            "&amp; literal",
            "漢字 😀 \u{a0}",
            "",
        ] {
            let (c, row) = cached(old);
            assert!(c.matches(&row), "{old:?}");
            for new in [
                "plain text",
                "plain texT",
                "a &amp; b &lt; c",
                "a & b < c",
                "&amp;amp; literal",
                "&amp; literal",
                "",
            ] {
                assert_eq!(
                    c.matches(&with(&row, new)),
                    new == old,
                    "{old:?} vs {new:?}"
                );
            }
        }
    }

    #[test]
    fn keeps_the_most_recent_conversations() {
        let c = Cache::new();
        for id in 0..(MAX_CONVERSATIONS as i64 + 3) {
            let mut p = Prepared::default();
            p.messages.insert(
                id,
                CachedMessage {
                    content: String::new(),
                    envelope: None,
                    message: crate::assembler::SharedMessage::new(serde_json::Value::Null),
                    downgraded: false,
                    wire: 0,
                },
            );
            c.put(id, p);
        }
        assert!(c.take(0).messages.is_empty(), "evicted");
        assert!(c.take(3).messages.contains_key(&3));
        assert!(c.take(3).messages.is_empty(), "taken out");
    }
}
