//! `planRewrite` and `rewrite`: thin methods over [`crate::rewrite`].

use super::Engine;
use crate::compaction::CancelToken;
use crate::error::{LcmError, Result};
use crate::rewrite::call::{self, Summarizing};
use crate::rewrite::run::{ProgressFn, RewriteReport};
use crate::rewrite::{PlanParams, PlannedSummary, RewriteParams, RewritePreview};

impl Engine {
    /// The summaries a rewrite would touch, in the order it would touch them.
    pub async fn plan_rewrite(&self, p: PlanParams) -> Result<Vec<PlannedSummary>> {
        self.plan_rewrite_with(p, CancelToken::new()).await
    }

    /// [`Engine::plan_rewrite`] that stops with `LCM_ABORTED` once `cancel` trips.
    pub async fn plan_rewrite_with(
        &self,
        p: PlanParams,
        cancel: CancelToken,
    ) -> Result<Vec<PlannedSummary>> {
        call::plan(&self.store, p, cancel).await
    }

    /// What rewriting one summary would send (its input and the first prompt, as
    /// rendered with this engine's templates), read-only.
    pub async fn preview_rewrite(
        &self,
        conversation_id: i64,
        summary_id: &str,
        timestamps: bool,
    ) -> Result<RewritePreview> {
        call::preview(
            &self.store,
            self.options(),
            self.zone,
            conversation_id,
            summary_id,
            timestamps,
        )
        .await
    }

    /// Writes a reviewed rewrite (content, token count, full-text rows; one
    /// transaction) only if the stored text is still `expected`; the new token count.
    pub async fn apply_reviewed_rewrite(
        &self,
        conversation_id: i64,
        summary_id: &str,
        expected: &str,
        content: &str,
    ) -> Result<i64> {
        call::apply_reviewed(&self.store, conversation_id, summary_id, expected, content).await
    }

    /// Rewrites summaries with the current prompts: a dry run (nothing written) unless
    /// `apply`. An error during the run is returned as the report's `error` with the
    /// entries done before it (their writes stay).
    pub async fn rewrite(
        &self,
        p: RewriteParams,
        progress: Option<ProgressFn>,
    ) -> Result<RewriteReport> {
        self.rewrite_with(p, progress, CancelToken::new()).await
    }

    /// [`Engine::rewrite`] that stops once `cancel` trips: the in-flight summarizer
    /// call is dropped (its HTTP request closed), nothing of it is written, and the
    /// report's `error` is `LCM_ABORTED`.
    pub async fn rewrite_with(
        &self,
        p: RewriteParams,
        progress: Option<ProgressFn>,
        cancel: CancelToken,
    ) -> Result<RewriteReport> {
        if self.store.is_closed() {
            return Err(LcmError::closed());
        }
        let base = Summarizing {
            opts: self.options().clone(),
            pipeline: self.pipeline(),
            callback: self.summarizer_callback(),
        };
        let pipeline = call::pipeline_for(base, &p).await?;
        let tags = self.options().strip_injected_context_tags.clone();
        call::rewrite(&self.store, pipeline, self.zone, p, progress, cancel, tags).await
    }
}
