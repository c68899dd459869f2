//! Large files of a conversation whose stored path is stale: a database copied or
//! moved with its `lcm-files` directory still names the old place. Reads already
//! find such a file by its id under `largeFilesDir`
//! ([`crate::largefiles::storage::locate`]); the doctor reports it and, on apply,
//! points the row at the file's current path. A file found nowhere is reported
//! (its messages come back in stored form, flagged) and cannot be repaired.

use std::path::Path;

use rusqlite::Connection;
use serde_json::json;

use super::repair::{Repair, RepairKind};
use super::violation::{Kind, Violation};
use crate::error::{ErrorCode, Result};
use crate::largefiles::storage::{self, Location};
use crate::store::largefiles as file_rows;

/// Violations of one conversation's large files.
pub fn check(conn: &Connection, conversation_id: i64, root: &Path) -> Result<Vec<Violation>> {
    let mut out = Vec::new();
    for rec in file_rows::all_in(conn, conversation_id)? {
        let c = Some(conversation_id);
        match storage::locate(&rec, root) {
            Ok(Location::Stored(_)) => {}
            Ok(Location::Moved(now)) => out.push(
                Violation::new(
                    Kind::LargeFileMoved,
                    c,
                    format!(
                        "large file {} is recorded at {} but is now at {} (a moved database); apply records the new path",
                        rec.file_id,
                        rec.storage_uri,
                        now.display()
                    ),
                )
                .repairable()
                .details(json!({ "fileId": rec.file_id, "storedAt": rec.storage_uri, "foundAt": now })),
            ),
            Err(e) if e.code == ErrorCode::NotFound => out.push(
                Violation::new(Kind::LargeFileMissing, c, e.message)
                    .details(json!({ "fileId": rec.file_id, "storedAt": rec.storage_uri })),
            ),
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Points every moved file's row of these conversations at its current path, in
/// the caller's transaction.
pub fn relocate(conn: &Connection, conversation_ids: &[i64], root: &Path) -> Result<Vec<Repair>> {
    let mut done = Vec::new();
    for &id in conversation_ids {
        for rec in file_rows::all_in(conn, id)? {
            let Ok(Location::Moved(now)) = storage::locate(&rec, root) else {
                continue;
            };
            let now = now.to_string_lossy();
            if file_rows::set_storage_uri(conn, &rec.file_id, &now)? {
                done.push(Repair::new(
                    RepairKind::RelocatedLargeFile,
                    Some(id),
                    format!(
                        "recorded large file {} at {now} (was {})",
                        rec.file_id, rec.storage_uri
                    ),
                ));
            }
        }
    }
    Ok(done)
}
