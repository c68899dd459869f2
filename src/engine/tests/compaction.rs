//! End-to-end tests of the compaction engine over an in-memory store with a fake
//! pipeline (deterministic, instrumented, optionally failing or blocking).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use crate::compaction::*;
use crate::config::EngineOptions;
use crate::engine::{Engine, IngestBatchParams};
use crate::error::{ErrorCode, LcmError};
use crate::summarize::SummaryPipeline;
use crate::summarize::{Level, SummarizeInput, SummarizeOutput};
use crate::tokens;

/// Runs on the n-th call (1-based), before the answer.
type CallHook = Box<dyn FnMut(usize) + Send>;

/// A pipeline that answers with a short deterministic text, records its inputs,
/// and can fail, block or run a hook on chosen calls.
#[derive(Default)]
struct Fake {
    inputs: Mutex<Vec<SummarizeInput>>,
    fail_at: Option<(usize, ErrorCode)>,
    delay: Option<Duration>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    on_call: Mutex<Option<CallHook>>,
    /// Words added to every summary (one that outgrows any chunk).
    pad: usize,
}

#[async_trait]
impl SummaryPipeline for Fake {
    async fn run(&self, input: SummarizeInput) -> crate::error::Result<SummarizeOutput> {
        let n = {
            let mut v = self.inputs.lock().unwrap();
            v.push(input.clone());
            v.len()
        };
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        if let Some(hook) = self.on_call.lock().unwrap().as_mut() {
            hook(n);
        }
        if let Some(d) = self.delay {
            tokio::time::sleep(d).await;
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        if let Some((at, code)) = self.fail_at {
            if n >= at {
                return Err(LcmError::new(code, "provider rejected the key"));
            }
        }
        let head: String = input.source_text.chars().take(200).collect();
        let content = format!(
            "S{} call {n}: {head}{}",
            input.depth,
            " pad".repeat(self.pad)
        );
        Ok(SummarizeOutput {
            tokens_in: tokens::estimate(&input.source_text),
            tokens_out: tokens::estimate(&content),
            content,
            level: Level::Normal,
            model: "fake".into(),
        })
    }
}

fn small_options() -> EngineOptions {
    EngineOptions {
        db_path: Some(":memory:".into()),
        timezone: Some("UTC".into()),
        fresh_tail_count: 4,
        leaf_chunk_tokens: 400,
        leaf_min_fanout: 3,
        condensed_min_fanout: 2,
        condensed_min_fanout_hard: 2,
        condensed_target_tokens: 30,
        leaf_target_tokens: 30,
        incremental_max_depth: 1,
        ..EngineOptions::default()
    }
}

async fn engine_with(opts: EngineOptions, n: usize, tokens_each: usize) -> (Engine, i64) {
    let engine = Engine::open(opts).await.unwrap();
    let conv = ingest(&engine, "s1", 0, n, tokens_each).await;
    (engine, conv)
}

/// Appends `n` alternating user/assistant messages of about `tokens_each` tokens.
async fn ingest(engine: &Engine, session: &str, from: usize, n: usize, tokens_each: usize) -> i64 {
    let messages = (from..from + n)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let mut body = format!("message {i} ");
            while body.len() < tokens_each * 4 {
                body.push_str("word ");
            }
            body.truncate(tokens_each * 4);
            json!({"role": role, "content": body, "timestamp": 1_771_313_820_000i64 + i as i64 * 60_000})
        })
        .collect();
    append(engine, session, messages).await
}

/// Appends `messages` to `session` in one batch; returns the conversation id.
async fn append(engine: &Engine, session: &str, messages: Vec<serde_json::Value>) -> i64 {
    engine
        .ingest_batch(IngestBatchParams {
            session_id: session.into(),
            session_key: None,
            messages,
            entry_ids: None,
            is_heartbeat: false,
        })
        .await
        .unwrap()
        .conversation_id
        .unwrap()
}

fn params(mode: Mode, budget: i64) -> CompactParams {
    CompactParams {
        session_id: "s1".into(),
        session_key: None,
        token_budget: budget,
        mode,
        force: false,
        current_token_count: None,
        custom_instructions: None,
        target_tokens: None,
        overrides: None,
    }
}

async fn compact(engine: &Engine, fake: &Arc<Fake>, p: CompactParams) -> CompactResult {
    engine
        .compact_with(fake.clone(), p, Hooks::default())
        .await
        .unwrap()
}

/// Checks the DAG invariants: ordinals 0..n-1, every message covered exactly once
/// by the context list or a reachable summary, and stored metadata equal to its
/// recomputation from the sources. Returns the deepest depth.
async fn check_invariants(engine: &Engine, conv: i64) -> i64 {
    let items = engine.get_context_items(conv).await.unwrap();
    let ordinals: Vec<i64> = items.iter().map(|i| i.ordinal).collect();
    assert_eq!(ordinals, (0..items.len() as i64).collect::<Vec<_>>());
    let sums: HashMap<String, crate::engine::SummaryWithLinks> = engine
        .get_summaries(conv)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.summary.summary_id.clone(), s))
        .collect();
    let records = message_records(engine, conv).await;
    let all: Vec<i64> = records.iter().map(|m| m.message_id).collect();
    let mut covered: Vec<i64> = Vec::new();
    let mut reached: HashSet<String> = HashSet::new();
    let mut stack: Vec<String> = Vec::new();
    for it in &items {
        match (&it.message_id, &it.summary_id) {
            (Some(m), _) => covered.push(*m),
            (_, Some(s)) => stack.push(s.clone()),
            _ => panic!("empty context item"),
        }
    }
    while let Some(id) = stack.pop() {
        assert!(reached.insert(id.clone()), "{id} reached twice");
        let s = &sums[&id];
        covered.extend(&s.message_ids);
        stack.extend(s.parent_ids.iter().cloned());
    }
    assert_eq!(reached.len(), sums.len(), "every summary is reachable");
    let mut sorted = covered.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, all, "every message covered exactly once");
    let msgs: HashMap<i64, crate::store::messages::MessageRecord> =
        records.into_iter().map(|m| (m.message_id, m)).collect();
    let iso = |s: &str| crate::timestamp::parse(s).map(crate::timestamp::to_iso);
    let mut deepest = -1;
    for s in sums.values() {
        let r = &s.summary;
        deepest = deepest.max(r.depth);
        if r.kind == crate::store::summaries::SummaryKind::Leaf {
            let srcs: Vec<_> = s.message_ids.iter().map(|m| &msgs[m]).collect();
            assert_eq!(r.depth, 0);
            assert_eq!(
                r.source_message_token_count,
                srcs.iter().map(|m| m.token_count).sum::<i64>()
            );
            assert_eq!(
                r.earliest_at,
                srcs.iter().filter_map(|m| iso(&m.created_at)).min()
            );
            assert_eq!(
                r.latest_at,
                srcs.iter().filter_map(|m| iso(&m.created_at)).max()
            );
            assert_eq!((r.descendant_count, r.descendant_token_count), (0, 0));
        } else {
            let kids: Vec<_> = s.parent_ids.iter().map(|p| &sums[p].summary).collect();
            assert!(
                kids.iter().all(|k| k.depth == kids[0].depth),
                "uniform source depth"
            );
            assert_eq!(r.depth, kids[0].depth + 1);
            assert_eq!(
                r.descendant_count,
                kids.iter().map(|k| k.descendant_count + 1).sum::<i64>()
            );
            assert_eq!(
                r.descendant_token_count,
                kids.iter()
                    .map(|k| k.token_count + k.descendant_token_count)
                    .sum::<i64>()
            );
            assert_eq!(
                r.source_message_token_count,
                kids.iter()
                    .map(|k| k.source_message_token_count)
                    .sum::<i64>()
            );
            assert_eq!(
                r.earliest_at,
                kids.iter().filter_map(|k| k.earliest_at.clone()).min()
            );
            assert_eq!(
                r.latest_at,
                kids.iter().filter_map(|k| k.latest_at.clone()).max()
            );
        }
        assert_eq!(r.token_count, tokens::estimate(&r.content));
    }
    deepest
}

