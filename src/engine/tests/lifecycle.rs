//! Session lifecycle through the engine: `/new` pruning by retain depth, `/reset`
//! and the host's rotations archiving with a successor, idempotent second events,
//! operator archive / unarchive, and `bootstrap`'s rollover rule.

use serde_json::{json, Value};

use super::ingest_messages;
use crate::config::EngineOptions;
use crate::doctor::DoctorParams;
use crate::engine::{Engine, IngestBatchParams, InsertSummaryParams};
use crate::lifecycle::{
    ArchiveParams, EndReason, EndSessionParams, LifecycleAction, PruneContextParams,
};
use crate::store::conversations::{ArchiveCause, SessionRef};
use crate::store::messages::ContextItemType;
use crate::transcript::{BootstrapParams, REASON_ROLLOVER};

const KEY: &str = "agent:main:main";

async fn engine() -> Engine {
    Engine::open(EngineOptions {
        db_path: Some(":memory:".into()),
        ..Default::default()
    })
    .await
    .unwrap()
}

fn msgs(prefix: &str, n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": format!("{prefix} {i}")}))
        .collect()
}

async fn ingest_keyed(e: &Engine, session: &str, messages: Vec<Value>) -> (i64, Vec<i64>) {
    let r = e
        .ingest_batch(IngestBatchParams {
            session_id: session.into(),
            session_key: Some(KEY.into()),
            messages,
            entry_ids: None,
            is_heartbeat: false,
        })
        .await
        .unwrap();
    (
        r.conversation_id.unwrap(),
        r.results.iter().map(|m| m.message_id.unwrap()).collect(),
    )
}

fn end(
    session: &str,
    reason: EndReason,
    next: Option<&str>,
    depth: Option<i64>,
) -> EndSessionParams {
    EndSessionParams {
        session_id: session.into(),
        session_key: Some(KEY.into()),
        reason,
        next_session_id: next.map(Into::into),
        retain_depth: depth,
    }
}

/// A conversation whose context is [d2, d1, d0, m, m]: one depth-2 summary, one
/// depth-1, one leaf, then two raw messages.
async fn layered(e: &Engine, session: &str) -> i64 {
    let (c, ids) = ingest_keyed(e, session, msgs("old", 12)).await;
    let leaf = |m: &[i64]| InsertSummaryParams {
        conversation_id: c,
        content: format!("leaf over {m:?}"),
        message_ids: Some(m.to_vec()),
        summary_ids: None,
        model: None,
    };
    let l1 = e.insert_summary(leaf(&ids[0..2])).await.unwrap();
    let l2 = e.insert_summary(leaf(&ids[2..4])).await.unwrap();
    let l3 = e.insert_summary(leaf(&ids[4..6])).await.unwrap();
    let l4 = e.insert_summary(leaf(&ids[6..8])).await.unwrap();
    let l5 = e.insert_summary(leaf(&ids[8..10])).await.unwrap();
    let cond = |s: Vec<String>| InsertSummaryParams {
        conversation_id: c,
        content: format!("condensed over {s:?}"),
        message_ids: None,
        summary_ids: Some(s),
        model: None,
    };
    let c1 = e.insert_summary(cond(vec![l1, l2])).await.unwrap();
    let c2 = e.insert_summary(cond(vec![l3, l4])).await.unwrap();
    e.insert_summary(cond(vec![c1])).await.unwrap();
    let _ = c2;
    let _ = l5;
    c
}

async fn depths(e: &Engine, c: i64) -> Vec<Option<i64>> {
    e.get_context_items(c)
        .await
        .unwrap()
        .iter()
        .map(|i| match i.item_type {
            ContextItemType::Message => None,
            ContextItemType::Summary => i.depth,
        })
        .collect()
}

