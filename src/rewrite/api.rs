//! The engine's rewrite methods (`planRewrite`, `rewrite` on the addon).

use std::sync::Arc;

use super::run::{self, ProgressFn, RewriteDb, RewriteOptions, RewriteReport};
use super::{PlanParams, PlannedSummary, RewriteParams};
use crate::engine::Engine;
use crate::error::{LcmError, Result};
use crate::summarize::{build_pipeline, SummaryPipeline};

impl Engine {
    /// The summaries a rewrite would touch, in the order it would touch them.
    pub async fn plan_rewrite(&self, p: PlanParams) -> Result<Vec<PlannedSummary>> {
        if self.store().is_closed() {
            return Err(LcmError::closed());
        }
        let selector = p.selector()?;
        run::plan_on(
            &RewriteDb::Store(self.store().clone()),
            p.conversation_id,
            selector,
        )
        .await
    }

    /// The pipeline for a rewrite: the engine's own, or one built with this call's
    /// `promptDir` / `model` / `provider` / `baseUrl` (the host callback stays the
    /// summarizer unless a provider is named).
    async fn rewrite_pipeline(&self, p: &RewriteParams) -> Result<Arc<dyn SummaryPipeline>> {
        let overridden = p.prompt_dir.is_some()
            || p.model.is_some()
            || p.provider.is_some()
            || p.base_url.is_some();
        if !overridden {
            return Ok(self.pipeline());
        }
        let mut o = self.options().clone();
        if let Some(d) = &p.prompt_dir {
            o.prompt_dir = Some(d.clone());
        }
        if let Some(m) = &p.model {
            o.summary_model = Some(m.clone());
        }
        if let Some(u) = &p.base_url {
            o.summary_base_url = Some(u.clone());
        }
        let callback = match &p.provider {
            Some(name) => {
                o.summary_provider = Some(name.clone());
                None
            }
            None => self.summarizer_callback(),
        };
        tokio::task::spawn_blocking(move || build_pipeline(&o, callback))
            .await
            .map_err(|e| LcmError::internal(format!("pipeline task failed: {e}")))?
    }

    /// Rewrites summaries with the current prompts: a dry run (nothing written) unless
    /// `apply`. An error during the run is returned as the report's `error` with the
    /// entries done before it (their writes stay).
    pub async fn rewrite(
        &self,
        p: RewriteParams,
        progress: Option<ProgressFn>,
    ) -> Result<RewriteReport> {
        if self.store().is_closed() {
            return Err(LcmError::closed());
        }
        let opts = RewriteOptions {
            conversation_id: p.conversation_id,
            selector: p.selector()?,
            apply: p.apply,
            timestamps: p.timestamps,
            concurrency: p.concurrency()?,
        };
        let pipeline = self.rewrite_pipeline(&p).await?;
        run::run(
            &RewriteDb::Store(self.store().clone()),
            pipeline,
            self.zone(),
            opts,
            progress,
        )
        .await
    }
}
