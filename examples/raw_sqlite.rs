//! The physical reference for the benchmarks: what bare SQLite allows on this
//! machine for the same rows, with no engine around it.
//!
//! ```text
//! cargo run --release --example raw_sqlite -- insert <conv.jsonl> <db> [--per-turn | --turns-per-commit K] [--no-fts]
//! cargo run --release --example raw_sqlite -- hold-lock <db> <millis>
//! cargo run --release --example raw_sqlite -- dbstat <db>
//! cargo run --release --example raw_sqlite -- fts-grep <db> <rounds> <pattern>...
//! ```
//! `insert` writes each message as a `messages` row, one `message_parts` row per
//! block (the block JSON), a `context_items` row and a standalone FTS row, in one
//! transaction (default), one per turn or one per K turns (what group commit
//! makes of K sessions' turns), and prints `msgs_per_sec=…`; with `--no-fts`, the
//! same without the FTS rows (the rows alone: with one commit per turn, the least a
//! durable acknowledgement per turn costs for them).
//! `hold-lock` takes the write lock (`BEGIN IMMEDIATE`) and keeps it for the given
//! time, to measure the engine while another process writes. `dbstat` prints the
//! bytes of every table and index (SQLite's `dbstat` virtual table), one
//! `name=… bytes=…` line each, largest first. `fts-grep` runs the reference plugin's
//! full-text `lcm_grep` query over messages on a database `insert` wrote (each
//! whitespace-separated word quoted, `snippet()` on the hits, newest first, 20 at
//! most, one conversation), each pattern `rounds` times on one connection with the
//! statement prepared once, and prints `p50_ms=… p99_ms=… hits=…`: a lower bound
//! for the reference's warm full-text grep (no summaries half, no JavaScript).

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection};
use serde_json::Value;

const SCHEMA: &str = "
PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;
CREATE TABLE IF NOT EXISTS messages (message_id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id INTEGER NOT NULL,
  seq INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, token_count INTEGER NOT NULL,
  created_at TEXT NOT NULL DEFAULT (datetime('now')), UNIQUE (conversation_id, seq));
CREATE TABLE IF NOT EXISTS message_parts (part_id TEXT PRIMARY KEY, message_id INTEGER NOT NULL, ordinal INTEGER NOT NULL,
  part_type TEXT NOT NULL, text_content TEXT, metadata TEXT, UNIQUE (message_id, ordinal));
CREATE TABLE IF NOT EXISTS context_items (conversation_id INTEGER NOT NULL, ordinal INTEGER NOT NULL,
  item_type TEXT NOT NULL, message_id INTEGER, PRIMARY KEY (conversation_id, ordinal));
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(content, tokenize='porter unicode61');
";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("insert") if args.len() >= 3 => insert(
            &args[1],
            &args[2],
            turns_per_commit(&args),
            !args.iter().any(|a| a == "--no-fts"),
        ),
        Some("hold-lock") if args.len() >= 3 => {
            hold_lock(&args[1], args[2].parse().unwrap_or(1000))
        }
        Some("dbstat") if args.len() >= 2 => dbstat(&args[1]),
        Some("fts-grep") if args.len() >= 4 => {
            let rounds = args[2]
                .parse()
                .expect("fts-grep <db> <rounds>: rounds is a count");
            fts_grep(&args[1], rounds, &args[3..])
        }
        _ => {
            eprintln!(
                "usage: raw_sqlite insert <conv.jsonl> <db> [--per-turn | --turns-per-commit K] [--no-fts] | hold-lock <db> <millis> | dbstat <db> | fts-grep <db> <rounds> <pattern>..."
            );
            std::process::exit(2);
        }
    }
}