async fn doctor_clean(e: &Engine, c: i64) {
    let report = e
        .doctor(
            DoctorParams {
                conversation_id: Some(c),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert!(
        report.found.violations.is_empty(),
        "{:?}",
        report.found.violations
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_prunes_the_context_by_retain_depth_and_deletes_nothing() {
    for (depth, expected) in [
        (-1, vec![Some(2), Some(1), Some(0), None, None]),
        (0, vec![Some(2), Some(1), Some(0)]),
        (2, vec![Some(2)]),
        (1_000, vec![]),
    ] {
        let e = engine().await;
        let c = layered(&e, "s1").await;
        assert_eq!(
            depths(&e, c).await,
            vec![Some(2), Some(1), Some(0), None, None]
        );
        let before = e.get_stats(c).await.unwrap();
        let r = e
            .end_session(end("s1", EndReason::New, None, Some(depth)))
            .await
            .unwrap();
        assert_eq!(r.action, LifecycleAction::Pruned);
        assert_eq!(depths(&e, c).await, expected, "retain depth {depth}");
        assert_eq!(r.kept_items, expected.len());
        let after = e.get_stats(c).await.unwrap();
        assert_eq!(
            (after.message_count, after.summary_count),
            (before.message_count, before.summary_count)
        );
        doctor_clean(&e, c).await;
        // The other hook of the same /new changes nothing more (before a new turn;
        // retain depth −1 keeps the messages, so the prune runs again, a no-op).
        let again = e
            .end_session(end("s1", EndReason::New, Some("s2"), Some(depth)))
            .await
            .unwrap();
        let handled = if depth < 0 {
            LifecycleAction::Pruned
        } else {
            LifecycleAction::AlreadyHandled
        };
        assert_eq!(again.action, handled);
        ingest_keyed(&e, "s2", msgs("fresh", 2)).await;
        assert_eq!(depths(&e, c).await.len(), expected.len() + 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_and_rotations_archive_with_a_successor_and_deleted_without() {
    for (reason, cause) in [
        (EndReason::Reset, ArchiveCause::Reset),
        (EndReason::Idle, ArchiveCause::Idle),
        (EndReason::Daily, ArchiveCause::Daily),
        (EndReason::Compaction, ArchiveCause::Compaction),
        (EndReason::Deleted, ArchiveCause::Deleted),
    ] {
        let e = engine().await;
        let (c, _) = ingest_keyed(&e, "s1", msgs("old", 4)).await;
        let r = e.end_session(end("s1", reason, None, None)).await.unwrap();
        assert_eq!(
            (r.action, r.cause),
            (LifecycleAction::Archived, Some(cause))
        );
        let family = e.session_family(KEY.into()).await.unwrap();
        let old = family.iter().find(|f| f.conversation_id == c).unwrap();
        assert!(!old.active);
        assert_eq!(old.archive_cause.as_deref(), Some(cause.as_str()));
        assert!(old.archived_at.is_some());
        let found = e
            .get_conversation(SessionRef {
                session_id: "s2".into(),
                session_key: Some(KEY.into()),
            })
            .await
            .unwrap();
        if reason == EndReason::Deleted {
            assert!(r.successor_id.is_none());
            assert!(found.is_none());
        } else {
            let next = found.unwrap();
            assert_eq!(Some(next.conversation_id), r.successor_id);
            assert!(e
                .get_context_items(next.conversation_id)
                .await
                .unwrap()
                .is_empty());
            // session_end after before_reset: already handled, learns the next id.
            let again = e
                .end_session(end("s1", reason, Some("s2"), None))
                .await
                .unwrap();
            assert_eq!(again.action, LifecycleAction::AlreadyHandled);
            assert_eq!(e.session_family(KEY.into()).await.unwrap().len(), 2);
            let (c2, _) = ingest_keyed(&e, "s2", msgs("new", 2)).await;
            assert_eq!(c2, next.conversation_id);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_shutdown_and_unknown_keep_the_conversation() {
    let e = engine().await;
    let (c, _) = ingest_keyed(&e, "s1", msgs("old", 4)).await;
    for reason in [EndReason::Restart, EndReason::Shutdown, EndReason::Unknown] {
        let r = e
            .end_session(end("s1", reason, Some("s1"), None))
            .await
            .unwrap();
        assert_eq!(r.action, LifecycleAction::Kept);
    }
    assert_eq!(e.get_context_items(c).await.unwrap().len(), 4);
    assert_eq!(e.session_family(KEY.into()).await.unwrap().len(), 1);
    let none = e
        .end_session(EndSessionParams {
            session_key: Some("agent:other:main".into()),
            ..end("zz", EndReason::Reset, None, None)
        })
        .await
        .unwrap();
    assert_eq!(none.action, LifecycleAction::NoConversation);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_archive_and_unarchive_swap_the_active_conversation() {
    let e = engine().await;
    let (c, _) = ingest_keyed(&e, "s1", msgs("old", 2)).await;
    let r = e
        .archive_conversation(ArchiveParams {
            conversation_id: c,
            cause: None,
            successor: Some(true),
        })
        .await
        .unwrap();
    assert!(r.changed);
    let next = r.successor_id.unwrap();
    let back = e.unarchive_conversation(c).await.unwrap();
    assert_eq!((back.changed, back.displaced_id), (true, Some(next)));
    let family = e.session_family(KEY.into()).await.unwrap();
    let active: Vec<i64> = family
        .iter()
        .filter(|f| f.active)
        .map(|f| f.conversation_id)
        .collect();
    assert_eq!(active, vec![c]);
    assert_eq!(
        family
            .iter()
            .find(|f| f.conversation_id == next)
            .unwrap()
            .archive_cause
            .as_deref(),
        Some("operator")
    );
    assert!(!e.unarchive_conversation(c).await.unwrap().changed);
    assert_eq!(
        e.unarchive_conversation(999)
            .await
            .unwrap_err()
            .code
            .as_str(),
        "LCM_NOT_FOUND"
    );
    let p = e
        .prune_context(PruneContextParams {
            conversation_id: c,
            retain_depth: Some(0),
        })
        .await
        .unwrap();
    assert_eq!(p.pruned_messages, 2);
}

fn boot(session: &str, rows: Vec<Value>, cap: Option<i64>) -> BootstrapParams {
    BootstrapParams {
        session_id: session.into(),
        session_key: Some(KEY.into()),
        session_file: None,
        transcript_entries: Some(rows),
        transcript_tail: false,
        max_import_tokens: cap,
        skip_heartbeat_turns: false,
    }
}

fn rows(prefix: &str, n: usize) -> Vec<Value> {
    msgs(prefix, n)
        .into_iter()
        .enumerate()
        .map(|(i, m)| json!({"type": "message", "id": format!("{prefix}-{i}"), "message": m}))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_id_rolls_over_only_when_its_transcript_does_not_continue() {
    let e = engine().await;
    let first = e
        .bootstrap(boot("s1", rows("a", 4), None), None)
        .await
        .unwrap();
    let c1 = first.conversation_id.unwrap();
    // A successor transcript that continues the stored one: same conversation.
    let mut more = rows("a", 4);
    more.extend(rows("b", 2));
    let cont = e.bootstrap(boot("s2", more, None), None).await.unwrap();
    assert_eq!(
        (cont.conversation_id, cont.imported_messages),
        (Some(c1), 2)
    );
    assert_eq!(cont.archived_conversation_id, None);
    // An unrelated transcript under a new id: the old one is archived.
    let fresh = e
        .bootstrap(boot("s3", rows("c", 3), None), None)
        .await
        .unwrap();
    assert_eq!(fresh.reason, REASON_ROLLOVER);
    assert_eq!(fresh.archived_conversation_id, Some(c1));
    assert_ne!(fresh.conversation_id, Some(c1));
    assert_eq!(fresh.imported_messages, 3);
    let family = e.session_family(KEY.into()).await.unwrap();
    let old = family.iter().find(|f| f.conversation_id == c1).unwrap();
    assert_eq!(old.archive_cause.as_deref(), Some("session-rollover"));
    // After /new (a lifecycle event), the next session continues without a rollover.
    let c3 = fresh.conversation_id.unwrap();
    e.end_session(end("s3", EndReason::New, None, Some(2)))
        .await
        .unwrap();
    let after_new = e
        .bootstrap(boot("s4", rows("d", 1), None), None)
        .await
        .unwrap();
    assert_eq!(after_new.conversation_id, Some(c3));
    assert_eq!(after_new.archived_conversation_id, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_import_tokens_caps_a_first_import_to_the_newest_messages() {
    let e = engine().await;
    let r = e
        .bootstrap(boot("s1", rows("a", 10), Some(0)), None)
        .await
        .unwrap();
    assert_eq!(r.imported_messages, 0);
    let e = engine().await;
    let all = e
        .bootstrap(boot("s1", rows("a", 10), None), None)
        .await
        .unwrap();
    let c = all.conversation_id.unwrap();
    let per: Vec<i64> = e
        .get_context_items(c)
        .await
        .unwrap()
        .iter()
        .map(|i| i.token_count)
        .collect();
    let cap: i64 = per[7..].iter().sum();
    let e = engine().await;
    let capped = e
        .bootstrap(boot("s1", rows("a", 10), Some(cap)), None)
        .await
        .unwrap();
    assert_eq!(capped.imported_messages, 3);
    let (c, _) = ingest_messages(&e, "other", msgs("x", 1)).await;
    assert!(c > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_heartbeat_turns_leaves_acknowledged_heartbeats_out_of_an_import() {
    let heartbeat = [
        json!({"role": "user", "content": "Read HEARTBEAT.md if it exists. Reply HEARTBEAT_OK if nothing needs attention."}),
        json!({"role": "assistant", "content": [{"type": "text", "text": " heartbeat_ok\n"}]}),
    ];
    let mut all = msgs("work", 2);
    all.extend(heartbeat.iter().cloned());
    all.extend(msgs("more", 2));
    // A reply that says more than the acknowledgement is a real turn.
    all.push(heartbeat[0].clone());
    all.push(json!({"role": "assistant", "content": "HEARTBEAT_OK, and the disk is full"}));
    let rows: Vec<Value> = all
        .into_iter()
        .enumerate()
        .map(|(i, m)| json!({"type": "message", "id": format!("h{i}"), "message": m}))
        .collect();
    for (skip, stored) in [(true, 6), (false, 8)] {
        let e = engine().await;
        let mut p = boot("s1", rows.clone(), None);
        p.skip_heartbeat_turns = skip;
        let r = e.bootstrap(p, None).await.unwrap();
        assert_eq!(r.imported_messages, stored, "skip {skip}");
    }
    assert!(!crate::lifecycle::is_heartbeat_ok_turn(&[(
        "assistant".into(),
        "HEARTBEAT_OK".into()
    )]));
    assert!(crate::lifecycle::is_heartbeat_ok_turn(&[
        ("user".into(), "[OpenClaw heartbeat poll]".into()),
        ("assistant".into(), "HEARTBEAT_OK".into()),
    ]));
}
