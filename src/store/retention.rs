//! Rows of retention: which conversations a policy may archive or prune (their
//! age), every row of one conversation as column/value maps (what an archive
//! holds), the removal of a conversation with its full-text rows, and the
//! re-insertion of archived rows with their original ids.
//!
//! A PostgreSQL backend implements the same four operations over its tables.

use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde_json::{Map, Value};

use super::Features;
use crate::error::{LcmError, Result};

/// A conversation as retention sees it.
#[derive(Debug, Clone)]
pub struct ConversationAge {
    /// The conversation.
    pub conversation_id: i64,
    /// Its runtime session id.
    pub session_id: String,
    /// Its stable session key, when known.
    pub session_key: Option<String>,
    /// Whether it is the current conversation of its session.
    pub active: bool,
    /// When it last changed: its newest message's time, else the row's `updated_at`
    /// (SQLite UTC text).
    pub last_activity: String,
    /// Messages it holds.
    pub message_count: i64,
}

/// Every conversation with its last activity, oldest activity first.
pub fn conversation_ages(conn: &Connection) -> Result<Vec<ConversationAge>> {
    let mut stmt = conn.prepare(
        "SELECT c.conversation_id, c.session_id, c.session_key, c.active,
                COALESCE((SELECT m.created_at FROM messages m WHERE m.conversation_id = c.conversation_id
                          ORDER BY m.seq DESC LIMIT 1), c.updated_at),
                (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.conversation_id)
         FROM conversations c",
    )?;
    let mut out = stmt
        .query_map([], |r| {
            Ok(ConversationAge {
                conversation_id: r.get(0)?,
                session_id: r.get(1)?,
                session_key: r.get(2)?,
                active: r.get::<_, i64>(3)? != 0,
                last_activity: r.get(4)?,
                message_count: r.get(5)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    out.sort_by(|a, b| {
        a.last_activity
            .cmp(&b.last_activity)
            .then(a.conversation_id.cmp(&b.conversation_id))
    });
    Ok(out)
}

/// The tables a conversation's rows live in, in the order they are restored
/// (each after the tables its foreign keys name), with the condition that picks
/// one conversation's rows (`?1` is the conversation id).
pub const TABLES: &[(&str, &str)] = &[
    ("conversations", "conversation_id = ?1"),
    ("messages", "conversation_id = ?1"),
    (
        "message_parts",
        "message_id IN (SELECT message_id FROM messages WHERE conversation_id = ?1)",
    ),
    ("summaries", "conversation_id = ?1"),
    (
        "summary_messages",
        "summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?1)",
    ),
    (
        "summary_parents",
        "summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ?1)",
    ),
    ("context_items", "conversation_id = ?1"),
    ("large_files", "conversation_id = ?1"),
    ("lcm_turn_receipts", "conversation_id = ?1"),
    ("lcm_context_gaps", "conversation_id = ?1"),
];

/// The rowid order each table's rows are read in (so an archive is deterministic).
fn order_of(table: &str) -> &'static str {
    match table {
        "messages" => "message_id",
        "message_parts" => "message_id, ordinal",
        "summary_messages" | "summary_parents" => "summary_id, ordinal",
        "context_items" => "ordinal",
        _ => "rowid",
    }
}

/// One SQLite value as JSON, exactly: integers and reals as JSON numbers (a real
/// always with a fraction or exponent, so it reads back as a real), text as a
/// string, a blob as `{"$blob": hex}`, text that is not UTF-8 as `{"$text": hex}`.
fn to_json(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        ValueRef::Text(t) => match std::str::from_utf8(t) {
            Ok(s) => Value::String(s.to_owned()),
            Err(_) => serde_json::json!({ "$text": hex::encode(t) }),
        },
        ValueRef::Blob(b) => serde_json::json!({ "$blob": hex::encode(b) }),
    }
}

fn from_json(v: &Value) -> Result<rusqlite::types::Value> {
    use rusqlite::types::Value as V;
    Ok(match v {
        Value::Null => V::Null,
        Value::Bool(b) => V::Integer(i64::from(*b)),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) if !n.is_f64() => V::Integer(i),
            (_, Some(f)) => V::Real(f),
            _ => {
                return Err(LcmError::invalid(format!(
                    "archive value {n} is out of range"
                )))
            }
        },
        Value::String(s) => V::Text(s.clone()),
        Value::Object(o) => {
            let bytes = |k: &str| {
                o.get(k)
                    .and_then(Value::as_str)
                    .and_then(|h| hex::decode(h).ok())
            };
            if let Some(b) = bytes("$blob") {
                V::Blob(b)
            } else if let Some(t) = bytes("$text") {
                // Stored as SQLite stored it: the bytes, as text.
                V::Text(String::from_utf8_lossy(&t).into_owned())
            } else {
                return Err(LcmError::invalid("archive value is an unknown object"));
            }
        }
        Value::Array(_) => return Err(LcmError::invalid("archive value is an array")),
    })
}

