//! The Node.js binding: the only module that knows napi. Every method converts its
//! arguments on the JavaScript thread (one `JSON.stringify`), hands the work to the
//! core (which queues it on the writer thread or a read connection) and returns a
//! Promise; results come back as JSON text and are `JSON.parse`d on resolve.
//! Errors reject with an `Error` whose `code` is the core's stable `LCM_…` code.
//! Every async engine method goes through [`js::call`] (usually as
//! `engine_call!`): its arguments are read on the JS thread as an [`js::Input`]
//! and decoded off it. The exceptions keep their own timing: `ingest`,
//! `ingestBatch`, `commitTurn` and `bootstrap` parse on the writer thread
//! ([`js::Input::parser`]); `compact`, `afterTurn` and `assemble` read
//! JavaScript-only members first.

mod cli;
mod compaction;
mod dagops;
mod hooks;
mod js;
mod live;
mod log;
mod offthread;
mod prompts;
mod recall;
mod rewrite;
mod space;
mod summarizer;

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::config::EngineOptions;
use crate::engine::Engine;
use crate::params::parse_params;
use crate::recall::types::GetMessagesOptions;
use crate::store::conversations::SessionRef;
use js::{
    coded, engine_call, id_arg, resolve_json, string_arg, stringify, to_napi_error, Input, Params,
    Pending,
};

