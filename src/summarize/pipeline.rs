//! The escalation pipeline (the real [`SummaryPipeline`]): render the depth's prompt,
//! call the summarizer, and escalate normal → aggressive → deterministic truncation
//! while the summary is not smaller than its input. Empty output (after reasoning is
//! stripped) is retried once, then falls back. Summarizer errors are returned as they
//! are (`LCM_LLM_*`, `LCM_CALLBACK`): an error never becomes a summary, so the caller
//! writes nothing and can try again later. A summary over
//! `summaryMaxOverageFactor × target` is capped (level `capped`).

use std::sync::Arc;

use async_trait::async_trait;

use super::fallback::{cap, truncation_fallback, truncation_marker};
use super::{normalize, targets};
use super::{Level, SummarizeInput, SummarizeOutput, Summarizer, SummaryPipeline, SummaryRequest};
use crate::config::EngineOptions;
use crate::error::Result;
use crate::prompts::{PromptSet, PromptVars, SYSTEM_PROMPT};
use crate::tokens::estimate;

/// The model recorded on deterministic fallbacks.
pub const FALLBACK_MODEL: &str = "deterministic";

/// The options the pipeline uses.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineSettings {
    /// `leafTargetTokens`.
    pub leaf_target_tokens: i64,
    /// `condensedTargetTokens`.
    pub condensed_target_tokens: i64,
    /// `summaryMaxOverageFactor`.
    pub max_overage_factor: f64,
    /// `fallbackMaxTokens`.
    pub fallback_max_tokens: i64,
    /// `customInstructions`.
    pub custom_instructions: Option<String>,
    /// `summaryModel`, passed to the summarizer as a hint.
    pub model: Option<String>,
}

impl From<&EngineOptions> for PipelineSettings {
    fn from(o: &EngineOptions) -> Self {
        PipelineSettings {
            leaf_target_tokens: o.leaf_target_tokens,
            condensed_target_tokens: o.condensed_target_tokens,
            max_overage_factor: o.summary_max_overage_factor,
            fallback_max_tokens: o.fallback_max_tokens,
            custom_instructions: o.custom_instructions.clone(),
            model: o.summary_model.clone(),
        }
    }
}

/// Prompt rendering + summarizer + escalation.
pub struct EscalatingPipeline {
    summarizer: Arc<dyn Summarizer>,
    prompts: Arc<PromptSet>,
    settings: PipelineSettings,
}

/// One call's answer: cleaned text and model, or `None` when empty twice.
type Attempt = Option<(String, String)>;

impl EscalatingPipeline {
    /// A pipeline over a summarizer and a validated prompt set.
    pub fn new(
        summarizer: Arc<dyn Summarizer>,
        prompts: Arc<PromptSet>,
        settings: PipelineSettings,
    ) -> Self {
        EscalatingPipeline {
            summarizer,
            prompts,
            settings,
        }
    }

    /// The prompt templates in use.
    pub fn prompts(&self) -> &PromptSet {
        &self.prompts
    }

    /// The request for one attempt.
    pub fn request(
        &self,
        input: &SummarizeInput,
        input_tokens: i64,
        aggressive: bool,
    ) -> Result<SummaryRequest> {
        let s = &self.settings;
        let target = targets::for_depth(
            input.depth,
            input_tokens,
            s.leaf_target_tokens,
            s.condensed_target_tokens,
            aggressive,
        );
        let source = input.source_text.trim();
        let vars = PromptVars {
            target_tokens: target,
            previous_context: input.previous_context.clone(),
            child_count: input.child_count,
            time_range: input.time_range.clone(),
            depth: input.depth,
            source_text: source.to_owned(),
            custom_instructions: input
                .custom_instructions
                .clone()
                .or_else(|| s.custom_instructions.clone()),
            aggressive,
        };
        Ok(SummaryRequest {
            prompt: self.prompts.render(&vars)?,
            system_prompt: SYSTEM_PROMPT.to_owned(),
            target_tokens: target,
            depth: input.depth,
            aggressive,
            model: s.model.clone(),
            source_text: vars.source_text,
        })
    }

    /// Calls the summarizer with the request for `input`; an empty (or
    /// reasoning-only) answer is retried once, with the request rendered again (so
    /// the usual single call copies no request).
    async fn attempt(
        &self,
        input: &SummarizeInput,
        input_tokens: i64,
        aggressive: bool,
    ) -> Result<Attempt> {
        for _ in 0..2 {
            let req = self.request(input, input_tokens, aggressive)?;
            let r = self.summarizer.summarize(req).await?;
            let text = normalize::strip_reasoning(&r.content);
            if !text.is_empty() {
                return Ok(Some((text, r.model)));
            }
        }
        Ok(None)
    }

    fn fallback(&self, source: &str, input_tokens: i64) -> SummarizeOutput {
        let content = truncation_fallback(source, input_tokens, self.settings.fallback_max_tokens);
        output(
            content,
            Level::Fallback,
            FALLBACK_MODEL.into(),
            input_tokens,
        )
    }

    fn cap_if_needed(
        &self,
        depth: i64,
        text: String,
        level: Level,
        model: String,
        input_tokens: i64,
    ) -> SummarizeOutput {
        let s = &self.settings;
        let target = targets::kind_target(depth, s.leaf_target_tokens, s.condensed_target_tokens);
        let max = (target as f64 * s.max_overage_factor).ceil() as i64;
        let tokens = estimate(&text);
        if tokens > max {
            return output(cap(&text, tokens, max), Level::Capped, model, input_tokens);
        }
        output(text, level, model, input_tokens)
    }
}

fn output(content: String, level: Level, model: String, tokens_in: i64) -> SummarizeOutput {
    SummarizeOutput {
        tokens_out: estimate(&content),
        content,
        level,
        model,
        tokens_in,
    }
}

#[async_trait]
impl SummaryPipeline for EscalatingPipeline {
    async fn run(&self, input: SummarizeInput) -> Result<SummarizeOutput> {
        let source = input.source_text.trim();
        if source.is_empty() {
            return Ok(output(
                truncation_marker(0),
                Level::Fallback,
                FALLBACK_MODEL.into(),
                0,
            ));
        }
        let input_tokens = estimate(source).max(1);
        let smaller = |a: &Attempt| a.as_ref().is_some_and(|(t, _)| estimate(t) < input_tokens);
        let normal = self.attempt(&input, input_tokens, false).await?;
        let (chosen, level) = if smaller(&normal) {
            (normal, Level::Normal)
        } else if normal.is_none() {
            (None, Level::Fallback)
        } else {
            let aggressive = self.attempt(&input, input_tokens, true).await?;
            if smaller(&aggressive) {
                (aggressive, Level::Aggressive)
            } else {
                (None, Level::Fallback)
            }
        };
        match chosen {
            Some((text, model)) => {
                Ok(self.cap_if_needed(input.depth, text, level, model, input_tokens))
            }
            None => Ok(self.fallback(source, input_tokens)),
        }
    }
}

#[cfg(test)]
mod tests;
