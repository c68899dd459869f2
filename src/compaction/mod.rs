//! The compaction engine: turns the oldest raw messages outside the fresh tail into
//! leaf summaries and same-depth runs of summaries into condensed ones, until the
//! mode's goal is met. Plain Rust; the binding and the engine call [`Compactor`].
//!
//! - [`select`]: pure selection over a context-list snapshot (tail, chunks, fanout).
//! - [`source`]: the text the summarizer reads (timestamped blocks).
//! - [`pass`]: one pass — read, summarize with no connection held, one write job.
//! - [`run`]: the modes (`incremental`, `sweep`, `untilUnder`), bounds and results.
//! - [`list`]: [`list::ContextList`], the in-memory context list a run plans from
//!   (stored ordinals, a running token sum).
//! - [`control`]: per-conversation lock and cancel tokens.
//! - [`turn`]: `afterTurn`'s params and their split into an ingest batch + a sweep.

pub mod control;
pub mod list;
pub mod pass;
pub mod run;
pub mod select;
pub mod source;
pub mod turn;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use control::{CancelToken, Coordinator};
pub use pass::{PassKind, PassRecord};
pub use turn::{AfterTurnParams, AfterTurnResult};

use crate::config::EngineOptions;
use crate::error::{LcmError, Result};
use crate::store::conversations::{self, SessionRef};
use crate::store::{messages, Store};
use crate::summarize::SummaryPipeline;

/// How much to compact. `incremental`: one leaf pass, then condensation up to
/// `incrementalMaxDepth` (also runs when the leaf trigger fires). `sweep`: leaf
/// passes until none is eligible, then condensation shallowest-first; while still
/// over the threshold, condensation again with `condensedMinFanoutHard`; each phase
/// stops when a pass no longer reduces tokens. `untilUnder`: up to `maxRounds`
/// forced sweeps until the context is at or under `targetTokens` (default
/// tokenBudget); equality still compacts once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "CompactMode")]
pub enum Mode {
    /// One leaf pass, then condensation up to `incrementalMaxDepth`.
    Incremental,
    /// Leaf passes until none is eligible, then condensation, shallowest first.
    #[default]
    Sweep,
    /// Up to `maxRounds` forced sweeps until the context is at or under the target.
    UntilUnder,
}

/// Per-call replacements of the compaction policy (the plugin's
/// `contextThresholdOverrides` rules): what is given replaces the engine's option
/// for this call only.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct PolicyOverrides {
    /// Replaces `contextThreshold`, in (0, 1].
    #[serde(default)]
    pub context_threshold: Option<f64>,
    /// Replaces `freshTailCount`.
    #[serde(default)]
    pub fresh_tail_count: Option<i64>,
    /// Replaces `leafChunkTokens`.
    #[serde(default)]
    pub leaf_chunk_tokens: Option<i64>,
}

impl PolicyOverrides {
    /// The options with these replacements (the same `Arc` when there are none);
    /// an error naming the key when a value is out of range.
    pub fn apply(
        overrides: Option<&PolicyOverrides>,
        opts: &Arc<EngineOptions>,
    ) -> Result<Arc<EngineOptions>> {
        let Some(o) = overrides.filter(|o| **o != PolicyOverrides::default()) else {
            return Ok(opts.clone());
        };
        let mut next = EngineOptions::clone(opts);
        if let Some(t) = o.context_threshold {
            next.context_threshold = t;
        }
        if let Some(n) = o.fresh_tail_count {
            next.fresh_tail_count = n;
        }
        if let Some(n) = o.leaf_chunk_tokens {
            next.leaf_chunk_tokens = n;
        }
        next.validate()
            .map_err(|e| LcmError::invalid(format!("overrides: {}", e.message)))?;
        Ok(Arc::new(next))
    }
}

/// Parameters of `evaluate`.
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct EvaluateParams {
    /// Runtime session id.
    pub session_id: String,
    /// Stable session key.
    #[serde(default)]
    pub session_key: Option<String>,
    /// The model's context budget, in tokens.
    pub token_budget: i64,
    /// The host's observed token count of the live context, if known.
    #[serde(default)]
    pub current_token_count: Option<i64>,
    /// This call's policy replacements.
    #[serde(default)]
    pub overrides: Option<PolicyOverrides>,
}

/// The answer of `evaluate`: compaction is due when `currentTokens > threshold`
/// (strictly).
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct Evaluation {
    /// `currentTokens > threshold`.
    pub should_compact: bool,
    /// `threshold` when compaction is due, else `none`.
    #[ts(type = "\"threshold\" | \"none\"")]
    pub reason: String,
    /// max(stored context tokens, currentTokenCount).
    pub current_tokens: i64,
    /// ⌊contextThreshold × tokenBudget⌋.
    pub threshold: i64,
    /// The budget evaluated against.
    pub token_budget: i64,
    /// Σ tokens of the stored context list.
    pub stored_tokens: i64,
    /// The host's count, when given and positive.
    pub observed_tokens: Option<i64>,
    /// Raw message tokens outside the fresh tail (diagnostic; the leaf trigger).
    pub raw_tokens_outside_tail: i64,
    /// Whether raw tokens outside the tail reach `leafChunkTokens`.
    pub leaf_trigger: bool,
    /// The conversation, when the session has one.
    pub conversation_id: Option<i64>,
}

