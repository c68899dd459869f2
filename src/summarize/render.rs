//! `renderPrompt`: the summarization prompt for a depth exactly as the pipeline
//! would send it — templates from the prompt directory, the target length computed
//! as the pipeline computes it.

use crate::error::{LcmError, Result};
use crate::prompts::{PromptSet, PromptVars, RenderedPrompt};

/// Parameters of `renderPrompt` (JavaScript).
#[derive(Debug, Clone, Default, serde::Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[ts(optional_fields, rename = "RenderPromptParams")]
pub struct RenderParams {
    /// Depth of the summary (0 leaf, 1, 2, 3+).
    #[ts(as = "Option<i64>", optional)]
    pub depth: i64,
    /// The aggressive leaf policy.
    #[ts(as = "Option<bool>", optional)]
    pub aggressive: bool,
    /// Target length; default computed as the pipeline does from `sourceText`.
    pub target_tokens: Option<i64>,
    /// Preceding summary text.
    pub previous_context: Option<String>,
    /// Number of source items (default: blank-line separated blocks).
    pub child_count: Option<usize>,
    /// Formatted time range.
    pub time_range: Option<String>,
    /// The source text.
    #[ts(as = "Option<String>", optional)]
    pub source_text: String,
    /// Operator instructions.
    pub custom_instructions: Option<String>,
    /// Override directory (default `~/.config/lcm-tui/prompts`, as the engine).
    pub prompt_dir: Option<String>,
    /// For the default target (default 2400).
    pub leaf_target_tokens: Option<i64>,
    /// For the default target (default 2000).
    pub condensed_target_tokens: Option<i64>,
}

/// Renders a prompt exactly as the pipeline would (templates from `promptDir`,
/// validated like at open; `LCM_TEMPLATE` on a broken override).
pub fn render_params(p: RenderParams) -> Result<RenderedPrompt> {
    if p.depth < 0 {
        return Err(LcmError::invalid(format!(
            "depth must be 0 or more, got {}",
            p.depth
        )));
    }
    let defaults = crate::config::EngineOptions::default();
    let dir = crate::config::EngineOptions {
        prompt_dir: p.prompt_dir.clone(),
        ..Default::default()
    }
    .resolved_prompt_dir();
    let set = PromptSet::load(Some(&dir))?;
    let source = p.source_text.trim();
    let target = p.target_tokens.unwrap_or_else(|| {
        super::targets::for_depth(
            p.depth,
            crate::tokens::estimate(source).max(1),
            p.leaf_target_tokens.unwrap_or(defaults.leaf_target_tokens),
            p.condensed_target_tokens
                .unwrap_or(defaults.condensed_target_tokens),
            p.aggressive,
        )
    });
    let blocks = source
        .split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .count();
    let vars = PromptVars {
        target_tokens: target,
        previous_context: p.previous_context,
        child_count: p.child_count.unwrap_or(blocks),
        time_range: p.time_range,
        depth: p.depth,
        source_text: source.to_owned(),
        custom_instructions: p.custom_instructions,
        aggressive: p.aggressive,
    };
    set.render_full(&vars)
}
