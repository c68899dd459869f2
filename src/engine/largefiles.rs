//! `summarizeLargeFiles`: model-written exploration summaries of large files, off
//! the writer thread (see [`crate::largefiles::upgrade`]). Candidates are read on a
//! reader, each file's opening is read from disk on a blocking thread, the model is
//! called on the async runtime, and only the swap runs on the writer, as one short
//! transaction per file.

use super::Engine;
use crate::error::{LcmError, Result};
use crate::largefiles::intercept::Settings;
use crate::largefiles::storage;
use crate::largefiles::upgrade::{
    self, SummarizeLargeFilesParams, SummarizeLargeFilesResult, DEFAULT_LIMIT, MAX_ATTEMPTS,
    MAX_LIMIT,
};
use crate::store::conversations::{self, SessionRef};
use crate::store::largefiles::{self as file_rows, LargeFileRecord};
use crate::store::tx::write_tx;

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Engine {
    /// Replaces the deterministic exploration summaries of up to `limit` large
    /// files (of one session when given, oldest first) by summaries the
    /// large-file model writes (`largeFileSummaryModel`). A failed or empty answer
    /// keeps the deterministic summary and schedules a retry with backoff (at most
    /// [`MAX_ATTEMPTS`] attempts). Without a large-file model it does nothing
    /// (`enabled: false`).
    pub async fn summarize_large_files(
        &self,
        p: SummarizeLargeFilesParams,
    ) -> Result<SummarizeLargeFilesResult> {
        if self.store.is_closed() {
            return Err(LcmError::closed());
        }
        let Some((summarizer, model)) = self.large_file_summarizer.clone() else {
            return Ok(SummarizeLargeFilesResult::default());
        };
        let limit = p.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
        let session = match (&p.session_id, &p.session_key) {
            (None, None) => None,
            (id, key) => Some(SessionRef {
                session_id: id.clone().unwrap_or_default(),
                session_key: key.clone(),
            }),
        };
        let now = now_ms();
        let found = self
            .store
            .read(move |c| {
                let conversation = match &session {
                    None => None,
                    Some(s) => match conversations::find(c, s)? {
                        Some(conv) => Some(conv.conversation_id),
                        None => return Ok(None),
                    },
                };
                let due =
                    file_rows::due_for_model_summary(c, conversation, now, MAX_ATTEMPTS, limit)?;
                Ok(Some((conversation, due)))
            })
            .await?;
        let mut out = SummarizeLargeFilesResult {
            enabled: true,
            ..Default::default()
        };
        let Some((conversation, due)) = found else {
            return Ok(out);
        };
        let root = Settings::from_options(&self.opts).dir;
        let timeout = std::time::Duration::from_millis(self.opts.summary_timeout_ms.max(1));
        for rec in due {
            let attempt = self
                .summarize_one(&rec, &root, Some(&model), summarizer.as_ref(), timeout)
                .await;
            match attempt {
                Ok(Some(n)) => {
                    out.summarized += 1;
                    out.messages_updated += n as u32;
                }
                Ok(None) => {}
                Err(e) => {
                    if e.code == crate::error::ErrorCode::Closed {
                        return Err(e);
                    }
                    out.failed += 1;
                    out.last_error = Some(format!(
                        "{}: {}: {}",
                        rec.file_id,
                        e.code.as_str(),
                        e.message
                    ));
                    let id = rec.file_id.clone();
                    let at = now_ms();
                    self.store
                        .write(move |c| {
                            write_tx(c, |tx| {
                                file_rows::record_model_summary_failure(tx, &id, |n| {
                                    upgrade::retry_at(at, n)
                                })
                            })
                        })
                        .await?;
                }
            }
        }
        out.remaining = self
            .store
            .read(move |c| file_rows::count_awaiting_model_summary(c, conversation, MAX_ATTEMPTS))
            .await?
            .max(0) as u32;
        Ok(out)
    }

    /// One file: `Ok(Some(messages updated))` when the model's summary was stored,
    /// `Ok(None)` when the row changed meanwhile (nothing to do), an error when the
    /// file could not be read or the model gave no usable answer.
    async fn summarize_one(
        &self,
        rec: &LargeFileRecord,
        root: &std::path::Path,
        model: Option<&str>,
        summarizer: &dyn crate::summarize::Summarizer,
        timeout: std::time::Duration,
    ) -> Result<Option<usize>> {
        let Some(old_reference) = rec.source.as_ref().map(|s| s.reference.clone()) else {
            return Ok(None);
        };
        let old_summary = rec.exploration_summary.clone().unwrap_or_default();
        // A reference that does not embed its summary as ingest writes it (a row
        // written otherwise) cannot take another: fail before any model call.
        if upgrade::rewrite_reference(&old_reference, &old_summary, &old_summary).is_none() {
            return Err(LcmError::invalid(format!(
                "the reference of large file {} does not embed its exploration summary",
                rec.file_id
            )));
        }
        let (r, dir) = (rec.clone(), root.to_path_buf());
        let slice = tokio::task::spawn_blocking(move || {
            storage::read_slice(&r, &dir, None, None, upgrade::HEAD_BYTES)
        })
        .await
        .map_err(|e| LcmError::internal(format!("large-file read task failed: {e}")))??;
        let req = upgrade::request(rec, &slice.content, slice.truncated, model)?;
        let answer = tokio::time::timeout(timeout, summarizer.summarize(req))
            .await
            .map_err(|_| {
                LcmError::new(
                    crate::error::ErrorCode::LlmTransient,
                    format!(
                        "the large-file model did not answer within {} ms",
                        timeout.as_millis()
                    ),
                )
            })??;
        let summary = upgrade::clean(&answer.content).ok_or_else(|| {
            LcmError::new(
                crate::error::ErrorCode::LlmBadResponse,
                "the large-file model answered with no summary text",
            )
        })?;
        let Some(new_reference) =
            upgrade::rewrite_reference(&old_reference, &old_summary, &summary)
        else {
            return Ok(None);
        };
        let id = rec.file_id.clone();
        let applied = self
            .store
            .write(move |c| {
                write_tx(c, |tx| {
                    let done = file_rows::apply_model_summary(
                        tx,
                        &id,
                        &old_reference,
                        &summary,
                        &new_reference,
                    )?;
                    // Stored trigram slices never change once written: those of
                    // rewritten messages are dropped, to be stored again.
                    if let Some(first) = done.messages.iter().map(|(id, _)| *id).min() {
                        crate::recall::slices::forget_message(tx, first)?;
                    }
                    Ok(done)
                })
            })
            .await?;
        if !applied.applied {
            return Ok(None);
        }
        let n = applied.messages.len();
        let recall = self.recall.clone();
        let rewritten = applied.messages;
        tokio::task::spawn_blocking(move || recall.note_rewritten(&rewritten))
            .await
            .map_err(|e| LcmError::internal(format!("catalog update task failed: {e}")))??;
        Ok(Some(n))
    }
}
