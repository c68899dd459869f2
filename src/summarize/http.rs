//! HTTP transport of the provider summarizers: a JSON POST with a per-request timeout
//! and bounded retries with exponential backoff on 429, 408/5xx/529, timeouts and
//! connection failures, honouring `retry-after-ms` / `retry-after` (seconds or an
//! HTTP date), capped so a hostile or confused server cannot park compaction. Failures
//! become typed errors: credentials (401/403) `LCM_LLM_AUTH`, rate limit
//! `LCM_LLM_RATE_LIMIT`, transient `LCM_LLM_TRANSIENT`, anything unusable
//! `LCM_LLM_BAD_RESPONSE`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde_json::Value;

use crate::error::{ErrorCode, LcmError, Result};

/// Retry behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff; doubles per retry.
    pub base: Duration,
    /// Upper bound of any wait, including a server's `retry-after`.
    pub max_wait: Duration,
}

impl RetryPolicy {
    /// The wait before retry number `attempt + 1` when the server named none:
    /// `base × 2^attempt`, at most `max_wait`.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(20)).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.max_wait)
    }

    /// The wait to use given the server's hint, capped.
    pub fn wait(&self, attempt: u32, hint: Option<Duration>) -> Duration {
        hint.unwrap_or_else(|| self.backoff(attempt))
            .min(self.max_wait)
    }
}

/// The server's retry hint: `retry-after-ms` (milliseconds), else `retry-after` as
/// (possibly fractional) seconds or an HTTP date relative to `now`. Past dates mean
/// "now"; unparseable values are ignored.
pub fn parse_retry_after(headers: &HeaderMap, now: DateTime<Utc>) -> Option<Duration> {
    let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms.min(1e9) / 1000.0));
        }
    }
    let v = get("retry-after")?;
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e7)));
    }
    let at = DateTime::parse_from_rfc2822(v).ok()?.with_timezone(&Utc);
    Some((at - now).to_std().unwrap_or(Duration::ZERO))
}

/// The provider's error message from an error body, else the body's start.
pub fn error_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let e = v.get("error").unwrap_or(&v);
        e.get("message")
            .or_else(|| e.get("detail"))
            .and_then(Value::as_str)
            .or_else(|| e.as_str())
            .map(str::to_owned)
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_owned());
    let clipped: String = text.chars().take(300).collect();
    if clipped.is_empty() {
        "(empty body)".into()
    } else {
        clipped
    }
}

/// A failed attempt: retry (with the server's hint) or give up.
enum Failure {
    Retry(LcmError, Option<Duration>),
    Fatal(LcmError),
}

/// A JSON client for one provider.
pub struct Transport {
    client: reqwest::Client,
    policy: RetryPolicy,
    provider: &'static str,
    timeout: Duration,
}

impl Transport {
    /// A client with the per-request timeout.
    pub fn new(provider: &'static str, timeout: Duration, policy: RetryPolicy) -> Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(15)))
            .build()
            .map_err(|e| {
                LcmError::new(ErrorCode::Config, format!("cannot build HTTP client: {e}"))
            })?;
        Ok(Transport {
            client,
            policy,
            provider,
            timeout,
        })
    }

    /// POSTs `body` to `url` and returns the parsed JSON answer, retrying as the
    /// policy allows.
    pub async fn post_json(&self, url: &str, headers: HeaderMap, body: &Value) -> Result<Value> {
        let mut attempt = 0u32;
        loop {
            let failure = match self.attempt(url, headers.clone(), body).await {
                Ok(v) => return Ok(v),
                Err(f) => f,
            };
            match failure {
                Failure::Fatal(e) => return Err(e),
                Failure::Retry(e, _) if attempt >= self.policy.max_retries => {
                    let tries = attempt + 1;
                    return Err(e.context(format!(
                        "{} summarizer gave up after {tries} attempt{}",
                        self.provider,
                        if tries == 1 { "" } else { "s" }
                    )));
                }
                Failure::Retry(_, hint) => {
                    tokio::time::sleep(self.policy.wait(attempt, hint)).await;
                    attempt += 1;
                }
            }
        }
    }

    async fn attempt(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &Value,
    ) -> std::result::Result<Value, Failure> {
        let sent = self
            .client
            .post(url)
            .headers(headers)
            .json(body)
            .send()
            .await;
        let resp = sent.map_err(|e| self.transport_failure(e))?;
        let status = resp.status();
        let hint = parse_retry_after(resp.headers(), Utc::now());
        let text = resp.text().await.map_err(|e| self.transport_failure(e))?;
        if !status.is_success() {
            return Err(self.status_failure(status, &text, hint));
        }
        let v: Value = serde_json::from_str(&text).map_err(|e| {
            Failure::Fatal(self.err(
                ErrorCode::LlmBadResponse,
                format!(
                    "malformed JSON in the answer (HTTP {status}): {e}; body starts {:?}",
                    text.chars().take(120).collect::<String>()
                ),
            ))
        })?;
        match embedded_error(&v) {
            Some(msg) => Err(self.embedded_failure(&msg)),
            None => Ok(v),
        }
    }

