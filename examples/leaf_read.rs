//! What a sweep's leaf reads cost without the engine around them: the summarizer
//! input of every chunk of `chunk` consecutive messages of a file, read on one
//! connection as a leaf pass reads it (`compaction::source::input_with_rows`).
//!
//! ```text
//! cargo run --profile fastrelease --example leaf_read -- <db> [chunk] [runs]
//! ```
//! Prints, per run, the time and µs per message of the rows alone
//! (`store::messages::for_each_source`, every part visited) and of the whole input.

use std::collections::HashMap;
use std::time::Instant;

use lcm_native::compaction::source::{input_with_rows, Render};
use lcm_native::store::dag::Sources;
use lcm_native::timeformat::Zone;
use rusqlite::{Connection, OpenFlags};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(db) = args.get(1) else {
        eprintln!("usage: leaf_read <db> [chunk] [runs]");
        std::process::exit(2);
    };
    let chunk: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(120);
    let runs: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(5);
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .expect("open");
    let ids: Vec<i64> = conn
        .prepare("SELECT message_id FROM messages ORDER BY message_id")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("ids");
    let zone = Zone::utc();
    let tags = lcm_native::config::EngineOptions::default().strip_injected_context_tags;
    let render = Render {
        zone: &zone,
        timestamps: true,
        strip_tags: &tags,
    };
    for run in 0..runs {
        let t = Instant::now();
        let mut n = 0;
        for c in ids.chunks(chunk) {
            lcm_native::store::messages::for_each_source(&conn, c, |_, parts| {
                n += 1;
                while parts.next_part()?.is_some() {}
                Ok(())
            })
            .expect("rows");
        }
        let rows = t.elapsed();
        let t = Instant::now();
        let mut bytes = 0;
        for c in ids.chunks(chunk) {
            let (input, _) = input_with_rows(
                &conn,
                &Sources::Messages(c.to_vec()),
                render,
                &HashMap::new(),
            )
            .expect("input");
            bytes += input.source_text.len();
        }
        let all = t.elapsed();
        println!(
            "run {run}: {n} messages; rows {:.1} ms ({:.2} µs/msg); input {:.1} ms ({:.2} µs/msg), {bytes} B of source text",
            rows.as_secs_f64() * 1e3,
            rows.as_secs_f64() * 1e6 / n as f64,
            all.as_secs_f64() * 1e3,
            all.as_secs_f64() * 1e6 / n as f64,
        );
    }
}
