//! Per-engine recall state: the delegation grants (in memory only), the message
//! catalog and the summary catalog, each behind its own lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::catalog::Catalog;
use super::grants::Registry;
use super::grep::{self, MessageHit, ScopeStats, SummaryHit};
use super::sumcat::SummaryCatalog;
use crate::error::{LcmError, Result};
use crate::store::{messages, Store};

/// Per-engine recall state: the grants (in memory only) and the message catalog.
#[derive(Debug, Default)]
pub struct RecallState {
    grants: Mutex<Registry>,
    /// The in-memory message catalog (see [`Catalog`]).
    pub(crate) catalog: RwLock<Catalog>,
    catalog_sync: Mutex<()>,
    /// The catalog holds every message up to some snapshot (after the first build).
    ready: AtomicBool,
    summaries: Mutex<SummaryCatalog>,
    /// The summary catalog holds every summary up to some snapshot.
    summaries_ready: AtomicBool,
}

/// The error for a poisoned recall lock.
pub(crate) fn poisoned() -> LcmError {
    LcmError::internal("recall state lock poisoned")
}

impl RecallState {
    /// The grant registry.
    pub(crate) fn grants(&self) -> Result<std::sync::MutexGuard<'_, Registry>> {
        self.grants.lock().map_err(|_| poisoned())
    }

    /// Builds the summary and message catalogs on a read connection in the
    /// background (called right after open, so the first `grep` rarely waits for
    /// them; until they are ready, searches that SQLite answers exactly and
    /// cheaply do not wait at all).
    pub fn build_in_background(self: &Arc<Self>, store: &Store) {
        let state = self.clone();
        let store = store.clone();
        tokio::spawn(async move {
            let built = store
                .read(move |conn| {
                    drop(state.sync_summaries(conn)?);
                    state.sync_catalog(conn)
                })
                .await;
            // A failure is not fatal: the first search builds the catalog again.
            drop(built);
        });
    }

    /// Whether the message catalog has been built.
    pub(crate) fn catalog_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Brings the summary catalog up to date with `conn`'s snapshot and keeps it
    /// locked for the caller.
    fn sync_summaries(
        &self,
        conn: &rusqlite::Connection,
    ) -> Result<std::sync::MutexGuard<'_, SummaryCatalog>> {
        let mut sc = self.summaries.lock().map_err(|_| poisoned())?;
        sc.sync(conn)?;
        self.summaries_ready.store(true, Ordering::Release);
        Ok(sc)
    }

    /// Searches summaries: from their matches alone while the summary catalog is
    /// not loaded yet and the query allows it ([`grep::summaries::search_summaries_cold`]),
    /// else with the catalog brought up to date first (waiting for a load in
    /// progress).
    pub(crate) fn search_summaries(
        &self,
        conn: &rusqlite::Connection,
        q: &grep::Query,
        features: crate::store::Features,
    ) -> Result<(Vec<SummaryHit>, ScopeStats)> {
        if !self.summaries_ready.load(Ordering::Acquire) {
            if let Some(found) = grep::summaries::search_summaries_cold(conn, q, features)? {
                return Ok(found);
            }
        }
        let sc = self.sync_summaries(conn)?;
        grep::search_summaries(conn, &sc, q, features)
    }

    /// Searches messages: from SQLite alone while the catalog is not built yet and
    /// the query allows it ([`grep::cold`]), else through the catalog brought up
    /// to date first (waiting for a build in progress).
    pub(crate) fn search_messages(
        &self,
        conn: &rusqlite::Connection,
        q: &grep::Query,
        features: crate::store::Features,
    ) -> Result<(Vec<MessageHit>, ScopeStats)> {
        if !self.catalog_ready() {
            if let Some(found) = grep::cold::search_messages_cold(conn, q, features)? {
                return Ok(found);
            }
        }
        self.sync_catalog(conn)?;
        let cat = self.catalog.read().map_err(|_| poisoned())?;
        grep::search_messages(conn, &cat, q, features)
    }

    /// Brings the catalog up to date with `conn`'s snapshot. The first build
    /// fills a new catalog without holding the catalog's lock.
    pub(crate) fn sync_catalog(&self, conn: &rusqlite::Connection) -> Result<()> {
        let _one = self.catalog_sync.lock().map_err(|_| poisoned())?;
        let (loaded, last) = {
            let c = self.catalog.read().map_err(|_| poisoned())?;
            (c.is_loaded(), c.last_id())
        };
        let max = messages::max_message_id(conn)?;
        if loaded && max <= last {
            return Ok(());
        }
        if loaded {
            self.catalog
                .write()
                .map_err(|_| poisoned())?
                .catch_up(conn)?;
        } else {
            let mut fresh = Catalog::default();
            fresh.catch_up(conn)?;
            *self.catalog.write().map_err(|_| poisoned())? = fresh;
        }
        self.ready.store(true, Ordering::Release);
        Ok(())
    }
}
