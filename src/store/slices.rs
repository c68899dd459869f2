//! The rows of `lcm_trigram_slices` (one per slice of a block) and of
//! `lcm_trigram_groups` (one per slice of a group of blocks, which replaces its
//! blocks' rows): an integer key and its bytes, in a layout `recall::slices`
//! defines (this module only stores and reads bytes, under the layout number the
//! caller gives). Rows of another layout are never read, and are deleted by the
//! next write, so a file holds one layout's rows after every write.

use rusqlite::{params, Connection, OptionalExtension, MAIN_DB};

use crate::error::Result;

/// The two tables of slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceTable {
    /// `lcm_trigram_slices`: a block's slices.
    Blocks,
    /// `lcm_trigram_groups`: a group of blocks' slices.
    Groups,
}

impl SliceTable {
    fn name(self) -> &'static str {
        match self {
            SliceTable::Blocks => "lcm_trigram_slices",
            SliceTable::Groups => "lcm_trigram_groups",
        }
    }
}

/// The highest key stored in `table`, when it is of `layout` (rows are stored in
/// increasing order from the first missing one, so every key below it of the
/// same layout is stored too, or replaced by a group; a file holds one layout's
/// rows at a time).
pub fn last_slice(conn: &Connection, table: SliceTable, layout: i64) -> Result<Option<i64>> {
    let sql = format!(
        "SELECT slice, layout FROM {} ORDER BY slice DESC LIMIT 1",
        table.name()
    );
    let last: Option<(i64, i64)> = conn
        .prepare_cached(&sql)?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(last.filter(|&(_, l)| l == layout).map(|(s, _)| s))
}

/// Deletes the rows of `table` unless they are of `layout` (every write leaves
/// one layout's rows: the first row tells, no scan).
fn drop_other_layouts(conn: &Connection, table: SliceTable, layout: i64) -> Result<()> {
    let first = format!("SELECT layout FROM {} ORDER BY slice LIMIT 1", table.name());
    let first: Option<i64> = conn
        .prepare_cached(&first)?
        .query_row([], |r| r.get(0))
        .optional()?;
    if first.is_some_and(|l| l != layout) {
        let delete = format!("DELETE FROM {} WHERE layout <> ?1", table.name());
        conn.prepare_cached(&delete)?.execute([layout])?;
    }
    Ok(())
}

/// Stores rows of `layout` in `table` (`(key, bytes)`; a key already stored is
/// kept as it is: its bytes are the same, whoever computed them).
fn insert_rows<'a>(
    conn: &Connection,
    table: SliceTable,
    layout: i64,
    rows: impl IntoIterator<Item = &'a (i64, Vec<u8>)>,
) -> Result<()> {
    let sql = format!(
        "INSERT OR IGNORE INTO {} (slice, layout, bits) VALUES (?1, ?2, ?3)",
        table.name()
    );
    let mut insert = conn.prepare_cached(&sql)?;
    for (key, bytes) in rows {
        insert.execute(params![key, layout, bytes])?;
    }
    Ok(())
}

/// Stores block slices of `layout` (`(key, bytes)`; a key already stored is
/// kept as it is) and deletes the rows of any other layout, in both tables. Run
/// it inside a write transaction.
pub fn store_slices<'a>(
    conn: &Connection,
    layout: i64,
    slices: impl IntoIterator<Item = &'a (i64, Vec<u8>)>,
) -> Result<()> {
    drop_other_layouts(conn, SliceTable::Blocks, layout)?;
    drop_other_layouts(conn, SliceTable::Groups, layout)?;
    insert_rows(conn, SliceTable::Blocks, layout, slices)
}

/// The block slices with keys in `keys`, in key order, with their layouts.
pub fn block_slices(
    conn: &Connection,
    keys: std::ops::Range<i64>,
) -> Result<Vec<(i64, i64, Vec<u8>)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT slice, layout, bits FROM lcm_trigram_slices WHERE slice >= ?1 AND slice < ?2 ORDER BY slice",
    )?;
    let rows = stmt.query_map([keys.start, keys.end], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Stores a group's slices of `layout` and deletes the block slices with keys
/// in `blocks` (the group's blocks), in one write transaction the caller holds.
pub fn replace_with_group(
    conn: &Connection,
    layout: i64,
    group: &[(i64, Vec<u8>)],
    blocks: std::ops::Range<i64>,
) -> Result<()> {
    drop_other_layouts(conn, SliceTable::Groups, layout)?;
    insert_rows(conn, SliceTable::Groups, layout, group)?;
    conn.prepare_cached("DELETE FROM lcm_trigram_slices WHERE slice >= ?1 AND slice < ?2")?
        .execute([blocks.start, blocks.end])?;
    Ok(())
}

/// Reads stored slices through one incremental blob handle, moved from row to
/// row (no statement is run per slice).
pub struct SliceReader<'c> {
    conn: &'c Connection,
    table: SliceTable,
    blob: Option<rusqlite::blob::Blob<'c>>,
}

impl<'c> SliceReader<'c> {
    /// A reader of `table` on `conn` (nothing is opened until the first read).
    pub fn new(conn: &'c Connection, table: SliceTable) -> SliceReader<'c> {
        SliceReader {
            conn,
            table,
            blob: None,
        }
    }

    /// Reads slice `key` into `buf` when its size is `buf`'s: its size in bytes
    /// (`buf` is left as it was for any other size), `None` when it is not stored.
    pub fn read(&mut self, key: i64, buf: &mut [u8]) -> Result<Option<usize>> {
        let moved = match self.blob.as_mut() {
            Some(b) => b.reopen(key),
            None => self
                .conn
                .blob_open(MAIN_DB, self.table.name(), "bits", key, true)
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

/// Test support: the number of stored slices of `table` (any layout).
#[cfg(test)]
pub fn stored_count_in(conn: &Connection, table: SliceTable) -> Result<i64> {
    let sql = format!("SELECT COUNT(*) FROM {}", table.name());
    Ok(conn.query_row(&sql, [], |r| r.get(0))?)
}

/// Test support: the number of stored block slices (any layout).
#[cfg(test)]
pub fn stored_count(conn: &Connection) -> Result<i64> {
    stored_count_in(conn, SliceTable::Blocks)
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

/// Deletes the block rows with keys from `first_block_key` and the group rows
/// with keys from `first_group_key` (stored slices whose messages changed, to be
/// computed again from the messages), inside the caller's write transaction.
/// Returns the rows deleted.
pub fn forget_from(conn: &Connection, first_block_key: i64, first_group_key: i64) -> Result<usize> {
    let blocks = conn
        .prepare_cached("DELETE FROM lcm_trigram_slices WHERE slice >= ?1")?
        .execute([first_block_key])?;
    let groups = conn
        .prepare_cached("DELETE FROM lcm_trigram_groups WHERE slice >= ?1")?
        .execute([first_group_key])?;
    Ok(blocks + groups)
}

/// Test support: forgets every slice above `key`.
#[cfg(test)]
pub fn forget_slices_above(conn: &Connection, key: i64) -> Result<usize> {
    Ok(conn.execute("DELETE FROM lcm_trigram_slices WHERE slice > ?1", [key])?)
}
