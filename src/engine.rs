//! The engine: the async API the binding and the CLI call. Plain Rust — it owns the
//! store and the options and knows nothing of JavaScript.
//!
//! Ordering: methods that write *enqueue their job when called* (they return a
//! future that is already scheduled), so calls from one thread apply in call order.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::assembler::{AssembleParams, AssembleResult};
use crate::config::EngineOptions;
use crate::error::{LcmError, Result};
use crate::message::{ingest, rebuild};
use crate::store::conversations::{self, ConversationRecord, SessionRef};
use crate::store::dag::{self, NewSummary, Sources};
use crate::store::messages::{self, ContextItem, ConversationStats, IngestOutcome};
use crate::store::summaries::{self, SummaryRecord};
use crate::store::{Store, StoreOptions};
use crate::summarize::{
    build_pipeline, SummarizeOutput, SummarizeTextParams, Summarizer, SummaryPipeline,
};
use crate::timefmt::Zone;

/// Parameters of `ingest`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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

/// Parameters of `ingestBatch`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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

/// Result of `ingest`.
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestBatchResult {
    /// How many messages were stored (replays and heartbeats excluded).
    pub ingested_count: usize,
    /// The conversation, when the batch reached the store.
    pub conversation_id: Option<i64>,
    /// One entry per input message.
    pub results: Vec<crate::store::messages::IngestedMessage>,
}

/// The engine.
pub struct Engine {
    store: Store,
    opts: Arc<EngineOptions>,
    pipeline: Arc<dyn SummaryPipeline>,
    zone: Zone,
    compaction: Arc<crate::compaction::Coordinator>,
    callback: Option<Arc<dyn Summarizer>>,
    /// Recall state: in-memory grants and message catalog (see `retrieval`).
    pub(crate) recall: Arc<crate::retrieval::RecallState>,
    assembly_cache: Arc<crate::assembler::Cache>,
}

/// Parses a JSON text of parameters into `T`, naming what was wrong.
pub fn parse_params<T: for<'de> Deserialize<'de>>(what: &str, json: &str) -> Result<T> {
    let repaired = repair_lone_surrogates(json);
    serde_json::from_str(&repaired)
        .map_err(|e| LcmError::invalid(format!("invalid {what} parameters: {e}")))
}

/// JSON text from JavaScript may carry lone UTF-16 surrogates (`\udXXX` escapes),
/// which are not Unicode; they are stored as U+FFFD instead of failing the turn.
pub fn repair_lone_surrogates(json: &str) -> std::borrow::Cow<'_, str> {
    if !json.contains("\\ud") && !json.contains("\\uD") {
        return std::borrow::Cow::Borrowed(json);
    }
    let b = json.as_bytes();
    let mut out = String::with_capacity(json.len());
    let mut i = 0;
    let hex_at = |i: usize| -> Option<u16> {
        let s = json.get(i + 2..i + 6)?;
        (b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u')).then_some(())?;
        u16::from_str_radix(s, 16).ok()
    };
    let mut last = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            if let Some(u) = hex_at(i) {
                let high = (0xD800..0xDC00).contains(&u);
                let low = (0xDC00..0xE000).contains(&u);
                if high && hex_at(i + 6).is_some_and(|n| (0xDC00..0xE000).contains(&n)) {
                    i += 12;
                    continue;
                }
                if high || low {
                    out.push_str(crate::text::slice(json, last, i));
                    out.push_str("\\ufffd");
                    i += 6;
                    last = i;
                    continue;
                }
            }
            i += 2;
            continue;
        }
        i += 1;
    }
    out.push_str(crate::text::tail(json, last));
    std::borrow::Cow::Owned(out)
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

impl Engine {
    /// Opens the database (off the calling thread) and returns the engine.
    pub async fn open(opts: EngineOptions) -> Result<Engine> {
        Self::open_with(opts, None).await
    }

