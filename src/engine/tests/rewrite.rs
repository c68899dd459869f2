use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::json;

use super::ingest_messages;
use crate::config::EngineOptions;
use crate::engine::{Engine, InsertSummaryParams};
use crate::error::ErrorCode;
use crate::rewrite::*;
use crate::summarize::{Summarizer, SummaryRequest, SummaryResponse};

/// Answers `R<depth>-<hash of the source>` (deterministic, short) and records
/// every request; fails with LCM_LLM_AUTH at `fail_depth`.
#[derive(Default)]
struct Echo {
    seen: Mutex<Vec<SummaryRequest>>,
    fail_depth: Option<i64>,
}

fn fnv(s: &str) -> u32 {
    s.bytes().fold(0x811c9dc5u32, |h, b| {
        (h ^ b as u32).wrapping_mul(0x01000193)
    })
}

#[async_trait]
impl Summarizer for Echo {
    async fn summarize(&self, req: SummaryRequest) -> crate::error::Result<SummaryResponse> {
        self.seen.lock().unwrap().push(req.clone());
        if Some(req.depth) == self.fail_depth {
            return Err(crate::error::LcmError::new(
                ErrorCode::LlmAuth,
                "401 from the provider",
            ));
        }
        // Later requests of a depth answer later, so concurrency reorders completion.
        let delay = (fnv(&req.source_text) % 7) as u64;
        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
        Ok(SummaryResponse {
            content: format!("R{}-{:08x} rewritten", req.depth, fnv(&req.source_text)),
            model: "echo-1".into(),
        })
    }

    fn name(&self) -> &str {
        "echo"
    }
}

struct Fixture {
    engine: Engine,
    echo: Arc<Echo>,
    conv: i64,
    leaves: Vec<String>,
    d1: Vec<String>,
    d2: String,
}

async fn fixture(fail_depth: Option<i64>) -> Fixture {
    let echo = Arc::new(Echo {
        fail_depth,
        ..Echo::default()
    });
    let opts = EngineOptions {
        db_path: Some(":memory:".into()),
        prompt_dir: Some("/nonexistent/lcm-rewrite-test".into()),
        ..EngineOptions::default()
    };
    let engine = Engine::open_with(opts, Some(echo.clone() as Arc<dyn Summarizer>))
        .await
        .unwrap();
    let t0 = 1_771_342_620_000i64; // 2026-02-17 15:37 UTC
    let messages: Vec<serde_json::Value> = (0..12)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"role": role, "content": format!("message {i} about the garden shed plan"), "timestamp": t0 + i * 600_000})
        })
        .collect();
    let (conv, ids) = ingest_messages(&engine, "s", messages).await;
    let mut leaves = Vec::new();
    for k in 0..4 {
        let id = engine
            .insert_summary(InsertSummaryParams {
                conversation_id: conv,
                content: format!("old leaf {k}"),
                message_ids: Some(ids[k * 2..k * 2 + 2].to_vec()),
                summary_ids: None,
                model: Some("old-model".into()),
            })
            .await
            .unwrap();
        leaves.push(id);
    }
    let mut d1 = Vec::new();
    for pair in leaves.chunks(2) {
        let id = engine
            .insert_summary(InsertSummaryParams {
                conversation_id: conv,
                content: format!("old d1 over {}", pair.join("+")),
                message_ids: None,
                summary_ids: Some(pair.to_vec()),
                model: Some("old-model".into()),
            })
            .await
            .unwrap();
        d1.push(id);
    }
    let d2 = engine
        .insert_summary(InsertSummaryParams {
            conversation_id: conv,
            content: "old d2".into(),
            message_ids: None,
            summary_ids: Some(d1.clone()),
            model: Some("old-model".into()),
        })
        .await
        .unwrap();
    Fixture {
        engine,
        echo,
        conv,
        leaves,
        d1,
        d2,
    }
}

fn params(conv: i64, extra: serde_json::Value) -> RewriteParams {
    let mut v = json!({ "conversationId": conv });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    serde_json::from_value(v).unwrap()
}

fn plan_params(conv: i64, extra: serde_json::Value) -> PlanParams {
    let mut v = json!({ "conversationId": conv });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    serde_json::from_value(v).unwrap()
}

fn ids(p: &[PlannedSummary]) -> Vec<String> {
    p.iter().map(|s| s.summary_id.clone()).collect()
}