#[tokio::test]
async fn the_threshold_is_floored_and_strict() {
    assert_eq!(threshold_for(0.75, 1001), 750);
    assert!(!over_threshold(750, 750));
    assert!(over_threshold(751, 750));
    let (engine, _) = engine_with(small_options(), 10, 100).await;
    let stored = engine
        .evaluate(EvaluateParams {
            session_id: "s1".into(),
            session_key: None,
            token_budget: 1_000_000,
            current_token_count: None,
            overrides: None,
        })
        .await
        .unwrap()
        .stored_tokens;
    // A budget whose threshold equals the stored tokens exactly: not due.
    let budget = stored * 4 / 3 + 1;
    let at = |budget, current| EvaluateParams {
        session_id: "s1".into(),
        session_key: None,
        token_budget: budget,
        current_token_count: current,
        overrides: None,
    };
    let e = engine.evaluate(at(budget, None)).await.unwrap();
    assert_eq!(e.threshold, threshold_for(0.75, budget));
    assert_eq!(e.should_compact, stored > e.threshold);
    let e = engine
        .evaluate(at(budget, Some(e.threshold)))
        .await
        .unwrap();
    assert_eq!(e.current_tokens, stored.max(e.threshold));
    let e = engine
        .evaluate(at(budget, Some(e.threshold + 1)))
        .await
        .unwrap();
    assert!(e.should_compact, "the observed count wins when higher");
    let bad = engine.evaluate(at(0, None)).await.unwrap_err();
    assert_eq!(bad.code, ErrorCode::InvalidInput);
}

#[tokio::test]
async fn under_the_threshold_nothing_happens_unless_forced() {
    let (engine, conv) = engine_with(small_options(), 20, 100).await;
    let fake = Arc::new(Fake::default());
    let r = compact(&engine, &fake, params(Mode::Sweep, 1_000_000)).await;
    assert!(r.ok && !r.compacted && !r.exhausted);
    assert_eq!(r.reason, "below threshold");
    assert_eq!(fake.inputs.lock().unwrap().len(), 0);
    let r = compact(
        &engine,
        &fake,
        CompactParams {
            force: true,
            ..params(Mode::Sweep, 1_000_000)
        },
    )
    .await;
    assert!(r.ok && r.compacted, "{}", r.reason);
    check_invariants(&engine, conv).await;
    // No conversation for the session: nothing to do, no error.
    let r = compact(
        &engine,
        &fake,
        CompactParams {
            session_id: "nobody".into(),
            ..params(Mode::Sweep, 10)
        },
    )
    .await;
    assert!(r.ok && !r.compacted);
}

#[tokio::test]
async fn a_leaf_pass_takes_the_oldest_messages_outside_the_fresh_tail() {
    let (engine, conv) = engine_with(small_options(), 12, 100).await;
    let fake = Arc::new(Fake::default());
    let r = compact(
        &engine,
        &fake,
        CompactParams {
            force: true,
            ..params(Mode::Incremental, 1_000)
        },
    )
    .await;
    assert_eq!(r.passes.len(), 1);
    let p = &r.passes[0];
    assert_eq!(
        (p.kind, p.depth, p.source_count),
        (PassKind::Leaf, 0, 4),
        "400-token cap / ~100-token messages"
    );
    assert!(p.summary_id.starts_with("sum_") && p.summary_id.len() == 20);
    let items = engine.get_context_items(conv).await.unwrap();
    assert_eq!(items[0].summary_id.as_deref(), Some(p.summary_id.as_str()));
    assert_eq!(items.len(), 12 - 4 + 1);
    // The source carries timestamp and role headers.
    let first = fake.inputs.lock().unwrap()[0].clone();
    assert!(
        first
            .source_text
            .starts_with("[2026-02-17 07:37 UTC] [user]\nmessage 0 "),
        "{}",
        &first.source_text[..60]
    );
    assert_eq!(first.previous_context, None);
    assert_eq!(
        r.tokens_after,
        items.iter().map(|i| i.token_count).sum::<i64>()
    );
    // The next leaf pass gets the previous summary as continuity.
    compact(
        &engine,
        &fake,
        CompactParams {
            force: true,
            ..params(Mode::Incremental, 1_000)
        },
    )
    .await;
    let second = fake.inputs.lock().unwrap()[1].clone();
    assert!(second.previous_context.unwrap().starts_with("S0 call 1"));
    check_invariants(&engine, conv).await;
}

