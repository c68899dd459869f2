//! The structural checks of one conversation: context ordinals and references,
//! links, cycles, coverage of every message exactly once, and derived columns.

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::json;

use super::analysis::Restore;
pub use super::analysis::{Analysis, Holder, Unit};
use super::meta;
use super::relink;
use super::violation::{list, Kind, Violation};
use crate::store::graph::Graph;

/// Checks one conversation's graph.
pub fn analyze(g: &Graph) -> Analysis {
    let mut a = Analysis::default();
    let (order, cycle) = topo(g);
    a.order = order;
    a.cycle = cycle;
    a.expected = meta::cascade(g, &a.order);
    let (reached, covered) = coverage(g);
    a.reached = reached;
    a.covered = covered;
    a.units = units(g, &a);
    a.restores = relink::plan(g, &a);
    if let Some(g2) = relink::with_links(g, &a.restores) {
        // Columns are checked against the links the repair restores, so a lost link
        // is reported once (as uncovered rows), not again in every summary above.
        let (order, _) = topo(&g2);
        a.expected = meta::cascade(&g2, &order);
        a.order = order;
    }
    let c = Some(g.conversation_id);
    let mut v = Vec::new();
    check_context(g, &mut v);
    check_links(g, &mut v);
    check_sources(g, &mut v);
    if !a.cycle.is_empty() {
        v.push(
            Violation::new(
                Kind::Cycle,
                c,
                format!(
                    "summary_parents links form a cycle through {}",
                    list(&a.cycle)
                ),
            )
            .summaries(a.cycle.clone()),
        );
    }
    check_reach(g, &a, &mut v);
    check_units(g, &a, &mut v);
    check_metadata(g, &a, &mut v);
    a.violations = v;
    a
}

/// Kahn's order over own summaries (sources first). What is left is on a cycle or
/// built from one; pruning the left-over summaries nothing else left over is built
/// from leaves the cycle members.
fn topo(g: &Graph) -> (Vec<String>, Vec<String>) {
    let derived = g.derived_of();
    let mut pending: HashMap<&str, usize> = HashMap::new();
    for id in &g.own_summaries {
        pending.insert(id, g.own_sources(id).len());
    }
    let mut queue: VecDeque<&str> = g
        .own_summaries
        .iter()
        .filter(|id| pending[id.as_str()] == 0)
        .map(|s| s.as_str())
        .collect();
    let mut order = Vec::with_capacity(g.own_summaries.len());
    while let Some(id) = queue.pop_front() {
        order.push(id.to_owned());
        for d in derived.get(id).into_iter().flatten() {
            if let Some(n) = pending.get_mut(d) {
                *n -= 1;
                if *n == 0 {
                    queue.push_back(d);
                }
            }
        }
    }
    let done: HashSet<&str> = order.iter().map(|s| s.as_str()).collect();
    let mut left: HashSet<&str> = g
        .own_summaries
        .iter()
        .map(|s| s.as_str())
        .filter(|s| !done.contains(s))
        .collect();
    loop {
        let sinks: Vec<&str> = left
            .iter()
            .filter(|id| {
                !derived
                    .get(*id)
                    .is_some_and(|ds| ds.iter().any(|d| left.contains(d)))
            })
            .copied()
            .collect();
        if sinks.is_empty() {
            break;
        }
        for s in sinks {
            left.remove(s);
        }
    }
    let mut cycle: Vec<String> = left.into_iter().map(str::to_owned).collect();
    cycle.sort();
    (order, cycle)
}

type Reach = (HashMap<String, Vec<Holder>>, HashMap<i64, Vec<Holder>>);

