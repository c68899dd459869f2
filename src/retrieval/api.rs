//! The recall API of the engine: `grep`, `describe`, `expand`, grants, the tool
//! definitions, and `getMessages` with large files re-inlined.

use std::sync::{Arc, Mutex, RwLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::catalog::Catalog;
use super::describe::{self, FileDescription, FileRead, SummaryDescription};
use super::expand::{Limits, Walk};
use super::grants::{self, Access, CreateGrantParams, GrantInfo, Registry};
use super::grep::{self, Filter, MessageHit, Mode, Scope, ScopeStats, Sort, SummaryHit};
use super::sumcat::SummaryCatalog;
use crate::engine::Engine;
use crate::error::{ErrorCode, LcmError, Result};
use crate::largefiles::restore::{message_has_reference, Restorer};
use crate::message::rebuild;
use crate::store::{messages, summaries};
use crate::tokens;

/// Per-engine recall state: the grants (in memory only) and the message catalog.
#[derive(Debug, Default)]
pub struct RecallState {
    grants: Mutex<Registry>,
    catalog: RwLock<Catalog>,
    catalog_sync: Mutex<()>,
    summaries: Mutex<SummaryCatalog>,
}

fn poisoned() -> LcmError {
    LcmError::internal("recall state lock poisoned")
}

impl RecallState {
    fn grants(&self) -> Result<std::sync::MutexGuard<'_, Registry>> {
        self.grants.lock().map_err(|_| poisoned())
    }

    /// Searches summaries with the summary catalog brought up to date first.
    fn search_summaries(
        &self,
        conn: &rusqlite::Connection,
        q: &grep::Query,
        features: crate::store::Features,
    ) -> Result<(Vec<SummaryHit>, ScopeStats)> {
        let mut sc = self.summaries.lock().map_err(|_| poisoned())?;
        sc.sync(conn)?;
        grep::search_summaries(conn, &sc, q, features)
    }

    /// Brings the catalog up to date with `conn`'s snapshot.
    fn sync_catalog(&self, conn: &rusqlite::Connection) -> Result<()> {
        let _one = self.catalog_sync.lock().map_err(|_| poisoned())?;
        let (loaded, last) = {
            let c = self.catalog.read().map_err(|_| poisoned())?;
            (c.is_loaded(), c.last_id())
        };
        let max: i64 = conn
            .prepare_cached("SELECT COALESCE(MAX(message_id), 0) FROM messages")?
            .query_row([], |r| r.get(0))?;
        if loaded && max <= last {
            return Ok(());
        }
        self.catalog
            .write()
            .map_err(|_| poisoned())?
            .catch_up(conn)?;
        Ok(())
    }
}

/// Parameters of `grep`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrepParams {
    /// Regex or full-text query.
    pub pattern: String,
    /// Default `regex`.
    #[serde(default)]
    pub mode: Mode,
    /// Default `both`.
    #[serde(default)]
    pub scope: Scope,
    /// Search one conversation.
    #[serde(default)]
    pub conversation_id: Option<i64>,
    /// Search every conversation.
    #[serde(default)]
    pub all_conversations: Option<bool>,
    /// Inclusive lower time bound (ISO).
    #[serde(default)]
    pub since: Option<String>,
    /// Exclusive upper time bound (ISO).
    #[serde(default)]
    pub before: Option<String>,
    /// Results per scope, 1–200 (default 50).
    #[serde(default)]
    pub limit: Option<i64>,
    /// full_text order (regex is always by recency).
    #[serde(default)]
    pub sort: Sort,
    /// Delegation grant to run under.
    #[serde(default)]
    pub grant_id: Option<String>,
}

/// Result of `grep`.
#[derive(Debug, Clone, Serialize)]
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
    /// The reference tool's text rendering.
    pub text: String,
}

