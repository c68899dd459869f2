//! The DAG a sweep builds, pinned against a stored expectation (`sweep_dag.txt`,
//! written by the implementation that shifted the later ordinals on every write):
//! for the same input, a sweep must make the same summarizer calls (inputs and
//! previous context), the same summaries (text, derived columns, sources in link
//! order) and the same context list. Summaries are named by the call that made
//! them and messages by their seq, so random summary ids do not matter.
//! `LCM_BLESS=1 cargo test sweep_builds_the_pinned_dag` rewrites the expectation.

use sha2::{Digest, Sha256};

use super::*;
use crate::doctor::DoctorParams;

/// A workload with tool turns, varied sizes, file ids and one out-of-order time.
async fn ingest_varied(engine: &Engine) -> i64 {
    ingest_tool_turns(engine, 12).await;
    let mut seed: u64 = 7;
    let mut next = move |m: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % m
    };
    let t0 = 1_771_400_000_000i64;
    let mut conv = 0;
    for turn in 0..60 {
        let messages: Vec<serde_json::Value> = (0..1 + next(6))
            .map(|k| {
                let i = turn * 10 + k as i64;
                let role = if k == 0 { "user" } else { "assistant" };
                let mut body = format!("turn {turn} message {k}: ");
                if next(5) == 0 {
                    body.push_str(&format!("see file_{:016x} ", 0xabc0 + next(4)));
                }
                let words = 5 + next(120) as usize;
                body.push_str(&"lorem ipsum ".repeat(words));
                // One message older than its predecessors (time ranges take min/max).
                let at = if turn == 33 && k == 1 {
                    t0 - 3_600_000
                } else {
                    t0 + i * 45_000
                };
                json!({"role": role, "content": body, "timestamp": at})
            })
            .collect();
        conv = append(engine, "s1", messages).await;
    }
    conv
}

fn short_hash(s: &str) -> String {
    crate::text::head(&hex::encode(Sha256::digest(s.as_bytes())), 12).to_owned()
}

/// The fake's call number named in a summary's text ("S{depth} call {n}: …").
fn call_of(content: &str) -> String {
    let n = content
        .split(" call ")
        .nth(1)
        .and_then(|t| t.split(':').next());
    format!("c{}", n.unwrap_or("?"))
}

/// The DAG as text: every summarizer call's input, every summary's columns and
/// sources, and the context list, with summaries named by call and messages by seq.
async fn describe(engine: &Engine, fake: &Fake, conv: i64) -> String {
    let seq: HashMap<i64, i64> = super::message_records(engine, conv)
        .await
        .into_iter()
        .map(|m| (m.message_id, m.seq))
        .collect();
    let sums = engine.get_summaries(conv).await.unwrap();
    let name: HashMap<String, String> = sums
        .iter()
        .map(|s| (s.summary.summary_id.clone(), call_of(&s.summary.content)))
        .collect();
    let mut out = String::new();
    for (n, i) in fake.inputs.lock().unwrap().iter().enumerate() {
        out += &format!(
            "call c{} depth {} children {} range {:?} source {} previous {}\n",
            n + 1,
            i.depth,
            i.child_count,
            i.time_range,
            short_hash(&i.source_text),
            i.previous_context.as_deref().map_or("-".into(), short_hash),
        );
    }
    let mut lines: Vec<(String, String)> = sums
        .iter()
        .map(|s| {
            let r = &s.summary;
            let sources: Vec<String> = if r.kind == crate::store::summaries::SummaryKind::Leaf {
                s.message_ids.iter().map(|m| format!("m{}", seq[m])).collect()
            } else {
                s.parent_ids.iter().map(|p| name[p].clone()).collect()
            };
            let line = format!(
                "summary {} {} depth {} tokens {} text {} range {:?}..{:?} descendants {} / {} tokens, source tokens {} files {:?} sources [{}]\n",
                name[&r.summary_id],
                r.kind,
                r.depth,
                r.token_count,
                short_hash(&r.content),
                r.earliest_at,
                r.latest_at,
                r.descendant_count,
                r.descendant_token_count,
                r.source_message_token_count,
                r.file_ids,
                sources.join(" "),
            );
            (name[&r.summary_id].clone(), line)
        })
        .collect();
    lines.sort_by_key(|(n, _)| n.trim_start_matches('c').parse::<usize>().unwrap_or(0));
    for (_, l) in lines {
        out += &l;
    }
    let items = engine.get_context_items(conv).await.unwrap();
    let list: Vec<String> = items
        .iter()
        .map(|i| match (&i.message_id, &i.summary_id) {
            (Some(m), _) => format!("m{}", seq[m]),
            (_, Some(s)) => name[s].clone(),
            _ => "?".into(),
        })
        .collect();
    out += &format!("context [{}]\n", list.join(" "));
    out
}

