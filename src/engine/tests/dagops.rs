//! Dissolve and transplant over a real engine: plans write nothing, applies keep
//! every invariant (checked with doctor), errors name what exists.

use serde_json::json;

use super::doctor::{doctor, fixture, snapshot, sql, Fixture};
use super::ingest_messages;
use crate::dagops::dissolve::DissolveParams;
use crate::dagops::transplant::TransplantParams;
use crate::doctor::DoctorParams;
use crate::engine::InsertSummaryParams;
use crate::error::ErrorCode;

fn dissolve(f: &Fixture, id: &str, apply: bool, keep: bool) -> DissolveParams {
    DissolveParams {
        conversation_id: f.conv,
        summary_id: id.to_owned(),
        apply,
        keep,
    }
}

async fn context_ids(f: &Fixture, conv: i64) -> Vec<String> {
    f.engine
        .get_context_items(conv)
        .await
        .unwrap()
        .iter()
        .map(|i| {
            i.summary_id
                .clone()
                .unwrap_or_else(|| format!("m{}", i.message_id.unwrap()))
        })
        .collect()
}

async fn count(f: &Fixture, sql: &str) -> i64 {
    let sql = sql.to_owned();
    f.engine
        .store()
        .read(move |c| Ok(c.query_row(&sql, [], |r| r.get(0))?))
        .await
        .unwrap()
}

#[tokio::test]
async fn dissolving_a_condensed_summary_restores_its_children_in_place() {
    let f = fixture().await;
    f.engine.store().flush_fts().await.unwrap();
    let before = snapshot(&f).await;
    let plan = f
        .engine
        .dissolve(dissolve(&f, &f.top, false, false))
        .await
        .unwrap();
    assert_eq!(before, snapshot(&f).await, "the dry run wrote");
    assert!(!plan.applied);
    assert_eq!(plan.target.ordinal, Some(0));
    let back: Vec<String> = plan
        .restored
        .iter()
        .map(|r| r.summary_id.clone().unwrap())
        .collect();
    assert_eq!(back, f.leaves[0..2]);
    assert_eq!((plan.shift, plan.items_shifted), (1, 3));
    assert_eq!(
        (plan.context_items_before, plan.context_items_after),
        (4, 5)
    );
    let leaves_tokens: i64 = plan.restored.iter().map(|r| r.token_count).sum();
    assert_eq!(plan.token_delta, leaves_tokens - plan.target.token_count);

    let done = f
        .engine
        .dissolve(dissolve(&f, &f.top, true, false))
        .await
        .unwrap();
    assert!(done.applied);
    let m = &f.msgs;
    assert_eq!(
        context_ids(&f, f.conv).await,
        [
            f.leaves[0].clone(),
            f.leaves[1].clone(),
            f.leaves[2].clone(),
            format!("m{}", m[8]),
            format!("m{}", m[9])
        ]
    );
    let q = |t: &str| format!("SELECT COUNT(*) FROM {t} WHERE summary_id = '{}'", f.top);
    for t in [
        "summaries",
        "summary_parents",
        "summaries_fts",
        "summaries_fts_cjk",
    ] {
        assert_eq!(count(&f, &q(t)).await, 0, "{t}");
    }
    let r = doctor(&f, false).await;
    assert!(r.ok, "{:#?}", r.found);
}

#[tokio::test]
async fn dissolving_a_leaf_restores_its_messages() {
    let f = fixture().await;
    let done = f
        .engine
        .dissolve(dissolve(&f, &f.leaves[2], true, false))
        .await
        .unwrap();
    assert_eq!(
        done.restored
            .iter()
            .map(|r| r.message_id.unwrap())
            .collect::<Vec<_>>(),
        f.msgs[6..8]
    );
    let m = &f.msgs;
    assert_eq!(
        context_ids(&f, f.conv).await,
        [
            f.top.clone(),
            format!("m{}", m[6]),
            format!("m{}", m[7]),
            format!("m{}", m[8]),
            format!("m{}", m[9])
        ]
    );
    assert_eq!(
        count(
            &f,
            &format!(
                "SELECT COUNT(*) FROM summary_messages WHERE summary_id = '{}'",
                f.leaves[2]
            )
        )
        .await,
        0
    );
    assert!(doctor(&f, false).await.ok);
}

