//! One pass, top to bottom: read the chunk's sources (a pooled read connection,
//! released before anything else happens), summarize them (no connection held; the
//! call can be cancelled), then one writer job that re-validates the sources and
//! writes summary, links, FTS rows and the context replacement in one transaction.

use std::collections::HashMap;
use std::time::Instant;

use serde::Serialize;

use super::control::CancelToken;
use super::select::{LeafChunk, SummaryChunk};
use super::source;
use crate::error::{ErrorCode, Result};
use crate::store::dag::{self, NewSummary, Sources};
use crate::store::derived::MsgRow;
use crate::store::messages::ContextItem;
use crate::store::{summaries, Features, Store};
use crate::summarize::{Level, SummarizeInput, SummarizeOutput, SummaryPipeline};
use crate::timeformat::Zone;
use crate::tokens;

/// What one pass will summarize, chosen from a snapshot of the context list.
#[derive(Debug, Clone)]
pub enum Plan {
    /// Raw messages into a leaf.
    Leaf {
        /// The run of messages.
        chunk: LeafChunk,
        /// Up to two summaries just before the run (previous_context).
        previous: Vec<String>,
    },
    /// Same-depth summaries into a condensed node.
    Condensed {
        /// The run of summaries.
        chunk: SummaryChunk,
        /// Depth-0 summaries before the run, when building depth 1.
        previous: Vec<String>,
    },
}

impl Plan {
    /// Depth of the summary this plan builds.
    pub fn output_depth(&self) -> i64 {
        match self {
            Plan::Leaf { .. } => 0,
            Plan::Condensed { chunk, .. } => chunk.depth + 1,
        }
    }

    fn sources(&self) -> Sources {
        match self {
            Plan::Leaf { chunk, .. } => Sources::Messages(chunk.message_ids.clone()),
            Plan::Condensed { chunk, .. } => Sources::Summaries(chunk.summary_ids.clone()),
        }
    }

    /// Index of the first source in the snapshot the plan was made from.
    pub fn start(&self) -> usize {
        match self {
            Plan::Leaf { chunk, .. } => chunk.start,
            Plan::Condensed { chunk, .. } => chunk.start,
        }
    }

    /// Number of sources.
    pub fn source_count(&self) -> usize {
        match self {
            Plan::Leaf { chunk, .. } => chunk.message_ids.len(),
            Plan::Condensed { chunk, .. } => chunk.summary_ids.len(),
        }
    }

    fn previous(&self) -> &[String] {
        match self {
            Plan::Leaf { previous, .. } | Plan::Condensed { previous, .. } => previous,
        }
    }
}

/// Kind of a pass: the kind of the summary it writes.
pub use crate::store::summaries::SummaryKind as PassKind;

/// A finished pass, as reported in `CompactResult.passes` and to `onProgress`.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "CompactionPass")]
pub struct PassRecord {
    /// Leaf or condensed.
    pub kind: PassKind,
    /// Depth of the new summary.
    pub depth: i64,
    /// The new summary.
    pub summary_id: String,
    /// How the summary was obtained.
    pub level: Level,
    /// Estimated tokens of the source text.
    pub tokens_in: i64,
    /// Estimated tokens of the summary.
    pub tokens_out: i64,
    /// Model that produced it.
    pub model: String,
    /// Wall-clock time of the pass.
    pub ms: u64,
    /// Number of sources (messages or summaries) replaced.
    pub source_count: usize,
    /// Context tokens before the pass.
    pub context_tokens_before: i64,
    /// Context tokens after the pass.
    pub context_tokens_after: i64,
}

/// What a pass needs besides its plan.
pub struct PassEnv<'a> {
    /// The store.
    pub store: &'a Store,
    /// The summarization pipeline.
    pub pipeline: &'a dyn SummaryPipeline,
    /// Zone for source headers.
    pub zone: Zone,
    /// The conversation.
    pub conversation_id: i64,
    /// Per-call instructions.
    pub custom_instructions: Option<String>,
    /// Trips to abandon the in-flight summarizer call (nothing is written).
    pub cancel: &'a CancelToken,
    /// `stripInjectedContextTags`: left out of user messages in the input.
    pub strip_tags: &'a [String],
}

/// How a pass ended without an error.
#[derive(Debug)]
pub enum PassEnd {
    /// The summary was written; `context_tokens_after` is left for the run to fill
    /// in from its in-memory list (or a re-read), with where the replacement was.
    Written(PassRecord, dag::Persisted),
    /// The sources changed before the write; nothing was written.
    Stale,
    /// Cancelled during the summarizer call; nothing was written.
    Cancelled,
    /// The summarizer failed (auth, callback, provider); nothing was written.
    SummarizerFailed(crate::error::LcmError),
}