/// One table's rows as column → value maps.
pub type TableRows = (String, Vec<Map<String, Value>>);

/// The tables one conversation's rows live in, in restore order, with their
/// condition: those of [`TABLES`] that exist, then any other table with a
/// `conversation_id` column (a table a later version added, or another plugin's):
/// a prune must not let a cascade remove rows its archive lacks.
pub fn conversation_tables(conn: &Connection) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (table, cond) in TABLES {
        if table_exists(conn, table)? {
            out.push(((*table).to_owned(), (*cond).to_owned()));
        }
    }
    let names: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
             AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for name in names {
        if out.iter().any(|(t, _)| *t == name) || name.starts_with("lcm_pruned") {
            continue;
        }
        let has: bool = conn
            .prepare(&format!(
                "SELECT 1 FROM pragma_table_info('{}') WHERE name = 'conversation_id'",
                name.replace('\'', "''")
            ))?
            .query_row([], |_| Ok(()))
            .optional()?
            .is_some();
        if has {
            out.push((quoted(&name), "conversation_id = ?1".to_owned()));
        }
    }
    Ok(out)
}

/// A table name as an SQL identifier (the known ones are plain).
fn quoted(name: &str) -> String {
    if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        name.to_owned()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// Every row of one conversation, per table of [`conversation_tables`], as
/// column → value maps.
pub fn conversation_rows(conn: &Connection, conversation_id: i64) -> Result<Vec<TableRows>> {
    let tables = conversation_tables(conn)?;
    let mut out = Vec::with_capacity(tables.len());
    for (table, cond) in &tables {
        let mut stmt = conn.prepare(&format!(
            "SELECT * FROM {table} WHERE {cond} ORDER BY {}",
            order_of(table)
        ))?;
        let cols: Vec<String> = stmt.column_names().map(|c| c.to_string()).collect();
        let mut rows = stmt.query([conversation_id])?;
        let mut list = Vec::new();
        while let Some(r) = rows.next()? {
            let mut m = Map::with_capacity(cols.len());
            for (i, c) in cols.iter().enumerate() {
                m.insert(c.clone(), to_json(r.get_ref(i)?));
            }
            list.push(m);
        }
        out.push((table.clone(), list));
    }
    Ok(out)
}

fn table_exists(conn: &Connection, table: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1")?
        .query_row([table], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Whether a conversation id is taken.
pub fn conversation_exists(conn: &Connection, conversation_id: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM conversations WHERE conversation_id = ?1")?
        .query_row([conversation_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// The messages' full-text watermark (messages past it are not indexed yet).
fn fts_watermark(conn: &Connection) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT indexed_upto FROM lcm_fts_state WHERE table_name = 'messages_fts'")?
        .query_row([], |r| r.get::<_, i64>(0))
        .optional()?
        .unwrap_or(0))
}

/// Removes one conversation and every row of it (the tables of [`TABLES`]) with
/// its full-text rows, in the caller's transaction. Returns the messages removed.
pub fn delete_conversation(
    tx: &Transaction,
    conversation_id: i64,
    features: Features,
) -> Result<i64> {
    if features.fts5 {
        let upto = fts_watermark(tx)?;
        tx.execute(
            "INSERT INTO messages_fts (messages_fts, rowid, content)
             SELECT 'delete', message_id, content FROM messages
             WHERE conversation_id = ?1 AND message_id <= ?2",
            params![conversation_id, upto],
        )?;
        let ids: Vec<String> = tx
            .prepare("SELECT summary_id FROM summaries WHERE conversation_id = ?1")?
            .query_map([conversation_id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for id in ids {
            super::summaries::delete_fts_rows(tx, &id, features)?;
        }
    }
    let messages: i64 = tx.query_row(
        "SELECT COUNT(*) FROM messages WHERE conversation_id = ?1",
        [conversation_id],
        |r| r.get(0),
    )?;
    // Reverse restore order: each table before the tables its rows point at.
    for (table, cond) in conversation_tables(tx)?.iter().rev() {
        tx.execute(
            &format!("DELETE FROM {table} WHERE {cond}"),
            [conversation_id],
        )?;
    }
    Ok(messages)
}

/// Inserts archived rows back with their original ids and values, in [`TABLES`]
/// order, then their full-text rows. The conversation must not exist.
pub fn insert_rows(
    tx: &Transaction,
    rows: &[(String, Vec<Map<String, Value>>)],
    features: Features,
) -> Result<()> {
    let tables = conversation_tables(tx)?;
    if let Some((t, _)) = rows
        .iter()
        .find(|(t, list)| !list.is_empty() && !tables.iter().any(|(n, _)| n == t))
    {
        return Err(LcmError::invalid(format!(
            "the archive holds rows of table {t}, which this database does not have; nothing was restored"
        )));
    }
    for (table, _) in &tables {
        for (t, list) in rows.iter().filter(|(t, _)| t == table) {
            for row in list {
                let cols: Vec<&String> = row.keys().collect();
                let names = cols
                    .iter()
                    .map(|c| format!("\"{}\"", c.replace('"', "\"\"")))
                    .collect::<Vec<_>>()
                    .join(", ");
                let marks = (1..=cols.len())
                    .map(|i| format!("?{i}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let values = row.values().map(from_json).collect::<Result<Vec<_>>>()?;
                tx.prepare_cached(&format!("INSERT INTO {t} ({names}) VALUES ({marks})"))?
                    .execute(rusqlite::params_from_iter(values))?;
            }
        }
    }
    if features.fts5 {
        let upto = fts_watermark(tx)?;
        for (t, list) in rows {
            for row in list {
                match t.as_str() {
                    "messages" => {
                        let id = row.get("message_id").and_then(Value::as_i64).unwrap_or(0);
                        if id <= upto {
                            tx.prepare_cached(
                                "INSERT INTO messages_fts (rowid, content) SELECT message_id, content FROM messages WHERE message_id = ?1",
                            )?
                            .execute([id])?;
                        }
                    }
                    "summaries" => {
                        let id = row.get("summary_id").and_then(Value::as_str).unwrap_or("");
                        let content = row.get("content").and_then(Value::as_str).unwrap_or("");
                        super::summaries::index_summary(tx, id, content, features)?;
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// What a conversation's rows look like, cheaply: counts and newest ids of each
/// table, the summaries' total text length and the row's `updated_at`. An archive
/// records it; a prune removes the rows only when it is unchanged.
pub fn fingerprint(conn: &Connection, conversation_id: i64) -> Result<String> {
    let (updated, active): (String, i64) = conn.query_row(
        "SELECT updated_at, active FROM conversations WHERE conversation_id = ?1",
        [conversation_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let (m, m_max): (i64, i64) = conn.query_row(
        "SELECT COUNT(*), COALESCE(MAX(message_id), 0) FROM messages WHERE conversation_id = ?1",
        [conversation_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let (s, s_len): (i64, i64) = conn.query_row(
        "SELECT COUNT(*), COALESCE(SUM(length(content)), 0) FROM summaries WHERE conversation_id = ?1",
        [conversation_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let c: i64 = conn.query_row(
        "SELECT COUNT(*) FROM context_items WHERE conversation_id = ?1",
        [conversation_id],
        |r| r.get(0),
    )?;
    Ok(format!(
        "m{m}/{m_max} s{s}/{s_len} c{c} a{active} u{updated}"
    ))
}

/// A conversation's rows and their [`fingerprint`], read in one snapshot.
pub fn snapshot(conn: &Connection, conversation_id: i64) -> Result<(Vec<TableRows>, String)> {
    conn.execute_batch("BEGIN")?;
    let out = conversation_rows(conn, conversation_id)
        .and_then(|d| Ok((d, fingerprint(conn, conversation_id)?)));
    conn.execute_batch("COMMIT")?;
    out
}

/// Records a removed conversation: where its archive is, and its summaries' ids
/// (so a lookup of one can name the archive).
pub fn record_pruned(
    tx: &Transaction,
    conversation_id: i64,
    session: &str,
    archive: &str,
    messages: i64,
) -> Result<()> {
    tx.execute(
        "INSERT OR REPLACE INTO lcm_pruned_summaries (summary_id, conversation_id)
         SELECT summary_id, conversation_id FROM summaries WHERE conversation_id = ?1",
        [conversation_id],
    )?;
    tx.execute(
        "INSERT OR REPLACE INTO lcm_pruned (conversation_id, session, archive, messages, pruned_at)
         VALUES (?1, ?2, ?3, ?4, datetime('now'))",
        params![conversation_id, session, archive, messages],
    )?;
    Ok(())
}

/// Forgets a removed conversation's record (it was restored).
pub fn forget_pruned(tx: &Transaction, conversation_id: i64) -> Result<()> {
    tx.execute(
        "DELETE FROM lcm_pruned_summaries WHERE conversation_id = ?1",
        [conversation_id],
    )?;
    tx.execute(
        "DELETE FROM lcm_pruned WHERE conversation_id = ?1",
        [conversation_id],
    )?;
    Ok(())
}

/// Where the conversation that held a summary went, when it was pruned:
/// `(conversation id, archive directory)`.
pub fn pruned_summary(conn: &Connection, summary_id: &str) -> Result<Option<(i64, String)>> {
    Ok(conn
        .prepare_cached(
            "SELECT p.conversation_id, p.archive FROM lcm_pruned_summaries s
             JOIN lcm_pruned p ON p.conversation_id = s.conversation_id WHERE s.summary_id = ?1",
        )?
        .query_row([summary_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// Whether another active conversation holds `session_key` now.
pub fn key_taken(conn: &Connection, session_key: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM conversations WHERE session_key = ?1 AND active = 1")?
        .query_row([session_key], |_| Ok(()))
        .optional()?
        .is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_of_another_version_with_conversation_rows_is_archived_removed_and_restored() {
        let mut conn = Connection::open_in_memory().unwrap();
        let features = crate::store::migrate::migrate(&mut conn).unwrap();
        conn.execute_batch(
            "CREATE TABLE plugin_notes (conversation_id INTEGER REFERENCES conversations(conversation_id) ON DELETE CASCADE, note TEXT, score REAL, raw BLOB);
             INSERT INTO conversations (conversation_id, session_id) VALUES (7, 's7'), (8, 's8');
             INSERT INTO messages (conversation_id, seq, role, content, token_count) VALUES (7, 0, 'user', 'hé ☃', 2);
             INSERT INTO plugin_notes VALUES (7, 'kept', 1.0, x'00ff'), (8, 'other', 2.5, NULL);",
        )
        .unwrap();
        let tables = conversation_tables(&conn).unwrap();
        assert!(
            tables.iter().any(|(t, _)| t == "plugin_notes"),
            "{tables:?}"
        );
        let (rows, fp) = snapshot(&conn, 7).unwrap();
        let notes = &rows.iter().find(|(t, _)| t == "plugin_notes").unwrap().1;
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0]["score"], serde_json::json!(1.0));
        assert_eq!(notes[0]["raw"], serde_json::json!({ "$blob": "00ff" }));
        let tx = conn.transaction().unwrap();
        assert_eq!(delete_conversation(&tx, 7, features).unwrap(), 1);
        tx.commit().unwrap();
        let left: i64 = conn
            .query_row("SELECT COUNT(*) FROM plugin_notes", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 1);
        let tx = conn.transaction().unwrap();
        insert_rows(&tx, &rows, features).unwrap();
        tx.commit().unwrap();
        assert_eq!(snapshot(&conn, 7).unwrap(), (rows.clone(), fp));
        let (score, raw): (f64, Vec<u8>) = conn
            .query_row(
                "SELECT score, raw FROM plugin_notes WHERE conversation_id = 7",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((score, raw), (1.0, vec![0, 255]));
        // Into a database without that table: refused, nothing written.
        let mut other = Connection::open_in_memory().unwrap();
        let f2 = crate::store::migrate::migrate(&mut other).unwrap();
        let tx = other.transaction().unwrap();
        let err = insert_rows(&tx, &rows, f2).unwrap_err();
        assert!(err.message.contains("plugin_notes"), "{err}");
    }
}
