//! Session transcripts (OpenClaw / pi JSONL files, or the host's transcript rows):
//! the entry tree, the leaf path, and a streaming read of the messages on it.
//!
//! A file is read twice, line by line, never whole: a first pass keeps only each
//! entry's id, parent and byte offset (the tree), a second pass parses the message
//! lines the import needs. The header line (`type: "session"`) and every entry
//! that is not a `message` are skipped; when the file branches, the path from the
//! newest entry back to the root is the conversation.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::error::{ErrorCode, LcmError, Result};

/// Parameters of `bootstrap`. Keys the host passes besides these are ignored.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapParams {
    /// Runtime session id.
    pub session_id: String,
    /// Stable session key.
    #[serde(default)]
    pub session_key: Option<String>,
    /// A session JSONL file.
    #[serde(default)]
    pub session_file: Option<String>,
    /// The host's transcript rows, oldest first.
    #[serde(default)]
    pub transcript_entries: Option<Vec<Value>>,
    /// `transcriptTail`: judge from the transcript's newest entry alone
    /// ([`tail_of`]: the rows given, which may be only the newest ones, or the
    /// session file's last line, read from its end). The call answers
    /// [`REASON_UP_TO_DATE`] when it proves the conversation up to date
    /// ([`newest_entry_id`]), else [`REASON_NEEDS_WHOLE`] and imports nothing: a
    /// host bootstrapping before every turn asks this first and passes the whole
    /// transcript only when asked, instead of all of it every turn.
    #[serde(default)]
    pub transcript_tail: bool,
    /// `maxImportTokens` (the plugin's `bootstrapMaxTokens`): a first import (a new
    /// conversation, a fork's or sub-agent's first bootstrap, a rollover) takes
    /// only the newest messages within this many tokens, at least the newest one,
    /// none when that one alone exceeds it. Default: the whole transcript.
    #[serde(default)]
    pub max_import_tokens: Option<i64>,
    /// `skipHeartbeatTurns` (the plugin's `pruneHeartbeatOk`): turns that only
    /// acknowledged a heartbeat (see [`crate::lifecycle::is_heartbeat_ok_turn`])
    /// are not imported.
    #[serde(default)]
    pub skip_heartbeat_turns: bool,
}

/// Result of `bootstrap`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapResult {
    /// True when messages were imported.
    pub bootstrapped: bool,
    /// Messages imported by this call.
    pub imported_messages: usize,
    /// Why: `imported session messages`, `reconciled missing session messages`,
    /// `conversation already up to date`, `no messages in session file`,
    /// `no common message with the stored conversation`, or (`transcriptTail`)
    /// `the transcript tail is not stored: pass the whole transcript`.
    pub reason: &'static str,
    /// The conversation, when there is one.
    pub conversation_id: Option<i64>,
    /// Messages on the transcript's leaf path.
    pub transcript_messages: usize,
    /// Entries that are not messages or not on the leaf path (and unreadable lines).
    pub skipped_entries: usize,
    /// A `transcriptTail` call whose rows did not prove the conversation up to
    /// date ([`REASON_NEEDS_WHOLE`]): call again with the whole transcript.
    pub needs_whole_transcript: bool,
    /// The conversation this call archived (`session-rollover`): a new session id
    /// under the key whose transcript does not continue it.
    pub archived_conversation_id: Option<i64>,
}

/// A new conversation received the whole transcript.
pub const REASON_IMPORTED: &str = "imported session messages";
/// An existing conversation received the transcript's missing tail.
pub const REASON_RECONCILED: &str = "reconciled missing session messages";
/// Nothing was missing.
pub const REASON_UP_TO_DATE: &str = "conversation already up to date";
/// The transcript has no message on its leaf path.
pub const REASON_EMPTY: &str = "no messages in session file";
/// The stored conversation shares no message with the transcript (nothing imported,
/// so nothing can be duplicated).
pub const REASON_NO_ANCHOR: &str = "no common message with the stored conversation";
/// A new session id under the key whose transcript does not continue the stored
/// conversation: that one was archived and the transcript starts a fresh one.
pub const REASON_ROLLOVER: &str =
    "new session under the key: the earlier conversation was archived";