/// Reads the plan's sources into a pipeline input, with a leaf's source message
/// rows (for its derived columns). `pending` holds summaries summarized but not
/// written yet (id, content); previous_context takes them from there. With `at`
/// (the stored ordinal the plan expects its first source at), the same read first
/// checks the sources are still there: `None` when they moved (compacted behind
/// the run's back), so nothing is summarized from a stale plan.
pub async fn read_input(
    env: &PassEnv<'_>,
    plan: &Plan,
    pending: Vec<(String, String)>,
    at: Option<i64>,
) -> Result<Option<(SummarizeInput, Vec<MsgRow>)>> {
    let zone = env.zone;
    let conversation_id = env.conversation_id;
    let sources = plan.sources();
    let ids = plan.previous().to_vec();
    let tags = env.strip_tags.to_vec();
    let read = env
        .store
        .read(move |c| {
            let Some(read) = sources_at(c, conversation_id, &sources, at, &zone, &tags)? else {
                return Ok(None);
            };
            Ok(Some((read, previous_context(c, &ids, &pending)?)))
        })
        .await?;
    Ok(read.map(|((input, rows), previous)| (complete(env, plan, input, previous), rows)))
}

/// The source part of [`read_input`] (no previous_context, depth or instructions).
fn sources_at(
    c: &rusqlite::Connection,
    conversation_id: i64,
    sources: &Sources,
    at: Option<i64>,
    zone: &Zone,
    strip_tags: &[String],
) -> Result<Option<(SummarizeInput, Vec<MsgRow>)>> {
    if let Some(start) = at {
        if !dag::sources_in_place(c, conversation_id, start, sources)? {
            return Ok(None);
        }
    }
    let render = source::Render {
        zone,
        timestamps: true,
        strip_tags,
    };
    source::input_with_rows(c, sources, render, &HashMap::new()).map(Some)
}

/// Fills in what the sources alone do not give: depth, previous_context, instructions.
fn complete(
    env: &PassEnv<'_>,
    plan: &Plan,
    mut input: SummarizeInput,
    previous: Option<String>,
) -> SummarizeInput {
    input.depth = plan.output_depth();
    input.previous_context = previous;
    input.custom_instructions = env.custom_instructions.clone();
    input
}

/// A leaf chunk's sources read ahead of its pass — while the previous pass's
/// summarizer call runs — by [`prefetch`]; used by [`read_prefetched`] only when
/// the pass plans exactly that chunk at that ordinal.
#[derive(Debug)]
pub struct Prefetched {
    message_ids: Vec<i64>,
    at: i64,
    input: SummarizeInput,
    rows: Vec<MsgRow>,
}

/// Reads a leaf chunk's sources ahead (checked at `at`, as [`read_input`] does);
/// `None` when they are not in place or the read failed (the pass then reads them
/// itself, and reports any error).
pub async fn prefetch(env: &PassEnv<'_>, message_ids: Vec<i64>, at: i64) -> Option<Prefetched> {
    let zone = env.zone;
    let conversation_id = env.conversation_id;
    let sources = Sources::Messages(message_ids.clone());
    let tags = env.strip_tags.to_vec();
    let read = env
        .store
        .read(move |c| sources_at(c, conversation_id, &sources, Some(at), &zone, &tags))
        .await;
    let (input, rows) = read.ok()??;
    Some(Prefetched {
        message_ids,
        at,
        input,
        rows,
    })
}

/// [`read_input`] from a prefetched read of the same leaf chunk at the same
/// ordinal (`None` otherwise): only previous_context is still to be filled in,
/// from `pending` or (for stored summaries) one small read.
pub async fn read_prefetched(
    env: &PassEnv<'_>,
    plan: &Plan,
    pending: &[(String, String)],
    at: Option<i64>,
    ahead: Prefetched,
) -> Result<Option<(SummarizeInput, Vec<MsgRow>)>> {
    let Plan::Leaf { chunk, previous } = plan else {
        return Ok(None);
    };
    if at != Some(ahead.at) || chunk.message_ids != ahead.message_ids {
        return Ok(None);
    }
    let previous = if previous
        .iter()
        .all(|id| pending.iter().any(|(p, _)| p == id))
    {
        previous_from(previous, pending, HashMap::new())
    } else {
        let ids = previous.clone();
        let pending = pending.to_vec();
        env.store
            .read(move |c| previous_context(c, &ids, &pending))
            .await?
    };
    Ok(Some((
        complete(env, plan, ahead.input, previous),
        ahead.rows,
    )))
}

