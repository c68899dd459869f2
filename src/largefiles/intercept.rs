//! Ingest-time interception (runs on the writer thread, before the messages are
//! mapped): `<file>` blocks of user and tool-result messages whose content reaches
//! `largeFileTokenThreshold`, and tool results that still reach it as a whole, are
//! written to `largeFilesDir/<conversation_id>/<file_id>.<ext>` and replaced in the
//! message by a compact reference.
//!
//! Order of effects: the file is written atomically, then its `large_files` row is
//! written (committed on its own by [`intercept_batch`], or with the messages that
//! reference it when ingest runs [`intercept_in`] inside its group transaction). A failure after
//! the file write can leave an orphan file or row, never a reference without its
//! row and file. File ids are derived from the conversation and the exact payload,
//! so a replayed message reuses its file instead of writing another.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::blocks::{file_reference, parse_file_blocks, storage_extension, tool_output_reference};
use super::explore;
use super::storage;
use crate::error::Result;
use crate::store::conversations::{self, SessionRef};
use crate::store::largefiles::{self as file_rows, LargeFileRecord, Source};
use crate::store::tx::write_tx;
use crate::{timestamp, tokens};

/// Interception settings (from the engine options).
#[derive(Debug, Clone)]
pub struct Settings {
    /// `largeFileTokenThreshold`: payloads with at least this many estimated tokens
    /// are externalized.
    pub threshold: i64,
    /// `largeFilesDir`, absolute.
    pub dir: PathBuf,
}

impl Settings {
    /// Settings from the engine options.
    pub fn from_options(o: &crate::config::EngineOptions) -> Settings {
        let dir = o.resolved_large_files_dir();
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        Settings {
            threshold: o.large_file_token_threshold.max(1),
            dir,
        }
    }
}

fn is_tool_role(role: &str) -> bool {
    role == "toolResult" || role == "tool"
}

fn role_of(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("")
}

