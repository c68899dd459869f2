//! `doctor`, `dissolve` and `transplant` on the command line: flags, text and JSON
//! output, exit codes, and dry runs that leave the file's bytes alone.

use std::path::Path;

use super::tests::{build_db, cli};
use super::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE};

fn sql(path: &Path, sql: &str) {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(sql).unwrap();
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not one JSON document ({e}): {out}"))
}

/// A second conversation (session `other`) with one leaf over two of its 4 messages.
fn second_conversation(path: &Path) -> i64 {
    use crate::engine::{Engine, IngestBatchParams, InsertSummaryParams};
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let e = Engine::open(super::db::engine_options(path)).await.unwrap();
        let messages = (0..4)
            .map(|i| serde_json::json!({"role": "user", "content": format!("Other conversation, message {i}."), "timestamp": 1_771_400_000_000i64 + i * 60_000}))
            .collect();
        let r = e
            .ingest_batch(IngestBatchParams { session_id: "other".into(), session_key: None, messages, entry_ids: None, is_heartbeat: false })
            .await
            .unwrap();
        let conv = r.conversation_id.unwrap();
        let ids: Vec<i64> = r.results.iter().map(|m| m.message_id.unwrap()).collect();
        e.insert_summary(InsertSummaryParams {
            conversation_id: conv,
            content: "Other leaf.".into(),
            message_ids: Some(ids[..2].to_vec()),
            summary_ids: None,
            model: None,
        })
        .await
        .unwrap();
        e.close().await.unwrap();
        conv
    })
}

#[test]
fn doctor_flags_and_exit_codes() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("lcm.db");
    let (conv, _) = build_db(&db);
    let dbs = db.to_string_lossy().into_owned();
    let c = conv.to_string();
    let (code, out, err) = cli(&["doctor", &c, "--db", &dbs]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(out.contains("no violations") && out.contains("OK"), "{out}");
    let (code, out, _) = cli(&["--json", "doctor", "--all", "--db", &dbs]);
    assert_eq!(code, EXIT_OK);
    let v = json(&out);
    assert_eq!(v["ok"], true);
    assert_eq!(v["conversationIds"], serde_json::json!([conv]));
    let (code, out, _) = cli(&["doctor", "--dry-run", &c, "--db", &dbs, "--json"]);
    assert_eq!(
        (code, json(&out)["applied"].clone()),
        (EXIT_OK, serde_json::json!(false))
    );
    for bad in [
        vec!["doctor"],
        vec!["doctor", &c, "--all"],
        vec!["doctor", &c, "--apply", "--dry-run"],
        vec!["doctor", "x"],
    ] {
        let mut args = bad.clone();
        args.extend(["--db", &dbs]);
        let (code, _, err) = cli(&args);
        assert_eq!(code, EXIT_USAGE, "{args:?}: {err}");
    }
    let (code, out, err) = cli(&["doctor", "99", "--db", &dbs, "--json"]);
    assert_eq!(code, EXIT_FAILURE);
    assert_eq!(json(&out)["error"]["code"], "LCM_NOT_FOUND");
    assert!(err.contains(&format!("conversations: {conv}")), "{err}");
    let (code, _, err) = cli(&[
        "doctor",
        &c,
        "--db",
        &d.path().join("none.db").to_string_lossy(),
    ]);
    assert_eq!(code, EXIT_FAILURE);
    assert!(err.contains("database not found"), "{err}");
}

#[test]
fn doctor_reports_damage_without_writing_and_apply_mends_it() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("lcm.db");
    let (conv, ids) = build_db(&db);
    let top = ids.last().unwrap().clone();
    sql(
        &db,
        &format!("UPDATE summaries SET descendant_count = 42 WHERE summary_id = '{top}'"),
    );
    sql(&db, &format!("UPDATE context_items SET ordinal = ordinal + 10 WHERE conversation_id = {conv} AND ordinal > 2"));
    let dbs = db.to_string_lossy().into_owned();
    let c = conv.to_string();
    let before = bytes(&db);
    let (code, out, _) = cli(&["doctor", &c, "--db", &dbs]);
    assert_eq!(code, EXIT_FAILURE, "{out}");
    assert!(
        out.contains(&format!(
            "summary {top}: descendant_count is 42 but should be 6"
        )),
        "{out}"
    );
    assert!(
        out.contains("[ordinalGap]") && out.contains("Run with --apply"),
        "{out}"
    );
    assert_eq!(before, bytes(&db), "the dry run changed the file");
    let (code, out, _) = cli(&["doctor", &c, "--apply", "--db", &dbs, "--json"]);
    assert_eq!(code, EXIT_OK, "{out}");
    let v = json(&out);
    assert_eq!(v["applied"], true);
    assert_eq!(v["remaining"]["violations"], serde_json::json!([]));
    let kinds: Vec<&str> = v["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"metadata") && kinds.contains(&"resequenced"),
        "{kinds:?}"
    );
    let (code, _, _) = cli(&["doctor", &c, "--db", &dbs]);
    assert_eq!(code, EXIT_OK);
}

