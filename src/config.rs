//! Engine options with their defaults. Deserialized from the JavaScript options
//! object (camelCase keys); unknown keys are rejected so a typo is an error, not a
//! silently ignored setting.

use std::path::PathBuf;

use serde::Deserialize;

use crate::error::{LcmError, Result};

/// How summaries are presented in assembled context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum SummaryFormat {
    /// `<summary id kind depth descendant_count earliest_at latest_at trust>` with
    /// `<parents>` and `<content>` (the reference plugin's format).
    #[default]
    Xml,
    /// Seed 001's shorter `<summary id range depth descendants>…</summary>`.
    Compact,
}

/// Every option of the engine (`LcmOptions` adds the JavaScript-only ones). Field
/// docs name the JavaScript key. Every key is optional; unknown keys are rejected
/// (`LCM_INVALID_INPUT`).
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[ts(optional_fields)]
pub struct EngineOptions {
    /// `dbPath`: SQLite file, or `:memory:`. Default `$OPENCLAW_STATE_DIR/lcm.db`,
    /// else `~/.openclaw/lcm.db`. The reference's name `databasePath` is accepted too.
    #[serde(alias = "databasePath")]
    pub db_path: Option<String>,
    /// `busyTimeoutMs`: how long a write waits for another process's lock (default 30000).
    #[ts(as = "Option<u64>", optional)]
    pub busy_timeout_ms: u64,
    /// `mmapSizeBytes`: how much of the database file each SQLite connection reads
    /// through a memory map (`PRAGMA mmap_size`), from 0 to
    /// [`MMAP_MAX_BYTES`](crate::store::MMAP_MAX_BYTES) (just under 2 GiB).
    /// Default 0: no map, every page is read with a system call into the
    /// connection's page cache. A map saves that copy on reads of a large
    /// database, at two costs: an I/O error on a mapped page (a failing disk, a
    /// network file system, a file truncated underneath) raises `SIGBUS`, which
    /// kills the host process (no error reaches JavaScript and panic containment
    /// cannot catch it); and the mapped pages count in the process's RSS. With
    /// several processes writing one file, each commit of another process also
    /// makes SQLite unmap and map the file again.
    #[ts(as = "Option<u64>", optional)]
    pub mmap_size_bytes: i64,
    /// `timezone`: IANA zone for timestamps in prompts and XML; else `TZ`, else UTC.
    pub timezone: Option<String>,
    /// `freshTailCount`: newest raw messages never compacted or evicted (default 64).
    #[ts(as = "Option<i64>", optional)]
    pub fresh_tail_count: i64,
    /// `freshTailMaxTokens`: optional token cap on the fresh tail (the newest user
    /// turn is always kept whole).
    pub fresh_tail_max_tokens: Option<i64>,
    /// `contextThreshold`: fraction of the budget above which compaction runs (default 0.75).
    #[ts(as = "Option<f64>", optional)]
    pub context_threshold: f64,
    /// `leafChunkTokens`: cap on the messages one leaf summary covers (default 20000).
    #[ts(as = "Option<i64>", optional)]
    pub leaf_chunk_tokens: i64,
    /// `leafTargetTokens`: upper bound of a leaf summary's target length (default 2400).
    #[ts(as = "Option<i64>", optional)]
    pub leaf_target_tokens: i64,
    /// `condensedTargetTokens`: target length of a condensed summary (default 2000).
    #[ts(as = "Option<i64>", optional)]
    pub condensed_target_tokens: i64,
    /// `leafMinFanout`: leaves needed before they are condensed (default 8).
    #[ts(as = "Option<i64>", optional)]
    pub leaf_min_fanout: i64,
    /// `condensedMinFanout`: condensed nodes needed before they are condensed (default 4).
    #[ts(as = "Option<i64>", optional)]
    pub condensed_min_fanout: i64,
    /// `condensedMinFanoutHard`: fanout under pressure (default 2).
    #[ts(as = "Option<i64>", optional)]
    pub condensed_min_fanout_hard: i64,
    /// `incrementalMaxDepth`: condensation depth after an incremental leaf pass
    /// (-1 = unlimited; default 1).
    #[ts(as = "Option<i64>", optional)]
    pub incremental_max_depth: i64,
    /// `maxRounds`: sweeps `untilUnder` may run (default 10).
    #[ts(as = "Option<i64>", optional)]
    pub max_rounds: i64,
    /// `maxSweepIterations`: passes one sweep may run (default 200).
    #[ts(as = "Option<i64>", optional)]
    pub max_sweep_iterations: i64,
    /// `sweepDeadlineMs`: wall-clock limit of one sweep, and of a compaction call
    /// other than `untilUnder` (default 300000).
    #[ts(as = "Option<u64>", optional)]
    pub sweep_deadline_ms: u64,
    /// `compactUntilUnderDeadlineMs`: wall-clock limit of an `untilUnder` call, all
    /// its sweeps together (default 300000).
    #[ts(as = "Option<u64>", optional)]
    pub compact_until_under_deadline_ms: u64,
    /// `summaryPrefixTargetTokens`: a sweep condenses beyond `incrementalMaxDepth`
    /// (at the hard fanout) while the summaries outside the fresh tail weigh more
    /// than this, or the context is over its target. Default
    /// max(condensedTargetTokens, min(leafChunkTokens, ⌊threshold / 2⌋)).
    #[ts(optional)]
    pub summary_prefix_target_tokens: Option<i64>,
    /// `summaryMaxOverageFactor`: a summary over factor × target is capped (default 3).
    #[ts(as = "Option<f64>", optional)]
    pub summary_max_overage_factor: f64,
    /// `fallbackMaxTokens`: size of the deterministic truncation fallback (default 512).
    #[ts(as = "Option<i64>", optional)]
    pub fallback_max_tokens: i64,
    /// `maxExpandTokens`: default token cap of expansions and grants (default 4000).
    #[ts(as = "Option<i64>", optional)]
    pub max_expand_tokens: i64,
    /// `largeFileTokenThreshold`: file blocks above this many tokens are stored
    /// outside the database (default 25000). The reference's other name
    /// `largeFileThresholdTokens` is accepted too.
    #[serde(alias = "largeFileThresholdTokens")]
    #[ts(as = "Option<i64>", optional)]
    pub large_file_token_threshold: i64,
    /// `largeFilesDir`: where large files go. Default `lcm-files` beside the database
    /// (`~/.openclaw/lcm-files` for the default database).
    pub large_files_dir: Option<String>,
    /// `largeFileSummaryModel`: model that writes the exploration summary of large
    /// files, replacing the deterministic one (`summarizeLargeFiles`). Unset: the
    /// deterministic summary stays and no model is called. `provider/model` names a
    /// provider when the prefix is one (`anthropic/…`).
    pub large_file_summary_model: Option<String>,
    /// `largeFileSummaryProvider`: provider of `largeFileSummaryModel` when it names
    /// none (`anthropic`, `openai`, `openai-responses`); the connection settings are
    /// the `summary*` ones. Default: a `largeFileSummarizer` callback, else the host
    /// `summarizer` callback, else the provider `summaryProvider` selects.
    pub large_file_summary_provider: Option<String>,
    /// `promptDir`: per-file overrides of the prompt templates. Default
    /// `~/.config/lcm-tui/prompts`.
    pub prompt_dir: Option<String>,
    /// `customInstructions`: operator instructions added to every prompt.
    pub custom_instructions: Option<String>,
    /// `stripInjectedContextTags`: XML-style tags whose blocks memory plugins inject
    /// into user messages (`<relevant-memories>…</relevant-memories>`); they are left
    /// out of the summarizer's input, the stored message stays exact (default
    /// `active_memory_plugin`, `relevant-memories`, `relevant_memories`,
    /// `hindsight_memories`; `[]` disables).
    #[ts(as = "Option<Vec<String>>", optional)]
    pub strip_injected_context_tags: Vec<String>,
    /// `summaryFormat`: `xml` (default) or `compact`.
    #[ts(as = "Option<SummaryFormat>", optional)]
    pub summary_format: SummaryFormat,
    /// `maxMessageBytes`: larger messages are rejected with LCM_INVALID_INPUT (default 64 MiB).
    #[ts(as = "Option<usize>", optional)]
    pub max_message_bytes: usize,
    /// `summaryProvider`: `anthropic`, `openai`, `openai-responses`, `offline`; the
    /// host callback wins when given. Default: offline unless a key is configured.
    pub summary_provider: Option<String>,
    /// `summaryModel`: model name for the provider.
    pub summary_model: Option<String>,
    /// `summaryBaseUrl`: provider base URL (OpenAI-compatible servers, proxies).
    pub summary_base_url: Option<String>,
    /// `summaryApiKey`: provider key; else `ANTHROPIC_API_KEY` / `OPENAI_API_KEY`.
    pub summary_api_key: Option<String>,
    /// `summaryTimeoutMs`: per-request timeout (default 60000).
    #[ts(as = "Option<u64>", optional)]
    pub summary_timeout_ms: u64,
    /// `summaryMaxRetries`: retries on 429 / 5xx / timeouts (default 3).
    #[ts(as = "Option<u32>", optional)]
    pub summary_max_retries: u32,
    /// `summaryRetryBaseMs`: first retry backoff in ms; doubles per retry (default 500).
    #[ts(as = "Option<u64>", optional)]
    pub summary_retry_base_ms: u64,
    /// `summaryRetryMaxWaitMs`: cap on one retry wait, including a server's
    /// `retry-after` (default 30000).
    #[ts(as = "Option<u64>", optional)]
    pub summary_retry_max_wait_ms: u64,
    /// `fallbackProviders`: summarizers tried in order when the configured one is
    /// overloaded, times out, is rate limited or answers something unusable (after
    /// its own retries). A fallback of the configured provider reuses its base URL
    /// and key; another provider uses its default URL and its environment key.
    #[ts(as = "Option<Vec<FallbackProvider>>", optional)]
    pub fallback_providers: Vec<FallbackProvider>,
    /// `freshTailMaxBudgetRatio`: a token cap on the fresh tail as a share of each
    /// call's token budget (with `freshTailMaxTokens`, the smaller wins; the newest
    /// user turn is always kept whole). With `contextThreshold` it sets the headroom
    /// a compaction leaves: a tail that fills the threshold on its own would be
    /// compacted a few messages at a time, every turn. Default none.
    pub fresh_tail_max_budget_ratio: Option<f64>,
    /// `retention`: policies that archive, then prune, idle conversations by
    /// session-key glob (first match wins; default none: nothing is ever removed).
    #[ts(as = "Option<Vec<crate::retention::RetentionPolicy>>", optional)]
    pub retention: Vec<crate::retention::RetentionPolicy>,
    /// `archiveDir`: where retention writes archives. Default `archive` beside the
    /// large-files directory (`~/.openclaw/archive` for the default database).
    pub archive_dir: Option<String>,
    /// `maxDatabaseBytes`: soft cap on the database file; over it, `prune` applies
    /// the pruning policies ahead of their days, oldest first (with no policy it
    /// only warns).
    pub max_database_bytes: Option<i64>,
}

