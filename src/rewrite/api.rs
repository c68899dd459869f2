//! The engine's rewrite methods (`planRewrite`, `rewrite` on the addon).

use std::sync::Arc;

use serde::Serialize;

use super::run::{self, ProgressFn, RewriteDb, RewriteOptions, RewriteReport};
use super::{PlanParams, PlannedSummary, RewriteParams};
use crate::compaction::CancelToken;
use crate::engine::Engine;
use crate::error::{LcmError, Result};
use crate::prompts::{render_params, RenderParams, RenderedPrompt};
use crate::summarize::{build_pipeline, SummaryPipeline};

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
        if self.store().is_closed() {
            return Err(LcmError::closed());
        }
        if cancel.is_cancelled() {
            return Err(run::aborted());
        }
        let selector = p.selector()?;
        let db = RewriteDb::Store(self.store().clone());
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(run::aborted()),
            r = run::plan_on(&db, p.conversation_id, selector) => r,
        }
    }

    /// The input and first prompt a rewrite of one summary would use (read-only),
    /// rendered with the engine's templates (`promptDir`) and targets.
    pub async fn preview_rewrite(
        &self,
        conversation_id: i64,
        summary_id: &str,
        timestamps: bool,
    ) -> Result<RewritePreview> {
        if self.store().is_closed() {
            return Err(LcmError::closed());
        }
        let db = RewriteDb::Store(self.store().clone());
        let (item, prepared) =
            run::prepare_single(&db, conversation_id, summary_id, self.zone(), timestamps).await?;
        let o = self.options();
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
                .or_else(|| o.custom_instructions.clone()),
            prompt_dir: o.prompt_dir.clone(),
            leaf_target_tokens: Some(o.leaf_target_tokens),
            condensed_target_tokens: Some(o.condensed_target_tokens),
        };
        let prompt = tokio::task::spawn_blocking(move || render_params(render))
            .await
            .map_err(|e| LcmError::internal(format!("render task failed: {e}")))??;
        Ok(RewritePreview {
            time_range: run::summary_time_range(&item, &self.zone()),
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
    /// rows in one transaction), only if its stored text is still `expected`.
    /// Returns the new token count.
    pub async fn apply_reviewed_rewrite(
        &self,
        conversation_id: i64,
        summary_id: &str,
        expected: &str,
        content: &str,
    ) -> Result<i64> {
        if self.store().is_closed() {
            return Err(LcmError::closed());
        }
        let features = self.store().features();
        let (id, expected, content) = (
            summary_id.to_owned(),
            expected.to_owned(),
            content.to_owned(),
        );
        self.store()
            .write(move |c| {
                run::apply_reviewed(c, conversation_id, &id, &expected, &content, features)
            })
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
        if self.store().is_closed() {
            return Err(LcmError::closed());
        }
        let opts = RewriteOptions {
            conversation_id: p.conversation_id,
            selector: p.selector()?,
            apply: p.apply,
            timestamps: p.timestamps,
            concurrency: p.concurrency()?,
            cancel,
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