/// Options of `describe`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DescribeOptions {
    /// The item must belong to this conversation (else null).
    #[serde(default)]
    pub conversation_id: Option<i64>,
    /// Explicitly allow any conversation.
    #[serde(default)]
    pub all_conversations: Option<bool>,
    /// Budget cap for the manifest.
    #[serde(default)]
    pub token_cap: Option<i64>,
    /// Delegation grant to run under.
    #[serde(default)]
    pub grant_id: Option<String>,
    /// Files: bounded content for an agent.
    #[serde(default)]
    pub expand_file: Option<bool>,
    /// Files: bound of `expandFile` (default 32768, 1024–512000).
    #[serde(default)]
    pub expand_file_max_bytes: Option<i64>,
    /// Files: first line (1-based).
    #[serde(default)]
    pub start_line: Option<i64>,
    /// Files: last line (1-based, inclusive).
    #[serde(default)]
    pub end_line: Option<i64>,
    /// Files: the whole content, byte-exact (no bound).
    #[serde(default)]
    pub include_content: Option<bool>,
}

/// Result of `describe`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeResult {
    /// The id described.
    pub id: String,
    /// `summary` or `file`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Summary details.
    pub summary: Option<SummaryDescription>,
    /// File details.
    pub file: Option<FileDescription>,
    /// The grant's state after this call.
    pub grant: Option<GrantInfo>,
    /// The reference tool's text rendering.
    pub text: String,
}

/// Parameters of `expand`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpandParams {
    /// One root.
    #[serde(default)]
    pub summary_id: Option<String>,
    /// Several roots, in priority order (after `summaryId`).
    #[serde(default)]
    pub summary_ids: Option<Vec<String>>,
    /// Full-text query choosing the roots (when no ids are given).
    #[serde(default)]
    pub query: Option<String>,
    /// Levels of sources (default 3).
    #[serde(default, alias = "maxDepth")]
    pub depth: Option<i64>,
    /// Include leaf messages.
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
    /// Explicitly allow any conversation.
    #[serde(default)]
    pub all_conversations: Option<bool>,
}

/// Result of `expand`.
#[derive(Debug, Clone, Serialize)]
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
    /// The reference's compact text.
    pub text: String,
}

/// State of the in-memory message catalog.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexInfo {
    /// Messages indexed.
    pub indexed_messages: usize,
    /// Approximate bytes held.
    pub index_bytes: usize,
    /// Time the call took.
    pub elapsed_ms: f64,
}

/// Options of `getMessages`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetMessagesOptions {
    /// Re-inline externalized large files (default true: messages exactly as
    /// ingested). False gives the stored form with `[LCM File: …]` references.
    #[serde(default = "yes")]
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

/// The conversations a call may read, after grant checks.
struct Resolved {
    conversations: Option<Vec<i64>>,
    grant: Option<GrantInfo>,
}

fn bad_time(name: &str, v: &str) -> LcmError {
    LcmError::invalid(format!("{name} must be an ISO-8601 time, got {v:?}"))
}

fn time_filter(since: Option<&str>, before: Option<&str>) -> Result<(Option<i64>, Option<i64>)> {
    let parse = |name: &str, v: Option<&str>| -> Result<Option<i64>> {
        v.map(|s| {
            crate::timestamp::parse(s)
                .map(|t| t.timestamp_millis())
                .ok_or_else(|| bad_time(name, s))
        })
        .transpose()
    };
    let (s, b) = (parse("since", since)?, parse("before", before)?);
    if let (Some(s), Some(b)) = (s, b) {
        if s >= b {
            return Err(LcmError::invalid("since must be earlier than before"));
        }
    }
    Ok((s, b))
}

/// A `sum_…` / `file_…` id from a bare id or a pasted reference text.
pub fn extract_id(raw: &str) -> Option<String> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE
        .get_or_init(|| regex::Regex::new(r"\b(?:sum|file)_[0-9a-f]{16}\b").expect("valid regex"));
    let t = raw.trim();
    if (t.starts_with("sum_") || t.starts_with("file_")) && !t.contains(char::is_whitespace) {
        return Some(t.to_owned());
    }
    re.find(t).map(|m| m.as_str().to_owned())
}

impl Engine {
    fn recall(&self) -> &Arc<RecallState> {
        &self.recall
    }

