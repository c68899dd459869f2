//! Full-text tables against their base tables, as violations: the differences
//! come from [`crate::store::fts_check`] (which also repairs them).

use serde_json::json;

use super::violation::{list, Kind, Violation};
pub use crate::store::fts_check::{
    diff_messages, diff_summaries, fix_summaries, index_ok, rebuild, rebuild_messages,
    summary_tables, MessageFtsDiff, SummaryFtsDiff,
};

fn ids(v: &[(String, i64)]) -> Vec<String> {
    v.iter().map(|(s, _)| s.clone()).collect()
}

/// The violations of one summary full-text table.
pub fn summary_violations(table: &str, d: &SummaryFtsDiff) -> Vec<Violation> {
    let mut v = Vec::new();
    let details = json!({ "table": table });
    for (conv, s) in &d.missing {
        v.push(
            Violation::new(
                Kind::FtsMissing,
                Some(*conv),
                format!("{table} has no row for summary {}", list(s)),
            )
            .summaries(s.clone())
            .repairable()
            .details(details.clone()),
        );
    }
    for (conv, rows) in &d.outdated {
        let s = ids(rows);
        v.push(
            Violation::new(
                Kind::FtsOutdated,
                Some(*conv),
                format!("{table} holds outdated text for summary {}", list(&s)),
            )
            .summaries(s)
            .repairable()
            .details(details.clone()),
        );
    }
    for (conv, rows) in &d.duplicate {
        let s = ids(rows);
        v.push(
            Violation::new(
                Kind::FtsDuplicate,
                Some(*conv),
                format!("{table} holds more than one row for summary {}", list(&s)),
            )
            .summaries(s)
            .repairable()
            .details(details.clone()),
        );
    }
    if !d.extra.is_empty() {
        let s = ids(&d.extra);
        v.push(
            Violation::new(
                Kind::FtsExtra,
                None,
                format!(
                    "{table} holds rows of summaries that do not exist: {}",
                    list(&s)
                ),
            )
            .summaries(s)
            .repairable()
            .details(details),
        );
    }
    v
}

/// The violations of `messages_fts` (only those of `scope`, plus unattributed ones).
pub fn message_violations(d: &MessageFtsDiff, scope: Option<i64>) -> Vec<Violation> {
    let mut v = Vec::new();
    let details = json!({ "table": "messages_fts" });
    let keep = |c: &i64| scope.is_none_or(|s| s == *c);
    for (c, ms) in d.missing.iter().filter(|(c, _)| keep(c)) {
        v.push(
            Violation::new(
                Kind::FtsMissing,
                Some(*c),
                format!("messages_fts does not index message {}", list(ms)),
            )
            .messages(ms.clone())
            .repairable()
            .details(details.clone()),
        );
    }
    for (c, ms) in d.outdated.iter().filter(|(c, _)| keep(c)) {
        v.push(
            Violation::new(
                Kind::FtsOutdated,
                Some(*c),
                format!("messages_fts indexes outdated text of message {}", list(ms)),
            )
            .messages(ms.clone())
            .repairable()
            .details(details.clone()),
        );
    }
    if !d.extra.is_empty() {
        v.push(
            Violation::new(
                Kind::FtsExtra,
                None,
                format!(
                    "messages_fts indexes messages that do not exist: {}",
                    list(&d.extra)
                ),
            )
            .messages(d.extra.clone())
            .repairable()
            .details(details.clone()),
        );
    }
    if d.unlocated {
        v.push(
            Violation::new(
                Kind::FtsIndex,
                None,
                "messages_fts does not match the text of messages (no single row could be named)",
            )
            .repairable()
            .details(details),
        );
    }
    v
}