    /// Like [`Engine::open`], with the host's summarizer (the JavaScript callback),
    /// which then wins over the configured provider. The timezone, the prompt
    /// templates (`LCM_TEMPLATE`) and the provider settings (`LCM_CONFIG`) are checked
    /// before the database is touched.
    pub async fn open_with(
        opts: EngineOptions,
        callback: Option<Arc<dyn Summarizer>>,
    ) -> Result<Engine> {
        opts.validate()?;
        let zone = Zone::resolve(opts.timezone.as_deref())?;
        let o = opts.clone();
        let cb = callback.clone();
        let pipeline = tokio::task::spawn_blocking(move || build_pipeline(&o, cb))
            .await
            .map_err(|e| LcmError::internal(format!("open task failed: {e}")))??;
        let store_opts = StoreOptions {
            path: opts.resolved_db_path(),
            busy_timeout: Duration::from_millis(opts.busy_timeout_ms),
            ..StoreOptions::default()
        };
        let store = tokio::task::spawn_blocking(move || Store::open(store_opts))
            .await
            .map_err(|e| LcmError::internal(format!("open task failed: {e}")))??;
        Ok(Engine {
            store,
            opts: Arc::new(opts),
            pipeline,
            zone,
            compaction: Arc::default(),
            callback,
            recall: Arc::default(),
            assembly_cache: Arc::default(),
        })
    }

    /// Compaction bookkeeping shared by this engine's calls (locks, cancel tokens).
    pub fn compaction_coordinator(&self) -> &Arc<crate::compaction::Coordinator> {
        &self.compaction
    }

    /// The summarization pipeline (prompts + summarizer + escalation) compaction uses.
    pub fn pipeline(&self) -> Arc<dyn SummaryPipeline> {
        self.pipeline.clone()
    }

    /// The host's summarizer callback, if the engine was opened with one (per-call
    /// pipelines, e.g. a rewrite with another prompt directory, reuse it).
    pub fn summarizer_callback(&self) -> Option<Arc<dyn Summarizer>> {
        self.callback.clone()
    }

    /// The timezone for prompt headers and ranges (`timezone`, else `TZ`, else UTC).
    pub fn zone(&self) -> Zone {
        self.zone
    }

    /// Runs the pipeline on a given source text (no database access): what compaction
    /// would write for it, with the level and model.
    pub async fn summarize_text(&self, p: SummarizeTextParams) -> Result<SummarizeOutput> {
        if self.store.is_closed() {
            return Err(LcmError::closed());
        }
        self.pipeline.run(p.into_input()?).await
    }

    /// The options in force.
    pub fn options(&self) -> &EngineOptions {
        &self.opts
    }

