//! Tests that need the whole engine: each opens an [`Engine`](super::Engine) and
//! drives a feature through the async API. They live here, in the engine layer,
//! because feature modules never import the engine (not even in tests).

mod compaction;
mod dagops;
mod doctor;
mod lifecycle;
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

/// `PRAGMA mmap_size` of an engine's writer and of its read connections (pooled,
/// and opened after the engine).
async fn mmap_sizes(engine: &Engine) -> Vec<i64> {
    fn q(c: &rusqlite::Connection) -> crate::error::Result<i64> {
        Ok(c.query_row("PRAGMA mmap_size", [], |r| r.get(0))?)
    }
    let store = engine.store();
    vec![
        store.write(|c| q(c)).await.unwrap(),
        store.read(q).await.unwrap(),
        store.read_apart(q).await.unwrap(),
    ]
}

/// No connection of a default engine maps the database file (an I/O error on a
/// mapped page would kill the host with `SIGBUS`); `mmapSizeBytes` turns it on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_engine_maps_nothing_and_mmap_size_bytes_maps_that_much() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.db").to_string_lossy().into_owned();
    for (options, expected) in [
        (serde_json::json!({ "dbPath": path }), 0),
        (
            serde_json::json!({ "dbPath": path, "mmapSizeBytes": 256 << 20 }),
            256 << 20,
        ),
    ] {
        let opts = crate::config::EngineOptions::from_json(options).unwrap();
        let engine = Engine::open(opts).await.unwrap();
        ingest_messages(
            &engine,
            "s",
            vec![serde_json::json!({"role": "user", "content": "hello"})],
        )
        .await;
        assert_eq!(mmap_sizes(&engine).await, vec![expected; 3]);
        engine.close().await.unwrap();
    }
}