/// The fresh tail's token cap under `budget`: `freshTailMaxTokens` and
/// `freshTailMaxBudgetRatio × budget`, the smaller; none when neither is set.
pub fn fresh_tail_cap(o: &EngineOptions, budget: i64) -> Option<i64> {
    let share = o
        .fresh_tail_max_budget_ratio
        .filter(|r| r.is_finite() && *r > 0.0)
        .map(|r| (r * budget.max(0) as f64).floor() as i64);
    match (o.fresh_tail_max_tokens, share) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// One `fallbackProviders` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FallbackProvider {
    /// `anthropic`, `openai`, `openai-responses` or `offline`.
    pub provider: String,
    /// The provider's model name.
    pub model: String,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            db_path: None,
            busy_timeout_ms: 30_000,
            mmap_size_bytes: 0,
            timezone: None,
            fresh_tail_count: 64,
            fresh_tail_max_tokens: None,
            context_threshold: 0.75,
            leaf_chunk_tokens: 20_000,
            leaf_target_tokens: 2_400,
            condensed_target_tokens: 2_000,
            leaf_min_fanout: 8,
            condensed_min_fanout: 4,
            condensed_min_fanout_hard: 2,
            incremental_max_depth: 1,
            max_rounds: 10,
            max_sweep_iterations: 200,
            sweep_deadline_ms: 300_000,
            compact_until_under_deadline_ms: 300_000,
            summary_prefix_target_tokens: None,
            summary_max_overage_factor: 3.0,
            fallback_max_tokens: 512,
            max_expand_tokens: 4_000,
            large_file_token_threshold: 25_000,
            large_files_dir: None,
            large_file_summary_model: None,
            large_file_summary_provider: None,
            prompt_dir: None,
            custom_instructions: None,
            strip_injected_context_tags: crate::compaction::source::DEFAULT_INJECTED_TAGS
                .iter()
                .map(|t| (*t).to_owned())
                .collect(),
            summary_format: SummaryFormat::Xml,
            max_message_bytes: 64 * 1024 * 1024,
            summary_provider: None,
            summary_model: None,
            summary_base_url: None,
            summary_api_key: None,
            summary_timeout_ms: 60_000,
            summary_max_retries: 3,
            summary_retry_base_ms: 500,
            summary_retry_max_wait_ms: 30_000,
            fallback_providers: Vec::new(),
            fresh_tail_max_budget_ratio: None,
            retention: Vec::new(),
            archive_dir: None,
            max_database_bytes: None,
        }
    }
}

