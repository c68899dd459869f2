//! `afterTurn`: the turn's new messages become one ingest batch, then a threshold
//! sweep runs. This module owns the parameters and the split of a turn into those
//! two calls; the engine runs them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CompactParams, CompactResult, Mode};
use crate::ingest::{IngestBatchParams, IngestBatchResult};

/// Parameters of `afterTurn`. Keys the host passes besides these are ignored;
/// without `tokenBudget` the host's stated budget is used.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AfterTurnParams {
    /// Runtime session id.
    pub session_id: String,
    /// Stable session key.
    #[serde(default)]
    pub session_key: Option<String>,
    /// The session's messages after the turn (the whole transcript or its end).
    pub messages: Vec<Value>,
    /// How many of `messages` existed before this turn's prompt; the rest are new.
    pub pre_prompt_message_count: usize,
    /// The model's context budget, in tokens (else the host's stated budget; a
    /// turn without either is rejected).
    #[serde(default)]
    pub token_budget: Option<i64>,
    /// The host's runtime context (its `tokenBudget`).
    #[serde(default)]
    pub runtime_context: Option<Value>,
    /// The host's runtime settings (`limits.promptTokenBudget`).
    #[serde(default)]
    pub runtime_settings: Option<Value>,
    /// The host's observed token count of the live context, if known.
    #[serde(default)]
    pub current_token_count: Option<i64>,
    /// Transcript entry ids (null where unknown), parallel to `messages` or to the
    /// new messages only.
    #[serde(default)]
    pub entry_ids: Option<Vec<Option<String>>>,
    /// Heartbeat turns are neither stored nor compacted.
    #[serde(default)]
    pub is_heartbeat: bool,
    /// Instructions for this call's prompts.
    #[serde(default)]
    pub custom_instructions: Option<String>,
    /// This call's policy replacements (for its threshold sweep).
    #[serde(default)]
    pub overrides: Option<super::PolicyOverrides>,
}

/// Result of `afterTurn`.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct AfterTurnResult {
    /// The ingest of the new messages.
    pub ingest: IngestBatchResult,
    /// The threshold sweep (`compacted: false, reason: "below threshold"` when not due).
    pub compaction: CompactResult,
}

impl AfterTurnParams {
    /// The turn as an ingest of `messages[prePromptMessageCount..]` and a sweep.
    /// Entry ids may be parallel to `messages` (sliced the same way) or to the new
    /// messages only.
    pub fn split(mut self) -> crate::error::Result<(IngestBatchParams, CompactParams)> {
        let token_budget = super::host_budget(
            "afterTurn",
            self.token_budget,
            self.runtime_context.as_ref(),
            self.runtime_settings.as_ref(),
        )
        .map_err(crate::error::LcmError::invalid)?;
        let start = self.pre_prompt_message_count.min(self.messages.len());
        let total = self.messages.len();
        let entry_ids = self.entry_ids.take().map(|mut ids| {
            if ids.len() == total {
                ids.drain(..start);
            }
            ids
        });
        let ingest = IngestBatchParams {
            session_id: self.session_id.clone(),
            session_key: self.session_key.clone(),
            messages: self.messages.split_off(start),
            entry_ids,
            is_heartbeat: self.is_heartbeat,
        };
        let sweep = CompactParams {
            session_id: self.session_id,
            session_key: self.session_key,
            token_budget,
            mode: Mode::Sweep,
            force: false,
            current_token_count: self.current_token_count,
            custom_instructions: self.custom_instructions,
            target_tokens: None,
            overrides: self.overrides,
        };
        Ok((ingest, sweep))
    }
}
