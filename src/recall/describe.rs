//! `describe`: a summary with its lineage and subtree manifest, or a large file
//! with its exploration summary and (on request) its content.
//!
//! Naming (as in the reference): a summary's `parentIds` are its **sources** (the
//! summaries it was built from, `summary_parents.parent_summary_id`), `childIds`
//! the summaries **derived** from it. The manifest walks the sources, since that is
//! what an expansion would read.

use std::path::Path;

use rusqlite::Connection;
use serde::Serialize;

use crate::error::Result;
use crate::largefiles::blocks::group_thousands;
use crate::largefiles::storage::{self, LargeFileRecord};
use crate::store::recall;
use crate::store::summaries::{self, SummaryRecord};
use crate::timeformat::Zone;
use crate::tokens;

/// Most manifest nodes listed.
pub const MAX_MANIFEST_NODES: usize = 200;
/// Default and bounds of `expandFileMaxBytes`.
pub const EXPAND_FILE_DEFAULT_BYTES: usize = 32_768;
const EXPAND_FILE_MIN_BYTES: usize = 1024;
const EXPAND_FILE_MAX_BYTES: usize = 512_000;

/// One node of a summary's source subtree.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct ManifestNode {
    /// The node.
    pub summary_id: String,
    /// The node it was reached from (`None` for the root).
    pub parent_summary_id: Option<String>,
    /// Distance from the described summary.
    pub depth_from_root: i64,
    /// `leaf` or `condensed`.
    pub kind: crate::store::summaries::SummaryKind,
    /// DAG depth.
    pub depth: i64,
    /// Tokens of the node's content.
    pub token_count: i64,
    /// Summaries below it.
    pub descendant_count: i64,
    /// Tokens of the summaries below it.
    pub descendant_token_count: i64,
    /// Tokens of the source messages below it.
    pub source_message_token_count: i64,
    /// Direct sources (summaries of a condensed node, messages of a leaf).
    pub child_count: i64,
    /// Earliest source time.
    pub earliest_at: Option<String>,
    /// Latest source time.
    pub latest_at: Option<String>,
    /// Ordinal path from the root (`0001.0003`).
    pub path: String,
    /// Tokens to expand its summaries (`tok + descTok`).
    pub cost_summaries_only: i64,
    /// Tokens with the source messages too (`+ srcTok`).
    pub cost_with_messages: i64,
    /// Whether `cost_summaries_only` fits the budget cap.
    pub fits_summaries_only: bool,
    /// Whether `cost_with_messages` fits the budget cap.
    pub fits_with_messages: bool,
}

/// A described summary.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct SummaryDescription {
    /// The row.
    #[serde(flatten)]
    pub record: SummaryRecord,
    /// Sources (reference "parents"), in link order.
    pub parent_ids: Vec<String>,
    /// Derived summaries (reference "children").
    pub child_ids: Vec<String>,
    /// Source messages of a leaf, in order.
    pub message_ids: Vec<i64>,
    /// Distinct messages under the whole subtree.
    pub source_message_count: i64,
    /// Budget cap used for the manifest.
    pub budget_cap: i64,
    /// `request`, `delegated_grant_remaining` or `config_default`.
    #[ts(type = "\"request\" | \"delegated_grant_remaining\" | \"config_default\"")]
    pub budget_source: String,
    /// Source subtree, breadth first, at most [`MAX_MANIFEST_NODES`].
    pub manifest: Vec<ManifestNode>,
    /// Nodes left out of `manifest`.
    pub manifest_omitted: usize,
    /// True when `content` was cut to fit a grant's budget.
    pub content_truncated: bool,
}

/// A described large file.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct FileDescription {
    /// The row.
    #[serde(flatten)]
    pub record: LargeFileRecord,
    /// Content (whole with `includeContent`, bounded with `expandFile`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub content: Option<String>,
    /// Whether `content` stops before the end of the file or range.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub content_truncated: Option<bool>,
    /// First line of `content` (line ranges).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub start_line: Option<usize>,
    /// Last line of `content` (line ranges).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub end_line: Option<usize>,
    /// Why the content could not be read, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub content_error: Option<String>,
}

/// How to read a file's content.
#[derive(Debug, Clone, Default)]
pub struct FileRead {
    /// The whole content, byte-exact.
    pub include_content: bool,
    /// A bounded read for an agent.
    pub expand_file: bool,
    /// Bound of `expand_file` (default 32768, clamped to 1024..=512000).
    pub max_bytes: Option<usize>,
    /// First line (1-based) of a range.
    pub start_line: Option<usize>,
    /// Last line (1-based) of a range.
    pub end_line: Option<usize>,
}

