//! Doctor tests over a real engine: a healthy DAG is clean; each kind of damage is
//! named with its rows and mended by `apply`; broken summaries are summarized again.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::json;

use super::ingest_messages;
use crate::config::EngineOptions;
use crate::doctor::*;
use crate::engine::{Engine, IngestBatchParams, InsertSummaryParams};
use crate::error::{LcmError, Result};
use crate::summarize::{Summarizer, SummaryRequest, SummaryResponse};

/// Answers with a short fixed text, or fails when the source mentions `fail_on`.
#[derive(Default)]
pub(crate) struct Fake {
    pub fail_on: Mutex<Option<String>>,
    pub seen: Mutex<Vec<SummaryRequest>>,
}

#[async_trait]
impl Summarizer for Fake {
    async fn summarize(&self, req: SummaryRequest) -> Result<SummaryResponse> {
        self.seen.lock().unwrap().push(req.clone());
        if let Some(f) = self.fail_on.lock().unwrap().as_deref() {
            if req.source_text.contains(f) {
                return Err(LcmError::new(
                    crate::error::ErrorCode::LlmTransient,
                    "provider down",
                ));
            }
        }
        Ok(SummaryResponse {
            content: format!(
                "Repaired summary of {} source chars.",
                req.source_text.len()
            ),
            model: "fake-model".into(),
        })
    }
    fn name(&self) -> &str {
        "fake"
    }
}

pub(crate) struct Fixture {
    pub engine: Engine,
    pub conv: i64,
    pub msgs: Vec<i64>,
    pub leaves: Vec<String>,
    pub top: String,
    pub fake: Arc<Fake>,
}

fn words(i: usize) -> String {
    format!("message {i} about the deployment plan, ").repeat(12)
}

/// 10 messages; leaves over [0..3], [3..6], [6..8]; a condensed node over the
/// first two leaves; messages 8 and 9 stay raw. Context: top, leaf3, m8, m9.
pub(crate) async fn fixture() -> Fixture {
    let fake = Arc::new(Fake::default());
    let opts = EngineOptions {
        db_path: Some(":memory:".into()),
        ..Default::default()
    };
    let engine = Engine::open_with(opts, Some(fake.clone())).await.unwrap();
    let messages = (0..10)
        .map(|i| json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": words(i), "timestamp": 1771313820000i64 + i as i64 * 60000}))
        .collect();
    let (conv, msgs) = ingest_messages(&engine, "s", messages).await;
    let mut leaves = Vec::new();
    for (k, range) in [(0, 0..3), (1, 3..6), (2, 6..8)] {
        leaves.push(
            engine
                .insert_summary(InsertSummaryParams {
                    conversation_id: conv,
                    content: format!("Leaf {k}: the team discussed the deployment plan."),
                    message_ids: Some(msgs[range].to_vec()),
                    summary_ids: None,
                    model: None,
                })
                .await
                .unwrap(),
        );
    }
    let top = engine
        .insert_summary(InsertSummaryParams {
            conversation_id: conv,
            content: "Condensed: deployment planning, steps one and two.".into(),
            message_ids: None,
            summary_ids: Some(leaves[0..2].to_vec()),
            model: None,
        })
        .await
        .unwrap();
    Fixture {
        engine,
        conv,
        msgs,
        leaves,
        top,
        fake,
    }
}

pub(crate) async fn doctor(f: &Fixture, apply: bool) -> DoctorReport {
    f.engine
        .doctor(
            DoctorParams {
                conversation_id: Some(f.conv),
                all: false,
                apply,
            },
            None,
        )
        .await
        .unwrap()
}

pub(crate) async fn sql(f: &Fixture, sql: &str) {
    let sql = sql.to_owned();
    f.engine
        .store()
        .write(move |c| {
            c.execute_batch(&format!(
                "PRAGMA foreign_keys = OFF; {sql}; PRAGMA foreign_keys = ON;"
            ))?;
            Ok(())
        })
        .await
        .unwrap();
}

async fn value<T: rusqlite::types::FromSql + Send + 'static>(f: &Fixture, sql: &str) -> T {
    let sql = sql.to_owned();
    f.engine
        .store()
        .read(move |c| Ok(c.query_row(&sql, [], |r| r.get(0))?))
        .await
        .unwrap()
}

