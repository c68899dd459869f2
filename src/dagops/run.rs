//! `dissolve` and `transplant` over a store: dry runs on a read connection, writes
//! as one transaction on the writer.

use super::dissolve::{self, DissolveParams, DissolvePlan};
use super::transplant::{self, TransplantParams, TransplantPlan};
use crate::error::Result;
use crate::store::Store;

/// Replaces a context summary by what it was made from (see [`crate::dagops`]).
/// Without `apply`, only plans.
pub async fn dissolve(store: &Store, p: DissolveParams) -> Result<DissolvePlan> {
    if !p.apply {
        return store.read(move |c| dissolve::plan(c, &p)).await;
    }
    let features = store.features();
    store
        .write_tx(move |tx| dissolve::apply(tx, &p, features))
        .await
}

/// Copies a conversation's context summaries, and everything beneath them, to
/// the front of another's context list (see [`crate::dagops`]). Without `apply`,
/// only plans. After the copy, the deferred message index is flushed and the
/// copied messages' index rows are counted.
pub async fn transplant(store: &Store, p: TransplantParams) -> Result<TransplantPlan> {
    if !p.apply {
        return store.read(move |c| transplant::plan(c, &p)).await;
    }
    let features = store.features();
    let mut plan = store
        .write_tx(move |tx| transplant::apply(tx, &p, features))
        .await?;
    if features.fts5 {
        store.flush_fts().await?;
        let (dst, range) = (plan.target_conversation_id, plan.seq_range);
        plan.messages_indexed = Some(
            store
                .read(move |c| transplant::indexed_copies(c, dst, range))
                .await?,
        );
    }
    Ok(plan)
}
