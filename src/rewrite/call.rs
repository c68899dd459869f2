//! The rewrite calls over a store (`planRewrite`, `rewrite` on the addon): the
//! plan, the per-call pipeline, the run — each stopped by a [`CancelToken`] — and,
//! for the interactive browser, one summary's preview (the prompt as it will be
//! sent) and the write of a reviewed text.

use std::sync::Arc;

use serde::Serialize;

use super::run::{self, ProgressFn, RewriteDb, RewriteOptions, RewriteReport};
use super::{PlanParams, PlannedSummary, RewriteParams};
use crate::compaction::CancelToken;
use crate::config::EngineOptions;
use crate::error::{LcmError, Result};
use crate::prompts::RenderedPrompt;
use crate::store::{summaries, Store};
use crate::summarize::{build_pipeline, Summarizer, SummarizerChoice, SummaryPipeline};
use crate::summarize::{render_params, RenderParams};
use crate::timeformat::Zone;

/// The summaries a rewrite would touch, in the order it would touch them;
/// `LCM_ABORTED` once `cancel` trips.
pub async fn plan(
    store: &Store,
    p: PlanParams,
    cancel: CancelToken,
) -> Result<Vec<PlannedSummary>> {
    if store.is_closed() {
        return Err(LcmError::closed());
    }
    if cancel.is_cancelled() {
        return Err(run::aborted());
    }
    let selector = p.selector()?;
    let db = RewriteDb::Store(store.clone());
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(run::aborted()),
        r = run::plan_on(&db, p.conversation_id, selector) => r,
    }
}

/// What a rewrite summarizes with by default: the engine's options, pipeline and
/// the host's summarizer callback.
pub struct Summarizing {
    /// The engine's options.
    pub opts: EngineOptions,
    /// The engine's pipeline.
    pub pipeline: Arc<dyn SummaryPipeline>,
    /// The host callback, if any.
    pub callback: Option<Arc<dyn Summarizer>>,
}

/// The pipeline for a rewrite: the engine's own, or one built with this call's
/// `promptDir` / `model` / `provider` / `baseUrl` (the host callback stays the
/// summarizer unless a provider is named).
pub async fn pipeline_for(
    base: Summarizing,
    p: &RewriteParams,
) -> Result<Arc<dyn SummaryPipeline>> {
    let choice = SummarizerChoice::new(p.provider.clone(), p.model.clone(), p.base_url.clone());
    if p.prompt_dir.is_none() && choice.is_empty() {
        return Ok(base.pipeline);
    }
    let mut o = base.opts;
    if let Some(d) = &p.prompt_dir {
        o.prompt_dir = Some(d.clone());
    }
    choice.apply(&mut o);
    let callback = match choice.provider {
        Some(_) => None,
        None => base.callback,
    };
    tokio::task::spawn_blocking(move || build_pipeline(&o, callback))
        .await
        .map_err(|e| LcmError::internal(format!("pipeline task failed: {e}")))?
}

/// Rewrites summaries with `pipeline`: a dry run (nothing written) unless `apply`.
/// An error during the run is returned as the report's `error` with the entries
/// done before it (their writes stay); so is a cancellation (`LCM_ABORTED`: the
/// in-flight summarizer call is dropped, nothing of it is written).
pub async fn rewrite(
    store: &Store,
    pipeline: Arc<dyn SummaryPipeline>,
    zone: Zone,
    p: RewriteParams,
    progress: Option<ProgressFn>,
    cancel: CancelToken,
    strip_tags: Vec<String>,
) -> Result<RewriteReport> {
    if store.is_closed() {
        return Err(LcmError::closed());
    }
    let opts = RewriteOptions {
        conversation_id: p.conversation_id,
        selector: p.selector()?,
        apply: p.apply,
        timestamps: p.timestamps,
        concurrency: p.concurrency()?,
        cancel,
        strip_tags,
    };
    run::run(
        &RewriteDb::Store(store.clone()),
        pipeline,
        zone,
        opts,
        progress,
    )
    .await
}

/// What rewriting one summary would send, before anything is sent.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RewritePreview {
    /// The summary (kind, depth, child count, time range, stored tokens).
    pub summary: PlannedSummary,
    /// Its time range in the display zone.
    pub time_range: Option<String>,
    /// The stored text.
    pub old_content: String,
    /// Its stored token count.
    pub old_tokens: i64,
    /// Characters of the source text.
    pub source_chars: usize,
    /// Estimated tokens of the source text.
    pub source_tokens: i64,
    /// Whether a previous summary goes into the prompt as context.
    pub has_previous_context: bool,
    /// The first prompt exactly as it will be sent, with its template and where the
    /// template came from (`embedded` or the override file).
    pub prompt: RenderedPrompt,
    /// Why the summary cannot be rewritten, if it cannot.
    pub skip: Option<String>,
}

/// The input and first prompt a rewrite of one summary would use (read-only),
/// rendered with the options' templates (`promptDir`) and targets, exactly as the
/// pipeline renders them.
pub async fn preview(
    store: &Store,
    opts: &EngineOptions,
    zone: Zone,
    conversation_id: i64,
    summary_id: &str,
    timestamps: bool,
) -> Result<RewritePreview> {
    if store.is_closed() {
        return Err(LcmError::closed());
    }
    let db = RewriteDb::Store(store.clone());
    let (item, prepared) = run::prepare_single(
        &db,
        conversation_id,
        summary_id,
        zone,
        timestamps,
        opts.strip_injected_context_tags.clone(),
    )
    .await?;
    let input = &prepared.input;
    let render = RenderParams {
        depth: input.depth,
        aggressive: false,
        target_tokens: None,
        previous_context: input.previous_context.clone(),
        child_count: Some(input.child_count),
        time_range: input.time_range.clone(),
        source_text: input.source_text.clone(),
        custom_instructions: input
            .custom_instructions
            .clone()
            .or_else(|| opts.custom_instructions.clone()),
        prompt_dir: opts.prompt_dir.clone(),
        leaf_target_tokens: Some(opts.leaf_target_tokens),
        condensed_target_tokens: Some(opts.condensed_target_tokens),
    };
    let prompt = tokio::task::spawn_blocking(move || render_params(render))
        .await
        .map_err(|e| LcmError::internal(format!("render task failed: {e}")))??;
    Ok(RewritePreview {
        time_range: run::summary_time_range(&item, &zone),
        old_content: prepared.old_content.clone(),
        old_tokens: prepared.old_tokens,
        source_chars: input.source_text.chars().count(),
        source_tokens: crate::tokens::estimate(input.source_text.trim()),
        has_previous_context: input.previous_context.is_some(),
        prompt,
        skip: prepared.skip.clone(),
        summary: item,
    })
}

/// Writes a reviewed rewrite of one summary (content, token count and full-text
/// rows in one transaction), only if its stored text is still `expected`. Returns
/// the new token count.
pub async fn apply_reviewed(
    store: &Store,
    conversation_id: i64,
    summary_id: &str,
    expected: &str,
    content: &str,
) -> Result<i64> {
    if store.is_closed() {
        return Err(LcmError::closed());
    }
    let features = store.features();
    let (id, expected, content) = (
        summary_id.to_owned(),
        expected.to_owned(),
        content.to_owned(),
    );
    store
        .write(move |c| {
            summaries::replace_reviewed_content(
                c,
                conversation_id,
                &id,
                &expected,
                &content,
                features,
            )?;
            Ok(crate::tokens::estimate(&content))
        })
        .await
}