/// Every row of every table (FTS shadow tables included), as text.
pub(crate) async fn snapshot(f: &Fixture) -> Vec<String> {
    f.engine
        .store()
        .read(|c| {
            let tables: Vec<String> = c
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let mut out = Vec::new();
            for t in tables {
                let mut st = c.prepare(&format!("SELECT * FROM \"{t}\""))?;
                let n = st.column_count();
                let rows = st.query_map([], |r| {
                    let cells: Vec<String> = (0..n).map(|i| format!("{:?}", r.get_ref(i))).collect();
                    Ok(format!("{t}: {}", cells.join("|")))
                })?;
                for row in rows {
                    out.push(row?);
                }
            }
            Ok(out)
        })
        .await
        .unwrap()
}

fn kinds(v: &[Violation]) -> Vec<Kind> {
    v.iter().map(|x| x.kind).collect()
}

#[tokio::test]
async fn a_healthy_dag_is_clean() {
    let f = fixture().await;
    let r = doctor(&f, false).await;
    assert!(r.ok, "{:#?}", r.found.violations);
    assert!(r.found.is_clean());
    let r = doctor(&f, true).await;
    assert!(r.ok && r.repairs.is_empty() && r.resummarized.is_empty());
}

#[tokio::test]
async fn a_deleted_message_link_is_named_and_linked_back() {
    let f = fixture().await;
    let m = f.msgs[1];
    sql(
        &f,
        &format!("DELETE FROM summary_messages WHERE message_id = {m}"),
    )
    .await;
    let r = doctor(&f, false).await;
    assert!(!r.ok);
    let unc = r
        .found
        .violations
        .iter()
        .find(|v| v.kind == Kind::UncoveredMessages)
        .unwrap();
    assert_eq!(unc.message_ids, [m]);
    assert_eq!(unc.details["restoreTo"], json!(f.leaves[0]));
    // The leaf's and its parent's columns still count the message: no other finding.
    assert_eq!(
        kinds(&r.found.violations),
        [Kind::UncoveredMessages],
        "{:#?}",
        r.found.violations
    );
    let r = doctor(&f, true).await;
    assert!(r.ok, "{:#?}", r.remaining);
    assert!(r
        .repairs
        .iter()
        .any(|x| x.kind == RepairKind::Relinked && x.message_ids == [m]));
    let ord: i64 = value(
        &f,
        &format!("SELECT ordinal FROM summary_messages WHERE message_id = {m}"),
    )
    .await;
    assert_eq!(ord, 1);
}

#[tokio::test]
async fn a_deleted_summary_link_is_linked_back() {
    let f = fixture().await;
    sql(
        &f,
        &format!(
            "DELETE FROM summary_parents WHERE parent_summary_id = '{}'",
            f.leaves[1]
        ),
    )
    .await;
    let r = doctor(&f, false).await;
    let unc = r
        .found
        .violations
        .iter()
        .find(|v| v.kind == Kind::UncoveredMessages)
        .unwrap();
    assert_eq!(unc.summary_ids, [f.leaves[1].clone()]);
    assert_eq!(unc.message_ids, f.msgs[3..6]);
    assert_eq!(kinds(&r.found.violations), [Kind::UncoveredMessages]);
    let r = doctor(&f, true).await;
    assert!(r.ok, "{:#?}", r.remaining);
    let n: i64 = value(&f, &format!("SELECT ordinal FROM summary_parents WHERE summary_id = '{}' AND parent_summary_id = '{}'", f.top, f.leaves[1])).await;
    assert_eq!(n, 1);
}

#[tokio::test]
async fn a_lost_context_item_is_put_back_in_message_order() {
    let f = fixture().await;
    sql(
        &f,
        &format!(
            "DELETE FROM context_items WHERE summary_id = '{}'",
            f.leaves[2]
        ),
    )
    .await;
    let r = doctor(&f, false).await;
    let ks = kinds(&r.found.violations);
    assert!(
        ks.contains(&Kind::UncoveredMessages) && ks.contains(&Kind::OrdinalGap),
        "{ks:?}"
    );
    let r = doctor(&f, true).await;
    assert!(r.ok, "{:#?}", r.remaining);
    let items = f.engine.get_context_items(f.conv).await.unwrap();
    let ids: Vec<String> = items
        .iter()
        .map(|i| {
            i.summary_id
                .clone()
                .unwrap_or_else(|| i.message_id.unwrap().to_string())
        })
        .collect();
    assert_eq!(
        ids,
        [
            f.top.clone(),
            f.leaves[2].clone(),
            f.msgs[8].to_string(),
            f.msgs[9].to_string()
        ]
    );
}