#[tokio::test]
async fn a_sweep_compacts_everything_outside_the_tail_and_goes_deep() {
    // A small summary-prefix target keeps the pressure on: the sweep condenses
    // beyond sweepMaxDepth, at the hard fanout.
    let opts = EngineOptions {
        summary_prefix_target_tokens: Some(60),
        ..small_options()
    };
    let (engine, conv) = engine_with(opts, 120, 100).await;
    let fake = Arc::new(Fake::default());
    let r = compact(&engine, &fake, params(Mode::Sweep, 1_000)).await;
    assert!(r.ok && r.compacted, "{}", r.reason);
    assert!(r.tokens_after < r.tokens_before);
    let items = engine.get_context_items(conv).await.unwrap();
    let raw = items
        .iter()
        .filter(|i| i.item_type == crate::store::messages::ContextItemType::Message)
        .count();
    assert_eq!(raw, 4, "only the fresh tail stays raw");
    let deepest = check_invariants(&engine, conv).await;
    assert!(deepest >= 2, "deepest {deepest}");
    // Condensed prompts get the output depth; previous_context only when building d1.
    for input in fake.inputs.lock().unwrap().iter() {
        if input.depth >= 2 {
            assert!(input.previous_context.is_none());
            assert!(
                input.source_text.starts_with("[2026-02-17 "),
                "range headers"
            );
            assert!(input.source_text.lines().next().unwrap().contains("–"));
        }
    }
    for input in fake.inputs.lock().unwrap().iter().filter(|i| i.depth == 1) {
        let prev = input.previous_context.as_deref().unwrap_or("S0");
        assert!(
            prev.starts_with("S0"),
            "d1 continuity comes from leaves only"
        );
    }
    let leaves: Vec<_> = fake
        .inputs
        .lock()
        .unwrap()
        .iter()
        .filter(|i| i.depth == 0)
        .cloned()
        .collect();
    assert!(leaves[1..].iter().all(|i| i
        .previous_context
        .as_deref()
        .is_some_and(|p| p.contains("S0 call"))));
    assert_eq!(r.passes.len(), fake.inputs.lock().unwrap().len());
}

#[tokio::test]
async fn incremental_depth_limits_the_cascade() {
    for (max_depth, want_deepest) in [(0, 0), (1, 1)] {
        let opts = EngineOptions {
            incremental_max_depth: max_depth,
            leaf_min_fanout: 2,
            ..small_options()
        };
        let (engine, conv) = engine_with(opts, 60, 100).await;
        let fake = Arc::new(Fake::default());
        for _ in 0..6 {
            compact(
                &engine,
                &fake,
                CompactParams {
                    force: true,
                    ..params(Mode::Incremental, 1_000)
                },
            )
            .await;
        }
        assert_eq!(
            check_invariants(&engine, conv).await,
            want_deepest,
            "incrementalMaxDepth {max_depth}"
        );
    }
}

#[tokio::test]
async fn the_hard_fanout_applies_only_under_pressure() {
    // Two leaves, leafMinFanout 3: a forced sweep under the threshold leaves them;
    // over the threshold the hard fanout (2) condenses them.
    let opts = EngineOptions {
        leaf_min_fanout: 3,
        fresh_tail_count: 2,
        ..small_options()
    };
    let (engine, conv) = engine_with(opts, 10, 100).await;
    let fake = Arc::new(Fake::default());
    let r = compact(
        &engine,
        &fake,
        CompactParams {
            force: true,
            ..params(Mode::Sweep, 1_000_000)
        },
    )
    .await;
    assert!(
        r.passes.iter().all(|p| p.kind == PassKind::Leaf),
        "{:?}",
        r.passes
    );
    assert_eq!(r.passes.len(), 2);
    let r = compact(
        &engine,
        &fake,
        CompactParams {
            force: true,
            ..params(Mode::Sweep, 100)
        },
    )
    .await;
    assert_eq!(r.passes.len(), 1);
    assert_eq!(
        (r.passes[0].kind, r.passes[0].depth),
        (PassKind::Condensed, 1)
    );
    check_invariants(&engine, conv).await;
}

#[tokio::test]
async fn until_under_stops_at_the_target_and_equality_still_compacts() {
    let (engine, conv) = engine_with(small_options(), 40, 100).await;
    let fake = Arc::new(Fake::default());
    let stored = engine.get_stats(conv).await.unwrap().context_tokens;
    let at = |target| CompactParams {
        target_tokens: Some(target),
        force: true,
        ..params(Mode::UntilUnder, 10_000)
    };
    let r = compact(&engine, &fake, at(stored + 1)).await;
    assert_eq!(
        (r.compacted, r.reason.as_str()),
        (false, "already under target")
    );
    let r = compact(&engine, &fake, at(stored)).await;
    assert!(r.compacted && r.ok, "equality compacts: {}", r.reason);
    assert_eq!(r.rounds, 1);
    assert!(r.tokens_after <= stored);
    // An unreachable target: rounds until no progress, then not ok and exhausted.
    let r = compact(&engine, &fake, at(1)).await;
    assert!(!r.ok && r.exhausted, "{r:?}");
    assert_eq!(r.reason, "could not reach target");
    check_invariants(&engine, conv).await;
}

#[tokio::test]
async fn a_failing_summarizer_stops_the_sweep_without_a_partial_summary() {
    let (engine, conv) = engine_with(small_options(), 60, 100).await;
    let fake = Arc::new(Fake {
        fail_at: Some((3, ErrorCode::LlmAuth)),
        ..Fake::default()
    });
    let r = compact(&engine, &fake, params(Mode::Sweep, 1_000)).await;
    assert!(!r.ok);
    assert_eq!(r.error_code.as_deref(), Some("LCM_LLM_AUTH"));
    assert!(r.reason.contains("LCM_LLM_AUTH"), "{}", r.reason);
    assert_eq!(r.passes.len(), 2, "the two finished passes are kept");
    assert_eq!(engine.get_stats(conv).await.unwrap().summary_count, 2);
    assert_eq!(
        fake.inputs.lock().unwrap().len(),
        3,
        "no call after the failure"
    );
    check_invariants(&engine, conv).await;
}

