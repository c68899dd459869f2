//! Per-engine recall state: the delegation grants (in memory only), the message
//! catalog and the summary catalog, each behind its own lock.

use std::sync::{Mutex, RwLock};

use super::catalog::Catalog;
use super::grants::Registry;
use super::grep::{self, ScopeStats, SummaryHit};
use super::sumcat::SummaryCatalog;
use crate::error::{LcmError, Result};

/// Per-engine recall state: the grants (in memory only) and the message catalog.
#[derive(Debug, Default)]
pub struct RecallState {
    grants: Mutex<Registry>,
    /// The in-memory message catalog (see [`Catalog`]).
    pub(crate) catalog: RwLock<Catalog>,
    catalog_sync: Mutex<()>,
    summaries: Mutex<SummaryCatalog>,
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

    /// Searches summaries with the summary catalog brought up to date first.
    pub(crate) fn search_summaries(
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
    pub(crate) fn sync_catalog(&self, conn: &rusqlite::Connection) -> Result<()> {
        let _one = self.catalog_sync.lock().map_err(|_| poisoned())?;
        let (loaded, last) = {
            let c = self.catalog.read().map_err(|_| poisoned())?;
            (c.is_loaded(), c.last_id())
        };
        let max = crate::store::messages::max_message_id(conn)?;
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
