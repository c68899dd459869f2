//! A batch of AgentMessages into the store: the `ingest` / `ingestBatch` parameter
//! and result types, validation (sizes, entry ids, session) and the one-transaction
//! write, large files externalized first. Runs on the writer connection.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::EngineOptions;
use crate::error::{LcmError, Result};
use crate::message::ingest;
use crate::store::conversations::{self, SessionRef};
use crate::store::messages;

/// Parameters of `ingest`. Keys the host passes besides these are ignored.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestParams {
    /// Runtime session id.
    pub session_id: String,
    /// Stable session key.
    #[serde(default)]
    pub session_key: Option<String>,
    /// The AgentMessage.
    pub message: Value,
    /// Transcript entry id (makes replays idempotent).
    #[serde(default)]
    pub entry_id: Option<String>,
    /// Heartbeat turns are not stored.
    #[serde(default)]
    pub is_heartbeat: bool,
}

/// Parameters of `ingestBatch`. Keys the host passes besides these are ignored.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestBatchParams {
    /// Runtime session id.
    pub session_id: String,
    /// Stable session key.
    #[serde(default)]
    pub session_key: Option<String>,
    /// The AgentMessages, oldest first.
    pub messages: Vec<Value>,
    /// Transcript entry ids, parallel to `messages` (null where unknown).
    #[serde(default)]
    pub entry_ids: Option<Vec<Option<String>>>,
    /// Heartbeat turns are not stored.
    #[serde(default)]
    pub is_heartbeat: bool,
}

impl IngestBatchParams {
    /// A heartbeat turn or an empty batch: nothing of it is stored.
    pub fn stores_nothing(&self) -> bool {
        self.is_heartbeat || self.messages.is_empty()
    }
}

/// Result of `ingest`.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct IngestResult {
    /// False for heartbeats and replays.
    pub ingested: bool,
    /// The conversation, when the message reached the store.
    pub conversation_id: Option<i64>,
    /// The stored message's id.
    pub message_id: Option<i64>,
    /// The stored message's seq.
    pub seq: Option<i64>,
}

/// Result of `ingestBatch`.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct IngestBatchResult {
    /// How many messages were stored (replays and heartbeats excluded).
    pub ingested_count: usize,
    /// The conversation, when the batch reached the store.
    pub conversation_id: Option<i64>,
    /// One entry per input message.
    pub results: Vec<crate::store::messages::IngestedMessage>,
}

impl From<IngestParams> for IngestBatchParams {
    fn from(p: IngestParams) -> Self {
        IngestBatchParams {
            session_id: p.session_id,
            session_key: p.session_key,
            messages: vec![p.message],
            entry_ids: Some(vec![p.entry_id]),
            is_heartbeat: p.is_heartbeat,
        }
    }
}

impl IngestResult {
    /// The result of a one-message batch.
    pub fn from_batch(r: IngestBatchResult) -> Self {
        let first = r.results.into_iter().next();
        IngestResult {
            ingested: first.as_ref().is_some_and(|m| m.ingested),
            conversation_id: r.conversation_id,
            message_id: first.as_ref().and_then(|m| m.message_id),
            seq: first.and_then(|m| m.seq),
        }
    }
}

/// A batch validated and mapped to rows ([`prepare_rows`]), for [`write_prepared`].
pub struct PreparedBatch {
    params: IngestBatchParams,
    mapped: Vec<ingest::NewMessage>,
    /// Where its large files go, when it may have some.
    files: Option<crate::largefiles::intercept::Settings>,
}

/// What of a batch's write needs no connection: validating the whole batch and
/// mapping its messages to rows (a heartbeat or an empty batch has nothing to
/// map). The writer runs it before it takes the write lock where it can, so
/// other processes writing the same file are not held up by it.
pub fn prepare_rows(p: IngestBatchParams, opts: &EngineOptions) -> Result<PreparedBatch> {
    if p.stores_nothing() {
        return Ok(PreparedBatch {
            params: p,
            mapped: Vec::new(),
            files: None,
        });
    }
    let large = crate::largefiles::intercept::Settings::from_options(opts);
    let files = crate::largefiles::intercept::may_need(&p.messages, &large).then_some(large);
    // Validate the whole batch before anything is written (no file for a refused batch).
    let mapped = map_batch(&p, opts.max_message_bytes)?;
    Ok(PreparedBatch {
        params: p,
        mapped,
        files,
    })
}