    fn resolve(
        &self,
        conversation_id: Option<i64>,
        all: bool,
        grant_id: Option<&str>,
    ) -> Result<Resolved> {
        let Some(gid) = grant_id else {
            return Ok(Resolved {
                conversations: conversation_id.map(|c| vec![c]).or((!all).then(Vec::new)),
                grant: None,
            });
        };
        let asked: Vec<i64> = conversation_id.into_iter().collect();
        let access = Access {
            conversations: &asked,
            all_conversations: all && conversation_id.is_none(),
        };
        let info = self
            .recall()
            .grants()?
            .check(gid, &access, grants::now_ms())?;
        Ok(Resolved {
            conversations: Some(if asked.is_empty() {
                info.conversation_ids.clone()
            } else {
                asked
            }),
            grant: Some(info),
        })
    }

    fn consume(&self, grant: &Option<GrantInfo>, tokens: i64) -> Result<Option<GrantInfo>> {
        match grant {
            Some(g) => Ok(self.recall().grants()?.consume(&g.grant_id, tokens)),
            None => Ok(None),
        }
    }

    /// Searches messages and/or summaries by regex or full text (see `grep`).
    pub async fn grep(&self, p: GrepParams) -> Result<GrepResult> {
        let started = std::time::Instant::now();
        let limit = p.limit.unwrap_or(50);
        if !(1..=200).contains(&limit) {
            return Err(LcmError::invalid(format!(
                "limit must be between 1 and 200, got {limit}"
            )));
        }
        let (since_ms, before_ms) = time_filter(p.since.as_deref(), p.before.as_deref())?;
        let all = p.all_conversations.unwrap_or(false);
        let scope = self.resolve(p.conversation_id, all, p.grant_id.as_deref())?;
        if scope.conversations.as_ref().is_some_and(Vec::is_empty) {
            return Err(LcmError::invalid(
                "grep needs conversationId, allConversations: true, or a grantId",
            ));
        }
        let filter = Filter {
            conversations: scope.conversations.clone(),
            since_ms,
            before_ms,
        };
        let q = grep::build_query(&p.pattern, p.mode, p.sort, limit as usize, filter)?;
        if p.mode == Mode::FullText && p.scope != Scope::Summaries {
            // Message indexing is batched off the ingest path: make every
            // acknowledged message searchable first (a broken index is not fatal:
            // the search then falls back to substring matching).
            if let Err(e) = self.store().flush_fts().await {
                if e.code == ErrorCode::Closed {
                    return Err(e);
                }
            }
        }
        let state = self.recall().clone();
        let features = self.store().features();
        let which = p.scope;
        let (msgs, sums) = self
            .store()
            .read(move |conn| {
                conn.execute_batch("BEGIN")?;
                let out = (|| -> Result<_> {
                    let m = if which != Scope::Summaries {
                        state.sync_catalog(conn)?;
                        let cat = state.catalog.read().map_err(|_| poisoned())?;
                        Some(grep::search_messages(conn, &cat, &q, features)?)
                    } else {
                        None
                    };
                    let s = if which != Scope::Messages {
                        Some(state.search_summaries(conn, &q, features)?)
                    } else {
                        None
                    };
                    Ok((m, s))
                })();
                let _ = conn.execute_batch("COMMIT");
                out
            })
            .await?;
        let (messages, message_stats) = msgs.map_or((Vec::new(), None), |(h, s)| (h, Some(s)));
        let (summaries, summary_stats) = sums.map_or((Vec::new(), None), |(h, s)| (h, Some(s)));
        let mut r = GrepResult {
            pattern: p.pattern,
            mode: p.mode,
            scope: p.scope,
            sort: if p.mode == Mode::Regex {
                Sort::Recency
            } else {
                p.sort
            },
            conversation_ids: scope.conversations,
            total_matches: messages.len() + summaries.len(),
            truncated: [&message_stats, &summary_stats]
                .iter()
                .any(|s| s.as_ref().is_some_and(|s| s.truncated)),
            messages,
            summaries,
            message_stats,
            summary_stats,
            elapsed_ms: 0.0,
            grant: None,
            text: String::new(),
        };
        let budget = scope.grant.as_ref().map(|g| g.remaining_tokens);
        r.text = super::render::grep_text(&r, since_ms, before_ms, &self.zone(), budget);
        r.grant = self.consume(&scope.grant, tokens::estimate(&r.text))?;
        r.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(r)
    }

