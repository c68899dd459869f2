//! `expand`: walks from summaries down to their **sources** (the summaries they were
//! built from, via `summary_parents.parent_summary_id`, never the summaries derived
//! from them), then to the original messages of leaves when asked, in source order
//! (oldest first within each node), stopping at the token cap with `truncated`.

use std::collections::HashSet;

use rusqlite::Connection;
use serde::Serialize;

use crate::error::Result;
use crate::store::messages;
use crate::store::summaries::{self, SummaryRecord};

/// A summary reached by an expansion.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct ExpandedSummary {
    /// The summary.
    pub summary_id: String,
    /// The node whose source it is.
    pub parent_summary_id: String,
    /// The expansion root it was reached from.
    pub root_id: String,
    /// `leaf` or `condensed`.
    pub kind: crate::store::summaries::SummaryKind,
    /// DAG depth.
    pub depth: i64,
    /// Full content.
    pub content: String,
    /// Tokens of the content.
    pub token_count: i64,
    /// Earliest source time (ISO).
    pub earliest_at: Option<String>,
    /// Latest source time (ISO).
    pub latest_at: Option<String>,
}

/// A source message reached through a leaf.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct ExpandedMessage {
    /// message_id
    pub message_id: i64,
    /// The leaf it belongs to.
    pub summary_id: String,
    /// The expansion root it was reached from.
    pub root_id: String,
    /// conversation_id
    pub conversation_id: i64,
    /// DB role.
    pub role: String,
    /// Plain-text content.
    pub content: String,
    /// Tokens of the content.
    pub token_count: i64,
    /// Message time (SQLite UTC text).
    pub created_at: String,
}

/// The outcome of one or more expansions under one budget.
#[derive(Debug, Clone, Serialize, Default, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct Walk {
    /// The expanded roots, in order.
    pub roots: Vec<WalkRoot>,
    /// Summaries reached, depth first in source order.
    pub children: Vec<ExpandedSummary>,
    /// Messages reached, in source order.
    pub messages: Vec<ExpandedMessage>,
    /// Tokens of everything returned.
    pub total_tokens: i64,
    /// True when the cap stopped the walk.
    pub truncated: bool,
}

/// A root of an expansion.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct WalkRoot {
    /// The root summary.
    pub summary_id: String,
    /// Its kind.
    pub kind: crate::store::summaries::SummaryKind,
    /// Its conversation.
    pub conversation_id: i64,
}

/// Walk settings.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Levels of sources to descend (1 = direct sources only).
    pub depth: i64,
    /// Include the messages of leaves.
    pub include_messages: bool,
    /// Token cap over the whole walk.
    pub token_cap: i64,
}

impl Walk {
    /// Expands one root into this walk, within the remaining budget.
    pub fn expand_root(
        &mut self,
        conn: &Connection,
        root: &SummaryRecord,
        lim: Limits,
    ) -> Result<()> {
        self.roots.push(WalkRoot {
            summary_id: root.summary_id.clone(),
            kind: root.kind,
            conversation_id: root.conversation_id,
        });
        let mut seen = HashSet::new();
        self.visit(conn, root, &root.summary_id, lim.depth, lim, &mut seen)
    }

    fn visit(
        &mut self,
        conn: &Connection,
        node: &SummaryRecord,
        root: &str,
        depth: i64,
        lim: Limits,
        seen: &mut HashSet<String>,
    ) -> Result<()> {
        if depth <= 0 || self.truncated || !seen.insert(node.summary_id.clone()) {
            return Ok(());
        }
        if node.kind == crate::store::summaries::SummaryKind::Leaf {
            return if lim.include_messages {
                self.leaf_messages(conn, node, root, lim)
            } else {
                Ok(())
            };
        }
        let sources = summaries::by_ids(
            conn,
            &summaries::source_summary_ids(conn, &node.summary_id)?,
        )?;
        for s in sources {
            if self.truncated {
                break;
            }
            if self.total_tokens + s.token_count > lim.token_cap {
                self.truncated = true;
                break;
            }
            self.total_tokens += s.token_count;
            self.children.push(ExpandedSummary {
                summary_id: s.summary_id.clone(),
                parent_summary_id: node.summary_id.clone(),
                root_id: root.to_owned(),
                kind: s.kind,
                depth: s.depth,
                content: s.content.clone(),
                token_count: s.token_count,
                earliest_at: s.earliest_at.clone(),
                latest_at: s.latest_at.clone(),
            });
            self.visit(conn, &s, root, depth - 1, lim, seen)?;
        }
        Ok(())
    }

    fn leaf_messages(
        &mut self,
        conn: &Connection,
        leaf: &SummaryRecord,
        root: &str,
        lim: Limits,
    ) -> Result<()> {
        let ids = summaries::source_message_ids(conn, &leaf.summary_id)?;
        for m in messages::records_by_ids(conn, &ids)? {
            if self.total_tokens + m.token_count > lim.token_cap {
                self.truncated = true;
                break;
            }
            self.total_tokens += m.token_count;
            self.messages.push(ExpandedMessage {
                message_id: m.message_id,
                summary_id: leaf.summary_id.clone(),
                root_id: root.to_owned(),
                conversation_id: m.conversation_id,
                role: m.role,
                content: m.content,
                token_count: m.token_count,
                created_at: m.created_at,
            });
        }
        Ok(())
    }

    /// Each root and the summaries reached, de-duplicated, in order.
    pub fn cited_ids(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        self.roots
            .iter()
            .map(|r| &r.summary_id)
            .chain(self.children.iter().map(|c| &c.summary_id))
            .filter(|id| seen.insert(id.as_str()))
            .cloned()
            .collect()
    }

