//! Opening-time migration: creates missing tables, adds columns older databases
//! lack, builds indexes and full-text tables, and runs the versioned backfills —
//! all in one exclusive transaction, so concurrent openers serialize and a failure
//! leaves the file as it was.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::fts_lag;
use super::schema::{self, FtsTable};
use crate::error::Result;
use crate::timestamp;

/// Whether optional SQLite features are present in this build.
#[derive(Debug, Clone, Copy, Default)]
pub struct Features {
    /// FTS5 is compiled in.
    pub fts5: bool,
    /// The FTS5 trigram tokenizer is available.
    pub trigram: bool,
}

/// Runs every migration step once, in one transaction.
pub fn migrate(conn: &mut Connection) -> Result<Features> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)?;
    tx.execute_batch(schema::CREATE_TABLES)?;
    add_missing_columns(&tx)?;
    tx.execute_batch("UPDATE conversations SET active = 1 WHERE active IS NULL")?;
    tx.execute_batch(schema::CREATE_INDEXES)?;
    run_versioned(&tx, "backfillSummaryDepths", 1, backfill_summary_depths)?;
    run_versioned(&tx, "backfillSummaryMetadata", 1, backfill_summary_metadata)?;
    let features = detect_features(&tx);
    if features.fts5 {
        let rebuilt = ensure_fts(&tx, &schema::MESSAGES_FTS)?;
        fts_lag::init_watermark(&tx, rebuilt)?;
        fts_lag::configure(&tx)?;
        ensure_fts(&tx, &schema::SUMMARIES_FTS)?;
        if features.trigram {
            ensure_fts(&tx, &schema::SUMMARIES_FTS_CJK)?;
        }
    }
    // A compaction run that died mid-phase left its conversation's ordinals with
    // gaps: closed before anything reads them.
    super::dag::close_marked_gaps(&tx)?;
    clear_planner_statistics(&tx)?;
    tx.commit()?;
    Ok(features)
}

/// Empties SQLite's planner statistics (`sqlite_stat1`, and `sqlite_stat4` where
/// a build wrote it) when a file has any, and reloads them, now empty, into this
/// connection, so every connection plans as the engine's statements were designed
/// and tested: from the schema alone. Statistics are a snapshot of the size the
/// file had when someone last ran `ANALYZE` or `PRAGMA optimize` (the reference
/// plugin runs the latter at close, and so did this engine until it measured
/// this): taken on a small file, they told the planner `messages` holds one row,
/// and the writer's full-text catch-up read the whole table and sorted it at
/// every batch instead of seeking its new rows (docs/decisions/sqlite-settings.md).
/// A file without statistics is left untouched.
fn clear_planner_statistics(tx: &Transaction) -> Result<()> {
    let tables: Vec<String> = tx
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'sqlite\\_stat%' ESCAPE '\\'",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut cleared = false;
    for t in &tables {
        cleared |= tx.execute(&format!("DELETE FROM \"{t}\""), [])? > 0;
    }
    if cleared {
        // The connection loaded the old figures with the schema; this rereads them.
        tx.execute_batch("ANALYZE sqlite_schema")?;
    }
    Ok(())
}

fn column_names(tx: &Transaction, table: &str) -> Result<HashSet<String>> {
    let mut stmt = tx.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<HashSet<_>>>()?;
    Ok(names)
}

fn add_missing_columns(tx: &Transaction) -> Result<()> {
    let mut cache: HashMap<&str, HashSet<String>> = HashMap::new();
    for (table, column, decl) in schema::ADDED_COLUMNS {
        if !cache.contains_key(table) {
            cache.insert(table, column_names(tx, table)?);
        }
        if !cache[table].contains(*column) {
            tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {decl}"))?;
        }
    }
    Ok(())
}

fn run_versioned(
    tx: &Transaction,
    step: &str,
    version: i64,
    run: fn(&Transaction) -> Result<()>,
) -> Result<()> {
    let done: Option<i64> = tx
        .query_row(
            "SELECT 1 FROM lcm_migration_state WHERE step_name = ?1 AND algorithm_version = ?2",
            params![step, version],
            |r| r.get(0),
        )
        .optional()?;
    if done.is_some() {
        return Ok(());
    }
    run(tx)?;
    tx.execute(
        "INSERT INTO lcm_migration_state (step_name, algorithm_version) VALUES (?1, ?2)",
        params![step, version],
    )?;
    Ok(())
}

/// Leaves get depth 0; a condensed node gets 1 + the deepest of its sources (1 when
/// it has none). Nodes left unresolved by a cycle or a dangling edge get 1.
fn backfill_summary_depths(tx: &Transaction) -> Result<()> {
    let mut kinds: HashMap<String, String> = HashMap::new();
    {
        let mut stmt = tx.prepare("SELECT summary_id, kind FROM summaries")?;
        for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get(1)?)))? {
            let (id, kind) = row?;
            kinds.insert(id, kind);
        }
    }
    let mut sources: HashMap<String, Vec<String>> = HashMap::new();
    {
        let mut stmt = tx.prepare("SELECT summary_id, parent_summary_id FROM summary_parents")?;
        for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get(1)?)))? {
            let (id, src) = row?;
            sources.entry(id).or_default().push(src);
        }
    }
    let depths = resolve_depths(&kinds, &sources);
    let mut update = tx.prepare("UPDATE summaries SET depth = ?1 WHERE summary_id = ?2")?;
    for (id, depth) in depths {
        update.execute(params![depth, id])?;
    }
    Ok(())
}

