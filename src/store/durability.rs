//! Durability of what the store's connections commit, on SQLite's own VFS with
//! the settings [`super::open_connection`] gives them (WAL, `synchronous =
//! NORMAL`, no automatic checkpoint): after each commit returns, a copy of the
//! database and its log as the OS holds them (what a crash of the process would
//! leave) opens sound and holds every committed row byte for byte and nothing
//! rolled back, through spills of large transactions, rollbacks, checkpoints of
//! every kind and several writers on one file.

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection};

/// A write connection as the store opens it, with a page cache of `cache_kib`
/// (small enough, a transaction spills pages to the log before its commit).
fn open(path: &Path, cache_kib: u32) -> Connection {
    let path = path.to_string_lossy();
    let c = super::open_connection(&path, Duration::from_secs(20), false, 0).unwrap();
    c.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
         PRAGMA cache_size = -{cache_kib};
         CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body BLOB NOT NULL);"
    ))
    .unwrap();
    c
}

/// A deterministic body of `len` bytes for row `id`.
fn body(id: i64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (id as usize * 31 + i * 7) as u8).collect()
}

/// What a crash now would leave: the database and its log as the OS holds them,
/// copied without the shared index, opened by plain SQLite (recovery included).
/// The copy lives as long as the returned directory.
fn crash_image(db: &Path) -> (tempfile::TempDir, Connection) {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("image.db");
    std::fs::copy(db, &copy).unwrap();
    let wal = db.with_extension("db-wal");
    if wal.exists() {
        std::fs::copy(&wal, dir.path().join("image.db-wal")).unwrap();
    }
    let conn = Connection::open(&copy).unwrap();
    (dir, conn)
}

/// Every committed row, byte for byte, no other row, and a sound file.
fn assert_image_holds(db: &Path, rows: &[(i64, usize)]) {
    let (_dir, image) = crash_image(db);
    let ok: String = image
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let n: i64 = image
        .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n as usize, rows.len());
    let mut stmt = image.prepare("SELECT body FROM t WHERE id = ?1").unwrap();
    for &(id, len) in rows {
        let got: Vec<u8> = stmt.query_row([id], |r| r.get(0)).unwrap();
        assert!(got == body(id, len), "row {id} differs");
    }
}

#[test]
fn every_commit_is_in_the_file_when_it_returns_through_restarts_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let c = open(&db, 2048);
    let mut rows = Vec::new();
    for commit in 0..240i64 {
        let tx = c.unchecked_transaction().unwrap();
        for k in 0..(1 + commit % 4) {
            let id = commit * 10 + k;
            let len = 50 + ((commit * 7919 + k * 104_729) % 20_000) as usize;
            tx.execute(
                "INSERT INTO t (id, body) VALUES (?1, ?2)",
                params![id, body(id, len)],
            )
            .unwrap();
            rows.push((id, len));
        }
        tx.commit().unwrap();
        if commit % 60 == 59 {
            c.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))
                .unwrap();
        }
        if commit % 20 == 19 {
            assert_image_holds(&db, &rows);
        }
    }
}

