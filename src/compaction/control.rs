//! Coordination of compaction calls: a per-conversation async mutex (two compact
//! calls for one conversation never run passes concurrently; other conversations
//! proceed) and cancel tokens that `cancel(sessionId)` or an AbortSignal trips.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, OwnedMutexGuard};

#[derive(Default)]
struct TokenInner {
    cancelled: AtomicBool,
    notify: Notify,
}

/// A cancellation flag that can also be awaited. Cheap to clone.
#[derive(Clone, Default)]
pub struct CancelToken(Arc<TokenInner>);

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CancelToken({})", self.is_cancelled())
    }
}

impl CancelToken {
    /// A fresh, untripped token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Trips the token; idempotent.
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::Release);
        self.0.notify.notify_waiters();
    }

    /// Whether the token was tripped.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::Acquire)
    }

    /// Resolves once the token is tripped.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

struct Running {
    id: u64,
    session_id: String,
    session_key: Option<String>,
    token: CancelToken,
}

/// Per-engine compaction bookkeeping.
#[derive(Default)]
pub struct Coordinator {
    locks: Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>,
    running: Mutex<Vec<Running>>,
    next_id: AtomicU64,
    /// The newest compaction that wrote something, per conversation (this process).
    last: Mutex<HashMap<i64, CompactionRecord>>,
    /// Summarizer spend per conversation since the engine opened.
    usage: Mutex<HashMap<i64, crate::summarize::meter::Usage>>,
}

/// A compaction that wrote summaries, as this process saw it (`status`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct CompactionRecord {
    /// When it ended (ISO 8601, UTC).
    pub at: String,
    /// The mode that ran.
    pub mode: super::Mode,
    /// Why it ended (the result's `reason`).
    pub reason: String,
    /// Stored context tokens before.
    pub tokens_before: i64,
    /// Stored context tokens after.
    pub tokens_after: i64,
    /// Summaries written.
    pub passes: i64,
    /// Summarizer requests made (answered or failed), as metered.
    pub summarizer_calls: i64,
    /// Passes that fell back to deterministic truncation.
    pub fallbacks: i64,
    /// Estimated tokens sent to the summarizer (the passes' source text).
    pub tokens_in: i64,
    /// Estimated tokens of the summaries written.
    pub tokens_out: i64,
    /// Wall-clock time of the passes, in milliseconds.
    pub ms: u64,
}

impl CompactionRecord {
    /// The record of a result that wrote summaries; `None` otherwise.
    pub fn of(r: &super::CompactResult) -> Option<Self> {
        if r.passes.is_empty() {
            return None;
        }
        use crate::summarize::Level;
        Some(CompactionRecord {
            at: crate::timestamp::to_iso(chrono::Utc::now()),
            mode: r.mode,
            reason: r.reason.clone(),
            tokens_before: r.tokens_before,
            tokens_after: r.tokens_after,
            passes: r.passes.len() as i64,
            summarizer_calls: r.summarizer.calls,
            fallbacks: r
                .passes
                .iter()
                .filter(|p| p.level == Level::Fallback)
                .count() as i64,
            tokens_in: r.passes.iter().map(|p| p.tokens_in).sum(),
            tokens_out: r.passes.iter().map(|p| p.tokens_out).sum(),
            ms: r.passes.iter().map(|p| p.ms).sum(),
        })
    }
}

impl Coordinator {
    /// Adds a compaction call's summarizer spend to its conversation's total.
    pub fn add_usage(&self, conversation_id: i64, u: &crate::summarize::meter::Usage) {
        let mut m = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        m.entry(conversation_id).or_default().add(u);
    }

    /// A conversation's summarizer spend since the engine opened.
    pub fn usage(&self, conversation_id: i64) -> crate::summarize::meter::Usage {
        let m = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        m.get(&conversation_id).copied().unwrap_or_default()
    }
}

/// Keeps a running call cancellable by session; deregisters on drop.
pub struct Registration {
    coordinator: Arc<Coordinator>,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(mut r) = self.coordinator.running.lock() {
            r.retain(|x| x.id != self.id);
        }
    }
}

impl Coordinator {
    /// Registers a call's token under its session id and key.
    pub fn register(
        self: &Arc<Self>,
        session_id: &str,
        session_key: Option<&str>,
        token: CancelToken,
    ) -> Registration {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut r) = self.running.lock() {
            r.push(Running {
                id,
                session_id: session_id.to_owned(),
                session_key: session_key.map(str::to_owned),
                token,
            });
        }
        Registration {
            coordinator: self.clone(),
            id,
        }
    }

    /// Trips every running call whose session id or key equals `session`; returns
    /// how many were running.
    pub fn cancel(&self, session: &str) -> usize {
        let Ok(r) = self.running.lock() else {
            return 0;
        };
        let hits: Vec<&Running> = r
            .iter()
            .filter(|x| x.session_id == session || x.session_key.as_deref() == Some(session))
            .collect();
        for x in &hits {
            x.token.cancel();
        }
        hits.len()
    }

    /// Remembers `r` as the conversation's last compaction when it wrote summaries.
    pub fn record(&self, conversation_id: i64, r: &super::CompactResult) {
        if let Some(rec) = CompactionRecord::of(r) {
            if let Ok(mut last) = self.last.lock() {
                last.insert(conversation_id, rec);
            }
        }
    }

    /// The conversation's last compaction that wrote summaries (this process).
    pub fn last(&self, conversation_id: i64) -> Option<CompactionRecord> {
        self.last.lock().ok()?.get(&conversation_id).cloned()
    }

    /// How many calls of the session (by id or key) are running.
    pub fn running(&self, session_id: &str, session_key: Option<&str>) -> usize {
        let Ok(r) = self.running.lock() else {
            return 0;
        };
        r.iter()
            .filter(|x| {
                x.session_id == session_id
                    || (session_key.is_some() && x.session_key.as_deref() == session_key)
            })
            .count()
    }

    /// Trips every running call (used when the engine closes).
    pub fn cancel_all(&self) -> usize {
        let Ok(r) = self.running.lock() else {
            return 0;
        };
        r.iter().for_each(|x| x.token.cancel());
        r.len()
    }

    /// Waits for the conversation's compaction lock.
    pub async fn lock(&self, conversation_id: i64) -> OwnedMutexGuard<()> {
        let m = {
            let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
            locks.retain(|_, m| Arc::strong_count(m) > 1);
            locks.entry(conversation_id).or_default().clone()
        };
        m.lock_owned().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn cancel_reaches_the_sessions_calls_only() {
        let c = Arc::new(Coordinator::default());
        let (a, b) = (CancelToken::new(), CancelToken::new());
        let ra = c.register("s1", Some("key-1"), a.clone());
        let _rb = c.register("s2", None, b.clone());
        assert_eq!(c.cancel("key-1"), 1);
        assert!(a.is_cancelled() && !b.is_cancelled());
        a.cancelled().await;
        drop(ra);
        assert_eq!(c.cancel("s1"), 0, "deregistered on drop");
    }

    #[tokio::test]
    async fn the_lock_serializes_one_conversation_only() {
        let c = Arc::new(Coordinator::default());
        let g1 = c.lock(1).await;
        let other = tokio::time::timeout(Duration::from_millis(50), c.lock(2)).await;
        assert!(other.is_ok(), "another conversation proceeds");
        let same = tokio::time::timeout(Duration::from_millis(50), c.lock(1)).await;
        assert!(same.is_err(), "the same conversation waits");
        drop(g1);
        assert!(tokio::time::timeout(Duration::from_millis(50), c.lock(1))
            .await
            .is_ok());
    }
}
