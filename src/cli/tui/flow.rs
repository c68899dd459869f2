//! The rewrite and dissolve state machines of the browser, with no terminal: keys
//! and results in, commands and status lines out (unit-tested in `tests`).
//!
//! One [`RewriteFlow`] serves `w` (one summary: preview → in flight → review) and
//! `W` (a subtree: plan → for each summary bottom-up, in flight → review). Results
//! carry the request number they answer, so a late answer to a cancelled request is
//! ignored.

use std::time::Instant;

use crate::cli::output::plural;
use crate::compaction::CancelToken;
use crate::dagops::dissolve::DissolvePlan;
use crate::rewrite::RewritePreview;
use crate::rewrite::{PlannedSummary, RewriteEntry, RewriteReport};

use super::keys::Key;

/// Something the runner must do (each posts one result message back).
#[derive(Debug, Clone)]
pub enum Cmd {
    /// Rewrite one summary without writing (`report` comes back).
    Rewrite {
        /// Request number.
        req: u64,
        /// The conversation.
        conversation_id: i64,
        /// The summary.
        summary_id: String,
        /// Trips to drop the request.
        cancel: CancelToken,
    },
    /// Write a reviewed text if the stored one is still `expected`.
    Apply {
        /// Request number.
        req: u64,
        /// The conversation.
        conversation_id: i64,
        /// The summary.
        summary_id: String,
        /// The text reviewed against.
        expected: String,
        /// The new text.
        content: String,
    },
    /// Dissolve a context summary (`apply` false: the plan only).
    Dissolve {
        /// The conversation.
        conversation_id: i64,
        /// The summary.
        summary_id: String,
        /// Write it.
        apply: bool,
    },
    /// Reload the summary graph (after a write).
    ReloadDag,
}

/// Where the operator's eyes are in the review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// The stored text.
    Old,
    /// The new text.
    New,
}

/// The review of one new text.
#[derive(Debug, Clone)]
pub struct Review {
    /// The dry-run entry (old and new text, tokens, diff).
    pub entry: RewriteEntry,
    /// Showing the unified diff instead of OLD / NEW.
    pub diff: bool,
    /// Pane Shift+J/K scrolls.
    pub focus: Pane,
    /// Scroll of OLD (or of the diff).
    pub old_scroll: u16,
    /// Scroll of NEW.
    pub new_scroll: u16,
}

impl Review {
    /// The review's own keys: d toggles the diff, tab switches the pane that J/K
    /// scroll (the diff has one pane); any other key does nothing.
    fn navigate(&mut self, key: Key) {
        match key {
            Key::Char('d') => {
                self.diff = !self.diff;
                self.old_scroll = 0;
            }
            Key::Tab => {
                self.focus = match self.focus {
                    Pane::Old => Pane::New,
                    Pane::New => Pane::Old,
                };
            }
            Key::Char('J') | Key::Char('K') => {
                let target = if self.diff || self.focus == Pane::Old {
                    &mut self.old_scroll
                } else {
                    &mut self.new_scroll
                };
                *target = if key == Key::Char('J') {
                    target.saturating_add(1)
                } else {
                    target.saturating_sub(1)
                };
            }
            _ => {}
        }
    }
}

/// A rewrite flow's phase.
#[derive(Debug, Clone)]
pub enum Phase {
    /// `W`: the plan, waiting for Enter / y.
    Plan {
        /// Scroll of the plan list.
        scroll: u16,
    },
    /// `w`: source stats and the prompt as it will be sent; Enter sends.
    Preview {
        /// Scroll of the prompt.
        scroll: u16,
    },
    /// The summarizer call is running.
    Inflight {
        /// Request number.
        req: u64,
        /// Trips to drop the HTTP request.
        cancel: CancelToken,
        /// When it started (spinner).
        since: Instant,
    },
    /// Old and new side by side, waiting for y / n.
    Review(Review),
    /// The reviewed text is being written.
    Applying {
        /// Request number.
        req: u64,
        /// The review being applied.
        review: Review,
    },
}

/// Whether the flow goes on after a key or result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Still open.
    Open,
    /// Closed, with a status line for the operator.
    Closed(String),
}