    /// The store (for the other core modules).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Ingests one message. The job is queued when this is called.
    pub fn ingest(
        &self,
        p: IngestParams,
    ) -> impl Future<Output = Result<IngestResult>> + Send + 'static {
        let batch = IngestBatchParams {
            session_id: p.session_id,
            session_key: p.session_key,
            messages: vec![p.message],
            entry_ids: Some(vec![p.entry_id]),
            is_heartbeat: p.is_heartbeat,
        };
        let fut = self.ingest_batch(batch);
        async move {
            let r = fut.await?;
            let first = r.results.into_iter().next();
            Ok(IngestResult {
                ingested: first.as_ref().is_some_and(|m| m.ingested),
                conversation_id: r.conversation_id,
                message_id: first.as_ref().and_then(|m| m.message_id),
                seq: first.and_then(|m| m.seq),
            })
        }
    }

    /// Like [`Engine::ingest`], from the JSON text of the parameters; parsing runs on
    /// the writer thread, in call order.
    pub fn ingest_json(
        &self,
        json: String,
    ) -> impl Future<Output = Result<IngestResult>> + Send + 'static {
        let fut = self.ingest_batch_json_inner(json, true);
        async move {
            let r = fut.await?;
            let first = r.results.into_iter().next();
            Ok(IngestResult {
                ingested: first.as_ref().is_some_and(|m| m.ingested),
                conversation_id: r.conversation_id,
                message_id: first.as_ref().and_then(|m| m.message_id),
                seq: first.and_then(|m| m.seq),
            })
        }
    }

    /// Like [`Engine::ingest_batch`], from the JSON text of the parameters.
    pub fn ingest_batch_json(
        &self,
        json: String,
    ) -> impl Future<Output = Result<IngestBatchResult>> + Send + 'static {
        self.ingest_batch_json_inner(json, false)
    }

    fn ingest_batch_json_inner(
        &self,
        json: String,
        single: bool,
    ) -> impl Future<Output = Result<IngestBatchResult>> + Send + 'static {
        let opts = self.opts.clone();
        self.store.write(move |conn| {
            let p = if single {
                let one: IngestParams = parse_params("ingest", &json)?;
                IngestBatchParams {
                    session_id: one.session_id,
                    session_key: one.session_key,
                    messages: vec![one.message],
                    entry_ids: Some(vec![one.entry_id]),
                    is_heartbeat: one.is_heartbeat,
                }
            } else {
                parse_params::<IngestBatchParams>("ingestBatch", &json)?
            };
            write_batch(conn, p, &opts)
        })
    }

    /// Ingests a batch in one transaction; a bad message rejects the whole batch
    /// (naming its index) and writes nothing. The job is queued when this is called.
    pub fn ingest_batch(
        &self,
        p: IngestBatchParams,
    ) -> impl Future<Output = Result<IngestBatchResult>> + Send + 'static {
        let opts = self.opts.clone();
        self.store.write(move |conn| write_batch(conn, p, &opts))
    }

    /// The conversation for a session, if any.
    pub async fn get_conversation(
        &self,
        session: SessionRef,
    ) -> Result<Option<ConversationRecord>> {
        self.store
            .read(move |c| conversations::find(c, &session))
            .await
    }

    /// Every conversation, newest first.
    pub async fn list_conversations(&self) -> Result<Vec<ConversationRecord>> {
        self.store.read(conversations::list).await
    }

    /// Every stored message of a conversation in seq order, in stored form (large
    /// files as `[LCM File: …]` references); `get_messages_with` re-inlines them.
    pub async fn get_messages(&self, conversation_id: i64) -> Result<Vec<Value>> {
        self.store
            .read(move |c| {
                let ids = messages::ids_in_order(c, conversation_id)?;
                let stored = messages::stored_by_ids(c, &ids)?;
                Ok(stored.iter().map(rebuild::rebuild).collect())
            })
            .await
    }

    /// The context list with per-item tokens.
    pub async fn get_context_items(&self, conversation_id: i64) -> Result<Vec<ContextItem>> {
        self.store
            .read(move |c| messages::context_items(c, conversation_id))
            .await
    }

    /// Every summary of a conversation with its links.
    pub async fn get_summaries(&self, conversation_id: i64) -> Result<Vec<SummaryWithLinks>> {
        self.store
            .read(move |c| {
                let list = summaries::list(c, conversation_id)?;
                let ids: Vec<String> = list.iter().map(|s| s.summary_id.clone()).collect();
                let mut sources = summaries::sources_of_many(c, &ids)?;
                let mut out = Vec::with_capacity(list.len());
                for s in list {
                    let message_ids = if s.kind == "leaf" {
                        summaries::source_message_ids(c, &s.summary_id)?
                    } else {
                        Vec::new()
                    };
                    let parent_ids = sources.remove(&s.summary_id).unwrap_or_default();
                    out.push(SummaryWithLinks {
                        summary: s,
                        parent_ids,
                        message_ids,
                    });
                }
                Ok(out)
            })
            .await
    }

    /// Row counts and token totals of a conversation.
    pub async fn get_stats(&self, conversation_id: i64) -> Result<ConversationStats> {
        self.store
            .read(move |c| messages::stats(c, conversation_id))
            .await
    }

    /// Writes one summary over existing context items (messages for a leaf, summaries
    /// of one depth for a condensed node) in one transaction, computing its metadata
    /// from the sources. The low-level primitive under compaction; also used by
    /// importers and tests.
    pub fn insert_summary(
        &self,
        p: InsertSummaryParams,
    ) -> impl Future<Output = Result<String>> + Send + 'static {
        let features = self.store.features();
        self.store.write(move |conn| {
            let sources = match (p.message_ids, p.summary_ids) {
                (Some(m), None) => Sources::Messages(m),
                (None, Some(s)) => Sources::Summaries(s),
                _ => {
                    return Err(LcmError::invalid(
                        "insertSummary needs exactly one of messageIds or summaryIds",
                    ))
                }
            };
            let s = NewSummary {
                conversation_id: p.conversation_id,
                content: p.content,
                model: p.model.unwrap_or_else(|| "unknown".into()),
                sources,
            };
            dag::persist_summary(conn, &s, features)
        })
    }

    /// Assembles a session's model context under a token budget (see
    /// [`crate::assembler`]); falls back to the host's live messages when the store
    /// cannot do better or assembly fails.
    pub async fn assemble(&self, p: AssembleParams) -> Result<AssembleResult> {
        crate::assembler::run(&self.store, &self.opts, &self.assembly_cache, p).await
    }

    /// What earlier assemblies prepared (reused by the next turn's assembly).
    pub fn assembly_cache(&self) -> &Arc<crate::assembler::Cache> {
        &self.assembly_cache
    }

    /// Finishes pending writes and closes the database. Running compactions are
    /// cancelled first (an in-flight summarizer call is abandoned).
    pub async fn close(&self) -> Result<()> {
        self.compaction.cancel_all();
        self.store.close().await
    }
}

