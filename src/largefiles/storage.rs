//! Where large files live and how they are written and read: paths built only from
//! the conversation id, the generated file id and a sanitized extension; atomic
//! writes (temp file + rename); bounded reads. Their `large_files` rows live in
//! [`crate::store::largefiles`] (re-exported here).

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use super::blocks::is_file_id;
use crate::error::{ErrorCode, LcmError, Result};
pub use crate::store::largefiles::{get, LargeFileRecord, Source};

/// `<dir>/<conversation_id>/<file_id>.<ext>`. The file id and extension are
/// validated again here, so no input can make the path leave `dir`.
pub fn file_path(dir: &Path, conversation_id: i64, file_id: &str, ext: &str) -> Result<PathBuf> {
    let ext_ok = (1..=10).contains(&ext.len()) && ext.bytes().all(|b| b.is_ascii_alphanumeric());
    if !is_file_id(file_id) || !ext_ok || conversation_id < 0 {
        return Err(LcmError::internal(format!(
            "refusing to build a large-file path from {conversation_id}/{file_id}.{ext}"
        )));
    }
    Ok(dir
        .join(conversation_id.to_string())
        .join(format!("{file_id}.{ext}")))
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> LcmError {
    LcmError::new(
        ErrorCode::Io,
        format!("cannot {what} {}: {e}", path.display()),
    )
}

/// Writes `bytes` to `path` atomically: a temp file in the same directory, flushed
/// and synced, then renamed over the target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| LcmError::internal("large-file path has no parent"))?;
    fs::create_dir_all(dir).map_err(|e| io_error("create directory", dir, e))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let written = (|| -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io_error("write large file", path, e));
    }
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Where a row's file was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// At its stored path, inside `largeFilesDir`.
    Stored(PathBuf),
    /// Not at its stored path (which points elsewhere: a moved or copied database)
    /// but under `largeFilesDir` by its id.
    Moved(PathBuf),
}

impl Location {
    /// The canonical path of the file.
    pub fn path(&self) -> &Path {
        match self {
            Location::Stored(p) | Location::Moved(p) => p,
        }
    }
}

/// Where a row's file is now, checked to resolve (symlinks included) inside
/// `root`: the stored path when it lies inside `root`; otherwise the same file
/// found by its id under `root` (`<root>/<conversation_id>/<file_id>.<ext>`), which
/// is where it is after the database and its `lcm-files` were copied or moved
/// together. Nothing outside `root` is ever read. `LCM_NOT_FOUND` when the file is
/// in neither place.
pub fn locate(rec: &LargeFileRecord, root: &Path) -> Result<Location> {
    let root = match fs::canonicalize(root) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => root.to_path_buf(),
        Err(e) => return Err(io_error("open largeFilesDir", root, e)),
    };
    if let Some(t) = fs::canonicalize(&rec.storage_uri)
        .ok()
        .filter(|t| t.starts_with(&root))
    {
        return Ok(Location::Stored(t));
    }
    if let Some(t) = relocated(rec, &root) {
        return Ok(Location::Moved(t));
    }
    let inside = Path::new(&rec.storage_uri).starts_with(&root);
    Err(LcmError::not_found(format!(
        "large file {} is missing: it was stored at {}{}, and no {}.* is under {} (copy the database's lcm-files directory into largeFilesDir, or pass expandFiles: false for the stored form)",
        rec.file_id,
        rec.storage_uri,
        if inside { "" } else { " (outside largeFilesDir)" },
        rec.file_id,
        root.join(rec.conversation_id.to_string()).display(),
    )))
}

/// The path to read a row's file from (see [`locate`]).
pub fn checked_path(rec: &LargeFileRecord, root: &Path) -> Result<PathBuf> {
    locate(rec, root).map(|l| l.path().to_path_buf())
}