/// The user's home directory.
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Expands a leading `~/`.
pub fn expand_home(p: &str) -> PathBuf {
    match p.strip_prefix("~/") {
        Some(rest) => home_dir().join(rest),
        None if p == "~" => home_dir(),
        None => PathBuf::from(p),
    }
}

/// `$OPENCLAW_STATE_DIR`, else `~/.openclaw`.
pub fn state_dir() -> PathBuf {
    std::env::var_os("OPENCLAW_STATE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home_dir().join(".openclaw"))
}

impl EngineOptions {
    /// Parses options from JSON, naming the offending key on error.
    pub fn from_json(v: serde_json::Value) -> Result<Self> {
        let opts: EngineOptions = serde_json::from_value(v)
            .map_err(|e| LcmError::invalid(format!("invalid engine options: {e}")))?;
        opts.validate()?;
        Ok(opts)
    }

    /// Checks ranges.
    pub fn validate(&self) -> Result<()> {
        for p in &self.retention {
            p.validate()?;
        }
        if self.max_database_bytes.is_some_and(|b| b <= 0) {
            return Err(LcmError::invalid(
                "maxDatabaseBytes must be a positive number of bytes",
            ));
        }
        let positive = [
            ("leafChunkTokens", self.leaf_chunk_tokens),
            ("leafTargetTokens", self.leaf_target_tokens),
            ("condensedTargetTokens", self.condensed_target_tokens),
            ("leafMinFanout", self.leaf_min_fanout),
            ("condensedMinFanout", self.condensed_min_fanout),
            ("condensedMinFanoutHard", self.condensed_min_fanout_hard),
            ("maxRounds", self.max_rounds),
            ("maxSweepIterations", self.max_sweep_iterations),
            ("maxExpandTokens", self.max_expand_tokens),
            ("largeFileTokenThreshold", self.large_file_token_threshold),
        ];
        for (name, v) in positive {
            if v < 1 {
                return Err(LcmError::invalid(format!(
                    "{name} must be at least 1, got {v}"
                )));
            }
        }
        if !(0..=crate::store::MMAP_MAX_BYTES).contains(&self.mmap_size_bytes) {
            return Err(LcmError::invalid(format!(
                "mmapSizeBytes must be between 0 and {} (SQLite's ceiling), got {}",
                crate::store::MMAP_MAX_BYTES,
                self.mmap_size_bytes
            )));
        }
        if self.summary_prefix_target_tokens.is_some_and(|t| t < 1) {
            return Err(LcmError::invalid(
                "summaryPrefixTargetTokens must be at least 1",
            ));
        }
        if self.sweep_deadline_ms == 0 || self.compact_until_under_deadline_ms == 0 {
            return Err(LcmError::invalid(
                "sweepDeadlineMs and compactUntilUnderDeadlineMs must be at least 1",
            ));
        }
        if self.fresh_tail_count < 0 {
            return Err(LcmError::invalid("freshTailCount must not be negative"));
        }
        if !(self.context_threshold > 0.0 && self.context_threshold <= 1.0) {
            return Err(LcmError::invalid(format!(
                "contextThreshold must be in (0, 1], got {}",
                self.context_threshold
            )));
        }
        if let Some(r) = self.fresh_tail_max_budget_ratio {
            if !(r > 0.0 && r <= 1.0) {
                return Err(LcmError::invalid(format!(
                    "freshTailMaxBudgetRatio must be in (0, 1], got {r}"
                )));
            }
        }
        for f in &self.fallback_providers {
            crate::summarize::Provider::parse(&f.provider)?;
        }
        Ok(())
    }

    /// The database path to open.
    pub fn resolved_db_path(&self) -> String {
        match &self.db_path {
            Some(p) if p == ":memory:" => p.clone(),
            Some(p) => expand_home(p).to_string_lossy().into_owned(),
            None => state_dir().join("lcm.db").to_string_lossy().into_owned(),
        }
    }

    /// The large-files directory: `largeFilesDir`, else `lcm-files` beside the
    /// database file (for the default database that is `~/.openclaw/lcm-files`, the
    /// reference plugin's location), else, for `:memory:`, a per-process temporary one.
    pub fn resolved_large_files_dir(&self) -> PathBuf {
        if let Some(p) = &self.large_files_dir {
            return expand_home(p);
        }
        let db = self.resolved_db_path();
        if db == ":memory:" || db.starts_with("file:") {
            return std::env::temp_dir().join(format!("lcm-files-{}", std::process::id()));
        }
        match std::path::Path::new(&db).parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.join("lcm-files"),
            _ => PathBuf::from("lcm-files"),
        }
    }

    /// Where retention writes archives: `archiveDir`, else `archive` beside the
    /// large-files directory.
    pub fn resolved_archive_dir(&self) -> PathBuf {
        if let Some(p) = &self.archive_dir {
            return expand_home(p);
        }
        let files = self.resolved_large_files_dir();
        match files.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.join("archive"),
            _ => PathBuf::from("archive"),
        }
    }

    /// The prompt override directory.
    pub fn resolved_prompt_dir(&self) -> PathBuf {
        expand_home(
            self.prompt_dir
                .as_deref()
                .unwrap_or("~/.config/lcm-tui/prompts"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_keys_and_bad_ranges_are_errors() {
        assert!(EngineOptions::from_json(json!({"freshTail": 3}))
            .unwrap_err()
            .message
            .contains("freshTail"));
        assert!(EngineOptions::from_json(json!({"contextThreshold": 2})).is_err());
        let o =
            EngineOptions::from_json(json!({"dbPath": ":memory:", "freshTailCount": 8})).unwrap();
        assert_eq!(o.fresh_tail_count, 8);
        assert_eq!(o.resolved_db_path(), ":memory:");
    }

    #[test]
    fn the_memory_map_is_off_by_default_and_bounded_by_sqlites_ceiling() {
        assert_eq!(EngineOptions::default().mmap_size_bytes, 0);
        let max = crate::store::MMAP_MAX_BYTES;
        for ok in [0, 1 << 20, max] {
            let o = EngineOptions::from_json(json!({ "mmapSizeBytes": ok })).unwrap();
            assert_eq!(o.mmap_size_bytes, ok);
        }
        for bad in [json!(-1), json!(max + 1), json!(1.5), json!("1")] {
            let e = EngineOptions::from_json(json!({ "mmapSizeBytes": bad })).unwrap_err();
            assert_eq!(e.code, crate::error::ErrorCode::InvalidInput, "{bad}");
        }
        let e = EngineOptions::from_json(json!({ "mmapSizeBytes": max + 1 })).unwrap_err();
        assert!(e.message.contains("mmapSizeBytes"), "{}", e.message);
    }
}