/// A fresh conversation after a reset of this same session id: the transcript is
/// the ended conversation's (archived), so nothing of it is imported.
pub const REASON_AFTER_RESET: &str =
    "the session was reset: its earlier transcript belongs to the archived conversation";
/// A first import capped by `maxImportTokens` whose newest message alone exceeds it.
pub const REASON_OVER_CAP: &str =
    "newest transcript message exceeds maxImportTokens: nothing imported";
/// A `transcriptTail` call whose rows do not prove the conversation up to date:
/// nothing imported; call again with the whole transcript.
pub const REASON_NEEDS_WHOLE: &str = "the transcript tail is not stored: pass the whole transcript";

/// A message entry on the leaf path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathEntry {
    /// The entry id, when the entry has one.
    pub entry_id: Option<String>,
    /// Where to read it: a byte offset (file) or a row index.
    pub locator: u64,
}

/// The leaf path of a transcript.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Message entries from the root to the leaf.
    pub path: Vec<PathEntry>,
    /// Entries not imported (other types, other branches, unreadable lines).
    pub skipped: usize,
}

#[derive(Debug)]
enum Parent {
    Root,
    Id(String),
    Previous,
}

#[derive(Debug)]
struct Node {
    id: Option<String>,
    parent: Parent,
    locator: u64,
    is_message: bool,
}

/// What the first pass reads of an entry (the message itself is skipped unparsed).
#[derive(Deserialize)]
struct Head {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(rename = "entryId", default)]
    entry_id: Option<String>,
    #[serde(rename = "parentId", default, deserialize_with = "present")]
    parent_id: Option<Option<String>>,
    #[serde(default)]
    message: Option<serde::de::IgnoredAny>,
}

fn present<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Option<String>>, D::Error> {
    Ok(Some(Option::<String>::deserialize(d)?))
}

/// What the second pass reads of a message entry.
#[derive(Deserialize)]
struct Body {
    message: Value,
}

impl Head {
    /// `None` for the session header, which is not part of the tree.
    fn node(self, locator: u64) -> Option<Node> {
        if self.kind.as_deref() == Some("session") {
            return None;
        }
        let is_message =
            matches!(self.kind.as_deref(), None | Some("message")) && self.message.is_some();
        let parent = match self.parent_id {
            None => Parent::Previous,
            Some(None) => Parent::Root,
            Some(Some(p)) => Parent::Id(p),
        };
        Some(Node {
            id: self.id.or(self.entry_id),
            parent,
            locator,
            is_message,
        })
    }
}

/// The message entries from the newest entry back to the root, in order. An entry
/// without a `parentId` key, or whose parent is not in the transcript, follows the
/// entry before it.
fn leaf_path(nodes: &[Node]) -> Scan {
    let by_id: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| n.id.as_deref().map(|id| (id, i)))
        .collect();
    let mut on_path = Vec::new();
    let mut seen = vec![false; nodes.len()];
    let mut at = nodes.len().checked_sub(1);
    while let Some(i) = at {
        if std::mem::replace(&mut seen[i], true) {
            break;
        }
        on_path.push(i);
        at = match &nodes[i].parent {
            Parent::Root => None,
            // A parent that is not in the transcript (rows of a projection that
            // leaves out non-message entries): the entry before it.
            Parent::Id(p) => by_id.get(p.as_str()).copied().or(i.checked_sub(1)),
            Parent::Previous => i.checked_sub(1),
        };
    }
    on_path.reverse();
    let path: Vec<PathEntry> = on_path
        .into_iter()
        .filter(|&i| nodes[i].is_message)
        .map(|i| PathEntry {
            entry_id: nodes[i].id.clone(),
            locator: nodes[i].locator,
        })
        .collect();
    Scan {
        skipped: nodes.len() - path.len(),
        path,
    }
}

/// Where a transcript comes from.
pub enum Source {
    /// A JSONL file.
    File(PathBuf),
    /// The host's rows.
    Rows(Vec<Value>),
}