    fn err(&self, code: ErrorCode, msg: impl std::fmt::Display) -> LcmError {
        LcmError::new(code, format!("{}: {msg}", self.provider))
    }

    fn transport_failure(&self, e: reqwest::Error) -> Failure {
        let ms = self.timeout.as_millis();
        if e.is_timeout() {
            return Failure::Retry(
                self.err(
                    ErrorCode::LlmTransient,
                    format!("request timed out after {ms} ms (summaryTimeoutMs)"),
                ),
                None,
            );
        }
        if e.is_builder() {
            return Failure::Fatal(self.err(ErrorCode::Config, format!("invalid request: {e}")));
        }
        let detail = error_chain(&e);
        Failure::Retry(
            self.err(ErrorCode::LlmTransient, format!("request failed: {detail}")),
            None,
        )
    }

    fn status_failure(&self, status: StatusCode, body: &str, hint: Option<Duration>) -> Failure {
        let msg = format!("HTTP {}: {}", status.as_u16(), error_message(body));
        match status.as_u16() {
            401 | 403 => Failure::Fatal(self.err(
                ErrorCode::LlmAuth,
                format!("{msg} (check summaryApiKey or the provider's API key variable)"),
            )),
            429 => Failure::Retry(self.err(ErrorCode::LlmRateLimit, msg), hint),
            408 | 425 | 500..=599 => Failure::Retry(self.err(ErrorCode::LlmTransient, msg), hint),
            _ => Failure::Fatal(self.err(ErrorCode::LlmBadResponse, msg)),
        }
    }

    fn embedded_failure(&self, msg: &str) -> Failure {
        let l = msg.to_ascii_lowercase();
        if l.contains("auth")
            || l.contains("api key")
            || l.contains("api_key")
            || l.contains("permission")
        {
            Failure::Fatal(self.err(ErrorCode::LlmAuth, msg))
        } else if l.contains("rate") {
            Failure::Retry(self.err(ErrorCode::LlmRateLimit, msg), None)
        } else if l.contains("overload") || l.contains("timeout") || l.contains("unavailable") {
            Failure::Retry(self.err(ErrorCode::LlmTransient, msg), None)
        } else {
            Failure::Fatal(self.err(ErrorCode::LlmBadResponse, msg))
        }
    }
}

/// An error object inside a 2xx answer (`{"type":"error","error":{…}}` or an
/// OpenAI-compatible server's `{"error":{…}}` without any output), as
/// `type: message`.
fn embedded_error(v: &Value) -> Option<String> {
    let e = v.get("error").filter(|e| !e.is_null())?;
    let has_output = ["content", "choices", "output", "output_text"]
        .iter()
        .any(|k| v.get(*k).is_some_and(|x| !x.is_null()));
    if has_output {
        return None;
    }
    let kind = e
        .get("type")
        .or_else(|| e.get("code"))
        .and_then(Value::as_str);
    let msg = e
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| e.as_str())
        .unwrap_or("error without a message");
    Some(match kind {
        Some(k) => format!("{k}: {msg}"),
        None => msg.to_owned(),
    })
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(&format!(": {c}"));
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn retry_after_forms() {
        let now = crate::timestamp::parse("2015-10-21T07:27:58Z").unwrap();
        let p = |pairs: &[(&'static str, &str)]| parse_retry_after(&headers(pairs), now);
        assert_eq!(p(&[("retry-after", "3")]), Some(Duration::from_secs(3)));
        assert_eq!(
            p(&[("retry-after", "0.25")]),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            p(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            p(&[("retry-after", "Wed, 21 Oct 2015 07:00:00 GMT")]),
            Some(Duration::ZERO)
        );
        assert_eq!(
            p(&[("retry-after-ms", "150"), ("retry-after", "9")]),
            Some(Duration::from_millis(150))
        );
        assert_eq!(p(&[("retry-after", "soon")]), None);
        assert_eq!(p(&[("retry-after", "-4")]), None);
        assert_eq!(p(&[]), None);
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let r = RetryPolicy {
            max_retries: 3,
            base: Duration::from_millis(500),
            max_wait: Duration::from_secs(8),
        };
        assert_eq!(r.backoff(0), Duration::from_millis(500));
        assert_eq!(r.backoff(2), Duration::from_secs(2));
        assert_eq!(r.backoff(10), Duration::from_secs(8));
        assert_eq!(r.backoff(u32::MAX), Duration::from_secs(8));
        assert_eq!(
            r.wait(0, Some(Duration::from_secs(3600))),
            Duration::from_secs(8)
        );
        assert_eq!(
            r.wait(0, Some(Duration::from_millis(10))),
            Duration::from_millis(10)
        );
    }

    #[test]
    fn error_bodies_and_embedded_errors() {
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#
            ),
            "invalid x-api-key"
        );
        assert_eq!(error_message(r#"{"error":"nope"}"#), "nope");
        assert_eq!(
            error_message("<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
        assert_eq!(error_message(""), "(empty body)");
        let v = serde_json::json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}});
        assert_eq!(embedded_error(&v).unwrap(), "overloaded_error: Overloaded");
        let ok = serde_json::json!({"choices":[{"message":{"content":"x"}}],"error":null});
        assert_eq!(embedded_error(&ok), None);
    }
}
