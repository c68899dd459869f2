use lcm_native::ingest::{map_batch, IngestBatchParams};
use lcm_native::params::parse_params;
use serde_json::Value;
use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let msgs: Vec<Value> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut turns: Vec<Vec<Value>> = vec![];
    for m in msgs {
        if m["role"] == "user" || turns.is_empty() {
            turns.push(vec![]);
        }
        turns.last_mut().unwrap().push(m);
    }
    let jsons: Vec<String> = turns
        .iter()
        .map(|t| serde_json::json!({"sessionId": "i", "messages": t}).to_string())
        .collect();
    let n: usize = turns.iter().map(|t| t.len()).sum();
    for _ in 0..5 {
        let t0 = Instant::now();
        let ps: Vec<IngestBatchParams> = jsons
            .iter()
            .map(|j| parse_params("ingestBatch", j).unwrap())
            .collect();
        let t1 = Instant::now();
        let mut rows = 0;
        for p in &ps {
            rows += map_batch(p, usize::MAX).unwrap().len();
        }
        let t2 = Instant::now();
        drop(ps);
        let t3 = Instant::now();
        println!(
            "parse {:.2} us/msg  map {:.2} us/msg  drop {:.2} us/msg ({rows})",
            (t1 - t0).as_secs_f64() * 1e6 / n as f64,
            (t2 - t1).as_secs_f64() * 1e6 / n as f64,
            (t3 - t2).as_secs_f64() * 1e6 / n as f64
        );
    }
}