/// `w` or `W`.
#[derive(Debug, Clone)]
pub struct RewriteFlow {
    /// The conversation.
    pub conversation_id: i64,
    /// The summaries, in the order they are rewritten.
    pub queue: Vec<PlannedSummary>,
    /// The one being worked on.
    pub index: usize,
    /// `w`'s preview (none for `W`).
    pub preview: Option<RewritePreview>,
    /// Where the flow is.
    pub phase: Phase,
    /// `A` pressed: the remaining new texts are applied without review.
    pub accept_all: bool,
    /// Esc pressed during `W`: stop after the current summary.
    pub stopping: bool,
    /// Summaries written.
    pub applied: usize,
    /// Summaries discarded or skipped.
    pub discarded: usize,
    /// Σ old tokens of the written summaries.
    pub old_total: i64,
    /// Σ new tokens of the written summaries.
    pub new_total: i64,
    /// The last request number handed out.
    next_req: u64,
}

/// `1523` → `1,523`; `-122` → `−122` (a real minus sign), `+5`.
pub fn signed(n: i64) -> String {
    let abs = crate::cli::output::thousands(n.abs());
    match n.signum() {
        -1 => format!("\u{2212}{abs}"),
        1 => format!("+{abs}"),
        _ => "±0".to_owned(),
    }
}

/// `leaf` or `d1`, `d2`, …: the prompt a depth uses.
pub fn variant(depth: i64) -> String {
    match depth {
        d if d <= 0 => "leaf".to_owned(),
        1 => "d1".to_owned(),
        2 => "d2".to_owned(),
        _ => "d3+".to_owned(),
    }
}

impl RewriteFlow {
    /// `w`: one summary, starting at its preview.
    pub fn single(conversation_id: i64, preview: RewritePreview) -> RewriteFlow {
        RewriteFlow {
            conversation_id,
            queue: vec![preview.summary.clone()],
            preview: Some(preview),
            phase: Phase::Preview { scroll: 0 },
            ..Self::empty(conversation_id)
        }
    }

    /// `W`: a subtree, starting at its plan (bottom-up, chronological per depth).
    pub fn subtree(conversation_id: i64, plan: Vec<PlannedSummary>) -> RewriteFlow {
        RewriteFlow {
            queue: plan,
            phase: Phase::Plan { scroll: 0 },
            ..Self::empty(conversation_id)
        }
    }

    fn empty(conversation_id: i64) -> RewriteFlow {
        RewriteFlow {
            conversation_id,
            queue: Vec::new(),
            index: 0,
            preview: None,
            phase: Phase::Plan { scroll: 0 },
            accept_all: false,
            stopping: false,
            applied: 0,
            discarded: 0,
            old_total: 0,
            new_total: 0,
            next_req: 0,
        }
    }

    /// Whether this is a `W` run.
    pub fn is_subtree(&self) -> bool {
        self.preview.is_none()
    }

    /// The summary being worked on.
    pub fn current(&self) -> Option<&PlannedSummary> {
        self.queue.get(self.index)
    }

    /// `k of n` for a subtree run.
    pub fn progress(&self) -> String {
        format!("{} of {}", self.index + 1, self.queue.len())
    }

    /// The in-flight line: `Rewriting sum_… with d1 prompt…`.
    pub fn inflight_line(&self) -> String {
        let Some(cur) = self.current() else {
            return String::new();
        };
        let what = format!(
            "Rewriting {} with {} prompt…",
            cur.summary_id,
            variant(cur.depth)
        );
        if self.is_subtree() {
            format!("{what} ({})", self.progress())
        } else {
            what
        }
    }

    /// Plan totals: count per depth and the stored tokens the run replaces.
    pub fn plan_summary(&self) -> String {
        let mut by: std::collections::BTreeMap<i64, usize> = Default::default();
        for p in &self.queue {
            *by.entry(p.depth).or_default() += 1;
        }
        let parts: Vec<String> = by
            .iter()
            .map(|(d, n)| match *d {
                0 => format!("{n} {}", if *n == 1 { "leaf" } else { "leaves" }),
                d => format!("{n} d{d}"),
            })
            .collect();
        let tokens: i64 = self.queue.iter().map(|p| p.token_count).sum();
        format!(
            "Rewrite {} {} ({}), bottom-up; ~{}t stored now",
            self.queue.len(),
            if self.queue.len() == 1 {
                "summary"
            } else {
                "summaries"
            },
            parts.join(", "),
            crate::cli::output::thousands(tokens)
        )
    }