#[tokio::test]
async fn cancel_stops_between_passes_and_abandons_the_call_in_flight() {
    let (engine, conv) = engine_with(small_options(), 60, 100).await;
    let fake = Arc::new(Fake {
        delay: Some(Duration::from_millis(40)),
        ..Fake::default()
    });
    let hooks = Hooks::default();
    let token = hooks.cancel.clone();
    let seen = Arc::new(AtomicUsize::new(0));
    let seen2 = seen.clone();
    let hooks = Hooks {
        on_progress: Some(Arc::new(move |p: &PassRecord| {
            if seen2.fetch_add(1, Ordering::SeqCst) == 1 {
                token.cancel();
            }
            assert!(p.summary_id.starts_with("sum_"));
        })),
        ..hooks
    };
    let r = engine
        .compact_with(fake.clone(), params(Mode::Sweep, 1_000), hooks)
        .await
        .unwrap();
    assert!(r.ok && r.aborted && r.compacted);
    assert_eq!(r.reason, "aborted");
    assert_eq!(r.passes.len(), 2);
    assert_eq!(seen.load(Ordering::SeqCst), 2);
    // cancel(sessionId) while a call is in flight: nothing of that pass is written.
    let fake = Arc::new(Fake {
        delay: Some(Duration::from_millis(300)),
        ..Fake::default()
    });
    let fut = engine.compact_with(fake.clone(), params(Mode::Sweep, 1_000), Hooks::default());
    let task = tokio::spawn(fut);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(engine.cancel_compaction("s1"), 1);
    let r = task.await.unwrap().unwrap();
    assert!(r.aborted && !r.compacted, "{r:?}");
    assert_eq!(engine.get_stats(conv).await.unwrap().summary_count, 2);
    check_invariants(&engine, conv).await;
}

#[tokio::test]
async fn bounds_stop_a_sweep_cleanly() {
    let opts = EngineOptions {
        max_sweep_iterations: 3,
        ..small_options()
    };
    let (engine, conv) = engine_with(opts, 60, 100).await;
    let fake = Arc::new(Fake::default());
    let r = compact(&engine, &fake, params(Mode::Sweep, 1_000)).await;
    assert_eq!(r.passes.len(), 3);
    assert!(r.reason.starts_with("iteration cap"), "{}", r.reason);
    check_invariants(&engine, conv).await;
    let opts = EngineOptions {
        sweep_deadline_ms: 50,
        ..small_options()
    };
    let (engine, conv) = engine_with(opts, 60, 100).await;
    let fake = Arc::new(Fake {
        delay: Some(Duration::from_millis(30)),
        ..Fake::default()
    });
    let r = compact(&engine, &fake, params(Mode::Sweep, 1_000)).await;
    assert!(r.reason.starts_with("deadline"), "{}", r.reason);
    assert!((1..=3).contains(&r.passes.len()), "{}", r.passes.len());
    check_invariants(&engine, conv).await;
}

#[tokio::test]
async fn one_conversation_compacts_serially_others_in_parallel() {
    let engine = Engine::open(small_options()).await.unwrap();
    let c1 = ingest(&engine, "s1", 0, 40, 100).await;
    let c2 = ingest(&engine, "s2", 0, 40, 100).await;
    let fake = Arc::new(Fake {
        delay: Some(Duration::from_millis(20)),
        ..Fake::default()
    });
    let a = engine.compact_with(fake.clone(), params(Mode::Sweep, 1_000), Hooks::default());
    let b = engine.compact_with(fake.clone(), params(Mode::Sweep, 1_000), Hooks::default());
    let (ra, rb) = tokio::join!(a, b);
    assert_eq!(
        fake.max_in_flight.load(Ordering::SeqCst),
        1,
        "same conversation never overlaps"
    );
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert!(
        ra.compacted != rb.compacted,
        "whichever got the lock second found the work done"
    );
    let stats = engine.get_stats(c1).await.unwrap();
    assert_eq!(
        stats.summary_count as usize,
        ra.passes.len() + rb.passes.len()
    );
    check_invariants(&engine, c1).await;
    let fake = Arc::new(Fake {
        delay: Some(Duration::from_millis(20)),
        ..Fake::default()
    });
    ingest(&engine, "s1", 40, 40, 100).await;
    let a = engine.compact_with(fake.clone(), params(Mode::Sweep, 1_000), Hooks::default());
    let b = engine.compact_with(
        fake.clone(),
        CompactParams {
            session_id: "s2".into(),
            ..params(Mode::Sweep, 1_000)
        },
        Hooks::default(),
    );
    let _ = tokio::join!(a, b);
    assert_eq!(
        fake.max_in_flight.load(Ordering::SeqCst),
        2,
        "two conversations overlap"
    );
    check_invariants(&engine, c1).await;
    check_invariants(&engine, c2).await;
}

#[tokio::test]
async fn ingest_during_a_summarizer_call_is_not_blocked_and_stale_sources_replan() {
    let engine = Arc::new(Engine::open(small_options()).await.unwrap());
    let conv = ingest(&engine, "s1", 0, 30, 100).await;
    let fake = Arc::new(Fake {
        delay: Some(Duration::from_millis(30)),
        ..Fake::default()
    });
    // On the first call, append messages (ingest proceeds while the call runs) and
    // summarize the first two messages behind compaction's back, making its chunk stale.
    let e2 = engine.clone();
    *fake.on_call.lock().unwrap() = Some(Box::new(move |n| {
        if n == 1 {
            let e = e2.clone();
            let append = e.ingest_batch(IngestBatchParams {
                session_id: "s1".into(),
                session_key: None,
                messages: vec![json!({"role":"user","content":"late arrival"})],
                entry_ids: None,
                is_heartbeat: false,
            });
            let steal = e.insert_summary(crate::engine::InsertSummaryParams {
                conversation_id: 1,
                content: "taken".into(),
                message_ids: Some(vec![1, 2]),
                summary_ids: None,
                model: None,
            });
            tokio::spawn(async move {
                append.await.unwrap();
                steal.await.unwrap();
            });
        }
    }));
    let r = engine
        .compact_with(fake.clone(), params(Mode::Sweep, 1_000), Hooks::default())
        .await
        .unwrap();
    assert!(r.ok && r.compacted, "{}", r.reason);
    assert!(
        fake.inputs.lock().unwrap()[1].previous_context.as_deref() == Some("taken"),
        "re-planned after the stale write"
    );
    assert_eq!(engine.get_stats(conv).await.unwrap().message_count, 31);
    check_invariants(&engine, conv).await;
}

#[tokio::test]
async fn an_oversized_message_is_summarized_alone() {
    let engine = Engine::open(small_options()).await.unwrap();
    ingest(&engine, "s1", 0, 1, 2_000).await;
    let conv = ingest(&engine, "s1", 1, 8, 100).await;
    let fake = Arc::new(Fake::default());
    let r = compact(
        &engine,
        &fake,
        CompactParams {
            force: true,
            ..params(Mode::Incremental, 100_000)
        },
    )
    .await;
    assert_eq!(r.passes[0].source_count, 1);
    check_invariants(&engine, conv).await;
}