#[tokio::test]
async fn plans_are_bottom_up_and_chronological() {
    let f = fixture(None).await;
    let e = &f.engine;
    let all = e
        .plan_rewrite(plan_params(f.conv, json!({"all": true})))
        .await
        .unwrap();
    let mut expected = f.leaves.clone();
    expected.extend(f.d1.clone());
    expected.push(f.d2.clone());
    assert_eq!(ids(&all), expected);
    assert_eq!(all[0].child_count, 2);
    assert_eq!(all[6].child_count, 2);
    let d1 = e
        .plan_rewrite(plan_params(f.conv, json!({"depth": 1})))
        .await
        .unwrap();
    assert_eq!(ids(&d1), f.d1);
    let sub = e
        .plan_rewrite(plan_params(f.conv, json!({"summaryId": f.d1[1]})))
        .await
        .unwrap();
    assert_eq!(
        ids(&sub),
        [f.leaves[2].clone(), f.leaves[3].clone(), f.d1[1].clone()]
    );
    let single = e
        .plan_rewrite(plan_params(
            f.conv,
            json!({"summaryId": f.d2, "subtree": false}),
        ))
        .await
        .unwrap();
    assert_eq!(ids(&single), vec![f.d2.clone()]);
    let whole = e
        .plan_rewrite(plan_params(f.conv, json!({"summaryId": f.d2})))
        .await
        .unwrap();
    assert_eq!(ids(&whole), ids(&all));

    let err = e
        .plan_rewrite(plan_params(f.conv, json!({"summaryId": "sum_nope"})))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(
        err.message.contains("7 summaries (d0 ×4, d1 ×2, d2 ×1)"),
        "{}",
        err.message
    );
    assert!(err.message.contains(&f.d2), "{}", err.message);
    let err = e
        .plan_rewrite(plan_params(f.conv, json!({"depth": 5})))
        .await
        .unwrap_err();
    assert!(
        err.message.contains("no summaries at depth 5"),
        "{}",
        err.message
    );
    let err = e
        .plan_rewrite(plan_params(99, json!({"all": true})))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(
        err.message.contains(&format!("1 conversation: {}", f.conv)),
        "{}",
        err.message
    );
    for bad in [
        json!({}),
        json!({"all": true, "depth": 1}),
        json!({"depth": -1}),
        json!({"all": true, "subtree": true}),
    ] {
        let p: PlanParams = plan_params(f.conv, bad);
        assert_eq!(
            e.plan_rewrite(p).await.unwrap_err().code,
            ErrorCode::InvalidInput
        );
    }
}

async fn snapshot(e: &Engine) -> Vec<serde_json::Value> {
    e.store()
        .read(|c| {
            let mut out = Vec::new();
            for sql in [
                // descendant_token_count is derived from the sources' token counts: it
                // follows the rewrite (checked against its recomputation below).
                "SELECT summary_id, conversation_id, kind, depth, earliest_at, latest_at, descendant_count, source_message_token_count, created_at, file_ids, model FROM summaries ORDER BY summary_id",
                "SELECT summary_id, parent_summary_id, ordinal FROM summary_parents ORDER BY 1, 3",
                "SELECT summary_id, message_id, ordinal FROM summary_messages ORDER BY 1, 3",
                "SELECT conversation_id, ordinal, item_type, message_id, summary_id, created_at FROM context_items ORDER BY 1, 2",
            ] {
                let mut st = c.prepare(sql)?;
                let n = st.column_count();
                let rows = st.query_map([], |r| {
                    let mut row = Vec::new();
                    for i in 0..n {
                        let v: rusqlite::types::Value = r.get(i)?;
                        row.push(format!("{v:?}"));
                    }
                    Ok(json!(row))
                })?;
                for row in rows {
                    out.push(row?);
                }
            }
            Ok(out)
        })
        .await
        .unwrap()
}

