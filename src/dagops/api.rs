//! `Engine::dissolve` and `Engine::transplant`: dry runs on a read connection,
//! writes as one transaction on the writer.

use rusqlite::TransactionBehavior;

use super::dissolve::{self, DissolveParams, DissolvePlan};
use super::transplant::{self, TransplantParams, TransplantPlan};
use crate::engine::Engine;
use crate::error::Result;

impl Engine {
    /// Replaces a context summary by what it was made from (see [`crate::dagops`]).
    /// Without `apply`, only plans.
    pub async fn dissolve(&self, p: DissolveParams) -> Result<DissolvePlan> {
        if !p.apply {
            return self.store().read(move |c| dissolve::plan(c, &p)).await;
        }
        let features = self.store().features();
        self.store()
            .write(move |c| {
                let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let plan = dissolve::apply(&tx, &p, features)?;
                tx.commit()?;
                Ok(plan)
            })
            .await
    }

    /// Copies a conversation's context summaries, and everything beneath them, to
    /// the front of another's context list (see [`crate::dagops`]). Without `apply`,
    /// only plans. After the copy, the deferred message index is flushed and the
    /// copied messages' index rows are counted.
    pub async fn transplant(&self, p: TransplantParams) -> Result<TransplantPlan> {
        if !p.apply {
            return self.store().read(move |c| transplant::plan(c, &p)).await;
        }
        let features = self.store().features();
        let mut plan = self
            .store()
            .write(move |c| {
                let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let plan = transplant::apply(&tx, &p, features)?;
                tx.commit()?;
                Ok(plan)
            })
            .await?;
        if features.fts5 {
            self.store().flush_fts().await?;
            let (dst, range) = (plan.target_conversation_id, plan.seq_range);
            plan.messages_indexed = Some(
                self.store()
                    .read(move |c| transplant::indexed_copies(c, dst, range))
                    .await?,
            );
        }
        Ok(plan)
    }
}
