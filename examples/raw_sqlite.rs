//! The physical reference for the benchmarks: what bare SQLite allows on this
//! machine for the same rows, with no engine around it.
//!
//! ```text
//! cargo run --release --example raw_sqlite -- insert <conv.jsonl> <db> [--per-turn | --turns-per-commit K] [--no-fts]
//! cargo run --release --example raw_sqlite -- replay <engine.db> <db> [--per-turn | --turns-per-commit K] [--no-fts]
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
//! `replay` is `insert` for the engine's own layout: it reads back every row an
//! engine stored for its messages (`conversations`, `messages`, `message_parts`,
//! the messages' `context_items`) from a database the engine wrote, makes a new
//! database with the same schema (every table and index), and times only the
//! INSERTs of those rows, byte for byte, plus each message's `messages_fts` row
//! unless `--no-fts`, committed as `insert` commits them. Nothing else runs: no
//! parsing, no checkpoint (`wal_autocheckpoint = 0`), a 256 MiB page cache. It
//! is the least SQLite itself needs to store what the engine stores, the way the
//! engine stores it.
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
        Some("replay") if args.len() >= 3 => replay(
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
                "usage: raw_sqlite insert <conv.jsonl> <db> [--per-turn | --turns-per-commit K] [--no-fts] | replay <engine.db> <db> [--per-turn | --turns-per-commit K] [--no-fts] | hold-lock <db> <millis> | dbstat <db> | fts-grep <db> <rounds> <pattern>..."
            );
            std::process::exit(2);
        }
    }
}

fn role_of(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("user")
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
    let is_user = |i: usize| role_of(&messages[i]) == "user";
    timed_commits(&conn, messages.len(), is_user, turns_per_commit, |i| {
        let m = &messages[i];
        let role = role_of(m);
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
    });
}

/// Writes messages `0..count` with `write`, in one transaction, or committing
/// every `turns_per_commit` turns (a user message after the first starts a turn),
/// and prints the rate of the writes.
fn timed_commits(
    conn: &Connection,
    count: usize,
    is_user: impl Fn(usize) -> bool,
    turns_per_commit: Option<usize>,
    mut write: impl FnMut(usize),
) {
    let start = Instant::now();
    conn.execute_batch("BEGIN").expect("begin");
    let mut turns = 0;
    for i in 0..count {
        if i > 0 && is_user(i) {
            turns += 1;
            if turns_per_commit.is_some_and(|k| turns % k == 0) {
                conn.execute_batch("COMMIT; BEGIN").expect("commit");
            }
        }
        write(i);
    }
    conn.execute_batch("COMMIT").expect("commit");
    let secs = start.elapsed().as_secs_f64();
    println!(
        "msgs_per_sec={:.0} messages={count} secs={secs:.3}",
        count as f64 / secs
    );
}

/// Column positions in the engine's (the reference's) tables, as `SELECT *` reads
/// them: later migrations add columns at the end only.
const MESSAGE_ID: usize = 0;
const MESSAGE_ROLE: usize = 3;
const MESSAGE_CONTENT: usize = 4;
const PART_MESSAGE_ID: usize = 1;
const ITEM_MESSAGE_ID: usize = 3;

/// Every row of `table` (all columns, in `order`), for re-inserting as they are.
fn rows_of(conn: &Connection, table: &str, order: &str) -> Vec<Vec<rusqlite::types::Value>> {
    let mut stmt = conn
        .prepare(&format!("SELECT * FROM {table} ORDER BY {order}"))
        .expect("read rows");
    let n = stmt.column_count();
    stmt.query_map([], |r| (0..n).map(|i| r.get(i)).collect())
        .expect("query rows")
        .collect::<rusqlite::Result<_>>()
        .expect("rows")
}

/// `INSERT INTO table VALUES (?, …)` for rows of `width` columns.
fn insert_sql(table: &str, width: usize) -> String {
    let marks = vec!["?"; width].join(", ");
    format!("INSERT INTO {table} VALUES ({marks})")
}

