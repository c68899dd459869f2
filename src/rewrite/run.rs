//! Running a rewrite: prepare each summary's input fresh from the database,
//! summarize it, and (with `apply`) write `content` + `token_count` + its full-text
//! rows in one transaction per summary.
//!
//! Order and concurrency: depth by depth, bottom-up. Leaves run one after another
//! (a leaf's previous context may be the leaf just rewritten); the condensed nodes of
//! one depth are independent and run up to `concurrency` at a time, their results
//! taken — and written — in plan order. So the rewrites written before an error are
//! always a prefix of the plan, and a run with any concurrency produces what a
//! sequential run produces.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::stream::{self, StreamExt};
use rusqlite::Connection;
use serde::Serialize;

use super::plan::{self, PlannedSummary, Selector};
use super::source::{self, Overlay, Prepared};
use crate::compaction::CancelToken;
use crate::error::{ErrorCode, LcmError, Result};
use crate::store::{summaries, Store};
use crate::summarize::{Level, SummaryPipeline};
use crate::timeformat::Zone;
use crate::timestamp;
use crate::tokens;

/// Where a rewrite reads and writes.
#[derive(Clone)]
pub enum RewriteDb {
    /// An open engine's store (reads on pooled read connections, writes on the
    /// writer thread).
    Store(Store),
    /// A read-only connection (dry runs of the command line): writing is an error.
    ReadOnly(Arc<Mutex<Connection>>),
}

impl RewriteDb {
    /// Wraps a read-only connection.
    pub fn read_only(conn: Connection) -> RewriteDb {
        RewriteDb::ReadOnly(Arc::new(Mutex::new(conn)))
    }

    /// Runs a read job off the async threads.
    pub async fn read<T, F>(&self, job: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        match self {
            RewriteDb::Store(s) => s.read(job).await,
            RewriteDb::ReadOnly(c) => {
                let c = c.clone();
                tokio::task::spawn_blocking(move || {
                    let conn = c
                        .lock()
                        .map_err(|_| LcmError::internal("read connection poisoned"))?;
                    job(&conn)
                })
                .await
                .map_err(|e| LcmError::internal(format!("read task failed: {e}")))?
            }
        }
    }

    fn can_write(&self) -> bool {
        matches!(self, RewriteDb::Store(_))
    }
}

/// How to run a rewrite.
#[derive(Debug, Clone)]
pub struct RewriteOptions {
    /// The conversation.
    pub conversation_id: i64,
    /// Which summaries.
    pub selector: Selector,
    /// Write the new texts (false: a dry run, nothing is written).
    pub apply: bool,
    /// Timestamp / time-range headers in the source text.
    pub timestamps: bool,
    /// Condensed summaries of one depth summarized at once (at least 1).
    pub concurrency: usize,
    /// Tripping it stops the run: an in-flight summarizer call is dropped (its HTTP
    /// request closed) and nothing of it is written.
    pub cancel: CancelToken,
    /// `stripInjectedContextTags`, as compaction left them out of the input.
    pub strip_tags: Vec<String>,
}

/// The error of a cancelled run (`LCM_ABORTED`).
pub fn aborted() -> LcmError {
    LcmError::new(
        ErrorCode::Aborted,
        "aborted: the summarizer call was cancelled",
    )
}

/// One rewritten (or, in a dry run, previewed) summary.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct RewriteEntry {
    /// `sum_…`.
    pub summary_id: String,
    /// `leaf` or `condensed`.
    pub kind: crate::store::summaries::SummaryKind,
    /// 0 for leaves.
    pub depth: i64,
    /// Source messages (leaf) or source summaries (condensed).
    pub child_count: i64,
    /// Earliest source time (ISO).
    pub earliest_at: Option<String>,
    /// Latest source time (ISO).
    pub latest_at: Option<String>,
    /// The summary's time range in the display zone (`2026-02-17 15:37–21:14 UTC`).
    pub time_range: Option<String>,
    /// The stored text before.
    pub old_content: String,
    /// The new text (equal to the old one when skipped).
    pub new_content: String,
    /// Stored token count before.
    pub old_tokens: i64,
    /// Token count of the new text.
    pub new_tokens: i64,
    /// `new_tokens - old_tokens`.
    pub delta: i64,
    /// Unified diff old → new (empty when equal).
    pub diff: String,
    /// How the pipeline obtained the text (`normal`, `aggressive`, `fallback`,
    /// `capped`); `null` when skipped.
    pub level: Option<Level>,
    /// The model that wrote it; `null` when skipped.
    pub model: Option<String>,
    /// Whether the new text was written to the database.
    pub applied: bool,
    /// Why the summary was left as it is, if it was.
    pub skipped: Option<String>,
}

