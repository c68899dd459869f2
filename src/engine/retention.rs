//! `prune` and `restoreArchive`: retention's policies applied through the store
//! (see [`crate::retention`]).

use std::path::PathBuf;

use serde::Deserialize;

use super::space::ReclaimSpaceParams;
use super::Engine;
use crate::error::{LcmError, Result};
use crate::retention::archive::{self, Manifest};
use crate::retention::policy::{self, PruneKind};
use crate::retention::{PruneAction, PruneParams, PruneReport, RestoreReport};
use crate::store::retention as rows;
use crate::store::{space, LogRecord};

/// Conversations one `prune` call takes by default (the plugin's `maintain` calls
/// it in these small steps).
pub const PRUNE_LIMIT: usize = 16;

/// Where a pruned summary went.
#[derive(Debug, Clone, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct PrunedSummary {
    /// The summary.
    pub summary_id: String,
    /// The conversation that held it (removed with it).
    pub conversation_id: i64,
    /// The archive's directory (`lcm-tui restore <archive>` puts it back).
    pub archive: String,
}

/// Parameters of `restoreArchive`.
#[derive(Debug, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestoreArchiveParams {
    /// The archive's directory (or its `manifest.json`).
    pub path: String,
}

impl Engine {
    /// Applies the retention policies (`retention`, `maxDatabaseBytes`): archives
    /// idle conversations, and archives then removes those past `pruneAfterDays`
    /// (or, over the cap, oldest first). Each removal is one transaction made only
    /// after the archive and its manifest are fsynced, and only when the
    /// conversation did not change since it was archived. Then gives the freed
    /// pages back in small steps. `dryRun` reports without changing anything.
    pub async fn prune(&self, p: PruneParams) -> Result<PruneReport> {
        let now = policy::now_of(p.now.as_deref())?;
        let dry_run = p.dry_run.unwrap_or(false);
        let limit = p.limit.unwrap_or(PRUNE_LIMIT);
        let policies = self.opts.retention.clone();
        let root = self.opts.resolved_archive_dir();
        let cap = self.opts.max_database_bytes;
        let (ages, (page_size, pages, free), total_messages) = self
            .store
            .read(|c| {
                let ages = rows::conversation_ages(c)?;
                let total: i64 = ages.iter().map(|a| a.message_count).sum();
                Ok((ages, space::pages(c)?, total))
            })
            .await?;
        let database_bytes = page_size * pages;
        // Free pages go back to the file system anyway: the cap counts live pages.
        let live = page_size * (pages - free);
        let excess = cap.map_or(0, |c| (live - c).max(0));
        let per_message = if total_messages > 0 {
            live as f64 / total_messages as f64
        } else {
            0.0
        };
        let is_archived = |c: &rows::ConversationAge| {
            archive::latest(&root, c).is_some_and(|(_, m)| {
                m.last_activity == c.last_activity && m.messages() == c.message_count
            })
        };
        let planned = policy::plan(&ages, &policies, now, excess, per_message, &is_archived);
        let mut report = PruneReport {
            dry_run,
            database_bytes,
            max_database_bytes: cap,
            over_cap: excess > 0,
            remaining: planned.len().saturating_sub(limit),
            ..PruneReport::default()
        };
        if excess > 0 && !planned.iter().any(|s| s.kind == PruneKind::Prune) {
            let msg = format!(
                "the database holds {live} bytes, over maxDatabaseBytes ({}), and no retention policy can prune anything (add a policy with pruneAfterDays for cron or heartbeat sessions); nothing was removed",
                cap.unwrap_or(0)
            );
            self.store.log(&LogRecord {
                level: "warn",
                code: "LCM_CONFIG",
                operation: "engine::Engine::prune".into(),
                message: msg.clone(),
            });
            report.cap_warning = Some(msg);
        }
        let features = self.store.features();
        for step in planned.into_iter().take(limit) {
            let conv = step.conv.clone();
            let mut action = PruneAction {
                conversation_id: conv.conversation_id,
                session: conv
                    .session_key
                    .clone()
                    .unwrap_or_else(|| conv.session_id.clone()),
                policy: step.policy.clone(),
                action: step.kind,
                reason: step.reason,
                last_activity: conv.last_activity.clone(),
                idle_days: step.idle_days,
                messages: conv.message_count,
                archive: None,
                done: false,
                skipped: None,
            };
            if dry_run {
                action.archive = archive::latest(&root, &conv)
                    .map(|(d, _)| d.display().to_string())
                    .or_else(|| {
                        Some(
                            archive::conversation_dir(&root, &conv)
                                .display()
                                .to_string(),
                        )
                    });
                report.actions.push(action);
                continue;
            }
            let outcome = self
                .archive_and_prune(&root, &conv, step.kind, features)
                .await?;
            action.archive = Some(outcome.0.display().to_string());
            match outcome.1 {
                Some(removed) => {
                    action.done = true;
                    report.messages_removed += removed;
                }
                None if step.kind == PruneKind::Archive => action.done = true,
                None => {
                    action.skipped = Some(
                        "the conversation changed after it was archived; it stays (the next run archives it again)"
                            .into(),
                    );
                }
            }
            report.actions.push(action);
        }
        if report.messages_removed > 0 {
            // Off the hot path: one writer job per 64 pages, ingest runs between.
            let r = self.reclaim_space(ReclaimSpaceParams::default()).await?;
            report.bytes_reclaimed = r.bytes;
        }
        Ok(report)
    }

