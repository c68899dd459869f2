//! Puts externalized payloads back inline: each stored reference text is replaced
//! by its opening tag, the file content read from disk and its closing tag, which
//! gives back the message exactly as it was ingested.

use std::collections::HashMap;
use std::path::PathBuf;

use rusqlite::Connection;
use serde_json::Value;

use super::blocks::is_file_id;
use super::storage;
use crate::error::Result;
use crate::store::largefiles::{self as file_rows, LargeFileRecord};

const MARKERS: [&str; 2] = ["[LCM File: ", "[LCM Tool Output: "];

/// Whether a text may hold a reference written at ingest.
pub fn has_reference(text: &str) -> bool {
    MARKERS.iter().any(|m| text.contains(m))
}

/// Whether a message may hold a reference in one of its text slots.
pub fn message_has_reference(m: &Value) -> bool {
    match m.get("content") {
        Some(Value::String(s)) => has_reference(s),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .any(has_reference),
        _ => false,
    }
}

/// Restores the references of one conversation's messages.
pub struct Restorer {
    files: HashMap<String, LargeFileRecord>,
    root: PathBuf,
    contents: HashMap<String, String>,
}

impl Restorer {
    /// Loads the restorable files of a conversation.
    pub fn load(conn: &Connection, conversation_id: i64, root: PathBuf) -> Result<Restorer> {
        let files = file_rows::restorable_in(conn, conversation_id)?
            .into_iter()
            .map(|r| (r.file_id.clone(), r))
            .collect();
        Ok(Restorer {
            files,
            root,
            contents: HashMap::new(),
        })
    }

    /// Re-inlines every reference of a message in place.
    pub fn restore(&mut self, m: &mut Value) -> Result<()> {
        match m.get_mut("content") {
            Some(Value::String(s)) => self.restore_text(s),
            Some(Value::Array(blocks)) => {
                for b in blocks.iter_mut() {
                    if let Some(Value::String(s)) = b.get_mut("text") {
                        self.restore_text(s)?;
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn restore_text(&mut self, text: &mut String) -> Result<()> {
        if !has_reference(text) {
            return Ok(());
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut i = 0;
        while let Some((pos, marker)) = next_marker(text, i) {
            let id_start = pos + marker.len();
            let id = text.get(id_start..id_start + 21).unwrap_or("");
            let hit = is_file_id(id)
                .then(|| self.files.get(id))
                .flatten()
                .and_then(|rec| rec.source.as_ref().map(|s| (rec, s)))
                .filter(|(_, s)| text[pos..].starts_with(&s.reference));
            let Some((rec, src)) = hit else {
                i = id_start;
                continue;
            };
            let (open, close, len) = (src.open.clone(), src.close.clone(), src.reference.len());
            let content = self.content(&rec.clone())?;
            out.push_str(&text[at..pos]);
            out.push_str(&open);
            out.push_str(content);
            out.push_str(&close);
            at = pos + len;
            i = at;
        }
        out.push_str(&text[at..]);
        *text = out;
        Ok(())
    }

    fn content(&mut self, rec: &LargeFileRecord) -> Result<&str> {
        if !self.contents.contains_key(&rec.file_id) {
            let c = storage::read_all(rec, &self.root).map_err(|e| {
                e.context(format!(
                    "cannot re-inline large file {} (pass expandFiles: false for the stored form)",
                    rec.file_id
                ))
            })?;
            self.contents.insert(rec.file_id.clone(), c);
        }
        Ok(self.contents[&rec.file_id].as_str())
    }
}

fn next_marker(text: &str, from: usize) -> Option<(usize, &'static str)> {
    MARKERS
        .iter()
        .filter_map(|m| text[from..].find(m).map(|p| (from + p, *m)))
        .min_by_key(|(p, _)| *p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::largefiles::intercept::{intercept_batch, Settings};
    use crate::store::conversations::SessionRef;
    use serde_json::json;

    #[test]
    fn round_trip_is_byte_exact() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::store::migrate::migrate(&mut conn).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            threshold: 50,
            dir: dir.path().to_path_buf(),
        };
        let body = "{\"k\": [1, 2, 3], \"漢字\": \"é\"}\n".repeat(40);
        let original = json!({"role":"user","content":[
            {"type":"text","text": format!("a <FILE  mime=\"application/json\">{body}</FILE> b [LCM File: not a ref]")},
            {"type":"text","text":"plain"}
        ]});
        let mut msgs = vec![original.clone()];
        let session = SessionRef {
            session_id: "s".into(),
            session_key: None,
        };
        intercept_batch(&mut conn, &session, &mut msgs, &settings).unwrap();
        assert_ne!(msgs[0], original);
        assert!(message_has_reference(&msgs[0]));
        let mut r = Restorer::load(&conn, 1, dir.path().to_path_buf()).unwrap();
        r.restore(&mut msgs[0]).unwrap();
        assert_eq!(msgs[0].to_string(), original.to_string());
    }
}