/// Why a run stopped.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct RewriteFailure {
    /// The summary being rewritten.
    pub summary_id: String,
    /// Its depth.
    pub depth: i64,
    /// The `LCM_…` code.
    #[serde(serialize_with = "code_str")]
    #[ts(as = "crate::error::ErrorCode")]
    pub code: ErrorCode,
    /// The message.
    pub message: String,
}

fn code_str<S: serde::Serializer>(c: &ErrorCode, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(c.as_str())
}

/// The result of a run.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct RewriteReport {
    /// The conversation.
    pub conversation_id: i64,
    /// True for a dry run (nothing written).
    pub dry_run: bool,
    /// Summaries in the plan.
    pub planned: usize,
    /// One entry per summary done, in plan order.
    pub entries: Vec<RewriteEntry>,
    /// Σ old token counts of the entries.
    pub old_tokens: i64,
    /// Σ new token counts of the entries.
    pub new_tokens: i64,
    /// `new_tokens - old_tokens`.
    pub delta: i64,
    /// Always null on a resolved promise (a failed run rejects); set when a run
    /// stopped early (the entries before it stand).
    pub error: Option<RewriteFailure>,
}

/// A progress event: one more summary done.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct RewriteProgress {
    /// Summaries done so far, this one included.
    pub completed: usize,
    /// Summaries in the plan.
    pub total: usize,
    /// This summary's entry.
    pub entry: RewriteEntry,
}

/// Called after each summary.
pub type ProgressFn = Arc<dyn Fn(&RewriteProgress) + Send + Sync>;

/// The plan for a selector.
pub async fn plan_on(
    db: &RewriteDb,
    conversation_id: i64,
    selector: Selector,
) -> Result<Vec<PlannedSummary>> {
    db.read(move |c| plan::plan(c, conversation_id, &selector))
        .await
}

/// Unified diff old → new with `old/<id>`, `new/<id>` headers.
pub fn diff_text(id: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    crate::prompts::catalog::unified_diff(old, new, &format!("old/{id}"), &format!("new/{id}"))
}

/// A planned summary's time range in `zone` (`2026-02-17 15:37–21:14 UTC`).
pub fn summary_time_range(item: &PlannedSummary, zone: &Zone) -> Option<String> {
    let parse = |v: &Option<String>| v.as_deref().and_then(timestamp::parse);
    let (a, b) = (parse(&item.earliest_at), parse(&item.latest_at));
    match (a.or(b), b.or(a)) {
        (Some(a), Some(b)) => Some(zone.format_range(a, b)),
        _ => None,
    }
}

/// One summary's input as the next rewrite would build it (fresh from the database;
/// previous context = the leaf before it), with its plan row.
pub async fn prepare_single(
    db: &RewriteDb,
    conversation_id: i64,
    summary_id: &str,
    zone: Zone,
    timestamps: bool,
    strip_tags: Vec<String>,
) -> Result<(PlannedSummary, Prepared)> {
    let selector = Selector::Summary {
        id: summary_id.to_owned(),
        subtree: false,
    };
    let item = plan_on(db, conversation_id, selector)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| LcmError::not_found(format!("summary {summary_id} not found")))?;
    let it = item.clone();
    let prepared = db
        .read(move |c| {
            let previous = if it.is_leaf() {
                let order = plan::leaf_order(c, conversation_id)?;
                let pos = order.iter().position(|x| *x == it.summary_id);
                pos.and_then(|i| i.checked_sub(1)).map(|i| order[i].clone())
            } else {
                None
            };
            source::rebuild(
                c,
                &it,
                &zone,
                timestamps,
                &strip_tags,
                &Overlay::new(),
                previous.as_deref(),
            )
        })
        .await?;
    Ok((item, prepared))
}

struct Ctx {
    db: RewriteDb,
    pipeline: Arc<dyn SummaryPipeline>,
    zone: Zone,
    timestamps: bool,
    cancel: CancelToken,
    strip_tags: Vec<String>,
}

