use rusqlite::Connection;
use std::time::Instant;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let conn = Connection::open(&a[1]).unwrap();
    let expr = &a[2];
    let max: i64 = conn
        .query_row("SELECT max(rowid) FROM messages_fts", [], |r| r.get(0))
        .unwrap();
    for lo_frac in [0.0f64, 0.5, 0.9, 0.99, 0.999] {
        let lo = (max as f64 * lo_frac) as i64;
        for _ in 0..2 {
            let t = Instant::now();
            let mut stmt = conn.prepare_cached("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid > ?2 ORDER BY rowid DESC LIMIT 1000").unwrap();
            let n = stmt
                .query_map(rusqlite::params![expr, lo], |r| r.get::<_, i64>(0))
                .unwrap()
                .count();
            println!(
                "lo {lo_frac}: {n} rows {:.2} ms",
                t.elapsed().as_secs_f64() * 1e3
            );
        }
    }
}
