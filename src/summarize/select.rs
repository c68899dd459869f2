//! Choosing and building the summarizer and the pipeline from the engine options.
//!
//! Provider choice: a host callback always wins. Otherwise `summaryProvider`
//! (`anthropic`, `openai`, `openai-responses`, `offline`). Without one, a
//! `summaryApiKey` selects Anthropic for `sk-ant-…` keys and OpenAI for others, a
//! `summaryBaseUrl` alone selects OpenAI-compatible Chat Completions, and otherwise
//! the offline summarizer runs. Environment keys (`ANTHROPIC_API_KEY`,
//! `OPENAI_API_KEY`) supply the key of a chosen provider but never choose one, so an
//! engine never starts calling a paid API because of an ambient variable.

use std::sync::Arc;
use std::time::Duration;

use super::anthropic::AnthropicSummarizer;
use super::http::RetryPolicy;
use super::offline::OfflineSummarizer;
use super::openai::{OpenAiApi, OpenAiSummarizer};
use super::pipeline::{EscalatingPipeline, PipelineSettings};
use super::{fallback, Summarizer, SummaryPipeline};
use crate::config::EngineOptions;
use crate::error::{ErrorCode, LcmError, Result};
use crate::prompts::PromptSet;
use crate::timeformat::Zone;

/// A summary provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Anthropic Messages API.
    Anthropic,
    /// OpenAI Chat Completions (and compatible servers).
    OpenAi,
    /// OpenAI Responses API.
    OpenAiResponses,
    /// The offline extractive summarizer.
    Offline,
}

impl Provider {
    /// Parses a `summaryProvider` value.
    pub fn parse(name: &str) -> Result<Provider> {
        match name.trim().to_ascii_lowercase().as_str() {
            "anthropic" => Ok(Provider::Anthropic),
            "openai" | "openai-completions" | "openai-chat" => Ok(Provider::OpenAi),
            "openai-responses" => Ok(Provider::OpenAiResponses),
            "offline" | "extractive" | "none" => Ok(Provider::Offline),
            other => Err(config_err(format!(
                "unknown summaryProvider {other:?}; use \"anthropic\", \"openai\", \"openai-responses\" or \"offline\""
            ))),
        }
    }

    /// The provider the options select (see the module docs).
    pub fn from_options(o: &EngineOptions) -> Result<Provider> {
        if let Some(p) = o
            .summary_provider
            .as_deref()
            .filter(|p| !p.trim().is_empty())
        {
            return Provider::parse(p);
        }
        let key = o.summary_api_key.as_deref().map(str::trim).unwrap_or("");
        if !key.is_empty() {
            return Ok(if key.starts_with("sk-ant-") {
                Provider::Anthropic
            } else {
                Provider::OpenAi
            });
        }
        if o.summary_base_url
            .as_deref()
            .is_some_and(|u| !u.trim().is_empty())
        {
            return Ok(Provider::OpenAi);
        }
        Ok(Provider::Offline)
    }

    fn key_var(self) -> &'static str {
        match self {
            Provider::Anthropic => "ANTHROPIC_API_KEY",
            _ => "OPENAI_API_KEY",
        }
    }
}

fn config_err(msg: impl Into<String>) -> LcmError {
    LcmError::new(ErrorCode::Config, msg)
}

/// Connection settings of an HTTP provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// `summaryBaseUrl` (provider default when absent).
    pub base_url: Option<String>,
    /// The key (option, else the provider's environment variable).
    pub api_key: Option<String>,
    /// `summaryModel` (provider default when absent).
    pub model: Option<String>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Retries and backoff.
    pub retry: RetryPolicy,
}

/// `max_tokens` sent to providers for a target: room for the footer and for models
/// that overshoot, bounded; the pipeline caps what comes back anyway.
pub fn max_output_tokens(target_tokens: i64) -> i64 {
    (target_tokens.max(1) * 2 + 512).min(32_000)
}