/// The row's file looked up by id under `root` (already canonical): the stored
/// extension first, else any `<file_id>.<ext>` in the conversation's directory.
fn relocated(rec: &LargeFileRecord, root: &Path) -> Option<PathBuf> {
    let inside = |p: PathBuf| fs::canonicalize(p).ok().filter(|t| t.starts_with(root));
    let stored_ext = Path::new(&rec.storage_uri)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("");
    if let Some(t) = file_path(root, rec.conversation_id, &rec.file_id, stored_ext)
        .ok()
        .and_then(inside)
    {
        return Some(t);
    }
    let dir = root.join(rec.conversation_id.max(0).to_string());
    let prefix = format!("{}.", rec.file_id);
    fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let ext = name.strip_prefix(&prefix)?;
            file_path(root, rec.conversation_id, &rec.file_id, ext).ok()
        })
        .find_map(inside)
}

/// The whole content of a stored file.
pub fn read_all(rec: &LargeFileRecord, root: &Path) -> Result<String> {
    let path = checked_path(rec, root)?;
    let bytes = fs::read(&path).map_err(|e| io_error("read large file", &path, e))?;
    String::from_utf8(bytes).map_err(|_| {
        LcmError::new(
            ErrorCode::Io,
            format!("large file {} is not valid UTF-8", path.display()),
        )
    })
}

/// A bounded slice of a stored file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// The text read.
    pub content: String,
    /// True when the file (or the requested range) goes on past what was read.
    pub truncated: bool,
    /// First line returned (1-based).
    pub start_line: usize,
    /// Last line returned (1-based; `start_line - 1` when none).
    pub end_line: usize,
}

fn utf8_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
    }
}

/// Reads at most `max_bytes`: the head of the file, or lines `start..=end` (1-based)
/// when `start` is given. Never splits a UTF-8 sequence.
pub fn read_slice(
    rec: &LargeFileRecord,
    root: &Path,
    start: Option<usize>,
    end: Option<usize>,
    max_bytes: usize,
) -> Result<Slice> {
    let path = checked_path(rec, root)?;
    let file = fs::File::open(&path).map_err(|e| io_error("open large file", &path, e))?;
    let Some(start) = start else {
        let mut buf = Vec::with_capacity(max_bytes.min(1 << 20) + 1);
        file.take(max_bytes as u64 + 1)
            .read_to_end(&mut buf)
            .map_err(|e| io_error("read large file", &path, e))?;
        let truncated = buf.len() > max_bytes;
        let content = utf8_prefix(&buf[..buf.len().min(max_bytes)]).to_owned();
        let end_line = content.split('\n').count();
        return Ok(Slice {
            content,
            truncated,
            start_line: 1,
            end_line,
        });
    };
    read_lines(BufReader::new(file), start.max(1), end, max_bytes)
        .map_err(|e| io_error("read large file", &path, e))
}