#[tokio::test]
async fn wrong_counts_name_only_the_damaged_summary() {
    let f = fixture().await;
    sql(&f, &format!("UPDATE summaries SET descendant_count = 7, latest_at = '2020-01-01T00:00:00.000Z' WHERE summary_id = '{}'", f.top)).await;
    sql(
        &f,
        &format!(
            "UPDATE summaries SET source_message_token_count = 1 WHERE summary_id = '{}'",
            f.leaves[0]
        ),
    )
    .await;
    let r = doctor(&f, false).await;
    let mut named: Vec<String> = r
        .found
        .violations
        .iter()
        .flat_map(|v| v.summary_ids.clone())
        .collect();
    named.sort();
    let mut want = vec![f.top.clone(), f.leaves[0].clone()];
    want.sort();
    assert_eq!(named, want, "{:#?}", r.found.violations);
    let r = doctor(&f, true).await;
    assert!(r.ok, "{:#?}", r.remaining);
    let dc: i64 = value(
        &f,
        &format!(
            "SELECT descendant_count FROM summaries WHERE summary_id = '{}'",
            f.top
        ),
    )
    .await;
    assert_eq!(dc, 2);
}

#[tokio::test]
async fn ordinal_gaps_are_renumbered() {
    let f = fixture().await;
    sql(&f, &format!("UPDATE context_items SET ordinal = ordinal + 10 WHERE conversation_id = {} AND ordinal >= 2", f.conv)).await;
    let r = doctor(&f, false).await;
    assert_eq!(kinds(&r.found.violations), [Kind::OrdinalGap]);
    let r = doctor(&f, true).await;
    assert!(r.ok);
    let items = f.engine.get_context_items(f.conv).await.unwrap();
    assert_eq!(
        items.iter().map(|i| i.ordinal).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
}

#[tokio::test]
async fn gaps_a_compaction_run_marked_are_explained_and_unmarked_by_repair() {
    let f = fixture().await;
    let gap = format!("UPDATE context_items SET ordinal = ordinal + 10 WHERE conversation_id = {} AND ordinal >= 2", f.conv);
    sql(&f, &gap).await;
    let r = doctor(&f, false).await;
    assert!(!r.found.violations[0].message.contains("compaction run"));
    sql(
        &f,
        &format!(
            "INSERT INTO lcm_context_gaps (conversation_id) VALUES ({})",
            f.conv
        ),
    )
    .await;
    let r = doctor(&f, false).await;
    assert_eq!(kinds(&r.found.violations), [Kind::OrdinalGap]);
    assert!(
        r.found.violations[0]
            .message
            .contains("a compaction run left them"),
        "{}",
        r.found.violations[0].message
    );
    let r = doctor(&f, true).await;
    assert!(r.ok);
    let marked: i64 = value(&f, "SELECT COUNT(*) FROM lcm_context_gaps").await;
    assert_eq!(marked, 0);
}

#[tokio::test]
async fn stale_fts_rows_are_found_and_rewritten() {
    let f = fixture().await;
    f.engine.store().flush_fts().await.unwrap();
    sql(
        &f,
        &format!(
            "DELETE FROM summaries_fts WHERE summary_id = '{}'",
            f.leaves[2]
        ),
    )
    .await;
    sql(
        &f,
        &format!(
            "UPDATE summaries SET content = 'Rewritten text.' WHERE summary_id = '{}'",
            f.top
        ),
    )
    .await;
    sql(
        &f,
        "INSERT INTO summaries_fts (summary_id, content) VALUES ('sum_0000000000000000', 'ghost')",
    )
    .await;
    let m = f.msgs[9];
    sql(&f, &format!("UPDATE messages SET content = 'completely different words here' WHERE message_id = {m}")).await;
    let r = doctor(&f, false).await;
    let find = |k: Kind, t: &str| {
        r.found
            .violations
            .iter()
            .find(|v| v.kind == k && v.details["table"] == t)
            .cloned()
    };
    assert_eq!(
        find(Kind::FtsMissing, "summaries_fts").unwrap().summary_ids,
        [f.leaves[2].clone()]
    );
    assert_eq!(
        find(Kind::FtsOutdated, "summaries_fts")
            .unwrap()
            .summary_ids,
        [f.top.as_str()]
    );
    assert_eq!(
        find(Kind::FtsExtra, "summaries_fts").unwrap().summary_ids,
        ["sum_0000000000000000"]
    );
    assert_eq!(
        find(Kind::FtsOutdated, "messages_fts").unwrap().message_ids,
        [m]
    );
    let r = doctor(&f, true).await;
    assert!(r.ok, "{:#?}", r.remaining);
    let hits: i64 = value(
        &f,
        "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'completely'",
    )
    .await;
    assert_eq!(hits, 1);
    let hits: i64 = value(
        &f,
        "SELECT COUNT(*) FROM summaries_fts WHERE summaries_fts MATCH 'rewritten'",
    )
    .await;
    assert_eq!(hits, 1);
}

#[tokio::test]
async fn missing_and_extra_message_index_rows() {
    let f = fixture().await;
    let (a, b) = (f.msgs[0], f.msgs[4]);
    f.engine.store().flush_fts().await.unwrap();
    sql(&f, &format!("INSERT INTO messages_fts(messages_fts, rowid, content) SELECT 'delete', message_id, content FROM messages WHERE message_id = {a}")).await;
    sql(
        &f,
        "INSERT INTO messages_fts(rowid, content) VALUES (99999, 'phantom')",
    )
    .await;
    let r = doctor(&f, false).await;
    let missing = r
        .found
        .violations
        .iter()
        .find(|v| v.kind == Kind::FtsMissing)
        .unwrap();
    assert_eq!(missing.message_ids, [a]);
    let extra = r
        .found
        .violations
        .iter()
        .find(|v| v.kind == Kind::FtsExtra)
        .unwrap();
    assert_eq!(extra.message_ids, [99999]);
    assert!(doctor(&f, true).await.ok);
    let _ = b;
}

#[tokio::test]
async fn cycles_and_foreign_links_are_reported_not_repaired() {
    let f = fixture().await;
    sql(&f, &format!("INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES ('{}', '{}', 5)", f.leaves[0], f.top)).await;
    let r = doctor(&f, true).await;
    assert!(!r.ok);
    let cyc = r
        .remaining
        .as_ref()
        .unwrap()
        .violations
        .iter()
        .find(|v| v.kind == Kind::Cycle)
        .unwrap();
    let mut want = vec![f.leaves[0].clone(), f.top.clone()];
    want.sort();
    assert_eq!(cyc.summary_ids, want);
    assert!(!cyc.repairable);
}

#[tokio::test]
async fn scope_errors_list_what_exists() {
    let f = fixture().await;
    let e = f
        .engine
        .doctor(
            DoctorParams {
                conversation_id: Some(42),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, crate::error::ErrorCode::NotFound);
    assert!(
        e.message.contains(&format!("conversations: {}", f.conv)),
        "{}",
        e.message
    );
    let e = f
        .engine
        .doctor(DoctorParams::default(), None)
        .await
        .unwrap_err();
    assert_eq!(e.code, crate::error::ErrorCode::InvalidInput);
    let all = f
        .engine
        .doctor(
            DoctorParams {
                all: true,
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(all.conversation_ids, [f.conv]);
}

#[tokio::test]
async fn broken_summaries_are_listed_bottom_up_and_summarized_again() {
    let f = fixture().await;
    let healthy = "The engine writes [Truncated from 12 tokens] when it gives up; this is fine.";
    sql(&f, &format!("UPDATE summaries SET content = 'cut text\n[Truncated from 900 tokens]' WHERE summary_id = '{}'", f.leaves[1])).await;
    sql(&f, &format!("UPDATE summaries SET content = 'x\n[LCM fallback summary; truncated for context management]' WHERE summary_id = '{}'", f.top)).await;
    sql(
        &f,
        &format!(
            "UPDATE summaries SET content = '{healthy}' WHERE summary_id = '{}'",
            f.leaves[2]
        ),
    )
    .await;
    // keep the rest consistent: token counts and FTS rows follow the edits
    let r = doctor(&f, true).await;
    let b = &r.found.broken_summaries;
    assert_eq!(
        b.iter().map(|x| x.summary_id.clone()).collect::<Vec<_>>(),
        [f.leaves[1].clone(), f.top.clone()]
    );
    assert_eq!(b[0].marker, markers::MarkerKind::Truncated);
    assert_eq!(b[1].marker, markers::MarkerKind::ReferenceFallback);
    assert_eq!(b.iter().map(|x| x.order).collect::<Vec<_>>(), [1, 2]);
    assert!(r.ok, "{:#?}", r.remaining);
    assert_eq!(r.resummarized.len(), 2);
    let seen = f.fake.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].depth, 0);
    assert!(
        seen[0].source_text.contains("message 3 about"),
        "{}",
        seen[0].source_text
    );
    assert!(
        seen[0].prompt.contains("Leaf 0"),
        "previous context missing: {}",
        seen[0].prompt
    );
    assert_eq!(seen[1].depth, 1);
    assert!(
        seen[1].source_text.contains("Repaired summary of"),
        "children first: {}",
        seen[1].source_text
    );
    let content: String = value(
        &f,
        &format!(
            "SELECT content FROM summaries WHERE summary_id = '{}'",
            f.leaves[2]
        ),
    )
    .await;
    assert_eq!(content, healthy);
}

#[tokio::test]
async fn a_summarizer_error_stops_and_writes_nothing_for_that_summary() {
    let f = fixture().await;
    sql(&f, &format!("UPDATE summaries SET content = 'a\n[Truncated from 900 tokens]' WHERE summary_id = '{}'", f.leaves[0])).await;
    sql(&f, &format!("UPDATE summaries SET content = 'b\n[Capped from 9000 tokens to ~6000]' WHERE summary_id = '{}'", f.leaves[1])).await;
    *f.fake.fail_on.lock().unwrap() = Some("message 3 about".into());
    let r = doctor(&f, true).await;
    assert!(!r.ok);
    let e = r.error.unwrap();
    assert_eq!(
        (e.summary_id.as_str(), e.code.as_str()),
        (f.leaves[1].as_str(), "LCM_LLM_TRANSIENT")
    );
    assert_eq!(r.resummarized.len(), 1);
    let left = r.remaining.unwrap().broken_summaries;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].summary_id, f.leaves[1]);
    let content: String = value(
        &f,
        &format!(
            "SELECT content FROM summaries WHERE summary_id = '{}'",
            f.leaves[1]
        ),
    )
    .await;
    assert!(content.ends_with("[Capped from 9000 tokens to ~6000]"));
}

