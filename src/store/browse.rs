//! Read-only overviews for the interactive browser (`lcm-tui` with no subcommand):
//! every conversation with its counts, in two queries.

use std::collections::BTreeMap;

use rusqlite::Connection;
use serde::Serialize;

use crate::error::Result;

/// One conversation with its counts.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationOverview {
    /// conversation_id.
    pub conversation_id: i64,
    /// Runtime session id.
    pub session_id: String,
    /// Stable session key, when known.
    pub session_key: Option<String>,
    /// Optional title.
    pub title: Option<String>,
    /// Stored messages.
    pub message_count: i64,
    /// Σ tokens of the stored messages.
    pub stored_tokens: i64,
    /// Σ tokens of the context list (what the model would be given unbounded).
    pub context_tokens: i64,
    /// Summaries by depth (depth → count).
    pub summaries_by_depth: BTreeMap<i64, i64>,
    /// Newest message time, else the conversation's update time (SQLite UTC text).
    pub last_activity: String,
    /// Archived (no longer the active conversation of its key).
    pub archived: bool,
    /// When it was archived (SQLite UTC text).
    pub archived_at: Option<String>,
    /// Why it was archived (`manual-reset`, `session-deleted`, `idle-reset`, …).
    pub archive_cause: Option<String>,
}

/// Every conversation, most recently active first.
pub fn conversations(conn: &Connection) -> Result<Vec<ConversationOverview>> {
    let mut st = conn.prepare(
        "SELECT c.conversation_id, c.session_id, c.session_key, c.title,
                COALESCE(m.n, 0), COALESCE(m.tokens, 0),
                COALESCE(ctx.tokens, 0),
                COALESCE(m.last, c.updated_at),
                COALESCE(c.active, 1), c.archived_at, c.archive_cause
         FROM conversations c
         LEFT JOIN (SELECT conversation_id, COUNT(*) AS n, SUM(token_count) AS tokens,
                           MAX(created_at) AS last
                    FROM messages GROUP BY conversation_id) m
                ON m.conversation_id = c.conversation_id
         LEFT JOIN (SELECT ci.conversation_id,
                           SUM(COALESCE(mm.token_count, s.token_count, 0)) AS tokens
                    FROM context_items ci
                    LEFT JOIN messages mm ON mm.message_id = ci.message_id
                    LEFT JOIN summaries s ON s.summary_id = ci.summary_id
                    GROUP BY ci.conversation_id) ctx
                ON ctx.conversation_id = c.conversation_id
         ORDER BY 8 DESC, c.conversation_id DESC",
    )?;
    let mut out: Vec<ConversationOverview> = st
        .query_map([], |r| {
            Ok(ConversationOverview {
                conversation_id: r.get(0)?,
                session_id: r.get(1)?,
                session_key: r.get(2)?,
                title: r.get(3)?,
                message_count: r.get(4)?,
                stored_tokens: r.get(5)?,
                context_tokens: r.get(6)?,
                summaries_by_depth: BTreeMap::new(),
                last_activity: r.get(7)?,
                archived: r.get::<_, i64>(8)? == 0,
                archived_at: r.get(9)?,
                archive_cause: r.get(10)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut st = conn.prepare(
        "SELECT conversation_id, depth, COUNT(*) FROM summaries GROUP BY conversation_id, depth",
    )?;
    let rows = st.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
        ))
    })?;
    let pos: std::collections::HashMap<i64, usize> = out
        .iter()
        .enumerate()
        .map(|(i, c)| (c.conversation_id, i))
        .collect();
    for row in rows {
        let (conv, depth, n) = row?;
        if let Some(&i) = pos.get(&conv) {
            out[i].summaries_by_depth.insert(depth, n);
        }
    }
    Ok(out)
}