#[tokio::test]
async fn keep_leaves_the_row_unreferenced_and_protects_its_sources() {
    let f = fixture().await;
    f.engine
        .dissolve(dissolve(&f, &f.top, true, true))
        .await
        .unwrap();
    assert_eq!(
        count(
            &f,
            &format!(
                "SELECT COUNT(*) FROM summaries WHERE summary_id = '{}'",
                f.top
            )
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &f,
            &format!(
                "SELECT COUNT(*) FROM context_items WHERE summary_id = '{}'",
                f.top
            )
        )
        .await,
        0
    );
    assert!(doctor(&f, false).await.ok);
    let e = f
        .engine
        .dissolve(dissolve(&f, &f.leaves[0], true, false))
        .await
        .unwrap_err();
    assert!(
        e.message.contains(&f.top) && e.message.contains("keep"),
        "{}",
        e.message
    );
    f.engine
        .dissolve(dissolve(&f, &f.leaves[0], true, true))
        .await
        .unwrap();
    let r = doctor(&f, false).await;
    assert!(r.ok, "{:#?}", r.found);
}

#[tokio::test]
async fn dissolve_errors_name_what_exists() {
    let f = fixture().await;
    let e = f
        .engine
        .dissolve(dissolve(&f, "sum_nope", false, false))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    assert!(
        e.message.contains(&format!("{} (d1)", f.top))
            && e.message.contains(&format!("{} (d0)", f.leaves[2])),
        "{}",
        e.message
    );
    let e = f
        .engine
        .dissolve(dissolve(&f, &f.leaves[0], false, false))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput);
    assert!(
        e.message
            .contains(&format!("{} (d1) holds it (context item 0)", f.top)),
        "{}",
        e.message
    );
    let mut p = dissolve(&f, &f.top, false, false);
    p.conversation_id = 77;
    let e = f.engine.dissolve(p).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    assert!(e.message.contains("conversations: 1"), "{}", e.message);
}

/// A second conversation "t" with 4 messages, the first two under one leaf.
async fn target(f: &Fixture) -> (i64, String) {
    let messages = (0..4)
        .map(|i| json!({"role": "user", "content": format!("target message {i} ").repeat(20), "timestamp": 1771400000000i64 + i * 60000}))
        .collect();
    let (conv, ids) = ingest_messages(&f.engine, "t", messages).await;
    let leaf = f
        .engine
        .insert_summary(InsertSummaryParams {
            conversation_id: conv,
            content: "Target leaf.".into(),
            message_ids: Some(ids[0..2].to_vec()),
            summary_ids: None,
            model: None,
        })
        .await
        .unwrap();
    (conv, leaf)
}

fn transplant(f: &Fixture, to: i64, apply: bool) -> TransplantParams {
    TransplantParams {
        source_conversation_id: f.conv,
        target_conversation_id: to,
        apply,
    }
}

