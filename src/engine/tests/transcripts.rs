//! `bootstrap` against a file another connection holds the write lock of.

use std::time::Duration;

use crate::config::EngineOptions;
use crate::engine::*;
use crate::error::ErrorCode;
use crate::transcript::{BootstrapParams, REASON_UP_TO_DATE};
use serde_json::{json, Value};

fn entries(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"type":"message","entryId":format!("e{i}"),"message":{"role":"user","content":format!("turn {i}: 한국어\u{a0}🎉")}}))
        .collect()
}

fn params(rows: Vec<Value>) -> BootstrapParams {
    BootstrapParams {
        session_id: "s".into(),
        session_key: Some("agent:main:s".into()),
        session_file: None,
        transcript_entries: Some(rows),
        transcript_tail: false,
        max_import_tokens: None,
        skip_heartbeat_turns: false,
    }
}

/// A host bootstraps before every turn: with the transcript already stored, the
/// call is decided in a read transaction and answers while another connection
/// holds the write lock (it used to wait out the busy timeout, then fail); a call
/// with messages to import still waits for the lock and fails with `LCM_DB_BUSY`
/// once the timeout has passed, storing nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_up_to_date_bootstrap_never_waits_for_the_write_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.db");
    let opts = EngineOptions {
        db_path: Some(path.to_string_lossy().into_owned()),
        busy_timeout_ms: 2_000,
        ..Default::default()
    };
    let engine = Engine::open(opts).await.unwrap();
    let first = engine.bootstrap(params(entries(20)), None).await.unwrap();
    assert_eq!(first.imported_messages, 20);

    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let again = tokio::time::timeout(
        Duration::from_millis(1_500),
        engine.bootstrap(params(entries(20)), None),
    )
    .await
    .expect("answered before the busy timeout")
    .unwrap();
    assert_eq!(
        (again.reason, again.imported_messages),
        (REASON_UP_TO_DATE, 0)
    );
    let tail = BootstrapParams {
        transcript_tail: true,
        ..params(entries(20).split_off(19))
    };
    let tail = engine.bootstrap(tail, None).await.unwrap();
    assert_eq!(
        (tail.reason, tail.needs_whole_transcript),
        (REASON_UP_TO_DATE, false)
    );

    let busy = engine
        .bootstrap(params(entries(25)), None)
        .await
        .unwrap_err();
    assert_eq!(busy.code, ErrorCode::DbBusy);
    holder.execute_batch("COMMIT").unwrap();
    let later = engine.bootstrap(params(entries(25)), None).await.unwrap();
    assert_eq!(later.imported_messages, 5);
    engine.close().await.unwrap();
}
