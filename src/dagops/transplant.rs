//! `transplant`: copies a source conversation's context summaries — with every
//! summary beneath them, their links, and their source messages and parts — into a
//! target conversation under new ids, and puts them in front of the target's
//! context list in the source's order. Copied messages get new rows and seqs after
//! the target's last one; their full-text rows follow through the deferred index
//! (their ids lie above the watermark). Copies carry no transcript entry id or
//! stable event key: those identify the *source* session's transcript, and in the
//! target they would make a replayed entry look already stored.

use std::collections::{BTreeMap, HashMap, HashSet};

use rusqlite::{params, Connection, Transaction};
use serde::{Deserialize, Serialize};

use super::{no_new_violations, structural, summary_view, SummaryView};
use crate::doctor::{check, repair, require_conversation, violation::list, Kind};
use crate::error::{LcmError, Result};
use crate::store::dag::{self, new_summary_id};
use crate::store::graph;
use crate::store::messages::part_id;
use crate::store::Features;

/// Parameters of `transplant`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TransplantParams {
    /// Where the summaries come from.
    pub source_conversation_id: i64,
    /// Where they go.
    pub target_conversation_id: i64,
    /// Write (default: plan only).
    #[serde(default)]
    pub apply: bool,
}

/// Summaries to copy at one depth.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DepthCount {
    /// The depth.
    pub depth: i64,
    /// How many.
    pub count: usize,
}

/// An old → new id pair.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IdPair {
    /// The source summary.
    pub from: String,
    /// Its copy.
    pub to: String,
}

/// What a transplant does (the dry run) or did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransplantPlan {
    /// Source conversation.
    pub source_conversation_id: i64,
    /// Target conversation.
    pub target_conversation_id: i64,
    /// The source's context summaries, in context order (they are prepended).
    pub context_summaries: Vec<SummaryView>,
    /// Every summary to copy, by depth.
    pub summaries_by_depth: Vec<DepthCount>,
    /// Summaries to copy (context ones and everything beneath).
    pub summary_count: usize,
    /// Messages to copy.
    pub message_count: usize,
    /// Message parts to copy.
    pub part_count: i64,
    /// Context items of the target before: summaries.
    pub target_summary_items: i64,
    /// Context items of the target before: messages.
    pub target_message_items: i64,
    /// Tokens the prepended items add to the target's context.
    pub token_overhead: i64,
    /// `file_…` ids the copies mention (their files stay registered to the source).
    pub file_ids: Vec<String>,
    /// Whether it was written.
    pub applied: bool,
    /// The copies of the context summaries, in order (after apply).
    pub mapping: Vec<IdPair>,
    /// Seq range of the copied messages in the target (after apply).
    pub seq_range: Option<(i64, i64)>,
    /// Copied messages found in `messages_fts` after the flush (after apply).
    pub messages_indexed: Option<usize>,
}

/// What to copy: summaries sources-first, and messages in seq order.
struct Selection {
    context: Vec<String>,
    summaries: Vec<String>,
    messages: Vec<i64>,
}

/// Plans a transplant (read-only).
pub fn plan(conn: &Connection, p: &TransplantParams) -> Result<TransplantPlan> {
    Ok(prepare(conn, p)?.1)
}

fn prepare(conn: &Connection, p: &TransplantParams) -> Result<(Selection, TransplantPlan)> {
    let (src, dst) = (p.source_conversation_id, p.target_conversation_id);
    if src == dst {
        return Err(LcmError::invalid(format!(
            "source and target are both conversation {src}"
        )));
    }
    require_conversation(conn, src)?;
    require_conversation(conn, dst)?;
    let sel = select(conn, src)?;
    // Context summaries first: they are what the operator sees in the plan.
    let mut order = sel.context.clone();
    order.extend(
        sel.summaries
            .iter()
            .filter(|s| !sel.context.contains(s))
            .cloned(),
    );
    refuse_duplicates(conn, dst, &order)?;
    let plan = describe(conn, p, &sel)?;
    Ok((sel, plan))
}

