//! `evaluate`, `compact`, `afterTurn` and `cancel`: thin methods over
//! [`crate::compaction`]. Cancel tokens are registered when a call is made (not
//! when its future first runs), so `cancel(sessionId)` right after `compact(…)`
//! always reaches it.

use std::future::Future;
use std::sync::Arc;

use super::Engine;
use crate::compaction::control::Registration;
use crate::compaction::{
    AfterTurnParams, AfterTurnResult, CompactParams, CompactResult, Compactor, EvaluateParams,
    Evaluation, Hooks,
};
use crate::error::Result;
use crate::summarize::SummaryPipeline;

impl Engine {
    /// A compactor over this engine's store with the given pipeline.
    pub fn compactor(&self, pipeline: Arc<dyn SummaryPipeline>) -> Compactor {
        Compactor {
            store: self.store.clone(),
            opts: self.opts.clone(),
            pipeline,
            coordinator: self.compaction.clone(),
        }
    }

    /// Whether the session's context is over the threshold (reads only).
    pub async fn evaluate(&self, p: EvaluateParams) -> Result<Evaluation> {
        crate::compaction::evaluate(&self.store, &self.opts, p).await
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

    /// Like [`Engine::compact`], with the parameters made by `make` off the calling
    /// thread (the binding parses the JSON text there). The call is registered for
    /// `cancel` under `session` now.
    pub fn compact_deferred<F>(
        &self,
        session: &SessionIds,
        hooks: Hooks,
        make: F,
    ) -> impl Future<Output = Result<CompactResult>> + Send + 'static
    where
        F: FnOnce() -> Result<CompactParams> + Send + 'static,
    {
        self.compact_registered(self.pipeline(), session, hooks, make)
    }

    /// Compacts with the given pipeline; cancellable by session from the moment it
    /// is called.
    pub fn compact_with(
        &self,
        pipeline: Arc<dyn SummaryPipeline>,
        p: CompactParams,
        hooks: Hooks,
    ) -> impl Future<Output = Result<CompactResult>> + Send + 'static {
        let session = SessionIds::of(&p.session_id, &p.session_key);
        self.compact_registered(pipeline, &session, hooks, move || Ok(p))
    }

    /// Registers the call for `cancel` under `session` now, then compacts with
    /// `pipeline` and the parameters `make` returns.
    fn compact_registered<F>(
        &self,
        pipeline: Arc<dyn SummaryPipeline>,
        session: &SessionIds,
        hooks: Hooks,
        make: F,
    ) -> impl Future<Output = Result<CompactResult>> + Send + 'static
    where
        F: FnOnce() -> Result<CompactParams> + Send + 'static,
    {
        let reg = self.register(session, &hooks);
        let compactor = self.compactor(pipeline);
        async move {
            let _reg = reg;
            compactor.compact(make()?, &hooks).await
        }
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

    /// Like [`Engine::after_turn`], with the parameters made by `make` on the writer
    /// thread (the binding parses the JSON text there, in call order). The call is
    /// registered for `cancel` under `session` now.
    pub fn after_turn_deferred<F>(
        &self,
        session: &SessionIds,
        hooks: Hooks,
        make: F,
    ) -> impl Future<Output = Result<AfterTurnResult>> + Send + 'static
    where
        F: FnOnce() -> Result<AfterTurnParams> + Send + 'static,
    {
        self.turn(self.pipeline(), session, hooks, make)
    }

    /// Ingests the turn's new messages (queued now, one batch), then runs a
    /// threshold sweep when the context is over the threshold.
    pub fn after_turn_with(
        &self,
        pipeline: Arc<dyn SummaryPipeline>,
        p: AfterTurnParams,
        hooks: Hooks,
    ) -> impl Future<Output = Result<AfterTurnResult>> + Send + 'static {
        let session = SessionIds::of(&p.session_id, &p.session_key);
        self.turn(pipeline, &session, hooks, move || Ok(p))
    }

    fn turn<F>(
        &self,
        pipeline: Arc<dyn SummaryPipeline>,
        session: &SessionIds,
        hooks: Hooks,
        make: F,
    ) -> impl Future<Output = Result<AfterTurnResult>> + Send + 'static
    where
        F: FnOnce() -> Result<AfterTurnParams> + Send + 'static,
    {
        let reg = self.register(session, &hooks);
        let compactor = self.compactor(pipeline);
        let ratio = self.opts.context_threshold;
        let opts = self.opts.clone();
        let o = opts.clone();
        let written = self.store.write_grouped_prepared(
            move || {
                let p = make()?;
                let heartbeat = p.is_heartbeat;
                let (batch, sweep) = p.split()?;
                Ok((crate::ingest::prepare_rows(batch, &o)?, sweep, heartbeat))
            },
            move |conn, (batch, sweep, heartbeat)| {
                let ingest = crate::ingest::write_prepared(conn, batch, &opts)?;
                Ok((ingest, sweep, heartbeat))
            },
        );
        async move {
            let _reg = reg;
            let (ingest, sweep, heartbeat) = written.await?;
            let compaction = if heartbeat {
                crate::compaction::run::nothing(&sweep, ratio, "heartbeat turn")
            } else {
                compactor.compact(sweep, &hooks).await?
            };
            Ok(AfterTurnResult { ingest, compaction })
        }
    }

    fn register(&self, s: &SessionIds, hooks: &Hooks) -> Registration {
        self.compaction.register(
            &s.session_id,
            s.session_key.as_deref(),
            hooks.cancel.clone(),
        )
    }

    /// Trips the cancel token of every running compaction of the session (by
    /// session id or key); returns how many were running. Finished passes stay.
    pub fn cancel_compaction(&self, session: &str) -> usize {
        self.compaction.cancel(session)
    }
}

/// The session a compaction is registered under for `cancel`, known before its
/// parameters are parsed.
#[derive(Debug, Clone, Default)]
pub struct SessionIds {
    /// Runtime session id.
    pub session_id: String,
    /// Stable session key.
    pub session_key: Option<String>,
}

impl SessionIds {
    fn of(id: &str, key: &Option<String>) -> Self {
        SessionIds {
            session_id: id.to_owned(),
            session_key: key.clone(),
        }
    }
}
