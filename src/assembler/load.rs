//! The reads of one assembly. Everything the output can contain lies in one ordinal
//! range at the end of the context list (the evictable candidates plus the tail), so
//! each kind of row is fetched with one cached statement over that range: summaries,
//! their source links, messages and their parts — four queries whatever the size.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, Connection};

use super::xml::SummaryView;
use crate::error::Result;
use crate::message::rebuild::{StoredMessage, StoredPart};

/// The rows of the context items with `ordinal >= from`, keyed by ordinal.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Summary items.
    pub summaries: HashMap<i64, SummaryView>,
    /// Message items with their parts.
    pub messages: HashMap<i64, StoredMessage>,
}

/// Loads the summaries and messages of the context items from ordinal `from` on.
pub fn load_range(conn: &Connection, conversation_id: i64, from: i64) -> Result<Loaded> {
    let mut out = Loaded::default();
    load_summaries(conn, conversation_id, from, &mut out.summaries)?;
    load_parents(conn, conversation_id, from, &mut out.summaries)?;
    load_messages(conn, conversation_id, from, &mut out.messages)?;
    load_parts(conn, conversation_id, from, &mut out.messages)?;
    Ok(out)
}

fn load_summaries(
    conn: &Connection,
    conversation_id: i64,
    from: i64,
    out: &mut HashMap<i64, SummaryView>,
) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT ci.ordinal, s.summary_id, s.kind, s.depth, s.descendant_count, s.earliest_at, s.latest_at, s.content
         FROM context_items ci JOIN summaries s ON s.summary_id = ci.summary_id
         WHERE ci.conversation_id = ?1 AND ci.ordinal >= ?2 AND ci.item_type = 'summary'",
    )?;
    let rows = stmt.query_map(params![conversation_id, from], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            SummaryView {
                summary_id: r.get(1)?,
                kind: r.get(2)?,
                depth: r.get(3)?,
                descendant_count: r.get(4)?,
                earliest_at: r.get(5)?,
                latest_at: r.get(6)?,
                parents: Vec::new(),
                content: r.get(7)?,
            },
        ))
    })?;
    for row in rows {
        let (ordinal, s) = row?;
        out.insert(ordinal, s);
    }
    Ok(())
}

fn load_parents(
    conn: &Connection,
    conversation_id: i64,
    from: i64,
    out: &mut HashMap<i64, SummaryView>,
) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT ci.ordinal, sp.parent_summary_id
         FROM context_items ci JOIN summary_parents sp ON sp.summary_id = ci.summary_id
         WHERE ci.conversation_id = ?1 AND ci.ordinal >= ?2 AND ci.item_type = 'summary'
         ORDER BY ci.ordinal, sp.ordinal",
    )?;
    let rows = stmt.query_map(params![conversation_id, from], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
    })?;
    for row in rows {
        let (ordinal, parent) = row?;
        if let Some(s) = out.get_mut(&ordinal) {
            s.parents.push(parent);
        }
    }
    Ok(())
}

fn load_messages(
    conn: &Connection,
    conversation_id: i64,
    from: i64,
    out: &mut HashMap<i64, StoredMessage>,
) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT ci.ordinal, m.message_id, m.role, m.content, m.lcm_envelope
         FROM context_items ci JOIN messages m ON m.message_id = ci.message_id
         WHERE ci.conversation_id = ?1 AND ci.ordinal >= ?2 AND ci.item_type = 'message'",
    )?;
    let rows = stmt.query_map(params![conversation_id, from], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            StoredMessage {
                message_id: r.get(1)?,
                role: r.get(2)?,
                content: r.get(3)?,
                envelope: r.get(4)?,
                parts: Vec::new(),
            },
        ))
    })?;
    for row in rows {
        let (ordinal, m) = row?;
        out.insert(ordinal, m);
    }
    Ok(())
}

fn load_parts(
    conn: &Connection,
    conversation_id: i64,
    from: i64,
    out: &mut HashMap<i64, StoredMessage>,
) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT ci.ordinal, p.part_type, p.text_content, p.tool_call_id, p.tool_name, p.tool_input, p.tool_output, p.metadata
         FROM context_items ci JOIN message_parts p ON p.message_id = ci.message_id
         WHERE ci.conversation_id = ?1 AND ci.ordinal >= ?2 AND ci.item_type = 'message'
         ORDER BY ci.ordinal, p.ordinal",
    )?;
    let rows = stmt.query_map(params![conversation_id, from], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            StoredPart {
                part_type: r.get(1)?,
                text_content: r.get(2)?,
                tool_call_id: r.get(3)?,
                tool_name: r.get(4)?,
                tool_input: r.get(5)?,
                tool_output: r.get(6)?,
                metadata: r.get(7)?,
            },
        ))
    })?;
    for row in rows {
        let (ordinal, part) = row?;
        if let Some(m) = out.get_mut(&ordinal) {
            m.parts.push(part);
        }
    }
    Ok(())
}

/// Which of `ids` are carried by a tool-result message among the context items
/// before ordinal `before` (the part of the list assembly did not load).
pub fn tool_results_before(
    conn: &Connection,
    conversation_id: i64,
    before: i64,
    ids: &[String],
) -> Result<HashSet<String>> {
    if ids.is_empty() || before <= 0 {
        return Ok(HashSet::new());
    }
    let list = serde_json::to_string(ids)?;
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT p.tool_call_id
         FROM context_items ci
         JOIN messages m ON m.message_id = ci.message_id
         JOIN message_parts p ON p.message_id = ci.message_id
         WHERE ci.conversation_id = ?1 AND ci.ordinal < ?2 AND ci.item_type = 'message'
           AND m.role = 'tool' AND p.tool_call_id IN (SELECT value FROM json_each(?3))",
    )?;
    let found = stmt
        .query_map(params![conversation_id, before, list], |r| {
            r.get::<_, String>(0)
        })?
        .collect::<rusqlite::Result<HashSet<String>>>()?;
    Ok(found)
}