    fn start_current(&mut self) -> Vec<Cmd> {
        let Some(cur) = self.current().cloned() else {
            return Vec::new();
        };
        self.next_req += 1;
        let cancel = CancelToken::new();
        self.phase = Phase::Inflight {
            req: self.next_req,
            cancel: cancel.clone(),
            since: Instant::now(),
        };
        vec![Cmd::Rewrite {
            req: self.next_req,
            conversation_id: self.conversation_id,
            summary_id: cur.summary_id,
            cancel,
        }]
    }

    fn apply(&mut self, review: Review) -> Vec<Cmd> {
        self.next_req += 1;
        let e = &review.entry;
        let cmd = Cmd::Apply {
            req: self.next_req,
            conversation_id: self.conversation_id,
            summary_id: e.summary_id.clone(),
            expected: e.old_content.clone(),
            content: e.new_content.clone(),
        };
        self.phase = Phase::Applying {
            req: self.next_req,
            review,
        };
        vec![cmd]
    }

    /// The summary after the current one, or the end of the run.
    fn advance(&mut self) -> (Outcome, Vec<Cmd>) {
        self.index += 1;
        if self.stopping || self.index >= self.queue.len() {
            return (Outcome::Closed(self.final_status()), self.reload());
        }
        let cmds = self.start_current();
        (Outcome::Open, cmds)
    }

    fn reload(&self) -> Vec<Cmd> {
        if self.applied > 0 {
            vec![Cmd::ReloadDag]
        } else {
            Vec::new()
        }
    }

    /// The line a finished (or stopped) subtree run leaves.
    pub fn final_status(&self) -> String {
        let stopped = if self.index < self.queue.len() {
            format!(" (stopped at {})", self.progress())
        } else {
            String::new()
        };
        format!(
            "Rewrote {} of {}{stopped}, {} discarded. Total: {}t → {}t ({})",
            self.applied,
            plural(self.queue.len(), "summary", "summaries"),
            self.discarded,
            crate::cli::output::thousands(self.old_total),
            crate::cli::output::thousands(self.new_total),
            signed(self.new_total - self.old_total)
        )
    }

    /// Handles a key.
    pub fn on_key(&mut self, key: Key) -> (Outcome, Vec<Cmd>) {
        match self.phase {
            Phase::Plan { .. } => self.plan_key(key),
            Phase::Preview { .. } => self.preview_key(key),
            Phase::Inflight { .. } => self.inflight_key(key),
            Phase::Review(_) => self.review_key(key),
            Phase::Applying { .. } => (Outcome::Open, Vec::new()),
        }
    }

    /// The plan of a subtree run: enter or y starts it, esc or n cancels it.
    fn plan_key(&mut self, key: Key) -> (Outcome, Vec<Cmd>) {
        match key {
            Key::Enter | Key::Char('y') => {
                if self.queue.is_empty() {
                    return (Outcome::Closed("Nothing to rewrite.".into()), Vec::new());
                }
                (Outcome::Open, self.start_current())
            }
            Key::Esc | Key::Char('n') => (
                Outcome::Closed("Subtree rewrite cancelled; nothing sent.".into()),
                Vec::new(),
            ),
            k => {
                if let Phase::Plan { scroll } = &mut self.phase {
                    scroll_key(scroll, k);
                }
                (Outcome::Open, Vec::new())
            }
        }
    }

    /// A single rewrite's preview: enter sends it, esc, n or q cancels it.
    fn preview_key(&mut self, key: Key) -> (Outcome, Vec<Cmd>) {
        match key {
            Key::Enter => {
                if let Some(skip) = self.preview.as_ref().and_then(|p| p.skip.clone()) {
                    return (
                        Outcome::Closed(format!("Cannot rewrite: {skip}")),
                        Vec::new(),
                    );
                }
                (Outcome::Open, self.start_current())
            }
            Key::Esc | Key::Char('n') | Key::Char('q') => (
                Outcome::Closed("Rewrite cancelled; nothing sent.".into()),
                Vec::new(),
            ),
            k => {
                if let Phase::Preview { scroll } = &mut self.phase {
                    scroll_key(scroll, k);
                }
                (Outcome::Open, Vec::new())
            }
        }
    }

