//! The writer connection's memory map, kept only while this connection is the
//! file's only writer.
//!
//! Reading pages through the map ([`super::MMAP_BYTES`]) saves a copy per page
//! while one process writes. But whenever SQLite starts a transaction and finds
//! that another connection committed meanwhile, it drops its page cache *and*
//! unmaps the whole file; the next reads map it again and fault every page back
//! in, and each unmap interrupts every other core to flush its TLB. With several
//! gateway processes writing one `lcm.db`, that happens on every transaction:
//! four processes lose ≈ 12 % of their combined rate to it. So after each write
//! job the writer compares `PRAGMA data_version` (which moves only when *another*
//! connection commits): on a change it stops mapping, and it maps again once no
//! other connection has committed for [`QUIET`].

use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::Result;

/// How long no other connection must commit before the writer maps the file again.
pub const QUIET: Duration = Duration::from_secs(5);

/// Whether the writer maps the file, and when another writer was last seen.
#[derive(Debug)]
pub struct WriterMap {
    mapped: bool,
    version: Option<i64>,
    foreign_at: Option<Instant>,
    quiet: Duration,
}

impl WriterMap {
    /// The state of a connection opened with the map on, mapping again after `quiet`.
    pub fn new(quiet: Duration) -> Self {
        WriterMap {
            mapped: true,
            version: None,
            foreign_at: None,
            quiet,
        }
    }

    /// Whether the connection currently reads through the map.
    pub fn mapped(&self) -> bool {
        self.mapped
    }

    /// Called between transactions: turns the map off when another connection
    /// committed since the last call, on again after a quiet period.
    pub fn after_write(&mut self, conn: &Connection) -> Result<()> {
        let version: i64 = conn
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |r| r.get(0))?;
        let now = Instant::now();
        if self.version.is_some_and(|v| v != version) {
            self.foreign_at = Some(now);
        }
        self.version = Some(version);
        let alone = self
            .foreign_at
            .is_none_or(|t| now.duration_since(t) >= self.quiet);
        if alone != self.mapped {
            let bytes = if alone { super::MMAP_BYTES } else { 0 };
            conn.execute_batch(&format!("PRAGMA mmap_size = {bytes}"))?;
            self.mapped = alone;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mmap_size(c: &Connection) -> i64 {
        c.query_row("PRAGMA mmap_size", [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn the_map_goes_while_another_connection_writes_and_comes_back_after_quiet() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let open = || {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(&format!(
                "PRAGMA journal_mode = WAL; PRAGMA mmap_size = {};",
                super::super::MMAP_BYTES
            ))
            .unwrap();
            c
        };
        let ours = open();
        ours.execute_batch("CREATE TABLE t (v)").unwrap();
        let other = open();
        let mut map = WriterMap::new(Duration::from_millis(150));

        // Alone: our own commits never turn the map off.
        for v in 0..3 {
            ours.execute("INSERT INTO t VALUES (?1)", [v]).unwrap();
            map.after_write(&ours).unwrap();
            assert!(map.mapped());
            assert_eq!(mmap_size(&ours), super::super::MMAP_BYTES);
        }

        // Another connection commits: the next check turns it off.
        other.execute("INSERT INTO t VALUES (10)", []).unwrap();
        ours.execute("INSERT INTO t VALUES (11)", []).unwrap();
        map.after_write(&ours).unwrap();
        assert!(!map.mapped());
        assert_eq!(mmap_size(&ours), 0);

        // Still off while the quiet period runs, even with only our commits.
        ours.execute("INSERT INTO t VALUES (12)", []).unwrap();
        map.after_write(&ours).unwrap();
        assert!(!map.mapped());

        // Quiet long enough: on again, and every row is still there.
        std::thread::sleep(Duration::from_millis(200));
        ours.execute("INSERT INTO t VALUES (13)", []).unwrap();
        map.after_write(&ours).unwrap();
        assert!(map.mapped());
        assert_eq!(mmap_size(&ours), super::super::MMAP_BYTES);
        let n: i64 = ours
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 7);
    }
}