/// A short message followed by an oversized one is a leaf chunk of its own, which
/// no summary shrinks; the sweep goes on past it instead of leaving everything
/// after it raw. A full chunk that does not shrink still ends the leaf phase.
#[tokio::test]
async fn a_lone_short_chunk_that_cannot_shrink_does_not_end_the_sweep() {
    let engine = Engine::open(small_options()).await.unwrap();
    ingest(&engine, "s1", 0, 8, 100).await;
    append(
        &engine,
        "s1",
        vec![json!({"role": "assistant", "content": "ok"})],
    )
    .await;
    ingest(&engine, "s1", 9, 1, 2_000).await;
    let conv = ingest(&engine, "s1", 10, 16, 100).await;
    let fake = Arc::new(Fake::default());
    let sweep = CompactParams {
        force: true,
        ..params(Mode::Sweep, 100_000)
    };
    let r = compact(&engine, &fake, sweep.clone()).await;
    let leaves: Vec<_> = r
        .passes
        .iter()
        .filter(|p| p.kind == PassKind::Leaf)
        .collect();
    let lone = leaves
        .iter()
        .position(|p| p.source_count == 1 && p.context_tokens_after >= p.context_tokens_before)
        .expect("the short message is summarized alone and does not shrink");
    assert!(
        leaves.len() > lone + 2,
        "the sweep stopped at it: {:?}",
        r.reason
    );
    let items = engine.get_context_items(conv).await.unwrap();
    let raw = items
        .iter()
        .filter(|i| i.item_type == crate::store::messages::ContextItemType::Message)
        .count();
    assert_eq!(raw, 4, "only the fresh tail stays raw ({})", r.reason);
    check_invariants(&engine, conv).await;

    // A summarizer whose every summary outgrows its (full) chunk ends it at once.
    let (engine, conv) = engine_with(small_options(), 40, 100).await;
    let bloated = Arc::new(Fake {
        pad: 2_000,
        ..Fake::default()
    });
    let r = compact(&engine, &bloated, sweep).await;
    assert_eq!(r.passes.len(), 1, "{:?}", r.reason);
    check_invariants(&engine, conv).await;
}

#[tokio::test]
async fn after_turn_ingests_the_new_messages_then_sweeps_over_the_threshold() {
    let engine = Engine::open(small_options()).await.unwrap();
    let fake = Arc::new(Fake::default());
    let all: Vec<serde_json::Value> = (0..40)
        .map(|i| json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": format!("turn text {i} ") + &"x ".repeat(150)}))
        .collect();
    let turn = |pre: usize, budget: i64| AfterTurnParams {
        session_id: "s1".into(),
        session_key: None,
        messages: all[..pre + 10].to_vec(),
        pre_prompt_message_count: pre,
        token_budget: Some(budget),
        runtime_context: None,
        runtime_settings: None,
        current_token_count: None,
        entry_ids: None,
        is_heartbeat: false,
        custom_instructions: None,
        overrides: None,
    };
    let r = engine
        .after_turn_with(fake.clone(), turn(0, 1_000_000), Hooks::default())
        .await
        .unwrap();
    assert_eq!(r.ingest.ingested_count, 10);
    assert_eq!(
        (r.compaction.compacted, r.compaction.reason.as_str()),
        (false, "below threshold")
    );
    let r = engine
        .after_turn_with(fake.clone(), turn(10, 1_000), Hooks::default())
        .await
        .unwrap();
    assert_eq!(r.ingest.ingested_count, 10);
    assert!(r.compaction.compacted);
    let conv = r.ingest.conversation_id.unwrap();
    assert_eq!(engine.get_stats(conv).await.unwrap().message_count, 20);
    check_invariants(&engine, conv).await;
}

#[tokio::test]
async fn integrity_check_reports_ok() {
    let (engine, _) = engine_with(small_options(), 2, 10).await;
    assert_eq!(engine.integrity_check().await.unwrap(), ["ok"]);
}

#[tokio::test]
async fn the_pressure_phase_stops_once_under_the_target() {
    // Six leaves at leafMinFanout 7: the normal phase condenses nothing; under
    // pressure the hard fanout condenses one pair at a time and stops as soon as the
    // context is at or under the threshold.
    let opts = EngineOptions {
        leaf_min_fanout: 7,
        fresh_tail_count: 2,
        leaf_chunk_tokens: 200,
        // Only the total puts pressure on here.
        summary_prefix_target_tokens: Some(1_000_000),
        ..small_options()
    };
    let (engine, conv) = engine_with(opts, 14, 100).await;
    let fake = Arc::new(Fake::default());
    let r = compact(
        &engine,
        &fake,
        CompactParams {
            force: true,
            ..params(Mode::Sweep, 1_000_000)
        },
    )
    .await;
    assert_eq!(
        r.passes.len(),
        6,
        "six leaves, no condensation under the threshold"
    );
    let items = engine.get_context_items(conv).await.unwrap();
    let now: i64 = items.iter().map(|i| i.token_count).sum();
    // A threshold just under the current size: one hard-fanout pass is enough.
    let budget = (now - 1) * 4 / 3;
    let r = compact(&engine, &fake, params(Mode::Sweep, budget)).await;
    assert_eq!(r.passes.len(), 1, "{:?}", r.passes);
    assert_eq!(r.passes[0].kind, PassKind::Condensed);
    assert!(
        (2..6).contains(&r.passes[0].source_count),
        "hard fanout 2, chunk cap"
    );
    assert!(r.tokens_after <= r.threshold);
    check_invariants(&engine, conv).await;
}

#[tokio::test]
async fn closing_the_engine_abandons_a_running_compaction() {
    let (engine, _) = engine_with(small_options(), 40, 100).await;
    let fake = Arc::new(Fake {
        delay: Some(Duration::from_secs(30)),
        ..Fake::default()
    });
    let task = tokio::spawn(engine.compact_with(
        fake.clone(),
        params(Mode::Sweep, 1_000),
        Hooks::default(),
    ));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = std::time::Instant::now();
    engine.close().await.unwrap();
    let r = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the compaction ends without waiting for the summarizer")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    match r {
        Ok(r) => assert!(r.aborted && !r.compacted, "{r:?}"),
        Err(e) => assert_eq!(e.code, ErrorCode::Closed),
    }
}