    /// A request in flight: esc stops a subtree run after it (a second esc, or the
    /// first of a single rewrite, aborts the request).
    fn inflight_key(&mut self, key: Key) -> (Outcome, Vec<Cmd>) {
        let Phase::Inflight { cancel, .. } = &self.phase else {
            return (Outcome::Open, Vec::new());
        };
        if key != Key::Esc {
            return (Outcome::Open, Vec::new());
        }
        let cancel = cancel.clone();
        let subtree = self.is_subtree();
        if subtree && !self.stopping {
            self.stopping = true;
            return (Outcome::Open, Vec::new());
        }
        cancel.cancel();
        let id = self.current_id();
        if subtree {
            let mut s = self.final_status();
            s.push_str(&format!("; {id} cancelled, request aborted"));
            return (Outcome::Closed(s), self.reload());
        }
        (
            Outcome::Closed(format!(
                "Rewrite of {id} cancelled: request aborted, nothing written."
            )),
            Vec::new(),
        )
    }

    /// A result under review: y applies, n discards, d toggles the diff, tab
    /// switches panes, J/K scroll.
    fn review_key(&mut self, key: Key) -> (Outcome, Vec<Cmd>) {
        let subtree = self.is_subtree();
        let id = self.current_id();
        let Phase::Review(r) = &mut self.phase else {
            return (Outcome::Open, Vec::new());
        };
        match key {
            Key::Enter | Key::Char('y') => {
                let r = r.clone();
                (Outcome::Open, self.apply(r))
            }
            Key::Char('A') if subtree => {
                self.accept_all = true;
                let r = r.clone();
                (Outcome::Open, self.apply(r))
            }
            Key::Char('n') | Key::Esc => {
                self.discarded += 1;
                if !subtree {
                    return (
                        Outcome::Closed(format!("Discarded the rewrite of {id}; nothing written.")),
                        Vec::new(),
                    );
                }
                if key == Key::Esc {
                    self.stopping = true;
                }
                self.advance()
            }
            k => {
                r.navigate(k);
                (Outcome::Open, Vec::new())
            }
        }
    }

    /// The id of the summary being rewritten now ("" past the end of a run).
    fn current_id(&self) -> String {
        self.current()
            .map(|c| c.summary_id.clone())
            .unwrap_or_default()
    }

    /// Handles a dry-run result for request `req`.
    pub fn on_rewritten(
        &mut self,
        req: u64,
        result: crate::error::Result<RewriteReport>,
    ) -> (Outcome, Vec<Cmd>) {
        let Phase::Inflight { req: want, .. } = &self.phase else {
            return (Outcome::Open, Vec::new());
        };
        if *want != req {
            return (Outcome::Open, Vec::new());
        }
        let id = self
            .current()
            .map(|c| c.summary_id.clone())
            .unwrap_or_default();
        let report = match result {
            Ok(r) => r,
            Err(e) => return self.failed(&id, &e.message),
        };
        if let Some(f) = &report.error {
            return self.failed(&id, &format!("{}: {}", f.code.as_str(), f.message));
        }
        let Some(entry) = report.entries.into_iter().next() else {
            return self.failed(&id, "the summarizer returned nothing");
        };
        if let Some(skip) = &entry.skipped {
            self.discarded += 1;
            if !self.is_subtree() {
                return (
                    Outcome::Closed(format!("Cannot rewrite {id}: {skip}")),
                    Vec::new(),
                );
            }
            return self.advance();
        }
        let review = Review {
            entry,
            diff: false,
            focus: Pane::New,
            old_scroll: 0,
            new_scroll: 0,
        };
        if self.accept_all {
            return (Outcome::Open, self.apply(review));
        }
        self.phase = Phase::Review(review);
        (Outcome::Open, Vec::new())
    }

    fn failed(&mut self, id: &str, msg: &str) -> (Outcome, Vec<Cmd>) {
        let mut s = format!("Rewrite of {id} failed: {msg}");
        if self.is_subtree() {
            s = format!("{}; {s}", self.final_status());
        }
        (Outcome::Closed(s), self.reload())
    }

