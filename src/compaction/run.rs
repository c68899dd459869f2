//! The modes. A [`Run`] is one `compact` call on one conversation (its lock held):
//! it gates on the threshold, runs passes through [`pass::run_pass`], enforces the
//! bounds (cancel token, `sweepDeadlineMs`, `maxSweepIterations`) between passes,
//! and composes the result.

use std::time::{Duration, Instant};

use super::list::ContextList;
use super::pass::{self, PassEnd, PassEnv, PassKind, PassRecord, Plan, Summarize};
use super::select::{self, Limits};
use super::{CompactParams, CompactResult, Compactor, Hooks, Mode};
use crate::error::{LcmError, Result};
use crate::store::dag::{self, Persisted};
use crate::store::messages::{self, ContextItem};
use crate::timeformat::Zone;

/// Why a run stopped before its mode was done.
#[derive(Debug)]
enum Stop {
    Aborted,
    /// The option whose wall-clock limit was reached.
    Deadline(&'static str),
    IterationCap,
    Failed(LcmError),
    Unstable,
}

/// How often a pass is re-planned when its sources moved before the write.
const STALE_RETRIES: usize = 3;

/// Leaf passes summarized but not yet written are flushed in one transaction once
/// this many are queued …
pub(crate) const BATCH_MAX: usize = 64;
/// … or once this long passed since the first queued one started …
const BATCH_MAX_AGE: Duration = Duration::from_millis(250);
/// … or at once when the pass's summarizer call took this long: batching is for a fast summarizer,
/// whose calls cost less than the writes; a slow (real) one's passes are written
/// and reported right after each call, as unbatched passes are, and a progress
/// event always means the pass is durable.
const BATCH_FAST: Duration = Duration::from_millis(10);

/// How a batched step ended.
enum Queued {
    /// Summarized, applied in memory and queued (perhaps already written).
    Pass(PassRecord),
    /// Its sources moved; re-plan.
    Stale,
    /// The run stopped (cancel, summarizer failure).
    Stopped,
}

/// A leaf pass summarized, applied to the in-memory list, not yet written (its
/// `write.start_hint` is the stored ordinal of its first source).
struct QueuedPass {
    record: PassRecord,
    write: dag::Queued,
}

/// One compaction call.
pub struct Run<'a> {
    env: PassEnv<'a>,
    compactor: &'a Compactor,
    hooks: &'a Hooks,
    limits: Limits,
    /// The call's wall-clock limit (`compactUntilUnderDeadlineMs` for `untilUnder`,
    /// else `sweepDeadlineMs`).
    deadline: Instant,
    /// The option that sets `deadline`.
    deadline_option: &'static str,
    /// The running sweep's limit (`sweepDeadlineMs` from its start).
    sweep_deadline: Instant,
    /// ⌊contextThreshold × tokenBudget⌋ of the call (the default prefix target).
    threshold: i64,
    passes: Vec<PassRecord>,
    stop: Option<Stop>,
    sweep_passes: i64,
    rounds: i64,
    /// The context list as of the last write, kept between passes of a phase so a
    /// pass plans without re-reading the whole list; `None` forces a re-read.
    cache: Option<ContextList>,
    /// Whether this run's writes left gaps in the stored ordinals (closed when a
    /// phase ends, see [`Run::close_gaps`]).
    gaps: bool,
    /// Leaf passes waiting for one batched write (see [`BATCH_MAX`]); while any is
    /// queued the in-memory list (`cache`) is the only view that includes them.
    queue: Vec<QueuedPass>,
    /// When the first queued pass started.
    queue_since: Option<Instant>,
    /// Batches rejected because the list moved (each retried from a re-read).
    stale_batches: usize,
    /// The sources of the leaf chunk expected next, read while the last pass's
    /// summarizer call ran (used only if the next pass plans exactly that chunk).
    ahead: Option<pass::Prefetched>,
    /// A full batch handed to the writer while the next passes go on (see
    /// [`Run::start_flush`]); awaited by [`Run::flush`].
    inflight: Option<InFlight>,
}

