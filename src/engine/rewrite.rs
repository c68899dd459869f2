//! `planRewrite` and `rewrite`: thin methods over [`crate::rewrite`].

use super::Engine;
use crate::error::{LcmError, Result};
use crate::rewrite::call::{self, Summarizing};
use crate::rewrite::run::{ProgressFn, RewriteReport};
use crate::rewrite::{PlanParams, PlannedSummary, RewriteParams};

impl Engine {
    /// The summaries a rewrite would touch, in the order it would touch them.
    pub async fn plan_rewrite(&self, p: PlanParams) -> Result<Vec<PlannedSummary>> {
        call::plan(&self.store, p).await
    }

    /// Rewrites summaries with the current prompts: a dry run (nothing written) unless
    /// `apply`. An error during the run is returned as the report's `error` with the
    /// entries done before it (their writes stay).
    pub async fn rewrite(
        &self,
        p: RewriteParams,
        progress: Option<ProgressFn>,
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
        call::rewrite(&self.store, pipeline, self.zone, p, progress).await
    }
}