#[tokio::test]
async fn dry_runs_write_nothing() {
    let f = fixture().await;
    sql(
        &f,
        &format!(
            "UPDATE summaries SET descendant_count = 9 WHERE summary_id = '{}'",
            f.top
        ),
    )
    .await;
    sql(&f, &format!("UPDATE summaries SET content = 'a\n[Truncated from 900 tokens]' WHERE summary_id = '{}'", f.leaves[0])).await;
    f.engine.store().flush_fts().await.unwrap();
    let before = snapshot(&f).await;
    let r = doctor(&f, false).await;
    assert!(!r.ok);
    assert_eq!(before, snapshot(&f).await);
    assert!(f.fake.seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn tampered_fts_shadow_text_is_an_index_violation() {
    let f = fixture().await;
    sql(
        &f,
        &format!(
            "UPDATE summaries_fts_content SET c1 = 'tampered words' WHERE c0 = '{}'",
            f.top
        ),
    )
    .await;
    let r = doctor(&f, false).await;
    let idx: Vec<&Violation> = r
        .found
        .violations
        .iter()
        .filter(|v| v.kind == Kind::FtsIndex)
        .collect();
    assert_eq!(idx.len(), 1, "{:#?}", r.found.violations);
    assert_eq!(idx[0].details["table"], "summaries_fts");
    assert!(!kinds(&r.found.violations).contains(&Kind::SqliteIntegrity));
    let r = doctor(&f, true).await;
    assert!(r.ok, "{:#?}", r.remaining);
}

/// On a file database the checks after a repair run on pooled read connections,
/// whose FTS5 tables cached the index structure before the repair.
#[tokio::test]
async fn fts_repairs_verify_clean_on_long_lived_read_connections() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.db").to_string_lossy().into_owned();
    let opts = EngineOptions {
        db_path: Some(path.clone()),
        ..Default::default()
    };
    let e = Engine::open(opts.clone()).await.unwrap();
    let messages = (0..6)
        .map(|i| json!({"role": "user", "content": words(i)}))
        .collect();
    let r = e
        .ingest_batch(IngestBatchParams {
            session_id: "s".into(),
            session_key: None,
            messages,
            entry_ids: None,
            is_heartbeat: false,
        })
        .await
        .unwrap();
    let ids: Vec<i64> = r.results.iter().map(|m| m.message_id.unwrap()).collect();
    let conv = r.conversation_id.unwrap();
    let leaf = e
        .insert_summary(InsertSummaryParams {
            conversation_id: conv,
            content: "Leaf words here.".into(),
            message_ids: Some(ids[0..3].to_vec()),
            summary_ids: None,
            model: None,
        })
        .await
        .unwrap();
    e.close().await.unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute(
        "UPDATE summaries SET content = 'Rewritten by hand: zeppelin.' WHERE summary_id = ?1",
        [&leaf],
    )
    .unwrap();
    drop(c);
    let e = Engine::open(opts).await.unwrap();
    let p = |apply| DoctorParams {
        conversation_id: Some(conv),
        all: false,
        apply,
    };
    assert!(!e.doctor(p(false), None).await.unwrap().ok);
    let r = e.doctor(p(true), None).await.unwrap();
    assert!(r.ok, "{:#?}", r.remaining);
    assert!(e.doctor(p(false), None).await.unwrap().ok);
    e.close().await.unwrap();
}

/// The command line's dry run: a read-only connection, where FTS5's integrity-check
/// command cannot run, so the message index is compared chunk by chunk.
#[tokio::test]
async fn read_only_checks_locate_stale_message_index_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.db").to_string_lossy().into_owned();
    let opts = EngineOptions {
        db_path: Some(path.clone()),
        ..Default::default()
    };
    let e = Engine::open(opts).await.unwrap();
    let messages = (0..2100)
        .map(|i| json!({"role": "user", "content": format!("note {i} about lighthouses")}))
        .collect();
    let r = e
        .ingest_batch(IngestBatchParams {
            session_id: "s".into(),
            session_key: None,
            messages,
            entry_ids: None,
            is_heartbeat: false,
        })
        .await
        .unwrap();
    let conv = r.conversation_id.unwrap();
    let late = r.results[2050].message_id.unwrap();
    e.close().await.unwrap();
    let ro = || {
        let c = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let f = features_of(&c).unwrap();
        (c, f)
    };
    let (c, f) = ro();
    require_current_schema(&c).unwrap();
    let clean = check_with(&c, None, f, &[conv], Some(conv), None).unwrap();
    assert!(clean.is_clean(), "{:#?}", clean.violations);
    drop(c);
    let (c, f) = ro();
    // Read-only alone: the row comparison singles out a text whose token count changed.
    w_update(&path, late, "completely different and longer words now");
    let found = check_with(&c, None, f, &[conv], Some(conv), None).unwrap();
    let stale: Vec<&Violation> = found
        .violations
        .iter()
        .filter(|v| v.kind == Kind::FtsOutdated)
        .collect();
    assert_eq!(stale.len(), 1, "{:#?}", found.violations);
    assert_eq!(stale[0].message_ids, [late]);
    // Same token counts: only the integrity-check command (on a probe) sees it.
    w_update(&path, late, "note 2050 about lighthouses");
    let other = r.results[7].message_id.unwrap();
    w_update(&path, other, "note seven about lamps");
    let blind = check_with(&c, None, f, &[conv], Some(conv), None).unwrap();
    assert!(blind.is_clean(), "{:#?}", blind.violations);
    let probe = rusqlite::Connection::open(&path).unwrap();
    let seen = check_with(&c, Some(&probe), f, &[conv], Some(conv), None).unwrap();
    assert_eq!(
        kinds(&seen.violations),
        [Kind::FtsIndex],
        "{:#?}",
        seen.violations
    );
    assert!(seen.violations[0].repairable);
}

