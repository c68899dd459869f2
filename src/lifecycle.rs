//! Session lifecycle: what `/new`, `/reset`, the host's idle / daily / compaction
//! rotations and deletions do to a session key's conversation, each one write
//! transaction (the caller's), idempotent for the ending session (a second event
//! for the same ending session id, before any new turn, changes nothing).
//!
//! - `new`: the conversation stays; its context list keeps only summaries of depth
//!   ≥ the retain depth ([`store::prune`]); nothing is deleted.
//! - `reset`, `idle`, `daily`, `compaction`: archived, and a fresh active
//!   conversation takes the key.
//! - `deleted`: archived, no successor.
//! - `restart`, `shutdown`, `unknown`: nothing changes (a real rollover after an
//!   unknown end is caught by `bootstrap`'s rollover rule).
//! - `continued` (ours): the session goes on under `nextSessionId`.

use rusqlite::Transaction;
use serde::{Deserialize, Serialize};

use crate::error::{LcmError, Result};
use crate::store::conversations::{self, ArchiveCause, ConversationRecord, SessionRef};
use crate::store::prune;

/// `/new`'s default retain depth (the reference's `newSessionRetainDepth`): summaries
/// of depth ≥ 2 stay in the context, everything below leaves it.
pub const DEFAULT_RETAIN_DEPTH: i64 = 2;

/// Why a session ended (OpenClaw's `session_end` / `before_reset` reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum EndReason {
    /// `/new`: prune the context to high-level summaries.
    New,
    /// `/reset`: archive and start fresh.
    Reset,
    /// Idle reset: archive and start fresh.
    Idle,
    /// Daily reset: archive and start fresh.
    Daily,
    /// The host rotated after its compaction: archive and start fresh.
    Compaction,
    /// The session was deleted: archive, no successor.
    Deleted,
    /// Gateway shutdown: nothing changes.
    Shutdown,
    /// Gateway restart: nothing changes.
    Restart,
    /// Unknown: nothing changes.
    Unknown,
    /// Not a host reason: the session continues under `nextSessionId` (OpenClaw's
    /// `session_start` with `resumedFrom`); the conversation takes the new id.
    Continued,
}

impl EndReason {
    /// The archive cause of a reason that archives.
    pub fn archive_cause(self) -> Option<ArchiveCause> {
        match self {
            Self::Reset => Some(ArchiveCause::Reset),
            Self::Idle => Some(ArchiveCause::Idle),
            Self::Daily => Some(ArchiveCause::Daily),
            Self::Compaction => Some(ArchiveCause::Compaction),
            Self::Deleted => Some(ArchiveCause::Deleted),
            Self::New | Self::Shutdown | Self::Restart | Self::Unknown | Self::Continued => None,
        }
    }
}

/// `endSession` parameters.
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(rename = "EndSessionParams")]
pub struct EndSessionParams {
    /// The ending session's id.
    pub session_id: String,
    /// Its stable key (the conversation is found by key first).
    #[ts(optional)]
    pub session_key: Option<String>,
    /// Why it ended.
    pub reason: EndReason,
    /// The session id that follows, when the host says.
    #[ts(optional)]
    pub next_session_id: Option<String>,
    /// `new` only: summaries of depth ≥ this stay in the context (−1 keeps
    /// everything, 0 keeps all summaries; default 2).
    #[ts(optional)]
    pub retain_depth: Option<i64>,
}

/// What an end-of-session event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub enum LifecycleAction {
    /// The context list was pruned (`new`).
    Pruned,
    /// The conversation was archived (with a successor unless deleted).
    Archived,
    /// Nothing changes for this reason (restart, shutdown, unknown).
    Kept,
    /// The conversation continues under the next session id (`continued`).
    Continued,
    /// This ending session was already handled (a second event for it).
    AlreadyHandled,
    /// No conversation for the session.
    NoConversation,
}

/// `endSession` result.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct EndSessionResult {
    /// What was done.
    pub action: LifecycleAction,
    /// The conversation the event applied to.
    pub conversation_id: Option<i64>,
    /// The fresh active conversation of the key, after an archive.
    pub successor_id: Option<i64>,
    /// The archive cause written.
    pub cause: Option<ArchiveCause>,
    /// Message items taken out of the context (`new`).
    pub pruned_messages: usize,
    /// Summary items taken out of the context (`new`).
    pub pruned_summaries: usize,
    /// Items left in the context list (`new`).
    pub kept_items: usize,
}

