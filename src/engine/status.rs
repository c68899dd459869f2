//! `status`: the database and one session's context (see [`crate::status`]).

use super::Engine;
use crate::error::{LcmError, Result};
use crate::status::{
    ConversationCounts, DatabaseStatus, EngineStatus, PendingWork, SessionStatus, StatusParams,
    LARGEST_TABLES,
};
use crate::store::conversations::{self, SessionRef};
use crate::store::{fts_lag, messages, status};

impl Engine {
    /// The database (size, largest tables, conversations) and, when a session is
    /// named, its context: items and tokens against the budget, summaries per
    /// depth, the last compaction and pending work. Reads only.
    pub async fn status(&self, p: StatusParams) -> Result<EngineStatus> {
        if let Some(b) = p.token_budget {
            if b <= 0 {
                return Err(LcmError::invalid(format!(
                    "status: tokenBudget must be a positive number of tokens, got {b}"
                )));
            }
        }
        let ratio = p.context_threshold.unwrap_or(self.opts.context_threshold);
        if !(0.0..=1.0).contains(&ratio) {
            return Err(LcmError::invalid(format!(
                "status: contextThreshold must be between 0 and 1, got {ratio}"
            )));
        }
        let path = self.opts.resolved_db_path();
        let tables = p.tables.unwrap_or(true);
        let session = match (&p.session_id, &p.session_key) {
            (None, None) => None,
            (id, key) => Some(SessionRef {
                session_id: id.clone().unwrap_or_default(),
                session_key: key.clone(),
            }),
        };
        let (db, counts, found) = self
            .store
            .read(move |c| {
                let pages = status::pages(c)?;
                let largest = if tables {
                    status::largest_tables(c, LARGEST_TABLES)?
                } else {
                    None
                };
                let unindexed = fts_lag::pending_rows(c)?;
                let (active, archived) = status::conversation_counts(c)?;
                let found = match &session {
                    None => None,
                    Some(s) => Some(match conversations::find(c, s)? {
                        None => None,
                        Some(conv) => {
                            let id = conv.conversation_id;
                            Some((
                                conv,
                                messages::stats(c, id)?,
                                status::summaries_by_depth(c, id)?,
                                status::newest_summary_at(c, id)?,
                                status::has_gap(c, id)?,
                            ))
                        }
                    }),
                };
                Ok((
                    (pages, largest, unindexed),
                    ConversationCounts { active, archived },
                    found,
                ))
            })
            .await?;
        let (pages, largest_tables, unindexed_messages) = db;
        let size = |p: &str| std::fs::metadata(p).map_or(0, |m| m.len() as i64);
        let database = DatabaseStatus {
            file_bytes: size(&path),
            wal_bytes: size(&format!("{path}-wal")),
            path,
            page_size: pages.page_size,
            page_count: pages.page_count,
            freelist_pages: pages.freelist_count,
            largest_tables,
            unindexed_messages,
        };
        let threshold = p
            .token_budget
            .map(|b| crate::compaction::threshold_for(ratio, b));
        let running = self.compaction.running(
            p.session_id.as_deref().unwrap_or_default(),
            p.session_key.as_deref(),
        ) as i64;
        let session = found.map(|f| match f {
            None => SessionStatus {
                conversation_id: None,
                messages: 0,
                message_tokens: 0,
                context_items: 0,
                context_tokens: 0,
                token_budget: p.token_budget,
                context_threshold: ratio,
                threshold,
                summaries_by_depth: Vec::new(),
                newest_summary_at: None,
                last_compaction: None,
                pending: PendingWork {
                    compactions_running: running,
                    compaction_due: false,
                    context_gap: false,
                },
            },
            Some((conv, stats, depths, newest, gap)) => SessionStatus {
                conversation_id: Some(conv.conversation_id),
                messages: stats.message_count,
                message_tokens: stats.message_tokens,
                context_items: stats.context_items,
                context_tokens: stats.context_tokens,
                token_budget: p.token_budget,
                context_threshold: ratio,
                threshold,
                summaries_by_depth: depths,
                newest_summary_at: newest,
                last_compaction: self.compaction.last(conv.conversation_id),
                pending: PendingWork {
                    compactions_running: running,
                    compaction_due: threshold.is_some_and(|t| {
                        crate::compaction::over_threshold(stats.context_tokens, t)
                    }),
                    context_gap: gap,
                },
            },
        });
        Ok(EngineStatus {
            database,
            conversations: counts,
            session,
        })
    }
}
