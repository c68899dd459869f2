//! Copying part of one conversation's DAG into another (the rows of `transplant`):
//! messages with their parts, summaries with their links and FTS rows, all under
//! new ids, and summaries put in front of a context list.

use std::collections::HashMap;

use rusqlite::{params, Connection, Transaction};

use super::dag::{self, new_summary_id};
use super::messages::part_id;
use super::summaries;
use super::Features;
use crate::error::{LcmError, Result};

/// Columns of `table` except those named.
fn columns(conn: &Connection, table: &str, except: &[&str]) -> Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(names
        .into_iter()
        .filter(|n| !except.contains(&n.as_str()))
        .collect())
}

/// Source message id → its copy.
pub type MessageMap = HashMap<i64, i64>;

/// Copies messages (with their parts) into `dst` under new ids and seqs after its
/// last one; returns the id map and the new seq range. Transcript entry ids and
/// stable event keys are not copied.
pub fn messages(
    tx: &Transaction,
    dst: i64,
    ids: &[i64],
) -> Result<(MessageMap, Option<(i64, i64)>)> {
    let session: String = tx.query_row(
        "SELECT session_id FROM conversations WHERE conversation_id = ?1",
        [dst],
        |r| r.get(0),
    )?;
    let first: i64 = tx.query_row(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE conversation_id = ?1",
        [dst],
        |r| r.get(0),
    )?;
    let cols = columns(
        tx,
        "messages",
        &[
            "message_id",
            "conversation_id",
            "seq",
            "transcript_entry_id",
            "stable_event_key",
        ],
    )?
    .join(", ");
    let mut copy_msg = tx.prepare(&format!(
        "INSERT INTO messages (conversation_id, seq, {cols}) SELECT ?1, ?2, {cols} FROM messages WHERE message_id = ?3"
    ))?;
    let pcols = columns(
        tx,
        "message_parts",
        &["part_id", "message_id", "session_id"],
    )?
    .join(", ");
    let mut copy_part = tx.prepare(&format!(
        "INSERT INTO message_parts (part_id, message_id, session_id, {pcols}) SELECT ?1, ?2, ?3, {pcols} FROM message_parts WHERE message_id = ?4 AND ordinal = ?5"
    ))?;
    let mut part_ordinals =
        tx.prepare("SELECT ordinal FROM message_parts WHERE message_id = ?1 ORDER BY ordinal")?;
    let mut map = HashMap::new();
    for (i, old) in ids.iter().enumerate() {
        copy_msg.execute(params![dst, first + i as i64, old])?;
        let new = tx.last_insert_rowid();
        let ords: Vec<i64> = part_ordinals
            .query_map([old], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for o in ords {
            copy_part.execute(params![part_id(new, o), new, session, old, o])?;
        }
        map.insert(*old, new);
    }
    let range = (!ids.is_empty()).then(|| (first, first + ids.len() as i64 - 1));
    Ok((map, range))
}

/// Copies summaries (in an order where sources come first) into `dst` under new
/// ids, with their FTS rows and their links mapped to the copies.
pub fn summaries(
    tx: &Transaction,
    dst: i64,
    ids: &[String],
    msgs: &MessageMap,
    features: Features,
) -> Result<HashMap<String, String>> {
    let cols = columns(tx, "summaries", &["summary_id", "conversation_id"])?.join(", ");
    let mut copy = tx.prepare(&format!(
        "INSERT INTO summaries (summary_id, conversation_id, {cols}) SELECT ?1, ?2, {cols} FROM summaries WHERE summary_id = ?3"
    ))?;
    let mut map: HashMap<String, String> = HashMap::new();
    for old in ids {
        let content: String = tx.query_row(
            "SELECT content FROM summaries WHERE summary_id = ?1",
            [old],
            |r| r.get(0),
        )?;
        let new = new_summary_id(&content);
        copy.execute(params![new, dst, old])?;
        summaries::index_summary(tx, &new, &content, features)?;
        link_parents(tx, &new, old, &map)?;
        link_messages(tx, &new, old, msgs)?;
        map.insert(old.clone(), new);
    }
    Ok(map)
}

fn link_parents(
    tx: &Transaction,
    new: &str,
    old: &str,
    map: &HashMap<String, String>,
) -> Result<()> {
    let mut stmt = tx.prepare("SELECT parent_summary_id, ordinal FROM summary_parents WHERE summary_id = ?1 ORDER BY ordinal")?;
    let rows: Vec<(String, i64)> = stmt
        .query_map([old], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut ins = tx.prepare(
        "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?1, ?2, ?3)",
    )?;
    for (src, ord) in &rows {
        let to = map.get(src).ok_or_else(|| {
            LcmError::internal(format!("source {src} of {old} was not copied before it"))
        })?;
        ins.execute(params![new, to, ord])?;
    }
    Ok(())
}

fn link_messages(tx: &Transaction, new: &str, old: &str, msgs: &MessageMap) -> Result<()> {
    let mut stmt = tx.prepare(
        "SELECT message_id, ordinal FROM summary_messages WHERE summary_id = ?1 ORDER BY ordinal",
    )?;
    let rows: Vec<(i64, i64)> = stmt
        .query_map([old], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut ins = tx.prepare(
        "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?1, ?2, ?3)",
    )?;
    for (m, ord) in rows {
        let to = msgs
            .get(&m)
            .ok_or_else(|| LcmError::internal(format!("message {m} of {old} was not copied")))?;
        ins.execute(params![new, to, ord])?;
    }
    Ok(())
}

/// Puts `ids` at ordinals 0..k-1, moving the target's items after them (through
/// negative ordinals, so the primary key never collides).
pub fn prepend_context(tx: &Transaction, dst: i64, ids: &[String]) -> Result<()> {
    let k = ids.len() as i64;
    tx.execute(
        "UPDATE context_items SET ordinal = -1 - (ordinal + ?2) WHERE conversation_id = ?1",
        params![dst, k],
    )?;
    tx.execute("UPDATE context_items SET ordinal = -1 - ordinal WHERE conversation_id = ?1 AND ordinal < 0", [dst])?;
    let mut st = tx.prepare(
        "INSERT INTO context_items (conversation_id, ordinal, item_type, summary_id, created_at) VALUES (?1, ?2, 'summary', ?3, datetime('now'))",
    )?;
    for (i, id) in ids.iter().enumerate() {
        st.execute(params![dst, i as i64, id])?;
    }
    dag::resequence(tx, dst)
}

/// How many target messages in a seq range have their `messages_fts` row.
pub fn indexed_copies(conn: &Connection, dst: i64, range: Option<(i64, i64)>) -> Result<usize> {
    let Some((a, b)) = range else {
        return Ok(0);
    };
    let n: i64 = conn.query_row(
        "SELECT COUNT(*) FROM messages m WHERE m.conversation_id = ?1 AND m.seq BETWEEN ?2 AND ?3
           AND EXISTS (SELECT 1 FROM messages_fts_docsize d WHERE d.id = m.message_id)",
        params![dst, a, b],
        |r| r.get(0),
    )?;
    Ok(n as usize)
}
