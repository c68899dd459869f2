//! The rows of `lcm_trigram_slices`: one per slice, an integer key and its bytes,
//! in a layout `retrieval::slices` defines (this module only stores and reads
//! bytes, under the layout number the caller gives). Rows of another layout are
//! never read, and are deleted by the next write, so a file holds one layout's
//! rows after every write.

use rusqlite::{params, Connection, OptionalExtension, MAIN_DB};

use crate::error::Result;

/// The highest slice stored, when it is of `layout` (slices are stored in
/// increasing order from the first missing one, so every key below it of the
/// same layout is stored too; a file holds one layout's rows at a time).
pub fn last_slice(conn: &Connection, layout: i64) -> Result<Option<i64>> {
    let last: Option<(i64, i64)> = conn
        .prepare_cached("SELECT slice, layout FROM lcm_trigram_slices ORDER BY slice DESC LIMIT 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(last.filter(|&(_, l)| l == layout).map(|(s, _)| s))
}

/// Stores slices of `layout` (`(key, bytes)`; a key already stored is kept as
/// it is: its bytes are the same, whoever computed them) and deletes the rows
/// of any other layout. Run it inside a write transaction.
pub fn store_slices(conn: &Connection, layout: i64, slices: &[(i64, Vec<u8>)]) -> Result<()> {
    // Every write leaves one layout's rows: the first row tells (no scan).
    let first: Option<i64> = conn
        .prepare_cached("SELECT layout FROM lcm_trigram_slices ORDER BY slice LIMIT 1")?
        .query_row([], |r| r.get(0))
        .optional()?;
    if first.is_some_and(|l| l != layout) {
        conn.prepare_cached("DELETE FROM lcm_trigram_slices WHERE layout <> ?1")?
            .execute([layout])?;
    }
    let mut insert = conn.prepare_cached(
        "INSERT OR IGNORE INTO lcm_trigram_slices (slice, layout, bits) VALUES (?1, ?2, ?3)",
    )?;
    for (key, bytes) in slices {
        insert.execute(params![key, layout, bytes])?;
    }
    Ok(())
}

/// Reads stored slices through one incremental blob handle, moved from row to
/// row (no statement is run per slice).
pub struct SliceReader<'c> {
    conn: &'c Connection,
    blob: Option<rusqlite::blob::Blob<'c>>,
}

impl<'c> SliceReader<'c> {
    /// A reader on `conn` (nothing is opened until the first read).
    pub fn new(conn: &'c Connection) -> SliceReader<'c> {
        SliceReader { conn, blob: None }
    }

    /// Reads slice `key` into `buf` when its size is `buf`'s: its size in bytes
    /// (`buf` is left as it was for any other size), `None` when it is not stored.
    pub fn read(&mut self, key: i64, buf: &mut [u8]) -> Result<Option<usize>> {
        let moved = match self.blob.as_mut() {
            Some(b) => b.reopen(key),
            None => self
                .conn
                .blob_open(MAIN_DB, c"lcm_trigram_slices", c"bits", key, true)
                .map(|b| self.blob = Some(b)),
        };
        match moved {
            Ok(()) => {}
            // SQLITE_ERROR: no such row (the handle is then no longer usable).
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.extended_code == rusqlite::ffi::SQLITE_ERROR =>
            {
                self.blob = None;
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        }
        let Some(blob) = self.blob.as_ref() else {
            return Ok(None);
        };
        let n = blob.len();
        if n == buf.len() {
            blob.read_at_exact(buf, 0)?;
        }
        Ok(Some(n))
    }
}

/// Test support: the number of stored slices (any layout).
#[cfg(test)]
pub fn stored_count(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("SELECT COUNT(*) FROM lcm_trigram_slices", [], |r| r.get(0))?)
}

/// Test support: the stored size of slice `key`'s bytes.
#[cfg(test)]
pub fn stored_size(conn: &Connection, key: i64) -> Result<Option<i64>> {
    Ok(conn
        .query_row(
            "SELECT length(bits) FROM lcm_trigram_slices WHERE slice = ?1",
            [key],
            |r| r.get(0),
        )
        .optional()?)
}

/// Test support: forgets every slice above `key`.
#[cfg(test)]
pub fn forget_slices_above(conn: &Connection, key: i64) -> Result<usize> {
    Ok(conn.execute("DELETE FROM lcm_trigram_slices WHERE slice > ?1", [key])?)
}