impl Source {
    /// The source named by the parameters (exactly one of `sessionFile` /
    /// `transcriptEntries`).
    pub fn from_params(p: &mut BootstrapParams) -> Result<Source> {
        match (p.session_file.take(), p.transcript_entries.take()) {
            (Some(_), Some(_)) => Err(LcmError::invalid(
                "bootstrap takes sessionFile or transcriptEntries, not both",
            )),
            (Some(f), None) if !f.trim().is_empty() => Ok(Source::File(f.into())),
            (None, Some(rows)) => Ok(Source::Rows(rows)),
            _ => Err(LcmError::invalid(
                "bootstrap needs sessionFile (a session JSONL path) or transcriptEntries",
            )),
        }
    }

    /// Size of the source for progress: bytes of a file, rows otherwise.
    pub fn size(&self) -> u64 {
        match self {
            Source::File(p) => std::fs::metadata(p).map(|m| m.len()).unwrap_or(0),
            Source::Rows(r) => r.len() as u64,
        }
    }

    /// First pass: the leaf path.
    pub fn scan(&self) -> Result<Scan> {
        let mut nodes = Vec::new();
        let mut unreadable = 0;
        match self {
            Source::File(path) => {
                for_each_line(path, &mut |offset, line| {
                    match serde_json::from_str::<Head>(line) {
                        Ok(h) => nodes.extend(h.node(offset)),
                        Err(_) => unreadable += 1,
                    }
                    Ok(true)
                })?;
            }
            Source::Rows(rows) => {
                for (i, row) in rows.iter().enumerate() {
                    match Head::deserialize(row) {
                        Ok(h) => nodes.extend(h.node(i as u64)),
                        Err(_) => unreadable += 1,
                    }
                }
            }
        }
        let mut scan = leaf_path(&nodes);
        scan.skipped += unreadable;
        Ok(scan)
    }

    /// Second pass: calls `f` with the message of each wanted entry, in order
    /// (`wanted` sorted by locator, as the leaf path is).
    pub fn read_messages(
        &self,
        wanted: &[&PathEntry],
        f: &mut dyn FnMut(&PathEntry, Value) -> Result<()>,
    ) -> Result<()> {
        let mut next = wanted.iter().peekable();
        match self {
            Source::File(path) => for_each_line(path, &mut |offset, line| {
                let Some(entry) = next.peek() else {
                    return Ok(false);
                };
                if entry.locator == offset {
                    let body: Body = serde_json::from_str(line).map_err(|e| {
                        LcmError::invalid(format!("session file line at byte {offset}: {e}"))
                    })?;
                    f(entry, body.message)?;
                    next.next();
                }
                Ok(true)
            }),
            Source::Rows(rows) => {
                for entry in next {
                    let message = rows
                        .get(entry.locator as usize)
                        .and_then(|r| r.get("message"))
                        .cloned()
                        .unwrap_or(Value::Null);
                    f(entry, message)?;
                }
                Ok(())
            }
        }
    }
}

/// Reads a file line by line (one reused buffer), with each line's byte offset;
/// `f` returns false to stop. Blank lines are skipped.
fn for_each_line(path: &PathBuf, f: &mut dyn FnMut(u64, &str) -> Result<bool>) -> Result<()> {
    let file = File::open(path).map_err(|e| {
        LcmError::new(
            ErrorCode::Io,
            format!("cannot open session file {}: {e}", path.display()),
        )
    })?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut buf = Vec::new();
    let mut offset = 0u64;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(|e| {
            LcmError::new(
                ErrorCode::Io,
                format!("cannot read session file {}: {e}", path.display()),
            )
        })?;
        if n == 0 {
            return Ok(());
        }
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim();
        if !line.is_empty() && !f(offset, line)? {
            return Ok(());
        }
        offset += n as u64;
    }
}

