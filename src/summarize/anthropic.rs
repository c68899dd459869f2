//! Anthropic Messages API summarizer (`summaryProvider: "anthropic"`).

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::json;

use super::http::Transport;
use super::{
    max_output_tokens, normalize, ProviderConfig, Summarizer, SummaryRequest, SummaryResponse,
};
use crate::error::{ErrorCode, LcmError, Result};

/// Default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// Default model when `summaryModel` is not set.
pub const DEFAULT_MODEL: &str = "claude-haiku-4-5";
/// The `anthropic-version` header value.
pub const API_VERSION: &str = "2023-06-01";

/// The Messages endpoint under a base URL (with or without a trailing `/v1`).
pub fn messages_url(base: &str) -> String {
    let b = base.trim_end_matches('/');
    if b.ends_with("/v1/messages") {
        b.to_owned()
    } else if b.ends_with("/v1") {
        format!("{b}/messages")
    } else {
        format!("{b}/v1/messages")
    }
}

/// Summarizes through `POST /v1/messages`.
pub struct AnthropicSummarizer {
    transport: Transport,
    url: String,
    headers: HeaderMap,
    model: String,
}

impl AnthropicSummarizer {
    /// A summarizer for the given provider settings (key required).
    pub fn new(cfg: ProviderConfig) -> Result<Self> {
        let key = cfg.api_key.unwrap_or_default();
        let mut headers = HeaderMap::new();
        let bad_key = || {
            LcmError::new(
                ErrorCode::Config,
                "summaryApiKey contains characters not allowed in an HTTP header",
            )
        };
        headers.insert(
            "x-api-key",
            HeaderValue::from_str(&key).map_err(|_| bad_key())?,
        );
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        Ok(AnthropicSummarizer {
            transport: Transport::new("anthropic", cfg.timeout, cfg.retry)?,
            url: messages_url(cfg.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL)),
            headers,
            model: cfg.model.unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
        })
    }
}

#[async_trait]
impl Summarizer for AnthropicSummarizer {
    async fn summarize(&self, req: SummaryRequest) -> Result<SummaryResponse> {
        let model = req.model.clone().unwrap_or_else(|| self.model.clone());
        let body = json!({
            "model": model,
            "max_tokens": max_output_tokens(req.target_tokens),
            "system": req.system_prompt,
            "messages": [{"role": "user", "content": req.prompt}],
        });
        let v = self
            .transport
            .post_json(&self.url, self.headers.clone(), &body)
            .await?;
        let Some(content) = v.get("content") else {
            return Err(LcmError::new(
                ErrorCode::LlmBadResponse,
                "anthropic: the answer has no content field",
            ));
        };
        Ok(SummaryResponse {
            content: normalize::summary_text(content),
            model: normalize::answer_model(&v, &model),
        })
    }

    fn name(&self) -> &str {
        "anthropic"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            messages_url("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            messages_url("http://127.0.0.1:9/v1/"),
            "http://127.0.0.1:9/v1/messages"
        );
        assert_eq!(
            messages_url("http://proxy/x/v1/messages"),
            "http://proxy/x/v1/messages"
        );
    }
}
