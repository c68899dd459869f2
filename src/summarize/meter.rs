//! Summarizer spend, counted per compaction call: every request a summarizer
//! answers or fails inside [`metered`] is added to that call's [`Usage`] (a task-local
//! tally, so concurrent compactions of other conversations never mix). Token counts
//! are the engine's estimates of the request (prompt and system prompt) and of the
//! answer.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::Serialize;

use super::{Summarizer, SummaryRequest, SummaryResponse};
use crate::error::Result;
use crate::tokens::estimate;

/// Summarizer requests and their tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "SummarizerUsage")]
pub struct Usage {
    /// Requests sent (answered or failed).
    pub calls: i64,
    /// Requests that failed (error, timeout, refused).
    pub failures: i64,
    /// Estimated input tokens of the answered requests.
    pub input_tokens: i64,
    /// Estimated tokens of their answers.
    pub output_tokens: i64,
}

impl Usage {
    /// Adds another tally.
    pub fn add(&mut self, o: &Usage) {
        self.calls += o.calls;
        self.failures += o.failures;
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
    }
}

tokio::task_local! {
    static TALLY: Arc<Mutex<Usage>>;
}

/// Runs `f`, counting the summarizer requests made inside it.
pub async fn metered<F: std::future::Future>(f: F) -> (F::Output, Usage) {
    let tally = Arc::new(Mutex::new(Usage::default()));
    let out = TALLY.scope(tally.clone(), f).await;
    let usage = *tally.lock().unwrap_or_else(|e| e.into_inner());
    (out, usage)
}

fn record(f: impl FnOnce(&mut Usage)) {
    let _ = TALLY.try_with(|t| f(&mut t.lock().unwrap_or_else(|e| e.into_inner())));
}

/// A summarizer whose requests count toward the enclosing [`metered`] call.
pub struct Metered(pub Arc<dyn Summarizer>);

#[async_trait]
impl Summarizer for Metered {
    async fn summarize(&self, req: SummaryRequest) -> Result<SummaryResponse> {
        let input = estimate(&req.prompt) + estimate(&req.system_prompt);
        let r = self.0.summarize(req).await;
        record(|u| {
            u.calls += 1;
            match &r {
                Ok(resp) => {
                    u.input_tokens += input;
                    u.output_tokens += estimate(&resp.content);
                }
                Err(_) => u.failures += 1,
            }
        });
        r
    }

    fn name(&self) -> &str {
        self.0.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ErrorCode, LcmError};

    struct Echo(bool);

    #[async_trait]
    impl Summarizer for Echo {
        async fn summarize(&self, req: SummaryRequest) -> Result<SummaryResponse> {
            if self.0 {
                return Err(LcmError::new(ErrorCode::LlmTransient, "down"));
            }
            Ok(SummaryResponse {
                content: req.prompt[..4].to_owned(),
                model: "echo".into(),
            })
        }
        fn name(&self) -> &str {
            "echo"
        }
    }

    fn req() -> SummaryRequest {
        SummaryRequest {
            prompt: "abcdefgh".into(),
            system_prompt: "abcd".into(),
            target_tokens: 10,
            depth: 0,
            aggressive: false,
            model: None,
            source_text: String::new(),
        }
    }

    #[tokio::test]
    async fn counts_requests_inside_the_call_only() {
        let ok = Metered(Arc::new(Echo(false)));
        let bad = Metered(Arc::new(Echo(true)));
        let (_, u) = metered(async {
            ok.summarize(req()).await.unwrap();
            bad.summarize(req()).await.unwrap_err();
        })
        .await;
        let want = Usage {
            calls: 2,
            failures: 1,
            input_tokens: 3,
            output_tokens: 1,
        };
        assert_eq!(u, want);
        // Outside a metered call nothing is counted, and nothing fails.
        ok.summarize(req()).await.unwrap();
        let (_, u) = metered(async {}).await;
        assert_eq!(u, Usage::default());
    }
}
