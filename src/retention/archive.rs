//! Archives on disk: writing one (every file fsynced and renamed, then the
//! manifest), finding a conversation's newest, and reading one back with every
//! file's size and sha256 checked.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::{ErrorCode, LcmError, Result};
use crate::store::retention::ConversationAge;
use crate::store::space::sync_file_and_dir;

/// The manifest's `format`.
pub const FORMAT: &str = "lcm-archive/1";

/// zstd level of archive files: about 8× on conversation JSONL, a few MB/s per
/// core more than level 3, written off the write lock.
const ZSTD_LEVEL: i32 = 12;

/// The manifest's name in an archive directory.
pub const MANIFEST: &str = "manifest.json";

/// One file of an archive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveFile {
    /// File name in the archive directory.
    pub name: String,
    /// Rows (JSONL lines) it holds.
    pub rows: i64,
    /// Bytes on disk (compressed).
    pub bytes: i64,
    /// sha256 (hex) of the bytes on disk.
    pub sha256: String,
}

/// An archive's manifest: what it holds and how to check it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// `lcm-archive/1`.
    pub format: String,
    /// The conversation (restored under the same id).
    pub conversation_id: i64,
    /// Its session id.
    pub session_id: String,
    /// Its session key.
    pub session_key: Option<String>,
    /// Its newest message's time when archived.
    pub last_activity: String,
    /// When the archive was written (ISO 8601).
    pub archived_at: String,
    /// What the conversation's rows looked like (counts, newest ids): a prune
    /// removes them only if they still do.
    pub fingerprint: String,
    /// Rows per table.
    pub counts: BTreeMap<String, i64>,
    /// The files, each with its size and sha256.
    pub files: Vec<ArchiveFile>,
}

impl Manifest {
    /// Messages the archive holds.
    pub fn messages(&self) -> i64 {
        self.counts.get("messages").copied().unwrap_or(0)
    }
}

/// What `restoreArchive` put back.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct RestoreReport {
    /// The archive's directory.
    pub archive: String,
    /// The conversation, under its original id.
    pub conversation_id: i64,
    /// Messages put back.
    pub messages: i64,
    /// Rows per table put back.
    pub counts: BTreeMap<String, i64>,
    /// False when another conversation is now the session key's active one (the
    /// restored conversation is then inactive).
    pub active: bool,
}

fn io(what: &str, path: &Path, e: impl std::fmt::Display) -> LcmError {
    LcmError::new(
        ErrorCode::Io,
        format!("cannot {what} {}: {e}", path.display()),
    )
}

/// A file-name-safe form of a session key (at most 80 characters).
fn safe_name(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// The directory holding a conversation's archives.
pub fn conversation_dir(root: &Path, conv: &ConversationAge) -> PathBuf {
    let session = conv.session_key.as_deref().unwrap_or(&conv.session_id);
    root.join(format!("{}-c{}", safe_name(session), conv.conversation_id))
}

/// The newest complete archive of a conversation (its directory and manifest).
pub fn latest(root: &Path, conv: &ConversationAge) -> Option<(PathBuf, Manifest)> {
    let dir = conversation_dir(root, conv);
    let mut stamps: Vec<PathBuf> = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(MANIFEST).is_file())
        .collect();
    stamps.sort();
    stamps.into_iter().rev().find_map(|p| {
        let m = read_manifest(&p).ok()?;
        Some((p, m))
    })
}

/// Reads and parses an archive directory's manifest.
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).map_err(|e| io("read", &path, e))?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| {
        LcmError::invalid(format!(
            "{} is not an archive manifest: {e}",
            path.display()
        ))
    })?;
    if m.format != FORMAT {
        return Err(LcmError::invalid(format!(
            "{} has format {:?}; this version reads {FORMAT}",
            path.display(),
            m.format
        )));
    }
    Ok(m)
}

/// Writes `bytes` to `dir/name` durably: `<name>.partial`, fsync, rename.
fn write_durably(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let path = dir.join(name);
    let partial = dir.join(format!("{name}.partial"));
    let mut f = std::fs::File::create(&partial).map_err(|e| io("create", &partial, e))?;
    f.write_all(bytes).map_err(|e| io("write", &partial, e))?;
    f.sync_all().map_err(|e| io("sync", &partial, e))?;
    drop(f);
    std::fs::rename(&partial, &path).map_err(|e| io("rename", &partial, e))?;
    Ok(())
}