/// The outcome of a batch write, awaited later.
type Written = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Option<Vec<Persisted>>>> + Send + Sync>,
>;

/// A batch being written: its passes (reported once it is durable) and the write.
struct InFlight {
    queue: Vec<QueuedPass>,
    written: Written,
}

/// The context item of a new summary (its ordinal is set where it is placed).
fn summary_item(id: &str, depth: i64, token_count: i64) -> ContextItem {
    ContextItem {
        ordinal: 0,
        item_type: crate::store::messages::ContextItemType::Summary,
        message_id: None,
        summary_id: Some(id.to_owned()),
        token_count,
        depth: Some(depth),
        role: None,
    }
}

/// A result for a call that did nothing.
pub fn nothing(p: &CompactParams, ratio: f64, reason: &str) -> CompactResult {
    let threshold = super::threshold_for(ratio, p.token_budget);
    CompactResult {
        ok: true,
        compacted: false,
        reason: reason.into(),
        exhausted: false,
        aborted: false,
        error_code: None,
        mode: p.mode,
        conversation_id: None,
        tokens_before: 0,
        tokens_after: 0,
        current_tokens: p.current_token_count.unwrap_or(0).max(0),
        threshold,
        target_tokens: target_of(p, threshold),
        rounds: 0,
        passes: Vec::new(),
        summarizer: Default::default(),
    }
}

fn target_of(p: &CompactParams, threshold: i64) -> i64 {
    match p.mode {
        Mode::UntilUnder => p.target_tokens.filter(|t| *t > 0).unwrap_or(p.token_budget),
        _ => threshold,
    }
}

/// `summaryPrefixTargetTokens`, else max(condensedTargetTokens, min(leafChunkTokens,
/// ⌊threshold / 2⌋)) (the reference's default).
pub fn prefix_target(opts: &crate::config::EngineOptions, threshold: i64) -> i64 {
    opts.summary_prefix_target_tokens.unwrap_or_else(|| {
        opts.condensed_target_tokens
            .max(opts.leaf_chunk_tokens.min(threshold / 2))
    })
}

/// Chooses the next pass from a snapshot and the index where its tail starts.
type Chooser<'c> = dyn Fn(&[ContextItem], usize) -> Option<Plan> + Send + Sync + 'c;

fn leaf_plan(limits: Limits) -> impl Fn(&[ContextItem], usize) -> Option<Plan> + Send + Sync {
    move |items, tail| {
        let chunk = select::oldest_leaf_chunk(items, tail, &limits)?;
        let previous = select::previous_summaries(items, chunk.start, None, 2);
        Some(Plan::Leaf { chunk, previous })
    }
}

fn condensed_plan(chunk: select::SummaryChunk, items: &[ContextItem]) -> Plan {
    let previous = match chunk.depth {
        0 => select::previous_summaries(items, chunk.start, Some(0), 2),
        _ => Vec::new(),
    };
    Plan::Condensed { chunk, previous }
}

/// Condensation, shallowest depth first, while the context is under pressure:
/// the summaries before the fresh tail weigh more than `prefix_target`, or the
/// whole list more than `target`. Sources deeper than `max_depth` − 1 are left
/// alone (`None`: any depth).
fn pressure_plan(
    limits: Limits,
    hard: bool,
    max_depth: Option<i64>,
    prefix_target: i64,
    target: i64,
) -> impl Fn(&[ContextItem], usize) -> Option<Plan> + Send + Sync {
    move |items, tail| {
        if !select::under_pressure(items, tail, prefix_target, target) {
            return None;
        }
        select::condensation_candidate(items, tail, &limits, hard, max_depth)
            .map(|c| condensed_plan(c, items))
    }
}

fn depth_plan(
    limits: Limits,
    depth: i64,
) -> impl Fn(&[ContextItem], usize) -> Option<Plan> + Send + Sync {
    move |items, tail| {
        select::oldest_chunk_at_depth(items, tail, depth, &limits)
            .filter(|c| select::is_eligible(c, &limits, false))
            .map(|c| condensed_plan(c, items))
    }
}

