//! Choosing what enters the context, reading the context list newest first: the
//! fresh tail (always), then the newest contiguous run of evictable items that fits
//! the budget next to it. Reading stops at the first evictable item that does not
//! fit, so the cost follows what is returned, not the conversation's length.

use rusqlite::Connection;

use super::cache::{CachedMessage, CachedSummary, Prepared};
use super::tail::{TailWalk, NO_TAIL};
use super::xml::{self, SummaryView};
use super::Settings;
use crate::error::Result;
use crate::message::rebuild::StoredMessage;
use crate::store::context::{self, ContextRow, MessageColumns};
use crate::store::summaries;
use crate::tokens;

/// What an item holds once read.
#[derive(Debug)]
pub enum Body {
    /// A message; None when the row is missing.
    Message(Option<Message>),
    /// A summary's presentation; None when the row is missing.
    Summary(Option<Presented>),
}

/// A message item as read.
#[derive(Debug)]
pub enum Message {
    /// The previous assembly's copy, its stored columns unchanged (message id, copy).
    Cached(i64, CachedMessage),
    /// To rebuild (parts not yet attached).
    Stored(StoredMessage),
}

/// A summary as it enters the context.
#[derive(Debug)]
pub struct Presented {
    /// The rendered element (XML or compact).
    pub text: String,
    /// The message's `timestamp` ([`xml::timestamp_ms`]).
    pub timestamp_ms: i64,
}

/// Where an item ended up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Read, tail not known yet.
    Pending,
    /// In the fresh tail.
    Tail,
    /// Evictable and kept.
    Kept,
    /// Its row is missing; skipped.
    Unresolved,
    /// The first evictable item that did not fit.
    Misfit,
}

/// One context item as read.
#[derive(Debug)]
pub struct Item {
    /// Context ordinal.
    pub ordinal: i64,
    /// Tokens as presented (XML for summaries, stored count for messages).
    pub cost: i64,
    /// The cached wire count, when known.
    pub wire: Option<i64>,
    /// Where it ended up.
    pub state: State,
    /// Its content.
    pub body: Body,
}

impl Item {
    fn new(conn: &Connection, row: ContextRow, s: &Settings, reuse: &mut Reuse) -> Result<Item> {
        let (cost, wire, body) = match (row.is_message, row.summary) {
            (true, _) => {
                let message = row.message.map(|m| message(m, reuse));
                let wire = match &message {
                    Some(Message::Cached(_, hit)) => Some(hit.wire),
                    _ => None,
                };
                (row.tokens.max(0), wire, Body::Message(message))
            }
            (false, Some(view)) => {
                let timestamp_ms = xml::timestamp_ms(&view);
                let (text, cost, wire) =
                    present_summary(conn, view, row.parents_loaded, timestamp_ms, s, reuse)?;
                let body = Body::Summary(Some(Presented { text, timestamp_ms }));
                (cost, Some(wire), body)
            }
            (false, None) => (0, None, Body::Summary(None)),
        };
        Ok(Item {
            ordinal: row.ordinal,
            cost,
            wire,
            state: State::Pending,
            body,
        })
    }

    fn resolved(&self) -> bool {
        match &self.body {
            Body::Message(m) => m.is_some(),
            Body::Summary(s) => s.is_some(),
        }
    }
}

/// The previous turn's copy of a message when its stored columns are unchanged
/// (compared in place, so a hit copies nothing), else the columns to rebuild from.
fn message(m: MessageColumns, reuse: &mut Reuse) -> Message {
    match reuse.old.messages.remove(&m.message_id) {
        Some(hit) if hit.matches(&m) => Message::Cached(m.message_id, hit),
        _ => Message::Stored(m.to_stored()),
    }
}

/// A summary's element and its cost: the previous turn's when the row is unchanged,
/// else rendered now (reading its sources when the stream skipped them).
fn present_summary(
    conn: &Connection,
    mut view: SummaryView,
    parents_loaded: bool,
    timestamp_ms: i64,
    s: &Settings,
    reuse: &mut Reuse,
) -> Result<(String, i64, i64)> {
    let id = view.summary_id.clone();
    if let Some(hit) = reuse.old.summaries.remove(&id).filter(|c| c.matches(&view)) {
        let out = (hit.text.clone(), hit.cost, hit.wire);
        reuse.next.summaries.insert(id, hit);
        return Ok(out);
    }
    if !parents_loaded {
        view.parents = summaries::source_summary_ids(conn, &id)?;
    }
    let text = xml::render(&view, s.format, s.zone);
    let cost = tokens::estimate(&text);
    let wire = super::wire_of_summary(&text, timestamp_ms);
    if let Some(content) = xml::content_range(&text, s.format) {
        view.content = String::new();
        let cached = CachedSummary {
            view,
            text: text.clone(),
            content,
            cost,
            wire,
        };
        reuse.next.summaries.insert(id, cached);
    }
    Ok((text, cost, wire))
}

/// The previous assembly's items and the ones this assembly uses.
#[derive(Debug, Default)]
pub struct Reuse {
    /// What the previous assembly prepared (hits are moved out).
    pub old: Prepared,
    /// What this assembly uses; becomes the cache for the next one.
    pub next: Prepared,
}

