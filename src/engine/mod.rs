//! The engine: the async API the binding and the CLI call. Plain Rust — it owns the
//! store and the options and knows nothing of JavaScript.
//!
//! Ordering: methods that write *enqueue their job when called* (they return a
//! future that is already scheduled), so calls from one thread apply in call order.
//!
//! The engine is a layer over the feature modules: each method here or in the
//! submodules ([`ingest`], [`compaction`], [`recall`], [`rewrite`], [`doctor`],
//! [`dagops`]) is a thin call into a feature, which does the work. Features never
//! import the engine.

mod compaction;
pub use compaction::SessionIds;
mod dagops;
mod doctor;
mod ingest;
mod largefiles;
mod lifecycle;
mod recall;
mod retention;
mod rewrite;
mod status;
pub use retention::{PrunedSummary, RestoreArchiveParams};
mod space;
pub use space::{BackupParams, ReclaimSpaceParams, ReclaimSpaceResult, StorageStatsParams};
mod transcripts;
mod turns;

pub use crate::compaction::{AfterTurnParams, AfterTurnResult};
pub use crate::ingest::{IngestBatchParams, IngestBatchResult, IngestParams, IngestResult};

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::assembler::{AssembleParams, AssembleResult};
use crate::config::EngineOptions;
use crate::error::{LcmError, Result};
use crate::message::rebuild;
use crate::store::conversations::{self, ConversationRecord, SessionRef};
use crate::store::dag::{self, NewSummary, Sources};
use crate::store::messages::{self, ContextItem, ConversationStats};
use crate::store::summaries::{self, SummaryRecord};
use crate::store::{Store, StoreOptions};
use crate::summarize::{
    build_large_file_summarizer, build_pipeline, SummarizeOutput, SummarizeTextParams, Summarizer,
    SummaryPipeline,
};
use crate::timeformat::Zone;

/// The engine.
pub struct Engine {
    store: Store,
    opts: Arc<EngineOptions>,
    pipeline: Arc<dyn SummaryPipeline>,
    zone: Zone,
    compaction: Arc<crate::compaction::Coordinator>,
    callback: Option<Arc<dyn Summarizer>>,
    /// Writes large files' exploration summaries (`largeFileSummaryModel`), with
    /// the model name its requests carry.
    large_file_summarizer: Option<(Arc<dyn Summarizer>, String)>,
    /// Recall state: in-memory grants and message catalog (see `recall`).
    recall: Arc<crate::recall::RecallState>,
    assembly_cache: Arc<crate::assembler::Cache>,
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
        Self::open_with_callbacks(opts, callback, None).await
    }

    /// Like [`Engine::open_with`], with the summarizer of large files' exploration
    /// summaries too (a `largeFileSummarizer` callback; used only when
    /// `largeFileSummaryModel` is set, see
    /// [`crate::summarize::build_large_file_summarizer`]).
    pub async fn open_with_callbacks(
        opts: EngineOptions,
        callback: Option<Arc<dyn Summarizer>>,
        large_file_callback: Option<Arc<dyn Summarizer>>,
    ) -> Result<Engine> {
        opts.validate()?;
        let zone = Zone::resolve(opts.timezone.as_deref())?;
        let o = opts.clone();
        let cb = callback.clone();
        let (pipeline, large_file_summarizer) = tokio::task::spawn_blocking(move || {
            let large = build_large_file_summarizer(&o, large_file_callback, cb.clone())?;
            Ok::<_, LcmError>((build_pipeline(&o, cb)?, large))
        })
        .await
        .map_err(|e| LcmError::internal(format!("open task failed: {e}")))??;
        let store_opts = StoreOptions {
            path: opts.resolved_db_path(),
            busy_timeout: Duration::from_millis(opts.busy_timeout_ms),
            mmap_bytes: opts.mmap_size_bytes,
            ..StoreOptions::default()
        };
        let store = tokio::task::spawn_blocking(move || Store::open(store_opts))
            .await
            .map_err(|e| LcmError::internal(format!("open task failed: {e}")))??;
        let recall = Arc::new(crate::recall::RecallState::default());
        recall.store_slices_in(&store);
        Ok(Engine {
            store,
            opts: Arc::new(opts),
            pipeline,
            zone,
            compaction: Arc::default(),
            callback,
            large_file_summarizer,
            recall,
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
                    let message_ids = if s.kind == crate::store::summaries::SummaryKind::Leaf {
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
        let mut s = self
            .store
            .read(move |c| messages::stats(c, conversation_id))
            .await?;
        let u = self.compaction.usage(conversation_id);
        s.summarizer_calls = u.calls;
        s.summarizer_failures = u.failures;
        s.summarizer_input_tokens = u.input_tokens;
        s.summarizer_output_tokens = u.output_tokens;
        Ok(s)
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
        // First, so a catalog build in progress stops instead of running to its
        // end: the store's close waits for the reads in flight.
        self.recall.close();
        self.compaction.cancel_all();
        let closed = self.store.close().await;
        // What the engine keeps in memory (the recall catalogs, ≈ 100 MiB per
        // million messages; the last assemblies) is freed now, on a blocking-pool
        // thread: not when the host's garbage collector gets to the engine, on the
        // JavaScript thread (milliseconds of its event loop at a million messages).
        let held = (self.recall.release(), self.assembly_cache.drain());
        let freed = tokio::task::spawn_blocking(move || drop(held)).await;
        closed?;
        freed.map_err(|e| LcmError::internal(format!("close failed: {e}")))
    }
}

/// Parameters of `insertSummary`.
#[derive(Debug, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
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
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
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

#[cfg(test)]
pub(crate) mod tests;
