//! Rewriting summaries in place with the current prompts (`lcm-tui rewrite`,
//! `LcmEngine.planRewrite` / `rewrite`).
//!
//! - [`plan`]: which summaries, in which order — bottom-up by depth, chronological
//!   within a depth; a subtree is a node and all its sources, recursively.
//! - [`source`]: each summary's source text rebuilt from the database as compaction
//!   builds it (timestamped messages for leaves, time-ranged children for condensed
//!   nodes, read fresh so rewritten children feed their parents), the preceding
//!   leaf as a leaf's previous context.
//! - [`run`]: leaves one after another, condensed nodes of one depth up to
//!   `concurrency` at a time; with `apply`, each summary's `content` and
//!   `token_count` (and its full-text rows) are updated in its own transaction
//!   ([`crate::store::summaries::replace_content`]).
//!   Ids, links and context items never change. A summarizer error stops the run:
//!   rewrites already applied stay, nothing partial is written.
//! - [`call`]: the calls over a store (plan, per-call pipeline, run) the engine
//!   wraps.

pub mod call;
pub use call::RewritePreview;
pub mod plan;
pub mod run;
pub mod source;

use serde::Deserialize;

use crate::error::{LcmError, Result};

pub use plan::{PlannedSummary, Selector};
pub use run::{
    RewriteDb, RewriteEntry, RewriteFailure, RewriteOptions, RewriteProgress, RewriteReport,
};

/// Default number of condensed summaries summarized at once.
pub const DEFAULT_CONCURRENCY: usize = 4;
/// Largest accepted `concurrency`.
pub const MAX_CONCURRENCY: usize = 64;

/// `{ summaryId?, subtree?, depth?, all? }`: which summaries (exactly one of
/// `summaryId`, `depth`, `all: true`).
#[derive(Debug, Clone, Default, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields, rename = "RewriteSelector")]
pub struct SelectorParams {
    /// A summary (with everything beneath it unless `subtree: false`).
    #[serde(default)]
    pub summary_id: Option<String>,
    /// With `summaryId`: include its sources, recursively (default true).
    #[serde(default)]
    pub subtree: Option<bool>,
    /// Every summary of this depth.
    #[serde(default)]
    pub depth: Option<i64>,
    /// Every summary of the conversation.
    #[serde(default)]
    pub all: Option<bool>,
}

impl SelectorParams {
    /// The selector, or `LCM_INVALID_INPUT` unless exactly one target is given.
    pub fn selector(&self) -> Result<Selector> {
        let all = self.all == Some(true);
        let n = usize::from(self.summary_id.is_some())
            + usize::from(self.depth.is_some())
            + usize::from(all);
        if n != 1 {
            return Err(LcmError::invalid(
                "choose exactly one of summaryId, depth or all: true",
            ));
        }
        if self.subtree.is_some() && self.summary_id.is_none() {
            return Err(LcmError::invalid("subtree applies only with summaryId"));
        }
        if let Some(id) = &self.summary_id {
            if id.trim().is_empty() {
                return Err(LcmError::invalid("summaryId must be a non-empty string"));
            }
            return Ok(Selector::Summary {
                id: id.trim().to_owned(),
                subtree: self.subtree.unwrap_or(true),
            });
        }
        if let Some(d) = self.depth {
            if d < 0 {
                return Err(LcmError::invalid(format!(
                    "depth must be 0 or more, got {d}"
                )));
            }
            return Ok(Selector::Depth(d));
        }
        Ok(Selector::All)
    }
}

/// Parameters of `planRewrite`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanParams {
    /// The conversation.
    pub conversation_id: i64,
    /// A summary (with everything beneath it unless `subtree: false`).
    #[serde(default)]
    pub summary_id: Option<String>,
    /// With `summaryId`: include its sources, recursively (default true).
    #[serde(default)]
    pub subtree: Option<bool>,
    /// Every summary of this depth.
    #[serde(default)]
    pub depth: Option<i64>,
    /// Every summary of the conversation.
    #[serde(default)]
    pub all: Option<bool>,
}

impl PlanParams {
    /// The selector, or `LCM_INVALID_INPUT` unless exactly one target is given.
    pub fn selector(&self) -> Result<Selector> {
        SelectorParams {
            summary_id: self.summary_id.clone(),
            subtree: self.subtree,
            depth: self.depth,
            all: self.all,
        }
        .selector()
    }
}

/// Parameters of `rewrite`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RewriteParams {
    /// The conversation.
    pub conversation_id: i64,
    /// The targets as an object (`selector: { depth: 1 }`)…
    #[serde(default)]
    pub selector: Option<SelectorParams>,
    /// …or flat: `summaryId`.
    #[serde(default)]
    pub summary_id: Option<String>,
    /// Flat: `subtree`.
    #[serde(default)]
    pub subtree: Option<bool>,
    /// Flat: `depth`.
    #[serde(default)]
    pub depth: Option<i64>,
    /// Flat: `all`.
    #[serde(default)]
    pub all: Option<bool>,
    /// Write the new texts (default false: a dry run writes nothing).
    #[serde(default)]
    pub apply: bool,
    /// Timestamp / time-range headers in the source text (default true).
    #[serde(default = "yes")]
    pub timestamps: bool,
    /// Prompt override directory for this run.
    #[serde(default)]
    pub prompt_dir: Option<String>,
    /// Summarizer model for this run.
    #[serde(default)]
    pub model: Option<String>,
    /// Summarizer provider for this run (`anthropic`, `openai`, `openai-responses`,
    /// `offline`); the host callback otherwise.
    #[serde(default)]
    pub provider: Option<String>,
    /// Provider base URL for this run.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Condensed summaries of one depth summarized at once (default 4).
    #[serde(default)]
    pub concurrency: Option<usize>,
}

fn yes() -> bool {
    true
}

impl RewriteParams {
    /// The selector, from `selector` or the flat keys (not both).
    pub fn selector(&self) -> Result<Selector> {
        let flat = SelectorParams {
            summary_id: self.summary_id.clone(),
            subtree: self.subtree,
            depth: self.depth,
            all: self.all,
        };
        let has_flat = flat.summary_id.is_some()
            || flat.subtree.is_some()
            || flat.depth.is_some()
            || flat.all.is_some();
        match (&self.selector, has_flat) {
            (Some(_), true) => Err(LcmError::invalid(
                "give the targets either in selector or as summaryId/depth/all, not both",
            )),
            (Some(s), false) => s.selector(),
            (None, _) => flat.selector(),
        }
    }

    /// `concurrency`, checked (1 to 64; default 4).
    pub fn concurrency(&self) -> Result<usize> {
        match self.concurrency {
            None => Ok(DEFAULT_CONCURRENCY),
            Some(n) if (1..=MAX_CONCURRENCY).contains(&n) => Ok(n),
            Some(n) => Err(LcmError::invalid(format!(
                "concurrency must be between 1 and {MAX_CONCURRENCY}, got {n}"
            ))),
        }
    }
}