#[tokio::test]
async fn transplant_copies_the_dag_to_the_front_of_the_target() {
    let f = fixture().await;
    let (dst, own_leaf) = target(&f).await;
    f.engine.store().flush_fts().await.unwrap();
    let before = snapshot(&f).await;
    let plan = f
        .engine
        .transplant(transplant(&f, dst, false))
        .await
        .unwrap();
    assert_eq!(before, snapshot(&f).await, "the dry run wrote");
    let ctx: Vec<String> = plan
        .context_summaries
        .iter()
        .map(|s| s.summary_id.clone())
        .collect();
    assert_eq!(ctx, [f.top.clone(), f.leaves[2].clone()]);
    assert_eq!((plan.summary_count, plan.message_count), (4, 8));
    assert_eq!(
        plan.summaries_by_depth
            .iter()
            .map(|d| (d.depth, d.count))
            .collect::<Vec<_>>(),
        [(0, 3), (1, 1)]
    );
    assert_eq!(
        (plan.target_summary_items, plan.target_message_items),
        (1, 2)
    );

    let done = f
        .engine
        .transplant(transplant(&f, dst, true))
        .await
        .unwrap();
    assert!(done.applied);
    assert_eq!(done.messages_indexed, Some(8));
    assert_eq!(done.seq_range, Some((5, 12)));
    let copies: Vec<String> = done.mapping.iter().map(|m| m.to.clone()).collect();
    let ids = context_ids(&f, dst).await;
    assert_eq!(ids[0..2], copies[..]);
    assert_eq!(ids[2], own_leaf);
    assert_eq!(ids.len(), 5);
    for conv in [f.conv, dst] {
        let r = f
            .engine
            .doctor(
                DoctorParams {
                    conversation_id: Some(conv),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        assert!(r.ok, "conversation {conv}: {:#?}", r.found);
    }
    let hits = count(&f, "SELECT COUNT(*) FROM messages_fts f JOIN messages m ON m.message_id = f.rowid WHERE messages_fts MATCH 'deployment' AND m.conversation_id = 2").await;
    assert_eq!(hits, 8);
    let parts = count(&f, "SELECT COUNT(*) FROM message_parts p JOIN messages m ON m.message_id = p.message_id WHERE m.conversation_id = 2 AND p.session_id = 't'").await;
    let src_parts = count(&f, &format!("SELECT COUNT(*) FROM message_parts p JOIN messages m ON m.message_id = p.message_id WHERE m.message_id IN (SELECT message_id FROM messages WHERE conversation_id = {} ORDER BY seq LIMIT 8)", f.conv)).await;
    assert!(
        parts > 0 && parts == src_parts,
        "{parts} copied of {src_parts}"
    );
    let back = f.engine.get_messages(dst).await.unwrap();
    let src = f.engine.get_messages(f.conv).await.unwrap();
    assert_eq!(back[4..12], src[0..8], "copied messages rebuild exactly");

    let e = f
        .engine
        .transplant(transplant(&f, dst, true))
        .await
        .unwrap_err();
    assert!(
        e.message.contains("already holds the text"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn transplant_into_a_list_with_a_gap_never_collides() {
    let f = fixture().await;
    let (dst, _) = target(&f).await;
    sql(&f, &format!("UPDATE context_items SET ordinal = ordinal + 100 WHERE conversation_id = {dst} AND ordinal >= 1")).await;
    f.engine
        .transplant(transplant(&f, dst, true))
        .await
        .unwrap();
    let items = f.engine.get_context_items(dst).await.unwrap();
    assert_eq!(
        items.iter().map(|i| i.ordinal).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
}

#[tokio::test]
async fn transplant_errors() {
    let f = fixture().await;
    let (dst, _) = target(&f).await;
    let e = f
        .engine
        .transplant(transplant(&f, f.conv, false))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput);
    let e = f
        .engine
        .transplant(transplant(&f, 99, false))
        .await
        .unwrap_err();
    assert!(e.message.contains("conversations: 1, 2"), "{}", e.message);
    let mut p = transplant(&f, f.conv, false);
    p.source_conversation_id = dst;
    f.engine
        .dissolve(DissolveParams {
            conversation_id: dst,
            summary_id: context_ids(&f, dst).await[0].clone(),
            apply: true,
            keep: false,
        })
        .await
        .unwrap();
    let e = f.engine.transplant(p).await.unwrap_err();
    assert!(
        e.message.contains("no summaries in its context list"),
        "{}",
        e.message
    );
    sql(
        &f,
        &format!(
            "DELETE FROM summary_parents WHERE parent_summary_id = '{}'",
            f.leaves[0]
        ),
    )
    .await;
    let e = f
        .engine
        .transplant(transplant(&f, dst, true))
        .await
        .unwrap_err();
    assert!(
        e.message.contains("damaged") || e.message.contains("doctor"),
        "{}",
        e.message
    );
}