/// The leaf chunk expected after `plan`'s (its message ids and the stored ordinal
/// of its first one): the oldest raw run after the planned chunk, before `tail`.
fn next_leaf(
    items: &[ContextItem],
    plan: &Plan,
    tail: usize,
    limits: &Limits,
) -> Option<(Vec<i64>, i64)> {
    let Plan::Leaf { .. } = plan else {
        return None;
    };
    let after = plan.start() + plan.source_count();
    let rest = items.get(after..)?;
    let chunk = select::oldest_leaf_chunk(rest, tail.saturating_sub(after), limits)?;
    let at = rest.get(chunk.start)?.ordinal;
    Some((chunk.message_ids, at))
}

impl<'a> Run<'a> {
    /// Prepares a run; the conversation's lock must be held.
    pub fn new(
        compactor: &'a Compactor,
        conversation_id: i64,
        p: &CompactParams,
        hooks: &'a Hooks,
    ) -> Result<Run<'a>> {
        let zone = Zone::resolve(compactor.opts.timezone.as_deref())?;
        Ok(Run {
            env: PassEnv {
                store: &compactor.store,
                pipeline: compactor.pipeline.as_ref(),
                zone,
                conversation_id,
                // The pipeline falls back to the configured instructions.
                custom_instructions: p.custom_instructions.clone(),
                cancel: &hooks.cancel,
                strip_tags: &compactor.opts.strip_injected_context_tags,
            },
            compactor,
            hooks,
            limits: Limits::for_budget(&compactor.opts, p.token_budget),
            deadline: Instant::now()
                + Duration::from_millis(match p.mode {
                    Mode::UntilUnder => compactor.opts.compact_until_under_deadline_ms,
                    _ => compactor.opts.sweep_deadline_ms,
                }),
            deadline_option: match p.mode {
                Mode::UntilUnder => "compactUntilUnderDeadlineMs",
                _ => "sweepDeadlineMs",
            },
            sweep_deadline: Instant::now()
                + Duration::from_millis(compactor.opts.sweep_deadline_ms),
            threshold: super::threshold_for(compactor.opts.context_threshold, p.token_budget),
            passes: Vec::new(),
            stop: None,
            sweep_passes: 0,
            rounds: 0,
            cache: None,
            gaps: false,
            queue: Vec::new(),
            queue_since: None,
            stale_batches: 0,
            ahead: None,
            inflight: None,
        })
    }

    async fn snapshot(&self) -> Result<ContextList> {
        let conv = self.env.conversation_id;
        let items = self
            .env
            .store
            .read(move |c| messages::context_items(c, conv))
            .await?;
        Ok(ContextList::new(items))
    }

    /// Checks the bounds before a pass; records why when one is hit.
    fn may_continue(&mut self) -> bool {
        if self.stop.is_none() {
            self.stop = if self.hooks.cancel.is_cancelled() {
                Some(Stop::Aborted)
            } else if Instant::now() >= self.deadline {
                Some(Stop::Deadline(self.deadline_option))
            } else if Instant::now() >= self.sweep_deadline {
                Some(Stop::Deadline("sweepDeadlineMs"))
            } else if self.sweep_passes >= self.compactor.opts.max_sweep_iterations {
                Some(Stop::IterationCap)
            } else {
                None
            };
        }
        self.stop.is_none()
    }

    /// Plans and runs one pass; re-plans when the sources moved before the write.
    /// `None` when there was nothing to do or the run stopped.
    /// A `batched` step (leaf passes) queues its summary instead of writing it (see
    /// [`Run::flush`]); any other step flushes the queue first.
    async fn step(&mut self, choose: &Chooser<'_>, batched: bool) -> Result<Option<PassRecord>> {
        if !batched {
            self.flush().await?;
        }
        for _ in 0..STALE_RETRIES {
            if !self.may_continue() {
                return Ok(None);
            }
            let items = match self.cache.take() {
                Some(items) => items,
                // A re-read must see every pass: what is queued or in flight first.
                None => {
                    self.flush().await?;
                    self.snapshot().await?
                }
            };
            let tail = select::fresh_tail_start(items.items(), &self.limits);
            let Some(plan) = choose(items.items(), tail) else {
                self.cache = Some(items);
                return Ok(None);
            };
            let before = items.tokens();
            let hint = items.items()[plan.start()].ordinal;
            if batched {
                match self.queue_pass(items, plan, tail, before, hint).await? {
                    Queued::Pass(rec) => return Ok(Some(rec)),
                    Queued::Stale => continue,
                    Queued::Stopped => return Ok(None),
                }
            }
            match pass::run_pass(&self.env, &plan, before, Some(hint)).await? {
                PassEnd::Written(mut rec, written) => {
                    self.gaps = true;
                    let summary =
                        summary_item(&written.summary_id, written.depth, written.token_count);
                    rec.context_tokens_after =
                        self.apply(items, &plan, summary, Some(&written)).await?;
                    return Ok(Some(self.record(rec)));
                }
                // The list moved under the plan: re-read it.
                PassEnd::Stale => continue,
                PassEnd::Cancelled => self.stop = Some(Stop::Aborted),
                PassEnd::SummarizerFailed(e) => self.stop = Some(Stop::Failed(e)),
            }
            self.cache = Some(items);
            return Ok(None);
        }
        self.stop = Some(Stop::Unstable);
        Ok(None)
    }

    /// Summarizes a planned leaf pass, applies it to the in-memory list and queues
    /// its write; flushes when the batch is full or old enough.
    async fn queue_pass(
        &mut self,
        items: ContextList,
        plan: Plan,
        tail: usize,
        before: i64,
        hint: i64,
    ) -> Result<Queued> {
        let started = Instant::now();
        let read = self.read_sources(&plan, hint).await?;
        // The next leaf chunk does not depend on this pass's summary: its sources
        // are read while the summarizer runs.
        let next = read
            .as_ref()
            .and_then(|_| next_leaf(items.items(), &plan, tail, &self.limits));
        let env = &self.env;
        let (done, ahead) = tokio::join!(
            pass::summarize_read(env, &plan, before, read, started),
            async {
                match next {
                    Some((ids, at)) => pass::prefetch(env, ids, at).await,
                    None => None,
                }
            }
        );
        self.ahead = ahead;
        let done = match done? {
            Summarize::Ready(done) => *done,
            // Its sources moved (compacted behind the sweep's back): write what is
            // queued and re-plan from a re-read, as an unbatched pass would.
            Summarize::Stale => {
                self.flush().await?;
                self.cache = None;
                self.ahead = None;
                return Ok(Queued::Stale);
            }
            end => {
                self.cache = Some(items);
                self.stop = Some(match end {
                    Summarize::Failed(e) => Stop::Failed(e),
                    _ => Stop::Aborted,
                });
                self.flush().await?;
                return Ok(Queued::Stopped);
            }
        };
        let id = dag::new_summary_id(&done.summary.content);
        let summary = summary_item(
            &id,
            plan.output_depth(),
            crate::tokens::estimate(&done.summary.content),
        );
        let mut rec = done.record;
        rec.summary_id = id.clone();
        rec.context_tokens_after = self.apply(items, &plan, summary, None).await?;
        let took = done.started.elapsed();
        rec.ms = took.as_millis() as u64;
        self.sweep_passes += 1;
        self.queue_since.get_or_insert(done.started);
        self.queue.push(QueuedPass {
            record: rec.clone(),
            write: dag::Queued {
                summary: done.summary,
                id,
                start_hint: Some(hint),
                rows: done.rows,
            },
        });
        if done.call >= BATCH_FAST {
            self.flush().await?;
        } else if self.queue.len() >= BATCH_MAX
            || self
                .queue_since
                .is_some_and(|t| t.elapsed() >= BATCH_MAX_AGE)
        {
            self.start_flush().await?;
        }
        Ok(Queued::Pass(rec))
    }

    /// The pass's input (see [`pass::read_input`]), from the sources read ahead
    /// when they are this plan's.
    async fn read_sources(
        &mut self,
        plan: &Plan,
        hint: i64,
    ) -> Result<
        Option<(
            crate::summarize::SummarizeInput,
            Vec<crate::store::derived::MsgRow>,
        )>,
    > {
        let inflight = self.inflight.iter().flat_map(|f| &f.queue);
        let pending: Vec<(String, String)> = inflight
            .chain(&self.queue)
            .map(|q| (q.write.id.clone(), q.write.summary.content.clone()))
            .collect();
        if let Some(ahead) = self.ahead.take() {
            let read = pass::read_prefetched(&self.env, plan, &pending, Some(hint), ahead).await?;
            if read.is_some() {
                return Ok(read);
            }
        }
        pass::read_input(&self.env, plan, pending, Some(hint)).await
    }

    /// Writes the queued passes in one transaction (after the batch in flight). When
    /// the list moved under them nothing is written (`true` is returned): the list
    /// is re-read and their work is redone by the next passes.
    async fn flush(&mut self) -> Result<bool> {
        let rejected = self.start_flush().await?;
        Ok(self.finish_flight().await? || rejected)
    }

    /// Hands the queued passes to the writer as one batch and lets the run go on
    /// (the writer commits while the next passes are read and summarized); the
    /// batch in flight before it is awaited first. `true` when that one was rejected
    /// (see [`Run::flush`]).
    async fn start_flush(&mut self) -> Result<bool> {
        let rejected = self.finish_flight().await?;
        self.queue_since = None;
        if self.queue.is_empty() {
            return Ok(rejected);
        }
        let queue = std::mem::take(&mut self.queue);
        let batch = queue.iter().map(|q| q.write.clone()).collect();
        let store = self.env.store;
        let written = Box::pin(pass::start_batch(store, store.features(), batch));
        self.inflight = Some(InFlight { queue, written });
        Ok(rejected)
    }

    /// Awaits the batch in flight and reports its passes once durable. When it was
    /// rejected (the list moved), the passes queued on top of it are dropped too:
    /// all their work is redone from a re-read (`true` is returned).
    async fn finish_flight(&mut self) -> Result<bool> {
        let Some(InFlight { queue, written }) = self.inflight.take() else {
            return Ok(false);
        };
        let Some(written) = written.await? else {
            // Not written, not reported: their work is redone from a re-read.
            let dropped = queue.len() + std::mem::take(&mut self.queue).len();
            self.queue_since = None;
            self.cache = None;
            self.ahead = None;
            self.sweep_passes -= dropped as i64;
            self.stale_batches += 1;
            if self.stale_batches >= STALE_RETRIES && self.stop.is_none() {
                self.stop = Some(Stop::Unstable);
            }
            return Ok(true);
        };
        self.gaps = true;
        let expected = self.cache.as_ref().map(ContextList::next_ordinal);
        let consistent = written
            .iter()
            .zip(&queue)
            .all(|(w, q)| Some(w.start) == q.write.start_hint && Some(w.next_ordinal) == expected);
        if !consistent {
            self.cache = None;
            self.ahead = None;
        }
        // Reported once durable, per pass and in order.
        for q in queue {
            self.report(q.record);
        }
        Ok(false)
    }

    /// Applies a pass to the in-memory list and returns the context tokens after
    /// it. A written pass (`written`) is checked first: when the writer replaced
    /// anything else than the planned run, or the stored list does not end where the
    /// applied one does (e.g. messages were ingested meanwhile), the list is re-read
    /// and the tokens are summed from it instead. A queued pass is applied as planned.
    async fn apply(
        &mut self,
        mut items: ContextList,
        plan: &Plan,
        mut summary: ContextItem,
        written: Option<&Persisted>,
    ) -> Result<i64> {
        let (start, count) = (plan.start(), plan.source_count());
        let run = (count > 0 && start + count <= items.len()).then(|| {
            (
                items.items()[start].ordinal,
                items.items()[start + count - 1].ordinal,
            )
        });
        if let Some((first, last)) = run {
            if written.is_none_or(|w| (w.start, w.end) == (first, last)) {
                summary.ordinal = first;
                items.replace(start, count, summary);
                if written.is_none_or(|w| w.next_ordinal == items.next_ordinal()) {
                    let after = items.tokens();
                    self.cache = Some(items);
                    return Ok(after);
                }
            }
        }
        let fresh = self.snapshot().await?;
        let after = fresh.tokens();
        self.cache = Some(fresh);
        Ok(after)
    }

    /// Writes what is queued, then closes the gaps this run's writes left in the
    /// stored ordinals, in one renumbering (instead of shifting every later item on
    /// every write); the in-memory list is renumbered the same way.
    async fn close_gaps(&mut self) -> Result<()> {
        self.flush().await?;
        if !self.gaps {
            return Ok(());
        }
        let conv = self.env.conversation_id;
        let n = self
            .env
            .store
            .write_tx(move |tx| dag::close_gaps(tx, conv))
            .await?;
        self.gaps = false;
        match self.cache.as_mut() {
            Some(list) if list.len() as i64 == n => list.renumber(),
            _ => self.cache = None,
        }
        Ok(())
    }

    fn record(&mut self, rec: PassRecord) -> PassRecord {
        self.sweep_passes += 1;
        self.report(rec.clone());
        rec
    }

    /// Progress event and result entry of a written pass.
    fn report(&mut self, rec: PassRecord) {
        if let Some(f) = &self.hooks.on_progress {
            f(&rec);
        }
        self.passes.push(rec);
    }

    /// Repeats a kind of pass until none is eligible, one stops reducing tokens, or
    /// (when given) the context is at or under `until`.
    async fn phase(
        &mut self,
        choose: &Chooser<'_>,
        until: Option<i64>,
        batched: bool,
    ) -> Result<()> {
        self.flush().await?;
        loop {
            while let Some(rec) = self.step(choose, batched).await? {
                if !self.made_progress(&rec) {
                    break;
                }
                if until.is_some_and(|t| rec.context_tokens_after <= t) {
                    break;
                }
            }
            // A rejected batch's work is redone from a re-read.
            if !self.flush().await? || self.stop.is_some() {
                return self.close_gaps().await;
            }
        }
    }

    /// Whether a pass lets its phase go on: it reduced the context's tokens, or it
    /// was a leaf pass over fewer tokens than `condensedMinChunkTokens`, which no
    /// summary is expected to shrink. Such a chunk is a short run cut off by an
    /// oversized next message or by a summary; ending the phase there left the rest
    /// of the conversation raw (a 1M-message sweep stopped after 378k on a lone
    /// 75-token message before a 20k-token tool result). Each leaf pass consumes
    /// raw messages, so the phase still ends; a summarizer that does not shrink a
    /// full chunk still ends it, as in the reference.
    fn made_progress(&self, rec: &PassRecord) -> bool {
        rec.context_tokens_after < rec.context_tokens_before
            || (rec.kind == PassKind::Leaf
                && rec.tokens_in < self.limits.condensed_min_chunk_tokens)
    }

    /// Leaf passes; then, while the summaries before the fresh tail weigh more than
    /// `summaryPrefixTargetTokens` or the context is over `target`: condensation
    /// shallowest first of sources shallower than `incrementalMaxDepth` (normal
    /// fanout), then of any depth at the hard fanout.
    async fn sweep(&mut self, target: i64) -> Result<()> {
        self.sweep_passes = 0;
        self.rounds += 1;
        self.sweep_deadline =
            Instant::now() + Duration::from_millis(self.compactor.opts.sweep_deadline_ms);
        // One read per round (the first one's is the gate's); the passes keep the list
        // up to date in memory, re-reading when a write shows it moved.
        if self.rounds > 1 {
            self.flush().await?;
            self.cache = None;
        }
        self.phase(&leaf_plan(self.limits), None, true).await?;
        let opts = &self.compactor.opts;
        let max_depth = Some(opts.incremental_max_depth).filter(|d| *d >= 0);
        let prefix = prefix_target(opts, self.threshold);
        self.phase(
            &pressure_plan(self.limits, false, max_depth, prefix, target),
            None,
            false,
        )
        .await?;
        if self.stop.is_none() {
            self.phase(
                &pressure_plan(self.limits, true, None, prefix, target),
                None,
                false,
            )
            .await?;
        }
        Ok(())
    }

    /// One leaf pass, then condensation of depths 0 … incrementalMaxDepth − 1.
    async fn incremental(&mut self) -> Result<()> {
        self.rounds = 1;
        self.step(&leaf_plan(self.limits), true).await?;
        self.flush().await?;
        let max = match self.compactor.opts.incremental_max_depth {
            d if d < 0 => i64::MAX,
            d => d,
        };
        for depth in 0..max {
            match self.step(&depth_plan(self.limits, depth), false).await? {
                Some(r) if r.context_tokens_after < r.context_tokens_before => {}
                _ => break,
            }
        }
        Ok(())
    }

    /// Forced sweeps until at or under `target`. Equality still compacts once.
    async fn until_under(&mut self, target: i64, mut last: i64) -> Result<()> {
        for _ in 0..self.compactor.opts.max_rounds {
            let done_before = self.passes.len();
            self.sweep(target).await?;
            let now = self.current_tokens().await?;
            if self.stop.is_some() || now <= target {
                break;
            }
            if self.passes.len() == done_before || now >= last {
                break;
            }
            last = now;
        }
        Ok(())
    }

    async fn current_tokens(&mut self) -> Result<i64> {
        self.flush().await?;
        if self.cache.is_none() {
            self.cache = Some(self.snapshot().await?);
        }
        Ok(self.cache.as_ref().map_or(0, ContextList::tokens))
    }

    /// Whether any pass could still run (a leaf chunk, or a condensation candidate
    /// even at the hard fanout).
    fn work_left(&self, items: &[ContextItem]) -> bool {
        let tail = select::fresh_tail_start(items, &self.limits);
        select::oldest_leaf_chunk(items, tail, &self.limits).is_some()
            || select::condensation_candidate(items, tail, &self.limits, true, None).is_some()
    }

    /// Gates on the threshold, runs the mode and composes the result.
    pub async fn run(mut self, p: &CompactParams) -> Result<CompactResult> {
        let opts = self.compactor.opts.clone();
        let mut list = self.snapshot().await?;
        if list.has_gaps() {
            // Left by a run that did not end (a crash): closed before anything else.
            self.gaps = true;
            self.cache = Some(list);
            self.close_gaps().await?;
            list = match self.cache.take() {
                Some(list) => list,
                None => self.snapshot().await?,
            };
        }
        let items = list.items();
        let before = list.tokens();
        let current = before.max(p.current_token_count.unwrap_or(0));
        let threshold = super::threshold_for(opts.context_threshold, p.token_budget);
        let target = target_of(p, threshold);
        let tail = select::fresh_tail_start(items, &self.limits);
        let leaf_trigger = select::raw_tokens_before(items, tail) >= opts.leaf_chunk_tokens;
        let mut result = super::run::nothing(p, opts.context_threshold, "below threshold");
        result.conversation_id = Some(self.env.conversation_id);
        result.tokens_before = before;
        result.tokens_after = before;
        result.current_tokens = current;
        let due = p.force
            || super::over_threshold(current, threshold)
            || (p.mode == Mode::Incremental && leaf_trigger);
        if !due {
            return Ok(result);
        }
        if p.mode == Mode::UntilUnder && current < target {
            result.reason = "already under target".into();
            return Ok(result);
        }
        self.cache = Some(list);
        let ran = match p.mode {
            Mode::Incremental => self.incremental().await,
            Mode::Sweep => self.sweep(target).await,
            Mode::UntilUnder => self.until_under(target, current).await,
        };
        if let Err(e) = ran {
            self.settle_after_error().await;
            return Err(e);
        }
        self.finish(result, p.mode, target).await
    }

    /// On an error return: the batch already handed to the writer is awaited (it
    /// commits, validated and atomic, whatever the error), and the gaps this run
    /// left are closed, so the caller is answered with no write still running and the
    /// list renumbered. Best effort: when the store itself failed, the marked gaps
    /// are closed by the next compaction or open.
    async fn settle_after_error(&mut self) {
        let _ = self.finish_flight().await;
        if self.gaps {
            let conv = self.env.conversation_id;
            if self
                .env
                .store
                .write_tx(move |tx| dag::close_gaps(tx, conv))
                .await
                .is_ok()
            {
                self.gaps = false;
            }
        }
    }

    async fn finish(
        mut self,
        mut r: CompactResult,
        mode: Mode,
        target: i64,
    ) -> Result<CompactResult> {
        self.close_gaps().await?;
        let list = self.snapshot().await?;
        r.tokens_after = list.tokens();
        r.compacted = !self.passes.is_empty();
        r.rounds = self.rounds;
        let over = r.tokens_after > target;
        r.exhausted = over && self.stop.is_none() && !self.work_left(list.items());
        r.reason = match &self.stop {
            Some(Stop::Failed(e)) => {
                r.ok = false;
                r.error_code = Some(e.code.as_str().to_owned());
                format!("summarizer failed ({}): {}", e.code, e.message)
            }
            Some(Stop::Aborted) => {
                r.aborted = true;
                "aborted".into()
            }
            Some(Stop::Deadline(option)) => format!("deadline reached ({option})"),
            Some(Stop::IterationCap) => "iteration cap reached (maxSweepIterations)".into(),
            Some(Stop::Unstable) => {
                "the context kept changing during compaction; call again".into()
            }
            None if mode == Mode::UntilUnder && over => "could not reach target".into(),
            None if !r.compacted => "nothing to compact".into(),
            None if over => "compacted; still over threshold".into(),
            None => "compacted".into(),
        };
        if mode == Mode::UntilUnder && over && self.stop.is_none() {
            r.ok = false;
        }
        r.passes = self.passes;
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(ordinal: i64, role: &str, summary: bool, tokens: i64) -> ContextItem {
        ContextItem {
            ordinal,
            item_type: if summary {
                crate::store::messages::ContextItemType::Summary
            } else {
                crate::store::messages::ContextItemType::Message
            },
            message_id: (!summary).then_some(ordinal + 100),
            summary_id: summary.then(|| format!("s{ordinal}")),
            token_count: tokens,
            depth: summary.then_some(0),
            role: (!summary).then(|| role.into()),
        }
    }

    /// The chunk read ahead is the one the next pass plans once the current pass's
    /// summary replaced its sources (gapped ordinals, a summary before the run).
    #[test]
    fn the_next_leaf_is_the_one_planned_after_the_pass() {
        let limits = limits();
        let mut items = vec![item(0, "", true, 40)];
        for o in (3..40).step_by(2) {
            let role = if o % 3 == 0 { "user" } else { "assistant" };
            items.push(item(o, role, false, 60 + o));
        }
        let mut list = ContextList::new(items);
        let mut predicted = None;
        while let Some(plan) = leaf_plan(limits)(list.items(), fresh_tail_start(&list)) {
            let Plan::Leaf { chunk, .. } = &plan else {
                unreachable!()
            };
            if let Some((ids, at)) = predicted.take() {
                assert_eq!(
                    (ids, at),
                    (
                        chunk.message_ids.clone(),
                        list.items()[plan.start()].ordinal
                    )
                );
            }
            predicted = next_leaf(list.items(), &plan, fresh_tail_start(&list), &limits);
            let first = list.items()[plan.start()].ordinal;
            list.replace(plan.start(), plan.source_count(), item(first, "", true, 30));
        }
        assert!(
            predicted.is_none(),
            "nothing is read ahead past the last chunk"
        );
    }

    fn limits() -> Limits {
        Limits {
            fresh_tail_count: 4,
            fresh_tail_max_tokens: None,
            chunk_tokens: 250,
            leaf_min_fanout: 8,
            condensed_min_fanout: 4,
            hard_fanout: 2,
            condensed_min_chunk_tokens: 0,
        }
    }

    fn fresh_tail_start(list: &ContextList) -> usize {
        select::fresh_tail_start(list.items(), &limits())
    }
}