    /// Describes a summary or a large file; `None` when the id is unknown or outside
    /// the requested conversation.
    pub async fn describe(
        &self,
        raw_id: String,
        o: DescribeOptions,
    ) -> Result<Option<DescribeResult>> {
        let all = o.all_conversations.unwrap_or(false);
        let scope = self.resolve(o.conversation_id, all, o.grant_id.as_deref())?;
        let Some(id) = extract_id(&raw_id) else {
            return Ok(None);
        };
        if let Some(c) = o.token_cap.filter(|c| *c < 1) {
            return Err(LcmError::invalid(format!(
                "tokenCap must be at least 1, got {c}"
            )));
        }
        let (start_line, end_line) = (
            line_opt("startLine", o.start_line)?,
            line_opt("endLine", o.end_line)?,
        );
        if let (Some(s), Some(e)) = (start_line, end_line) {
            if e < s {
                return Err(LcmError::invalid(
                    "endLine must be greater than or equal to startLine",
                ));
            }
        }
        let (cap, source) = match (o.token_cap, &scope.grant) {
            (Some(c), Some(g)) => (c.min(g.remaining_tokens), "request"),
            (Some(c), None) => (c, "request"),
            (None, Some(g)) => (g.remaining_tokens, "delegated_grant_remaining"),
            (None, None) => (self.options().max_expand_tokens.max(1), "config_default"),
        };
        let read = FileRead {
            include_content: o.include_content.unwrap_or(false),
            expand_file: o.expand_file.unwrap_or(false),
            max_bytes: o.expand_file_max_bytes.map(|b| b.max(0) as usize),
            start_line,
            end_line,
        };
        let root = crate::largefiles::intercept::Settings::from_options(self.options()).dir;
        let grant = scope.grant.clone();
        let wanted = o.conversation_id;
        let found = self
            .store()
            .read(move |conn| {
                let Some(conv) = describe::conversation_of(conn, &id)? else {
                    return Ok(None);
                };
                if let Some(g) = &grant {
                    check_grant_item(conn, g, &id, conv)?;
                } else if wanted.is_some_and(|w| w != conv) {
                    return Ok(None);
                }
                if id.starts_with("file_") {
                    Ok(describe::file(conn, &id, &root, &read)?.map(|f| (id, None, Some(f))))
                } else {
                    Ok(describe::summary(conn, &id, cap, source)?.map(|s| (id, Some(s), None)))
                }
            })
            .await?;
        let Some((id, summary, file)) = found else {
            return Ok(None);
        };
        let mut r = DescribeResult {
            kind: if file.is_some() { "file" } else { "summary" }.into(),
            id,
            summary,
            file,
            grant: None,
            text: String::new(),
        };
        self.render_describe(&mut r, scope.grant.as_ref().map(|g| g.remaining_tokens));
        r.grant = self.consume(&scope.grant, tokens::estimate(&r.text))?;
        Ok(Some(r))
    }

    /// Renders a description, cutting its content to a grant's remaining budget.
    fn render_describe(&self, r: &mut DescribeResult, budget: Option<i64>) {
        let zone = self.zone();
        let render = |r: &DescribeResult| match (&r.summary, &r.file) {
            (Some(s), _) => describe::render_summary(s, &zone),
            (_, Some(f)) => describe::render_file(f, &zone),
            _ => String::new(),
        };
        r.text = render(r);
        let Some(budget) = budget else { return };
        let over = tokens::estimate(&r.text) - budget;
        if over <= 0 {
            return;
        }
        if let Some(s) = r.summary.as_mut() {
            let keep = tokens::estimate(&s.record.content) - over - 16;
            s.record.content = describe::fit_tokens(&s.record.content, keep).0;
            s.content_truncated = true;
        } else if let Some(f) = r.file.as_mut() {
            if let Some(c) = f.content.as_mut() {
                let keep = tokens::estimate(c) - over - 32;
                *c = describe::fit_tokens(c, keep).0;
                f.content_truncated = Some(true);
            }
        }
        r.text = render(r);
    }

