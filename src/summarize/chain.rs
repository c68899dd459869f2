//! `fallbackProviders`: the configured summarizer, then each fallback in order. A
//! candidate that is overloaded, times out, is rate limited or answers something
//! unusable (`LCM_LLM_TRANSIENT`, `LCM_LLM_RATE_LIMIT`, `LCM_LLM_BAD_RESPONSE`, after
//! its own retries) hands the request to the next; any other error (refused
//! credentials, a failing host callback) ends the chain, as does the last
//! candidate's error.

use std::sync::Arc;

use async_trait::async_trait;

use super::{Summarizer, SummaryRequest, SummaryResponse};
use crate::error::{ErrorCode, Result};

/// Candidates tried in order.
pub struct Chain {
    candidates: Vec<Arc<dyn Summarizer>>,
    name: String,
}

impl Chain {
    /// A chain over at least one candidate (the first is the configured summarizer).
    pub fn new(candidates: Vec<Arc<dyn Summarizer>>) -> Chain {
        let name = candidates
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(" → ");
        Chain { candidates, name }
    }
}

/// Whether the next candidate should be tried after this error.
pub fn falls_through(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::LlmTransient | ErrorCode::LlmRateLimit | ErrorCode::LlmBadResponse
    )
}

#[async_trait]
impl Summarizer for Chain {
    async fn summarize(&self, req: SummaryRequest) -> Result<SummaryResponse> {
        let mut last = None;
        for (i, c) in self.candidates.iter().enumerate() {
            let mut req = req.clone();
            if i > 0 {
                // The request's model hint is the configured model's: a fallback
                // answers with its own.
                req.model = None;
            }
            match c.summarize(req).await {
                Ok(r) => return Ok(r),
                Err(e) if falls_through(e.code) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            crate::error::LcmError::new(ErrorCode::Config, "no summarizer configured")
        }))
    }

    fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::error::LcmError;

    /// Answers or fails as told; counts its calls and whether each carried the
    /// configured model's hint.
    struct Fixed(
        Option<ErrorCode>,
        &'static str,
        AtomicUsize,
        std::sync::Mutex<Vec<bool>>,
    );

    #[async_trait]
    impl Summarizer for Fixed {
        async fn summarize(&self, req: SummaryRequest) -> Result<SummaryResponse> {
            self.3.lock().unwrap().push(req.model.is_some());
            self.2.fetch_add(1, Ordering::SeqCst);
            match self.0 {
                Some(code) => Err(LcmError::new(code, self.1)),
                None => Ok(SummaryResponse {
                    content: "ok".into(),
                    model: self.1.into(),
                }),
            }
        }
        fn name(&self) -> &str {
            self.1
        }
    }

    fn req() -> SummaryRequest {
        SummaryRequest {
            prompt: "p".into(),
            system_prompt: String::new(),
            target_tokens: 1,
            depth: 0,
            aggressive: false,
            model: Some("configured".into()),
            source_text: String::new(),
        }
    }

    fn fixed(code: Option<ErrorCode>, name: &'static str) -> Arc<Fixed> {
        Arc::new(Fixed(code, name, AtomicUsize::new(0), Default::default()))
    }

    #[tokio::test]
    async fn overload_rate_limit_and_bad_answers_fall_through_in_order() {
        let a = fixed(Some(ErrorCode::LlmTransient), "a");
        let b = fixed(Some(ErrorCode::LlmRateLimit), "b");
        let c = fixed(Some(ErrorCode::LlmBadResponse), "c");
        let d = fixed(None, "d");
        let e = fixed(None, "e");
        let chain = Chain::new(vec![a.clone(), b.clone(), c.clone(), d.clone(), e.clone()]);
        assert_eq!(chain.name(), "a → b → c → d → e");
        assert_eq!(chain.summarize(req()).await.unwrap().model, "d");
        let calls: Vec<usize> = [&a, &b, &c, &d, &e]
            .iter()
            .map(|s| s.2.load(Ordering::SeqCst))
            .collect();
        assert_eq!(calls, [1, 1, 1, 1, 0]);
        // The configured model's hint reaches the first candidate only: a fallback
        // answers with its own model.
        assert_eq!(*a.3.lock().unwrap(), [true]);
        assert_eq!(*d.3.lock().unwrap(), [false]);
    }

    #[tokio::test]
    async fn refused_credentials_end_the_chain_and_the_last_error_is_returned() {
        let auth = fixed(Some(ErrorCode::LlmAuth), "auth");
        let next = fixed(None, "next");
        let chain = Chain::new(vec![auth, next.clone()]);
        assert_eq!(
            chain.summarize(req()).await.unwrap_err().code,
            ErrorCode::LlmAuth
        );
        assert_eq!(next.2.load(Ordering::SeqCst), 0);
        let chain = Chain::new(vec![
            fixed(Some(ErrorCode::LlmTransient), "x"),
            fixed(Some(ErrorCode::LlmRateLimit), "y"),
        ]);
        let e = chain.summarize(req()).await.unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (ErrorCode::LlmRateLimit, "y"));
    }
}
