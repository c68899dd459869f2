//! Session lifecycle: thin methods over [`crate::lifecycle`], each one write
//! transaction queued on the writer thread when called (so it is ordered before
//! every write called after it).

use super::Engine;
use crate::error::Result;
use crate::lifecycle::{
    self, ArchiveParams, ArchiveResult, EndSessionParams, EndSessionResult, PruneContextParams,
};
use crate::store::conversations::{self, ConversationRecord};

impl Engine {
    /// Applies an end-of-session event: `new` prunes the context, `reset` / `idle`
    /// / `daily` / `compaction` archive and start a fresh conversation for the key,
    /// `deleted` archives, `restart` / `shutdown` / `unknown` keep everything.
    pub async fn end_session(&self, p: EndSessionParams) -> Result<EndSessionResult> {
        self.store
            .write_tx(move |tx| lifecycle::end_session(tx, &p))
            .await
    }

    /// Archives a conversation (operator), optionally with a fresh successor.
    pub async fn archive_conversation(&self, p: ArchiveParams) -> Result<ArchiveResult> {
        self.store
            .write_tx(move |tx| lifecycle::archive(tx, &p))
            .await
    }

    /// Makes an archived conversation active again (the key's current one is
    /// archived to make room).
    pub async fn unarchive_conversation(&self, conversation_id: i64) -> Result<ArchiveResult> {
        self.store
            .write_tx(move |tx| lifecycle::unarchive(tx, conversation_id))
            .await
    }

    /// `/new`'s context pruning on one conversation.
    pub async fn prune_context(&self, p: PruneContextParams) -> Result<EndSessionResult> {
        self.store
            .write_tx(move |tx| lifecycle::prune_context(tx, &p))
            .await
    }

    /// Every conversation of a session key (active and archived), newest first.
    pub async fn session_family(&self, session_key: String) -> Result<Vec<ConversationRecord>> {
        self.store
            .read(move |c| conversations::family(c, &session_key))
            .await
    }
}