    /// Expands summaries to their sources (and leaf messages) within a token cap.
    pub async fn expand(&self, p: ExpandParams) -> Result<ExpandResult> {
        let all = p.all_conversations.unwrap_or(false);
        let scope = self.resolve(p.conversation_id, all, p.grant_id.as_deref())?;
        let mut ids: Vec<String> = p
            .summary_id
            .iter()
            .cloned()
            .chain(p.summary_ids.clone().unwrap_or_default())
            .collect();
        if ids.is_empty() {
            ids = self.expand_query_roots(&p, &scope).await?;
        }
        let requested_cap = p.token_cap.unwrap_or(self.options().max_expand_tokens);
        let requested_depth = p.depth.unwrap_or(3);
        if requested_cap < 1 || requested_depth < 1 {
            return Err(LcmError::invalid("tokenCap and depth must be at least 1"));
        }
        let (token_cap, depth) = match &scope.grant {
            Some(g) => (
                requested_cap.min(g.remaining_tokens),
                requested_depth.min(g.max_depth),
            ),
            None => (requested_cap, requested_depth),
        };
        let limits = Limits {
            depth,
            include_messages: p.include_messages.unwrap_or(false),
            token_cap,
        };
        let grant = scope.grant.clone();
        let wanted = p.conversation_id;
        let walk = self
            .store()
            .read(move |conn| {
                let mut walk = Walk::default();
                for id in &ids {
                    let rec = summaries::get(conn, id)?
                        .ok_or_else(|| LcmError::not_found(format!("no summary {id}")))?;
                    match &grant {
                        Some(g) => check_grant_item(conn, g, id, rec.conversation_id)?,
                        None if wanted.is_some_and(|w| w != rec.conversation_id) => {
                            return Err(LcmError::not_found(format!(
                                "summary {id} is not in conversation {}",
                                wanted.unwrap_or_default()
                            )))
                        }
                        None => {}
                    }
                    if walk.truncated {
                        break;
                    }
                    walk.expand_root(conn, &rec, limits)?;
                }
                Ok(walk)
            })
            .await?;
        let grant = self.consume(&scope.grant, walk.total_tokens)?;
        Ok(ExpandResult {
            cited_ids: walk.cited_ids(),
            text: walk.render(),
            token_cap,
            depth,
            grant,
            walk,
        })
    }

    async fn expand_query_roots(&self, p: &ExpandParams, scope: &Resolved) -> Result<Vec<String>> {
        let Some(query) = p.query.as_deref().filter(|q| !q.trim().is_empty()) else {
            return Err(LcmError::invalid(
                "expand needs summaryId, summaryIds or query",
            ));
        };
        if scope.conversations.as_ref().is_some_and(Vec::is_empty) {
            return Err(LcmError::invalid(
                "expand with a query needs conversationId, allConversations: true, or a grantId",
            ));
        }
        let filter = Filter {
            conversations: scope.conversations.clone(),
            since_ms: None,
            before_ms: None,
        };
        let q = grep::build_query(query, Mode::FullText, Sort::Recency, 50, filter)?;
        let features = self.store().features();
        let state = self.recall().clone();
        let (hits, _) = self
            .store()
            .read(move |conn| state.search_summaries(conn, &q, features))
            .await?;
        Ok(hits.into_iter().map(|h| h.summary_id).collect())
    }

    /// Creates a delegation grant (conversations must exist).
    pub async fn create_grant(&self, p: CreateGrantParams) -> Result<GrantInfo> {
        let ids = p.conversation_ids.clone();
        self.store()
            .read(move |conn| {
                for id in ids {
                    if crate::store::conversations::get(conn, id)?.is_none() {
                        return Err(LcmError::not_found(format!("no conversation {id}")));
                    }
                }
                Ok(())
            })
            .await?;
        let cap = self.options().max_expand_tokens.max(1);
        self.recall().grants()?.create(p, cap, grants::now_ms())
    }

    /// Revokes a grant; false when it is unknown.
    pub fn revoke_grant(&self, grant_id: &str) -> Result<bool> {
        Ok(self.recall().grants()?.revoke(grant_id, grants::now_ms()))
    }

    /// A grant's current state, or `None` when unknown.
    pub fn get_grant(&self, grant_id: &str) -> Result<Option<GrantInfo>> {
        Ok(self.recall().grants()?.info(grant_id))
    }

