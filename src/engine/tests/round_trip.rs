//! Engine round trips in memory.

use crate::config::EngineOptions;
use crate::engine::*;
use serde_json::json;

#[tokio::test]
async fn ingest_and_round_trip_in_memory() {
    let opts = EngineOptions {
        db_path: Some(":memory:".into()),
        ..Default::default()
    };
    let engine = Engine::open(opts).await.unwrap();
    let msgs = vec![
        json!({"role":"user","content":"hello","timestamp":1771313820000i64}),
        json!({"role":"assistant","content":[{"type":"text","text":"hi"}]}),
        json!({"role":"user","content":[{"type":"text","text":"one block"}]}),
        json!({"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"out"}],"isError":false}),
    ];
    let r = engine
        .ingest_batch(IngestBatchParams {
            session_id: "s1".into(),
            session_key: None,
            messages: msgs.clone(),
            entry_ids: None,
            is_heartbeat: false,
        })
        .await
        .unwrap();
    assert_eq!(r.ingested_count, 4);
    let back = engine
        .get_messages(r.conversation_id.unwrap())
        .await
        .unwrap();
    assert_eq!(back, msgs);
    let items = engine
        .get_context_items(r.conversation_id.unwrap())
        .await
        .unwrap();
    assert_eq!(
        items.iter().map(|i| i.ordinal).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    engine.close().await.unwrap();
    assert_eq!(
        engine.get_messages(1).await.unwrap_err().code,
        crate::error::ErrorCode::Closed
    );
}

/// `close` frees the recall catalogs and the last assemblies (not the host's
/// garbage collector, later, on the JavaScript thread), and a build in progress
/// ends with it; the closed engine answers `LCM_CLOSED`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_releases_what_the_engine_holds_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let opts = EngineOptions {
        db_path: Some(dir.path().join("lcm.db").to_string_lossy().into_owned()),
        ..Default::default()
    };
    let engine = Engine::open(opts.clone()).await.unwrap();
    let messages = (0..600)
        .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": format!("note {i}")}))
        .collect();
    let (conversation_id, _) = super::ingest_messages(&engine, "s1", messages).await;
    let info = engine.warm_recall_index().await.unwrap();
    assert_eq!(info.indexed_messages, 600);
    engine
        .assemble(
            serde_json::from_value(json!({"sessionId": "s1", "tokenBudget": 100000})).unwrap(),
        )
        .await
        .unwrap();
    assert!(engine.recall.catalog.read().unwrap().is_loaded());
    assert_eq!(
        engine.assembly_cache.drain().len(),
        1,
        "an assembly was kept"
    );
    engine
        .assemble(
            serde_json::from_value(json!({"sessionId": "s1", "tokenBudget": 100000})).unwrap(),
        )
        .await
        .unwrap();

    engine.close().await.unwrap();
    assert!(!engine.recall.catalog.read().unwrap().is_loaded());
    assert!(engine.assembly_cache.drain().is_empty());
    let grep = json!({"pattern": "note", "conversationId": conversation_id});
    let err = engine
        .grep(serde_json::from_value(grep).unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.code, crate::error::ErrorCode::Closed);

    // Closed right after open, with the background build just started.
    let again = Engine::open(opts).await.unwrap();
    again.build_recall_index_in_background();
    again.close().await.unwrap();
    assert!(!again.recall.catalog.read().unwrap().is_loaded());
}