/// Fixpoint depth resolution used by the depth backfill.
fn resolve_depths(
    kinds: &HashMap<String, String>,
    sources: &HashMap<String, Vec<String>>,
) -> HashMap<String, i64> {
    let mut depth: HashMap<String, i64> = HashMap::new();
    for (id, kind) in kinds {
        if kind == "leaf" {
            depth.insert(id.clone(), 0);
        } else if sources.get(id).is_none_or(|s| s.is_empty()) {
            depth.insert(id.clone(), 1);
        }
    }
    loop {
        let mut progressed = false;
        for (id, srcs) in sources {
            if depth.contains_key(id) || !kinds.contains_key(id) {
                continue;
            }
            let known: Option<Vec<i64>> = srcs.iter().map(|s| depth.get(s).copied()).collect();
            if let Some(ds) = known {
                depth.insert(id.clone(), 1 + ds.into_iter().max().unwrap_or(0));
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    for id in kinds.keys() {
        depth.entry(id.clone()).or_insert(1);
    }
    depth
}

/// Time ranges, descendant and token counts, bottom-up by depth (leaves from their
/// messages, condensed nodes from their sources; orphans fall back to created_at).
fn backfill_summary_metadata(tx: &Transaction) -> Result<()> {
    tx.execute_batch(
        r#"
UPDATE summaries SET
  earliest_at = (SELECT MIN(m.created_at) FROM summary_messages sm JOIN messages m ON m.message_id = sm.message_id WHERE sm.summary_id = summaries.summary_id),
  latest_at = (SELECT MAX(m.created_at) FROM summary_messages sm JOIN messages m ON m.message_id = sm.message_id WHERE sm.summary_id = summaries.summary_id),
  source_message_token_count = COALESCE((SELECT SUM(m.token_count) FROM summary_messages sm JOIN messages m ON m.message_id = sm.message_id WHERE sm.summary_id = summaries.summary_id), 0),
  descendant_count = 0,
  descendant_token_count = 0
WHERE kind = 'leaf';
"#,
    )?;
    normalize_times(tx, "kind = 'leaf'")?;
    let max_depth: i64 = tx.query_row(
        "SELECT COALESCE(MAX(depth), 0) FROM summaries WHERE kind = 'condensed'",
        [],
        |r| r.get(0),
    )?;
    for depth in 1..=max_depth {
        tx.execute(
            r#"
UPDATE summaries SET
  earliest_at = (SELECT MIN(s2.earliest_at) FROM summary_parents sp JOIN summaries s2 ON s2.summary_id = sp.parent_summary_id WHERE sp.summary_id = summaries.summary_id),
  latest_at = (SELECT MAX(s2.latest_at) FROM summary_parents sp JOIN summaries s2 ON s2.summary_id = sp.parent_summary_id WHERE sp.summary_id = summaries.summary_id),
  descendant_count = COALESCE((SELECT SUM(s2.descendant_count + 1) FROM summary_parents sp JOIN summaries s2 ON s2.summary_id = sp.parent_summary_id WHERE sp.summary_id = summaries.summary_id), 0),
  descendant_token_count = COALESCE((SELECT SUM(s2.token_count + s2.descendant_token_count) FROM summary_parents sp JOIN summaries s2 ON s2.summary_id = sp.parent_summary_id WHERE sp.summary_id = summaries.summary_id), 0),
  source_message_token_count = COALESCE((SELECT SUM(s2.source_message_token_count) FROM summary_parents sp JOIN summaries s2 ON s2.summary_id = sp.parent_summary_id WHERE sp.summary_id = summaries.summary_id), 0)
WHERE kind = 'condensed' AND depth = ?1
"#,
            params![depth],
        )?;
        normalize_times(tx, &format!("kind = 'condensed' AND depth = {depth}"))?;
    }
    Ok(())
}

/// Rewrites earliest_at / latest_at of the selected rows as ISO strings, falling
/// back to created_at where a range could not be derived.
fn normalize_times(tx: &Transaction, filter: &str) -> Result<()> {
    let rows: Vec<(String, Option<String>, Option<String>, String)> = {
        let mut stmt = tx.prepare(&format!(
            "SELECT summary_id, earliest_at, latest_at, created_at FROM summaries WHERE {filter}"
        ))?;
        let mapped = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
        mapped.collect::<rusqlite::Result<_>>()?
    };
    let mut update =
        tx.prepare("UPDATE summaries SET earliest_at = ?1, latest_at = ?2 WHERE summary_id = ?3")?;
    for (id, earliest, latest, created) in rows {
        let iso = |v: Option<String>| {
            v.as_deref()
                .and_then(timestamp::parse)
                .or_else(|| timestamp::parse(&created))
                .map(timestamp::to_iso)
        };
        update.execute(params![iso(earliest), iso(latest), id])?;
    }
    Ok(())
}

fn detect_features(tx: &Transaction) -> Features {
    let probe = |sql: &str| {
        tx.execute_batch(sql).is_ok()
            && tx
                .execute_batch("DROP TABLE IF EXISTS temp.lcm_probe")
                .is_ok()
    };
    Features {
        fts5: probe("CREATE VIRTUAL TABLE temp.lcm_probe USING fts5(x)"),
        trigram: probe("CREATE VIRTUAL TABLE temp.lcm_probe USING fts5(x, tokenize='trigram')"),
    }
}

/// Creates a full-text table when missing, or rebuilds it when its stored layout is
/// not the current one (e.g. the reference's standalone `messages_fts`, or a
/// table meant to keep its text whose stored rows are missing, see
/// [`schema::stored_rows`]). Returns whether it was (re)built from its base
/// table.
fn ensure_fts(tx: &Transaction, t: &FtsTable) -> Result<bool> {
    let sql_of = |name: &str| -> Result<Option<String>> {
        Ok(tx
            .query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()?)
    };
    let sql = sql_of(t.name)?;
    // A table that keeps its own text (no `content=` option) has its stored rows.
    let stored = t.create.contains("content=") || sql_of(&schema::stored_rows(t.name))?.is_some();
    match sql {
        Some(s) if s.contains(t.expect) && stored => return Ok(false),
        Some(_) => tx.execute_batch(&format!("DROP TABLE {}", t.name))?,
        None => {}
    }
    tx.execute_batch(t.create)?;
    tx.execute_batch(t.seed)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::recall;

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn depths_resolve_bottom_up_and_cycles_fall_back_to_one() {
        let kinds = map(&[
            ("l1", "leaf"),
            ("l2", "leaf"),
            ("c1", "condensed"),
            ("c2", "condensed"),
            ("x", "condensed"),
            ("y", "condensed"),
        ]);
        let mut sources: HashMap<String, Vec<String>> = HashMap::new();
        sources.insert("c1".into(), vec!["l1".into(), "l2".into()]);
        sources.insert("c2".into(), vec!["c1".into()]);
        sources.insert("x".into(), vec!["y".into()]);
        sources.insert("y".into(), vec!["x".into()]);
        let d = resolve_depths(&kinds, &sources);
        assert_eq!(d["l1"], 0);
        assert_eq!(d["c1"], 1);
        assert_eq!(d["c2"], 2);
        assert_eq!(d["x"], 1);
        assert_eq!(d["y"], 1);
    }

    /// The recall reads summary ids from `summaries_fts_content`: a summary table
    /// that does not keep its text (here contentless) is rebuilt from `summaries`.
    #[test]
    fn a_summary_index_without_its_stored_rows_is_rebuilt() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        conn.execute_batch(
            "INSERT INTO conversations (session_id) VALUES ('s');
             INSERT INTO summaries (summary_id, conversation_id, kind, content, token_count)
               VALUES ('sum_a', 1, 'leaf', 'the deploy rolled back', 5);
             DROP TABLE summaries_fts;
             CREATE VIRTUAL TABLE summaries_fts USING fts5(summary_id UNINDEXED, content,
               content='', tokenize='porter unicode61');",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let mut ids = Vec::new();
        recall::summary_fts_matches(
            &conn,
            recall::SummaryIndex::Words,
            "deploy",
            false,
            |id, _| {
                ids.push(id.to_owned());
                true
            },
        )
        .unwrap();
        assert_eq!(ids, ["sum_a"]);
        // A current table is left as it is.
        assert!(!ensure_fts(&conn.transaction().unwrap(), &schema::SUMMARIES_FTS).unwrap());
    }

    #[test]
    fn migration_is_idempotent_on_an_empty_database() {
        let mut conn = Connection::open_in_memory().unwrap();
        let f = migrate(&mut conn).unwrap();
        assert!(f.fts5);
        migrate(&mut conn).unwrap();
        let n: i64 = conn
            .query_row("SELECT COUNT(*) FROM lcm_migration_state", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
    }

    #[test]
    fn the_message_index_merges_as_configured_even_after_another_writer_changed_it() {
        let automerge = |c: &Connection| -> i64 {
            c.query_row(
                "SELECT v FROM messages_fts_config WHERE k = 'automerge'",
                [],
                |r| r.get(0),
            )
            .unwrap()
        };
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        assert_eq!(automerge(&conn), fts_lag::AUTOMERGE);
        conn.execute_batch("INSERT INTO messages_fts (messages_fts, rank) VALUES ('automerge', 4)")
            .unwrap();
        assert_eq!(automerge(&conn), 4);
        migrate(&mut conn).unwrap();
        assert_eq!(automerge(&conn), fts_lag::AUTOMERGE);
    }
}