/// Walks down from every context item; a summary reached again is not walked again.
fn coverage(g: &Graph) -> Reach {
    let mut reached: HashMap<String, Vec<Holder>> = HashMap::new();
    let mut covered: HashMap<i64, Vec<Holder>> = HashMap::new();
    // Context items first, then what `/new` pruned from the context (still covering).
    let roots = g
        .context
        .iter()
        .filter(|item| item.target_conversation == Some(g.conversation_id))
        .map(|item| {
            (
                Holder::Context(item.ordinal),
                item.message_id,
                item.summary_id.clone(),
            )
        })
        .chain(
            g.pruned
                .iter()
                .map(|(p, m, s)| (Holder::Pruned(*p), *m, s.clone())),
        );
    for (root_holder, message_id, summary_id) in roots {
        if let Some(m) = message_id {
            covered.entry(m).or_default().push(root_holder);
            continue;
        }
        let Some(root) = summary_id else {
            continue;
        };
        let mut stack = vec![(root, root_holder)];
        while let Some((id, holder)) = stack.pop() {
            let seen = reached.entry(id.clone()).or_default();
            seen.push(holder);
            if seen.len() > 1 {
                continue;
            }
            for (_, m) in g.msg_sources.get(&id).into_iter().flatten() {
                if g.owns_message(*m) {
                    covered
                        .entry(*m)
                        .or_default()
                        .push(Holder::Summary(id.clone()));
                }
            }
            for src in g.own_sources(&id).into_iter().rev() {
                stack.push((src.to_owned(), Holder::Summary(id.clone())));
            }
        }
    }
    (reached, covered)
}

/// Messages under `id` when it and everything below it is unreachable and every
/// one of those messages is uncovered.
fn lost_below(
    g: &Graph,
    a: &Analysis,
    id: &str,
    lost: &HashMap<String, Vec<i64>>,
    uncovered: &HashSet<i64>,
) -> Option<Vec<i64>> {
    if a.reached.contains_key(id) {
        return None;
    }
    let mut out = Vec::new();
    for (_, m) in g.msg_sources.get(id).into_iter().flatten() {
        if !uncovered.contains(m) {
            return None;
        }
        out.push(*m);
    }
    for (_, src) in g.sources.get(id).into_iter().flatten() {
        out.extend(lost.get(src)?.iter().copied());
    }
    (!out.is_empty()).then_some(out)
}

fn units(g: &Graph, a: &Analysis) -> Vec<Unit> {
    let uncovered: HashSet<i64> = g
        .own_messages
        .iter()
        .copied()
        .filter(|m| !a.covered.contains_key(m))
        .collect();
    if uncovered.is_empty() {
        return Vec::new();
    }
    let mut lost: HashMap<String, Vec<i64>> = HashMap::new();
    for id in &a.order {
        if let Some(ms) = lost_below(g, a, id, &lost, &uncovered) {
            lost.insert(id.clone(), ms);
        }
    }
    let derived = g.derived_of();
    let seq = |m: &i64| g.messages.get(m).map(|r| r.seq).unwrap_or(i64::MAX);
    let mut roots: Vec<(&String, &Vec<i64>)> = lost
        .iter()
        .filter(|(id, _)| {
            !derived
                .get(id.as_str())
                .is_some_and(|ds| ds.iter().any(|d| lost.contains_key(*d)))
        })
        .collect();
    roots.sort_by_key(|(id, ms)| (ms.iter().map(seq).min(), (*id).clone()));
    let mut claimed: HashSet<i64> = HashSet::new();
    let mut out = Vec::new();
    for (id, ms) in roots {
        if ms.iter().any(|m| claimed.contains(m)) {
            continue;
        }
        claimed.extend(ms.iter().copied());
        out.push(Unit::Summary {
            id: id.clone(),
            messages: ms.clone(),
        });
    }
    for m in &g.own_messages {
        if uncovered.contains(m) && !claimed.contains(m) {
            out.push(Unit::Message(*m));
        }
    }
    out
}

/// Said of ordinal gaps a compaction run marked (`Graph::gaps_marked`).
const MARKED_GAPS: &str = "; a compaction run left them (it is closing them now, or it was interrupted: the next open or compaction closes them)";