impl EndSessionResult {
    fn of(action: LifecycleAction, conversation_id: Option<i64>) -> Self {
        Self {
            action,
            conversation_id,
            successor_id: None,
            cause: None,
            pruned_messages: 0,
            pruned_summaries: 0,
            kept_items: 0,
        }
    }
}

fn non_empty(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// Applies an end-of-session event (see the module doc) in `tx`.
pub fn end_session(tx: &Transaction, p: &EndSessionParams) -> Result<EndSessionResult> {
    let ending = p.session_id.trim();
    if ending.is_empty() {
        return Err(LcmError::invalid(
            "endSession: sessionId must be a non-empty string",
        ));
    }
    let key = non_empty(&p.session_key);
    let next = non_empty(&p.next_session_id);
    let found = conversations::find(
        tx,
        &SessionRef {
            session_id: ending.to_owned(),
            session_key: key.map(str::to_owned),
        },
    )?;
    let Some(conv) = found else {
        return Ok(EndSessionResult::of(LifecycleAction::NoConversation, None));
    };
    let id = conv.conversation_id;
    if matches!(
        p.reason,
        EndReason::Shutdown | EndReason::Restart | EndReason::Unknown
    ) {
        return Ok(EndSessionResult::of(LifecycleAction::Kept, Some(id)));
    }
    if conv.ended_session_id.as_deref() == Some(ending)
        && !crate::store::context::has_message_item(tx, id)?
    {
        // The other hook of the same transition (before_reset, then session_end),
        // before any new turn: only learn the next session id. (A host that keeps
        // the session id across `/reset` ends it again later, after new turns.)
        if let Some(next) = next {
            if conv.session_id == ending {
                conversations::adopt_session(tx, id, next)?;
            }
        }
        return Ok(EndSessionResult::of(
            LifecycleAction::AlreadyHandled,
            Some(id),
        ));
    }
    if p.reason == EndReason::Continued {
        let Some(next) = next else {
            return Err(LcmError::invalid(
                "endSession: reason continued needs nextSessionId",
            ));
        };
        conversations::mark_ended(tx, id, ending, Some(next))?;
        return Ok(EndSessionResult::of(LifecycleAction::Continued, Some(id)));
    }
    if p.reason == EndReason::New {
        let depth = p.retain_depth.unwrap_or(DEFAULT_RETAIN_DEPTH);
        let pruned = prune::prune_context(tx, id, depth)?;
        conversations::mark_ended(tx, id, ending, next)?;
        let mut r = EndSessionResult::of(LifecycleAction::Pruned, Some(id));
        r.pruned_messages = pruned.messages;
        r.pruned_summaries = pruned.summaries;
        r.kept_items = pruned.kept;
        return Ok(r);
    }
    let Some(cause) = p.reason.archive_cause() else {
        return Ok(EndSessionResult::of(LifecycleAction::Kept, Some(id)));
    };
    let successor = archive_in(
        tx,
        &conv,
        cause,
        p.reason != EndReason::Deleted,
        next.or(Some(ending)),
        Some(ending),
    )?;
    let mut r = EndSessionResult::of(LifecycleAction::Archived, Some(id));
    r.successor_id = successor;
    r.cause = Some(cause);
    Ok(r)
}

/// Archives `conv` and, when asked, creates its key's successor (session id
/// `session`, recording `ended`). Returns the successor's id.
fn archive_in(
    tx: &Transaction,
    conv: &ConversationRecord,
    cause: ArchiveCause,
    successor: bool,
    session: Option<&str>,
    ended: Option<&str>,
) -> Result<Option<i64>> {
    conversations::archive(tx, conv.conversation_id, cause)?;
    if !successor {
        return Ok(None);
    }
    let session = session.unwrap_or(conv.session_id.as_str());
    Ok(Some(conversations::create_successor(
        tx,
        session,
        conv.session_key.as_deref(),
        ended,
    )?))
}

/// The host's heartbeat acknowledgement, compared trimmed and case-insensitively.
const HEARTBEAT_ACK: &str = "HEARTBEAT_OK";

/// What marks a turn as a heartbeat: the reference's `heartbeat.md`, and the
/// transcript prompt OpenClaw 2026.9 writes for a heartbeat wake (lowercase).
const HEARTBEAT_MARKS: [&str; 2] = ["heartbeat.md", "[openclaw heartbeat poll]"];

/// Whether a turn's `(role, text)` rows only acknowledged a heartbeat (the
/// reference's rule at HEAD): its newest assistant reply is exactly `HEARTBEAT_OK`
/// (case-insensitive) and the turn mentions `heartbeat.md` (or is OpenClaw's
/// `[OpenClaw heartbeat poll]`).
pub fn is_heartbeat_ok_turn(rows: &[(String, String)]) -> bool {
    let Some((_, reply)) = rows.iter().rev().find(|(role, _)| role == "assistant") else {
        return false;
    };
    reply.trim().eq_ignore_ascii_case(HEARTBEAT_ACK)
        && rows.iter().any(|(_, text)| {
            let text = text.to_lowercase();
            HEARTBEAT_MARKS.iter().any(|m| text.contains(m))
        })
}

/// `archiveConversation` parameters (operators and hosts without hooks).
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(rename = "ArchiveParams")]
pub struct ArchiveParams {
    /// The conversation to archive.
    pub conversation_id: i64,
    /// Why (default `operator`).
    #[ts(optional)]
    pub cause: Option<ArchiveCause>,
    /// Also create a fresh active conversation for its key (default false).
    #[ts(optional)]
    pub successor: Option<bool>,
}