/// Writes a new archive of `rows` (every row of one conversation, as
/// `store::retention::conversation_rows` reads them) under `root`: each file
/// written, fsynced and renamed, then the manifest the same way, then the
/// directories fsynced. Returns its directory and manifest.
pub fn write(
    root: &Path,
    conv: &ConversationAge,
    rows: &[crate::store::retention::TableRows],
    fingerprint: &str,
) -> Result<(PathBuf, Manifest)> {
    let now = chrono::Utc::now();
    let base = conversation_dir(root, conv);
    let mut dir = base.join(now.format("%Y%m%dT%H%M%S%.6fZ").to_string());
    let mut n = 0;
    while dir.exists() {
        n += 1;
        dir = base.join(format!("{}-{n}", now.format("%Y%m%dT%H%M%S%.6fZ")));
    }
    std::fs::create_dir_all(&dir).map_err(|e| io("create", &dir, e))?;
    // Messages by the month they were created in; parts with their message.
    let mut month_of: std::collections::HashMap<i64, String> = Default::default();
    let mut files: BTreeMap<String, (Vec<u8>, i64)> = BTreeMap::new();
    let mut counts = BTreeMap::new();
    for (table, list) in rows {
        counts.insert(table.clone(), list.len() as i64);
        for row in list {
            let file = match table.as_str() {
                "messages" => {
                    let month: String = row
                        .get("created_at")
                        .and_then(Value::as_str)
                        .map(|t| t.chars().take(7).collect())
                        .filter(|m: &String| m.len() == 7)
                        .unwrap_or_else(|| "undated".into());
                    if let Some(id) = row.get("message_id").and_then(Value::as_i64) {
                        month_of.insert(id, month.clone());
                    }
                    format!("{month}.jsonl.zst")
                }
                "message_parts" => {
                    let month = row
                        .get("message_id")
                        .and_then(Value::as_i64)
                        .and_then(|id| month_of.get(&id).cloned())
                        .unwrap_or_else(|| "undated".into());
                    format!("{month}.jsonl.zst")
                }
                _ => "conversation.jsonl.zst".into(),
            };
            let line = serde_json::to_vec(&serde_json::json!({ "table": table, "row": row }))?;
            let e = files.entry(file).or_default();
            e.0.extend_from_slice(&line);
            e.0.push(b'\n');
            e.1 += 1;
        }
    }
    let mut listed = Vec::with_capacity(files.len());
    for (name, (jsonl, count)) in files {
        let packed = zstd::bulk::compress(&jsonl, ZSTD_LEVEL)
            .map_err(|e| io("compress", &dir.join(&name), e))?;
        write_durably(&dir, &name, &packed)?;
        listed.push(ArchiveFile {
            sha256: hex::encode(Sha256::digest(&packed)),
            bytes: packed.len() as i64,
            rows: count,
            name,
        });
    }
    let manifest = Manifest {
        format: FORMAT.into(),
        conversation_id: conv.conversation_id,
        session_id: conv.session_id.clone(),
        session_key: conv.session_key.clone(),
        last_activity: conv.last_activity.clone(),
        archived_at: crate::timestamp::to_iso(now),
        fingerprint: fingerprint.to_owned(),
        counts,
        files: listed,
    };
    write_durably(&dir, MANIFEST, &serde_json::to_vec_pretty(&manifest)?)?;
    // The new directory entries: the archive's, its conversation's, the root's.
    sync_file_and_dir(&dir.join(MANIFEST))?;
    sync_file_and_dir(&dir)?;
    sync_file_and_dir(&base)?;
    Ok((dir, manifest))
}

/// Checks every file of an archive against its manifest (size and sha256).
pub fn verify(dir: &Path, m: &Manifest) -> Result<()> {
    for f in &m.files {
        let path = dir.join(&f.name);
        let bytes = std::fs::read(&path).map_err(|e| io("read", &path, e))?;
        if bytes.len() as i64 != f.bytes || hex::encode(Sha256::digest(&bytes)) != f.sha256 {
            return Err(LcmError::new(
                ErrorCode::Io,
                format!(
                    "archive file {} does not match its manifest (size or sha256); the archive is damaged",
                    path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// An archive directory (or its manifest's path) → the directory.
pub fn dir_of(path: &Path) -> PathBuf {
    if path.file_name().is_some_and(|n| n == MANIFEST) {
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        path.to_path_buf()
    }
}

/// Rows read back from an archive, per table.
pub type ArchivedRows = Vec<(String, Vec<Map<String, Value>>)>;

/// Reads an archive back: manifest, every file checked, rows per table in file
/// order; the row counts must match the manifest's.
pub fn read(path: &Path) -> Result<(PathBuf, Manifest, ArchivedRows)> {
    let dir = dir_of(path);
    let m = read_manifest(&dir)?;
    verify(&dir, &m)?;
    let mut by_table: BTreeMap<String, Vec<Map<String, Value>>> = BTreeMap::new();
    for f in &m.files {
        let p = dir.join(&f.name);
        let packed = std::fs::read(&p).map_err(|e| io("read", &p, e))?;
        let jsonl = zstd::stream::decode_all(&packed[..]).map_err(|e| io("decompress", &p, e))?;
        for line in jsonl.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let v: Value = serde_json::from_slice(line).map_err(|e| {
                LcmError::invalid(format!("{}: a line is not JSON: {e}", p.display()))
            })?;
            let table = v
                .get("table")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let Some(Value::Object(row)) = v.get("row").cloned() else {
                return Err(LcmError::invalid(format!(
                    "{}: a line has no row",
                    p.display()
                )));
            };
            by_table.entry(table).or_default().push(row);
        }
    }
    for (table, n) in &m.counts {
        let got = by_table.get(table).map_or(0, |l| l.len() as i64);
        if got != *n {
            return Err(LcmError::new(
                ErrorCode::Io,
                format!(
                    "archive {} holds {got} rows of {table}, its manifest says {n}",
                    dir.display()
                ),
            ));
        }
    }
    // Messages in id order across months (the files are per month).
    if let Some(list) = by_table.get_mut("messages") {
        list.sort_by_key(|r| r.get("message_id").and_then(Value::as_i64).unwrap_or(0));
    }
    Ok((dir, m, by_table.into_iter().collect()))
}