fn check_context(g: &Graph, v: &mut Vec<Violation>) {
    let c = Some(g.conversation_id);
    let bad: Vec<i64> = g
        .context
        .iter()
        .enumerate()
        .filter(|(i, item)| item.ordinal != *i as i64)
        .map(|(_, item)| item.ordinal)
        .collect();
    if !bad.is_empty() {
        let n = g.context.len();
        let all: Vec<i64> = g.context.iter().map(|i| i.ordinal).collect();
        v.push(
            Violation::new(
                Kind::OrdinalGap,
                c,
                format!(
                    "context ordinals of conversation {} are not 0..{}: {} item(s) out of place (ordinals {}){}",
                    g.conversation_id,
                    n as i64 - 1,
                    bad.len(),
                    list(&bad),
                    if g.gaps_marked { MARKED_GAPS } else { "" }
                ),
            )
            .repairable()
            .details(json!({ "ordinals": all })),
        );
    }
    for item in &g.context {
        let what = match (&item.message_id, &item.summary_id) {
            (Some(m), _) => format!("message {m}"),
            (_, Some(s)) => format!("summary {s}"),
            _ => "nothing".to_owned(),
        };
        let (kind, msg, repairable) = match item.target_conversation {
            None => (
                Kind::ContextDangling,
                format!(
                    "context item {} points at {what}, which does not exist",
                    item.ordinal
                ),
                true,
            ),
            Some(other) if other != g.conversation_id => (
                Kind::ContextForeign,
                format!(
                    "context item {} points at {what} of conversation {other}",
                    item.ordinal
                ),
                false,
            ),
            _ => continue,
        };
        let mut viol = Violation::new(kind, c, msg)
            .summaries(item.summary_id.iter().cloned().collect())
            .messages(item.message_id.into_iter().collect())
            .details(json!({ "ordinal": item.ordinal }));
        viol.repairable = repairable;
        v.push(viol);
    }
}

fn check_links(g: &Graph, v: &mut Vec<Violation>) {
    for l in &g.bad_links {
        let target_desc = if l.table == "summary_messages" {
            format!("message {}", l.target)
        } else {
            format!("summary {}", l.target)
        };
        let (kind, msg) = match (l.owner_conversation, l.target_conversation) {
            (None, _) => (
                Kind::LinkDangling,
                format!(
                    "{} row of missing summary {} points at {target_desc}",
                    l.table, l.summary_id
                ),
            ),
            (_, None) => (
                Kind::LinkDangling,
                format!(
                    "{} row of {} points at {target_desc}, which does not exist",
                    l.table, l.summary_id
                ),
            ),
            (Some(a), Some(b)) => (
                Kind::LinkForeign,
                format!(
                    "{} row links {} (conversation {a}) to {target_desc} (conversation {b})",
                    l.table, l.summary_id
                ),
            ),
        };
        let mut viol = Violation::new(kind, Some(g.conversation_id), msg)
            .summaries(vec![l.summary_id.clone()])
            .details(json!({ "table": l.table, "target": l.target }));
        if l.table == "summary_messages" {
            viol.message_ids = l.target.parse().into_iter().collect();
        } else {
            viol.summary_ids.push(l.target.clone());
        }
        viol.repairable = kind == Kind::LinkDangling;
        v.push(viol);
    }
}

fn check_sources(g: &Graph, v: &mut Vec<Violation>) {
    for id in &g.own_summaries {
        let has_msgs = g.msg_sources.get(id).is_some_and(|x| !x.is_empty());
        let has_sums = g.sources.get(id).is_some_and(|x| !x.is_empty());
        let msg = match (has_msgs, has_sums) {
            (false, false) => {
                format!("summary {id} has no sources (nothing it was made from is linked)")
            }
            (true, true) => format!("summary {id} lists both messages and summaries as sources"),
            _ => continue,
        };
        v.push(
            Violation::new(Kind::SummarySources, Some(g.conversation_id), msg)
                .summaries(vec![id.clone()]),
        );
    }
}

