//! `doctor` and `integrityCheck`: thin methods over [`crate::doctor`].

use super::Engine;
use crate::doctor::{Doctor, DoctorParams, DoctorReport, Progress};
use crate::error::Result;

impl Engine {
    /// Checks the invariants (and, with `apply`, repairs what can be repaired
    /// without loss, then summarizes broken summaries again). See [`crate::doctor`].
    pub async fn doctor(
        &self,
        p: DoctorParams,
        progress: Option<Progress>,
    ) -> Result<DoctorReport> {
        let d = Doctor {
            store: self.store.clone(),
            pipeline: self.pipeline(),
            zone: self.zone,
            large_files_dir: crate::largefiles::intercept::Settings::from_options(&self.opts).dir,
            strip_tags: self.opts.strip_injected_context_tags.clone(),
        };
        d.run(p, progress).await
    }

    /// `PRAGMA integrity_check` rows (`["ok"]` for a sound database).
    pub async fn integrity_check(&self) -> Result<Vec<String>> {
        crate::doctor::integrity_check(&self.store).await
    }
}