fn read_lines<R: BufRead>(
    mut r: R,
    start: usize,
    end: Option<usize>,
    max_bytes: usize,
) -> std::io::Result<Slice> {
    let mut out = String::new();
    let mut line_no = 0usize;
    let mut last = start - 1;
    let mut buf = Vec::new();
    let mut truncated = false;
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        line_no += 1;
        if line_no < start {
            continue;
        }
        if end.is_some_and(|e| line_no > e) {
            break;
        }
        let line = String::from_utf8_lossy(&buf);
        let line = line.strip_suffix('\n').unwrap_or(&line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let extra = line.len() + usize::from(!out.is_empty());
        if out.len() + extra > max_bytes {
            truncated = true;
            break;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
        last = line_no;
    }
    if end.is_some_and(|e| e > line_no) {
        truncated = true;
    }
    Ok(Slice {
        content: out,
        truncated,
        start_line: start,
        end_line: last,
    })
}

/// For a backup at `dest`: copies every large file the copy `copy` names from
/// `root` (the source's `largeFilesDir`) to `lcm-files` beside `dest` (the default
/// `largeFilesDir` of a database there), skipping files already there with the
/// same size (files never change), each written atomically and fsynced; then
/// points the copy's rows at them. A file missing at the source stays as its row
/// says (the source's doctor reports it).
pub fn copy_for_backup(copy: &rusqlite::Connection, root: &Path, dest: &Path) -> Result<()> {
    let target_root = dest
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join("lcm-files");
    for rec in crate::store::largefiles::all(copy)? {
        let Ok(from) = checked_path(&rec, root) else {
            continue;
        };
        let ext = from.extension().and_then(|e| e.to_str()).unwrap_or("txt");
        let to = file_path(&target_root, rec.conversation_id, &rec.file_id, ext)?;
        let same = fs::metadata(&to)
            .ok()
            .zip(fs::metadata(&from).ok())
            .is_some_and(|(a, b)| a.len() == b.len());
        if !same {
            let bytes = fs::read(&from).map_err(|e| io_error("read", &from, e))?;
            write_atomic(&to, &bytes)?;
        }
        crate::store::largefiles::set_storage_uri(copy, &rec.file_id, &to.to_string_lossy())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_cannot_escape() {
        let d = Path::new("/base");
        let p = file_path(d, 3, "file_0123456789abcdef", "rs").unwrap();
        assert_eq!(p, PathBuf::from("/base/3/file_0123456789abcdef.rs"));
        assert!(file_path(d, 3, "../../x", "rs").is_err());
        assert!(file_path(d, 3, "file_0123456789abcdef", "../x").is_err());
        assert!(file_path(d, -1, "file_0123456789abcdef", "rs").is_err());
    }

    #[test]
    fn atomic_write_and_slices() {
        let dir = tempfile::tempdir().unwrap();
        let p = file_path(dir.path(), 1, "file_0123456789abcdef", "txt").unwrap();
        write_atomic(&p, "l1\nl2\nl3\nl4\n".as_bytes()).unwrap();
        let leftovers: Vec<_> = fs::read_dir(p.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1);
        let rec = LargeFileRecord {
            file_id: "file_0123456789abcdef".into(),
            conversation_id: 1,
            file_name: None,
            mime_type: None,
            byte_size: None,
            line_count: None,
            storage_uri: p.to_string_lossy().into_owned(),
            exploration_summary: None,
            created_at: String::new(),
            source: None,
        };
        assert_eq!(read_all(&rec, dir.path()).unwrap(), "l1\nl2\nl3\nl4\n");
        let s = read_slice(&rec, dir.path(), Some(2), Some(3), 1000).unwrap();
        assert_eq!(
            (s.content.as_str(), s.truncated, s.end_line),
            ("l2\nl3", false, 3)
        );
        let s = read_slice(&rec, dir.path(), None, None, 4).unwrap();
        assert_eq!((s.content.as_str(), s.truncated), ("l1\nl", true));
        let s = read_slice(&rec, dir.path(), Some(4), Some(9), 1000).unwrap();
        assert_eq!((s.content.as_str(), s.truncated), ("l4", true));
        // Another largeFilesDir: the stored path is outside it, so it is not read.
        let other = tempfile::tempdir().unwrap();
        let e = read_all(&rec, other.path()).unwrap_err();
        assert_eq!(e.code, ErrorCode::NotFound);
        assert!(e.message.contains("outside largeFilesDir"), "{}", e.message);
        // The same file copied there (a moved database) is found by its id.
        let moved = file_path(other.path(), 1, "file_0123456789abcdef", "txt").unwrap();
        write_atomic(&moved, b"moved\n").unwrap();
        assert_eq!(read_all(&rec, other.path()).unwrap(), "moved\n");
        assert_eq!(
            checked_path(&rec, other.path()).unwrap(),
            fs::canonicalize(&moved).unwrap()
        );
        // Found under another extension too (a row whose stored name differs).
        fs::rename(&moved, moved.with_extension("sql")).unwrap();
        assert_eq!(read_all(&rec, other.path()).unwrap(), "moved\n");
    }
}