    /// The reference's compact text of an expansion (for a sub-agent or the model).
    pub fn render(&self) -> String {
        let mut lines = vec![
            format!(
                "## Expansion Results ({} summaries, {} total tokens)",
                self.roots.len(),
                self.total_tokens
            ),
            String::new(),
        ];
        for r in &self.roots {
            let children: Vec<&ExpandedSummary> = self
                .children
                .iter()
                .filter(|c| c.root_id == r.summary_id)
                .collect();
            let msgs: Vec<&ExpandedMessage> = self
                .messages
                .iter()
                .filter(|m| m.root_id == r.summary_id)
                .collect();
            let tokens: i64 = children.iter().map(|c| c.token_count).sum::<i64>()
                + msgs.iter().map(|m| m.token_count).sum::<i64>();
            lines.push(format!(
                "### {} ({}, {tokens} tokens)",
                r.summary_id, r.kind
            ));
            if !children.is_empty() {
                lines.push(format!(
                    "Children: {}",
                    children
                        .iter()
                        .map(|c| c.summary_id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if !msgs.is_empty() {
                let parts: Vec<String> = msgs
                    .iter()
                    .map(|m| {
                        format!(
                            "msg#{} ({}, {} tokens)",
                            m.message_id, m.role, m.token_count
                        )
                    })
                    .collect();
                lines.push(format!("Messages: {}", parts.join(", ")));
            }
            let first = children
                .first()
                .map(|c| c.content.as_str())
                .or(msgs.first().map(|m| m.content.as_str()));
            if let Some(s) = first.filter(|s| !s.is_empty()) {
                lines.push(format!(
                    "[Snippet: {}]",
                    super::text::cut_chars(&super::text::one_line(s), 200)
                ));
            }
            lines.push(String::new());
        }
        let cited = self.cited_ids();
        if !cited.is_empty() {
            lines.push(format!("Cited IDs for follow-up: {}", cited.join(", ")));
        }
        lines.push(format!(
            "[Truncated: {}]",
            if self.truncated { "yes" } else { "no" }
        ));
        lines.join("\n")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::message::ingest::map_message;
    use crate::store::conversations::SessionRef;
    use crate::store::dag::{persist_summary, NewSummary, Sources};
    use crate::store::messages::insert_batch;
    use crate::store::Features;
    use serde_json::json;

    /// 8 messages; leaves L0..L3 over pairs; C0 = [L0, L1], C1 = [L2, L3]; R = [C0, C1].
    pub(crate) fn dag() -> (Connection, Vec<i64>, Vec<String>) {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::store::migrate::migrate(&mut conn).unwrap();
        let batch = (0..8)
            .map(|i| map_message(&json!({"role":"user","content":format!("message {i} {}", "x ".repeat(8)),"timestamp": 1771313820000i64 + i * 60000}), None).unwrap())
            .collect();
        let session = SessionRef {
            session_id: "s".into(),
            session_key: None,
        };
        let out = insert_batch(&mut conn, &session, batch).unwrap();
        let ids: Vec<i64> = out.messages.iter().map(|m| m.message_id.unwrap()).collect();
        let f = Features {
            fts5: true,
            trigram: true,
        };
        let mut put = |content: &str, sources: Sources| {
            let s = NewSummary {
                conversation_id: out.conversation_id,
                content: content.into(),
                model: "m".into(),
                sources,
            };
            persist_summary(&mut conn, &s, f).unwrap()
        };
        let leaves: Vec<String> = (0..4)
            .map(|k| {
                put(
                    &format!("leaf {k}"),
                    Sources::Messages(ids[k * 2..k * 2 + 2].to_vec()),
                )
            })
            .collect();
        let c0 = put("condensed zero", Sources::Summaries(leaves[0..2].to_vec()));
        let c1 = put("condensed one", Sources::Summaries(leaves[2..4].to_vec()));
        let r = put("root", Sources::Summaries(vec![c0.clone(), c1.clone()]));
        let mut all = vec![r, c0, c1];
        all.extend(leaves);
        (conn, ids, all)
    }

    #[test]
    fn walks_sources_depth_first_and_stops_at_the_cap() {
        let (conn, ids, s) = dag();
        let (r, c0, c1, l) = (&s[0], &s[1], &s[2], &s[3..]);
        let root = summaries::get(&conn, r).unwrap().unwrap();
        let mut w = Walk::default();
        let lim = Limits {
            depth: 3,
            include_messages: true,
            token_cap: 1_000_000,
        };
        w.expand_root(&conn, &root, lim).unwrap();
        let got: Vec<&str> = w.children.iter().map(|c| c.summary_id.as_str()).collect();
        assert_eq!(
            got,
            [c0, &l[0], &l[1], c1, &l[2], &l[3]].map(String::as_str)
        );
        assert_eq!(
            w.messages.iter().map(|m| m.message_id).collect::<Vec<_>>(),
            ids
        );
        assert!(!w.truncated);
        assert_eq!(w.children[1].parent_summary_id, *c0);

        // From a middle node nothing derived (the root) is reached.
        let mid = summaries::get(&conn, c0).unwrap().unwrap();
        let mut w = Walk::default();
        w.expand_root(
            &conn,
            &mid,
            Limits {
                depth: 5,
                include_messages: false,
                token_cap: 1_000_000,
            },
        )
        .unwrap();
        assert_eq!(
            w.children
                .iter()
                .map(|c| c.summary_id.clone())
                .collect::<Vec<_>>(),
            l[0..2].to_vec()
        );

        let cap = root.token_count; // room for about one node
        let mut w = Walk::default();
        w.expand_root(
            &conn,
            &root,
            Limits {
                token_cap: cap,
                ..lim
            },
        )
        .unwrap();
        assert!(w.truncated);
        assert!(w.total_tokens <= cap);
        assert!(w.render().ends_with("[Truncated: yes]"));
    }
}