/// `archiveConversation` / `unarchiveConversation` result.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveResult {
    /// The conversation named.
    pub conversation_id: i64,
    /// Whether its state changed (false: it already was archived / active).
    pub changed: bool,
    /// The successor created by an archive with `successor: true`.
    pub successor_id: Option<i64>,
    /// Unarchive: the conversation that held the key and was archived
    /// (`operator`) to make room.
    pub displaced_id: Option<i64>,
}

fn require(tx: &Transaction, id: i64, call: &str) -> Result<ConversationRecord> {
    conversations::get(tx, id)?.ok_or_else(|| {
        LcmError::not_found(format!(
            "{call}: no conversation {id}; lcm-tui conversations lists them"
        ))
    })
}

/// Archives a conversation (operator); see [`ArchiveParams`].
pub fn archive(tx: &Transaction, p: &ArchiveParams) -> Result<ArchiveResult> {
    let conv = require(tx, p.conversation_id, "archiveConversation")?;
    if !conv.active {
        return Ok(ArchiveResult {
            conversation_id: conv.conversation_id,
            changed: false,
            successor_id: None,
            displaced_id: None,
        });
    }
    let cause = p.cause.unwrap_or(ArchiveCause::Operator);
    let successor = archive_in(tx, &conv, cause, p.successor.unwrap_or(false), None, None)?;
    Ok(ArchiveResult {
        conversation_id: conv.conversation_id,
        changed: true,
        successor_id: successor,
        displaced_id: None,
    })
}

/// Makes an archived conversation active again. When another conversation holds
/// its key, that one is archived (`operator`) in the same transaction.
pub fn unarchive(tx: &Transaction, conversation_id: i64) -> Result<ArchiveResult> {
    let conv = require(tx, conversation_id, "unarchiveConversation")?;
    let mut out = ArchiveResult {
        conversation_id,
        changed: false,
        successor_id: None,
        displaced_id: None,
    };
    if conv.active {
        return Ok(out);
    }
    if let Some(key) = conv.session_key.as_deref() {
        if let Some(holder) = conversations::active_for_key(tx, key)? {
            conversations::archive(tx, holder.conversation_id, ArchiveCause::Operator)?;
            out.displaced_id = Some(holder.conversation_id);
        }
    }
    out.changed = conversations::unarchive(tx, conversation_id)?;
    Ok(out)
}

/// `pruneContext` parameters: `/new`'s pruning without ending a session.
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(rename = "PruneContextParams")]
pub struct PruneContextParams {
    /// The conversation.
    pub conversation_id: i64,
    /// Summaries of depth ≥ this stay (−1 keeps everything, 0 keeps all summaries;
    /// default 2).
    #[ts(optional)]
    pub retain_depth: Option<i64>,
}

/// Prunes a conversation's context list (see [`prune::prune_context`]).
pub fn prune_context(tx: &Transaction, p: &PruneContextParams) -> Result<EndSessionResult> {
    let conv = require(tx, p.conversation_id, "pruneContext")?;
    let pruned = prune::prune_context(
        tx,
        conv.conversation_id,
        p.retain_depth.unwrap_or(DEFAULT_RETAIN_DEPTH),
    )?;
    let mut r = EndSessionResult::of(LifecycleAction::Pruned, Some(conv.conversation_id));
    r.pruned_messages = pruned.messages;
    r.pruned_summaries = pruned.summaries;
    r.kept_items = pruned.kept;
    Ok(r)
}