/// Loads a summary description (manifest budget filled in later).
pub fn summary(
    conn: &Connection,
    id: &str,
    budget_cap: i64,
    budget_source: &str,
) -> Result<Option<SummaryDescription>> {
    let Some(record) = summaries::get(conn, id)? else {
        return Ok(None);
    };
    let parent_ids = summaries::source_summary_ids(conn, id)?;
    let child_ids = summaries::derived_summary_ids(conn, id)?;
    let message_ids = summaries::source_message_ids(conn, id)?;
    let (manifest, omitted) = manifest(conn, id, budget_cap)?;
    Ok(Some(SummaryDescription {
        source_message_count: recall::source_message_count(conn, id)?,
        record,
        parent_ids,
        child_ids,
        message_ids,
        budget_cap,
        budget_source: budget_source.to_owned(),
        manifest,
        manifest_omitted: omitted,
        content_truncated: false,
    }))
}

fn manifest(conn: &Connection, id: &str, cap: i64) -> Result<(Vec<ManifestNode>, usize)> {
    let mut seen = std::collections::HashSet::new();
    let (mut nodes, mut omitted) = (Vec::new(), 0);
    for n in recall::subtree_nodes(conn, id)? {
        if !seen.insert(n.summary_id.clone()) {
            continue;
        }
        if nodes.len() == MAX_MANIFEST_NODES {
            omitted += 1;
            continue;
        }
        let s_cost = (n.token_count + n.descendant_token_count).max(0);
        let m_cost = (s_cost + n.source_message_token_count).max(0);
        nodes.push(ManifestNode {
            summary_id: n.summary_id,
            parent_summary_id: n.parent_summary_id,
            depth_from_root: n.depth_from_root,
            kind: n.kind,
            depth: n.depth,
            token_count: n.token_count,
            descendant_count: n.descendant_count,
            descendant_token_count: n.descendant_token_count,
            source_message_token_count: n.source_message_token_count,
            child_count: n.child_count,
            earliest_at: n.earliest_at,
            latest_at: n.latest_at,
            path: n.path,
            cost_summaries_only: s_cost,
            cost_with_messages: m_cost,
            fits_summaries_only: s_cost <= cap,
            fits_with_messages: m_cost <= cap,
        });
    }
    Ok((nodes, omitted))
}

/// Loads a file description and reads its content as asked.
pub fn file(
    conn: &Connection,
    id: &str,
    root: &Path,
    read: &FileRead,
) -> Result<Option<FileDescription>> {
    let Some(record) = storage::get(conn, id)? else {
        return Ok(None);
    };
    let mut d = FileDescription {
        record,
        content: None,
        content_truncated: None,
        start_line: None,
        end_line: None,
        content_error: None,
    };
    if read.include_content {
        d.content = Some(storage::read_all(&d.record, root)?);
        d.content_truncated = Some(false);
    } else if read.expand_file {
        let max = read
            .max_bytes
            .unwrap_or(EXPAND_FILE_DEFAULT_BYTES)
            .clamp(EXPAND_FILE_MIN_BYTES, EXPAND_FILE_MAX_BYTES);
        match storage::read_slice(&d.record, root, read.start_line, read.end_line, max) {
            Ok(s) => {
                d.content = Some(s.content);
                d.content_truncated = Some(s.truncated);
                if read.start_line.is_some() {
                    d.start_line = Some(s.start_line);
                    d.end_line = Some(s.end_line);
                }
            }
            Err(e) => d.content_error = Some(e.message),
        }
    }
    Ok(Some(d))
}

/// The conversation of a summary or file id, if it exists.
pub fn conversation_of(conn: &Connection, id: &str) -> Result<Option<i64>> {
    recall::conversation_of(conn, id)
}

/// Whether `id` is one of `roots` or lies in the source subtree of one of them.
pub fn within_subtrees(conn: &Connection, id: &str, roots: &[String]) -> Result<bool> {
    if roots.is_empty() || roots.iter().any(|r| r == id) {
        return Ok(true);
    }
    let ancestors = recall::ancestor_ids(conn, id)?;
    Ok(ancestors.iter().any(|a| roots.contains(a)))
}

fn display(zone: &Zone, t: Option<&str>) -> String {
    t.and_then(crate::timestamp::parse)
        .map(|t| zone.format_timestamp(t))
        .unwrap_or_else(|| "-".into())
}

/// The reference's text rendering of a summary description.
pub fn render_summary(d: &SummaryDescription, zone: &Zone) -> String {
    let s = &d.record;
    let mut lines = vec![
        format!("LCM_SUMMARY {}", s.summary_id),
        format!(
            "meta conv={} kind={} depth={} tok={} descTok={} srcTok={} desc={} range={}..{} budgetCap={}",
            s.conversation_id,
            s.kind,
            s.depth,
            s.token_count,
            s.descendant_token_count,
            s.source_message_token_count,
            s.descendant_count,
            display(zone, s.earliest_at.as_deref()),
            display(zone, s.latest_at.as_deref()),
            d.budget_cap
        ),
    ];
    if !d.parent_ids.is_empty() {
        lines.push(format!("parents {}", d.parent_ids.join(" ")));
    }
    if !d.child_ids.is_empty() {
        lines.push(format!("children {}", d.child_ids.join(" ")));
    }
    lines.push("manifest".into());
    for n in &d.manifest {
        lines.push(format!(
            "d{} {} k={} tok={} descTok={} srcTok={} desc={} child={} range={}..{} cost[s={},m={}] budget[s={},m={}]",
            n.depth_from_root,
            n.summary_id,
            n.kind,
            n.token_count,
            n.descendant_token_count,
            n.source_message_token_count,
            n.descendant_count,
            n.child_count,
            display(zone, n.earliest_at.as_deref()),
            display(zone, n.latest_at.as_deref()),
            n.cost_summaries_only,
            n.cost_with_messages,
            if n.fits_summaries_only { "in" } else { "over" },
            if n.fits_with_messages { "in" } else { "over" },
        ));
    }
    if d.manifest_omitted > 0 {
        lines.push(format!("… {} more nodes not listed", d.manifest_omitted));
    }
    lines.push("content".into());
    lines.push(s.content.clone());
    if d.content_truncated {
        lines.push("[content truncated to the grant's remaining token budget]".into());
    }
    lines.join("\n")
}