#[tokio::test]
async fn after_turn_accepts_entry_ids_for_the_whole_transcript() {
    let engine = Engine::open(small_options()).await.unwrap();
    let fake = Arc::new(Fake::default());
    let msgs: Vec<serde_json::Value> = (0..4)
        .map(|i| json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": format!("m{i}")}))
        .collect();
    let turn = |n: usize, pre: usize, ids: Vec<Option<String>>| AfterTurnParams {
        session_id: "s1".into(),
        session_key: None,
        messages: msgs[..n].to_vec(),
        pre_prompt_message_count: pre,
        token_budget: Some(1_000_000),
        runtime_context: None,
        runtime_settings: None,
        current_token_count: None,
        entry_ids: Some(ids),
        is_heartbeat: false,
        custom_instructions: None,
        overrides: None,
    };
    let id = |i: usize| Some(format!("e{i}"));
    let r = engine
        .after_turn_with(
            fake.clone(),
            turn(2, 0, vec![id(0), id(1)]),
            Hooks::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.ingest.ingested_count, 2);
    // Whole-transcript ids are sliced like the messages; new-only ids are taken as is.
    let r = engine
        .after_turn_with(
            fake.clone(),
            turn(3, 2, vec![id(0), id(1), id(2)]),
            Hooks::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.ingest.ingested_count, 1);
    let r = engine
        .after_turn_with(fake.clone(), turn(4, 3, vec![id(3)]), Hooks::default())
        .await
        .unwrap();
    assert_eq!(r.ingest.ingested_count, 1);
    // A replayed turn (same entry ids) is not stored twice.
    let r = engine
        .after_turn_with(
            fake.clone(),
            turn(4, 2, vec![id(0), id(1), id(2), id(3)]),
            Hooks::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.ingest.ingested_count, 0);
    assert_eq!(r.compaction.reason, "below threshold");
}

#[tokio::test]
async fn batched_leaf_passes_chain_tokens_feed_previous_context_and_keep_invariants() {
    // A fast summarizer: leaf passes are queued and written in batches.
    let (engine, conv) = engine_with(small_options(), 300, 100).await;
    let fake = Arc::new(Fake::default());
    let before = engine.get_stats(conv).await.unwrap().context_tokens;
    let r = compact(&engine, &fake, params(Mode::Sweep, 1_000)).await;
    assert!(r.ok && r.compacted, "{}", r.reason);
    let leaves: Vec<&PassRecord> = r
        .passes
        .iter()
        .filter(|p| p.kind == crate::compaction::PassKind::Leaf)
        .collect();
    assert!(
        leaves.len() > crate::compaction::run::BATCH_MAX,
        "more than one batch: {}",
        leaves.len()
    );
    assert_eq!(r.passes[0].context_tokens_before, before);
    for w in r.passes.windows(2) {
        assert_eq!(w[1].context_tokens_before, w[0].context_tokens_after);
        assert!(w[0].context_tokens_after < w[0].context_tokens_before);
    }
    let stats = engine.get_stats(conv).await.unwrap();
    assert_eq!(
        r.passes.last().unwrap().context_tokens_after,
        stats.context_tokens
    );
    assert_eq!(r.tokens_after, stats.context_tokens);
    assert_eq!(stats.summary_count as usize, r.passes.len());
    // Each leaf after the first saw the previous leaf's text (queued or written).
    let content: HashMap<String, String> = engine
        .get_summaries(conv)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.summary.summary_id.clone(), s.summary.content.clone()))
        .collect();
    let inputs = fake.inputs.lock().unwrap().clone();
    let leaf_inputs: Vec<&SummarizeInput> = inputs.iter().filter(|i| i.depth == 0).collect();
    assert_eq!(leaf_inputs.len(), leaves.len());
    for (i, input) in leaf_inputs.iter().enumerate().skip(1) {
        let prev = input.previous_context.as_deref().unwrap_or_default();
        let want = content[&leaves[i - 1].summary_id].trim();
        assert!(prev.ends_with(want), "leaf {i} previous_context");
    }
    check_invariants(&engine, conv).await;
}

/// Appends `turns` tool-using turns: a user request, an assistant reply with a tool
/// call, and the tool's result (its text is only in the parts, not the reply).
async fn ingest_tool_turns(engine: &Engine, turns: usize) -> i64 {
    let t0 = 1_771_313_820_000i64;
    let filler = "word ".repeat(60);
    let messages = (0..turns)
        .flat_map(|i| {
            let at = |k: i64| t0 + (i as i64 * 3 + k) * 60_000;
            [
                json!({"role": "user", "content": format!("turn {i}: list the files {filler}"), "timestamp": at(0)}),
                json!({"role": "assistant", "timestamp": at(1), "content": [
                    {"type": "text", "text": format!("Listing them ({i}).")},
                    {"type": "toolCall", "id": format!("c{i}"), "name": "exec", "arguments": {"cmd": format!("ls /tmp/{i}")}}
                ]}),
                json!({"role": "toolResult", "toolCallId": format!("c{i}"), "toolName": "exec", "timestamp": at(2),
                       "content": [{"type": "text", "text": format!("file_{i}.txt {filler}")}]}),
            ]
        })
        .collect();
    append(engine, "s1", messages).await
}