/// The last non-blank line of a file (trimmed, invalid UTF-8 replaced as
/// [`for_each_line`] does), read backwards from its end; `None` for a blank file.
fn last_line(path: &PathBuf) -> Result<Option<String>> {
    use std::io::{Read, Seek, SeekFrom};
    let io = |what: &str, e: std::io::Error| {
        LcmError::new(
            ErrorCode::Io,
            format!("cannot {what} session file {}: {e}", path.display()),
        )
    };
    let mut file = File::open(path).map_err(|e| io("open", e))?;
    let mut pos = file.metadata().map_err(|e| io("read", e))?.len();
    // Bytes from `pos` to the end of the file; each read at least doubles them,
    // so a long last line costs one pass.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        if let Some(end) = tail.iter().rposition(|b| !b.is_ascii_whitespace()) {
            let start = tail[..end].iter().rposition(|&b| b == b'\n');
            if start.is_some() || pos == 0 {
                let line = &tail[start.map_or(0, |i| i + 1)..=end];
                return Ok(Some(String::from_utf8_lossy(line).trim().to_owned()));
            }
        } else if pos == 0 {
            return Ok(None);
        }
        let step = pos.min((tail.len() as u64).max(1 << 16));
        pos -= step;
        let mut chunk = vec![0u8; step as usize];
        file.seek(SeekFrom::Start(pos)).map_err(|e| io("read", e))?;
        file.read_exact(&mut chunk).map_err(|e| io("read", e))?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
    }
}

/// The newest rows of a transcript, for a `transcriptTail` call: the rows given,
/// or a session file's last line (read from its end: the file is not scanned).
pub fn tail_of(source: Source) -> Result<Source> {
    match source {
        Source::Rows(rows) => Ok(Source::Rows(rows)),
        Source::File(path) => {
            let row = last_line(&path)?.and_then(|l| serde_json::from_str::<Value>(&l).ok());
            Ok(Source::Rows(row.into_iter().collect()))
        }
    }
}

/// What a transcript holds, for a dry run: messages on the leaf path by runtime
/// role, their tokens (as ingest counts them), and what is skipped.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Survey {
    /// Messages on the leaf path.
    pub messages: usize,
    /// Messages per runtime role.
    pub roles: std::collections::BTreeMap<String, usize>,
    /// Their estimated tokens.
    pub tokens: i64,
    /// Entries not imported.
    pub skipped_entries: usize,
    /// Messages ingest would refuse (no role, not an object).
    pub invalid_messages: usize,
}

impl Source {
    /// Reads the leaf path's messages once and counts them (streaming).
    pub fn survey(&self) -> Result<Survey> {
        let scan = self.scan()?;
        let all: Vec<&PathEntry> = scan.path.iter().collect();
        let mut s = Survey {
            skipped_entries: scan.skipped,
            ..Survey::default()
        };
        self.read_messages(&all, &mut |_, message| {
            s.messages += 1;
            let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
            *s.roles.entry(role.to_owned()).or_default() += 1;
            match crate::message::ingest::map_message(&message, None) {
                Ok(m) => s.tokens += m.token_count,
                Err(_) => s.invalid_messages += 1,
            }
            Ok(())
        })?;
        Ok(s)
    }
}

/// The session id in a JSONL file's header line (`{"type":"session","id":…}`).
pub fn header_session_id(path: &std::path::Path) -> Result<Option<String>> {
    let mut id = None;
    for_each_line(&path.to_path_buf(), &mut |_, line| {
        let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        if v.get("type").and_then(Value::as_str) == Some("session") {
            id = v.get("id").and_then(Value::as_str).map(str::to_owned);
        }
        Ok(false)
    })?;
    Ok(id)
}

/// The content key of a message for reconciling rows without entry ids: sha256 of
/// its DB role and plain text (so the path's keys stay small whatever the file size).
pub fn content_key(role: &str, text: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(role.as_bytes());
    h.update([0u8]);
    h.update(text.as_bytes());
    h.finalize().into()
}

/// Which path entries a conversation lacks, given what it stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Import from this path index on.
    From(usize),
    /// No common message: import nothing.
    NoAnchor,
}