async fn contents(e: &Engine) -> Vec<(String, String, i64)> {
    e.store()
        .read(|c| {
            let mut st = c.prepare(
                "SELECT summary_id, content, token_count FROM summaries ORDER BY summary_id",
            )?;
            let rows = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn dry_run_writes_nothing_and_apply_changes_only_content_and_tokens() {
    let f = fixture(None).await;
    let e = &f.engine;
    let before = snapshot(e).await;
    let before_contents = contents(e).await;
    let dry = e
        .rewrite(params(f.conv, json!({"all": true})), None)
        .await
        .unwrap();
    assert!(dry.dry_run && dry.error.is_none());
    assert_eq!(dry.entries.len(), 7);
    assert!(dry.entries.iter().all(|x| !x.applied));
    assert_eq!(contents(e).await, before_contents);

    let applied = e
        .rewrite(params(f.conv, json!({"all": true, "apply": true})), None)
        .await
        .unwrap();
    assert!(applied.entries.iter().all(|x| x.applied));
    // The dry run showed exactly what apply wrote (the cascade included).
    let new: Vec<&str> = applied
        .entries
        .iter()
        .map(|x| x.new_content.as_str())
        .collect();
    let shown: Vec<&str> = dry.entries.iter().map(|x| x.new_content.as_str()).collect();
    assert_eq!(new, shown);
    assert_eq!(snapshot(e).await, before);
    let after = contents(e).await;
    for (id, content, tokens) in &after {
        let entry = applied
            .entries
            .iter()
            .find(|x| &x.summary_id == id)
            .unwrap();
        assert_eq!(content, &entry.new_content);
        assert_eq!(*tokens, crate::tokens::estimate(content));
        assert_eq!(entry.new_tokens, *tokens);
        assert!(content.starts_with(&format!("R{}-", entry.depth)));
    }
    // Full-text rows follow the new text.
    let fts: i64 = e
        .store()
        .read(|c| {
            Ok(c.query_row(
                "SELECT COUNT(*) FROM summaries_fts WHERE summaries_fts MATCH 'rewritten'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(fts, 7);
    let stale: i64 = e
        .store()
        .read(|c| {
            Ok(c.query_row(
                "SELECT COUNT(*) FROM summaries s WHERE s.kind = 'condensed' AND s.descendant_token_count !=
                   (SELECT COALESCE(SUM(p.token_count + p.descendant_token_count), 0)
                    FROM summary_parents sp JOIN summaries p ON p.summary_id = sp.parent_summary_id
                    WHERE sp.summary_id = s.summary_id)",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(
        stale, 0,
        "descendant_token_count equals its recomputation after apply"
    );
    let stale: i64 = e
        .store()
        .read(|c| {
            Ok(c.query_row(
                "SELECT COUNT(*) FROM summaries_fts WHERE summaries_fts MATCH 'old'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(stale, 0);
    assert_eq!(
        applied.old_tokens,
        before_contents.iter().map(|c| c.2).sum::<i64>()
    );
    assert_eq!(applied.delta, applied.new_tokens - applied.old_tokens);
    let d = &applied.entries[0];
    assert!(d.diff.starts_with(&format!(
        "--- old/{}\n+++ new/{}\n",
        d.summary_id, d.summary_id
    )));
    assert_eq!(d.time_range.as_deref(), Some("2026-02-17 15:37–15:47 UTC"));
    assert_eq!(d.level, Some(crate::summarize::Level::Normal));
    assert_eq!(d.model.as_deref(), Some("echo-1"));
}

#[tokio::test]
async fn sources_are_rebuilt_fresh_with_headers_and_previous_context() {
    let f = fixture(None).await;
    let r = f
        .engine
        .rewrite(params(f.conv, json!({"all": true, "apply": true})), None)
        .await
        .unwrap();
    let seen = f.echo.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 7);
    // Leaf 0: timestamped messages, no previous context.
    assert!(seen[0]
        .source_text
        .starts_with("[2026-02-17 15:37 UTC] [user]\nmessage 0 about the garden shed plan\n\n[2026-02-17 15:47 UTC] [assistant]\nmessage 1"));
    assert!(!seen[0].prompt.contains("<previous_context>"));
    // Leaf 1 gets leaf 0's *new* text as previous context.
    assert!(seen[1].prompt.contains(&format!(
        "<previous_context>\n{}\n</previous_context>",
        r.entries[0].new_content
    )));
    // The d1 nodes read their rewritten children with range headers.
    let d1_req = seen.iter().find(|q| q.depth == 1).unwrap();
    assert!(d1_req.source_text.contains(&format!(
        "[2026-02-17 15:37–15:47 UTC]\n{}",
        r.entries[0].new_content
    )));
    assert!(!d1_req.source_text.contains("old leaf"));
    let d2_req = seen.iter().find(|q| q.depth == 2).unwrap();
    assert!(d2_req.source_text.contains(&r.entries[4].new_content));
    assert!(d2_req.prompt.contains("<conversation_to_condense>"));

    // Without timestamps: roles stay, times go.
    let g = fixture(None).await;
    g.engine
        .rewrite(
            params(g.conv, json!({"summaryId": g.d1[0], "timestamps": false})),
            None,
        )
        .await
        .unwrap();
    let seen = g.echo.seen.lock().unwrap().clone();
    assert!(seen[0].source_text.starts_with("[user]\nmessage 0"));
    assert!(!seen[0].source_text.contains("UTC"));
    let d1 = seen.iter().find(|q| q.depth == 1).unwrap();
    assert!(!d1.source_text.contains("UTC]"));
}

#[tokio::test]
async fn concurrency_does_not_change_the_result() {
    let mut results = Vec::new();
    for c in [1usize, 4, 16] {
        let f = fixture(None).await;
        let r = f
            .engine
            .rewrite(
                params(
                    f.conv,
                    json!({"all": true, "apply": true, "concurrency": c}),
                ),
                None,
            )
            .await
            .unwrap();
        let mut rows = contents(&f.engine).await;
        // Ids are random per fixture: compare by position in the plan.
        let order: Vec<String> = r.entries.iter().map(|x| x.summary_id.clone()).collect();
        rows.sort_by_key(|(id, _, _)| order.iter().position(|o| o == id));
        results.push(rows.into_iter().map(|(_, c, t)| (c, t)).collect::<Vec<_>>());
    }
    assert_eq!(results[0], results[1]);
    assert_eq!(results[0], results[2]);
    let f = fixture(None).await;
    let err = f
        .engine
        .rewrite(params(f.conv, json!({"all": true, "concurrency": 0})), None)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
}

#[tokio::test]
async fn a_summarizer_error_stops_the_run_keeping_earlier_rewrites() {
    let f = fixture(Some(1)).await;
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    let progress: run::ProgressFn = Arc::new(move |p: &RewriteProgress| {
        ev.lock()
            .unwrap()
            .push((p.completed, p.total, p.entry.summary_id.clone()));
    });
    let r = f
        .engine
        .rewrite(
            params(f.conv, json!({"all": true, "apply": true})),
            Some(progress),
        )
        .await
        .unwrap();
    let err = r.error.clone().unwrap();
    assert_eq!(err.code, ErrorCode::LlmAuth);
    assert_eq!(err.summary_id, f.d1[0]);
    assert_eq!(r.entries.len(), 4);
    assert_eq!(events.lock().unwrap().len(), 4);
    assert_eq!(events.lock().unwrap()[3], (4, 7, f.leaves[3].clone()));
    let rows = contents(&f.engine).await;
    for (id, content, _) in rows {
        if f.leaves.contains(&id) {
            assert!(content.starts_with("R0-"), "{content}");
        } else {
            assert!(content.starts_with("old"), "{content}");
        }
    }
    let e = run::report_error(&r).unwrap();
    assert_eq!(e.code, ErrorCode::LlmAuth);
    assert!(
        e.message.contains("the 4 rewrites applied before it stay"),
        "{}",
        e.message
    );
}

#[test]
fn rewrite_params_validate() {
    let p: RewriteParams =
        serde_json::from_value(json!({"conversationId": 1, "selector": {"depth": 2}})).unwrap();
    assert_eq!(p.selector().unwrap(), Selector::Depth(2));
    assert!(p.timestamps && !p.apply);
    assert_eq!(p.concurrency().unwrap(), DEFAULT_CONCURRENCY);
    let p: RewriteParams =
        serde_json::from_value(json!({"conversationId": 1, "selector": {"depth": 2}, "all": true}))
            .unwrap();
    assert!(p.selector().is_err());
    assert!(serde_json::from_value::<RewriteParams>(
        json!({"conversationId": 1, "all": true, "dryRun": true})
    )
    .is_err());
    let p: RewriteParams =
        serde_json::from_value(json!({"conversationId": 1, "all": true, "concurrency": 65}))
            .unwrap();
    assert!(p.concurrency().is_err());
}

/// Answers the first two calls, then hangs until dropped; counts calls and drops.
#[derive(Default)]
struct HangsAtThird {
    calls: std::sync::atomic::AtomicUsize,
    dropped: Arc<std::sync::atomic::AtomicBool>,
}

/// Sets its flag when the future holding it is dropped.
struct DropFlag(Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[async_trait]
impl crate::summarize::SummaryPipeline for HangsAtThird {
    async fn run(
        &self,
        input: crate::summarize::SummarizeInput,
    ) -> crate::error::Result<crate::summarize::SummarizeOutput> {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if n >= 3 {
            let _flag = DropFlag(self.dropped.clone());
            std::future::pending::<()>().await;
        }
        Ok(crate::summarize::SummarizeOutput {
            content: format!("new text {n} for d{}", input.depth),
            level: crate::summarize::Level::Normal,
            model: "hang-1".into(),
            tokens_in: 1,
            tokens_out: 1,
        })
    }
}

#[tokio::test]
async fn cancelling_mid_run_drops_the_call_in_flight_and_keeps_the_prefix() {
    let f = fixture(None).await;
    let e = &f.engine;
    let before = contents(e).await;
    let pipeline = Arc::new(HangsAtThird::default());
    let cancel = crate::compaction::CancelToken::new();
    let opts = RewriteOptions {
        conversation_id: f.conv,
        selector: Selector::All,
        apply: true,
        timestamps: true,
        concurrency: 4,
        cancel: cancel.clone(),
        strip_tags: Vec::new(),
    };
    let db = RewriteDb::Store(e.store().clone());
    let run = run::run(&db, pipeline.clone(), e.zone(), opts, None);
    let trip = async {
        while pipeline.calls.load(std::sync::atomic::Ordering::SeqCst) < 3 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        cancel.cancel();
    };
    let (report, ()) = tokio::join!(run, trip);
    let report = report.unwrap();
    let err = report
        .error
        .as_ref()
        .expect("the run reports the cancellation");
    assert_eq!(
        (err.code, &err.summary_id),
        (ErrorCode::Aborted, &f.leaves[2])
    );
    assert!(
        pipeline.dropped.load(std::sync::atomic::Ordering::SeqCst),
        "the in-flight call was dropped"
    );
    // Leaves run one by one: the first two were written, nothing of the third.
    assert_eq!(report.entries.len(), 2);
    let after = contents(e).await;
    let mut changed: Vec<&String> = after
        .iter()
        .zip(&before)
        .filter(|(a, b)| a.1 != b.1)
        .map(|(a, _)| &a.0)
        .collect();
    changed.sort();
    let mut expect = vec![&f.leaves[0], &f.leaves[1]];
    expect.sort();
    assert_eq!(changed, expect);
    assert_eq!(run::report_error(&report).unwrap().code, ErrorCode::Aborted);
    // A token tripped before the call: nothing is asked, nothing written.
    let done = crate::compaction::CancelToken::new();
    done.cancel();
    let r = e
        .rewrite_with(
            params(f.conv, json!({"all": true, "apply": true})),
            None,
            done.clone(),
        )
        .await
        .unwrap();
    assert_eq!(
        (r.entries.len(), r.error.unwrap().code),
        (0, ErrorCode::Aborted)
    );
    assert!(f.echo.seen.lock().unwrap().is_empty());
    let p = e
        .plan_rewrite_with(plan_params(f.conv, json!({"all": true})), done)
        .await
        .unwrap_err();
    assert_eq!(p.code, ErrorCode::Aborted);
    assert_eq!(contents(e).await, after);
}

#[tokio::test]
async fn preview_renders_the_prompt_and_a_reviewed_text_is_applied_only_over_what_was_reviewed() {
    let f = fixture(None).await;
    let e = &f.engine;
    let p = e.preview_rewrite(f.conv, &f.d1[0], true).await.unwrap();
    assert_eq!(p.summary.summary_id, f.d1[0]);
    assert_eq!(
        (p.prompt.template, p.prompt.source.as_str()),
        ("condensed-d1", "embedded")
    );
    assert!(p.prompt.prompt.contains("old leaf 0") && p.prompt.prompt.contains("old leaf 1"));
    assert_eq!(
        p.old_content,
        format!("old d1 over {}+{}", f.leaves[0], f.leaves[1])
    );
    assert!(p.source_tokens > 0 && p.skip.is_none() && !p.has_previous_context);
    // The second leaf's previous context is the first leaf.
    let leaf = e.preview_rewrite(f.conv, &f.leaves[1], true).await.unwrap();
    assert!(leaf.has_previous_context);
    assert_eq!(leaf.prompt.template, "leaf");
    // The dry run's text, applied over the text it was made from.
    let dry = e
        .rewrite(
            params(f.conv, json!({"summaryId": f.d1[0], "subtree": false})),
            None,
        )
        .await
        .unwrap();
    let entry = &dry.entries[0];
    let n = e
        .apply_reviewed_rewrite(f.conv, &f.d1[0], &entry.old_content, &entry.new_content)
        .await
        .unwrap();
    assert_eq!(n, crate::tokens::estimate(&entry.new_content));
    let now = contents(e).await;
    let row = now.iter().find(|r| r.0 == f.d1[0]).unwrap();
    assert_eq!((&row.1, row.2), (&entry.new_content, n));
    // Applying the same review again: the stored text is no longer the reviewed one.
    let stale = e
        .apply_reviewed_rewrite(f.conv, &f.d1[0], &entry.old_content, "other text")
        .await
        .unwrap_err();
    assert_eq!(stale.code, ErrorCode::InvalidInput);
    assert!(stale.message.contains("changed since"), "{}", stale.message);
    assert_eq!(contents(e).await, now, "nothing written");
    let missing = e
        .apply_reviewed_rewrite(f.conv + 1, &f.d1[0], &entry.new_content, "x")
        .await
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::NotFound);
}