/// Prepares and summarizes one summary (no writes).
async fn rewrite_one(
    ctx: &Ctx,
    item: PlannedSummary,
    overlay: Arc<Overlay>,
    previous_leaf: Option<String>,
) -> std::result::Result<RewriteEntry, (PlannedSummary, LcmError)> {
    let zone = ctx.zone;
    let ts = ctx.timestamps;
    let it = item.clone();
    let ov = overlay.clone();
    let tags = ctx.strip_tags.clone();
    let prepared: Result<Prepared> = ctx
        .db
        .read(move |c| source::rebuild(c, &it, &zone, ts, &tags, &ov, previous_leaf.as_deref()))
        .await;
    let p = match prepared {
        Ok(p) => p,
        Err(e) => return Err((item, e)),
    };
    let (new_content, level, model) = match &p.skip {
        Some(_) => (p.old_content.clone(), None, None),
        None => {
            if ctx.cancel.is_cancelled() {
                return Err((item, aborted()));
            }
            // Dropping the losing branch drops the HTTP request with it.
            let called = tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => Err(aborted()),
                r = ctx.pipeline.run(p.input.clone()) => r,
            };
            match called {
                Ok(out) => (out.content, Some(out.level), Some(out.model)),
                Err(e) => return Err((item, e)),
            }
        }
    };
    let new_tokens = if p.skip.is_some() {
        p.old_tokens
    } else {
        tokens::estimate(&new_content)
    };
    Ok(RewriteEntry {
        diff: diff_text(&item.summary_id, &p.old_content, &new_content),
        time_range: summary_time_range(&item, &ctx.zone),
        summary_id: item.summary_id,
        kind: item.kind,
        depth: item.depth,
        child_count: item.child_count,
        earliest_at: item.earliest_at,
        latest_at: item.latest_at,
        old_tokens: p.old_tokens,
        new_tokens,
        delta: new_tokens - p.old_tokens,
        old_content: p.old_content,
        new_content,
        level,
        model,
        applied: false,
        skipped: p.skip,
    })
}

fn failure(item: &PlannedSummary, e: LcmError) -> RewriteFailure {
    RewriteFailure {
        summary_id: item.summary_id.clone(),
        depth: item.depth,
        code: e.code,
        message: e.message,
    }
}

struct State {
    report: RewriteReport,
    overlay: Overlay,
    progress: Option<ProgressFn>,
    apply: bool,
    conversation_id: i64,
}

impl State {
    /// Writes (with apply) and records one finished entry; an error stops the run,
    /// and so does a cancellation that arrived with the answer (nothing is written).
    async fn finish(
        &mut self,
        db: &RewriteDb,
        cancel: &CancelToken,
        mut entry: RewriteEntry,
    ) -> Result<()> {
        if cancel.is_cancelled() {
            return Err(aborted());
        }
        let changed = entry.skipped.is_none();
        if self.apply && changed {
            let RewriteDb::Store(store) = db else {
                return Err(LcmError::internal("this database was opened read-only"));
            };
            let (conv, id, content) = (
                self.conversation_id,
                entry.summary_id.clone(),
                entry.new_content.clone(),
            );
            let features = store.features();
            store
                .write(move |c| summaries::replace_content(c, conv, &id, &content, features))
                .await?;
            entry.applied = true;
        }
        if changed {
            self.overlay
                .insert(entry.summary_id.clone(), entry.new_content.clone());
        }
        self.report.old_tokens += entry.old_tokens;
        self.report.new_tokens += entry.new_tokens;
        self.report.delta = self.report.new_tokens - self.report.old_tokens;
        self.report.entries.push(entry);
        if let Some(cb) = &self.progress {
            let done = self.report.entries.len();
            let ev = RewriteProgress {
                completed: done,
                total: self.report.planned,
                entry: self.report.entries[done - 1].clone(),
            };
            cb(&ev);
        }
        Ok(())
    }
}

