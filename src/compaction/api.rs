//! The engine-facing calls: `evaluate`, `compact`, `afterTurn`, `cancel` and
//! `integrityCheck`, as methods on [`Engine`]. Cancel tokens are registered when a
//! call is made (not when its future first runs), so `cancel(sessionId)` right
//! after `compact(…)` always reaches it.

use std::future::Future;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CompactParams, CompactResult, Compactor, EvaluateParams, Evaluation, Hooks, Mode};
use crate::engine::{Engine, IngestBatchParams, IngestBatchResult};
use crate::error::Result;
use crate::summarize::SummaryPipeline;

/// Parameters of `afterTurn`. Keys the host passes besides these are ignored.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AfterTurnParams {
    /// Runtime session id.
    pub session_id: String,
    /// Stable session key.
    #[serde(default)]
    pub session_key: Option<String>,
    /// The session's messages after the turn (the whole transcript or its end).
    pub messages: Vec<Value>,
    /// How many of `messages` existed before this turn's prompt; the rest are new.
    pub pre_prompt_message_count: usize,
    /// The model's context budget, in tokens.
    pub token_budget: i64,
    /// The host's observed token count of the live context, if known.
    #[serde(default)]
    pub current_token_count: Option<i64>,
    /// Transcript entry ids (null where unknown), parallel to `messages` or to the
    /// new messages only.
    #[serde(default)]
    pub entry_ids: Option<Vec<Option<String>>>,
    /// Heartbeat turns are neither stored nor compacted.
    #[serde(default)]
    pub is_heartbeat: bool,
    /// Instructions for this call's prompts.
    #[serde(default)]
    pub custom_instructions: Option<String>,
    /// The AbortSignal; read by the binding, ignored here.
    #[serde(default, rename = "signal")]
    pub _signal: Option<serde::de::IgnoredAny>,
}

/// Result of `afterTurn`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AfterTurnResult {
    /// The ingest of the new messages.
    pub ingest: IngestBatchResult,
    /// The threshold sweep (`compacted: false, reason: "below threshold"` when not due).
    pub compaction: CompactResult,
}

impl Engine {
    /// A compactor over this engine's store with the given pipeline.
    pub fn compactor(&self, pipeline: Arc<dyn SummaryPipeline>) -> Compactor {
        Compactor {
            store: self.store().clone(),
            opts: Arc::new(self.options().clone()),
            pipeline,
            coordinator: self.compaction_coordinator().clone(),
        }
    }

    /// Whether the session's context is over the threshold (reads only).
    pub async fn evaluate(&self, p: EvaluateParams) -> Result<Evaluation> {
        super::evaluate(self.store(), self.options(), p).await
    }

    /// Compacts with the engine's pipeline; cancellable by session from the moment
    /// it is called.
    pub fn compact(
        &self,
        p: CompactParams,
        hooks: Hooks,
    ) -> impl Future<Output = Result<CompactResult>> + Send + 'static {
        self.compact_with(self.pipeline(), p, hooks)
    }

    /// Ingests the turn's new messages and runs a threshold sweep, with the engine's
    /// pipeline (see [`Engine::after_turn_with`]).
    pub fn after_turn(
        &self,
        p: AfterTurnParams,
        hooks: Hooks,
    ) -> impl Future<Output = Result<AfterTurnResult>> + Send + 'static {
        self.after_turn_with(self.pipeline(), p, hooks)
    }

    /// Compacts with the given pipeline; cancellable by session from the moment it
    /// is called.
    pub fn compact_with(
        &self,
        pipeline: Arc<dyn SummaryPipeline>,
        p: CompactParams,
        hooks: Hooks,
    ) -> impl Future<Output = Result<CompactResult>> + Send + 'static {
        let reg = self.compaction_coordinator().register(
            &p.session_id,
            p.session_key.as_deref(),
            hooks.cancel.clone(),
        );
        let compactor = self.compactor(pipeline);
        async move {
            let _reg = reg;
            compactor.compact(p, &hooks).await
        }
    }

    /// Ingests the turn's new messages (queued now, one batch), then runs a
    /// threshold sweep when the context is over the threshold.
    pub fn after_turn_with(
        &self,
        pipeline: Arc<dyn SummaryPipeline>,
        p: AfterTurnParams,
        hooks: Hooks,
    ) -> impl Future<Output = Result<AfterTurnResult>> + Send + 'static {
        let start = p.pre_prompt_message_count.min(p.messages.len());
        // Entry ids may be parallel to `messages` (sliced the same way) or to the new
        // messages only.
        let entry_ids = p.entry_ids.clone().map(|ids| {
            if ids.len() == p.messages.len() {
                ids[start..].to_vec()
            } else {
                ids
            }
        });
        let ingest = self.ingest_batch(IngestBatchParams {
            session_id: p.session_id.clone(),
            session_key: p.session_key.clone(),
            messages: p.messages[start..].to_vec(),
            entry_ids,
            is_heartbeat: p.is_heartbeat,
        });
        let params = CompactParams {
            session_id: p.session_id,
            session_key: p.session_key,
            token_budget: p.token_budget,
            mode: Mode::Sweep,
            force: false,
            current_token_count: p.current_token_count,
            custom_instructions: p.custom_instructions,
            target_tokens: None,
            _signal: None,
        };
        let heartbeat = p.is_heartbeat;
        let ratio = self.options().context_threshold;
        let compaction = self.compact_with(pipeline, params.clone(), hooks);
        async move {
            let ingest = ingest.await?;
            let compaction = if heartbeat {
                super::run::nothing(&params, ratio, "heartbeat turn")
            } else {
                compaction.await?
            };
            Ok(AfterTurnResult { ingest, compaction })
        }
    }

    /// Trips the cancel token of every running compaction of the session (by
    /// session id or key); returns how many were running. Finished passes stay.
    pub fn cancel_compaction(&self, session: &str) -> usize {
        self.compaction_coordinator().cancel(session)
    }

    /// `PRAGMA integrity_check` rows (`["ok"]` for a sound database), with the
    /// full-text indexes' cached structure reloaded first (see
    /// [`crate::doctor::global::integrity_lines`]).
    pub async fn integrity_check(&self) -> Result<Vec<String>> {
        self.store()
            .read(crate::doctor::global::integrity_lines)
            .await
    }
}
