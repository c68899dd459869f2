//! `commitTurn`: a turn's messages and its receipt in one transaction (see
//! [`crate::turn`] for the checks and the hash).

use std::future::Future;

use super::Engine;
use crate::config::EngineOptions;
use crate::error::Result;
use crate::ingest::{prepare_batch, IngestBatchParams};
use crate::store::conversations::{self, SessionRef};
use crate::store::messages;
use crate::store::turns::{self, Receipt};
use crate::turn::{self, CommitTurnParams, CommitTurnResult};

impl Engine {
    /// Commits a turn atomically and idempotently. The job is queued when this is
    /// called; it resolves after COMMIT.
    pub fn commit_turn(
        &self,
        p: CommitTurnParams,
    ) -> impl Future<Output = Result<CommitTurnResult>> + Send + 'static {
        let opts = self.opts.clone();
        self.store
            .write(move |conn| commit_on_writer(conn, p, &opts))
    }

    /// Like [`Engine::commit_turn`], with the parameters made by `make` on the
    /// writer thread (the binding parses the JSON text there, keeping call order).
    pub fn commit_turn_with<F>(
        &self,
        make: F,
    ) -> impl Future<Output = Result<CommitTurnResult>> + Send + 'static
    where
        F: FnOnce() -> Result<CommitTurnParams> + Send + 'static,
    {
        let opts = self.opts.clone();
        self.store
            .write(move |conn| commit_on_writer(conn, make()?, &opts))
    }
}

fn commit_on_writer(
    conn: &mut rusqlite::Connection,
    p: CommitTurnParams,
    opts: &EngineOptions,
) -> Result<CommitTurnResult> {
    let plan = turn::plan(&p)?;
    if let Some(r) = turns::find(conn, &p.advancement_key)? {
        return turn::replay(&r, &plan.payload_hash);
    }
    let session = SessionRef {
        session_id: p.session_id.clone(),
        session_key: p.session_key.clone(),
    };
    let message_count = p.messages.len() as i64;
    let mut batch = IngestBatchParams {
        session_id: p.session_id.clone(),
        session_key: p.session_key.clone(),
        messages: p.messages,
        entry_ids: Some(plan.entry_ids),
        is_heartbeat: p.is_heartbeat,
    };
    let stores = !batch.stores_nothing();
    let mapped = if stores {
        prepare_batch(conn, &session, &mut batch, opts)?
    } else {
        Vec::new()
    };
    crate::store::tx::write_tx(conn, move |tx| {
        if let Some(r) = turns::find(tx, &p.advancement_key)? {
            return turn::replay(&r, &plan.payload_hash);
        }
        let conversation_id = if stores {
            Some(conversations::find_or_create(tx, &session)?)
        } else {
            conversations::find(tx, &session)?.map(|c| c.conversation_id)
        };
        let ingested = match conversation_id {
            Some(id) if stores => messages::insert_batch_in(tx, id, &mapped)?
                .iter()
                .filter(|m| m.ingested)
                .count(),
            _ => 0,
        };
        turns::insert(
            tx,
            &Receipt {
                advancement_key: p.advancement_key,
                conversation_id,
                session_id: p.session_id,
                payload_hash: plan.payload_hash,
                message_count,
                ingested_count: ingested as i64,
            },
        )?;
        Ok(CommitTurnResult {
            status: "committed",
            conversation_id,
            ingested_count: ingested,
        })
    })
}