#[test]
fn spilled_rewritten_and_rolled_back_frames_leave_exactly_the_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    // A 64 KiB cache: a multi-megabyte transaction spills pages to the log
    // before its commit, and the updates below rewrite spilled frames in place.
    let c = open(&db, 64);
    let mut rows = Vec::new();
    let tx = c.unchecked_transaction().unwrap();
    for id in 0..1500i64 {
        let len = 3000 + (id as usize % 7) * 100;
        tx.execute(
            "INSERT INTO t (id, body) VALUES (?1, ?2)",
            params![id, body(id, len)],
        )
        .unwrap();
        rows.push((id, len));
    }
    for id in (0..1500i64).step_by(3) {
        tx.execute(
            "UPDATE t SET body = ?2 WHERE id = ?1",
            params![id, body(id + 7, 2000)],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    let (_dir, image) = crash_image(&db);
    for id in (0..1500i64).step_by(3) {
        let got: Vec<u8> = image
            .query_row("SELECT body FROM t WHERE id = ?1", [id], |r| r.get(0))
            .unwrap();
        assert!(got == body(id + 7, 2000));
    }
    let n: i64 = image
        .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n as usize, rows.len());

    // A transaction that spills and rolls back leaves nothing; the next commit lands.
    let tx = c.unchecked_transaction().unwrap();
    for id in 10_000..11_000i64 {
        tx.execute(
            "INSERT INTO t (id, body) VALUES (?1, ?2)",
            params![id, body(id, 4000)],
        )
        .unwrap();
    }
    tx.rollback().unwrap();
    c.execute(
        "INSERT INTO t (id, body) VALUES (?1, ?2)",
        params![20_000, body(20_000, 10)],
    )
    .unwrap();
    let (_dir, image) = crash_image(&db);
    let ok: String = image
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let (n, top): (i64, i64) = image
        .query_row("SELECT COUNT(*), MAX(id) FROM t", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((n as usize, top), (rows.len() + 1, 20_000));
    let none: i64 = image
        .query_row(
            "SELECT COUNT(*) FROM t WHERE id BETWEEN 10000 AND 10999",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(none, 0);
}

#[test]
fn a_rolled_back_spill_never_lands_over_another_connections_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let a = open(&db, 64);
    let b = open(&db, 2048);
    a.execute("INSERT INTO t (id, body) VALUES (0, x'00')", [])
        .unwrap();
    a.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let tx = a.unchecked_transaction().unwrap();
    for id in 10_000..10_300i64 {
        tx.execute(
            "INSERT INTO t (id, body) VALUES (?1, ?2)",
            params![id, body(id, 4000)],
        )
        .unwrap();
    }
    tx.rollback().unwrap();
    let mut rows = vec![(0, 1)];
    for id in 1..200i64 {
        b.execute(
            "INSERT INTO t (id, body) VALUES (?1, ?2)",
            params![id, body(id, 3000)],
        )
        .unwrap();
        rows.push((id, 3000));
    }
    // The first connection reads and writes again: nothing of its spill lands.
    let n: i64 = a
        .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 200);
    a.execute(
        "INSERT INTO t (id, body) VALUES (?1, ?2)",
        params![500, body(500, 7000)],
    )
    .unwrap();
    rows.push((500, 7000));
    assert_image_holds(&db, &rows);
    let ok: String = b
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}

#[test]
fn concurrent_writers_spilling_rolling_back_and_checkpointing_keep_every_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    drop(open(&db, 2048));
    let writers: Vec<_> = (0..4i64)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || {
                let c = open(&db, 64);
                let mut kept = Vec::new();
                let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (w as u64 + 1);
                let mut next = move |m: u64| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed % m
                };
                for t in 0..120i64 {
                    let tx = c.unchecked_transaction().unwrap();
                    let rows = 1 + next(if t % 10 == 3 { 400 } else { 12 }) as i64;
                    let mut these = Vec::new();
                    for k in 0..rows {
                        let id = w * 1_000_000 + t * 1000 + k;
                        let len = 200 + next(7000) as usize;
                        tx.execute(
                            "INSERT INTO t (id, body) VALUES (?1, ?2)",
                            params![id, body(id, len)],
                        )
                        .unwrap();
                        these.push((id, len));
                    }
                    if next(5) == 0 {
                        tx.rollback().unwrap();
                    } else {
                        tx.commit().unwrap();
                        kept.extend(these);
                    }
                    let mode = match next(12) {
                        0 => "PASSIVE",
                        1 => "RESTART",
                        2 => "TRUNCATE",
                        _ => {
                            let _: i64 = c
                                .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
                                .unwrap();
                            continue;
                        }
                    };
                    let _ = c.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |_| Ok(()));
                }
                kept
            })
        })
        .collect();
    let mut rows: Vec<(i64, usize)> = Vec::new();
    for h in writers {
        rows.extend(h.join().unwrap());
    }
    assert_image_holds(&db, &rows);
}
