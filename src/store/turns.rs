//! Turn receipts (`lcm_turn_receipts`): one row per committed turn, keyed by the
//! host's advancement key, written in the turn's own transaction.

use rusqlite::{params, Connection, OptionalExtension};

use crate::error::Result;

/// A committed turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The host's idempotency key of the turn.
    pub advancement_key: String,
    /// The conversation, when the turn reached one.
    pub conversation_id: Option<i64>,
    /// The runtime session id.
    pub session_id: String,
    /// The payload hash the turn was committed with.
    pub payload_hash: String,
    /// Messages the turn carried.
    pub message_count: i64,
    /// Messages the turn stored.
    pub ingested_count: i64,
}

/// The receipt of a key, if that turn was committed.
pub fn find(conn: &Connection, advancement_key: &str) -> Result<Option<Receipt>> {
    Ok(conn
        .prepare_cached(
            "SELECT advancement_key, conversation_id, session_id, payload_hash, message_count, ingested_count
             FROM lcm_turn_receipts WHERE advancement_key = ?1",
        )?
        .query_row([advancement_key], |r| {
            Ok(Receipt {
                advancement_key: r.get(0)?,
                conversation_id: r.get(1)?,
                session_id: r.get(2)?,
                payload_hash: r.get(3)?,
                message_count: r.get(4)?,
                ingested_count: r.get(5)?,
            })
        })
        .optional()?)
}

/// Writes a receipt (inside the turn's transaction).
pub fn insert(conn: &Connection, r: &Receipt) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO lcm_turn_receipts (advancement_key, conversation_id, session_id, payload_hash, message_count, ingested_count)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        r.advancement_key,
        r.conversation_id,
        r.session_id,
        r.payload_hash,
        r.message_count,
        r.ingested_count
    ])?;
    Ok(())
}
