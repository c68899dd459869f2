//! The in-memory summary catalog: id, conversation and time (latest source time,
//! else creation time) of every summary, so summary searches filter and order in
//! memory and read content only for the rows they return or check. `summaries` rows
//! are immutable; new ones are caught up by rowid, and a changed row count (a
//! deletion) triggers a full reload.

use std::collections::HashMap;

use rusqlite::Connection;

use super::catalog::parse_time_ms;
use crate::error::Result;
use crate::store::recall;

/// The summaries known to the engine, in rowid order.
#[derive(Debug, Default)]
pub struct SummaryCatalog {
    rowid: Vec<i64>,
    ids: Vec<String>,
    conv: Vec<i64>,
    time: Vec<i64>,
    by_id: HashMap<String, usize>,
}

impl SummaryCatalog {
    /// Number of summaries.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Position of a summary id.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// rowid at a position.
    pub fn rowid(&self, ord: usize) -> i64 {
        self.rowid[ord]
    }

    /// conversation_id at a position.
    pub fn conversation(&self, ord: usize) -> i64 {
        self.conv[ord]
    }

    /// Time (epoch ms) at a position.
    pub fn time(&self, ord: usize) -> i64 {
        self.time[ord]
    }

    /// Brings the catalog up to date with `conn`'s snapshot.
    pub fn sync(&mut self, conn: &Connection) -> Result<()> {
        let (count, max) = recall::summary_count_and_max_rowid(conn)?;
        let last = self.rowid.last().copied().unwrap_or(0);
        if count as usize == self.len() && max == last {
            return Ok(());
        }
        if max < last || (count as usize) < self.len() {
            *self = SummaryCatalog::default();
        }
        self.load_after(conn, self.rowid.last().copied().unwrap_or(0))?;
        if self.len() != count as usize {
            // A row appeared below the last rowid (rowid reuse): reload.
            *self = SummaryCatalog::default();
            self.load_after(conn, 0)?;
        }
        Ok(())
    }

    /// A catalog of only the summaries among `ids`, read by id: all a search needs
    /// of its known matches while the full catalog is not loaded yet. Positions
    /// follow rowid order, as in the full catalog.
    pub fn of_ids(conn: &Connection, ids: &[&str]) -> Result<SummaryCatalog> {
        let mut keys: Vec<(i64, String, i64, i64)> = Vec::with_capacity(ids.len());
        recall::summary_keys_by_id(conn, ids, |r| {
            keys.push((
                r.rowid,
                r.summary_id.to_owned(),
                r.conversation_id,
                parse_time_ms(r.time),
            ));
        })?;
        keys.sort_unstable_by_key(|k| k.0);
        keys.dedup_by_key(|k| k.0);
        let mut c = SummaryCatalog::default();
        for (rowid, id, conv, time) in keys {
            c.by_id.insert(id.clone(), c.ids.len());
            c.rowid.push(rowid);
            c.ids.push(id);
            c.conv.push(conv);
            c.time.push(time);
        }
        Ok(c)
    }

    fn load_after(&mut self, conn: &Connection, after: i64) -> Result<()> {
        recall::for_each_summary_after(conn, after, |r| {
            self.by_id.insert(r.summary_id.to_owned(), self.ids.len());
            self.rowid.push(r.rowid);
            self.ids.push(r.summary_id.to_owned());
            self.conv.push(r.conversation_id);
            self.time.push(parse_time_ms(r.time));
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieval::expand::tests::dag;

    #[test]
    fn follows_inserts_and_deletions() {
        let (conn, _ids, s) = dag();
        let mut c = SummaryCatalog::default();
        c.sync(&conn).unwrap();
        assert_eq!(c.len(), 7);
        let root = c.position(&s[0]).unwrap();
        assert!(c.time(root) > 0);
        crate::store::recall::damage::delete_summary(&conn, &s[0]).unwrap();
        c.sync(&conn).unwrap();
        assert_eq!(c.len(), 6);
        assert!(c.position(&s[0]).is_none());
        c.sync(&conn).unwrap();
        assert_eq!(c.len(), 6);
    }
}