/// The text slots of a message that interception may rewrite: a string content, or
/// the `text` of each `{type:"text"}` block.
fn text_slots(m: &mut Value) -> Vec<&mut String> {
    match m.get_mut("content") {
        Some(Value::String(s)) => vec![s],
        Some(Value::Array(blocks)) => blocks
            .iter_mut()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| match b.get_mut("text") {
                Some(Value::String(s)) => Some(s),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn may_qualify(m: &Value, threshold: i64) -> bool {
    let role = role_of(m);
    if role != "user" && !is_tool_role(role) {
        return false;
    }
    // A text of N estimated tokens has at least 2N bytes (no code point weighs more
    // than half a token per byte), so shorter texts can be skipped unread.
    let min_bytes = (threshold as usize).saturating_mul(2);
    let long = |s: &str| s.len() >= min_bytes;
    match m.get("content") {
        Some(Value::String(s)) => long(s),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .any(long),
        _ => false,
    }
}

/// Whether any message of a batch may hold a payload to externalize (a cheap size
/// check; nothing is parsed).
pub fn may_need(messages: &[Value], settings: &Settings) -> bool {
    messages.iter().any(|m| may_qualify(m, settings.threshold))
}

/// Externalizes the large payloads of a batch in place. Returns how many payloads
/// were replaced. Does nothing (and opens no transaction) when no message can
/// qualify.
pub fn intercept_batch(
    conn: &mut Connection,
    session: &SessionRef,
    messages: &mut [Value],
    settings: &Settings,
) -> Result<usize> {
    if !messages.iter().any(|m| may_qualify(m, settings.threshold)) {
        return Ok(0);
    }
    write_tx(conn, |tx| {
        let conversation_id = conversations::find_or_create(tx, session)?;
        intercept_in(tx, conversation_id, messages, settings)
    })
}

/// [`intercept_batch`] inside the caller's transaction, for a known conversation
/// (a streaming import, one message at a time).
pub fn intercept_in(
    conn: &Connection,
    conversation_id: i64,
    messages: &mut [Value],
    settings: &Settings,
) -> Result<usize> {
    let ctx = Ctx {
        conn,
        conversation_id,
        settings,
    };
    let mut replaced = 0;
    for m in messages.iter_mut() {
        if may_qualify(m, settings.threshold) {
            replaced += ctx.message(m)?;
        }
    }
    Ok(replaced)
}

struct Ctx<'a> {
    conn: &'a Connection,
    conversation_id: i64,
    settings: &'a Settings,
}

/// A payload to externalize.
struct Payload<'a> {
    open: &'a str,
    body: &'a str,
    close: &'a str,
    name: Option<String>,
    mime: Option<String>,
    tool: Option<String>,
}

impl Ctx<'_> {
    fn message(&self, m: &mut Value) -> Result<usize> {
        let tool = is_tool_role(role_of(m));
        let tool_name = ["toolName", "tool_name", "name"]
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str))
            .map(str::to_owned);
        let mut replaced = 0;
        for slot in text_slots(m) {
            if let Some((text, n)) = self.rewrite(slot, tool, tool_name.as_deref())? {
                *slot = text;
                replaced += n;
            }
        }
        Ok(replaced)
    }

    /// The rewritten text and the number of payloads replaced, or `None` when the
    /// text stays as it is.
    fn rewrite(
        &self,
        text: &str,
        tool: bool,
        tool_name: Option<&str>,
    ) -> Result<Option<(String, usize)>> {
        let threshold = self.settings.threshold;
        if text.len() < (threshold as usize).saturating_mul(2) {
            return Ok(None);
        }
        let big: Vec<_> = parse_file_blocks(text)
            .into_iter()
            .filter(|b| tokens::estimate(b.body) >= threshold)
            .collect();
        let total = tokens::estimate(text);
        let left = total - big.iter().map(|b| tokens::estimate(b.body)).sum::<i64>();
        if tool && left >= threshold {
            let p = Payload {
                open: "",
                body: text,
                close: "",
                name: None,
                mime: Some("text/plain".into()),
                tool: Some(tool_name.unwrap_or("unknown").to_owned()),
            };
            return Ok(Some((self.externalize(&p)?, 1)));
        }
        if big.is_empty() {
            return Ok(None);
        }
        let mut out = String::with_capacity(text.len() / 8);
        let mut at = 0;
        for b in &big {
            out.push_str(crate::text::slice(text, at, b.start));
            let p = Payload {
                open: b.open,
                body: b.body,
                close: b.close,
                name: b.name.clone(),
                mime: b.mime.clone(),
                tool: None,
            };
            out.push_str(&self.externalize(&p)?);
            at = b.end;
        }
        out.push_str(crate::text::tail(text, at));
        Ok(Some((out, big.len())))
    }

    /// Writes the payload (unless its file already exists), records its row and
    /// returns the reference text that replaces it.
    fn externalize(&self, p: &Payload) -> Result<String> {
        let file_id = payload_id(self.conversation_id, p);
        if let Some(existing) = file_rows::get(self.conn, &file_id)? {
            if let Some(src) = existing
                .source
                .filter(|_| Path::new(&existing.storage_uri).exists())
            {
                return Ok(src.reference);
            }
        }
        let ext = storage_extension(p.name.as_deref(), p.mime.as_deref());
        let path = storage::file_path(&self.settings.dir, self.conversation_id, &file_id, &ext)?;
        storage::write_atomic(&path, p.body.as_bytes())?;
        let summary = explore::summarize(p.body, p.name.as_deref(), p.mime.as_deref());
        let bytes = p.body.len() as u64;
        let reference = match &p.tool {
            Some(t) => tool_output_reference(&file_id, Some(t), bytes, &summary),
            None => file_reference(
                &file_id,
                p.name.as_deref(),
                p.mime.as_deref(),
                bytes,
                &summary,
            ),
        };
        let rec = LargeFileRecord {
            file_id,
            conversation_id: self.conversation_id,
            file_name: p.name.clone(),
            mime_type: p.mime.clone(),
            byte_size: Some(bytes as i64),
            line_count: Some(p.body.lines().count() as i64),
            storage_uri: path.to_string_lossy().into_owned(),
            exploration_summary: Some(summary),
            created_at: timestamp::now_sqlite(),
            source: Some(Source {
                open: p.open.to_owned(),
                close: p.close.to_owned(),
                reference: reference.clone(),
            }),
        };
        file_rows::replace(self.conn, &rec)?;
        Ok(reference)
    }
}

