//! The trigram slices end to end: an engine stores the slices of completed
//! blocks during its catalog's first build and, in the background, after later
//! catch-ups, and the first regex `grep` of the next engine on the file answers
//! through them, as the catalog does.

use std::time::{Duration, Instant};

use serde_json::json;

use super::ingest_messages;
use crate::config::EngineOptions;
use crate::engine::Engine;
use crate::retrieval::types::GrepParams;

fn opts(path: &std::path::Path) -> EngineOptions {
    EngineOptions {
        db_path: Some(path.to_string_lossy().into_owned()),
        ..Default::default()
    }
}

/// Blocks stored in the file (read on a connection of its own).
fn stored_blocks(path: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    crate::store::slices::stored_count(&conn).unwrap() / crate::retrieval::slices::BUCKETS as i64
}

/// Waits (at most 20 s) until `n` blocks are stored.
async fn until_stored(path: &std::path::Path, n: i64) {
    let start = Instant::now();
    while stored_blocks(path) < n {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{n} blocks never stored"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn grep(pattern: &str) -> GrepParams {
    serde_json::from_value(json!({"pattern": pattern, "allConversations": true, "limit": 5}))
        .unwrap()
}

async fn ingest(engine: &Engine, from: usize, n: usize) {
    for start in (from..from + n).step_by(500) {
        let batch = (start..(start + 500).min(from + n))
            .map(|i| json!({"role": "user", "content": format!("turn {i}: deploy code is NEEDLE-{}-{i} 한국어", i % 7)}))
            .collect();
        ingest_messages(engine, "s", batch).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_regex_after_a_restart_answers_through_stored_slices() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.db");
    let engine = Engine::open(opts(&path)).await.unwrap();
    ingest(&engine, 0, 4_500).await;
    // The catalog's build hands the complete blocks to the writer as it goes:
    // stored by the close right after it.
    engine.warm_recall_index().await.unwrap();
    engine.close().await.unwrap();
    assert_eq!(stored_blocks(&path), 2);
    // A later catch-up that completes a block stores it too, in the background.
    let engine = Engine::open(opts(&path)).await.unwrap();
    engine.warm_recall_index().await.unwrap();
    ingest(&engine, 4_500, 2_000).await;
    engine.grep(grep("NEEDLE-3-10")).await.unwrap();
    until_stored(&path, 3).await;
    let warm: Vec<_> = engine.grep(grep("NEEDLE-3-10")).await.unwrap().messages;
    engine.close().await.unwrap();

    let engine = Engine::open(opts(&path)).await.unwrap();
    let cold = engine.grep(grep("NEEDLE-3-10")).await.unwrap();
    let stats = cold.message_stats.clone().unwrap();
    assert_eq!(stats.strategy, "trigram-slices", "{stats:?}");
    assert!(stats.candidates < 40, "{stats:?}");
    let ids = |h: &[crate::retrieval::grep::MessageHit]| {
        h.iter()
            .map(|m| (m.message_id, m.snippet.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&cold.messages), ids(&warm));
    assert_eq!(cold.messages.len(), 5);
    engine.close().await.unwrap();
    assert_eq!(
        stored_blocks(&path),
        3,
        "6,500 messages: three complete blocks"
    );
}
