//! The one resolver of "which summarizer": a caller's provider / model / base URL,
//! with what it left out filled from the environment (operators' commands) and
//! applied over engine options (operators' commands and per-call overrides such as
//! `rewrite({ provider, model })`).

use crate::config::EngineOptions;

/// A summarizer named by a caller; each part optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SummarizerChoice {
    /// `anthropic`, `openai`, `openai-responses` or `offline`.
    pub provider: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// The provider's base URL.
    pub base_url: Option<String>,
}

fn nonempty(v: Option<String>) -> Option<String> {
    v.filter(|s| !s.trim().is_empty())
}

fn env_first(names: &[&str]) -> Option<String> {
    names
        .iter()
        .filter_map(|n| std::env::var(n).ok())
        .map(|v| v.trim().to_owned())
        .find(|v| !v.is_empty())
}

/// The provider a model name belongs to (`claude…` → anthropic, `gpt-…`, `o1`, `o3`,
/// `o4`, `chatgpt…` → openai), if recognizable.
pub fn provider_for_model(model: &str) -> Option<&'static str> {
    let m = model.to_ascii_lowercase();
    if m.starts_with("claude") {
        Some("anthropic")
    } else if ["gpt-", "o1", "o3", "o4", "chatgpt"]
        .iter()
        .any(|p| m.starts_with(p))
    {
        Some("openai")
    } else {
        None
    }
}

impl SummarizerChoice {
    /// A choice from the given parts (blank strings count as absent).
    pub fn new(provider: Option<String>, model: Option<String>, base_url: Option<String>) -> Self {
        SummarizerChoice {
            provider: nonempty(provider),
            model: nonempty(model),
            base_url: nonempty(base_url),
        }
    }

    /// Whether nothing was named.
    pub fn is_empty(&self) -> bool {
        self.provider.is_none() && self.model.is_none() && self.base_url.is_none()
    }

    /// Fills what was not given, in order: model and base URL from
    /// `$LCM_TUI_SUMMARY_MODEL` / `$LCM_SUMMARY_MODEL` and `…_BASE_URL`; the
    /// provider from `$LCM_TUI_SUMMARY_PROVIDER` / `$LCM_SUMMARY_PROVIDER`, the
    /// model's family, a base URL (openai), then whichever API key is set
    /// (`ANTHROPIC_API_KEY`, then `OPENAI_API_KEY`). The provider stays `None` when
    /// nothing names one.
    pub fn with_environment(self) -> Self {
        let model = self
            .model
            .or_else(|| env_first(&["LCM_TUI_SUMMARY_MODEL", "LCM_SUMMARY_MODEL"]));
        let base_url = self
            .base_url
            .or_else(|| env_first(&["LCM_TUI_SUMMARY_BASE_URL", "LCM_SUMMARY_BASE_URL"]));
        let provider = self
            .provider
            .or_else(|| env_first(&["LCM_TUI_SUMMARY_PROVIDER", "LCM_SUMMARY_PROVIDER"]))
            .or_else(|| {
                model
                    .as_deref()
                    .and_then(provider_for_model)
                    .map(str::to_owned)
            })
            .or_else(|| base_url.as_ref().map(|_| "openai".to_owned()))
            .or_else(|| env_first(&["ANTHROPIC_API_KEY"]).map(|_| "anthropic".to_owned()))
            .or_else(|| env_first(&["OPENAI_API_KEY"]).map(|_| "openai".to_owned()));
        SummarizerChoice {
            provider,
            model,
            base_url,
        }
    }

    /// Writes the named parts over `o` (what was not named stays).
    pub fn apply(&self, o: &mut EngineOptions) {
        if let Some(p) = &self.provider {
            o.summary_provider = Some(p.clone());
        }
        if let Some(m) = &self.model {
            o.summary_model = Some(m.clone());
        }
        if let Some(u) = &self.base_url {
            o.summary_base_url = Some(u.clone());
        }
    }

    /// `provider (model)` for people, with the provider's default model when none
    /// was named; `None` without a provider.
    pub fn label(&self) -> Option<String> {
        let provider = self.provider.as_deref()?;
        let default = match provider {
            "anthropic" => Some(super::anthropic::DEFAULT_MODEL),
            "openai" | "openai-responses" => Some(super::openai::DEFAULT_MODEL),
            _ => None,
        };
        Some(match self.model.as_deref().or(default) {
            Some(m) => format!("{provider} ({m})"),
            None => provider.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_family_names_the_provider() {
        assert_eq!(provider_for_model("claude-3-5-haiku"), Some("anthropic"));
        assert_eq!(provider_for_model("GPT-4.1-mini"), Some("openai"));
        assert_eq!(provider_for_model("o3-mini"), Some("openai"));
        assert_eq!(provider_for_model("llama3"), None);
    }

    #[test]
    fn apply_overrides_only_what_is_named() {
        let mut o = EngineOptions {
            summary_provider: Some("offline".into()),
            summary_model: Some("m0".into()),
            ..Default::default()
        };
        SummarizerChoice::new(None, Some("m1".into()), Some(" ".into())).apply(&mut o);
        assert_eq!(o.summary_provider.as_deref(), Some("offline"));
        assert_eq!(o.summary_model.as_deref(), Some("m1"));
        assert_eq!(o.summary_base_url, None);
    }

    #[test]
    fn label_names_the_default_model() {
        let c = SummarizerChoice::new(Some("offline".into()), None, None);
        assert_eq!(c.label().as_deref(), Some("offline"));
        let c = SummarizerChoice::new(Some("anthropic".into()), Some("claude-x".into()), None);
        assert_eq!(c.label().as_deref(), Some("anthropic (claude-x)"));
        assert_eq!(SummarizerChoice::default().label(), None);
    }
}
