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
    conv: Vec<i64>,
    time: Vec<i64>,
    by_id: HashMap<String, usize>,
}

impl SummaryCatalog {
    /// Number of summaries.
    pub fn len(&self) -> usize {
        self.rowid.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.rowid.is_empty()
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
        if self.is_empty() {
            // The first load reads every summary of the snapshot: nothing to compare.
            return self.load_all(conn);
        }
        let (count, max) = recall::summary_count_and_max_rowid(conn)?;
        let last = self.rowid.last().copied().unwrap_or(0);
        if count as usize == self.len() && max == last {
            return Ok(());
        }
        if max < last || (count as usize) < self.len() {
            return self.load_all(conn);
        }
        self.load_after(conn, last)?;
        if self.len() != count as usize {
            // A row appeared below the last rowid (rowid reuse): reload.
            return self.load_all(conn);
        }
        Ok(())
    }

    /// A catalog of only the summaries among `ids`, read by id: all a search needs
    /// of its known matches while the full catalog is not loaded yet. Positions
    /// follow rowid order, as in the full catalog.
    pub fn of_ids(conn: &Connection, ids: &[&str]) -> Result<SummaryCatalog> {
        let mut keys = Keys::default();
        recall::summary_keys_by_id(conn, ids, |r| keys.push(r))?;
        Ok(keys.into_catalog())
    }

    /// Reads every summary (in any order) and puts them in rowid order.
    fn load_all(&mut self, conn: &Connection) -> Result<()> {
        let mut keys = Keys::default();
        recall::for_each_summary_after(conn, 0, |r| keys.push(r))?;
        *self = keys.into_catalog();
        Ok(())
    }

    /// Appends the summaries above rowid `after` (read in rowid order).
    fn load_after(&mut self, conn: &Connection, after: i64) -> Result<()> {
        recall::for_each_summary_after(conn, after, |r| {
            self.by_id.insert(r.summary_id.to_owned(), self.len());
            self.rowid.push(r.rowid);
            self.conv.push(r.conversation_id);
            self.time.push(parse_time_ms(r.time));
        })
    }
}

/// Summary keys read in any order, before they are put in rowid order.
#[derive(Default)]
struct Keys {
    rowid: Vec<i64>,
    ids: Vec<String>,
    conv: Vec<i64>,
    time: Vec<i64>,
}

impl Keys {
    fn push(&mut self, r: &recall::SummaryKey) {
        self.rowid.push(r.rowid);
        self.ids.push(r.summary_id.to_owned());
        self.conv.push(r.conversation_id);
        self.time.push(parse_time_ms(r.time));
    }

    /// The catalog of these keys in rowid order (a rowid read twice counts once).
    fn into_catalog(self) -> SummaryCatalog {
        let mut order: Vec<(i64, u32)> = (0..self.rowid.len())
            .map(|i| (self.rowid[i], i as u32))
            .collect();
        order.sort_unstable();
        order.dedup_by_key(|o| o.0);
        let mut ids = self.ids;
        let mut c = SummaryCatalog {
            rowid: Vec::with_capacity(order.len()),
            conv: Vec::with_capacity(order.len()),
            time: Vec::with_capacity(order.len()),
            by_id: HashMap::with_capacity(order.len()),
        };
        for (rowid, i) in order {
            let i = i as usize;
            c.by_id.insert(std::mem::take(&mut ids[i]), c.rowid.len());
            c.rowid.push(rowid);
            c.conv.push(self.conv[i]);
            c.time.push(self.time[i]);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::expand::tests::dag;

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