fn select(conn: &Connection, src: i64) -> Result<Selection> {
    let g = graph::load(conn, src)?;
    let context: Vec<String> = g
        .context
        .iter()
        .filter_map(|c| c.summary_id.clone())
        .filter(|s| g.owns_summary(s))
        .collect();
    if context.is_empty() {
        return Err(LcmError::invalid(format!(
            "conversation {src} has no summaries in its context list; there is nothing to transplant"
        )));
    }
    let mut below: HashSet<String> = HashSet::new();
    let mut stack = context.clone();
    while let Some(id) = stack.pop() {
        if below.insert(id.clone()) {
            stack.extend(g.own_sources(&id).into_iter().map(str::to_owned));
        }
    }
    refuse_damage(&g, &below)?;
    let a = check::analyze(&g);
    let summaries: Vec<String> = a
        .order
        .iter()
        .filter(|s| below.contains(*s))
        .cloned()
        .collect();
    let mut messages: Vec<i64> = summaries
        .iter()
        .flat_map(|s| g.msg_sources.get(s).into_iter().flatten().map(|(_, m)| *m))
        .collect::<HashSet<i64>>()
        .into_iter()
        .collect();
    messages.sort_by_key(|m| g.messages.get(m).map(|r| r.seq).unwrap_or(i64::MAX));
    Ok(Selection {
        context,
        summaries,
        messages,
    })
}

/// Refuses a source whose DAG beneath the copied summaries is damaged: a violation
/// (other than FTS rows and ordinal gaps) names one of them, or would restore a lost
/// row into one of them.
fn refuse_damage(g: &graph::Graph, below: &HashSet<String>) -> Result<()> {
    let a = check::analyze(g);
    let touches = |v: &crate::doctor::Violation| {
        v.summary_ids.iter().any(|s| below.contains(s))
            || v.details["restoreTo"]
                .as_str()
                .is_some_and(|s| below.contains(s))
    };
    let bad: Vec<String> = a
        .violations
        .iter()
        .filter(|v| {
            !matches!(
                v.kind,
                Kind::OrdinalGap
                    | Kind::FtsMissing
                    | Kind::FtsExtra
                    | Kind::FtsOutdated
                    | Kind::FtsDuplicate
                    | Kind::FtsIndex
            )
        })
        .filter(|v| touches(v))
        .map(|v| v.message.clone())
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    Err(LcmError::invalid(format!(
        "the summaries of conversation {} to copy are damaged ({}); run doctor --apply on it first",
        g.conversation_id,
        bad.join("; ")
    )))
}

fn refuse_duplicates(conn: &Connection, dst: i64, ids: &[String]) -> Result<()> {
    let mut stmt = conn.prepare(
        "SELECT s.summary_id, t.summary_id FROM summaries s JOIN summaries t ON t.content = s.content AND t.conversation_id = ?1
         WHERE s.summary_id = ?2",
    )?;
    let mut dupes = Vec::new();
    for id in ids {
        for row in stmt.query_map(params![dst, id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })? {
            let (a, b) = row?;
            dupes.push(format!("{a} = {b}"));
        }
    }
    if dupes.is_empty() {
        return Ok(());
    }
    Err(LcmError::invalid(format!(
        "conversation {dst} already holds the text of {} summary(ies) to copy (transplanted before?): {}",
        dupes.len(),
        list(&dupes)
    )))
}

fn describe(conn: &Connection, p: &TransplantParams, sel: &Selection) -> Result<TransplantPlan> {
    let (src, dst) = (p.source_conversation_id, p.target_conversation_id);
    let mut views = Vec::new();
    for id in &sel.context {
        views.extend(summary_view(conn, src, id)?);
    }
    let mut depths: BTreeMap<i64, usize> = BTreeMap::new();
    let mut file_ids: Vec<String> = Vec::new();
    let mut stmt = conn.prepare("SELECT depth, file_ids FROM summaries WHERE summary_id = ?1")?;
    for id in &sel.summaries {
        let (d, f): (i64, Option<String>) = stmt.query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        *depths.entry(d).or_default() += 1;
        for x in f
            .and_then(|s| serde_json::from_str::<Vec<String>>(&s).ok())
            .unwrap_or_default()
        {
            if !file_ids.contains(&x) {
                file_ids.push(x);
            }
        }
    }
    let mut part_count = 0;
    let mut parts = conn.prepare("SELECT COUNT(*) FROM message_parts WHERE message_id = ?1")?;
    for m in &sel.messages {
        part_count += parts.query_row([m], |r| r.get::<_, i64>(0))?;
    }
    let (ts, tm): (i64, i64) = conn.query_row(
        "SELECT COALESCE(SUM(item_type = 'summary'), 0), COALESCE(SUM(item_type = 'message'), 0) FROM context_items WHERE conversation_id = ?1",
        [dst],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(TransplantPlan {
        source_conversation_id: src,
        target_conversation_id: dst,
        token_overhead: views.iter().map(|v| v.token_count).sum(),
        context_summaries: views,
        summaries_by_depth: depths
            .into_iter()
            .map(|(depth, count)| DepthCount { depth, count })
            .collect(),
        summary_count: sel.summaries.len(),
        message_count: sel.messages.len(),
        part_count,
        target_summary_items: ts,
        target_message_items: tm,
        file_ids,
        applied: false,
        mapping: Vec::new(),
        seq_range: None,
        messages_indexed: None,
    })
}

/// Columns of `table` except those named.
fn columns(conn: &Connection, table: &str, except: &[&str]) -> Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(names
        .into_iter()
        .filter(|n| !except.contains(&n.as_str()))
        .collect())
}