#[test]
fn doctor_lists_broken_summaries_and_refuses_unmigrated_files_in_dry_runs() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("lcm.db");
    let (conv, ids) = build_db(&db);
    sql(&db, &format!("UPDATE summaries SET content = 'cut\n[Truncated from 640 tokens]' WHERE summary_id = '{}'", ids[1]));
    let dbs = db.to_string_lossy().into_owned();
    let (code, out, _) = cli(&["doctor", &conv.to_string(), "--db", &dbs, "--json"]);
    assert_eq!(code, EXIT_FAILURE);
    let b = &json(&out)["brokenSummaries"];
    assert_eq!(b[0]["summaryId"], ids[1].as_str());
    assert_eq!(
        (b[0]["marker"].as_str(), b[0]["order"].as_i64()),
        (Some("truncated"), Some(1))
    );
    let old = d.path().join("old.db");
    sql(&old, "CREATE TABLE conversations (conversation_id INTEGER PRIMARY KEY, session_id TEXT); CREATE TABLE messages (message_id INTEGER PRIMARY KEY, conversation_id INTEGER, seq INTEGER, role TEXT, content TEXT, token_count INTEGER, created_at TEXT); CREATE TABLE summaries (summary_id TEXT PRIMARY KEY, conversation_id INTEGER, kind TEXT, content TEXT, token_count INTEGER, created_at TEXT); CREATE TABLE summary_messages (summary_id TEXT, message_id INTEGER, ordinal INTEGER); CREATE TABLE summary_parents (summary_id TEXT, parent_summary_id TEXT, ordinal INTEGER); CREATE TABLE context_items (conversation_id INTEGER, ordinal INTEGER, item_type TEXT, message_id INTEGER, summary_id TEXT, created_at TEXT);");
    let before = bytes(&old);
    let (code, _, err) = cli(&["doctor", "--all", "--db", &old.to_string_lossy()]);
    assert_eq!(code, EXIT_FAILURE);
    assert!(
        err.contains("has not been migrated") && err.contains("--apply"),
        "{err}"
    );
    assert_eq!(before, bytes(&old));
}

#[test]
fn dissolve_dry_run_apply_and_errors() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("lcm.db");
    let (conv, ids) = build_db(&db);
    let (dbs, c) = (db.to_string_lossy().into_owned(), conv.to_string());
    let top = ids.last().unwrap().clone();
    let before = bytes(&db);
    let (code, out, _) = cli(&["dissolve", &c, "--summary", &top, "--db", &dbs]);
    assert_eq!(code, EXIT_OK, "{out}");
    assert!(
        out.contains(&format!("Dissolve {top} (condensed, d2"))
            && out.contains("Restores 2 child summaries"),
        "{out}"
    );
    assert!(
        out.contains("Shift: 4 item(s) after ordinal 0 move by +1") && out.contains("Dry run"),
        "{out}"
    );
    assert_eq!(before, bytes(&db));
    let (code, out, _) = cli(&[
        "--json",
        "dissolve",
        &c,
        "--summary",
        &top,
        "--db",
        &dbs,
        "--apply",
    ]);
    assert_eq!(code, EXIT_OK, "{out}");
    let v = json(&out);
    assert_eq!(
        (v["applied"].as_bool(), v["contextItemsAfter"].as_i64()),
        (Some(true), Some(6))
    );
    let (code, out, _) = cli(&["doctor", &c, "--db", &dbs]);
    assert_eq!(code, EXIT_OK, "{out}");
    let (code, _, err) = cli(&["dissolve", &c, "--summary", &ids[0], "--db", &dbs]);
    assert_eq!(code, EXIT_FAILURE);
    assert!(
        err.contains("is not in the context list") && err.contains(&format!("dissolve {}", ids[4])),
        "{err}"
    );
    let (code, _, err) = cli(&["dissolve", &c, "--summary", "sum_nope", "--db", &dbs]);
    assert_eq!(code, EXIT_FAILURE);
    assert!(
        err.contains(&ids[4]) && err.contains("LCM_NOT_FOUND"),
        "{err}"
    );
    let (code, _, _) = cli(&["dissolve", &c, "--db", &dbs]);
    assert_eq!(code, EXIT_USAGE);
    let (code, _, _) = cli(&[
        "dissolve",
        &c,
        "--summary",
        &ids[4],
        "--keep",
        "--apply",
        "--db",
        &dbs,
    ]);
    assert_eq!(code, EXIT_OK);
    let (code, _, _) = cli(&["doctor", "--all", "--db", &dbs]);
    assert_eq!(code, EXIT_OK);
}

#[test]
fn transplant_dry_run_apply_and_refusal() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("lcm.db");
    let (src, _) = build_db(&db);
    let dst = second_conversation(&db);
    let (dbs, s, t) = (
        db.to_string_lossy().into_owned(),
        src.to_string(),
        dst.to_string(),
    );
    let before = bytes(&db);
    let (code, out, _) = cli(&["transplant", &s, &t, "--db", &dbs]);
    assert_eq!(code, EXIT_OK, "{out}");
    assert!(
        out.contains("Summaries to copy: 7 (1 in the context list, 6 beneath)")
            && out.contains("Messages to copy: 8"),
        "{out}"
    );
    assert!(
        out.contains("Target context now: 3 items (1 summary + 2 messages)"),
        "{out}"
    );
    assert_eq!(before, bytes(&db));
    let (code, out, _) = cli(&["transplant", &s, &t, "--apply", "--db", &dbs, "--json"]);
    assert_eq!(code, EXIT_OK, "{out}");
    let v = json(&out);
    assert_eq!(
        (v["messagesIndexed"].as_i64(), v["summaryCount"].as_i64()),
        (Some(8), Some(7))
    );
    let (code, out, _) = cli(&["doctor", "--all", "--db", &dbs]);
    assert_eq!(code, EXIT_OK, "{out}");
    let (code, _, err) = cli(&["transplant", &s, &t, "--apply", "--db", &dbs]);
    assert_eq!(code, EXIT_FAILURE);
    assert!(err.contains("already holds the text"), "{err}");
    let (code, _, _) = cli(&["transplant", &s, "--db", &dbs]);
    assert_eq!(code, EXIT_USAGE);
    let (code, _, err) = cli(&["transplant", &s, "77", "--db", &dbs]);
    assert_eq!(code, EXIT_FAILURE);
    assert!(
        err.contains(&format!("conversations: {src}, {dst}")),
        "{err}"
    );
}