fn text_of(m: &Value) -> String {
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Turns per commit of `insert`: 1 with `--per-turn`, K with
/// `--turns-per-commit K`, none (one transaction) otherwise.
fn turns_per_commit(args: &[String]) -> Option<usize> {
    if args.iter().any(|a| a == "--per-turn") {
        return Some(1);
    }
    let at = args.iter().position(|a| a == "--turns-per-commit")?;
    let k = args
        .get(at + 1)
        .and_then(|v| v.parse().ok())
        .filter(|&k: &usize| k > 0)
        .expect("--turns-per-commit takes a count of at least 1");
    Some(k)
}

fn insert(jsonl: &str, db: &str, turns_per_commit: Option<usize>, fts: bool) {
    let file = std::fs::File::open(jsonl).expect("open jsonl");
    let messages: Vec<Value> = BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(&l).expect("valid JSON line"))
        .collect();
    let conn = Connection::open(db).expect("open db");
    conn.execute_batch(SCHEMA).expect("schema");
    let start = Instant::now();
    conn.execute_batch("BEGIN").expect("begin");
    let mut turns = 0;
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        if role == "user" && i > 0 {
            turns += 1;
            if turns_per_commit.is_some_and(|k| turns % k == 0) {
                conn.execute_batch("COMMIT; BEGIN").expect("commit");
            }
        }
        let t = &conn;
        let content = text_of(m);
        t.prepare_cached("INSERT INTO messages (conversation_id, seq, role, content, token_count) VALUES (1, ?1, ?2, ?3, ?4)")
            .and_then(|mut s| s.execute(params![i as i64 + 1, role, content, content.len() as i64 / 4]))
            .expect("message");
        let id = t.last_insert_rowid();
        let blocks: Vec<Value> = match m.get("content") {
            Some(Value::Array(b)) => b.clone(),
            Some(other) => vec![other.clone()],
            None => vec![],
        };
        for (k, b) in blocks.iter().enumerate() {
            t.prepare_cached("INSERT INTO message_parts (part_id, message_id, ordinal, part_type, metadata) VALUES (?1, ?2, ?3, 'text', ?4)")
                .and_then(|mut s| s.execute(params![format!("{id:010}.{k}"), id, k as i64, b.to_string()]))
                .expect("part");
        }
        if fts {
            t.prepare_cached("INSERT INTO messages_fts (rowid, content) VALUES (?1, ?2)")
                .and_then(|mut s| s.execute(params![id, content]))
                .expect("fts");
        }
        t.prepare_cached("INSERT INTO context_items (conversation_id, ordinal, item_type, message_id) VALUES (1, ?1, 'message', ?2)")
            .and_then(|mut s| s.execute(params![i as i64, id]))
            .expect("context");
    }
    conn.execute_batch("COMMIT").expect("commit");
    let secs = start.elapsed().as_secs_f64();
    println!(
        "msgs_per_sec={:.0} messages={} secs={:.3}",
        messages.len() as f64 / secs,
        messages.len(),
        secs
    );
}

fn hold_lock(db: &str, millis: u64) {
    let conn = Connection::open(db).expect("open db");
    conn.busy_timeout(Duration::from_secs(30))
        .expect("busy timeout");
    conn.execute_batch("BEGIN IMMEDIATE").expect("lock");
    println!("locked");
    std::thread::sleep(Duration::from_millis(millis));
    conn.execute_batch("COMMIT").expect("unlock");
    println!("released");
}

fn dbstat(db: &str) {
    let conn = Connection::open(db).expect("open db");
    let mut stmt = conn
        .prepare("SELECT name, SUM(pgsize) AS b FROM dbstat GROUP BY name ORDER BY b DESC")
        .expect("dbstat (SQLite built with SQLITE_ENABLE_DBSTAT_VTAB)");
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .expect("dbstat rows");
    for row in rows {
        let (name, bytes) = row.expect("dbstat row");
        println!("name={name} bytes={bytes}");
    }
}

/// The reference's FTS5 query text: every whitespace-separated word, quotes
/// removed, as a quoted phrase.
fn sanitize(pattern: &str) -> String {
    pattern
        .split_whitespace()
        .map(|w| format!("\"{}\"", w.replace('"', "")))
        .collect::<Vec<_>>()
        .join(" ")
}

fn fts_grep(db: &str, rounds: usize, patterns: &[String]) {
    let conn = Connection::open(db).expect("open db");
    let mut stmt = conn
        .prepare(
            "SELECT m.message_id, m.conversation_id, m.role,
                    snippet(messages_fts, 0, '', '', '...', 32), m.created_at
             FROM messages_fts JOIN messages m ON m.message_id = messages_fts.rowid
             WHERE messages_fts MATCH ?1 AND m.conversation_id = 1
             ORDER BY m.created_at DESC LIMIT 20",
        )
        .expect("prepare");
    let mut times = Vec::new();
    let mut hits = 0usize;
    for round in 0..rounds {
        for p in patterns {
            let start = Instant::now();
            let rows: Vec<(i64, String)> = stmt
                .query_map([sanitize(p)], |r| Ok((r.get(0)?, r.get(3)?)))
                .expect("query")
                .collect::<rusqlite::Result<_>>()
                .expect("rows");
            times.push(start.elapsed().as_secs_f64() * 1e3);
            if round == 0 {
                hits += rows.len();
            }
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    println!("p50_ms={:.3} p99_ms={:.3} hits={hits}", at(0.5), at(0.99));
}
