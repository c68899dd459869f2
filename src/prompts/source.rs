//! Source text of a summarization: what the prompt wraps in `<conversation_segment>` /
//! `<conversation_to_condense>`. Leaf sources are messages, each a header line
//! `[2026-02-17 15:37 PST] [user]` followed by its content; condensed sources are child
//! summaries, each `[2026-02-17 15:37–17:21 PST]` followed by its content. Blocks are
//! joined by a blank line; blocks with no text are left out.

use chrono::{DateTime, Utc};

use crate::error::{LcmError, Result};
use crate::timeformat::Zone;
use crate::timestamp;

/// A time from a JSON value: epoch milliseconds, or a timestamp string (ISO,
/// RFC 3339, SQLite UTC text); `LCM_INVALID_INPUT` otherwise.
pub fn parse_time_value(v: &serde_json::Value) -> Result<DateTime<Utc>> {
    let t = match v {
        serde_json::Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
            .and_then(timestamp::from_millis),
        serde_json::Value::String(s) => timestamp::parse(s),
        _ => None,
    };
    t.ok_or_else(|| {
        LcmError::invalid(format!(
            "not a timestamp: {v}; pass epoch milliseconds, an ISO string or a Date"
        ))
    })
}

/// One message of a leaf chunk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceMessage {
    /// When the message was created (`messages.created_at`).
    pub created_at: Option<DateTime<Utc>>,
    /// `user`, `assistant`, `tool`, `system`, …
    pub role: String,
    /// The message text.
    pub content: String,
}

impl SourceMessage {
    /// Builds a message from a stored timestamp string (SQLite UTC text, ISO or
    /// RFC 3339; unparseable text counts as no timestamp).
    pub fn new(created_at: &str, role: &str, content: impl Into<String>) -> SourceMessage {
        SourceMessage {
            created_at: timestamp::parse(created_at),
            role: role.to_owned(),
            content: content.into(),
        }
    }
}

/// One child summary of a condensed chunk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceSummary {
    /// Earliest source time (`summaries.earliest_at`, else `created_at`).
    pub earliest_at: Option<DateTime<Utc>>,
    /// Latest source time (`summaries.latest_at`, else `created_at`).
    pub latest_at: Option<DateTime<Utc>>,
    /// The summary text.
    pub content: String,
}

impl SourceSummary {
    /// Builds a child from stored timestamp strings (either may be empty).
    pub fn new(earliest_at: &str, latest_at: &str, content: &str) -> SourceSummary {
        SourceSummary {
            earliest_at: timestamp::parse(earliest_at),
            latest_at: timestamp::parse(latest_at),
            content: content.to_owned(),
        }
    }
}

/// The header of a leaf block: `[2026-02-17 15:37 PST] [user]`, `[user]` without a
/// timestamp, the timestamp alone without a role.
pub fn message_header(m: &SourceMessage, zone: &Zone) -> String {
    let role = m.role.trim();
    match (m.created_at, role.is_empty()) {
        (Some(t), false) => format!("[{}] [{role}]", zone.format_timestamp(t)),
        (Some(t), true) => format!("[{}]", zone.format_timestamp(t)),
        (None, false) => format!("[{role}]"),
        (None, true) => String::new(),
    }
}

/// The header of a condensed block: `[time range]`, or empty without times.
pub fn summary_header(s: &SourceSummary, zone: &Zone) -> String {
    match (s.earliest_at.or(s.latest_at), s.latest_at.or(s.earliest_at)) {
        (Some(a), Some(b)) => format!("[{}]", zone.format_range(a, b)),
        _ => String::new(),
    }
}

/// One block per item with text, blank-line separated, written into one string:
/// the item's header on its own line above its trimmed body; an item whose body
/// is blank is left out, and an empty header adds no line.
fn blocks<T>(items: &[T], header: impl Fn(&T) -> String, body: impl Fn(&T) -> &str) -> String {
    // The texts plus room for a header and a separator each.
    let mut out = String::with_capacity(items.iter().map(|i| body(i).len() + 40).sum());
    for item in items {
        let text = body(item).trim();
        if text.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        let head = header(item);
        if !head.is_empty() {
            out.push_str(&head);
            out.push('\n');
        }
        out.push_str(text);
    }
    out
}

/// The leaf source text: one block per message with text, blank-line separated.
pub fn leaf_source_text(messages: &[SourceMessage], zone: &Zone) -> String {
    blocks(messages, |m| message_header(m, zone), |m| &m.content)
}

/// The condensed source text: one block per child summary with text.
pub fn condensed_source_text(children: &[SourceSummary], zone: &Zone) -> String {
    blocks(children, |s| summary_header(s, zone), |s| &s.content)
}

