//! The recall calls over one store: `grep`, `describe`, `expand`, grants,
//! `warmRecallIndex` and `getMessages` with large files re-inlined. The engine
//! wraps each in a thin method; this module does the work.

use std::sync::Arc;

use serde_json::Value;

use super::describe::{self, FileRead};
use super::expand::{Limits, Walk};
use super::grants::{self, Access, CreateGrantParams, GrantInfo};
use super::grep::{self, Filter, MessageHit, Mode, Scope, ScopeStats, Sort, SummaryHit};
use super::state::{poisoned, ColdSearch, RecallState};
use super::types::{
    DescribeOptions, DescribeResult, ExpandParams, ExpandResult, GetMessagesOptions, GrepParams,
    GrepResult, IndexInfo,
};
use crate::config::EngineOptions;
use crate::error::{ErrorCode, LcmError, Result};
use crate::largefiles::restore::{message_has_reference, Restorer};
use crate::message::rebuild;
use crate::store::recall as store_recall;
use crate::store::{messages, summaries, Store};
use crate::timeformat::Zone;
use crate::tokens;

/// What a recall call reads: the store, the options, the timezone for rendered
/// times, and the engine's recall state.
pub struct Recall<'a> {
    /// The store.
    pub store: &'a Store,
    /// The options in force.
    pub opts: &'a EngineOptions,
    /// Timezone of rendered times.
    pub zone: Zone,
    /// Grants and catalogs.
    pub state: &'a Arc<RecallState>,
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

/// One half of a grep's answer: its hits and how they were found.
type Found<H> = (Vec<H>, ScopeStats);

impl Recall<'_> {
    fn store(&self) -> &Store {
        self.store
    }

    fn options(&self) -> &EngineOptions {
        self.opts
    }

    fn zone(&self) -> Zone {
        self.zone
    }

    fn recall(&self) -> &Arc<RecallState> {
        self.state
    }

    /// The message and summary searches `scope` asks for, at once, each on its
    /// own pooled read connection and snapshot (a "both" grep then costs its
    /// slower half, not the sum). Messages are never changed or removed, so the
    /// halves can differ only by a summary committed between their starts. The
    /// message half holds `in_flight`, the count the background catalog build
    /// gives way to.
    async fn search_both(
        &self,
        scope: Scope,
        q: grep::Query,
        state: Arc<RecallState>,
        mut in_flight: Option<ColdSearch>,
    ) -> Result<(Option<Found<MessageHit>>, Option<Found<SummaryHit>>)> {
        let features = self.store().features();
        let q = Arc::new(q);
        let (sq, ss) = (q.clone(), state.clone());
        let search_messages = self.store().read(move |conn| {
            store_recall::snapshot(conn, || {
                state.search_messages(conn, &q, features, &mut in_flight)
            })
        });
        let store = self.store().clone();
        let search_summaries = async move {
            store
                .read(move |conn| {
                    store_recall::snapshot(conn, || ss.search_summaries(conn, &sq, features))
                })
                .await
        };
        match scope {
            Scope::Messages => Ok((Some(search_messages.await?), None)),
            Scope::Summaries => Ok((None, Some(search_summaries.await?))),
            Scope::Both => {
                // A task of its own, so it runs beside the message half (a read
                // waits in place for its job; see `Store::read`).
                let summaries = tokio::spawn(search_summaries);
                let messages = search_messages.await;
                let summaries = summaries
                    .await
                    .map_err(|e| LcmError::internal(format!("summary search failed: {e}")))?;
                Ok((Some(messages?), Some(summaries?)))
            }
        }
    }

    fn resolve(
        &self,
        conversation_id: Option<i64>,
        family: Option<&Vec<i64>>,
        all: bool,
        grant_id: Option<&str>,
    ) -> Result<Resolved> {
        // One conversation, else a session family (never empty: an empty list is
        // no scope), else all / none.
        let named: Option<Vec<i64>> = conversation_id
            .map(|c| vec![c])
            .or_else(|| family.filter(|f| !f.is_empty()).cloned());
        let Some(gid) = grant_id else {
            return Ok(Resolved {
                conversations: named.or((!all).then(Vec::new)),
                grant: None,
            });
        };
        let asked: Vec<i64> = named.unwrap_or_default();
        let access = Access {
            conversations: &asked,
            all_conversations: all && asked.is_empty(),
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
        let scope = self.resolve(
            p.conversation_id,
            p.conversation_ids.as_ref(),
            all,
            p.grant_id.as_deref(),
        )?;
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
        let state = self.recall().clone();
        // Right after open, the catalog build gives way to a search of messages
        // (a summaries-only search never needs it).
        let searches_messages = p.scope != Scope::Summaries;
        let in_flight = searches_messages.then(|| state.cold_search()).flatten();
        if searches_messages && (p.mode == Mode::FullText || in_flight.is_some()) {
            // Message indexing is batched off the ingest path: make every
            // acknowledged message searchable first (full text, and regex before
            // the catalog is built; a broken index is not fatal: the search then
            // falls back to the catalog's substring matching).
            if let Err(e) = self.store().flush_fts().await {
                if e.code == ErrorCode::Closed {
                    return Err(e);
                }
            }
        }
        let (msgs, sums) = self.search_both(p.scope, q, state, in_flight).await?;
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
        let scope = self.resolve(
            o.conversation_id,
            o.conversation_ids.as_ref(),
            all,
            o.grant_id.as_deref(),
        )?;
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
        // One conversation, else a session family; neither: any.
        let wanted: Option<Vec<i64>> = o
            .conversation_id
            .map(|c| vec![c])
            .or_else(|| o.conversation_ids.clone().filter(|f| !f.is_empty()));
        let found = self
            .store()
            .read(move |conn| {
                let Some(conv) = describe::conversation_of(conn, &id)? else {
                    return Ok(None);
                };
                if let Some(g) = &grant {
                    check_grant_item(conn, g, &id, conv)?;
                } else if wanted.as_ref().is_some_and(|w| !w.contains(&conv)) {
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
        let scope = self.resolve(
            p.conversation_id,
            p.conversation_ids.as_ref(),
            all,
            p.grant_id.as_deref(),
        )?;
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
        // One conversation, else a session family; neither: any.
        let wanted: Option<Vec<i64>> = p
            .conversation_id
            .map(|c| vec![c])
            .or_else(|| p.conversation_ids.clone().filter(|f| !f.is_empty()));
        let walk = self
            .store()
            .read(move |conn| {
                let mut walk = Walk::default();
                for id in &ids {
                    let rec = summaries::get(conn, id)?
                        .ok_or_else(|| LcmError::not_found(format!("no summary {id}")))?;
                    match &grant {
                        Some(g) => check_grant_item(conn, g, id, rec.conversation_id)?,
                        None if wanted
                            .as_ref()
                            .is_some_and(|w| !w.contains(&rec.conversation_id)) =>
                        {
                            let names: Vec<String> =
                                wanted.iter().flatten().map(|c| c.to_string()).collect();
                            return Err(LcmError::not_found(format!(
                                "summary {id} is not in conversation {}",
                                names.join(", ")
                            )));
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

    /// Starts building the recall catalogs in the background (see
    /// [`RecallState::build_in_background`]).
    pub fn build_index_in_background(&self) {
        self.recall().build_in_background(self.store());
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