/// Plans again inside the transaction and writes the copy.
pub fn apply(tx: &Transaction, p: &TransplantParams, features: Features) -> Result<TransplantPlan> {
    let (sel, mut out) = prepare(tx, p)?;
    let dst = p.target_conversation_id;
    let before = structural(tx, dst)?;
    let (msg_map, range) = copy_messages(tx, dst, &sel.messages)?;
    let sum_map = copy_summaries(tx, dst, &sel.summaries, &msg_map, features)?;
    let copies: HashSet<String> = sum_map.values().cloned().collect();
    let g = graph::load(tx, dst)?;
    let a = check::analyze(&g);
    repair::fix_metadata_of(tx, &g, &a, Some(&copies), &mut Vec::new())?;
    let copy_of = |s: &String| {
        sum_map
            .get(s)
            .cloned()
            .ok_or_else(|| LcmError::internal(format!("context summary {s} was not copied")))
    };
    let front: Vec<String> = sel.context.iter().map(copy_of).collect::<Result<_>>()?;
    prepend(tx, dst, &front)?;
    no_new_violations("this transplant", &before, &structural(tx, dst)?)?;
    tx.execute(
        "UPDATE conversations SET updated_at = datetime('now') WHERE conversation_id = ?1",
        [dst],
    )?;
    out.applied = true;
    out.mapping = sel
        .context
        .iter()
        .zip(front)
        .map(|(s, to)| IdPair {
            from: s.clone(),
            to,
        })
        .collect();
    out.seq_range = range;
    Ok(out)
}

type MessageMap = HashMap<i64, i64>;

