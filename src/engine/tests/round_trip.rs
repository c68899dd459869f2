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
