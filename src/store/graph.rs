//! One conversation's whole graph in one read (the doctor's and dagops' view): context items, summaries,
//! messages and every link touching them, with dangling and cross-conversation links
//! kept apart so the checks can name them.

use std::collections::HashMap;

use rusqlite::Connection;

use super::derived::file_ids_in;
pub use super::derived::MsgRow;
use super::summaries::{self, SummaryRecord, COLUMNS};
use crate::error::Result;

/// A context item with what its reference resolves to.
#[derive(Debug, Clone)]
pub struct CtxRow {
    /// Stored ordinal.
    pub ordinal: i64,
    /// The message, for message items.
    pub message_id: Option<i64>,
    /// The summary, for summary items.
    pub summary_id: Option<String>,
    /// Creation time (kept when the list is rewritten).
    pub created_at: String,
    /// Conversation of the referenced row; `None` when the row does not exist.
    pub target_conversation: Option<i64>,
}

/// A link whose other end is missing or lives in another conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLink {
    /// `summary_parents` or `summary_messages`.
    pub table: &'static str,
    /// The link row's `summary_id`.
    pub summary_id: String,
    /// The other end: a summary id or a message id as text.
    pub target: String,
    /// Conversation of the `summary_id` row (`None`: missing).
    pub owner_conversation: Option<i64>,
    /// Conversation of the target row (`None`: missing).
    pub target_conversation: Option<i64>,
}

/// An item `/new` took out of the context: (position, message id, summary id).
pub type PrunedRow = (i64, Option<i64>, Option<String>);

/// A conversation's rows and links.
#[derive(Debug, Default, Clone)]
pub struct Graph {
    /// The conversation.
    pub conversation_id: i64,
    /// Context items in ordinal order.
    pub context: Vec<CtxRow>,
    /// This conversation's summaries, plus foreign ones its links reach.
    pub summaries: HashMap<String, SummaryRecord>,
    /// Ids of this conversation's summaries, by depth then creation.
    pub own_summaries: Vec<String>,
    /// Existing source summaries of each own summary: (link ordinal, source id).
    pub sources: HashMap<String, Vec<(i64, String)>>,
    /// Existing source messages of each own summary: (link ordinal, message id).
    pub msg_sources: HashMap<String, Vec<(i64, i64)>>,
    /// This conversation's messages, plus foreign ones its links reach.
    pub messages: HashMap<i64, MsgRow>,
    /// Ids of this conversation's messages, by seq.
    pub own_messages: Vec<i64>,
    /// Dangling and cross-conversation links touching this conversation.
    pub bad_links: Vec<BadLink>,
    /// Whether a compaction run marked this conversation's ordinals as having gaps
    /// (`lcm_context_gaps`): a run in progress, or one that never ended, whose gaps
    /// the next open or compaction closes.
    pub gaps_marked: bool,
    /// Items `/new` took out of the context list (`lcm_pruned_context`), in prune
    /// order: `(position, message id, summary id)`. They still cover their rows.
    pub pruned: Vec<PrunedRow>,
}

impl Graph {
    /// Whether a summary belongs to this conversation.
    pub fn owns_summary(&self, id: &str) -> bool {
        self.summaries
            .get(id)
            .is_some_and(|s| s.conversation_id == self.conversation_id)
    }

    /// Whether a message belongs to this conversation.
    pub fn owns_message(&self, id: i64) -> bool {
        self.messages
            .get(&id)
            .is_some_and(|m| m.conversation_id == self.conversation_id)
    }