/// Runs a rewrite. Errors before anything ran (unknown ids, a read-only database
/// with `apply`) are returned as `Err`; an error during the run ends it and is
/// reported in [`RewriteReport::error`] with the entries done before it.
pub async fn run(
    db: &RewriteDb,
    pipeline: Arc<dyn SummaryPipeline>,
    zone: Zone,
    opts: RewriteOptions,
    progress: Option<ProgressFn>,
) -> Result<RewriteReport> {
    if opts.apply && !db.can_write() {
        return Err(LcmError::invalid(
            "apply needs a writable database (open the engine)",
        ));
    }
    if opts.concurrency == 0 {
        return Err(LcmError::invalid("concurrency must be at least 1"));
    }
    let conv = opts.conversation_id;
    let items = plan_on(db, conv, opts.selector.clone()).await?;
    let needs_leaves = items.iter().any(|i| i.is_leaf());
    let leaf_order = if needs_leaves {
        db.read(move |c| plan::leaf_order(c, conv)).await?
    } else {
        Vec::new()
    };
    let pos = source::positions(&leaf_order);
    let ctx = Ctx {
        db: db.clone(),
        pipeline,
        zone,
        timestamps: opts.timestamps,
        cancel: opts.cancel.clone(),
        strip_tags: opts.strip_tags.clone(),
    };
    let mut st = State {
        report: RewriteReport {
            conversation_id: conv,
            dry_run: !opts.apply,
            planned: items.len(),
            entries: Vec::with_capacity(items.len()),
            old_tokens: 0,
            new_tokens: 0,
            delta: 0,
            error: None,
        },
        overlay: HashMap::new(),
        progress,
        apply: opts.apply,
        conversation_id: conv,
    };
    let mut by_depth: Vec<(i64, Vec<PlannedSummary>)> = Vec::new();
    for it in items {
        match by_depth.last_mut() {
            Some((d, v)) if *d == it.depth => v.push(it),
            _ => by_depth.push((it.depth, vec![it])),
        }
    }
    for (depth, group) in by_depth {
        let stop = if depth <= 0 {
            run_leaves(&ctx, &mut st, group, &pos, &leaf_order).await
        } else {
            run_condensed(&ctx, &mut st, group, opts.concurrency).await
        };
        if let Some(f) = stop {
            st.report.error = Some(f);
            break;
        }
    }
    Ok(st.report)
}

async fn run_leaves(
    ctx: &Ctx,
    st: &mut State,
    group: Vec<PlannedSummary>,
    pos: &HashMap<String, usize>,
    order: &[String],
) -> Option<RewriteFailure> {
    for item in group {
        let previous = pos
            .get(&item.summary_id)
            .and_then(|&i| i.checked_sub(1))
            .map(|i| order[i].clone());
        let overlay = Arc::new(st.overlay.clone());
        let entry = match rewrite_one(ctx, item.clone(), overlay, previous).await {
            Ok(e) => e,
            Err((it, e)) => return Some(failure(&it, e)),
        };
        if let Err(e) = st.finish(&ctx.db, &ctx.cancel, entry).await {
            return Some(failure(&item, e));
        }
    }
    None
}

async fn run_condensed(
    ctx: &Ctx,
    st: &mut State,
    group: Vec<PlannedSummary>,
    concurrency: usize,
) -> Option<RewriteFailure> {
    // Children are all of lower depths: the overlay is complete for this depth.
    let overlay = Arc::new(st.overlay.clone());
    let mut results = stream::iter(group)
        .map(|item| rewrite_one(ctx, item, overlay.clone(), None))
        .buffered(concurrency);
    while let Some(r) = results.next().await {
        match r {
            Ok(entry) => {
                let item_id = entry.summary_id.clone();
                let depth = entry.depth;
                if let Err(e) = st.finish(&ctx.db, &ctx.cancel, entry).await {
                    return Some(RewriteFailure {
                        summary_id: item_id,
                        depth,
                        code: e.code,
                        message: e.message,
                    });
                }
            }
            Err((it, e)) => return Some(failure(&it, e)),
        }
    }
    None
}

/// The error a failed run maps to (for callers that reject instead of reporting).
pub fn report_error(r: &RewriteReport) -> Option<LcmError> {
    let f = r.error.as_ref()?;
    let code = f.code;
    let done = r.entries.iter().filter(|e| e.applied).count();
    let kept = if r.dry_run {
        "nothing was written (dry run)".to_owned()
    } else if done == 0 {
        "nothing was written".to_owned()
    } else {
        format!(
            "the {done} rewrite{} applied before it stay{}",
            if done == 1 { "" } else { "s" },
            if done == 1 { "s" } else { "" }
        )
    };
    Some(LcmError::new(
        code,
        format!(
            "rewrite stopped at {} (d{}, {} of {}): {}; {kept}",
            f.summary_id,
            f.depth,
            r.entries.len() + 1,
            r.planned,
            f.message
        ),
    ))
}