/// The formatted range covering every given time, if any (the `time_range` prompt
/// variable).
pub fn time_range<I: IntoIterator<Item = DateTime<Utc>>>(times: I, zone: &Zone) -> Option<String> {
    let mut it = times.into_iter();
    let first = it.next()?;
    let (lo, hi) = it.fold((first, first), |(lo, hi), t| (lo.min(t), hi.max(t)));
    Some(zone.format_range(lo, hi))
}

/// The range covered by a leaf chunk.
pub fn messages_time_range(messages: &[SourceMessage], zone: &Zone) -> Option<String> {
    time_range(messages.iter().filter_map(|m| m.created_at), zone)
}

/// The range covered by a condensed chunk.
pub fn summaries_time_range(children: &[SourceSummary], zone: &Zone) -> Option<String> {
    let times = children
        .iter()
        .flat_map(|s| [s.earliest_at, s.latest_at])
        .flatten();
    time_range(times, zone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_blocks_have_timestamp_and_role_headers() {
        let la = Zone::parse("America/Los_Angeles").unwrap();
        let msgs = [
            SourceMessage::new("2026-02-17 23:37:00", "user", "Fix the build.\n"),
            SourceMessage::new("", "assistant", "  "),
            SourceMessage::new(
                "2026-02-18T01:21:00Z",
                "assistant",
                "Done: cargo test passes.",
            ),
            SourceMessage::new("garbage", "tool", "exit 0"),
        ];
        assert_eq!(
            leaf_source_text(&msgs, &la),
            "[2026-02-17 15:37 PST] [user]\nFix the build.\n\n\
             [2026-02-17 17:21 PST] [assistant]\nDone: cargo test passes.\n\n[tool]\nexit 0"
        );
        assert_eq!(
            messages_time_range(&msgs, &la).unwrap(),
            "2026-02-17 15:37–17:21 PST"
        );
    }

    #[test]
    fn time_values() {
        use serde_json::json;
        let t = parse_time_value(&json!(1771371420000i64)).unwrap();
        assert_eq!(Zone::utc().format_timestamp(t), "2026-02-17 23:37 UTC");
        assert_eq!(
            parse_time_value(&json!("2026-02-17T23:37:00.000Z")).unwrap(),
            t
        );
        assert_eq!(parse_time_value(&json!("2026-02-17 23:37:00")).unwrap(), t);
        assert!(parse_time_value(&json!("yesterday")).is_err());
        assert!(parse_time_value(&json!(null)).is_err());
        assert!(parse_time_value(&json!(1e300)).is_err());
    }

    #[test]
    fn condensed_blocks_have_range_headers() {
        let utc = Zone::utc();
        let kids = [
            SourceSummary::new("2026-02-17T15:37:00.000Z", "2026-02-17T17:21:00.000Z", "A"),
            SourceSummary::new("", "2026-02-19T09:00:00.000Z", "B"),
            SourceSummary::new("", "", "C"),
        ];
        assert_eq!(
            condensed_source_text(&kids, &utc),
            "[2026-02-17 15:37–17:21 UTC]\nA\n\n[2026-02-19 09:00 UTC]\nB\n\nC"
        );
        assert_eq!(
            summaries_time_range(&kids, &utc).unwrap(),
            "2026-02-17 – 2026-02-19"
        );
        assert_eq!(summaries_time_range(&kids[2..], &utc), None);
    }

    proptest::proptest! {
        /// The one-buffer source text equals blocks made one by one and joined
        /// (a header line above each trimmed body, blank bodies left out), on any
        /// text: Unicode whitespace (U+00A0, U+3000), CJK, RTL, emoji.
        #[test]
        fn source_text_is_its_blocks_joined(
            texts in proptest::collection::vec(
                proptest::string::string_regex("[ a\n\t\u{a0}\u{3000}漢ש😀]{0,6}").unwrap(),
                0..8,
            ),
            roles in proptest::collection::vec(
                proptest::sample::select(vec!["user", "", " tool "]),
                8,
            ),
        ) {
            let utc = Zone::utc();
            let msgs: Vec<SourceMessage> = texts
                .iter()
                .zip(&roles)
                .map(|(t, r)| SourceMessage::new("2026-02-17 23:37:00", r, t.as_str()))
                .collect();
            let joined = msgs
                .iter()
                .filter(|m| !m.content.trim().is_empty())
                .map(|m| {
                    let h = message_header(m, &utc);
                    let body = m.content.trim();
                    if h.is_empty() { body.to_owned() } else { format!("{h}\n{body}") }
                })
                .collect::<Vec<_>>()
                .join("\n\n");
            proptest::prop_assert_eq!(leaf_source_text(&msgs, &utc), joined);
        }
    }
}