    /// Own source summaries of `id`, in link order.
    pub fn own_sources(&self, id: &str) -> Vec<&str> {
        self.sources
            .get(id)
            .map(|v| {
                v.iter()
                    .filter(|(_, s)| self.owns_summary(s))
                    .map(|(_, s)| s.as_str())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Summaries (of this conversation) that list `id` as a source.
    pub fn derived_of(&self) -> HashMap<&str, Vec<&str>> {
        let mut out: HashMap<&str, Vec<&str>> = HashMap::new();
        for (id, srcs) in &self.sources {
            for (_, s) in srcs {
                out.entry(s.as_str()).or_default().push(id.as_str());
            }
        }
        out
    }
}

/// Loads a conversation's graph (read-only).
pub fn load(conn: &Connection, conversation_id: i64) -> Result<Graph> {
    let mut g = Graph {
        conversation_id,
        ..Graph::default()
    };
    load_context(conn, &mut g)?;
    load_messages(conn, &mut g)?;
    load_summaries(conn, &mut g)?;
    load_parent_links(conn, &mut g)?;
    load_message_links(conn, &mut g)?;
    load_foreign_rows(conn, &mut g)?;
    g.gaps_marked = gaps_marked(conn, conversation_id)?;
    g.pruned = pruned_items(conn, conversation_id)?;
    Ok(g)
}

/// The conversation's pruned context items (none on a file without the table).
fn pruned_items(conn: &Connection, conversation_id: i64) -> Result<Vec<PrunedRow>> {
    let exists: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'lcm_pruned_context')",
        [],
        |r| r.get(0),
    )?;
    if !exists {
        return Ok(Vec::new());
    }
    let rows = conn
        .prepare_cached(
            "SELECT position, message_id, summary_id FROM lcm_pruned_context WHERE conversation_id = ?1 ORDER BY position",
        )?
        .query_map([conversation_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// Whether `lcm_context_gaps` names the conversation (false on a file that has no
/// such table yet: one this version never migrated).
fn gaps_marked(conn: &Connection, conversation_id: i64) -> Result<bool> {
    let has_table: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'lcm_context_gaps')",
        [],
        |r| r.get(0),
    )?;
    if !has_table {
        return Ok(false);
    }
    Ok(conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM lcm_context_gaps WHERE conversation_id = ?1)",
        [conversation_id],
        |r| r.get(0),
    )?)
}

fn load_context(conn: &Connection, g: &mut Graph) -> Result<()> {
    let mut stmt = conn.prepare(
        "SELECT ci.ordinal, ci.message_id, ci.summary_id, ci.created_at,
                COALESCE(m.conversation_id, s.conversation_id)
         FROM context_items ci
         LEFT JOIN messages m ON ci.item_type = 'message' AND m.message_id = ci.message_id
         LEFT JOIN summaries s ON ci.item_type = 'summary' AND s.summary_id = ci.summary_id
         WHERE ci.conversation_id = ?1 ORDER BY ci.ordinal",
    )?;
    g.context = stmt
        .query_map([g.conversation_id], |r| {
            Ok(CtxRow {
                ordinal: r.get(0)?,
                message_id: r.get(1)?,
                summary_id: r.get(2)?,
                created_at: r.get(3)?,
                target_conversation: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(())
}

pub(super) fn message_from(r: &rusqlite::Row) -> rusqlite::Result<MsgRow> {
    let content: Option<String> = r.get(5)?;
    let mut file_ids = Vec::new();
    if let Some(c) = content {
        file_ids_in(&c, &mut file_ids);
    }
    Ok(MsgRow {
        id: r.get(0)?,
        conversation_id: r.get(1)?,
        seq: r.get(2)?,
        tokens: r.get(3)?,
        created_at: r.get(4)?,
        file_ids,
    })
}

/// Message columns for [`message_from`]; the content only when it names a file.
pub(super) const MSG_COLUMNS: &str = "message_id, conversation_id, seq, token_count, created_at,
    CASE WHEN instr(content, 'file_') > 0 THEN content END";

fn load_messages(conn: &Connection, g: &mut Graph) -> Result<()> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {MSG_COLUMNS} FROM messages WHERE conversation_id = ?1 ORDER BY seq"
    ))?;
    for row in stmt.query_map([g.conversation_id], message_from)? {
        let m = row?;
        g.own_messages.push(m.id);
        g.messages.insert(m.id, m);
    }
    Ok(())
}

fn load_summaries(conn: &Connection, g: &mut Graph) -> Result<()> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLUMNS} FROM summaries WHERE conversation_id = ?1 ORDER BY depth, created_at, summary_id"
    ))?;
    for row in stmt.query_map([g.conversation_id], summaries::from_row)? {
        let s = row?;
        g.own_summaries.push(s.summary_id.clone());
        g.summaries.insert(s.summary_id.clone(), s);
    }
    Ok(())
}

type LinkRow = (String, String, i64, Option<i64>, Option<i64>);

