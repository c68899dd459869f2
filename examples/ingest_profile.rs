//! The ingest path without JavaScript, for profiling (`valgrind --tool=callgrind`,
//! `perf`): the seeded workload's turns as the JSON text the binding hands over,
//! each awaited as one `ingestBatch` (parsed on the writer thread, grouped, committed)
//! exactly as the addon runs it, minus the JS thread.
//!
//! ```text
//! cargo run --profile fastrelease --example ingest_profile -- <conv.jsonl> <db> [--sessions K]
//! ```
//! Prints `msgs_per_sec=…` and the split of wall time: JSON text of the turns made
//! up front, then the awaited calls. With `--sessions K`, K sessions ingest each
//! turn concurrently (group commit).

use std::io::{BufRead, BufReader};
use std::time::Instant;

use lcm_native::config::EngineOptions;
use lcm_native::engine::Engine;
use lcm_native::ingest::IngestBatchParams;
use lcm_native::params::parse_params;
use serde_json::Value;

fn turns(path: &str) -> Vec<Vec<Value>> {
    let file = std::fs::File::open(path).expect("open jsonl");
    let mut out: Vec<Vec<Value>> = Vec::new();
    for line in BufReader::new(file).lines().map_while(Result::ok) {
        if line.trim().is_empty() {
            continue;
        }
        let m: Value = serde_json::from_str(&line).expect("valid JSON line");
        if m.get("role").and_then(Value::as_str) == Some("user") || out.is_empty() {
            out.push(Vec::new());
        }
        if let Some(t) = out.last_mut() {
            t.push(m);
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: ingest_profile <conv.jsonl> <db> [--sessions K]");
        std::process::exit(2);
    }
    let sessions: usize = args
        .iter()
        .position(|a| a == "--sessions")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let turns = turns(&args[0]);
    let texts: Vec<Vec<String>> = turns
        .iter()
        .map(|t| {
            (0..sessions)
                .map(|k| {
                    serde_json::json!({"sessionId": format!("bench-{k}"), "messages": t})
                        .to_string()
                })
                .collect()
        })
        .collect();
    let count: usize = turns.iter().map(Vec::len).sum::<usize>() * sessions;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let opts = EngineOptions {
            db_path: Some(args[1].clone()),
            ..EngineOptions::default()
        };
        let engine = Engine::open(opts).await.expect("open");
        let start = Instant::now();
        for turn in texts {
            let calls: Vec<_> = turn
                .into_iter()
                .map(|json| {
                    engine.ingest_batch_with(move || {
                        parse_params::<IngestBatchParams>("ingestBatch", &json)
                    })
                })
                .collect();
            for c in calls {
                c.await.expect("ingest");
            }
        }
        let secs = start.elapsed().as_secs_f64();
        engine.close().await.expect("close");
        println!(
            "msgs_per_sec={:.0} messages={count} secs={secs:.3}",
            count as f64 / secs
        );
    });
}
