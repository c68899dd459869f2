use std::collections::VecDeque;
use std::sync::Mutex;

use super::*;
use crate::error::{ErrorCode, LcmError};
use crate::summarize::offline::OfflineSummarizer;
use crate::summarize::SummaryResponse;

/// A summarizer that plays back scripted answers and records the requests.
#[derive(Default)]
struct Script {
    answers: Mutex<VecDeque<Result<SummaryResponse>>>,
    seen: Mutex<Vec<SummaryRequest>>,
}

impl Script {
    fn new(answers: Vec<Result<&str>>) -> Arc<Script> {
        let answers = answers
            .into_iter()
            .map(|a| {
                a.map(|c| SummaryResponse {
                    content: c.to_owned(),
                    model: "m-test".into(),
                })
            })
            .collect();
        Arc::new(Script {
            answers: Mutex::new(answers),
            seen: Mutex::default(),
        })
    }
    fn calls(&self) -> Vec<SummaryRequest> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait]
impl Summarizer for Script {
    async fn summarize(&self, req: SummaryRequest) -> Result<SummaryResponse> {
        self.seen.lock().unwrap().push(req);
        self.answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Err(LcmError::internal("script exhausted")))
    }
    fn name(&self) -> &str {
        "script"
    }
}

fn settings() -> PipelineSettings {
    PipelineSettings {
        leaf_target_tokens: 2400,
        condensed_target_tokens: 2000,
        max_overage_factor: 3.0,
        fallback_max_tokens: 512,
        custom_instructions: None,
        model: Some("hint-model".into()),
    }
}

fn pipeline(s: Arc<Script>, settings: PipelineSettings) -> EscalatingPipeline {
    EscalatingPipeline::new(s, Arc::new(PromptSet::embedded().unwrap()), settings)
}

fn input(depth: i64, words: usize) -> SummarizeInput {
    SummarizeInput {
        depth,
        source_text: format!(
            "[2026-02-17 09:00 UTC] [user]\n{}",
            "lorem ipsum dolor ".repeat(words)
        ),
        child_count: 1,
        ..Default::default()
    }
}

const SHORT: &str = "Short summary.\nExpand for details about: everything";

#[tokio::test]
async fn normal_level_when_smaller() {
    let s = Script::new(vec![Ok(SHORT)]);
    let out = pipeline(s.clone(), settings())
        .run(input(0, 60))
        .await
        .unwrap();
    assert_eq!(out.level, Level::Normal);
    assert_eq!(out.content, SHORT);
    assert_eq!(out.model, "m-test");
    assert_eq!(out.tokens_out, estimate(SHORT));
    let calls = s.calls();
    assert_eq!(calls.len(), 1);
    let r = &calls[0];
    assert!(!r.aggressive);
    assert_eq!(r.depth, 0);
    assert_eq!(r.target_tokens, 192);
    assert_eq!(r.model.as_deref(), Some("hint-model"));
    assert_eq!(r.system_prompt, SYSTEM_PROMPT);
    assert!(r.prompt.contains("Target length: about 192 tokens"));
    assert!(r
        .prompt
        .contains("<conversation_segment>\n[2026-02-17 09:00 UTC] [user]"));
    assert!(r.source_text.starts_with("[2026-02-17 09:00 UTC]"));
}

#[tokio::test]
async fn aggressive_then_fallback() {
    let big = "x ".repeat(2000);
    let s = Script::new(vec![Ok(&big), Ok(SHORT)]);
    let out = pipeline(s.clone(), settings())
        .run(input(0, 60))
        .await
        .unwrap();
    assert_eq!(out.level, Level::Aggressive);
    let calls = s.calls();
    assert_eq!(calls.len(), 2);
    assert!(calls[1].aggressive && calls[1].prompt.contains("strict"));
    assert_eq!(calls[1].target_tokens, 96);

    let s = Script::new(vec![Ok(&big), Ok(&big)]);
    let inp = input(0, 200);
    let tin = estimate(inp.source_text.trim());
    let out = pipeline(s, settings()).run(inp).await.unwrap();
    assert_eq!(out.level, Level::Fallback);
    assert_eq!(out.model, FALLBACK_MODEL);
    assert!(
        out.content
            .ends_with(&format!("\n[Truncated from {tin} tokens]")),
        "{}",
        out.content
    );
    assert!(out.tokens_out <= 512);
}