fn previous_context(
    c: &rusqlite::Connection,
    ids: &[String],
    pending: &[(String, String)],
) -> Result<Option<String>> {
    let stored: Vec<String> = ids
        .iter()
        .filter(|id| !pending.iter().any(|(p, _)| p == *id))
        .cloned()
        .collect();
    let stored: HashMap<String, String> = summaries::by_ids(c, &stored)?
        .into_iter()
        .map(|s| (s.summary_id, s.content))
        .collect();
    Ok(previous_from(ids, pending, stored))
}

/// previous_context of `ids`: each one's text from `pending`, else from `stored`.
fn previous_from(
    ids: &[String],
    pending: &[(String, String)],
    mut stored: HashMap<String, String>,
) -> Option<String> {
    let held = |id: &String| {
        pending
            .iter()
            .find(|(p, _)| p == id)
            .map(|(_, t)| t.clone())
    };
    let texts: Vec<String> = ids
        .iter()
        .filter_map(|id| held(id).or_else(|| stored.remove(id)))
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}

/// A source with no text at all is recorded without calling the summarizer, so the
/// messages stay covered and the sweep moves on. Its text says what it covers.
fn empty_source_summary(input: &SummarizeInput) -> SummarizeOutput {
    let content = empty_source_label(input.child_count, input.hidden_count);
    SummarizeOutput {
        tokens_out: tokens::estimate(&content),
        content,
        level: Level::Fallback,
        model: "deterministic".into(),
        tokens_in: 0,
    }
}

/// `[2 source items without text content]`, `[1 source item kept out of the
/// model's context]`, or both counts when the source mixes the two.
fn empty_source_label(blank: usize, hidden: usize) -> String {
    let items = |n: usize| crate::counts::plural(n, "source item", "source items");
    let kept_out = "kept out of the model's context";
    match (blank, hidden) {
        (b, 0) => format!("[{} without text content]", items(b)),
        (0, h) => format!("[{} {kept_out}]", items(h)),
        (b, h) => format!(
            "[{} without text content, {} {kept_out}]",
            items(b),
            crate::counts::thousands(h as i64)
        ),
    }
}

/// Summarizes the input; an empty source never reaches the pipeline.
pub async fn summarize(env: &PassEnv<'_>, input: SummarizeInput) -> Result<SummarizeOutput> {
    if input.source_text.trim().is_empty() {
        return Ok(empty_source_summary(&input));
    }
    env.pipeline.run(input).await
}

/// The writer job: re-validates and persists in one transaction, returning what
/// was written and where, or `None` when the sources moved. `start_hint` is the
/// ordinal the sources were planned at (checked by the writer, never trusted). The
/// replaced run's other ordinals are left as gaps ([`dag::persist_batch`]).
pub async fn write(
    store: &Store,
    features: Features,
    summary: NewSummary,
    start_hint: Option<i64>,
    rows: Vec<MsgRow>,
) -> Result<Option<dag::Persisted>> {
    let id = dag::new_summary_id(&summary.content);
    let one = vec![dag::Queued {
        summary,
        id,
        start_hint,
        rows,
    }];
    Ok(write_batch(store, features, one)
        .await?
        .and_then(|mut w| w.pop()))
}

/// A pass whose summary is ready but not written.
#[derive(Debug)]
pub struct Summarized {
    /// The record (`context_tokens_after` = before until the caller sets it; the
    /// summary id is empty until one is chosen).
    pub record: PassRecord,
    /// What to write.
    pub summary: NewSummary,
    /// When the pass started.
    pub started: Instant,
    /// How long the summarizer call took (reading the sources excluded).
    pub call: std::time::Duration,
    /// A leaf's source message rows, as read ([`dag::Queued::rows`]).
    pub rows: Vec<MsgRow>,
}

/// How the summarizer part of a pass ended.
#[derive(Debug)]
pub enum Summarize {
    /// Ready to write.
    Ready(Box<Summarized>),
    /// Cancelled during the summarizer call.
    Cancelled,
    /// The summarizer failed.
    Failed(crate::error::LcmError),
    /// The sources were no longer where the plan expected them; nothing was
    /// summarized.
    Stale,
}

/// Reads the plan's sources (checked at `at`, see [`read_input`]) and summarizes
/// them; writes nothing.
pub async fn summarize_plan(
    env: &PassEnv<'_>,
    plan: &Plan,
    before: i64,
    pending: Vec<(String, String)>,
    at: Option<i64>,
) -> Result<Summarize> {
    let started = Instant::now();
    let read = read_input(env, plan, pending, at).await?;
    summarize_read(env, plan, before, read, started).await
}

