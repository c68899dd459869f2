//! `bootstrap`: reconciles a session transcript (JSONL file or host rows, see
//! [`crate::transcript`]) with the store in one transaction.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use super::Engine;
use crate::config::EngineOptions;
use crate::error::{LcmError, Result};
use crate::ingest::{map_batch, IngestBatchParams};
use crate::message::ingest;
use crate::store::conversations::{self, SessionRef};
use crate::store::messages::{self, Appender};
use crate::transcript::{
    self, content_key, BootstrapParams, BootstrapResult, PathEntry, Plan, Scan, Source,
};

/// Progress of an import: `(messages imported, messages to import)`.
pub type Progress = Arc<dyn Fn(u64, u64) + Send + Sync>;

impl Engine {
    /// Imports what the store lacks of a session transcript: all of it for a new
    /// conversation, the missing tail otherwise (never a duplicate). One write job,
    /// one transaction; the file is streamed.
    pub fn bootstrap(
        &self,
        p: BootstrapParams,
        progress: Option<Progress>,
    ) -> impl Future<Output = Result<BootstrapResult>> + Send + 'static {
        let opts = self.opts.clone();
        let large = crate::largefiles::intercept::Settings::from_options(&opts);
        self.store.write(move |conn| {
            let mut ctx = Import {
                opts: &opts,
                large: &large,
                progress,
            };
            ctx.run(conn, p)
        })
    }

    /// Like [`Engine::bootstrap`], with the parameters made by `make` on the writer
    /// thread.
    pub fn bootstrap_with<F>(
        &self,
        make: F,
    ) -> impl Future<Output = Result<BootstrapResult>> + Send + 'static
    where
        F: FnOnce() -> Result<BootstrapParams> + Send + 'static,
    {
        let opts = self.opts.clone();
        let large = crate::largefiles::intercept::Settings::from_options(&opts);
        self.store.write(move |conn| {
            let p = make()?;
            let mut ctx = Import {
                opts: &opts,
                large: &large,
                progress: None,
            };
            ctx.run(conn, p)
        })
    }
}

struct Import<'a> {
    opts: &'a EngineOptions,
    large: &'a crate::largefiles::intercept::Settings,
    progress: Option<Progress>,
}

impl Import<'_> {
    fn run(
        &mut self,
        conn: &mut rusqlite::Connection,
        mut p: BootstrapParams,
    ) -> Result<BootstrapResult> {
        if p.session_id.trim().is_empty() {
            return Err(LcmError::invalid("sessionId must be a non-empty string"));
        }
        let source = Source::from_params(&mut p)?;
        let scan = source.scan()?;
        let session = SessionRef {
            session_id: p.session_id.clone(),
            session_key: p.session_key.clone(),
        };
        crate::store::tx::write_tx(conn, |tx| self.reconcile(tx, &source, &scan, &session))
    }

    /// Plans and imports inside the one write transaction.
    fn reconcile(
        &self,
        tx: &rusqlite::Connection,
        source: &Source,
        scan: &Scan,
        session: &SessionRef,
    ) -> Result<BootstrapResult> {
        let existing = conversations::find(tx, session)?.map(|c| c.conversation_id);
        let result =
            |imported: usize, reason: &'static str, conversation_id: Option<i64>| BootstrapResult {
                bootstrapped: imported > 0,
                imported_messages: imported,
                reason,
                conversation_id,
                transcript_messages: scan.path.len(),
                skipped_entries: scan.skipped,
            };
        if scan.path.is_empty() {
            return Ok(result(0, transcript::REASON_EMPTY, existing));
        }
        let (conversation_id, start, reason) = match existing {
            None => (
                conversations::find_or_create(tx, session)?,
                0,
                transcript::REASON_IMPORTED,
            ),
            Some(id) => match self.plan(tx, id, source, scan)? {
                Plan::From(i) if i >= scan.path.len() => {
                    return Ok(result(0, transcript::REASON_UP_TO_DATE, Some(id)))
                }
                Plan::From(i) => (id, i, transcript::REASON_RECONCILED),
                Plan::NoAnchor => return Ok(result(0, transcript::REASON_NO_ANCHOR, Some(id))),
            },
        };
        let stored = messages::entry_ids(tx, conversation_id)?;
        let missing: Vec<&PathEntry> = scan.path[start..]
            .iter()
            .filter(|e| !e.entry_id.as_ref().is_some_and(|id| stored.contains(id)))
            .collect();
        let imported = self.import(tx, conversation_id, source, &missing)?;
        let reason = if imported == 0 {
            transcript::REASON_UP_TO_DATE
        } else {
            reason
        };
        Ok(result(imported, reason, Some(conversation_id)))
    }

    /// Where the conversation's copy of the transcript ends.
    fn plan(
        &self,
        tx: &rusqlite::Connection,
        conversation_id: i64,
        source: &Source,
        scan: &Scan,
    ) -> Result<Plan> {
        let Some(newest) = messages::newest_row(tx, conversation_id)? else {
            return Ok(Plan::From(0));
        };
        let stored_ids = messages::entry_ids(tx, conversation_id)?;
        let all: Vec<&PathEntry> = scan.path.iter().collect();
        let mut keys = Vec::with_capacity(all.len());
        source.read_messages(&all, &mut |entry, message| {
            let key = ingest::map_message(&message, None)
                .map(|m| content_key(m.role, &m.content))
                .unwrap_or([0; 32]);
            keys.push((entry.entry_id.clone(), key));
            Ok(())
        })?;
        let after = |id: &str| {
            messages::rows_after_entry(tx, conversation_id, id)
                .unwrap_or_default()
                .iter()
                .map(|(role, text)| content_key(role, text))
                .collect()
        };
        let newest = content_key(&newest.0, &newest.1);
        Ok(transcript::plan_missing(
            &keys,
            &stored_ids,
            &after,
            Some(&newest),
        ))
    }

    /// Appends the wanted entries' messages, one at a time (large files externalized
    /// as at ingest).
    fn import(
        &self,
        tx: &rusqlite::Connection,
        conversation_id: i64,
        source: &Source,
        wanted: &[&PathEntry],
    ) -> Result<usize> {
        let mut appender = Appender::open(tx, conversation_id)?;
        let total = wanted.len() as u64;
        let mut done = 0u64;
        source.read_messages(wanted, &mut |entry, message| {
            let m = self.map_one(tx, conversation_id, entry, message)?;
            appender.append(tx, &m)?;
            done += 1;
            if let Some(report) = &self.progress {
                report(done, total);
            }
            Ok(())
        })?;
        appender.finish(tx)?;
        Ok(done as usize)
    }

    fn map_one(
        &self,
        tx: &rusqlite::Connection,
        conversation_id: i64,
        entry: &PathEntry,
        message: Value,
    ) -> Result<ingest::NewMessage> {
        let mut one = IngestBatchParams {
            // Checked by `run`; the mapping only needs it non-empty.
            session_id: "transcript".to_owned(),
            session_key: None,
            messages: vec![message],
            entry_ids: Some(vec![entry.entry_id.clone()]),
            is_heartbeat: false,
        };
        let what = |e: LcmError| match &entry.entry_id {
            Some(id) => e.context(format!("transcript entry {id}")),
            None => e.context(format!("transcript entry at {}", entry.locator)),
        };
        map_batch(&one, self.opts.max_message_bytes).map_err(what)?;
        crate::largefiles::intercept::intercept_in(
            tx,
            conversation_id,
            &mut one.messages,
            self.large,
        )?;
        let mut mapped = map_batch(&one, self.opts.max_message_bytes).map_err(what)?;
        Ok(mapped.remove(0))
    }
}