/// The reference's text rendering of a file description.
pub fn render_file(d: &FileDescription, zone: &Zone) -> String {
    let f = &d.record;
    let mut lines = vec![
        format!("## LCM File: {}", f.file_id),
        String::new(),
        format!("**Conversation:** {}", f.conversation_id),
        format!(
            "**Name:** {}",
            f.file_name.as_deref().unwrap_or("(no name)")
        ),
        format!("**Type:** {}", f.mime_type.as_deref().unwrap_or("unknown")),
    ];
    if let Some(b) = f.byte_size {
        lines.push(format!(
            "**Size:** {} bytes",
            group_thousands(b.max(0) as u64)
        ));
    }
    if let Some(l) = f.line_count {
        lines.push(format!("**Lines:** {}", group_thousands(l.max(0) as u64)));
    }
    lines.push(format!(
        "**Created:** {}",
        display(zone, Some(&f.created_at))
    ));
    lines.push(String::new());
    match f.exploration_summary.as_deref() {
        Some(s) => lines.extend(["## Exploration Summary".into(), String::new(), s.to_owned()]),
        None => lines.push("*No exploration summary available.*".into()),
    }
    if let Some(c) = &d.content {
        lines.extend([
            String::new(),
            "## Content".into(),
            String::new(),
            "```".into(),
            c.clone(),
            "```".into(),
        ]);
        if d.content_truncated == Some(true) {
            lines.push(String::new());
            lines.push(format!(
                "*Content truncated to {} of {} bytes; pass startLine/endLine to read another part.*",
                group_thousands(c.len() as u64),
                f.byte_size.map(|b| group_thousands(b.max(0) as u64)).unwrap_or_else(|| "?".into())
            ));
        }
    } else if let Some(e) = &d.content_error {
        lines.push(String::new());
        lines.push(format!("*Content unavailable: {e}*"));
    }
    lines.join("\n")
}

/// Cuts a text to a token budget, reporting whether it was cut.
pub fn fit_tokens(text: &str, budget: i64) -> (String, bool) {
    let cut = tokens::truncate_to_tokens(text, budget.max(0));
    (cut.to_owned(), cut.len() < text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::expand::tests::dag;

    #[test]
    fn lineage_and_manifest_follow_sources() {
        let (conn, _ids, s) = dag();
        let d = summary(&conn, &s[0], 1_000, "config_default")
            .unwrap()
            .unwrap();
        assert_eq!(d.parent_ids, vec![s[1].clone(), s[2].clone()]);
        assert!(d.child_ids.is_empty());
        assert_eq!(d.source_message_count, 8);
        let order: Vec<(i64, &str)> = d
            .manifest
            .iter()
            .map(|n| (n.depth_from_root, n.summary_id.as_str()))
            .collect();
        assert_eq!(
            order,
            vec![
                (0, s[0].as_str()),
                (1, &s[1]),
                (1, &s[2]),
                (2, &s[3]),
                (2, &s[4]),
                (2, &s[5]),
                (2, &s[6])
            ]
        );
        assert_eq!(d.manifest[0].child_count, 2);
        assert_eq!(d.manifest[3].child_count, 2);
        let text = render_summary(&d, &Zone::utc());
        assert!(text.starts_with(&format!(
            "LCM_SUMMARY {}\nmeta conv=1 kind=condensed depth=2 ",
            s[0]
        )));
        assert!(text.contains(&format!(
            "\nparents {} {}\nmanifest\nd0 {} ",
            s[1], s[2], s[0]
        )));
        assert!(text.ends_with("\ncontent\nroot"));
        let c0 = summary(&conn, &s[1], 1, "request").unwrap().unwrap();
        assert_eq!(c0.child_ids, vec![s[0].clone()]);
        assert!(!c0.manifest[0].fits_summaries_only);
        assert!(summary(&conn, "sum_nope", 1, "request").unwrap().is_none());
        assert!(within_subtrees(&conn, &s[3], &[s[1].clone()]).unwrap());
        assert!(!within_subtrees(&conn, &s[5], &[s[1].clone()]).unwrap());
        assert!(!within_subtrees(&conn, &s[0], &[s[1].clone()]).unwrap());
    }
}
