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
use crate::store::conversations::{self, ArchiveCause, ConversationRecord, SessionRef};
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
                cap: None,
                skip_heartbeats: false,
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
                cap: None,
                skip_heartbeats: false,
            };
            ctx.run(conn, p)
        })
    }
}

struct Import<'a> {
    opts: &'a EngineOptions,
    large: &'a crate::largefiles::intercept::Settings,
    progress: Option<Progress>,
    /// `maxImportTokens` of the call.
    cap: Option<i64>,
    /// `skipHeartbeatTurns` of the call.
    skip_heartbeats: bool,
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

/// A session id the conversation has not seen, under its key.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Change {
    /// The same session: nothing to do.
    None,
    /// The new session continues the conversation: it takes the new id.
    Adopt(i64),
    /// The new session starts afresh: archive this conversation (`session-rollover`)
    /// and import the transcript into a new one.
    Rollover(i64),
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
        archived_conversation_id: None,
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
        self.cap = p.max_import_tokens.filter(|n| *n >= 0);
        self.skip_heartbeats = p.skip_heartbeat_turns;
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
        if let (Change::None, Step::Done(r)) =
            read_tx(conn, |tx| self.step(tx, &source, &scan, &session))?
        {
            return Ok(r);
        }
        write_tx(conn, |tx| self.reconcile(tx, &source, &scan, &session))
    }

    /// A `transcriptTail` call: up to date when the newest row is stored, else
    /// nothing imported and the whole transcript asked for (also for a session id
    /// the conversation has not seen: the whole transcript decides a rollover).
    fn tail(
        &self,
        tx: &rusqlite::Connection,
        source: &Source,
        session: &SessionRef,
    ) -> Result<BootstrapResult> {
        let scan = source.scan()?;
        let found = conversations::find(tx, session)?;
        let same_session = found
            .as_ref()
            .is_none_or(|c| c.session_id == session.session_id);
        let existing = found.map(|c| c.conversation_id);
        let stored = match (existing, transcript::newest_entry_id(source)?) {
            (Some(c), Some(id)) => same_session && messages::stores_entry(tx, c, &id)?,
            _ => false,
        };
        let reason = if stored {
            transcript::REASON_UP_TO_DATE
        } else {
            transcript::REASON_NEEDS_WHOLE
        };
        Ok(answer(&scan, 0, reason, existing))
    }

    /// Whether the call's session id is new to the conversation, and what that
    /// means (the rollover rule, docs/openclaw.md): a conversation whose session
    /// ended through a lifecycle event, or that holds no message, is continued;
    /// otherwise the new session continues it only when its transcript shares a
    /// message with it, else it is archived and the transcript starts a new one.
    fn change(
        &self,
        tx: &rusqlite::Connection,
        conv: &ConversationRecord,
        plan: impl FnOnce() -> Result<Plan>,
        scan: &Scan,
        session: &SessionRef,
    ) -> Result<Change> {
        if conv.session_id == session.session_id || session.session_key.is_none() {
            return Ok(Change::None);
        }
        let id = conv.conversation_id;
        let ended = conv.ended_session_id.is_some()
            && conv.ended_session_id.as_deref() == Some(conv.session_id.as_str());
        if ended || messages::newest_row(tx, id)?.is_none() {
            return Ok(Change::Adopt(id));
        }
        if scan.path.is_empty() {
            return Ok(Change::Rollover(id));
        }
        Ok(match plan()? {
            Plan::NoAnchor => Change::Rollover(id),
            Plan::From(_) => Change::Adopt(id),
        })
    }

    /// What the transcript needs imported, as the store stands in `tx`.
    fn step(
        &self,
        tx: &rusqlite::Connection,
        source: &Source,
        scan: &Scan,
        session: &SessionRef,
    ) -> Result<(Change, Step)> {
        let found = conversations::find(tx, session)?;
        let change = match &found {
            Some(conv) => self.change(
                tx,
                conv,
                || self.plan(tx, conv.conversation_id, source, scan),
                scan,
                session,
            )?,
            None => Change::None,
        };
        // A fresh conversation that follows a reset of this very session (the host
        // kept the session id and its transcript): what the transcript holds is
        // the ended conversation's, already archived; nothing of it is imported.
        let after_reset = match (&found, change) {
            (Some(c), Change::None) => {
                c.ended_session_id.as_deref() == Some(session.session_id.as_str())
                    && messages::newest_row(tx, c.conversation_id)?.is_none()
            }
            _ => false,
        };
        let existing = match change {
            Change::Rollover(_) => None,
            _ => found.map(|c| c.conversation_id),
        };
        if after_reset {
            return Ok((
                change,
                Step::Done(answer(scan, 0, transcript::REASON_AFTER_RESET, existing)),
            ));
        }
        if scan.path.is_empty() {
            return Ok((
                change,
                Step::Done(answer(scan, 0, transcript::REASON_EMPTY, existing)),
            ));
        }
        let Some(id) = existing else {
            let reason = match change {
                Change::Rollover(_) => transcript::REASON_ROLLOVER,
                _ => transcript::REASON_IMPORTED,
            };
            return Ok((
                change,
                Step::Import {
                    conversation_id: None,
                    start: self.first_import_start(source, scan)?,
                    reason,
                },
            ));
        };
        let step = match self.plan(tx, id, source, scan)? {
            Plan::From(i) if i >= scan.path.len() => {
                Step::Done(answer(scan, 0, transcript::REASON_UP_TO_DATE, Some(id)))
            }
            Plan::From(i) => Step::Import {
                conversation_id: Some(id),
                start: i,
                reason: transcript::REASON_RECONCILED,
            },
            Plan::NoAnchor => Step::Done(answer(scan, 0, transcript::REASON_NO_ANCHOR, Some(id))),
        };
        Ok((change, step))
    }

    /// Where a first import starts: 0, or under `maxImportTokens` the oldest of the
    /// newest messages that fit (at least the newest one; the path's length, i.e.
    /// nothing, when that one alone exceeds the cap).
    fn first_import_start(&self, source: &Source, scan: &Scan) -> Result<usize> {
        let Some(cap) = self.cap else { return Ok(0) };
        let wanted: Vec<&PathEntry> = scan.path.iter().collect();
        let mut tokens = Vec::with_capacity(wanted.len());
        source.read_messages(&wanted, &mut |_, message| {
            tokens.push(ingest::map_message(&message, None).map_or(0, |m| m.token_count));
            Ok(())
        })?;
        let mut start = tokens.len();
        let mut total = 0i64;
        while start > 0 {
            let t = tokens[start - 1];
            if total + t > cap {
                break;
            }
            total += t;
            start -= 1;
        }
        Ok(start)
    }

    /// Decides again and imports, inside the one write transaction.
    fn reconcile(
        &self,
        tx: &rusqlite::Connection,
        source: &Source,
        scan: &Scan,
        session: &SessionRef,
    ) -> Result<BootstrapResult> {
        let (change, step) = self.step(tx, source, scan, session)?;
        let mut archived = None;
        match change {
            Change::None => {}
            Change::Adopt(id) => conversations::adopt_session(tx, id, &session.session_id)?,
            Change::Rollover(id) => {
                conversations::archive(tx, id, ArchiveCause::Rollover)?;
                archived = Some(id);
            }
        }
        let (conversation_id, start, reason) = match step {
            Step::Done(mut r) => {
                if archived.is_some() {
                    // The fresh conversation exists from now on, even with nothing to import.
                    r.conversation_id = Some(conversations::find_or_create(tx, session)?);
                    r.archived_conversation_id = archived;
                    r.reason = transcript::REASON_ROLLOVER;
                }
                return Ok(r);
            }
            Step::Import {
                conversation_id,
                start,
                reason,
            } => match conversation_id {
                Some(id) => (id, start, reason),
                None => (conversations::find_or_create(tx, session)?, start, reason),
            },
        };
        if start >= scan.path.len() {
            let mut r = answer(scan, 0, transcript::REASON_OVER_CAP, Some(conversation_id));
            r.archived_conversation_id = archived;
            return Ok(r);
        }
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
        let mut r = answer(scan, imported, reason, Some(conversation_id));
        r.archived_conversation_id = archived;
        Ok(r)
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
        let mut stored = 0usize;
        // With `skipHeartbeatTurns`, a turn (a user message and what follows it) is
        // held until the next user message, then dropped when it only acknowledged
        // a heartbeat, else appended.
        let mut turn: Vec<(PathEntry, Value)> = Vec::new();
        let flush =
            |turn: &mut Vec<(PathEntry, Value)>, appender: &mut Appender| -> Result<usize> {
                let rows: Vec<(String, String)> = turn
                    .iter()
                    .filter_map(|(_, m)| ingest::map_message(m, None).ok())
                    .map(|m| (m.role.to_owned(), m.content))
                    .collect();
                if crate::lifecycle::is_heartbeat_ok_turn(&rows) {
                    turn.clear();
                    return Ok(0);
                }
                let n = turn.len();
                for (entry, message) in turn.drain(..) {
                    let m = self.map_one(tx, conversation_id, &entry, message)?;
                    appender.append(tx, &m)?;
                }
                Ok(n)
            };
        source.read_messages(wanted, &mut |entry, message| {
            if self.skip_heartbeats {
                let user = message.get("role").and_then(Value::as_str) == Some("user");
                if user && !turn.is_empty() {
                    stored += flush(&mut turn, &mut appender)?;
                }
                turn.push((entry.clone(), message));
            } else {
                let m = self.map_one(tx, conversation_id, entry, message)?;
                appender.append(tx, &m)?;
                stored += 1;
            }
            done += 1;
            if let Some(report) = &self.progress {
                report(done, total);
            }
            Ok(())
        })?;
        if !turn.is_empty() {
            stored += flush(&mut turn, &mut appender)?;
        }
        appender.finish(tx)?;
        Ok(stored)
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