    /// Builds (or catches up) the in-memory message catalog now, so the next `grep`
    /// does not pay for it; hosts can call it when idle after opening.
    pub async fn warm_recall_index(&self) -> Result<IndexInfo> {
        let started = std::time::Instant::now();
        let state = self.recall().clone();
        let (n, bytes) = self
            .store()
            .read(move |conn| {
                state.sync_catalog(conn)?;
                let c = state.catalog.read().map_err(|_| poisoned())?;
                Ok((c.len(), c.memory_bytes()))
            })
            .await?;
        Ok(IndexInfo {
            indexed_messages: n,
            index_bytes: bytes,
            elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
        })
    }

    /// The agent tool definitions.
    pub fn recall_tool_definitions(&self) -> Value {
        super::tools::definitions()
    }

    /// Every message of a conversation in seq order: as ingested (large files
    /// re-inlined from disk) by default, or in stored form with `expandFiles: false`.
    pub async fn get_messages_with(
        &self,
        conversation_id: i64,
        o: GetMessagesOptions,
    ) -> Result<Vec<Value>> {
        let root = crate::largefiles::intercept::Settings::from_options(self.options()).dir;
        self.store()
            .read(move |c| {
                let ids = messages::ids_in_order(c, conversation_id)?;
                let stored = messages::stored_by_ids(c, &ids)?;
                let mut out: Vec<Value> = stored.iter().map(rebuild::rebuild).collect();
                if o.expand_files && out.iter().any(message_has_reference) {
                    let mut r = Restorer::load(c, conversation_id, root)?;
                    for m in out.iter_mut().filter(|m| message_has_reference(m)) {
                        r.restore(m);
                    }
                }
                Ok(out)
            })
            .await
    }
}

fn line_opt(name: &str, v: Option<i64>) -> Result<Option<usize>> {
    match v {
        Some(n) if n < 1 => Err(LcmError::invalid(format!(
            "{name} must be at least 1, got {n}"
        ))),
        other => Ok(other.map(|n| n as usize)),
    }
}