fn copy_messages(
    tx: &Transaction,
    dst: i64,
    ids: &[i64],
) -> Result<(MessageMap, Option<(i64, i64)>)> {
    let session: String = tx.query_row(
        "SELECT session_id FROM conversations WHERE conversation_id = ?1",
        [dst],
        |r| r.get(0),
    )?;
    let first: i64 = tx.query_row(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE conversation_id = ?1",
        [dst],
        |r| r.get(0),
    )?;
    let cols = columns(
        tx,
        "messages",
        &[
            "message_id",
            "conversation_id",
            "seq",
            "transcript_entry_id",
            "stable_event_key",
        ],
    )?
    .join(", ");
    let mut copy_msg = tx.prepare(&format!(
        "INSERT INTO messages (conversation_id, seq, {cols}) SELECT ?1, ?2, {cols} FROM messages WHERE message_id = ?3"
    ))?;
    let pcols = columns(
        tx,
        "message_parts",
        &["part_id", "message_id", "session_id"],
    )?
    .join(", ");
    let mut copy_part = tx.prepare(&format!(
        "INSERT INTO message_parts (part_id, message_id, session_id, {pcols}) SELECT ?1, ?2, ?3, {pcols} FROM message_parts WHERE message_id = ?4 AND ordinal = ?5"
    ))?;
    let mut part_ordinals =
        tx.prepare("SELECT ordinal FROM message_parts WHERE message_id = ?1 ORDER BY ordinal")?;
    let mut map = HashMap::new();
    for (i, old) in ids.iter().enumerate() {
        copy_msg.execute(params![dst, first + i as i64, old])?;
        let new = tx.last_insert_rowid();
        let ords: Vec<i64> = part_ordinals
            .query_map([old], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for o in ords {
            copy_part.execute(params![part_id(new, o), new, session, old, o])?;
        }
        map.insert(*old, new);
    }
    let range = (!ids.is_empty()).then(|| (first, first + ids.len() as i64 - 1));
    Ok((map, range))
}

fn copy_summaries(
    tx: &Transaction,
    dst: i64,
    ids: &[String],
    msgs: &MessageMap,
    features: Features,
) -> Result<HashMap<String, String>> {
    let cols = columns(tx, "summaries", &["summary_id", "conversation_id"])?.join(", ");
    let mut copy = tx.prepare(&format!(
        "INSERT INTO summaries (summary_id, conversation_id, {cols}) SELECT ?1, ?2, {cols} FROM summaries WHERE summary_id = ?3"
    ))?;
    let mut map: HashMap<String, String> = HashMap::new();
    for old in ids {
        let content: String = tx.query_row(
            "SELECT content FROM summaries WHERE summary_id = ?1",
            [old],
            |r| r.get(0),
        )?;
        let new = new_summary_id(&content);
        copy.execute(params![new, dst, old])?;
        dag::index_summary(tx, &new, &content, features)?;
        link_parents(tx, &new, old, &map)?;
        link_messages(tx, &new, old, msgs)?;
        map.insert(old.clone(), new);
    }
    Ok(map)
}

fn link_parents(
    tx: &Transaction,
    new: &str,
    old: &str,
    map: &HashMap<String, String>,
) -> Result<()> {
    let mut stmt = tx.prepare("SELECT parent_summary_id, ordinal FROM summary_parents WHERE summary_id = ?1 ORDER BY ordinal")?;
    let rows: Vec<(String, i64)> = stmt
        .query_map([old], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut ins = tx.prepare(
        "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?1, ?2, ?3)",
    )?;
    for (src, ord) in &rows {
        let to = map.get(src).ok_or_else(|| {
            LcmError::internal(format!("source {src} of {old} was not copied before it"))
        })?;
        ins.execute(params![new, to, ord])?;
    }
    Ok(())
}

fn link_messages(tx: &Transaction, new: &str, old: &str, msgs: &MessageMap) -> Result<()> {
    let mut stmt = tx.prepare(
        "SELECT message_id, ordinal FROM summary_messages WHERE summary_id = ?1 ORDER BY ordinal",
    )?;
    let rows: Vec<(i64, i64)> = stmt
        .query_map([old], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut ins = tx.prepare(
        "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?1, ?2, ?3)",
    )?;
    for (m, ord) in rows {
        let to = msgs
            .get(&m)
            .ok_or_else(|| LcmError::internal(format!("message {m} of {old} was not copied")))?;
        ins.execute(params![new, to, ord])?;
    }
    Ok(())
}

/// Puts `ids` at ordinals 0..k-1, moving the target's items after them (through
/// negative ordinals, so the primary key never collides).
fn prepend(tx: &Transaction, dst: i64, ids: &[String]) -> Result<()> {
    let k = ids.len() as i64;
    tx.execute(
        "UPDATE context_items SET ordinal = -1 - (ordinal + ?2) WHERE conversation_id = ?1",
        params![dst, k],
    )?;
    tx.execute("UPDATE context_items SET ordinal = -1 - ordinal WHERE conversation_id = ?1 AND ordinal < 0", [dst])?;
    let mut st = tx.prepare(
        "INSERT INTO context_items (conversation_id, ordinal, item_type, summary_id, created_at) VALUES (?1, ?2, 'summary', ?3, datetime('now'))",
    )?;
    for (i, id) in ids.iter().enumerate() {
        st.execute(params![dst, i as i64, id])?;
    }
    dag::resequence(tx, dst)
}

/// How many target messages in a seq range have their `messages_fts` row.
pub fn indexed_copies(conn: &Connection, dst: i64, range: Option<(i64, i64)>) -> Result<usize> {
    let Some((a, b)) = range else {
        return Ok(0);
    };
    let n: i64 = conn.query_row(
        "SELECT COUNT(*) FROM messages m WHERE m.conversation_id = ?1 AND m.seq BETWEEN ?2 AND ?3
           AND EXISTS (SELECT 1 FROM messages_fts_docsize d WHERE d.id = m.message_id)",
        params![dst, a, b],
        |r| r.get(0),
    )?;
    Ok(n as usize)
}
