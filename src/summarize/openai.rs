//! OpenAI summarizers: Chat Completions (`summaryProvider: "openai"`, any
//! OpenAI-compatible server: Ollama, vLLM, OpenRouter, LiteLLM) and the Responses API
//! (`"openai-responses"`).

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use serde_json::{json, Value};

use super::http::Transport;
use super::{
    max_output_tokens, normalize, ProviderConfig, Summarizer, SummaryRequest, SummaryResponse,
};
use crate::error::{ErrorCode, LcmError, Result};

/// Default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Default model when `summaryModel` is not set (only with the default base URL).
pub const DEFAULT_MODEL: &str = "gpt-4.1-mini";

/// Which OpenAI wire format to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAiApi {
    /// `POST /chat/completions`.
    Chat,
    /// `POST /responses`.
    Responses,
}

impl OpenAiApi {
    fn path(self) -> &'static str {
        match self {
            OpenAiApi::Chat => "/chat/completions",
            OpenAiApi::Responses => "/responses",
        }
    }
}

/// The endpoint under a base URL; a bare host gets `/v1`.
pub fn endpoint_url(base: &str, api: OpenAiApi) -> String {
    let b = base.trim_end_matches('/');
    if b.ends_with(api.path()) {
        return b.to_owned();
    }
    let after_scheme = b.split_once("://").map_or(b, |(_, r)| r);
    if !after_scheme.contains('/') {
        return format!("{b}/v1{}", api.path());
    }
    format!("{b}{}", api.path())
}

/// Summarizes through Chat Completions or Responses.
pub struct OpenAiSummarizer {
    transport: Transport,
    api: OpenAiApi,
    url: String,
    headers: HeaderMap,
    model: String,
    /// api.openai.com wants `max_completion_tokens`; compatible servers `max_tokens`.
    official: bool,
}

impl OpenAiSummarizer {
    /// A summarizer for the given settings; the key is optional (local servers).
    pub fn new(cfg: ProviderConfig, api: OpenAiApi) -> Result<Self> {
        let base = cfg.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
        let mut headers = HeaderMap::new();
        if let Some(key) = cfg.api_key.as_deref().filter(|k| !k.is_empty()) {
            let v = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                LcmError::new(
                    ErrorCode::Config,
                    "summaryApiKey contains characters not allowed in an HTTP header",
                )
            })?;
            headers.insert(AUTHORIZATION, v);
        }
        let name = match api {
            OpenAiApi::Chat => "openai",
            OpenAiApi::Responses => "openai-responses",
        };
        Ok(OpenAiSummarizer {
            transport: Transport::new(name, cfg.timeout, cfg.retry)?,
            api,
            url: endpoint_url(base, api),
            headers,
            model: cfg.model.unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
            official: base.contains("api.openai.com"),
        })
    }

    fn body(&self, req: &SummaryRequest, model: &str) -> Value {
        let max = max_output_tokens(req.target_tokens);
        match self.api {
            OpenAiApi::Chat => {
                let max_key = if self.official {
                    "max_completion_tokens"
                } else {
                    "max_tokens"
                };
                json!({
                    "model": model,
                    "messages": [
                        {"role": "system", "content": req.system_prompt},
                        {"role": "user", "content": req.prompt},
                    ],
                    max_key: max,
                })
            }
            OpenAiApi::Responses => json!({
                "model": model,
                "instructions": req.system_prompt,
                "input": req.prompt,
                "max_output_tokens": max,
                "store": false,
            }),
        }
    }

    fn extract(&self, v: &Value) -> Result<String> {
        let missing = |what: &str| {
            LcmError::new(
                ErrorCode::LlmBadResponse,
                format!("{}: the answer has no {what}", self.name()),
            )
        };
        match self.api {
            OpenAiApi::Chat => v
                .get("choices")
                .map(normalize::summary_text)
                .ok_or_else(|| missing("choices")),
            OpenAiApi::Responses => {
                if v.get("output").is_none() && v.get("output_text").is_none() {
                    return Err(missing("output"));
                }
                let parts = json!({"output_text": v.get("output_text"), "output": v.get("output")});
                Ok(normalize::summary_text(&parts))
            }
        }
    }
}

#[async_trait]
impl Summarizer for OpenAiSummarizer {
    async fn summarize(&self, req: SummaryRequest) -> Result<SummaryResponse> {
        let model = req.model.clone().unwrap_or_else(|| self.model.clone());
        let body = self.body(&req, &model);
        let v = self
            .transport
            .post_json(&self.url, self.headers.clone(), &body)
            .await?;
        Ok(SummaryResponse {
            content: self.extract(&v)?,
            model: normalize::answer_model(&v, &model),
        })
    }

    fn name(&self) -> &str {
        match self.api {
            OpenAiApi::Chat => "openai",
            OpenAiApi::Responses => "openai-responses",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        use OpenAiApi::*;
        assert_eq!(
            endpoint_url(DEFAULT_BASE_URL, Chat),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            endpoint_url("http://localhost:11434", Chat),
            "http://localhost:11434/v1/chat/completions"
        );
        assert_eq!(
            endpoint_url("http://localhost:11434/v1/", Responses),
            "http://localhost:11434/v1/responses"
        );
        assert_eq!(
            endpoint_url("https://openrouter.ai/api/v1", Chat),
            "https://openrouter.ai/api/v1/chat/completions"
        );
        assert_eq!(
            endpoint_url("http://h/v1/responses", Responses),
            "http://h/v1/responses"
        );
    }
}
