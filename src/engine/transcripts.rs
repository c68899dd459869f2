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
use crate::store::tx::{read_tx, write_tx};
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

/// What a transcript asks of the store, decided before anything is written.
enum Step {
    /// Nothing to import: the answer.
    Done(BootstrapResult),
    /// Import the path from `start` on (less what is stored by entry id) into the
    /// conversation, a new one when `None`.
    Import {
        conversation_id: Option<i64>,
        start: usize,
        reason: &'static str,
    },
}

/// The answer of a call that read `scan`.
fn answer(
    scan: &Scan,
    imported: usize,
    reason: &'static str,
    conversation_id: Option<i64>,
) -> BootstrapResult {
    BootstrapResult {
        bootstrapped: imported > 0,
        imported_messages: imported,
        reason,
        conversation_id,
        transcript_messages: scan.path.len(),
        skipped_entries: scan.skipped,
        needs_whole_transcript: reason == transcript::REASON_NEEDS_WHOLE,
    }
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
        let session = SessionRef {
            session_id: p.session_id.clone(),
            session_key: p.session_key.clone(),
        };
        if p.transcript_tail {
            let tail = transcript::tail_of(source)?;
            return read_tx(conn, |tx| self.tail(tx, &tail, &session));
        }
        let scan = source.scan()?;
        // A host bootstraps before every turn, and most calls find the conversation
        // up to date: decided in a read transaction, such a call never takes the
        // write lock, nor waits for another process holding it.
        if let Step::Done(r) = read_tx(conn, |tx| self.step(tx, &source, &scan, &session))? {
            return Ok(r);
        }
        write_tx(conn, |tx| self.reconcile(tx, &source, &scan, &session))
    }

    /// A `transcriptTail` call: up to date when the newest row is stored, else
    /// nothing imported and the whole transcript asked for.
    fn tail(
        &self,
        tx: &rusqlite::Connection,
        source: &Source,
        session: &SessionRef,
    ) -> Result<BootstrapResult> {
        let scan = source.scan()?;
        let existing = conversations::find(tx, session)?.map(|c| c.conversation_id);
        let stored = match (existing, transcript::newest_entry_id(source)?) {
            (Some(c), Some(id)) => messages::stores_entry(tx, c, &id)?,
            _ => false,
        };
        let reason = if stored {
            transcript::REASON_UP_TO_DATE
        } else {
            transcript::REASON_NEEDS_WHOLE
        };
        Ok(answer(&scan, 0, reason, existing))
    }

    /// What the transcript needs imported, as the store stands in `tx`.
    fn step(
        &self,
        tx: &rusqlite::Connection,
        source: &Source,
        scan: &Scan,
        session: &SessionRef,
    ) -> Result<Step> {
        let existing = conversations::find(tx, session)?.map(|c| c.conversation_id);
        if scan.path.is_empty() {
            return Ok(Step::Done(answer(
                scan,
                0,
                transcript::REASON_EMPTY,
                existing,
            )));
        }
        let Some(id) = existing else {
            return Ok(Step::Import {
                conversation_id: None,
                start: 0,
                reason: transcript::REASON_IMPORTED,
            });
        };
        Ok(match self.plan(tx, id, source, scan)? {
            Plan::From(i) if i >= scan.path.len() => {
                Step::Done(answer(scan, 0, transcript::REASON_UP_TO_DATE, Some(id)))
            }
            Plan::From(i) => Step::Import {
                conversation_id: Some(id),
                start: i,
                reason: transcript::REASON_RECONCILED,
            },
            Plan::NoAnchor => Step::Done(answer(scan, 0, transcript::REASON_NO_ANCHOR, Some(id))),
        })
    }

    /// Decides again and imports, inside the one write transaction.
    fn reconcile(
        &self,
        tx: &rusqlite::Connection,
        source: &Source,
        scan: &Scan,
        session: &SessionRef,
    ) -> Result<BootstrapResult> {
        let (conversation_id, start, reason) = match self.step(tx, source, scan, session)? {
            Step::Done(r) => return Ok(r),
            Step::Import {
                conversation_id,
                start,
                reason,
            } => match conversation_id {
                Some(id) => (id, start, reason),
                None => (conversations::find_or_create(tx, session)?, start, reason),
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
        Ok(answer(scan, imported, reason, Some(conversation_id)))
    }

    /// Where the conversation's copy of the transcript ends. Messages are read
    /// and keyed only where the rule compares them: none when the leaf is stored.
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
        let path_ids: Vec<Option<&str>> = scan.path.iter().map(|e| e.entry_id.as_deref()).collect();
        let mut keys_from = |from: usize| -> Result<Vec<[u8; 32]>> {
            let wanted: Vec<&PathEntry> = scan.path[from..].iter().collect();
            let mut keys = Vec::with_capacity(wanted.len());
            source.read_messages(&wanted, &mut |_, message| {
                let key = ingest::map_message(&message, None)
                    .map(|m| content_key(m.role, &m.content))
                    .unwrap_or([0; 32]);
                keys.push(key);
                Ok(())
            })?;
            Ok(keys)
        };
        let after = |id: &str| {
            messages::rows_after_entry(tx, conversation_id, id)
                .unwrap_or_default()
                .iter()
                .map(|(role, text)| content_key(role, text))
                .collect()
        };
        let newest = content_key(&newest.0, &newest.1);
        transcript::plan_missing(
            &path_ids,
            &stored_ids,
            &mut keys_from,
            &after,
            Some(&newest),
        )
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
