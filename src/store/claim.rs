//! One copy of the engine per database file per process.
//!
//! A host can load this addon more than once into one process from different paths
//! (OpenClaw's gateway builds its plugins into several staging folders and loads
//! each). Every copy carries its own SQLite, and two SQLite libraries on one file in
//! one process corrupt it: SQLite's locks are POSIX record locks, which never
//! conflict within a process and are all dropped when any descriptor of the file
//! closes, so two copies can write the WAL at once (the gateway test met "database
//! disk image is malformed"). `native.js` hands every copy of one version the
//! addon loaded first; this check stops what that cannot cover (another version,
//! the package's `index.js` loaded from two paths): before a store opens a file it
//! claims the file for this copy, under a name every copy in the process computes
//! the same way and no other process shares — on Linux an abstract Unix socket
//! named after the process and the file's device and inode, released when the last
//! store of this copy on the file closes (or the process ends). A second copy's
//! claim fails, and its open is refused with `LCM_DB_OPEN` before SQLite touches the
//! file. Elsewhere the check is not made.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use crate::error::{ErrorCode, LcmError, Result};

/// A file's identity: device and inode.
type FileId = (u64, u64);

/// What this copy holds per file: the claiming socket and how many stores use it.
struct Held {
    #[cfg(target_os = "linux")]
    _socket: std::os::unix::net::UnixDatagram,
    stores: usize,
}

static HELD: Mutex<Option<HashMap<FileId, Held>>> = Mutex::new(None);

fn held() -> MutexGuard<'static, Option<HashMap<FileId, Held>>> {
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

/// A store's claim on its file; released on drop.
#[derive(Debug)]
pub struct Claim {
    file: Option<FileId>,
}

impl Claim {
    /// A claim that holds nothing (in-memory databases, platforms without the check).
    pub fn none() -> Claim {
        Claim { file: None }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let Some(file) = self.file.take() else {
            return;
        };
        let mut guard = held();
        let map = guard.get_or_insert_with(HashMap::new);
        if let Some(h) = map.get_mut(&file) {
            h.stores -= 1;
            if h.stores == 0 {
                map.remove(&file);
            }
        }
    }
}

/// Claims the file at `path` for this copy of the addon (an existing file; a file
/// not yet created has no identity, and `None` is returned). Fails with
/// `LCM_DB_OPEN` when another copy in this process holds it.
pub fn acquire(path: &str) -> Result<Option<Claim>> {
    let Some(file) = file_id(Path::new(path)) else {
        return Ok(None);
    };
    let mut guard = held();
    let map = guard.get_or_insert_with(HashMap::new);
    if let Some(h) = map.get_mut(&file) {
        h.stores += 1;
        return Ok(Some(Claim { file: Some(file) }));
    }
    match bind(file) {
        Ok(h) => {
            map.insert(file, h);
            Ok(Some(Claim { file: Some(file) }))
        }
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(LcmError::new(
            ErrorCode::DbOpen,
            format!(
                "cannot open database {path:?}: another copy of the lcm-native addon, loaded \
                 into this process from another path, has it open. Two copies of SQLite on one \
                 file in one process corrupt it (their locks do not see each other). Load \
                 lcm-native once per process (native.js and lcm-native/openclaw share the first \
                 copy of a version), use one version, or close the file in the other copy first."
            ),
        )),
        // The check itself is unavailable (no socket): open as without it.
        Err(_) => Ok(Some(Claim::none())),
    }
}

/// The device and inode of an existing file (a `stat`: no descriptor is opened,
/// which would drop SQLite's locks on the file when closed).
#[cfg(unix)]
fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(_path: &Path) -> Option<FileId> {
    None
}

#[cfg(target_os = "linux")]
fn bind(file: FileId) -> std::io::Result<Held> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let name = format!(
        "lcm-native/{}/{}/{}/{}",
        std::process::id(),
        process_start(),
        file.0,
        file.1
    );
    let addr = SocketAddr::from_abstract_name(name.as_bytes())?;
    let socket = UnixDatagram::bind_addr(&addr)?;
    Ok(Held {
        _socket: socket,
        stores: 1,
    })
}

#[cfg(not(target_os = "linux"))]
fn bind(_file: FileId) -> std::io::Result<Held> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// When this process started (clock ticks since boot, `/proc/self/stat` field 22),
/// so that processes of two PID namespaces sharing a network namespace never share
/// a name; 0 when unreadable.
#[cfg(target_os = "linux")]
fn process_start() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // The command name (field 2) may hold spaces: count after its ')'.
            let (_, rest) = s.rsplit_once(')')?;
            rest.split_whitespace().nth(19)?.parse().ok()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_copy_claims_a_file_as_often_as_it_likes_and_releases_it_with_the_last_store() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        assert!(acquire(path.to_str().unwrap()).unwrap().is_none());
        std::fs::write(&path, b"").unwrap();
        let p = path.to_str().unwrap();
        let a = acquire(p).unwrap().unwrap();
        let b = acquire(p).unwrap().unwrap();
        let id = file_id(&path).unwrap();
        assert_eq!(held().as_ref().unwrap()[&id].stores, 2);
        drop(a);
        assert_eq!(held().as_ref().unwrap()[&id].stores, 1);
        drop(b);
        assert!(!held().as_ref().unwrap().contains_key(&id));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_name_another_copy_holds_refuses_the_claim() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.db");
        std::fs::write(&path, b"").unwrap();
        // What another copy of the addon would hold: the same name, bound outside
        // this copy's table.
        let other = bind(file_id(&path).unwrap()).unwrap();
        let e = acquire(path.to_str().unwrap()).unwrap_err();
        assert_eq!(e.code, ErrorCode::DbOpen);
        assert!(
            e.message.contains("another copy of the lcm-native addon"),
            "{}",
            e.message
        );
        drop(other);
        let c = acquire(path.to_str().unwrap()).unwrap().unwrap();
        drop(c);
    }
}