/// Parameters of `insertSummary`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InsertSummaryParams {
    /// The conversation.
    pub conversation_id: i64,
    /// Summary text.
    pub content: String,
    /// Source messages (a leaf), in order.
    #[serde(default)]
    pub message_ids: Option<Vec<i64>>,
    /// Source summaries of one depth (a condensed node), in order.
    #[serde(default)]
    pub summary_ids: Option<Vec<String>>,
    /// Model name recorded on the row.
    #[serde(default)]
    pub model: Option<String>,
}

/// A summary with its DAG links.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryWithLinks {
    /// The row.
    #[serde(flatten)]
    pub summary: SummaryRecord,
    /// Source summaries (the reference's "parents"), in link order.
    pub parent_ids: Vec<String>,
    /// Source messages of a leaf, in link order.
    pub message_ids: Vec<i64>,
}

/// Validates, maps and writes one batch (runs on the writer thread).
fn write_batch(
    conn: &mut rusqlite::Connection,
    mut p: IngestBatchParams,
    opts: &EngineOptions,
) -> Result<IngestBatchResult> {
    if p.is_heartbeat || p.messages.is_empty() {
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
    let large = crate::largefiles::intercept::Settings::from_options(opts);
    if crate::largefiles::intercept::may_need(&p.messages, &large) {
        // Validate the whole batch before any file is written.
        map_batch(&p, opts.max_message_bytes)?;
        crate::largefiles::intercept::intercept_batch(conn, &session, &mut p.messages, &large)?;
    }
    let mapped = map_batch(&p, opts.max_message_bytes)?;
    let IngestOutcome {
        conversation_id,
        messages,
    } = messages::insert_batch(conn, &session, mapped)?;
    Ok(IngestBatchResult {
        ingested_count: messages.iter().filter(|m| m.ingested).count(),
        conversation_id: Some(conversation_id),
        results: messages,
    })
}

fn map_batch(p: &IngestBatchParams, max_bytes: usize) -> Result<Vec<ingest::NewMessage>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let s = r#"{"a":"x\ud800y","b":"\ud83d\ude00","c":"\udc00"}"#;
        let r = repair_lone_surrogates(s);
        let v: Value = serde_json::from_str(&r).unwrap();
        assert_eq!(v["a"], "x\u{fffd}y");
        assert_eq!(v["b"], "😀");
        assert_eq!(v["c"], "\u{fffd}");
    }

    #[tokio::test]
    async fn ingest_and_round_trip_in_memory() {
        let opts = EngineOptions {
            db_path: Some(":memory:".into()),
            ..Default::default()
        };
        let engine = Engine::open(opts).await.unwrap();
        let msgs = vec![
            json!({"role":"user","content":"hello","timestamp":1771313820000i64}),
            json!({"role":"assistant","content":[{"type":"text","text":"hi"}]}),
        ];
        let r = engine
            .ingest_batch(IngestBatchParams {
                session_id: "s1".into(),
                session_key: None,
                messages: msgs.clone(),
                entry_ids: None,
                is_heartbeat: false,
            })
            .await
            .unwrap();
        assert_eq!(r.ingested_count, 2);
        let back = engine
            .get_messages(r.conversation_id.unwrap())
            .await
            .unwrap();
        assert_eq!(back, msgs);
        let items = engine
            .get_context_items(r.conversation_id.unwrap())
            .await
            .unwrap();
        assert_eq!(items.iter().map(|i| i.ordinal).collect::<Vec<_>>(), [0, 1]);
        engine.close().await.unwrap();
        assert_eq!(
            engine.get_messages(1).await.unwrap_err().code,
            crate::error::ErrorCode::Closed
        );
    }
}
