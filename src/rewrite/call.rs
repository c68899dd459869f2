//! The rewrite calls over a store (`planRewrite`, `rewrite` on the addon): the
//! plan, the per-call pipeline, the run.

use std::sync::Arc;

use super::run::{self, ProgressFn, RewriteDb, RewriteOptions, RewriteReport};
use super::{PlanParams, PlannedSummary, RewriteParams};
use crate::config::EngineOptions;
use crate::error::{LcmError, Result};
use crate::store::Store;
use crate::summarize::{build_pipeline, Summarizer, SummarizerChoice, SummaryPipeline};
use crate::timefmt::Zone;

/// The summaries a rewrite would touch, in the order it would touch them.
pub async fn plan(store: &Store, p: PlanParams) -> Result<Vec<PlannedSummary>> {
    if store.is_closed() {
        return Err(LcmError::closed());
    }
    let selector = p.selector()?;
    run::plan_on(
        &RewriteDb::Store(store.clone()),
        p.conversation_id,
        selector,
    )
    .await
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
/// done before it (their writes stay).
pub async fn rewrite(
    store: &Store,
    pipeline: Arc<dyn SummaryPipeline>,
    zone: Zone,
    p: RewriteParams,
    progress: Option<ProgressFn>,
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
