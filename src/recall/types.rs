//! Parameter and result types of the recall calls (`grep`, `describe`, `expand`,
//! `warmRecallIndex`, `getMessages`).

use serde::{Deserialize, Serialize};

use super::describe::{FileDescription, SummaryDescription};
use super::expand::Walk;
use super::grants::GrantInfo;
use super::grep::{MessageHit, Mode, Scope, ScopeStats, Sort, SummaryHit};

/// Parameters of `grep`. Needs `conversationId`, `allConversations: true` or `grantId`.
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct GrepParams {
    /// A regex (mode `regex`, Rust syntax, at most 1000 bytes) or full-text terms
    /// (quoted phrases kept).
    pub pattern: String,
    /// Default `regex`.
    #[serde(default)]
    #[ts(as = "Option<Mode>", optional)]
    pub mode: Mode,
    /// Default `both`.
    #[serde(default)]
    #[ts(as = "Option<Scope>", optional)]
    pub scope: Scope,
    /// Search one conversation.
    #[serde(default)]
    pub conversation_id: Option<i64>,
    /// Search these conversations (a session family: the active conversation of
    /// a key and its archived ones). Ignored when `conversationId` is given.
    #[serde(default)]
    pub conversation_ids: Option<Vec<i64>>,
    /// Search every conversation.
    #[serde(default)]
    pub all_conversations: Option<bool>,
    /// Inclusive lower bound, ISO-8601.
    #[serde(default)]
    pub since: Option<String>,
    /// Exclusive upper bound, ISO-8601; must be later than `since`.
    #[serde(default)]
    pub before: Option<String>,
    /// Results per scope, 1–200 (default 50).
    #[serde(default)]
    pub limit: Option<i64>,
    /// full_text only (regex is always newest first). Default `recency`.
    #[serde(default)]
    #[ts(as = "Option<Sort>", optional)]
    pub sort: Sort,
    /// Run under a delegation grant (scope and token budget).
    #[serde(default)]
    pub grant_id: Option<String>,
}

/// Result of `grep`.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct GrepResult {
    /// The pattern as given.
    pub pattern: String,
    /// Mode used.
    pub mode: Mode,
    /// Scope used.
    pub scope: Scope,
    /// Order used.
    pub sort: Sort,
    /// Conversations searched (`null` = all).
    pub conversation_ids: Option<Vec<i64>>,
    /// Matching messages, in result order.
    pub messages: Vec<MessageHit>,
    /// Matching summaries, in result order.
    pub summaries: Vec<SummaryHit>,
    /// messages + summaries returned.
    pub total_matches: usize,
    /// True when a scan budget stopped a search before its scope was covered.
    pub truncated: bool,
    /// How the message search ran.
    pub message_stats: Option<ScopeStats>,
    /// How the summary search ran.
    pub summary_stats: Option<ScopeStats>,
    /// Wall time in ms.
    pub elapsed_ms: f64,
    /// The grant's state after this call, when run under one.
    pub grant: Option<GrantInfo>,
    /// The `lcm_grep` tool text (`## LCM Grep Results` …), ready to print.
    pub text: String,
}

/// Options of `describe`.
#[derive(Debug, Clone, Default, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct DescribeOptions {
    /// The item must belong to this conversation, else the result is null.
    #[serde(default)]
    pub conversation_id: Option<i64>,
    /// The item must belong to one of these conversations (a session family).
    #[serde(default)]
    pub conversation_ids: Option<Vec<i64>>,
    /// Explicitly allow any conversation.
    #[serde(default)]
    pub all_conversations: Option<bool>,
    /// Budget cap marking manifest nodes in/over budget (default: the grant's
    /// remaining budget, else `maxExpandTokens`).
    #[serde(default)]
    pub token_cap: Option<i64>,
    /// Delegation grant to run under.
    #[serde(default)]
    pub grant_id: Option<String>,
    /// Files: include content for an agent, bounded by `expandFileMaxBytes`.
    #[serde(default)]
    pub expand_file: Option<bool>,
    /// Files: bound of `expandFile` (default 32768, clamped to 1024–512000).
    #[serde(default)]
    pub expand_file_max_bytes: Option<i64>,
    /// Files: first line (1-based).
    #[serde(default)]
    pub start_line: Option<i64>,
    /// Files: last line (1-based, inclusive).
    #[serde(default)]
    pub end_line: Option<i64>,
    /// Files: the whole content, byte-exact, unbounded (programmatic recovery).
    #[serde(default)]
    pub include_content: Option<bool>,
}