/// Writes a prepared batch inside the writer's open transaction (a group commit
/// job: it commits with its group, or its savepoint rolls back alone): its
/// session's conversation (created on first use), its large files, its rows.
pub fn write_prepared(
    conn: &rusqlite::Connection,
    batch: PreparedBatch,
    opts: &EngineOptions,
) -> Result<IngestBatchResult> {
    let PreparedBatch {
        params: mut p,
        mut mapped,
        files,
    } = batch;
    if p.stores_nothing() {
        return Ok(IngestBatchResult {
            ingested_count: 0,
            conversation_id: None,
            results: (0..p.messages.len())
                .map(|_| messages::IngestedMessage {
                    ingested: false,
                    message_id: None,
                    seq: None,
                })
                .collect(),
        });
    }
    let session = SessionRef {
        session_id: p.session_id.clone(),
        session_key: p.session_key.clone(),
    };
    let (conversation_id, stored_session) = conversations::find_or_create_session(conn, &session)?;
    if let Some(large) = files {
        let n = crate::largefiles::intercept::intercept_in(
            conn,
            conversation_id,
            &mut p.messages,
            &large,
        )?;
        if n > 0 {
            mapped = map_batch(&p, opts.max_message_bytes)?;
        }
    }
    let appender = messages::Appender::open_known(conn, conversation_id, stored_session)?;
    let messages = messages::insert_batch_with(conn, appender, &mapped)?;
    Ok(IngestBatchResult {
        ingested_count: messages.iter().filter(|m| m.ingested).count(),
        conversation_id: Some(conversation_id),
        results: messages,
    })
}

/// Validates a batch, externalizes its large files (validating first, so no file is
/// written for a batch that is refused) and maps it to rows.
pub fn prepare_batch(
    conn: &mut rusqlite::Connection,
    session: &SessionRef,
    p: &mut IngestBatchParams,
    opts: &EngineOptions,
) -> Result<Vec<ingest::NewMessage>> {
    let large = crate::largefiles::intercept::Settings::from_options(opts);
    if crate::largefiles::intercept::may_need(&p.messages, &large) {
        map_batch(p, opts.max_message_bytes)?;
        crate::largefiles::intercept::intercept_batch(conn, session, &mut p.messages, &large)?;
    }
    map_batch(p, opts.max_message_bytes)
}

/// Validates a batch (sizes, entry ids, session) and maps each message to rows.
pub fn map_batch(p: &IngestBatchParams, max_bytes: usize) -> Result<Vec<ingest::NewMessage>> {
    if let Some(ids) = &p.entry_ids {
        if ids.len() != p.messages.len() {
            return Err(LcmError::invalid(format!(
                "entryIds has {} entries but messages has {}",
                ids.len(),
                p.messages.len()
            )));
        }
    }
    if p.session_id.trim().is_empty() {
        return Err(LcmError::invalid("sessionId must be a non-empty string"));
    }
    p.messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let size = approx_size(m);
            if size > max_bytes {
                return Err(LcmError::invalid(format!(
                    "messages[{i}] is about {size} bytes, over maxMessageBytes ({max_bytes}); raise maxMessageBytes or split the content"
                )));
            }
            let entry = p.entry_ids.as_ref().and_then(|ids| ids[i].clone());
            ingest::map_message(m, entry).map_err(|e| e.context(format!("messages[{i}]")))
        })
        .collect()
}

fn approx_size(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len() + 2,
        Value::Array(a) => a.iter().map(approx_size).sum::<usize>() + 2,
        Value::Object(o) => {
            o.iter()
                .map(|(k, v)| k.len() + 3 + approx_size(v))
                .sum::<usize>()
                + 2
        }
        _ => 8,
    }
}