fn check_reach(g: &Graph, a: &Analysis, v: &mut Vec<Violation>) {
    let c = Some(g.conversation_id);
    let mut twice: Vec<(&String, &Vec<Holder>)> =
        a.reached.iter().filter(|(_, h)| h.len() > 1).collect();
    twice.sort_by_key(|(id, _)| (*id).clone());
    for (id, holders) in twice {
        let names: Vec<String> = holders.iter().map(|h| h.to_string()).collect();
        v.push(
            Violation::new(
                Kind::ReachedTwice,
                c,
                format!(
                    "summary {id} is reached {} times, from {}",
                    holders.len(),
                    names.join(" and ")
                ),
            )
            .summaries(vec![id.clone()])
            .details(json!({ "holders": names })),
        );
    }
    for m in &g.own_messages {
        let Some(h) = a.covered.get(m).filter(|h| h.len() > 1) else {
            continue;
        };
        let names: Vec<String> = h.iter().map(|h| h.to_string()).collect();
        let sums: Vec<String> = h
            .iter()
            .filter_map(|h| match h {
                Holder::Summary(s) => Some(s.clone()),
                Holder::Context(_) | Holder::Pruned(_) => None,
            })
            .collect();
        v.push(
            Violation::new(
                Kind::CoveredTwice,
                c,
                format!(
                    "message {m} is covered {} times, by {}",
                    h.len(),
                    names.join(" and ")
                ),
            )
            .messages(vec![*m])
            .summaries(sums)
            .details(json!({ "holders": names })),
        );
    }
}

fn check_units(g: &Graph, a: &Analysis, v: &mut Vec<Violation>) {
    let c = Some(g.conversation_id);
    let mut lone = Vec::new();
    for r in &a.restores {
        let (u, holder) = match r {
            Restore::Link { holder, unit } => (unit, Some(holder)),
            Restore::Context(unit) => (unit, None),
        };
        let fix = match holder {
            Some(h) => format!("; {h} provably held it and apply links it back"),
            None => "; apply puts it back into the context list".to_owned(),
        };
        match u {
            Unit::Summary { id, messages } => {
                let Some(s) = g.summaries.get(id) else {
                    continue;
                };
                v.push(
                    Violation::new(
                        Kind::UncoveredMessages,
                        c,
                        format!(
                            "summary {id} (d{}, {}) is reachable from no context item, so its {} message(s) {} are covered by nothing{fix}",
                            s.depth,
                            s.kind,
                            messages.len(),
                            list(messages)
                        ),
                    )
                    .summaries(vec![id.clone()])
                    .details(json!({ "restoreTo": holder }))
                    .messages(messages.clone())
                    .repairable(),
                );
            }
            Unit::Message(m) => match holder {
                Some(h) => v.push(
                    Violation::new(
                        Kind::UncoveredMessages,
                        c,
                        format!("message {m} is covered neither by the context list nor by any summary{fix}"),
                    )
                    .messages(vec![*m])
                    .repairable()
                    .details(json!({ "restoreTo": h })),
                ),
                None => lone.push(*m),
            },
        }
    }
    if !lone.is_empty() {
        v.push(
            Violation::new(
                Kind::UncoveredMessages,
                c,
                format!(
                    "message(s) {} are covered neither by the context list nor by any summary; apply puts them back into the context list",
                    list(&lone)
                ),
            )
            .messages(lone)
            .repairable(),
        );
    }
}

fn check_metadata(g: &Graph, a: &Analysis, v: &mut Vec<Violation>) {
    for id in &a.order {
        let (Some(s), Some(m)) = (g.summaries.get(id), a.expected.get(id)) else {
            continue;
        };
        let diffs = meta::diff(s, m);
        if diffs.is_empty() {
            continue;
        }
        let text: Vec<String> = diffs
            .iter()
            .map(|d| format!("{} is {} but should be {}", d.column, d.stored, d.expected))
            .collect();
        let fields: Vec<serde_json::Value> = diffs
            .iter()
            .map(|d| json!({ "column": d.column, "stored": d.stored, "expected": d.expected }))
            .collect();
        v.push(
            Violation::new(
                Kind::Metadata,
                Some(g.conversation_id),
                format!("summary {id}: {}", text.join("; ")),
            )
            .summaries(vec![id.clone()])
            .repairable()
            .details(json!({ "fields": fields })),
        );
    }
}