/// Result of `describe`.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct DescribeResult {
    /// The id described.
    pub id: String,
    /// `summary` or `file`.
    #[serde(rename = "type")]
    #[ts(type = "\"summary\" | \"file\"")]
    pub kind: String,
    /// Summary details.
    pub summary: Option<SummaryDescription>,
    /// File details.
    pub file: Option<FileDescription>,
    /// The grant's state after this call.
    pub grant: Option<GrantInfo>,
    /// The `lcm_describe` tool text (`LCM_SUMMARY …` / `## LCM File: …`).
    pub text: String,
}

/// Parameters of `expand`: `summaryId` and/or `summaryIds`, else `query`.
#[derive(Debug, Clone, Default, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct ExpandParams {
    /// One root.
    #[serde(default)]
    pub summary_id: Option<String>,
    /// Several roots, in priority order (after `summaryId`).
    #[serde(default)]
    pub summary_ids: Option<Vec<String>>,
    /// Full-text query over summaries in scope, used when no id is given.
    #[serde(default)]
    pub query: Option<String>,
    /// Levels of sources to descend (default 3; `maxDepth` is accepted too).
    #[serde(default, alias = "maxDepth")]
    pub depth: Option<i64>,
    /// Also return the original messages of leaves (default false).
    #[serde(default)]
    pub include_messages: Option<bool>,
    /// Token cap (default `maxExpandTokens`; a grant's remaining budget caps it).
    #[serde(default)]
    pub token_cap: Option<i64>,
    /// Delegation grant to run under.
    #[serde(default)]
    pub grant_id: Option<String>,
    /// Roots must belong to this conversation.
    #[serde(default)]
    pub conversation_id: Option<i64>,
    /// Roots must belong to one of these conversations (a session family).
    #[serde(default)]
    pub conversation_ids: Option<Vec<i64>>,
    /// Explicitly allow any conversation.
    #[serde(default)]
    pub all_conversations: Option<bool>,
}

/// Result of `expand`.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct ExpandResult {
    /// The walk.
    #[serde(flatten)]
    pub walk: Walk,
    /// Roots and reached summaries.
    pub cited_ids: Vec<String>,
    /// Token cap applied.
    pub token_cap: i64,
    /// Depth applied.
    pub depth: i64,
    /// The grant's state after this call.
    pub grant: Option<GrantInfo>,
    /// `## Expansion Results …` text for a sub-agent.
    pub text: String,
}

/// State of the in-memory message catalog behind `grep` (`warmRecallIndex`).
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "RecallIndexInfo")]
pub struct IndexInfo {
    /// Messages indexed.
    pub indexed_messages: usize,
    /// Approximate bytes held.
    pub index_bytes: usize,
    /// Time the call took.
    pub elapsed_ms: f64,
}

/// Options of `getMessages`.
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetMessagesOptions {
    /// Re-inline externalized large files (default true: messages exactly as
    /// ingested). False gives the stored form with `[LCM File: …]` references.
    #[serde(default = "yes")]
    #[ts(as = "Option<bool>", optional)]
    pub expand_files: bool,
}

fn yes() -> bool {
    true
}

impl Default for GetMessagesOptions {
    fn default() -> Self {
        GetMessagesOptions { expand_files: true }
    }
}