/// The reconcile rule: after the newest path entry whose id is stored, skip the
/// entries that match, in order, the stored rows written after it without ids
/// (`(role, text)`); without any stored id on the path, import after the newest
/// path entry whose `(role, text)` equals the newest stored row. `keys_from(i)`
/// gives the keys of the path's entries from index `i` on; it is asked only for
/// the entries the rule compares (none when the leaf itself is stored, the
/// common case of a session bootstrapped before every turn).
pub fn plan_missing<K: PartialEq>(
    path_ids: &[Option<&str>],
    stored_ids: &std::collections::HashSet<String>,
    keys_from: &mut dyn FnMut(usize) -> Result<Vec<K>>,
    rows_after_anchor: &dyn Fn(&str) -> Vec<K>,
    newest_row: Option<&K>,
) -> Result<Plan> {
    let anchor = path_ids
        .iter()
        .rposition(|id| id.is_some_and(|id| stored_ids.contains(id)));
    if let Some(i) = anchor {
        if i + 1 == path_ids.len() {
            return Ok(Plan::From(path_ids.len()));
        }
        let after = rows_after_anchor(path_ids[i].unwrap_or_default());
        let matched = keys_from(i + 1)?
            .iter()
            .zip(after.iter())
            .take_while(|(key, row)| key == row)
            .count();
        return Ok(Plan::From(i + 1 + matched));
    }
    let Some(row) = newest_row else {
        return Ok(Plan::From(0));
    };
    Ok(match keys_from(0)?.iter().rposition(|key| key == row) {
        Some(j) => Plan::From(j + 1),
        None => Plan::NoAnchor,
    })
}

