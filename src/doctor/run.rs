//! The doctor run: the check → repair → re-summarize → check sequence over the
//! store's jobs (reads on read connections, writes and FTS5 commands on the writer).

use super::{
    check_conversation, check_fts, check_global, conversation_ids, files, repair_all,
    require_conversation, resummarize, sort, DoctorParams, DoctorReport, Findings, Kind, Progress,
    Repair, RepairKind, Resummarized, ResummaryStatus, StopError,
};
use std::sync::Arc;

use crate::error::{LcmError, Result};
use crate::store::Store;
use crate::summarize::SummaryPipeline;
use crate::timeformat::Zone;

fn tick(progress: Option<&Progress>, phase: &str, done: usize, total: usize) {
    if let Some(p) = progress {
        p(phase, done as u64, total as u64);
    }
}

/// What a doctor run works with: the store, the pipeline that summarizes broken
/// summaries again, and the timezone of their source texts.
pub struct Doctor {
    /// The store.
    pub store: Store,
    /// The summarization pipeline.
    pub pipeline: Arc<dyn SummaryPipeline>,
    /// Timezone of source-text timestamps.
    pub zone: Zone,
    /// `largeFilesDir`, where moved large files are looked up by id.
    pub large_files_dir: std::path::PathBuf,
    /// `stripInjectedContextTags`, left out of re-summarized input as compaction does.
    pub strip_tags: Vec<String>,
}

impl Doctor {
    fn store(&self) -> &Store {
        &self.store
    }

    fn pipeline(&self) -> Arc<dyn SummaryPipeline> {
        self.pipeline.clone()
    }

    fn zone(&self) -> Zone {
        self.zone
    }

    /// Checks the invariants (and, with `apply`, repairs what can be repaired
    /// without loss, then summarizes broken summaries again). See [`crate::doctor`].
    pub async fn run(&self, p: DoctorParams, progress: Option<Progress>) -> Result<DoctorReport> {
        let (ids, scope) = self.doctor_scope(&p).await?;
        let found = self.doctor_check(&ids, scope, progress.as_ref()).await?;
        if !p.apply {
            return Ok(DoctorReport::dry_run(ids, found));
        }
        let mut repairs = self.doctor_relocate_files(&found, &ids).await?;
        if found.violations.iter().any(|v| v.repairable) {
            let (features, list, pr) = (self.store().features(), ids.clone(), progress.clone());
            repairs.extend(
                self.store()
                    .write(move |c| repair_all(c, features, &list, scope, pr.as_ref()))
                    .await?,
            );
        }
        let (resummarized, error) = self.doctor_resummarize(&ids, progress.as_ref()).await?;
        repairs.extend(
            resummarized
                .iter()
                .filter(|r| r.status == ResummaryStatus::Repaired)
                .map(|r| {
                    let mut x = Repair::new(
                        RepairKind::Resummarized,
                        Some(r.conversation_id),
                        format!(
                            "summarized {} again ({} → {} tokens)",
                            r.summary_id,
                            r.tokens_before,
                            r.tokens_after.unwrap_or(0)
                        ),
                    );
                    x.summary_ids.push(r.summary_id.clone());
                    x
                }),
        );
        let after = self.doctor_check(&ids, scope, progress.as_ref()).await?;
        Ok(DoctorReport {
            ok: after.is_clean() && error.is_none(),
            applied: true,
            conversation_ids: ids,
            found,
            repairs,
            resummarized,
            error,
            remaining: Some(after),
        })
    }

    /// The conversations to check, and the scope (`None`: every conversation).
    async fn doctor_scope(&self, p: &DoctorParams) -> Result<(Vec<i64>, Option<i64>)> {
        match (p.conversation_id, p.all) {
            (Some(_), true) => Err(LcmError::invalid(
                "doctor takes a conversation id or all, not both",
            )),
            (None, false) => Err(LcmError::invalid(
                "doctor needs a conversation id, or all: true for every conversation",
            )),
            (Some(id), false) => {
                self.store()
                    .read(move |c| require_conversation(c, id))
                    .await?;
                Ok((vec![id], Some(id)))
            }
            (None, true) => Ok((self.store().read(conversation_ids).await?, None)),
        }
    }

