//! Summarization: the low-level [`Summarizer`] (a prompt in, text out: host
//! callback, Anthropic, OpenAI, offline extractive) and the [`SummaryPipeline`] the
//! compaction engine calls (prompt rendering + escalation + level bookkeeping).

pub mod anthropic;
pub mod chain;
pub mod choice;
pub mod fallback;
pub mod http;
pub mod meter;
pub mod normalize;
pub mod offline;
pub mod openai;
pub mod pipeline;
pub mod render;
mod select;
pub mod targets;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::Result;

pub use choice::SummarizerChoice;
pub use pipeline::{EscalatingPipeline, PipelineSettings};
pub use render::{render_params, RenderParams};
pub use select::{
    build_large_file_summarizer, build_pipeline, build_summarizer, max_output_tokens, Provider,
    ProviderConfig,
};

/// One request to a summarizer.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct SummaryRequest {
    /// The rendered prompt (the user message).
    pub prompt: String,
    /// The system prompt.
    pub system_prompt: String,
    /// Target length of the answer, in tokens.
    pub target_tokens: i64,
    /// Depth of the summary being built (0 = leaf).
    pub depth: i64,
    /// Whether this is the aggressive retry.
    pub aggressive: bool,
    /// Model hint (the configured model), if any.
    pub model: Option<String>,
    /// The source text alone (what the prompt wraps), for extractive summarizers.
    pub source_text: String,
}

/// A summarizer's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryResponse {
    /// The summary text (reasoning already stripped).
    pub content: String,
    /// The model that produced it.
    pub model: String,
}

/// A prompt in, summary text out.
#[async_trait]
pub trait Summarizer: Send + Sync {
    /// Produces a summary. Errors carry LCM_LLM_* / LCM_CALLBACK codes.
    async fn summarize(&self, req: SummaryRequest) -> Result<SummaryResponse>;
    /// A short name for logs and results (`offline`, `anthropic`, `callback`, …).
    fn name(&self) -> &str;
}

/// How a summary was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
#[ts(rename = "SummaryLevel")]
pub enum Level {
    /// The normal prompt produced a smaller summary.
    Normal,
    /// The aggressive prompt was needed.
    Aggressive,
    /// Deterministic truncation (`[Truncated from N tokens]`).
    Fallback,
    /// The summary was over `summaryMaxOverageFactor` × target and was capped.
    Capped,
}

/// What the compaction engine asks the pipeline for.
#[derive(Debug, Clone, Default)]
pub struct SummarizeInput {
    /// Depth of the summary to build (0 = leaf, 1 = first condensed level, …).
    pub depth: i64,
    /// Source text with timestamp / time-range headers.
    pub source_text: String,
    /// Up to two preceding summaries (leaf and depth-1 builds only).
    pub previous_context: Option<String>,
    /// Number of source items.
    pub child_count: usize,
    /// Source items the summary covers but `source_text` leaves out: messages the
    /// host keeps out of the model's context (`excludeFromContext`).
    pub hidden_count: usize,
    /// Time range of the sources, formatted.
    pub time_range: Option<String>,
    /// Per-call operator instructions (override the configured ones).
    pub custom_instructions: Option<String>,
}

/// Parameters of `summarizeText` (JavaScript): a source text run through the pipeline.
#[derive(Debug, Clone, Default, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct SummarizeTextParams {
    /// Depth of the summary to build (default 0, a leaf).
    #[serde(default)]
    #[ts(as = "Option<i64>", optional)]
    pub depth: i64,
    /// The source text, with its `[…]` headers.
    pub source_text: String,
    /// Preceding summary text (leaf and depth-1 prompts).
    #[serde(default)]
    pub previous_context: Option<String>,
    /// Number of source items (default: the blank-line separated blocks).
    #[serde(default)]
    pub child_count: Option<usize>,
    /// Formatted time range of the sources.
    #[serde(default)]
    pub time_range: Option<String>,
    /// Instructions for this call (instead of the configured ones).
    #[serde(default)]
    pub custom_instructions: Option<String>,
}

impl SummarizeTextParams {
    /// The pipeline input; a negative depth is `LCM_INVALID_INPUT`.
    pub fn into_input(self) -> Result<SummarizeInput> {
        if self.depth < 0 {
            return Err(crate::error::LcmError::invalid(format!(
                "depth must be 0 or more, got {}",
                self.depth
            )));
        }
        let blocks = self
            .source_text
            .split("\n\n")
            .filter(|b| !b.trim().is_empty())
            .count();
        Ok(SummarizeInput {
            depth: self.depth,
            child_count: self.child_count.unwrap_or(blocks),
            hidden_count: 0,
            source_text: self.source_text,
            previous_context: self.previous_context,
            time_range: self.time_range,
            custom_instructions: self.custom_instructions,
        })
    }
}

/// The pipeline's answer.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "SummarizeResult")]
pub struct SummarizeOutput {
    /// Final summary text.
    pub content: String,
    /// How it was obtained.
    pub level: Level,
    /// Model that produced it (`deterministic` for fallbacks).
    pub model: String,
    /// Estimated tokens of the source.
    pub tokens_in: i64,
    /// Estimated tokens of the summary.
    pub tokens_out: i64,
}

/// Prompt rendering + summarizer + escalation, as one call. Errors: an auth error
/// (`LCM_LLM_AUTH`) or a failing host callback means *no summary may be written*.
#[async_trait]
pub trait SummaryPipeline: Send + Sync {
    /// Summarizes one chunk.
    async fn run(&self, input: SummarizeInput) -> Result<SummarizeOutput>;
}