/// The outcome of selection.
#[derive(Debug)]
pub struct Selection {
    /// The tail and the kept evictable items, oldest first (unresolved ones out).
    pub items: Vec<Item>,
    /// Where the tail starts ([`NO_TAIL`] without a tail).
    pub tail_start: i64,
    /// Context items in the tail.
    pub tail_items: usize,
    /// Tokens of the tail as presented.
    pub tail_cost: i64,
    /// Evictable items left out for the budget.
    pub dropped: usize,
    /// Items read whose row is missing.
    pub unresolved: usize,
    /// The oldest ordinal of the selection (everything before it was not loaded).
    pub from: i64,
}

/// Streams the context list and selects under `budget`. `total` is the number of
/// context items; `reuse` supplies the previous turn's summaries and collects this
/// turn's.
pub fn select(
    conn: &Connection,
    conversation_id: i64,
    total: i64,
    budget: i64,
    s: &Settings,
    reuse: &mut Reuse,
) -> Result<Selection> {
    let mut sel = Selector::new(budget, s);
    let known: Vec<String> = reuse.old.summaries.keys().cloned().collect();
    context::newest_first(conn, conversation_id, &known, |row| {
        let step = Step {
            is_raw: row.is_raw,
            is_user: row.role == Some("user"),
            tokens: row.tokens,
        };
        let item = Item::new(conn, row, s, reuse)?;
        let ordinal = item.ordinal;
        let older_user = || context::user_before(conn, conversation_id, ordinal);
        sel.push(item, step, older_user)
    })?;
    Ok(sel.finish(total))
}

/// What the tail rule needs to know about an item.
#[derive(Debug, Clone, Copy)]
struct Step {
    /// Counted by the tail rule (a message item with a message id).
    is_raw: bool,
    is_user: bool,
    /// Stored token count.
    tokens: i64,
}

struct Selector {
    budget: i64,
    walk: TailWalk,
    in_tail: bool,
    tail_start: i64,
    tail_cost: i64,
    room: i64,
    used: i64,
    /// Items read, newest first.
    read: Vec<Item>,
}

impl Selector {
    fn new(budget: i64, s: &Settings) -> Selector {
        let in_tail = s.fresh_tail_count > 0;
        Selector {
            budget,
            walk: TailWalk::new(s.fresh_tail_count, s.fresh_tail_max_tokens),
            in_tail,
            tail_start: NO_TAIL,
            tail_cost: 0,
            room: if in_tail { 0 } else { budget },
            used: 0,
            read: Vec::new(),
        }
    }

    /// Takes the next older item; false once reading can stop.
    fn push(
        &mut self,
        item: Item,
        step: Step,
        older_user: impl FnOnce() -> Result<bool>,
    ) -> Result<bool> {
        if !self.in_tail {
            self.read.push(item);
            return Ok(self.fit(self.read.len() - 1));
        }
        if step.is_raw
            && !self
                .walk
                .offer(item.ordinal, step.is_user, step.tokens, older_user)?
        {
            self.close_tail();
        }
        self.read.push(item);
        Ok(self.in_tail || self.settle())
    }

    fn close_tail(&mut self) {
        self.in_tail = false;
        self.tail_start = self.walk.start();
    }

    /// Marks the tail, computes the room left, and fits the evictable items already
    /// read (newest first); false when one does not fit.
    fn settle(&mut self) -> bool {
        for item in self
            .read
            .iter_mut()
            .filter(|i| i.ordinal >= self.tail_start)
        {
            item.state = State::Tail;
            self.tail_cost += item.cost;
        }
        self.room = self.budget.saturating_sub(self.tail_cost).max(0);
        for i in 0..self.read.len() {
            if self.read[i].state == State::Pending && !self.fit(i) {
                return false;
            }
        }
        true
    }

    /// Keeps item `i` when it fits; false (stop) when it does not.
    fn fit(&mut self, i: usize) -> bool {
        let item = &mut self.read[i];
        if !item.resolved() {
            item.state = State::Unresolved;
            return true;
        }
        if self.used.saturating_add(item.cost) > self.room {
            item.state = State::Misfit;
            return false;
        }
        self.used += item.cost;
        item.state = State::Kept;
        true
    }

    fn finish(mut self, total: i64) -> Selection {
        if self.in_tail {
            self.close_tail();
            self.settle();
        }
        let count = |f: &dyn Fn(&Item) -> bool| self.read.iter().filter(|i| f(i)).count();
        let tail_items = count(&|i| i.state == State::Tail);
        let kept = count(&|i| i.state == State::Kept);
        let tail_start = self.tail_start;
        let evictable_unresolved =
            count(&|i| i.state == State::Unresolved && i.ordinal < tail_start);
        let unresolved = count(&|i| !i.resolved() && i.state != State::Misfit);
        let evictable_total = usize::try_from(self.tail_start.min(total)).unwrap_or(0);
        let from = self
            .read
            .iter()
            .filter(|i| matches!(i.state, State::Tail | State::Kept | State::Unresolved))
            .map(|i| i.ordinal)
            .min()
            .unwrap_or(total);
        let mut items: Vec<Item> = self
            .read
            .into_iter()
            .filter(|i| matches!(i.state, State::Tail | State::Kept) && i.resolved())
            .collect();
        items.reverse();
        Selection {
            items,
            tail_start,
            tail_items,
            tail_cost: self.tail_cost,
            dropped: evictable_total.saturating_sub(kept + evictable_unresolved),
            unresolved,
            from,
        }
    }
}