/// A Lossless Context Management engine over one SQLite database. Create it with
/// `LcmEngine.open(options)`; every method is async and runs off the JS thread.
#[napi]
pub struct LcmEngine {
    /// Dropped off the JavaScript thread when the host's garbage collector
    /// finalizes this object (see [`offthread`]).
    engine: offthread::DropsOffThread<Arc<Engine>>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SessionParams {
    session_id: Option<String>,
    session_key: Option<String>,
}

impl SessionParams {
    /// The session named, or `LCM_INVALID_INPUT` when neither id is given.
    fn session(self) -> crate::error::Result<SessionRef> {
        if self.session_id.is_none() && self.session_key.is_none() {
            return Err(crate::error::LcmError::invalid(
                "getConversation needs sessionId or sessionKey",
            ));
        }
        Ok(SessionRef {
            session_id: self.session_id.unwrap_or_default(),
            session_key: self.session_key,
        })
    }
}

#[napi]
impl LcmEngine {
    /// Opens (creating and migrating when needed) the database and returns an engine.
    /// Rejects with `LCM_DB_OPEN` when the file cannot be opened or is not SQLite, or
    /// when another copy of the addon, loaded into this process from another path,
    /// has it open (two SQLite libraries on one file corrupt it; `native.js` shares
    /// one copy per version); `LCM_INVALID_INPUT` for unknown or out-of-range options.
    #[napi(
        ts_args_type = "options?: LcmOptions",
        ts_return_type = "Promise<LcmEngine>"
    )]
    pub fn open<'env>(
        env: &'env Env,
        options: Option<Unknown<'env>>,
    ) -> Result<PromiseRaw<'env, LcmEngine>> {
        let callback = summarizer::extract(env, options.as_ref());
        let large_file_callback =
            summarizer::extract_named(env, options.as_ref(), "largeFileSummarizer");
        let on_log = log::extract(env, options.as_ref());
        let json = match options {
            Some(o) => stringify(env, o)?,
            None => "{}".to_owned(),
        };
        env.spawn_future_with_callback(
            async move {
                let opened = async {
                    let callback = callback?;
                    let large_file_callback = large_file_callback?;
                    let on_log = on_log?;
                    let v: serde_json::Value = parse_params("options", &json)?;
                    let v = if v.is_null() {
                        serde_json::json!({})
                    } else {
                        v
                    };
                    let opts = EngineOptions::from_json(v)?;
                    let timeout = std::time::Duration::from_millis(opts.summary_timeout_ms);
                    let cb = callback.map(|f| summarizer::CallbackSummarizer::shared(f, timeout));
                    let large_cb = large_file_callback
                        .map(|f| summarizer::CallbackSummarizer::shared(f, timeout));
                    let engine = Engine::open_with_callbacks(opts, cb, large_cb).await?;
                    engine.store().set_log_sink(on_log.map(log::sink));
                    engine.build_recall_index_in_background();
                    Ok(engine)
                }
                .await;
                Ok(opened)
            },
            |env, r| match r {
                Ok(engine) => Ok(LcmEngine {
                    engine: offthread::DropsOffThread::new(Arc::new(engine)),
                }),
                Err(e) => Err(to_napi_error(env, e)),
            },
        )
    }

    /// Test hook, never called by accident: the next store job of `kind`
    /// (`'write'` or `'read'`) panics as a bug would, to show that a panic is
    /// contained (`LCM_INTERNAL` naming the operation, reported to `onLog`) and the
    /// engine keeps serving.
    #[napi(
        js_name = "_debugPanicNextJob",
        ts_args_type = "kind: 'write' | 'read'"
    )]
    pub fn debug_panic_next_job(&self, env: &Env, kind: Unknown) -> Result<()> {
        let kind = coded(env, string_arg(kind, "_debugPanicNextJob", "kind"))?;
        let kind = match kind.as_str() {
            "write" => crate::store::JobKind::Write,
            "read" => crate::store::JobKind::Read,
            other => {
                return Err(to_napi_error(
                    env,
                    crate::error::LcmError::invalid(format!(
                        "kind must be 'write' or 'read', got {other:?}"
                    )),
                ))
            }
        };
        self.engine.store().debug_panic_next_job(kind);
        Ok(())
    }

    /// The database path this engine uses.
    #[napi(getter)]
    pub fn db_path(&self) -> String {
        self.engine.store().path().to_owned()
    }

    /// Stores one AgentMessage at the end of the session's conversation (created on
    /// first use). Resolves after COMMIT with `{ ingested, conversationId, messageId, seq }`;
    /// `ingested` is false for heartbeats and replays of a known `entryId`.
    #[napi(
        ts_generic_types = "M extends AgentMessage = StoredAgentMessage",
        ts_args_type = "params: IngestParams<M>",
        ts_return_type = "Promise<IngestResult>"
    )]
    pub fn ingest<'env>(&self, env: &'env Env, params: Unknown<'env>) -> Result<Object<'env>> {
        let parse = Params::read(env, params)?.parser("ingest");
        let (reply, promise) = js::settled_by_reply(env)?;
        self.engine.ingest_then(parse, reply);
        Ok(promise)
    }

    /// Stores a turn's messages in one transaction (all or nothing). Replays of a
    /// known `entryId` and identical duplicates inside the batch are skipped.
    #[napi(
        ts_generic_types = "M extends AgentMessage = StoredAgentMessage",
        ts_args_type = "params: IngestBatchParams<M>",
        ts_return_type = "Promise<IngestBatchResult>"
    )]
    pub fn ingest_batch<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<Object<'env>> {
        let parse = Params::read(env, params)?.parser("ingestBatch");
        let (reply, promise) = js::settled_by_reply(env)?;
        self.engine.ingest_batch_then(parse, reply);
        Ok(promise)
    }

    /// Commits a turn's messages and its receipt in one transaction, idempotently:
    /// the same `advancementKey` with the same payload hash resolves `duplicate` and
    /// writes nothing; with another hash it rejects with `LCM_TURN_CONFLICT` and
    /// writes nothing. Resolves after COMMIT with `{ status, conversationId, ingestedCount }`.
    #[napi(
        ts_generic_types = "M extends AgentMessage = StoredAgentMessage",
        ts_args_type = "params: CommitTurnParams<M>",
        ts_return_type = "Promise<CommitTurnResult>"
    )]
    pub fn commit_turn<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        let parse = Params::read(env, params)?.parser("commitTurn");
        resolve_json(env, self.engine.commit_turn_with(parse))
    }

    /// Imports what the store lacks of a session transcript (`sessionFile`: a JSONL
    /// file read streaming; or `transcriptEntries`: the host's rows): all of it for a
    /// new conversation, the missing tail otherwise, never a duplicate. Resolves with
    /// `{ bootstrapped, importedMessages, reason, conversationId, transcriptMessages, skippedEntries, needsWholeTranscript }`.
    #[napi(
        ts_args_type = "params: BootstrapParams",
        ts_return_type = "Promise<BootstrapResult>"
    )]
    pub fn bootstrap<'env>(&self, env: &'env Env, params: Unknown<'env>) -> Result<Pending<'env>> {
        let parse = Params::read(env, params)?.parser("bootstrap");
        resolve_json(env, self.engine.bootstrap_with(parse))
    }

    /// The conversation of a session (`{ sessionId?, sessionKey? }`), or null.
    #[napi(
        ts_args_type = "params: SessionLookup",
        ts_return_type = "Promise<Conversation | null>"
    )]
    pub fn get_conversation<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        let p = Params::<SessionParams>::read(env, params)?;
        engine_call!(env, self, "getConversation", p => |p| get_conversation(p.session()?))
    }

    /// Every conversation, newest first.
    #[napi(ts_return_type = "Promise<Array<Conversation>>")]
    pub fn list_conversations<'env>(&self, env: &'env Env) -> Result<Pending<'env>> {
        engine_call!(env, self, "listConversations", () => |()| list_conversations())
    }

    /// Applies the end of a session to its conversation (`reason`: `new` prunes the
    /// context to summaries of depth ≥ `retainDepth`; `reset`, `idle`, `daily`,
    /// `compaction` archive it and start a fresh conversation for the key;
    /// `deleted` archives it; `restart`, `shutdown`, `unknown` change nothing). A
    /// second event for the same ending session changes nothing. One transaction.
    #[napi(
        ts_args_type = "params: EndSessionParams",
        ts_return_type = "Promise<EndSessionResult>"
    )]
    pub fn end_session<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        engine_call!(env, self, "endSession", Params::read(env, params)? => |p| end_session(p))
    }

    /// Archives a conversation (`cause` default `operator`; `successor: true` also
    /// starts a fresh active conversation for its key), in one transaction.
    #[napi(
        ts_args_type = "params: ArchiveParams",
        ts_return_type = "Promise<ArchiveResult>"
    )]
    pub fn archive_conversation<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        engine_call!(env, self, "archiveConversation", Params::read(env, params)? => |p| archive_conversation(p))
    }

    /// Makes an archived conversation active again; the conversation holding its
    /// key, if any, is archived (`operator`) in the same transaction.
    #[napi(
        ts_args_type = "conversationId: number",
        ts_return_type = "Promise<ArchiveResult>"
    )]
    pub fn unarchive_conversation<'env>(
        &self,
        env: &'env Env,
        conversation_id: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        let id = id_arg(conversation_id, "unarchiveConversation", "conversationId");
        engine_call!(env, self, "unarchiveConversation", id => |id| unarchive_conversation(id))
    }

    /// `/new`'s pruning of one conversation's context list: message items and
    /// summary items of depth < `retainDepth` (default 2) leave it; nothing is
    /// deleted, pruned items stay reachable by recall.
    #[napi(
        ts_args_type = "params: PruneContextParams",
        ts_return_type = "Promise<EndSessionResult>"
    )]
    pub fn prune_context<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        engine_call!(env, self, "pruneContext", Params::read(env, params)? => |p| prune_context(p))
    }

    /// Every conversation of a session key, active and archived, newest first.
    #[napi(
        ts_args_type = "sessionKey: string",
        ts_return_type = "Promise<Array<Conversation>>"
    )]
    pub fn session_family<'env>(
        &self,
        env: &'env Env,
        session_key: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        let key = string_arg(session_key, "sessionFamily", "sessionKey");
        engine_call!(env, self, "sessionFamily", key => |k| session_family(k))
    }

    /// Every stored message of a conversation, rebuilt exactly as ingested, oldest
    /// first: large files externalized at ingest are re-inlined from disk. Pass
    /// `{ expandFiles: false }` for the stored form with `[LCM File: …]` references.
    #[napi(
        ts_generic_types = "M extends AgentMessage = StoredAgentMessage",
        ts_args_type = "conversationId: number, options?: GetMessagesOptions",
        ts_return_type = "Promise<Array<M>>"
    )]
    pub fn get_messages<'env>(
        &self,
        env: &'env Env,
        conversation_id: Unknown<'env>,
        options: Option<Unknown<'env>>,
    ) -> Result<Pending<'env>> {
        // Options first: a bad options object is reported before a bad id.
        let o = Params::<Option<GetMessagesOptions>>::optional(env, options)?;
        let id = id_arg(conversation_id, "getMessages", "conversationId");
        let input = (o, id);
        engine_call!(env, self, "getMessages", input =>
            |(o, id)| get_messages_with(id, o.unwrap_or_default()))
    }

    /// The context list (what the model sees) with each item's token count.
    #[napi(
        ts_args_type = "conversationId: number",
        ts_return_type = "Promise<Array<ContextItem>>"
    )]
    pub fn get_context_items<'env>(
        &self,
        env: &'env Env,
        conversation_id: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        let id = id_arg(conversation_id, "getContextItems", "conversationId");
        engine_call!(env, self, "getContextItems", id => |id| get_context_items(id))
    }

    /// Every summary of a conversation with its source links.
    #[napi(
        ts_args_type = "conversationId: number",
        ts_return_type = "Promise<Array<SummaryWithLinks>>"
    )]
    pub fn get_summaries<'env>(
        &self,
        env: &'env Env,
        conversation_id: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        let id = id_arg(conversation_id, "getSummaries", "conversationId");
        engine_call!(env, self, "getSummaries", id => |id| get_summaries(id))
    }

    /// Row counts and token totals of a conversation.
    #[napi(
        ts_args_type = "conversationId: number",
        ts_return_type = "Promise<ConversationStats>"
    )]
    pub fn get_stats<'env>(
        &self,
        env: &'env Env,
        conversation_id: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        let id = id_arg(conversation_id, "getStats", "conversationId");
        engine_call!(env, self, "getStats", id => |id| get_stats(id))
    }

    /// The database (path, size, largest tables, conversations active and archived)
    /// and, for a session (`sessionId` / `sessionKey`), its context: items and
    /// tokens against `tokenBudget`, summaries per depth, the last compaction of this
    /// process and pending work. Reads only; without params, the database only.
    #[napi(
        ts_args_type = "params?: StatusParams",
        ts_return_type = "Promise<EngineStatus>"
    )]
    pub fn status<'env>(
        &self,
        env: &'env Env,
        params: Option<Unknown<'env>>,
    ) -> Result<Pending<'env>> {
        let p: js::Params<Option<crate::status::StatusParams>> = js::Params::optional(env, params)?;
        engine_call!(env, self, "status", p => |p| status(p.unwrap_or_default()))
    }

    /// Low-level: replaces a contiguous run of context items (`messageIds` for a leaf,
    /// `summaryIds` of one depth for a condensed node) by one summary with the given
    /// text, in one transaction; metadata is computed from the sources. Resolves with
    /// the new `sum_…` id. Compaction uses the same primitive.
    #[napi(
        ts_args_type = "params: InsertSummaryParams",
        ts_return_type = "Promise<string>"
    )]
    pub fn insert_summary<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        let p = Params::read(env, params)?;
        engine_call!(env, self, "insertSummary", p => |p| insert_summary(p))
    }

    /// Builds the model context for a session under `tokenBudget`: summaries as XML
    /// user messages, a fresh tail of raw messages, tool pairing repaired. Returns the
    /// live `messages` unchanged when the store cannot do better (no conversation,
    /// store trailing, assembly failure — see `stats.fallbackReason`). Rejects with
    /// `LCM_INVALID_INPUT` without `sessionId` or with a non-positive budget.
    #[napi(
        ts_generic_types = "M extends AgentMessage = StoredAgentMessage",
        ts_args_type = "params: AssembleParams<M>",
        ts_return_type = "Promise<AssembleResult<M>>"
    )]
    pub fn assemble<'env>(&self, env: &'env Env, params: Unknown<'env>) -> Result<Pending<'env>> {
        let (json, live) = live::split_messages(env, params)?;
        let count = live.as_ref().map(live::LiveArray::len);
        let engine = self.engine.clone();
        env.spawn_future_with_callback(
            async move {
                let r = async {
                    let p = parse_params("assemble", &json)?;
                    let (store, opts) = (engine.store(), engine.options());
                    let cache = engine.assembly_cache();
                    crate::assembler::run_with_live_count(store, opts, cache, p, count).await
                }
                .await;
                Ok(live::prepare(r))
            },
            move |env, r| live::resolve(env, r, live),
        )
    }

    /// Replaces the deterministic exploration summaries of large files by
    /// summaries the large-file model writes (`largeFileSummaryModel`), off the
    /// writer thread: up to `limit` files (default 4), of one session when
    /// `sessionId`/`sessionKey` is given, oldest first. Each file's row, the
    /// reference text of the stored messages that embed it and their full-text rows
    /// change in one transaction; `getMessages` still returns the original bytes. A
    /// failed model call keeps the deterministic summary and is retried by a later
    /// call with backoff (at most 5 attempts). Without a large-file model it does
    /// nothing (`enabled: false`).
    #[napi(
        ts_args_type = "params?: SummarizeLargeFilesParams",
        ts_return_type = "Promise<SummarizeLargeFilesResult>"
    )]
    pub fn summarize_large_files<'env>(
        &self,
        env: &'env Env,
        params: Option<Unknown<'env>>,
    ) -> Result<Pending<'env>> {
        let p: js::Params<Option<crate::largefiles::upgrade::SummarizeLargeFilesParams>> =
            js::Params::optional(env, params)?;
        engine_call!(env, self, "summarizeLargeFiles", p => |p| summarize_large_files(p.unwrap_or_default()))
    }

    /// Runs the summarization pipeline on a source text (prompt for the depth, the
    /// configured summarizer or host callback, escalation normal → aggressive →
    /// truncation, overage cap) without touching the database. Resolves with
    /// `{ content, level, model, tokensIn, tokensOut }`; rejects with the summarizer's
    /// error (`LCM_LLM_AUTH`, `LCM_LLM_RATE_LIMIT`, `LCM_LLM_TRANSIENT`,
    /// `LCM_LLM_BAD_RESPONSE`, `LCM_CALLBACK`), in which case compaction writes nothing.
    #[napi(
        ts_args_type = "params: SummarizeTextParams",
        ts_return_type = "Promise<SummarizeResult>"
    )]
    pub fn summarize_text<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        let p = Params::read(env, params)?;
        engine_call!(env, self, "summarizeText", p => |p| summarize_text(p))
    }

    /// Finishes queued writes, checkpoints and closes the database, and frees what
    /// the engine holds in memory (the recall index: about 10 MiB per 100k
    /// messages), off the JavaScript thread. A recall index still being built
    /// (right after `open`) is abandoned, not waited for. Later calls reject with
    /// `LCM_CLOSED`. Closing twice is harmless; an engine never closed is freed
    /// off the JavaScript thread too once it is garbage-collected.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<Pending<'env>> {
        engine_call!(env, self, "close", () => |()| close())
    }
}

/// The SQLite library version compiled into the addon.
#[cfg_attr(test, allow(dead_code))]
#[napi]
pub fn sqlite_version() -> String {
    rusqlite::version().to_owned()
}