fn w_update(path: &str, id: i64, text: &str) {
    let w = rusqlite::Connection::open(path).unwrap();
    w.execute(
        "UPDATE messages SET content = ?2 WHERE message_id = ?1",
        rusqlite::params![id, text],
    )
    .unwrap();
}

#[tokio::test]
async fn a_lost_message_item_goes_back_between_its_neighbours() {
    let f = fixture().await;
    let m = f.msgs[8];
    sql(
        &f,
        &format!("DELETE FROM context_items WHERE message_id = {m}"),
    )
    .await;
    let r = doctor(&f, false).await;
    let unc = r
        .found
        .violations
        .iter()
        .find(|v| v.kind == Kind::UncoveredMessages)
        .unwrap();
    assert_eq!(unc.message_ids, [m]);
    assert!(
        unc.details.is_null(),
        "no summary can prove it held the message"
    );
    let r = doctor(&f, true).await;
    assert!(r.ok, "{:#?}", r.remaining);
    assert!(r
        .repairs
        .iter()
        .any(|x| x.kind == RepairKind::Reinserted && x.message_ids == [m]));
    let items = f.engine.get_context_items(f.conv).await.unwrap();
    let ids: Vec<Option<i64>> = items.iter().map(|i| i.message_id).collect();
    assert_eq!(ids, [None, None, Some(m), Some(f.msgs[9])]);
}