fn link_rows(conn: &Connection, sql: &str, conversation_id: i64) -> Result<Vec<LinkRow>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt
        .query_map([conversation_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// Outbound links of own summaries, and inbound links to own rows whose owner is
/// missing or foreign. Each row: (summary_id, target, ordinal, owner conv, target conv).
fn load_parent_links(conn: &Connection, g: &mut Graph) -> Result<()> {
    let out = link_rows(
        conn,
        "SELECT sp.summary_id, sp.parent_summary_id, sp.ordinal, s.conversation_id, p.conversation_id
         FROM summaries s JOIN summary_parents sp ON sp.summary_id = s.summary_id
         LEFT JOIN summaries p ON p.summary_id = sp.parent_summary_id
         WHERE s.conversation_id = ?1 ORDER BY sp.summary_id, sp.ordinal",
        g.conversation_id,
    )?;
    let inbound = link_rows(
        conn,
        "SELECT sp.summary_id, sp.parent_summary_id, sp.ordinal, s.conversation_id, p.conversation_id
         FROM summaries p JOIN summary_parents sp ON sp.parent_summary_id = p.summary_id
         LEFT JOIN summaries s ON s.summary_id = sp.summary_id
         WHERE p.conversation_id = ?1 AND (s.conversation_id IS NULL OR s.conversation_id != ?1)",
        g.conversation_id,
    )?;
    for (id, target, ordinal, owner, tconv) in out.into_iter().chain(inbound) {
        let good = owner == Some(g.conversation_id) && tconv.is_some();
        if good {
            g.sources
                .entry(id.clone())
                .or_default()
                .push((ordinal, target.clone()));
        }
        if owner != Some(g.conversation_id) || tconv != Some(g.conversation_id) {
            g.bad_links.push(BadLink {
                table: "summary_parents",
                summary_id: id,
                target,
                owner_conversation: owner,
                target_conversation: tconv,
            });
        }
    }
    Ok(())
}

fn load_message_links(conn: &Connection, g: &mut Graph) -> Result<()> {
    let out = link_rows(
        conn,
        "SELECT sm.summary_id, CAST(sm.message_id AS TEXT), sm.ordinal, s.conversation_id, m.conversation_id
         FROM summaries s JOIN summary_messages sm ON sm.summary_id = s.summary_id
         LEFT JOIN messages m ON m.message_id = sm.message_id
         WHERE s.conversation_id = ?1 ORDER BY sm.summary_id, sm.ordinal",
        g.conversation_id,
    )?;
    let inbound = link_rows(
        conn,
        "SELECT sm.summary_id, CAST(sm.message_id AS TEXT), sm.ordinal, s.conversation_id, m.conversation_id
         FROM messages m JOIN summary_messages sm ON sm.message_id = m.message_id
         LEFT JOIN summaries s ON s.summary_id = sm.summary_id
         WHERE m.conversation_id = ?1 AND (s.conversation_id IS NULL OR s.conversation_id != ?1)",
        g.conversation_id,
    )?;
    for (id, target, ordinal, owner, tconv) in out.into_iter().chain(inbound) {
        let mid: i64 = target.parse().unwrap_or_default();
        if owner == Some(g.conversation_id) && tconv.is_some() {
            g.msg_sources
                .entry(id.clone())
                .or_default()
                .push((ordinal, mid));
        }
        if owner != Some(g.conversation_id) || tconv != Some(g.conversation_id) {
            g.bad_links.push(BadLink {
                table: "summary_messages",
                summary_id: id,
                target,
                owner_conversation: owner,
                target_conversation: tconv,
            });
        }
    }
    Ok(())
}

/// Foreign summaries and messages reached by own links (their stored values feed the
/// recomputation of the summaries that list them).
fn load_foreign_rows(conn: &Connection, g: &mut Graph) -> Result<()> {
    let mut ids: Vec<String> = Vec::new();
    for srcs in g.sources.values() {
        for (_, s) in srcs {
            if !g.summaries.contains_key(s) && !ids.contains(s) {
                ids.push(s.clone());
            }
        }
    }
    for s in summaries::by_ids(conn, &ids)? {
        g.summaries.insert(s.summary_id.clone(), s);
    }
    let mids: Vec<i64> = g
        .msg_sources
        .values()
        .flatten()
        .map(|(_, m)| *m)
        .filter(|m| !g.messages.contains_key(m))
        .collect();
    for chunk in mids.chunks(500) {
        let marks = vec!["?"; chunk.len()].join(",");
        let mut stmt = conn.prepare(&format!(
            "SELECT {MSG_COLUMNS} FROM messages WHERE message_id IN ({marks})"
        ))?;
        for row in stmt.query_map(rusqlite::params_from_iter(chunk.iter()), message_from)? {
            let m = row?;
            g.messages.insert(m.id, m);
        }
    }
    Ok(())
}

/// A source of a summary as its link row sees it: the row may be missing (then
/// only the id is set) or live in another conversation.
#[derive(Debug, Clone, Default)]
pub struct LinkedSource {
    /// The source message (message sources).
    pub message_id: i64,
    /// The source summary (summary sources).
    pub summary_id: String,
    /// Conversation of the source row; `None` when it does not exist.
    pub conversation_id: Option<i64>,
    /// The message's role.
    pub role: Option<String>,
    /// The message's seq.
    pub seq: Option<i64>,
    /// The summary's kind.
    pub kind: Option<crate::store::summaries::SummaryKind>,
    /// The summary's depth.
    pub depth: Option<i64>,
    /// Its tokens (0 when missing).
    pub token_count: i64,
    /// Its text (empty when missing).
    pub content: String,
}

/// What both kinds of linked source read alike: the conversation (column 1), the
/// tokens (column 4, 0 when the source is missing) and the text (column 5, empty
/// when missing).
fn linked_source(r: &rusqlite::Row) -> rusqlite::Result<LinkedSource> {
    Ok(LinkedSource {
        conversation_id: r.get(1)?,
        token_count: r.get::<_, Option<i64>>(4)?.unwrap_or(0),
        content: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
        ..LinkedSource::default()
    })
}

/// The source messages of leaf `id`, in link order.
pub fn linked_messages(conn: &Connection, id: &str) -> Result<Vec<LinkedSource>> {
    let mut stmt = conn.prepare_cached(
        "SELECT sm.message_id, m.conversation_id, m.role, m.seq, m.token_count, m.content
         FROM summary_messages sm LEFT JOIN messages m ON m.message_id = sm.message_id
         WHERE sm.summary_id = ?1 ORDER BY sm.ordinal",
    )?;
    let rows = stmt
        .query_map([id], |r| {
            Ok(LinkedSource {
                message_id: r.get(0)?,
                role: r.get(2)?,
                seq: r.get(3)?,
                ..linked_source(r)?
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// The source summaries of condensed node `id`, in link order.
pub fn linked_summaries(conn: &Connection, id: &str) -> Result<Vec<LinkedSource>> {
    let mut stmt = conn.prepare_cached(
        "SELECT sp.parent_summary_id, s.conversation_id, s.kind, s.depth, s.token_count, s.content
         FROM summary_parents sp LEFT JOIN summaries s ON s.summary_id = sp.parent_summary_id
         WHERE sp.summary_id = ?1 ORDER BY sp.ordinal",
    )?;
    let rows = stmt
        .query_map([id], |r| {
            Ok(LinkedSource {
                summary_id: r.get(0)?,
                kind: r.get(2)?,
                depth: r.get(3)?,
                ..linked_source(r)?
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// Number of context items of a conversation (only those after `after`, when given).
pub fn context_len(conn: &Connection, conversation_id: i64, after: Option<i64>) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT COUNT(*) FROM context_items WHERE conversation_id = ?1 AND (?2 IS NULL OR ordinal > ?2)",
        rusqlite::params![conversation_id, after],
        |r| r.get(0),
    )?)
}

/// The summary items of a context list, in order: (summary id, depth).
pub fn context_summaries(conn: &Connection, conversation_id: i64) -> Result<Vec<(String, i64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT s.summary_id, s.depth FROM context_items ci JOIN summaries s ON s.summary_id = ci.summary_id
         WHERE ci.conversation_id = ?1 ORDER BY ci.ordinal",
    )?;
    let rows = stmt
        .query_map([conversation_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// The ordinal of the context item holding the message or the summary, if any.
pub fn context_ordinal_of(
    conn: &Connection,
    conversation_id: i64,
    message_id: Option<i64>,
    summary_id: Option<&str>,
) -> Result<Option<i64>> {
    let mut stmt = conn.prepare_cached(
        "SELECT ordinal FROM context_items WHERE conversation_id = ?1 AND (message_id = ?2 OR summary_id = ?3)",
    )?;
    let hit = stmt
        .query_map(
            rusqlite::params![conversation_id, message_id, summary_id],
            |r| r.get(0),
        )?
        .next()
        .transpose()?;
    Ok(hit)
}

/// Summaries of conversation `dst` whose text equals summary `id`'s.
pub fn same_text_in(conn: &Connection, dst: i64, id: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT t.summary_id FROM summaries s JOIN summaries t ON t.content = s.content AND t.conversation_id = ?1
         WHERE s.summary_id = ?2",
    )?;
    let rows = stmt
        .query_map(rusqlite::params![dst, id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// Number of parts of the given messages.
pub fn part_count(conn: &Connection, message_ids: &[i64]) -> Result<i64> {
    let mut stmt =
        conn.prepare_cached("SELECT COUNT(*) FROM message_parts WHERE message_id = ?1")?;
    let mut n = 0;
    for m in message_ids {
        n += stmt.query_row([m], |r| r.get::<_, i64>(0))?;
    }
    Ok(n)
}

/// A context list's (summary items, message items).
pub fn context_item_counts(conn: &Connection, conversation_id: i64) -> Result<(i64, i64)> {
    Ok(conn.query_row(
        "SELECT COALESCE(SUM(item_type = 'summary'), 0), COALESCE(SUM(item_type = 'message'), 0) FROM context_items WHERE conversation_id = ?1",
        [conversation_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?)
}