#[tokio::test]
async fn empty_output_is_retried_once_then_falls_back() {
    let s = Script::new(vec![Ok("   "), Ok(SHORT)]);
    let out = pipeline(s.clone(), settings())
        .run(input(1, 300))
        .await
        .unwrap();
    assert_eq!(out.level, Level::Normal);
    assert_eq!(s.calls().len(), 2);

    let s = Script::new(vec![Ok(""), Ok("<think>only thoughts</think>")]);
    let out = pipeline(s.clone(), settings())
        .run(input(1, 300))
        .await
        .unwrap();
    assert_eq!(out.level, Level::Fallback);
    assert_eq!(
        s.calls().len(),
        2,
        "no aggressive attempt after empty output"
    );
    assert!(out.content.ends_with(" tokens]"));
}

#[tokio::test]
async fn reasoning_is_stripped_from_summaries() {
    let s = Script::new(vec![Ok("<think>plan the summary</think>\nReal summary.")]);
    let out = pipeline(s, settings()).run(input(0, 60)).await.unwrap();
    assert_eq!(out.content, "Real summary.");
}

#[tokio::test]
async fn errors_write_no_summary() {
    for code in [
        ErrorCode::LlmAuth,
        ErrorCode::Callback,
        ErrorCode::LlmTransient,
    ] {
        let s = Script::new(vec![Err(LcmError::new(code, "nope")), Ok(SHORT)]);
        let e = pipeline(s.clone(), settings())
            .run(input(0, 60))
            .await
            .unwrap_err();
        assert_eq!(e.code, code);
        assert_eq!(s.calls().len(), 1);
    }
    // An auth failure on the aggressive attempt is an error too, not a fallback.
    let big = "y ".repeat(2000);
    let s = Script::new(vec![
        Ok(&big),
        Err(LcmError::new(ErrorCode::LlmAuth, "revoked")),
    ]);
    let e = pipeline(s, settings()).run(input(0, 60)).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::LlmAuth);
}

#[tokio::test]
async fn oversized_summaries_are_capped() {
    let long = "word ".repeat(1200);
    let s = Script::new(vec![Ok(&long)]);
    let mut st = settings();
    st.condensed_target_tokens = 512;
    st.max_overage_factor = 1.0;
    let out = pipeline(s, st).run(input(2, 3000)).await.unwrap();
    assert_eq!(out.level, Level::Capped);
    assert!(out.tokens_out <= 512);
    assert!(
        out.content.ends_with(&format!(
            "[Capped from {} tokens to ~512]",
            estimate(long.trim())
        )),
        "{}",
        &out.content[out.content.len() - 60..]
    );
}

#[tokio::test]
async fn empty_source_and_instructions() {
    let s = Script::new(vec![]);
    let out = pipeline(s.clone(), settings())
        .run(SummarizeInput::default())
        .await
        .unwrap();
    assert_eq!(
        (out.content.as_str(), out.level),
        ("[Truncated from 0 tokens]", Level::Fallback)
    );
    assert!(s.calls().is_empty());

    let mut st = settings();
    st.custom_instructions = Some("Configured rule.".into());
    let s = Script::new(vec![Ok(SHORT), Ok(SHORT)]);
    let p = pipeline(s.clone(), st);
    p.run(input(1, 300)).await.unwrap();
    let mut inp = input(1, 300);
    inp.custom_instructions = Some("Per-call rule.".into());
    inp.previous_context = Some("Earlier.".into());
    p.run(inp).await.unwrap();
    let calls = s.calls();
    assert!(calls[0].prompt.contains("Configured rule."));
    assert!(
        calls[1].prompt.contains("Per-call rule.") && !calls[1].prompt.contains("Configured rule.")
    );
    assert!(calls[1]
        .prompt
        .contains("<previous_context>\nEarlier.\n</previous_context>"));
}

#[tokio::test]
async fn offline_summarizer_through_the_pipeline_stays_normal() {
    let src = crate::summarize::offline::tests::leaf_fixture();
    let p = EscalatingPipeline::new(
        Arc::new(OfflineSummarizer),
        Arc::new(PromptSet::embedded().unwrap()),
        settings(),
    );
    let out = p
        .run(SummarizeInput {
            depth: 0,
            source_text: src.clone(),
            child_count: 13,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(out.level, Level::Normal);
    assert_eq!(out.model, crate::summarize::offline::MODEL);
    assert!(out.tokens_out < out.tokens_in);
    assert!(out.content.contains("Expand for details about:"));
}
