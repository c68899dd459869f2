//! `dissolve` and `transplant`: thin methods over [`crate::dagops`].

use super::Engine;
use crate::dagops::dissolve::{DissolveParams, DissolvePlan};
use crate::dagops::transplant::{TransplantParams, TransplantPlan};
use crate::error::Result;

impl Engine {
    /// Replaces a context summary by what it was made from (see [`crate::dagops`]).
    /// Without `apply`, only plans.
    pub async fn dissolve(&self, p: DissolveParams) -> Result<DissolvePlan> {
        crate::dagops::run::dissolve(&self.store, p).await
    }

    /// Copies a conversation's context summaries, and everything beneath them, to
    /// the front of another's context list (see [`crate::dagops`]). Without `apply`,
    /// only plans.
    pub async fn transplant(&self, p: TransplantParams) -> Result<TransplantPlan> {
        crate::dagops::run::transplant(&self.store, p).await
    }
}
