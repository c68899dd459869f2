//! The trigram slices end to end: an engine stores the slices of completed
//! blocks during its catalog's first build and, in the background, after later
//! catch-ups, and the first regex `grep` of the next engine on the file answers
//! through them, as the catalog does.

use std::time::{Duration, Instant};

use serde_json::json;

use super::ingest_messages;
use crate::config::EngineOptions;
use crate::engine::Engine;
use crate::recall::types::GrepParams;

fn opts(path: &std::path::Path) -> EngineOptions {
    EngineOptions {
        db_path: Some(path.to_string_lossy().into_owned()),
        ..Default::default()
    }
}

/// Blocks stored in the file (read on a connection of its own).
fn stored_blocks(path: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    crate::store::slices::stored_count(&conn).unwrap() / crate::recall::slices::BUCKETS as i64
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

/// Hits as (message id, snippet).
fn ids(h: &[crate::recall::grep::MessageHit]) -> Vec<(i64, String)> {
    h.iter()
        .map(|m| (m.message_id, m.snippet.clone()))
        .collect()
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
    assert_eq!(ids(&cold.messages), ids(&warm));
    assert_eq!(cold.messages.len(), 5);
    engine.close().await.unwrap();
    assert_eq!(
        stored_blocks(&path),
        3,
        "6,500 messages: three complete blocks"
    );
}

/// Group rows stored in the file (read on a connection of its own).
fn stored_groups(path: &std::path::Path) -> i64 {
    use crate::store::slices::{stored_count_in, SliceTable};
    let conn = rusqlite::Connection::open(path).unwrap();
    stored_count_in(&conn, SliceTable::Groups).unwrap() / crate::recall::slices::BUCKETS as i64
}

/// A file whose blocks were all stored as blocks (by a version before groups):
/// the first build finds a group due and a background pass forms it; the next
/// engine's first regex answers through the group as the catalog does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_stored_before_groups_become_a_group_after_open() {
    use crate::recall::slices::{missing_blocks, BLOCK_IDS, GROUP_BLOCKS, LAYOUT};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.db");
    let n = (GROUP_BLOCKS * BLOCK_IDS + 10) as usize;
    {
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        crate::store::migrate::migrate(&mut conn).unwrap();
        let texts = (0..n).map(|i| format!("turn {i}: deploy code is NEEDLE-{}-{i}", i % 7));
        crate::store::messages::insert_user_texts(&mut conn, texts).unwrap();
        let rows = missing_blocks(&conn, usize::MAX, || Ok(())).unwrap();
        let tx = conn.transaction().unwrap();
        crate::store::slices::store_slices(&tx, LAYOUT, &rows).unwrap();
        tx.commit().unwrap();
    }
    assert_eq!(
        (stored_blocks(&path), stored_groups(&path)),
        (GROUP_BLOCKS, 0)
    );
    let engine = Engine::open(opts(&path)).await.unwrap();
    engine.warm_recall_index().await.unwrap();
    let start = Instant::now();
    while stored_groups(&path) < 1 {
        assert!(start.elapsed() < Duration::from_secs(20), "no group formed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(stored_blocks(&path), 0, "the group replaced its blocks");
    let warm = engine
        .grep(grep("NEEDLE-3-1\\d\\d\\b"))
        .await
        .unwrap()
        .messages;
    engine.close().await.unwrap();
    let engine = Engine::open(opts(&path)).await.unwrap();
    let cold = engine.grep(grep("NEEDLE-3-1\\d\\d\\b")).await.unwrap();
    let stats = cold.message_stats.clone().unwrap();
    assert_eq!(stats.strategy, "trigram-slices", "{stats:?}");
    assert_eq!(ids(&cold.messages), ids(&warm));
    assert_eq!(cold.messages.len(), 5);
    engine.close().await.unwrap();
}