/// Parameters of `compact`. Keys the host passes besides these are ignored; its
/// `compactionTarget: "budget"` means `mode: "untilUnder"`, and without
/// `tokenBudget` its stated budget is used (see [`crate::host::stated_budget`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "HostCompactParams")]
pub struct CompactParams {
    /// Runtime session id.
    pub session_id: String,
    /// Stable session key.
    #[serde(default)]
    pub session_key: Option<String>,
    /// The model's context budget, in tokens.
    pub token_budget: i64,
    /// `incremental`, `sweep` (default) or `untilUnder`.
    #[serde(default)]
    pub mode: Mode,
    /// Compact even when under the threshold.
    #[serde(default)]
    pub force: bool,
    /// The host's observed token count of the live context, if known.
    #[serde(default)]
    pub current_token_count: Option<i64>,
    /// Instructions for this call's prompts (override the configured ones).
    #[serde(default)]
    pub custom_instructions: Option<String>,
    /// `untilUnder` target (default: tokenBudget).
    #[serde(default)]
    pub target_tokens: Option<i64>,
    /// This call's policy replacements.
    #[serde(default)]
    pub overrides: Option<PolicyOverrides>,
}

/// `compact` parameters as the host may send them.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HostCompactParams {
    session_id: String,
    #[serde(default)]
    session_key: Option<String>,
    #[serde(default)]
    token_budget: Option<i64>,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    compaction_target: Option<String>,
    #[serde(default)]
    force: bool,
    #[serde(default)]
    current_token_count: Option<i64>,
    #[serde(default)]
    custom_instructions: Option<String>,
    #[serde(default)]
    target_tokens: Option<i64>,
    #[serde(default)]
    runtime_context: Option<serde_json::Value>,
    #[serde(default)]
    runtime_settings: Option<serde_json::Value>,
    #[serde(default)]
    overrides: Option<PolicyOverrides>,
}

impl TryFrom<HostCompactParams> for CompactParams {
    type Error = String;

    fn try_from(h: HostCompactParams) -> std::result::Result<Self, String> {
        let token_budget = host_budget(
            "compact",
            h.token_budget,
            h.runtime_context.as_ref(),
            h.runtime_settings.as_ref(),
        )?;
        let mode = h.mode.unwrap_or(match h.compaction_target.as_deref() {
            Some("budget") => Mode::UntilUnder,
            _ => Mode::Sweep,
        });
        Ok(CompactParams {
            session_id: h.session_id,
            session_key: h.session_key,
            token_budget,
            mode,
            force: h.force,
            current_token_count: h.current_token_count,
            custom_instructions: h.custom_instructions,
            target_tokens: h.target_tokens,
            overrides: h.overrides,
        })
    }
}

/// `tokenBudget`, else the host's stated budget; an error naming the call without
/// either.
pub(crate) fn host_budget(
    call: &str,
    given: Option<i64>,
    runtime_context: Option<&serde_json::Value>,
    runtime_settings: Option<&serde_json::Value>,
) -> std::result::Result<i64, String> {
    given
        .or_else(|| crate::host::stated_budget(runtime_context, runtime_settings).map(|b| b as i64))
        .ok_or_else(|| {
            format!("{call} needs tokenBudget (or the host's runtimeContext.tokenBudget)")
        })
}

/// The result of `compact` (never an error for "nothing to do").
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct CompactResult {
    /// False when the summarizer failed, or `untilUnder` missed its target.
    pub ok: bool,
    /// True only if at least one summary was written.
    pub compacted: bool,
    /// Why the call ended: `below threshold`, `nothing to compact`, `compacted`,
    /// `compacted; still over threshold`, `already under target`, `could not reach
    /// target`, `aborted`, `deadline reached (sweepDeadlineMs)`, `iteration cap
    /// reached (maxSweepIterations)`, `summarizer failed (LCM_…): …`, …
    pub reason: String,
    /// Nothing is left to compact and the context is still over the target.
    pub exhausted: bool,
    /// The call was cancelled (finished passes are kept).
    pub aborted: bool,
    /// The error code of a summarizer failure (`LCM_LLM_AUTH`, `LCM_CALLBACK`, …).
    #[ts(as = "Option<crate::error::ErrorCode>")]
    pub error_code: Option<String>,
    /// The mode that ran.
    pub mode: Mode,
    /// The conversation, when the session has one.
    pub conversation_id: Option<i64>,
    /// Stored context tokens before.
    pub tokens_before: i64,
    /// Stored context tokens after.
    pub tokens_after: i64,
    /// max(stored, currentTokenCount) before.
    pub current_tokens: i64,
    /// ⌊contextThreshold × tokenBudget⌋.
    pub threshold: i64,
    /// The goal the mode compacted toward (threshold, or the untilUnder target).
    pub target_tokens: i64,
    /// Sweeps run by `untilUnder` (1 for a sweep, 0 when nothing ran).
    pub rounds: i64,
    /// Every written pass, in order.
    pub passes: Vec<PassRecord>,
    /// Summarizer requests this call made and their estimated tokens.
    pub summarizer: crate::summarize::meter::Usage,
}