/// The doctor drift: compaction, rewrite and doctor must give the summarizer the
/// same source text for the same summary (leaves with tool calls and results, and
/// condensed nodes), byte for byte.
#[tokio::test]
async fn compaction_rewrite_and_doctor_build_the_same_source_text() {
    let engine = Engine::open(small_options()).await.unwrap();
    let conv = ingest_tool_turns(&engine, 30).await;
    let fake = Arc::new(Fake::default());
    let r = compact(&engine, &fake, params(Mode::Sweep, 1_000)).await;
    assert!(r.ok && r.compacted, "{}", r.reason);
    let inputs = fake.inputs.lock().unwrap().clone();
    let summaries = engine.get_summaries(conv).await.unwrap();
    let (mut leaves, mut condensed, mut tool_calls, mut tool_results) = (0, 0, 0, 0);
    for s in summaries {
        let rec = s.summary.clone();
        // The fake's text names its call: "S{depth} call {n}: …".
        let n: usize = rec
            .content
            .split(" call ")
            .nth(1)
            .unwrap()
            .split(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let sent = inputs[n - 1].clone();
        let planned = crate::rewrite::plan::PlannedSummary {
            summary_id: rec.summary_id.clone(),
            kind: rec.kind,
            depth: rec.depth,
            child_count: 0,
            token_count: rec.token_count,
            earliest_at: None,
            latest_at: None,
            created_at: rec.created_at.clone(),
        };
        let (rewrite, doctor) = engine
            .store()
            .read(move |c| {
                let zone = crate::timeformat::Zone::utc();
                let overlay = HashMap::new();
                let tags = crate::config::EngineOptions::default().strip_injected_context_tags;
                let rw = crate::rewrite::source::rebuild(
                    c, &planned, &zone, true, &tags, &overlay, None,
                )?;
                let dr = crate::doctor::resummarize::input(
                    c,
                    &rec.summary_id,
                    conv,
                    rec.depth,
                    &zone,
                    &tags,
                )?;
                Ok((rw.input, dr))
            })
            .await
            .unwrap();
        assert_eq!(
            rewrite.source_text, sent.source_text,
            "rewrite of {}",
            s.summary.summary_id
        );
        assert_eq!(
            doctor.source_text, sent.source_text,
            "doctor of {}",
            s.summary.summary_id
        );
        for built in [&rewrite, &doctor] {
            assert_eq!(built.child_count, sent.child_count);
            assert_eq!(built.time_range, sent.time_range);
            assert_eq!(built.depth, sent.depth);
        }
        if rec.kind == crate::store::summaries::SummaryKind::Leaf {
            leaves += 1;
            tool_calls += sent.source_text.matches("[tool call exec]").count();
            tool_results += sent.source_text.matches("[tool]\nfile_").count();
        } else {
            condensed += 1;
        }
    }
    assert!(
        leaves >= 2 && condensed >= 1,
        "{leaves} leaves, {condensed} condensed"
    );
    assert!(
        tool_calls > 0 && tool_results > 0,
        "{tool_calls} calls, {tool_results} results"
    );
}

mod pinned;

/// A conversation's stored messages, in order.
async fn message_records(engine: &Engine, conv: i64) -> Vec<crate::store::messages::MessageRecord> {
    engine
        .store()
        .read(move |c| {
            let ids = crate::store::messages::ids_in_order(c, conv)?;
            crate::store::messages::records_by_ids(c, &ids)
        })
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_mid_sweep_leaves_no_write_running_and_no_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.db").to_string_lossy().into_owned();
    let opts = EngineOptions {
        db_path: Some(path.clone()),
        ..small_options()
    };
    let engine = Arc::new(Engine::open(opts).await.unwrap());
    let conv = ingest(&engine, "s1", 0, 800, 100).await;
    let fake = Arc::new(Fake::default());
    // Once two full batches of leaves have committed (batches are written in the
    // background, so wait for the second one to land), the next write job (the third
    // batch) fails as a bug would: the run returns an error with gaps left in the
    // ordinals by the batches that committed.
    let e2 = engine.clone();
    *fake.on_call.lock().unwrap() = Some(Box::new(move |n| {
        if n == 140 {
            let c = rusqlite::Connection::open(&path).unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while c
                .query_row("SELECT COUNT(*) FROM summaries", [], |r| r.get::<_, i64>(0))
                .unwrap()
                < 128
            {
                assert!(std::time::Instant::now() < deadline, "batch 2 never landed");
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            e2.store()
                .debug_panic_next_job(crate::store::guard::JobKind::Write);
        }
    }));
    let err = engine
        .compact_with(fake.clone(), params(Mode::Sweep, 1_000), Hooks::default())
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Internal, "{err}");
    let (marked, summaries): (i64, i64) = engine
        .store()
        .read(|c| {
            Ok(c.query_row(
                "SELECT (SELECT COUNT(*) FROM lcm_context_gaps), (SELECT COUNT(*) FROM summaries)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(
        marked, 0,
        "the gaps were closed before the error was returned"
    );
    assert!(
        (128..192).contains(&summaries),
        "two batches committed, the failing one wrote nothing: {summaries}"
    );
    check_invariants(&engine, conv).await;
}

/// `status` reports the session's context, summaries per depth, the last
/// compaction of this engine and whether compaction is due, on a file database
/// (sizes from `dbstat`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reports_the_session_and_its_last_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.db");
    let opts = EngineOptions {
        db_path: Some(path.to_string_lossy().into_owned()),
        ..small_options()
    };
    // The engine's own summarizer path (metered), as in production.
    let summarizer = Arc::new(super::doctor::Fake::default());
    let engine = Engine::open_with(opts, Some(summarizer.clone()))
        .await
        .unwrap();
    let conv = ingest(&engine, "s1", 0, 40, 50).await;
    let ask = |budget| crate::status::StatusParams {
        session_id: Some("s1".into()),
        token_budget: Some(budget),
        ..Default::default()
    };
    let before = engine.status(ask(1_000)).await.unwrap();
    let s = before.session.as_ref().unwrap();
    assert_eq!(s.conversation_id, Some(conv));
    assert_eq!((s.messages, s.context_items), (40, 40));
    assert_eq!(s.threshold, Some(750));
    assert!(s.context_tokens > 750 && s.pending.compaction_due);
    assert!(s.summaries_by_depth.is_empty() && s.last_compaction.is_none());
    assert_eq!(
        (before.conversations.active, before.conversations.archived),
        (1, 0)
    );
    let tables = before.database.largest_tables.as_ref().unwrap();
    assert_eq!(tables.len(), crate::status::LARGEST_TABLES);
    assert!(tables.windows(2).all(|w| w[0].bytes >= w[1].bytes));
    assert!(tables.iter().any(|t| t.name == "messages"), "{tables:?}");
    assert!(before.database.file_bytes > 0);
    assert_eq!(before.database.path, path.to_string_lossy());

    let r = engine
        .compact(params(Mode::Sweep, 1_000), Hooks::default())
        .await
        .unwrap();
    assert!(r.compacted, "{r:?}");
    let after = engine.status(ask(1_000)).await.unwrap();
    let s = after.session.unwrap();
    let last = s.last_compaction.unwrap();
    assert_eq!(
        (last.tokens_before, last.tokens_after),
        (r.tokens_before, r.tokens_after)
    );
    assert_eq!(last.passes, r.passes.len() as i64);
    let requests = summarizer.seen.lock().unwrap().len() as i64;
    assert!(requests > 0);
    assert_eq!(last.summarizer_calls, requests);
    assert_eq!(r.summarizer.calls, requests);
    let summaries = engine.get_summaries(conv).await.unwrap();
    assert_eq!(
        s.summaries_by_depth.iter().map(|d| d.count).sum::<i64>(),
        summaries.len() as i64
    );
    assert_eq!(s.context_tokens, r.tokens_after);
    assert!(s.newest_summary_at.is_some());
    assert!(!s.pending.compaction_due && !s.pending.context_gap);

    // No session named: the database only; an unknown session: nothing stored.
    let db_only = engine.status(Default::default()).await.unwrap();
    assert!(db_only.session.is_none());
    let unknown = engine
        .status(crate::status::StatusParams {
            session_key: Some("nobody".into()),
            tables: Some(false),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(unknown.session.unwrap().conversation_id, None);
    assert!(unknown.database.largest_tables.is_none());
    let bad = engine.status(ask(0)).await.unwrap_err();
    assert_eq!(bad.code, ErrorCode::InvalidInput);
}

/// The deepest summary depth in the context list after a forced sweep of 120
/// messages under a large budget, with `max_depth` and a summary-prefix target.
async fn deepest_after_sweep(max_depth: i64, prefix_target: i64) -> (i64, CompactResult) {
    let opts = EngineOptions {
        incremental_max_depth: max_depth,
        summary_prefix_target_tokens: Some(prefix_target),
        ..small_options()
    };
    let (engine, conv) = engine_with(opts, 120, 100).await;
    let fake = Arc::new(Fake::default());
    let r = compact(
        &engine,
        &fake,
        CompactParams {
            force: true,
            ..params(Mode::Sweep, 1_000_000)
        },
    )
    .await;
    (check_invariants(&engine, conv).await, r)
}

#[tokio::test]
async fn sweep_max_depth_bounds_full_sweeps_until_the_summary_prefix_is_too_heavy() {
    // Under a large budget only the summary prefix puts pressure on. A target of 1
    // keeps it on: sweepMaxDepth bounds the normal-fanout loop (0: none of it, 1:
    // leaves into depth 1), the hard-fanout loop then goes as deep as it must.
    let (d0, r0) = deepest_after_sweep(0, 1_000_000).await;
    assert_eq!(d0, 0, "sweepMaxDepth 0, no prefix pressure: leaves only");
    assert!(r0.passes.iter().all(|p| p.kind == PassKind::Leaf));
    let (d1, r1) = deepest_after_sweep(1, 1_000_000).await;
    assert_eq!(d1, 0, "no pressure at all: no condensation");
    assert_eq!(r1.passes.len(), r0.passes.len());
    // A prefix target between one and all the leaves: condensation into depth 1
    // at the normal fanout relieves it; nothing deeper is needed.
    let leaves: i64 = r0.passes.iter().map(|p| p.tokens_out).sum();
    let (d, r) = deepest_after_sweep(1, leaves / 2).await;
    assert_eq!(
        d,
        1,
        "{:?}",
        r.passes.iter().map(|p| p.depth).collect::<Vec<_>>()
    );
    let (d, _) = deepest_after_sweep(-1, 1).await;
    assert!(
        d >= 2,
        "unlimited depth under constant pressure goes deep, got {d}"
    );
    let (d, r) = deepest_after_sweep(0, 1).await;
    assert!(
        d >= 1,
        "pressure condenses beyond sweepMaxDepth 0 at the hard fanout"
    );
    assert!(r
        .passes
        .iter()
        .filter(|p| p.kind == PassKind::Condensed)
        .all(|p| p.source_count >= 2));
}

#[tokio::test]
async fn until_under_is_bounded_by_its_own_deadline() {
    let opts = EngineOptions {
        compact_until_under_deadline_ms: 40,
        ..small_options()
    };
    let (engine, _) = engine_with(opts, 120, 100).await;
    let fake = Arc::new(Fake {
        delay: Some(Duration::from_millis(30)),
        ..Fake::default()
    });
    let r = compact(&engine, &fake, params(Mode::UntilUnder, 1_000)).await;
    assert_eq!(r.reason, "deadline reached (compactUntilUnderDeadlineMs)");
    assert!(r.passes.len() <= 3, "{}", r.passes.len());
    // A sweep call is bounded by sweepDeadlineMs, which this run leaves at 300 s.
    let r = compact(
        &engine,
        &fake,
        CompactParams {
            force: true,
            ..params(Mode::Sweep, 1_000)
        },
    )
    .await;
    assert_ne!(r.reason, "deadline reached (compactUntilUnderDeadlineMs)");
}

#[tokio::test]
async fn per_call_overrides_replace_the_threshold_tail_and_chunk_for_that_call_only() {
    let (engine, conv) = engine_with(small_options(), 40, 50).await;
    let at = |overrides| EvaluateParams {
        session_id: "s1".into(),
        session_key: None,
        token_budget: 10_000,
        current_token_count: None,
        overrides,
    };
    let plain = engine.evaluate(at(None)).await.unwrap();
    assert_eq!(plain.threshold, 7_500);
    let low = PolicyOverrides {
        context_threshold: Some(0.1),
        ..Default::default()
    };
    let e = engine.evaluate(at(Some(low.clone()))).await.unwrap();
    assert_eq!(e.threshold, 1_000);
    assert!(e.should_compact && !plain.should_compact);
    // A bigger fresh tail and chunk for one compaction call: the tail stays raw.
    let fake = Arc::new(Fake::default());
    let r = compact(
        &engine,
        &fake,
        CompactParams {
            overrides: Some(PolicyOverrides {
                fresh_tail_count: Some(30),
                ..low
            }),
            ..params(Mode::Sweep, 10_000)
        },
    )
    .await;
    assert!(r.compacted && r.threshold == 1_000, "{r:?}");
    let raw = engine
        .get_context_items(conv)
        .await
        .unwrap()
        .iter()
        .filter(|i| i.message_id.is_some())
        .count();
    assert!(raw >= 30, "the override's tail of 30 stayed raw, got {raw}");
    // The engine's own options are untouched: the next call without overrides is
    // under its threshold.
    assert!(!engine.evaluate(at(None)).await.unwrap().should_compact);
    let bad = engine
        .evaluate(at(Some(PolicyOverrides {
            context_threshold: Some(1.5),
            ..Default::default()
        })))
        .await
        .unwrap_err();
    assert_eq!(bad.code, ErrorCode::InvalidInput);
    assert!(
        bad.message.contains("overrides: contextThreshold"),
        "{}",
        bad.message
    );
}