fn non_empty(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn provider_config(o: &EngineOptions, p: Provider) -> Result<ProviderConfig> {
    let env_key = std::env::var(p.key_var()).ok();
    let api_key = non_empty(&o.summary_api_key).or_else(|| non_empty(&env_key));
    let base_url = non_empty(&o.summary_base_url);
    let model = non_empty(&o.summary_model);
    let needs_key = p == Provider::Anthropic || base_url.is_none();
    if needs_key && api_key.is_none() {
        return Err(config_err(format!(
            "summaryProvider {p:?} needs a key: set summaryApiKey or {}",
            p.key_var()
        )));
    }
    if p != Provider::Anthropic && base_url.is_some() && model.is_none() {
        return Err(config_err(
            "summaryModel is required with summaryBaseUrl (the server's model name)",
        ));
    }
    if let Some(u) = &base_url {
        if !(u.starts_with("http://") || u.starts_with("https://")) {
            return Err(config_err(format!(
                "summaryBaseUrl must start with http:// or https://, got {u:?}"
            )));
        }
    }
    Ok(ProviderConfig {
        base_url,
        api_key,
        model,
        timeout: Duration::from_millis(o.summary_timeout_ms),
        retry: RetryPolicy {
            max_retries: o.summary_max_retries,
            base: Duration::from_millis(o.summary_retry_base_ms),
            max_wait: Duration::from_millis(o.summary_retry_max_wait_ms),
        },
    })
}

/// The summarizer the options select (without a host callback), followed by the
/// `fallbackProviders` in order when there are any ([`super::chain`]).
pub fn build_summarizer(o: &EngineOptions) -> Result<Arc<dyn Summarizer>> {
    let primary = build_one(o)?;
    if o.fallback_providers.is_empty() {
        return Ok(primary);
    }
    let first = Provider::from_options(o)?;
    let mut candidates = vec![primary];
    for f in &o.fallback_providers {
        let p = Provider::parse(&f.provider)?;
        let mut fo = o.clone();
        fo.summary_provider = Some(f.provider.clone());
        fo.summary_model = Some(f.model.clone());
        if p != first {
            // Another provider: its own default URL and environment key.
            fo.summary_base_url = None;
            fo.summary_api_key = None;
        }
        candidates.push(build_one(&fo)?);
    }
    Ok(Arc::new(super::chain::Chain::new(candidates)))
}

/// One provider's summarizer from the options.
fn build_one(o: &EngineOptions) -> Result<Arc<dyn Summarizer>> {
    let p = Provider::from_options(o)?;
    Ok(match p {
        Provider::Offline => Arc::new(OfflineSummarizer),
        Provider::Anthropic => Arc::new(AnthropicSummarizer::new(provider_config(o, p)?)?),
        Provider::OpenAi => Arc::new(OpenAiSummarizer::new(
            provider_config(o, p)?,
            OpenAiApi::Chat,
        )?),
        Provider::OpenAiResponses => Arc::new(OpenAiSummarizer::new(
            provider_config(o, p)?,
            OpenAiApi::Responses,
        )?),
    })
}

/// The summarizer that writes large files' exploration summaries, or `None` when
/// `largeFileSummaryModel` is unset (or resolves to the offline summarizer, which
/// would only re-extract what the deterministic summary holds). Resolution: a
/// `largeFileSummarizer` callback (`large_cb`); else a provider named by the
/// model's `provider/` prefix or by `largeFileSummaryProvider`, with the `summary*`
/// connection settings; else the host's summarizer callback (`host_cb`, asked for
/// that model through the request's `model`); else the provider `summaryProvider`
/// (or the configured key) selects. `LCM_CONFIG` as for `summaryProvider`.
/// Returns the summarizer and the model name to put in its requests (the whole
/// setting for a callback, the model without its provider prefix otherwise).
pub fn build_large_file_summarizer(
    o: &EngineOptions,
    large_cb: Option<Arc<dyn Summarizer>>,
    host_cb: Option<Arc<dyn Summarizer>>,
) -> Result<Option<(Arc<dyn Summarizer>, String)>> {
    let Some(model) = non_empty(&o.large_file_summary_model) else {
        return Ok(None);
    };
    if let Some(cb) = large_cb {
        return Ok(Some((cb, model)));
    }
    let (prefix, bare) = match model.split_once('/') {
        Some((p, m)) if !m.is_empty() && Provider::parse(p).is_ok() => (Some(p.to_owned()), m),
        _ => (None, model.as_str()),
    };
    let provider = prefix.or_else(|| non_empty(&o.large_file_summary_provider));
    if provider.is_none() {
        if let Some(cb) = host_cb {
            return Ok(Some((cb, model.clone())));
        }
    }
    let mut lo = o.clone();
    lo.summary_model = Some(bare.to_owned());
    if provider.is_some() {
        lo.summary_provider = provider;
    }
    let named = |e: LcmError| LcmError {
        message: format!("largeFileSummaryModel: {}", e.message),
        ..e
    };
    if Provider::from_options(&lo).map_err(named)? == Provider::Offline {
        return Ok(None);
    }
    let summarizer = build_summarizer(&lo).map_err(named)?;
    Ok(Some((summarizer, bare.to_owned())))
}

fn validate_numbers(o: &EngineOptions) -> Result<()> {
    if !(o.summary_max_overage_factor.is_finite() && o.summary_max_overage_factor >= 1.0) {
        return Err(LcmError::invalid(format!(
            "summaryMaxOverageFactor must be a number of at least 1, got {}",
            o.summary_max_overage_factor
        )));
    }
    if o.fallback_max_tokens < fallback::MIN_FALLBACK_MAX_TOKENS {
        return Err(LcmError::invalid(format!(
            "fallbackMaxTokens must be at least {}, got {}",
            fallback::MIN_FALLBACK_MAX_TOKENS,
            o.fallback_max_tokens
        )));
    }
    if o.summary_timeout_ms == 0 {
        return Err(LcmError::invalid("summaryTimeoutMs must be at least 1"));
    }
    Ok(())
}

/// Builds the engine's pipeline: checks the timezone and the numeric options, loads
/// and test-renders the prompt templates (`LCM_TEMPLATE` naming file and line), and
/// picks the summarizer (`callback` when given, else from the options; `LCM_CONFIG`
/// for an unknown provider or a missing key). Runs once, at open.
pub fn build_pipeline(
    opts: &EngineOptions,
    callback: Option<Arc<dyn Summarizer>>,
) -> Result<Arc<dyn SummaryPipeline>> {
    Zone::resolve(opts.timezone.as_deref())?;
    validate_numbers(opts)?;
    let prompts = PromptSet::load(Some(&opts.resolved_prompt_dir()))?;
    let summarizer = match callback {
        Some(cb) => cb,
        None => build_summarizer(opts)?,
    };
    let summarizer: Arc<dyn Summarizer> = Arc::new(super::meter::Metered(summarizer));
    Ok(Arc::new(EscalatingPipeline::new(
        summarizer,
        Arc::new(prompts),
        PipelineSettings::from(opts),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(f: impl FnOnce(&mut EngineOptions)) -> EngineOptions {
        let mut o = EngineOptions {
            prompt_dir: Some("/nonexistent/lcm-test-prompts".into()),
            ..Default::default()
        };
        f(&mut o);
        o
    }

    #[test]
    fn provider_selection() {
        let p = |f: fn(&mut EngineOptions)| Provider::from_options(&opts(f)).unwrap();
        assert_eq!(p(|_| {}), Provider::Offline);
        assert_eq!(
            p(|o| o.summary_api_key = Some("sk-ant-abc".into())),
            Provider::Anthropic
        );
        assert_eq!(
            p(|o| o.summary_api_key = Some("sk-proj-abc".into())),
            Provider::OpenAi
        );
        assert_eq!(
            p(|o| o.summary_base_url = Some("http://localhost:11434/v1".into())),
            Provider::OpenAi
        );
        assert_eq!(
            p(|o| o.summary_provider = Some(" OpenAI-Responses ".into())),
            Provider::OpenAiResponses
        );
        let e = Provider::from_options(&opts(|o| o.summary_provider = Some("gemini".into())));
        assert_eq!(e.unwrap_err().code, ErrorCode::Config);
    }

    #[test]
    fn configuration_errors_at_build_time() {
        let code = |o: EngineOptions| build_pipeline(&o, None).err().map(|e| e.code);
        assert_eq!(code(opts(|_| {})), None);
        assert_eq!(
            code(opts(|o| o.timezone = Some("Mars/Base".into()))),
            Some(ErrorCode::Config)
        );
        assert_eq!(
            code(opts(|o| o.summary_max_overage_factor = 0.5)),
            Some(ErrorCode::InvalidInput)
        );
        assert_eq!(
            code(opts(|o| o.fallback_max_tokens = 10)),
            Some(ErrorCode::InvalidInput)
        );
        let no_model = opts(|o| {
            o.summary_provider = Some("openai".into());
            o.summary_base_url = Some("http://127.0.0.1:1/v1".into());
        });
        assert_eq!(code(no_model), Some(ErrorCode::Config));
        let bad_url = opts(|o| {
            o.summary_base_url = Some("localhost:11434".into());
            o.summary_model = Some("llama3".into());
        });
        assert_eq!(code(bad_url), Some(ErrorCode::Config));
        let local = opts(|o| {
            o.summary_base_url = Some("http://127.0.0.1:1/v1".into());
            o.summary_model = Some("llama3".into());
        });
        assert_eq!(code(local), None);
        let keyed = opts(|o| {
            o.summary_provider = Some("anthropic".into());
            o.summary_api_key = Some("sk-ant-x".into());
        });
        assert_eq!(code(keyed), None);
    }

    #[test]
    fn output_token_allowance() {
        assert_eq!(max_output_tokens(1000), 2512);
        assert_eq!(max_output_tokens(0), 514);
        assert_eq!(max_output_tokens(1_000_000), 32_000);
    }
}
