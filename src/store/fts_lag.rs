//! Deferred full-text indexing of messages. Each FTS5 insert in its own transaction
//! writes a new index segment (≈ 10 pages per turn); instead, the writer thread
//! indexes new messages in batches — when enough are pending, when the queue goes
//! idle, before any search (`Store::flush_fts`) and at close. The watermark
//! `lcm_fts_state.indexed_upto` records the last indexed message id, so a crash
//! between ingest and indexing is caught up at the next open. A message is durable
//! when `ingest` resolves; it is searchable as soon as a search asks for it.

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::error::Result;

const TABLE: &str = "messages_fts";

/// Sets the watermark at migration: to the newest message when the index was just
/// built from the table (or has no watermark yet), otherwise leaves it.
pub fn init_watermark(tx: &Transaction, rebuilt: bool) -> Result<()> {
    let max: i64 = tx.query_row(
        "SELECT COALESCE(MAX(message_id), 0) FROM messages",
        [],
        |r| r.get(0),
    )?;
    if rebuilt {
        tx.execute(
            "INSERT INTO lcm_fts_state (table_name, indexed_upto) VALUES (?1, ?2)
             ON CONFLICT(table_name) DO UPDATE SET indexed_upto = excluded.indexed_upto",
            params![TABLE, max],
        )?;
    } else {
        tx.execute(
            "INSERT OR IGNORE INTO lcm_fts_state (table_name, indexed_upto) VALUES (?1, ?2)",
            params![TABLE, max],
        )?;
    }
    Ok(())
}

/// The highest message id stored (0 when there is none).
fn newest_id(conn: &Connection) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT COALESCE(MAX(message_id), 0) FROM messages")?
        .query_row([], |r| r.get(0))?)
}

/// Whether every message `conn` sees is indexed (the watermark has reached the
/// newest id): a read connection's check, so a search asks the writer to index
/// only when something is pending.
pub fn caught_up(conn: &Connection) -> Result<bool> {
    Ok(newest_id(conn)? <= stored_watermark(conn)?)
}

/// Messages stored but not yet in the full-text index, as a read connection sees
/// them (0 without FTS5).
pub fn pending_rows(conn: &Connection) -> Result<i64> {
    if !super::inspect::has_table(conn, "messages_fts")? {
        return Ok(0);
    }
    Ok((newest_id(conn)? - stored_watermark(conn)?).max(0))
}

/// The last indexed message id as stored (0 when none is recorded).
fn stored_watermark(conn: &Connection) -> Result<i64> {
    let w: Option<i64> = conn
        .prepare_cached("SELECT indexed_upto FROM lcm_fts_state WHERE table_name = ?1")?
        .query_row([TABLE], |r| r.get(0))
        .optional()?;
    Ok(w.unwrap_or(0))
}

/// Tracks how far the message index lags, on the writer thread.
#[derive(Debug, Default)]
pub struct FtsLag {
    enabled: bool,
    indexed_upto: Option<i64>,
}

/// Indexes the messages past a watermark, in id order.
pub(super) const CATCH_UP: &str = "INSERT INTO messages_fts (rowid, content) SELECT message_id, content FROM messages WHERE message_id > ?1 ORDER BY message_id";

/// Index once this many messages are pending. Each catch-up writes a new index
/// segment that FTS5 later merges, and the catch-up holds the one write lock, so
/// turns wait behind it: fewer, larger batches cost less per message in total.
/// The price is paid by a search while messages are still pending (it indexes
/// them first, `Store::flush_fts`), so this bounds the indexing one search may
/// have to do; once the writer has been idle for 100 ms nothing is pending.
/// Figures: docs/decisions/full-text-indexing.md.
pub const BATCH: i64 = 2048;

/// FTS5's `automerge` setting for `messages_fts` (its default is 4): how many
/// segments of one size it lets pile up before merging them into one. Merging is
/// most of what indexing a batch costs beyond the tokenizing, and a query opens
/// each segment: a higher setting merges less and leaves a few more segments,
/// which queries did not feel. A table setting, stored in `messages_fts_config`;
/// set at every open ([`configure`]).
pub const AUTOMERGE: i64 = 8;

/// Gives `messages_fts` its [`AUTOMERGE`] setting when it has another one (a new
/// or rebuilt table, or a file another writer configured).
pub fn configure(tx: &Transaction) -> Result<()> {
    let set: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM messages_fts_config WHERE k = 'automerge' AND v = ?1)",
        [AUTOMERGE],
        |r| r.get(0),
    )?;
    if !set {
        tx.execute(
            "INSERT INTO messages_fts (messages_fts, rank) VALUES ('automerge', ?1)",
            [AUTOMERGE],
        )?;
    }
    Ok(())
}

impl FtsLag {
    /// A tracker; `enabled` is false when FTS5 is unavailable.
    pub fn new(enabled: bool) -> Self {
        FtsLag {
            enabled,
            indexed_upto: None,
        }
    }

    fn watermark(&mut self, conn: &Connection) -> Result<i64> {
        if let Some(w) = self.indexed_upto {
            return Ok(w);
        }
        let w = stored_watermark(conn)?;
        self.indexed_upto = Some(w);
        Ok(w)
    }

    /// Messages stored but not yet indexed.
    pub fn pending(&mut self, conn: &Connection) -> Result<i64> {
        if !self.enabled {
            return Ok(0);
        }
        Ok((newest_id(conn)? - self.watermark(conn)?).max(0))
    }

    /// Indexes every pending message in one transaction.
    pub fn catch_up(&mut self, conn: &mut Connection) -> Result<usize> {
        if !self.enabled || self.pending(conn)? == 0 {
            return Ok(0);
        }
        let (n, upto) = super::tx::write_tx(conn, |tx| {
            // Read under the write lock: another process sharing the file may have
            // indexed (and moved the watermark) since this one last looked.
            self.indexed_upto = None;
            let from = self.watermark(tx)?;
            let n = tx.execute(CATCH_UP, [from])?;
            let upto: i64 = tx.query_row(
                "SELECT COALESCE(MAX(message_id), ?1) FROM messages",
                [from],
                |r| r.get(0),
            )?;
            tx.execute(
                "UPDATE lcm_fts_state SET indexed_upto = ?1 WHERE table_name = ?2",
                params![upto, TABLE],
            )?;
            Ok((n, upto))
        })?;
        self.indexed_upto = Some(upto);
        Ok(n)
    }

    /// Forgets the cached watermark (after a failed transaction).
    pub fn reset(&mut self) {
        self.indexed_upto = None;
    }
}