/// Whether the transcript's newest entry proves a conversation up to date without
/// the rest of it: the last row or line is a message entry whose id the
/// conversation stores (the leaf path ends there, so the reconcile rule anchors
/// on it and finds nothing missing). `None` when it has no id or is no message.
pub fn newest_entry_id(source: &Source) -> Result<Option<String>> {
    let Source::Rows(rows) = source else {
        return Ok(None);
    };
    let Some(row) = rows.last() else {
        return Ok(None);
    };
    Ok(Head::deserialize(row)
        .ok()
        .and_then(|h| h.node(0))
        .filter(|n| n.is_message)
        .and_then(|n| n.id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rows(v: Vec<Value>) -> Source {
        Source::Rows(v)
    }

    #[test]
    fn the_leaf_path_follows_parents_and_skips_other_entries() {
        let m = |id: &str, parent: Option<&str>| json!({"type":"message","id":id,"parentId":parent,"message":{"role":"user","content":id}});
        let s = rows(vec![
            json!({"type":"session","id":"sess","cwd":"/"}),
            m("a", None),
            json!({"type":"model_change","id":"mc","parentId":"a","provider":"p","modelId":"m"}),
            m("b", Some("mc")),
            m("c1", Some("b")),
            m("c2", Some("b")),
            m("d", Some("c2")),
        ])
        .scan()
        .unwrap();
        let ids: Vec<_> = s.path.iter().map(|p| p.entry_id.clone().unwrap()).collect();
        assert_eq!(ids, ["a", "b", "c2", "d"]);
        assert_eq!(s.skipped, 2);
    }

    #[test]
    fn a_parent_left_out_of_the_rows_falls_back_to_the_previous_row() {
        let s = rows(vec![
            json!({"id":"a","parentId":null,"message":{"role":"user","content":"1"}}),
            json!({"id":"c","parentId":"b-not-here","message":{"role":"assistant","content":"2"}}),
        ])
        .scan()
        .unwrap();
        assert_eq!(s.path.len(), 2);
    }

    #[test]
    fn rows_without_parent_ids_are_linear() {
        let s = rows(vec![
            json!({"entryId":"x","message":{"role":"user","content":"1"}}),
            json!({"entryId":"y","message":{"role":"assistant","content":"2"}}),
        ])
        .scan()
        .unwrap();
        assert_eq!(s.path.len(), 2);
    }

    #[test]
    fn the_plan_anchors_on_ids_then_content() {
        let ids_of = |v: &[Option<&'static str>]| v.to_vec();
        let keys: Vec<(String, String)> = ["a", "b", "c", "d"]
            .iter()
            .map(|t| ("user".to_owned(), (*t).to_owned()))
            .collect();
        let asked = std::cell::RefCell::new(Vec::new());
        let mut keys_from = |i: usize| {
            asked.borrow_mut().push(i);
            Ok(keys[i..].to_vec())
        };
        let path = ids_of(&[Some("1"), Some("2"), Some("3"), Some("4")]);
        let ids: std::collections::HashSet<String> = ["1".to_owned(), "2".to_owned()].into();
        let after = |_: &str| vec![("user".to_owned(), "c".to_owned())];
        assert_eq!(
            plan_missing(&path, &ids, &mut keys_from, &after, None).unwrap(),
            Plan::From(3)
        );
        assert_eq!(
            *asked.borrow(),
            [2],
            "only the entries after the anchor are read"
        );
        let none = std::collections::HashSet::new();
        let row = ("user".to_owned(), "b".to_owned());
        assert_eq!(
            plan_missing(&path, &none, &mut keys_from, &|_| vec![], Some(&row)).unwrap(),
            Plan::From(2)
        );
        let other = ("user".to_owned(), "zzz".to_owned());
        assert_eq!(
            plan_missing(&path, &none, &mut keys_from, &|_| vec![], Some(&other)).unwrap(),
            Plan::NoAnchor
        );
        assert_eq!(
            plan_missing(&path, &none, &mut keys_from, &|_| vec![], None).unwrap(),
            Plan::From(0)
        );
        // The leaf stored: up to date, and no message is read at all.
        asked.borrow_mut().clear();
        let all: std::collections::HashSet<String> = ["4".to_owned()].into();
        assert_eq!(
            plan_missing(
                &path,
                &all,
                &mut keys_from,
                &|_| panic!("no rows read"),
                None
            )
            .unwrap(),
            Plan::From(4)
        );
        assert!(asked.borrow().is_empty());
    }

    #[test]
    fn a_files_tail_is_its_last_non_blank_line_however_long() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let tail = |p: &PathBuf| match tail_of(Source::File(p.clone())).unwrap() {
            Source::Rows(r) => r,
            Source::File(_) => unreachable!(),
        };
        let m = |id: &str, text: &str| {
            json!({"type":"message","id":id,"message":{"role":"user","content":text}}).to_string()
        };
        let long = "한국어\u{a0}🎉 ".repeat(40_000);
        let p = file(
            "a.jsonl",
            &format!("{}\n{}\r\n\n  \n", m("a", "x"), m("b", &long)),
        );
        let rows = tail(&p);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0]["id"], "b");
        assert_eq!(rows[0]["message"]["content"], long.as_str());
        assert_eq!(tail(&file("one.jsonl", &m("only", "x")))[0]["id"], "only");
        assert!(tail(&file("blank.jsonl", "\n \n")).is_empty());
        assert!(tail(&file("empty.jsonl", "")).is_empty());
        // A torn last line (a crash mid-write) proves nothing.
        assert!(tail(&file(
            "torn.jsonl",
            &format!("{}\n{{\"type\":\"mess", m("a", "x"))
        ))
        .is_empty());
        let missing = tail_of(Source::File(dir.path().join("missing.jsonl")));
        assert_eq!(missing.err().map(|e| e.code), Some(ErrorCode::Io));
    }

    #[test]
    fn the_newest_entry_counts_only_when_it_is_a_message_with_an_id() {
        let newest = |v: Vec<Value>| newest_entry_id(&rows(v)).unwrap();
        let m =
            |id: &str| json!({"type":"message","id":id,"message":{"role":"user","content":"x"}});
        assert_eq!(newest(vec![m("a"), m("b")]), Some("b".into()));
        assert_eq!(
            newest(vec![
                m("a"),
                json!({"entryId":"c","parentId":"a","message":{"role":"assistant","content":"y"}})
            ]),
            Some("c".into())
        );
        assert_eq!(
            newest(vec![m("a"), json!({"type":"model_change","id":"mc"})]),
            None
        );
        assert_eq!(
            newest(vec![json!({"message":{"role":"user","content":"x"}})]),
            None
        );
        assert_eq!(newest(vec![]), None);
        assert_eq!(
            newest_entry_id(&Source::File("/nonexistent".into())).unwrap(),
            None
        );
    }
}