    /// Handles the result of writing the reviewed text.
    pub fn on_applied(
        &mut self,
        req: u64,
        result: crate::error::Result<i64>,
    ) -> (Outcome, Vec<Cmd>) {
        let Phase::Applying { req: want, review } = &self.phase else {
            return (Outcome::Open, Vec::new());
        };
        if *want != req {
            return (Outcome::Open, Vec::new());
        }
        let e = review.entry.clone();
        let new_tokens = match result {
            Ok(n) => n,
            Err(err) => return self.failed(&e.summary_id, &err.message),
        };
        self.applied += 1;
        self.old_total += e.old_tokens;
        self.new_total += new_tokens;
        if !self.is_subtree() {
            return (
                Outcome::Closed(format!(
                    "Rewrote {}: {}t → {}t ({})",
                    e.summary_id,
                    crate::cli::output::thousands(e.old_tokens),
                    crate::cli::output::thousands(new_tokens),
                    signed(new_tokens - e.old_tokens)
                )),
                vec![Cmd::ReloadDag],
            );
        }
        self.advance()
    }
}

/// j/k, arrows and page keys on a scroll offset.
pub fn scroll_key(scroll: &mut u16, key: Key) {
    *scroll = match key {
        Key::Down | Key::Char('j') | Key::Char('J') => scroll.saturating_add(1),
        Key::Up | Key::Char('k') | Key::Char('K') => scroll.saturating_sub(1),
        Key::PageDown | Key::Char(' ') => scroll.saturating_add(10),
        Key::PageUp => scroll.saturating_sub(10),
        Key::Home | Key::Char('g') => 0,
        _ => *scroll,
    };
}

/// `d`: a dissolve's plan, then its result.
#[derive(Debug, Clone)]
pub struct DissolveFlow {
    /// The conversation.
    pub conversation_id: i64,
    /// The summary.
    pub summary_id: String,
    /// The plan, once read.
    pub plan: Option<DissolvePlan>,
    /// Applying.
    pub applying: bool,
    /// Scroll of the restored list.
    pub scroll: u16,
}

impl DissolveFlow {
    /// Starts by asking for the plan.
    pub fn start(conversation_id: i64, summary_id: String) -> (DissolveFlow, Vec<Cmd>) {
        let cmd = Cmd::Dissolve {
            conversation_id,
            summary_id: summary_id.clone(),
            apply: false,
        };
        (
            DissolveFlow {
                conversation_id,
                summary_id,
                plan: None,
                applying: false,
                scroll: 0,
            },
            vec![cmd],
        )
    }

    /// Handles a key.
    pub fn on_key(&mut self, key: Key) -> (Outcome, Vec<Cmd>) {
        if self.applying {
            return (Outcome::Open, Vec::new());
        }
        match key {
            Key::Char('y') | Key::Enter if self.plan.is_some() => {
                self.applying = true;
                (
                    Outcome::Open,
                    vec![Cmd::Dissolve {
                        conversation_id: self.conversation_id,
                        summary_id: self.summary_id.clone(),
                        apply: true,
                    }],
                )
            }
            Key::Char('n') | Key::Esc | Key::Char('q') => (
                Outcome::Closed(format!("Dissolve of {} cancelled.", self.summary_id)),
                Vec::new(),
            ),
            k => {
                scroll_key(&mut self.scroll, k);
                (Outcome::Open, Vec::new())
            }
        }
    }

    /// Handles a plan or an applied result.
    pub fn on_result(&mut self, result: crate::error::Result<DissolvePlan>) -> (Outcome, Vec<Cmd>) {
        let plan = match result {
            Ok(p) => p,
            Err(e) => {
                return (
                    Outcome::Closed(format!(
                        "Cannot dissolve {}: {}",
                        self.summary_id, e.message
                    )),
                    Vec::new(),
                )
            }
        };
        if !plan.applied {
            self.plan = Some(plan);
            return (Outcome::Open, Vec::new());
        }
        (
            Outcome::Closed(format!(
                "Dissolved {}: {} back in its place, {} shifted by {}; context {}t → {}t",
                self.summary_id,
                plural(plan.restored.len(), "item", "items"),
                plural(plan.items_shifted, "later item", "later items"),
                signed(plan.shift),
                crate::cli::output::thousands(plan.context_tokens_before),
                crate::cli::output::thousands(plan.context_tokens_after),
            )),
            vec![Cmd::ReloadDag],
        )
    }
}