    /// One full check: database-wide, full-text (after flushing the deferred message
    /// index), then each conversation.
    async fn doctor_check(
        &self,
        ids: &[i64],
        scope: Option<i64>,
        progress: Option<&Progress>,
    ) -> Result<Findings> {
        let features = self.store().features();
        tick(progress, "check", 0, ids.len());
        let mut violations = self.store().read(check_global).await?;
        if features.fts5 {
            self.store().flush_fts().await?;
        }
        violations.extend(
            self.store()
                .write(move |c| check_fts(c, c, features, scope))
                .await?,
        );
        let mut broken = Vec::new();
        for (i, id) in ids.iter().copied().enumerate() {
            let root = self.large_files_dir();
            let (f, files) = self
                .store()
                .read(move |c| Ok((check_conversation(c, id)?, files::check(c, id, &root)?)))
                .await?;
            violations.extend(f.violations);
            violations.extend(files);
            broken.extend(f.broken_summaries);
            tick(progress, "check", i + 1, ids.len());
        }
        sort(&mut violations);
        Ok(Findings {
            violations,
            broken_summaries: broken,
        })
    }

    fn large_files_dir(&self) -> std::path::PathBuf {
        self.large_files_dir.clone()
    }

    /// Points the rows of moved large files at their current paths (one write).
    async fn doctor_relocate_files(&self, found: &Findings, ids: &[i64]) -> Result<Vec<Repair>> {
        if !found
            .violations
            .iter()
            .any(|v| v.kind == Kind::LargeFileMoved)
        {
            return Ok(Vec::new());
        }
        let (root, list) = (self.large_files_dir(), ids.to_vec());
        self.store()
            .write_tx(move |tx| files::relocate(tx, &list, &root))
            .await
    }

    /// Summarizes each broken summary again, bottom-up, each in its own transaction;
    /// stops at the first summarizer error.
    async fn doctor_resummarize(
        &self,
        ids: &[i64],
        progress: Option<&Progress>,
    ) -> Result<(Vec<Resummarized>, Option<StopError>)> {
        let mut targets = Vec::new();
        for id in ids.iter().copied() {
            targets.extend(
                self.store()
                    .read(move |c| check_conversation(c, id))
                    .await?
                    .broken_summaries,
            );
        }
        let mut out = Vec::new();
        for (i, b) in targets.iter().enumerate() {
            tick(progress, "resummarize", i, targets.len());
            match self.resummarize_one(b).await {
                Ok(r) => out.push(r),
                Err(e) => {
                    let stop = StopError {
                        summary_id: b.summary_id.clone(),
                        code: e.code.as_str().to_owned(),
                        message: e.message,
                    };
                    return Ok((out, Some(stop)));
                }
            }
        }
        tick(progress, "resummarize", targets.len(), targets.len());
        Ok((out, None))
    }

    async fn resummarize_one(&self, b: &resummarize::BrokenSummary) -> Result<Resummarized> {
        let (id, zone) = (b.summary_id.clone(), self.zone());
        let tags = self.strip_tags.clone();
        let job = self
            .store()
            .read(move |c| resummarize::job(c, &id, &zone, &tags))
            .await?;
        let mut r = Resummarized {
            summary_id: b.summary_id.clone(),
            conversation_id: b.conversation_id,
            status: ResummaryStatus::Unchanged,
            level: None,
            model: None,
            tokens_before: b.token_count,
            tokens_after: None,
        };
        let Some(job) = job else {
            return Ok(r);
        };
        let out = self.pipeline().run(job.input).await?;
        r.level = Some(out.level);
        r.model = Some(out.model.clone());
        r.tokens_after = Some(out.tokens_out);
        if super::markers::detect(&out.content).is_some() {
            r.status = ResummaryStatus::StillBroken;
            return Ok(r);
        }
        let (id, features) = (b.summary_id.clone(), self.store().features());
        let wrote = self
            .store()
            .write_tx(move |tx| {
                resummarize::write(
                    tx,
                    &id,
                    &job.old_content,
                    &out.content,
                    &out.model,
                    features,
                )
            })
            .await?;
        if wrote {
            r.status = ResummaryStatus::Repaired;
        }
        Ok(r)
    }
}

/// `PRAGMA integrity_check` rows (`["ok"]` for a sound database), with the
/// full-text indexes' cached structure reloaded first (see
/// [`super::global::integrity_lines`]).
pub async fn integrity_check(store: &Store) -> Result<Vec<String>> {
    store.read(super::global::integrity_lines).await
}