/// `file_` + 16 hex digits of sha256 over the conversation and the exact payload.
fn payload_id(conversation_id: i64, p: &Payload) -> String {
    let mut h = Sha256::new();
    h.update(b"lcm-large-file\0");
    h.update(conversation_id.to_le_bytes());
    for part in [p.open, p.close, p.tool.as_deref().unwrap_or(""), p.body] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    format!("file_{}", crate::text::head(&hex::encode(h.finalize()), 16))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn setup() -> (Connection, tempfile::TempDir, Settings) {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::store::migrate::migrate(&mut conn).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            threshold: 100,
            dir: dir.path().to_path_buf(),
        };
        (conn, dir, settings)
    }

    fn session() -> SessionRef {
        SessionRef {
            session_id: "s".into(),
            session_key: None,
        }
    }

    #[test]
    fn large_blocks_are_replaced_and_small_ones_kept() {
        let (mut conn, dir, settings) = setup();
        let body = "x = 1\n".repeat(200);
        let text =
            format!("see <file name=\"../../a.py\">{body}</file> and <file name=\"b\">tiny</file>");
        let mut msgs = vec![
            json!({"role":"user","content": text}),
            json!({"role":"assistant","content": text}),
        ];
        let n = intercept_batch(&mut conn, &session(), &mut msgs, &settings).unwrap();
        assert_eq!(n, 1);
        let out = msgs[0]["content"].as_str().unwrap();
        assert!(out.starts_with("see [LCM File: file_"), "{out}");
        assert!(out.contains("| ../../a.py | unknown | 1,200 bytes]\n\nExploration Summary:\n"));
        assert!(out.ends_with(" and <file name=\"b\">tiny</file>"));
        assert_eq!(msgs[1]["content"].as_str().unwrap(), text);
        let rec: LargeFileRecord = file_rows::restorable_in(&conn, 1).unwrap().remove(0);
        let p = Path::new(&rec.storage_uri);
        assert!(p.starts_with(dir.path().join("1")));
        assert_eq!(p.extension().unwrap(), "py");
        assert_eq!(std::fs::read_to_string(p).unwrap(), body);
        // A replay reuses the same id and row.
        let mut again = vec![json!({"role":"user","content": text})];
        intercept_batch(&mut conn, &session(), &mut again, &settings).unwrap();
        assert_eq!(again[0], msgs[0]);
        assert_eq!(file_rows::count_in(&conn, 1).unwrap(), 1);
    }

    #[test]
    fn oversized_tool_results_become_tool_output_references() {
        let (mut conn, _dir, settings) = setup();
        let text = "line of output\n".repeat(100);
        let mut msgs = vec![
            json!({"role":"toolResult","toolName":"exec","toolCallId":"c1","content":[{"type":"text","text": text}]}),
        ];
        assert_eq!(
            intercept_batch(&mut conn, &session(), &mut msgs, &settings).unwrap(),
            1
        );
        let out = msgs[0]["content"][0]["text"].as_str().unwrap();
        assert!(out.starts_with("[LCM Tool Output: file_"), "{out}");
        assert!(out.contains("| tool=exec | 1,500 bytes]"));
        let mut small = vec![json!({"role":"toolResult","content":"ok"})];
        assert_eq!(
            intercept_batch(&mut conn, &session(), &mut small, &settings).unwrap(),
            0
        );
    }
}
