//! The text the `lcm_grep` tool prints (the reference layout): a `## LCM Grep
//! Results` header, pattern / mode / scope / filter lines, `### Messages` lines
//! `- [conv=C msg#ID] (role, time): snippet` and `### Summaries` lines
//! `- [conv=C sum_…] (kind, time): snippet`, capped at 40,000 characters (and at
//! a grant's remaining tokens).

use super::text::{cut_chars, one_line};
use super::types::GrepResult;
use crate::timeformat::Zone;
use crate::tokens;

/// Character cap of the whole text.
pub const MAX_TEXT_CHARS: usize = 40_000;

fn time(zone: &Zone, iso: &str) -> String {
    crate::timestamp::parse(iso)
        .map(|t| zone.format_timestamp(t))
        .unwrap_or_else(|| "-".into())
}

fn time_ms(zone: &Zone, ms: Option<i64>, open: &str) -> String {
    ms.and_then(crate::timestamp::from_millis)
        .map(|t| zone.format_timestamp(t))
        .unwrap_or_else(|| open.into())
}

struct Out {
    lines: Vec<String>,
    chars: usize,
    tokens: i64,
    budget: Option<i64>,
    full: bool,
}

impl Out {
    fn head(&mut self, line: String) {
        self.chars += line.len() + 1;
        self.tokens += tokens::estimate(&line) + 1;
        self.lines.push(line);
    }

    /// Adds a result line unless a cap is reached (then a truncation line, once).
    fn item(&mut self, line: String) -> bool {
        let t = tokens::estimate(&line) + 1;
        let over_chars = self.chars + line.len() > MAX_TEXT_CHARS;
        let over_budget = self.budget.is_some_and(|b| self.tokens + t > b);
        if self.full || over_chars || over_budget {
            if !self.full {
                self.lines
                    .push("*(truncated — more results available)*".into());
                self.full = true;
            }
            return false;
        }
        self.chars += line.len() + 1;
        self.tokens += t;
        self.lines.push(line);
        true
    }
}

/// Renders a grep result.
pub fn grep_text(
    r: &GrepResult,
    since: Option<i64>,
    before: Option<i64>,
    zone: &Zone,
    budget: Option<i64>,
) -> String {
    let mut o = Out {
        lines: Vec::new(),
        chars: 0,
        tokens: 0,
        budget,
        full: false,
    };
    o.head("## LCM Grep Results".into());
    o.head(format!("**Pattern:** `{}`", r.pattern));
    o.head(format!(
        "**Mode:** {} | **Scope:** {} | **Sort:** {}",
        r.mode.as_str(),
        r.scope.as_str(),
        r.sort.as_str()
    ));
    o.head(match &r.conversation_ids {
        None => "**Conversation scope:** all conversations".into(),
        Some(c) => format!(
            "**Conversation scope:** {}",
            c.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
        ),
    });
    if since.is_some() || before.is_some() {
        o.head(format!(
            "**Time filter:** since {} | before {}",
            time_ms(zone, since, "-∞"),
            time_ms(zone, before, "+∞")
        ));
    }
    o.head(format!("**Total matches:** {}", r.total_matches));
    if r.truncated {
        o.head("**Note:** the search stopped at its scan budget; narrow the pattern with a literal word, a conversation or a time filter to cover everything.".into());
    }
    o.head(String::new());
    if !r.messages.is_empty() {
        o.head("### Messages".into());
        o.head(String::new());
        for m in &r.messages {
            let line = format!(
                "- [conv={} msg#{}] ({}, {}): {}",
                m.conversation_id,
                m.message_id,
                m.role,
                time(zone, &m.created_at),
                cut_chars(&one_line(&m.snippet), 200)
            );
            if !o.item(line) {
                break;
            }
        }
        o.head(String::new());
    }
    if !r.summaries.is_empty() && !o.full {
        o.head("### Summaries".into());
        o.head(String::new());
        for s in &r.summaries {
            let line = format!(
                "- [conv={} {}] ({}, {}): {}",
                s.conversation_id,
                s.summary_id,
                s.kind,
                time(zone, &s.created_at),
                cut_chars(&one_line(&s.snippet), 200)
            );
            if !o.item(line) {
                break;
            }
        }
        o.head(String::new());
    }
    if r.total_matches == 0 {
        o.head("No matches found.".into());
    }
    o.lines.join("\n")
}