/// The summarizer part of [`summarize_plan`], from the read sources (`None`: they
/// moved, [`Summarize::Stale`]); `started` is when the pass started.
pub async fn summarize_read(
    env: &PassEnv<'_>,
    plan: &Plan,
    before: i64,
    read: Option<(SummarizeInput, Vec<MsgRow>)>,
    started: Instant,
) -> Result<Summarize> {
    let Some((input, rows)) = read else {
        return Ok(Summarize::Stale);
    };
    let called = Instant::now();
    let out = tokio::select! {
        biased;
        _ = env.cancel.cancelled() => return Ok(Summarize::Cancelled),
        out = summarize(env, input) => match out {
            Ok(out) => out,
            Err(e) => return Ok(Summarize::Failed(e)),
        },
    };
    let call = called.elapsed();
    if env.cancel.is_cancelled() {
        return Ok(Summarize::Cancelled);
    }
    let summary = NewSummary {
        conversation_id: env.conversation_id,
        content: out.content.clone(),
        model: out.model.clone(),
        sources: plan.sources(),
    };
    let kind = match plan {
        Plan::Leaf { .. } => PassKind::Leaf,
        Plan::Condensed { .. } => PassKind::Condensed,
    };
    let record = PassRecord {
        kind,
        depth: plan.output_depth(),
        summary_id: String::new(),
        level: out.level,
        tokens_in: out.tokens_in,
        tokens_out: out.tokens_out,
        model: out.model,
        ms: 0,
        source_count: plan.source_count(),
        context_tokens_before: before,
        context_tokens_after: before,
    };
    Ok(Summarize::Ready(Box::new(Summarized {
        record,
        summary,
        started,
        call,
        rows,
    })))
}

/// The writer job for a batch: one transaction, all or nothing; `None` when a
/// summary's sources moved (nothing written).
pub async fn write_batch(
    store: &Store,
    features: Features,
    batch: Vec<dag::Queued>,
) -> Result<Option<Vec<dag::Persisted>>> {
    start_batch(store, features, batch).await
}

/// [`write_batch`], queued to the writer at once (not when first polled): the
/// caller may go on and await the outcome later.
pub fn start_batch(
    store: &Store,
    features: Features,
    batch: Vec<dag::Queued>,
) -> impl std::future::Future<Output = Result<Option<Vec<dag::Persisted>>>> + Send + Sync + 'static
{
    let written = store.write_tx(move |tx| dag::persist_batch(tx, &batch, features));
    async move {
        match written.await {
            Ok(p) => Ok(Some(p)),
            // The sources moved (compacted, or no longer a run): nothing was written.
            Err(e) if matches!(e.code, ErrorCode::InvalidInput | ErrorCode::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Runs one planned pass; `before` is the context's token count when it was planned,
/// `start_hint` the stored ordinal of its first source. The record's
/// `context_tokens_after` is `before` until the caller sets it.
pub async fn run_pass(
    env: &PassEnv<'_>,
    plan: &Plan,
    before: i64,
    start_hint: Option<i64>,
) -> Result<PassEnd> {
    let done = match summarize_plan(env, plan, before, Vec::new(), start_hint).await? {
        Summarize::Ready(done) => *done,
        Summarize::Cancelled => return Ok(PassEnd::Cancelled),
        Summarize::Failed(e) => return Ok(PassEnd::SummarizerFailed(e)),
        Summarize::Stale => return Ok(PassEnd::Stale),
    };
    let features = env.store.features();
    let Some(persisted) = write(env.store, features, done.summary, start_hint, done.rows).await?
    else {
        return Ok(PassEnd::Stale);
    };
    let mut rec = done.record;
    rec.summary_id = persisted.summary_id.clone();
    rec.ms = done.started.elapsed().as_millis() as u64;
    Ok(PassEnd::Written(rec, persisted))
}

/// Σ tokens of a snapshot (equals the stored context token count).
pub fn snapshot_tokens(items: &[ContextItem]) -> i64 {
    items.iter().map(|i| i.token_count.max(0)).sum()
}

#[cfg(test)]
mod tests {
    use super::empty_source_label;

    #[test]
    fn an_empty_source_says_how_many_items_it_covers_and_why_they_have_no_text() {
        assert_eq!(
            empty_source_label(1, 0),
            "[1 source item without text content]"
        );
        assert_eq!(
            empty_source_label(3, 0),
            "[3 source items without text content]"
        );
        assert_eq!(
            empty_source_label(0, 1),
            "[1 source item kept out of the model's context]"
        );
        assert_eq!(
            empty_source_label(0, 12),
            "[12 source items kept out of the model's context]"
        );
        assert_eq!(
            empty_source_label(2, 5),
            "[2 source items without text content, 5 kept out of the model's context]"
        );
        assert_eq!(
            empty_source_label(0, 1_200),
            "[1,200 source items kept out of the model's context]"
        );
    }
}