/// Receives each pass as it finishes.
pub type ProgressFn = Arc<dyn Fn(&PassRecord) + Send + Sync>;

/// Per-call hooks: cancellation and progress.
#[derive(Clone, Default)]
pub struct Hooks {
    /// Tripped by an AbortSignal or `cancel(sessionId)`.
    pub cancel: CancelToken,
    /// Called after each written pass.
    pub on_progress: Option<ProgressFn>,
}

/// Everything a compaction call needs.
#[derive(Clone)]
pub struct Compactor {
    /// The store.
    pub store: Store,
    /// The options in force.
    pub opts: Arc<EngineOptions>,
    /// Prompt rendering + summarizer + escalation.
    pub pipeline: Arc<dyn SummaryPipeline>,
    /// Locks and cancel tokens shared by the engine's calls.
    pub coordinator: Arc<Coordinator>,
}

/// ⌊ratio × budget⌋.
pub fn threshold_for(ratio: f64, budget: i64) -> i64 {
    (ratio * budget as f64).floor() as i64
}

/// Whether compaction is due: strictly over the threshold.
pub fn over_threshold(current: i64, threshold: i64) -> bool {
    current > threshold
}

fn check_budget(budget: i64) -> Result<()> {
    if budget <= 0 {
        return Err(LcmError::invalid(format!(
            "tokenBudget must be a positive number of tokens, got {budget}"
        )));
    }
    Ok(())
}

/// Whether the session's context is over the threshold (reads only).
pub async fn evaluate(
    store: &Store,
    opts: &Arc<EngineOptions>,
    p: EvaluateParams,
) -> Result<Evaluation> {
    check_budget(p.token_budget)?;
    let opts = &*PolicyOverrides::apply(p.overrides.as_ref(), opts)?;
    let session = SessionRef {
        session_id: p.session_id,
        session_key: p.session_key,
    };
    let limits = select::Limits::for_budget(opts, p.token_budget);
    let (conversation_id, items) = store
        .read(move |c| {
            let Some(conv) = conversations::find(c, &session)? else {
                return Ok((None, Vec::new()));
            };
            Ok((
                Some(conv.conversation_id),
                messages::context_items(c, conv.conversation_id)?,
            ))
        })
        .await?;
    let stored = pass::snapshot_tokens(&items);
    let observed = p.current_token_count.filter(|n| *n > 0);
    let current = stored.max(observed.unwrap_or(0));
    let threshold = threshold_for(opts.context_threshold, p.token_budget);
    let raw = select::raw_tokens_before(&items, select::fresh_tail_start(&items, &limits));
    let due = over_threshold(current, threshold);
    Ok(Evaluation {
        should_compact: due,
        reason: if due { "threshold" } else { "none" }.into(),
        current_tokens: current,
        threshold,
        token_budget: p.token_budget,
        stored_tokens: stored,
        observed_tokens: observed,
        raw_tokens_outside_tail: raw,
        leaf_trigger: raw >= opts.leaf_chunk_tokens,
        conversation_id,
    })
}

impl Compactor {
    /// Compacts the session's conversation. Waits for any other compaction of the
    /// same conversation; summarizer failures, cancellation and bounds end the call
    /// with a result, database failures reject.
    pub async fn compact(&self, p: CompactParams, hooks: &Hooks) -> Result<CompactResult> {
        check_budget(p.token_budget)?;
        let session = SessionRef {
            session_id: p.session_id.clone(),
            session_key: p.session_key.clone(),
        };
        let conv = self
            .store
            .read(move |c| conversations::find(c, &session))
            .await?;
        let Some(conv) = conv else {
            return Ok(run::nothing(
                &p,
                self.opts.context_threshold,
                "no conversation for this session",
            ));
        };
        let opts = PolicyOverrides::apply(p.overrides.as_ref(), &self.opts)?;
        let this = Compactor {
            store: self.store.clone(),
            opts,
            pipeline: self.pipeline.clone(),
            coordinator: self.coordinator.clone(),
        };
        let _guard = self.coordinator.lock(conv.conversation_id).await;
        let run = run::Run::new(&this, conv.conversation_id, &p, hooks)?;
        let (r, usage) = crate::summarize::meter::metered(run.run(&p)).await;
        self.coordinator.add_usage(conv.conversation_id, &usage);
        let mut r = r?;
        r.summarizer = usage;
        self.coordinator.record(conv.conversation_id, &r);
        Ok(r)
    }
}
