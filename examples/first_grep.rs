//! The first `grep` after open, without the engine around it: what the cold paths
//! (`recall::grep::cold`, `summaries::search_summaries_cold`) cost on a fresh
//! read connection, for profiling (`valgrind --tool=callgrind` counts the same
//! instructions on a busy machine as on a quiet one).
//!
//! ```text
//! cargo run --profile fastrelease --example first_grep -- <db> <regex|full_text> <pattern> [conversation_id] [runs] [warm]
//! ```
//! Prints, per run (each on a new connection), the time of the message and of the
//! summary search and how each was answered (`declined` when it needs a catalog).
//! With `warm`, it then builds both catalogs on one more connection (timed: what a
//! declined first call waits for) and times the catalog paths' answers. `MMAP`
//! sets the connections' `mmap_size` (default 0, as the engine's own default).

use std::time::Instant;

use lcm_native::recall::catalog::Catalog;
use lcm_native::recall::grep::{
    build_query, cold, search_messages, search_summaries, summaries, Filter, Mode, ScopeStats, Sort,
};
use lcm_native::recall::summary_catalog::SummaryCatalog;
use lcm_native::store::Features;
use rusqlite::{Connection, OpenFlags};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!(
            "usage: first_grep <db> <regex|full_text> <pattern> [conversation_id] [runs] [warm]"
        );
        std::process::exit(2);
    }
    let mode = if args[2] == "regex" {
        Mode::Regex
    } else {
        Mode::FullText
    };
    let conversations = args
        .get(4)
        .and_then(|c| c.parse::<i64>().ok())
        .filter(|&c| c > 0)
        .map(|c| vec![c]);
    let runs: usize = args.get(5).and_then(|r| r.parse().ok()).unwrap_or(1);
    let features = Features {
        fts5: true,
        trigram: true,
    };
    let open = || {
        Connection::open_with_flags(
            &args[1],
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .and_then(|c| {
            // The engine's read connections' page cache; no memory map unless `MMAP`.
            c.execute_batch(&format!(
                "PRAGMA cache_size = -{}; PRAGMA mmap_size = {};",
                lcm_native::store::READER_CACHE_KIB,
                std::env::var("MMAP")
                    .ok()
                    .and_then(|m| m.parse().ok())
                    .unwrap_or(0i64)
            ))?;
            Ok(c)
        })
        .expect("open the database")
    };
    let filter = Filter {
        conversations,
        ..Filter::default()
    };
    let q = build_query(&args[3], mode, Sort::Recency, 20, filter).expect("query");
    for _ in 0..runs {
        let conn = open();
        conn.execute_batch("BEGIN").expect("begin");
        let t0 = Instant::now();
        let m = cold::search_messages_cold(&conn, &q, features).expect("messages");
        let t1 = Instant::now();
        let s = summaries::search_summaries_cold(&conn, &q, features).expect("summaries");
        let t2 = Instant::now();
        conn.execute_batch("COMMIT").expect("commit");
        let how = |r: &Option<(Vec<_>, ScopeStats)>| match r {
            Some((hits, st)) => format!(
                "{} ({} hits, {} candidates, {} scanned)",
                st.strategy,
                hits.len(),
                st.candidates,
                st.scanned
            ),
            None => "declined".into(),
        };
        println!(
            "messages {:.2} ms {} | summaries {:.2} ms {}",
            (t1 - t0).as_secs_f64() * 1e3,
            how(&m),
            (t2 - t1).as_secs_f64() * 1e3,
            match &s {
                Some((hits, st)) => format!("{} ({} hits)", st.strategy, hits.len()),
                None => "declined".into(),
            }
        );
    }
    if args.get(6).map(String::as_str) == Some("warm") {
        warm(&open(), &q, features);
    }
}

/// Builds both catalogs (timed) and times the catalog paths' answers (`WARM_RUNS`
/// times, default 3).
fn warm(conn: &Connection, q: &lcm_native::recall::grep::Query, features: Features) {
    let t0 = Instant::now();
    let mut sc = SummaryCatalog::default();
    sc.sync(conn).expect("summary catalog");
    let t1 = Instant::now();
    let mut cat = Catalog::default();
    cat.catch_up(conn).expect("catalog");
    let t2 = Instant::now();
    println!(
        "catalogs: summaries {:.2} ms ({} rows), messages {:.2} ms ({} rows)",
        (t1 - t0).as_secs_f64() * 1e3,
        sc.len(),
        (t2 - t1).as_secs_f64() * 1e3,
        cat.len()
    );
    let runs: usize = std::env::var("WARM_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    for _ in 0..runs {
        conn.execute_batch("BEGIN").expect("begin");
        let t0 = Instant::now();
        let (m, ms) = search_messages(conn, &cat, q, features).expect("messages");
        let t1 = Instant::now();
        let (s, ss) = search_summaries(conn, &sc, q, features).expect("summaries");
        let t2 = Instant::now();
        conn.execute_batch("COMMIT").expect("commit");
        println!(
            "warm: messages {:.2} ms {} ({} hits, {} scanned) | summaries {:.2} ms {} ({} hits, {} candidates, {} scanned)",
            (t1 - t0).as_secs_f64() * 1e3,
            ms.strategy,
            m.len(),
            ms.scanned,
            (t2 - t1).as_secs_f64() * 1e3,
            ss.strategy,
            s.len(),
            ss.candidates,
            ss.scanned
        );
    }
}