/// The engine's schema as its database has it: every table, virtual table and
/// index SQLite did not make itself (FTS5 shadow tables come with their virtual table).
fn engine_schema(src: &Connection) -> Vec<String> {
    let mut stmt = src
        .prepare(
            "SELECT sql FROM sqlite_schema s WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'
               AND NOT EXISTS (SELECT 1 FROM sqlite_schema v WHERE v.sql LIKE 'CREATE VIRTUAL TABLE%'
                 AND s.sql NOT LIKE 'CREATE VIRTUAL TABLE%' AND s.name LIKE v.name || '_%')
             ORDER BY CASE WHEN type = 'table' THEN 0 ELSE 1 END, rowid",
        )
        .expect("read schema");
    stmt.query_map([], |r| r.get(0))
        .expect("schema rows")
        .collect::<rusqlite::Result<_>>()
        .expect("schema")
}

fn replay(src: &str, db: &str, turns_per_commit: Option<usize>, fts: bool) {
    let from = Connection::open_with_flags(src, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open the engine's database");
    let messages = rows_of(&from, "messages", "message_id");
    let mut parts: std::collections::HashMap<i64, Vec<Vec<rusqlite::types::Value>>> =
        std::collections::HashMap::new();
    for p in rows_of(&from, "message_parts", "message_id, ordinal") {
        if let rusqlite::types::Value::Integer(id) = p[PART_MESSAGE_ID] {
            parts.entry(id).or_default().push(p);
        }
    }
    let mut items: std::collections::HashMap<i64, Vec<rusqlite::types::Value>> =
        std::collections::HashMap::new();
    for c in rows_of(&from, "context_items", "conversation_id, ordinal") {
        if let rusqlite::types::Value::Integer(id) = c[ITEM_MESSAGE_ID] {
            items.insert(id, c);
        }
    }
    let conn = Connection::open(db).expect("open db");
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;
         PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = -262144;",
    )
    .expect("pragmas");
    for sql in engine_schema(&from) {
        conn.execute_batch(&sql).expect("schema statement");
    }
    let conversations = rows_of(&from, "conversations", "conversation_id");
    for c in &conversations {
        conn.execute(
            &insert_sql("conversations", c.len()),
            rusqlite::params_from_iter(c),
        )
        .expect("conversation");
    }
    // The statements, made once (not in the timed loop).
    let message_sql = insert_sql("messages", messages.first().map_or(0, Vec::len));
    let part_sql = insert_sql(
        "message_parts",
        parts.values().flatten().next().map_or(0, Vec::len),
    );
    let item_sql = insert_sql("context_items", items.values().next().map_or(0, Vec::len));
    let is_user = |i: usize| matches!(&messages[i][MESSAGE_ROLE], rusqlite::types::Value::Text(r) if r == "user");
    timed_commits(&conn, messages.len(), is_user, turns_per_commit, |i| {
        let m = &messages[i];
        let rusqlite::types::Value::Integer(id) = m[MESSAGE_ID] else {
            panic!("messages.message_id is an integer")
        };
        conn.prepare_cached(&message_sql)
            .and_then(|mut s| s.execute(rusqlite::params_from_iter(m)))
            .expect("message");
        for p in parts.get(&id).into_iter().flatten() {
            conn.prepare_cached(&part_sql)
                .and_then(|mut s| s.execute(rusqlite::params_from_iter(p)))
                .expect("part");
        }
        if fts {
            conn.prepare_cached("INSERT INTO messages_fts (rowid, content) VALUES (?1, ?2)")
                .and_then(|mut s| s.execute(params![id, m[MESSAGE_CONTENT]]))
                .expect("fts");
        }
        if let Some(c) = items.get(&id) {
            conn.prepare_cached(&item_sql)
                .and_then(|mut s| s.execute(rusqlite::params_from_iter(c)))
                .expect("context item");
        }
    });
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