/// The item must lie in the grant's conversations and, when the grant lists
/// summaries, in one of their source subtrees.
fn check_grant_item(conn: &rusqlite::Connection, g: &GrantInfo, id: &str, conv: i64) -> Result<()> {
    if !g.conversation_ids.contains(&conv) {
        return Err(LcmError::new(
            ErrorCode::GrantScope,
            format!(
                "{id} belongs to conversation {conv}, outside grant {}",
                g.grant_id
            ),
        ));
    }
    if id.starts_with("sum_") && !describe::within_subtrees(conn, id, &g.summary_ids)? {
        return Err(LcmError::new(
            ErrorCode::GrantScope,
            format!(
                "{id} is not among the summaries grant {} allows",
                g.grant_id
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EngineOptions;
    use crate::engine::IngestBatchParams;
    use serde_json::json;

    /// Regex grep returns exactly what a naive scan returns (newest `limit` by time,
    /// then id), also when timestamps are out of order with ids.
    #[tokio::test]
    async fn regex_grep_equals_a_naive_scan() {
        let opts = EngineOptions {
            db_path: Some(":memory:".into()),
            ..Default::default()
        };
        let e = Engine::open(opts).await.unwrap();
        let words = [
            "Alpha1", "alpha2", "beta-77", "gamma", "DELTA", "Ωmega", "epsilon", "zeta",
        ];
        let mut all = Vec::new();
        for conv in ["a", "b"] {
            let msgs: Vec<Value> = (0..300u64)
                .map(|i| {
                    let w1 = words[(i * 7 % 8) as usize];
                    let w2 = words[(i * 3 % 8) as usize];
                    // Times go backwards every 50 messages (imports, clock skew).
                    let t = 1_771_313_820_000i64 + ((i % 50) as i64 * 60_000) - (i / 50) as i64 * 600_000;
                    json!({"role": "user", "content": format!("m{i} {w1} {} {w2}", i * 37 % 1000), "timestamp": t})
                })
                .collect();
            let r = e
                .ingest_batch(IngestBatchParams {
                    session_id: conv.into(),
                    session_key: None,
                    messages: msgs.clone(),
                    entry_ids: None,
                    is_heartbeat: false,
                })
                .await
                .unwrap();
            for (m, out) in msgs.iter().zip(r.results) {
                all.push((
                    r.conversation_id.unwrap(),
                    out.message_id.unwrap(),
                    m["timestamp"].as_i64().unwrap() / 1000 * 1000,
                    m["content"].as_str().unwrap().to_owned(),
                ));
            }
        }
        for pat in [
            r"(?i)alpha\d",
            r"beta-\d+",
            "gamma|delta",
            r"\b\d{3}\b",
            r"Ωmega",
            "m1\\d ",
        ] {
            let re = regex::Regex::new(pat).unwrap();
            let mut want: Vec<&(i64, i64, i64, String)> = all
                .iter()
                .filter(|m| m.0 == 1 && re.is_match(&m.3))
                .collect();
            want.sort_by_key(|m| std::cmp::Reverse((m.2, m.1)));
            let want: Vec<i64> = want.iter().take(10).map(|m| m.1).collect();
            let got = e
                .grep(GrepParams {
                    pattern: pat.into(),
                    mode: Mode::Regex,
                    scope: Scope::Messages,
                    conversation_id: Some(1),
                    all_conversations: None,
                    since: None,
                    before: None,
                    limit: Some(10),
                    sort: Sort::Recency,
                    grant_id: None,
                })
                .await
                .unwrap();
            let got: Vec<i64> = got.messages.iter().map(|m| m.message_id).collect();
            assert_eq!(got, want, "pattern {pat}");
        }
        for word in ["gamma", "delta", "zeta"] {
            let has = |c: &str| {
                c.split(|ch: char| !ch.is_alphanumeric())
                    .any(|t| t.eq_ignore_ascii_case(word))
            };
            let mut want: Vec<&(i64, i64, i64, String)> =
                all.iter().filter(|m| m.0 == 2 && has(&m.3)).collect();
            want.sort_by_key(|m| std::cmp::Reverse((m.2, m.1)));
            let want: Vec<i64> = want.iter().take(7).map(|m| m.1).collect();
            let p = GrepParams {
                pattern: word.into(),
                mode: Mode::FullText,
                scope: Scope::Both,
                conversation_id: Some(2),
                all_conversations: None,
                since: None,
                before: None,
                limit: Some(7),
                sort: Sort::Recency,
                grant_id: None,
            };
            let got = e.grep(p).await.unwrap();
            let got: Vec<i64> = got.messages.iter().map(|m| m.message_id).collect();
            assert_eq!(got, want, "full text {word}");
        }
        e.close().await.unwrap();
    }

    /// Without usable FTS tables, full text still answers (substring / LIKE).
    #[tokio::test]
    async fn full_text_survives_a_missing_fts_index() {
        let opts = EngineOptions {
            db_path: Some(":memory:".into()),
            ..Default::default()
        };
        let e = Engine::open(opts).await.unwrap();
        let msgs = vec![
            json!({"role":"user","content":"the Quokka ate"}),
            json!({"role":"user","content":"nothing here"}),
        ];
        let p = IngestBatchParams {
            session_id: "s".into(),
            session_key: None,
            messages: msgs,
            entry_ids: None,
            is_heartbeat: false,
        };
        e.ingest_batch(p).await.unwrap();
        e.store()
            .write(|c| Ok(c.execute_batch("DROP TABLE messages_fts; DROP TABLE summaries_fts;")?))
            .await
            .unwrap();
        let g = GrepParams {
            pattern: "quokka".into(),
            mode: Mode::FullText,
            scope: Scope::Both,
            conversation_id: Some(1),
            all_conversations: None,
            since: None,
            before: None,
            limit: None,
            sort: Sort::Recency,
            grant_id: None,
        };
        let r = e.grep(g).await.unwrap();
        assert_eq!(r.messages.len(), 1);
        assert_eq!(r.message_stats.unwrap().strategy, "trigram-filter");
        assert_eq!(r.summary_stats.unwrap().strategy, "like");
        e.close().await.unwrap();
    }
}