async fn assert_doctor_clean(engine: &Engine, conv: i64) {
    let r = engine
        .doctor(
            DoctorParams {
                conversation_id: Some(conv),
                all: false,
                apply: false,
            },
            None,
        )
        .await
        .unwrap();
    assert!(r.ok, "doctor after the sweep: {:?}", r.found);
}

/// Runs the two scenarios and returns their descriptions.
async fn scenarios() -> String {
    let opts = EngineOptions {
        fresh_tail_count: 6,
        leaf_chunk_tokens: 500,
        ..small_options()
    };
    // One sweep to the end, into the pressure phase (hard fanout down to the target).
    let engine = Engine::open(opts.clone()).await.unwrap();
    let conv = ingest_varied(&engine).await;
    let fake = Arc::new(Fake::default());
    let r = compact(&engine, &fake, params(Mode::Sweep, 900)).await;
    assert!(r.ok && r.compacted, "{}", r.reason);
    let leaves = r.passes.iter().filter(|p| p.kind == PassKind::Leaf).count();
    assert!(
        leaves > crate::compaction::run::BATCH_MAX,
        "more than one leaf batch: {leaves}"
    );
    check_invariants(&engine, conv).await;
    assert_doctor_clean(&engine, conv).await;
    let mut out = format!("== full sweep: {} passes\n", r.passes.len());
    for p in &r.passes {
        out += &format!(
            "pass {:?} depth {} sources {} tokens {} -> {}\n",
            p.kind, p.depth, p.source_count, p.context_tokens_before, p.context_tokens_after
        );
    }
    out += &describe(&engine, &fake, conv).await;
    // Sweeps cut by the iteration cap (mid leaf phase, then mid condensation),
    // each continuing where the last one stopped.
    let engine = Engine::open(EngineOptions {
        max_sweep_iterations: 7,
        ..opts
    })
    .await
    .unwrap();
    let conv = ingest_varied(&engine).await;
    let fake = Arc::new(Fake::default());
    let mut calls = Vec::new();
    loop {
        let r = compact(
            &engine,
            &fake,
            CompactParams {
                force: true,
                ..params(Mode::Sweep, 900)
            },
        )
        .await;
        assert!(r.ok, "{}", r.reason);
        check_invariants(&engine, conv).await;
        assert_doctor_clean(&engine, conv).await;
        if r.passes.is_empty() {
            break;
        }
        calls.push(r.passes.len().to_string());
    }
    out += &format!("== capped sweeps: {}\n", calls.join(" "));
    out += &describe(&engine, &fake, conv).await;
    out
}

#[tokio::test]
async fn sweep_builds_the_pinned_dag() {
    let got = scenarios().await;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/engine/tests/compaction/sweep_dag.txt"
    );
    if std::env::var_os("LCM_BLESS").is_some() {
        std::fs::write(path, &got).unwrap();
    }
    let want = std::fs::read_to_string(path).unwrap();
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "line {} of sweep_dag.txt", i + 1);
    }
    assert_eq!(got.lines().count(), want.lines().count());
}

/// Gaps a run could not close (the process died mid-phase) are closed by the next
/// compaction call, even one that finds nothing to do; the list keeps its order.
#[tokio::test]
async fn the_next_run_closes_gaps_a_crashed_sweep_left() {
    let engine = Engine::open(small_options()).await.unwrap();
    let conv = ingest(&engine, "s1", 0, 12, 10).await;
    let before: Vec<Option<i64>> = engine
        .get_context_items(conv)
        .await
        .unwrap()
        .iter()
        .map(|i| i.message_id)
        .collect();
    engine
        .store()
        .write(move |c| {
            c.execute(
                "UPDATE context_items SET ordinal = -1 - ordinal * 3 WHERE conversation_id = ?1",
                [conv],
            )?;
            c.execute(
                "UPDATE context_items SET ordinal = -1 - ordinal WHERE conversation_id = ?1",
                [conv],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let gapped = engine.get_context_items(conv).await.unwrap();
    assert_eq!(gapped[1].ordinal, 3);
    let fake = Arc::new(Fake::default());
    let r = compact(&engine, &fake, params(Mode::Incremental, 1_000_000)).await;
    assert_eq!(r.reason, "below threshold");
    let items = engine.get_context_items(conv).await.unwrap();
    assert_eq!(
        items.iter().map(|i| i.message_id).collect::<Vec<_>>(),
        before
    );
    check_invariants(&engine, conv).await;
    assert_doctor_clean(&engine, conv).await;
}