    /// Archives one conversation (reusing its newest archive when that still
    /// matches), then, for a prune, removes it in one transaction if it did not
    /// change. Returns the archive and, when removed, its message count.
    async fn archive_and_prune(
        &self,
        root: &std::path::Path,
        conv: &rows::ConversationAge,
        kind: PruneKind,
        features: crate::store::Features,
    ) -> Result<(PathBuf, Option<i64>)> {
        let id = conv.conversation_id;
        // One read snapshot: the rows and their fingerprint agree.
        let (dump, fp) = self.store.read(move |c| rows::snapshot(c, id)).await?;
        let root = root.to_path_buf();
        let conv_c = conv.clone();
        let fp_c = fp.clone();
        let (dir, manifest): (PathBuf, Manifest) = tokio::task::spawn_blocking(move || {
            if let Some((dir, m)) = archive::latest(&root, &conv_c) {
                if m.fingerprint == fp_c && archive::verify(&dir, &m).is_ok() {
                    return Ok((dir, m));
                }
            }
            archive::write(&root, &conv_c, &dump, &fp_c)
        })
        .await
        .map_err(|e| LcmError::internal(format!("archive task failed: {e}")))??;
        if kind == PruneKind::Archive {
            return Ok((dir, None));
        }
        let session = conv
            .session_key
            .clone()
            .unwrap_or_else(|| conv.session_id.clone());
        let archive_path = dir.display().to_string();
        let expected = manifest.fingerprint.clone();
        let messages = conv.message_count;
        let removed = self
            .store
            .write_tx(move |tx| {
                if !rows::conversation_exists(tx, id)? || rows::fingerprint(tx, id)? != expected {
                    return Ok(None);
                }
                // Before the rows go: it records the summaries' ids.
                rows::record_pruned(tx, id, &session, &archive_path, messages)?;
                Ok(Some(rows::delete_conversation(tx, id, features)?))
            })
            .await?;
        Ok((dir, removed))
    }

    /// Where a summary retention removed went (its conversation and archive), or
    /// `None` when it was never pruned.
    pub async fn pruned_summary(&self, summary_id: String) -> Result<Option<PrunedSummary>> {
        self.store
            .read(move |c| {
                Ok(
                    rows::pruned_summary(c, &summary_id)?.map(|(conversation_id, archive)| {
                        PrunedSummary {
                            summary_id,
                            conversation_id,
                            archive,
                        }
                    }),
                )
            })
            .await
    }

    /// Puts an archived conversation back, byte for byte, under its original ids
    /// (one transaction). Refuses when the conversation is in the database.
    pub async fn restore_archive(&self, p: RestoreArchiveParams) -> Result<RestoreReport> {
        let path = PathBuf::from(&p.path);
        let (dir, m, mut data) = tokio::task::spawn_blocking(move || archive::read(&path))
            .await
            .map_err(|e| LcmError::internal(format!("restore task failed: {e}")))??;
        let features = self.store.features();
        let report = self
            .store
            .write_tx(move |tx| {
                let id = m.conversation_id;
                if rows::conversation_exists(tx, id)? {
                    return Err(LcmError::invalid(format!(
                        "conversation {id} is in the database already; nothing was restored from {}",
                        dir.display()
                    )));
                }
                let mut active = true;
                for (table, list) in data.iter_mut() {
                    if table != "conversations" {
                        continue;
                    }
                    for row in list.iter_mut() {
                        let was_active = row.get("active").and_then(|v| v.as_i64()) != Some(0);
                        let taken = match &m.session_key {
                            Some(k) => was_active && rows::key_taken(tx, k)?,
                            None => false,
                        };
                        if taken {
                            row.insert("active".into(), serde_json::Value::from(0));
                        }
                        active = was_active && !taken;
                    }
                }
                rows::insert_rows(tx, &data, features)?;
                rows::forget_pruned(tx, id)?;
                Ok(RestoreReport {
                    archive: dir.display().to_string(),
                    conversation_id: id,
                    messages: m.messages(),
                    counts: m.counts.clone(),
                    active,
                })
            })
            .await?;
        // Restored ids are older than the recall catalogs' newest: they are built
        // again at the next search.
        let released = self.recall.release();
        drop(tokio::task::spawn_blocking(move || drop(released)));
        Ok(report)
    }
}
