//! `ingest` / `ingestBatch`: thin methods over [`crate::ingest`]. Each write
//! is queued on the writer thread when the method is called, as a grouped job:
//! ingests queued together commit in one transaction (savepoint per call).

use std::future::Future;

use rusqlite::Connection;

use super::Engine;
use crate::error::Result;
use crate::ingest::{
    self, IngestBatchParams, IngestBatchResult, IngestParams, IngestResult, PreparedBatch,
};
use crate::store::group::Reply;

impl Engine {
    /// Ingests one message. The job is queued when this is called.
    pub fn ingest(
        &self,
        p: IngestParams,
    ) -> impl Future<Output = Result<IngestResult>> + Send + 'static {
        let fut = self.ingest_batch(p.into());
        async move { Ok(IngestResult::from_batch(fut.await?)) }
    }

    /// Like [`Engine::ingest`], with the parameters made by `make` on the writer
    /// thread (the binding parses the JSON text there, keeping call order and the
    /// JS thread free).
    pub fn ingest_with<F>(
        &self,
        make: F,
    ) -> impl Future<Output = Result<IngestResult>> + Send + 'static
    where
        F: FnOnce() -> Result<IngestParams> + Send + 'static,
    {
        let fut = self.ingest_batch_with(move || make().map(Into::into));
        async move { Ok(IngestResult::from_batch(fut.await?)) }
    }

    /// Ingests a batch in one transaction; a bad message rejects the whole batch
    /// (naming its index) and writes nothing. The job is queued when this is called.
    pub fn ingest_batch(
        &self,
        p: IngestBatchParams,
    ) -> impl Future<Output = Result<IngestBatchResult>> + Send + 'static {
        self.ingest_batch_with(move || Ok(p))
    }

    /// Like [`Engine::ingest_batch_with`], with the result handed to `reply` on the
    /// writer thread right after COMMIT (the binding settles its promise from there,
    /// without waking a task on the runtime).
    pub fn ingest_batch_then<F>(&self, make: F, reply: Reply<IngestBatchResult>)
    where
        F: FnOnce() -> Result<IngestBatchParams> + Send + 'static,
    {
        let (prepare, write) = self.ingest_steps(make);
        self.store
            .write_grouped_prepared_then(prepare, write, reply)
    }

    /// Like [`Engine::ingest_with`], with the result handed to `reply` on the writer
    /// thread right after COMMIT.
    pub fn ingest_then<F>(&self, make: F, reply: Reply<IngestResult>)
    where
        F: FnOnce() -> Result<IngestParams> + Send + 'static,
    {
        self.ingest_batch_then(
            move || make().map(Into::into),
            Box::new(move |r| reply(r.map(IngestResult::from_batch))),
        )
    }

    /// Like [`Engine::ingest_batch`], with the parameters made by `make` on the
    /// writer thread.
    pub fn ingest_batch_with<F>(
        &self,
        make: F,
    ) -> impl Future<Output = Result<IngestBatchResult>> + Send + 'static
    where
        F: FnOnce() -> Result<IngestBatchParams> + Send + 'static,
    {
        let (prepare, write) = self.ingest_steps(make);
        self.store.write_grouped_prepared(prepare, write)
    }

    /// The two steps of an ingest job for the writer's groups: validating and
    /// mapping the batch `make` gives (no connection needed), then writing it.
    fn ingest_steps<F>(
        &self,
        make: F,
    ) -> (
        impl FnOnce() -> Result<PreparedBatch> + Send + 'static,
        impl FnOnce(&Connection, PreparedBatch) -> Result<IngestBatchResult> + Send + 'static,
    )
    where
        F: FnOnce() -> Result<IngestBatchParams> + Send + 'static,
    {
        let (o, opts) = (self.opts.clone(), self.opts.clone());
        (
            move || ingest::prepare_rows(make()?, &o),
            move |conn: &Connection, batch| ingest::write_prepared(conn, batch, &opts),
        )
    }
}
