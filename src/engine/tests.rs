//! Tests that need the whole engine: each opens an [`Engine`](super::Engine) and
//! drives a feature through the async API. They live here, in the engine layer,
//! because feature modules never import the engine (not even in tests).

mod compaction;
mod dagops;
mod doctor;
mod rewrite;
mod round_trip;
mod slices;
mod transcripts;

use serde_json::Value;

use super::{Engine, IngestBatchParams};

/// Ingests `messages` as one batch of session `session`: the conversation and the
/// new message ids, in order.
pub(crate) async fn ingest_messages(
    engine: &Engine,
    session: &str,
    messages: Vec<Value>,
) -> (i64, Vec<i64>) {
    let r = engine
        .ingest_batch(IngestBatchParams {
            session_id: session.into(),
            session_key: None,
            messages,
            entry_ids: None,
            is_heartbeat: false,
        })
        .await
        .unwrap();
    let ids = r.results.iter().map(|m| m.message_id.unwrap()).collect();
    (r.conversation_id.unwrap(), ids)
}
