//! Retention policies and the plan they make: which conversations to archive, and
//! which to archive and then remove, oldest activity first.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, LcmError, Result};
use crate::store::retention::ConversationAge;

/// A conversation is never pruned for the size cap while it had activity within
/// this many days (the fresh tail of a session in use stays).
pub const CAP_MIN_IDLE_DAYS: f64 = 1.0;

/// One retention policy (`retention` option, first matching policy wins).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct RetentionPolicy {
    /// Session-key glob (`*` within one `:`-separated segment, `**` across
    /// segments, `?` one character); a conversation without a key is matched by
    /// its session id.
    #[serde(rename = "match")]
    #[ts(rename = "match")]
    pub pattern: String,
    /// Write an archive of conversations idle for more than this many days (they
    /// stay in the database).
    #[serde(default)]
    pub archive_after_days: Option<f64>,
    /// Archive, then remove from the database, conversations idle for more than
    /// this many days (every row: messages, parts, summaries, links, index rows).
    #[serde(default)]
    pub prune_after_days: Option<f64>,
}

impl RetentionPolicy {
    /// Checks the policy's values.
    pub fn validate(&self) -> Result<()> {
        if self.pattern.trim().is_empty() {
            return Err(config(
                "a retention policy needs `match`, a session-key glob",
            ));
        }
        for (name, v) in [
            ("archiveAfterDays", self.archive_after_days),
            ("pruneAfterDays", self.prune_after_days),
        ] {
            if let Some(d) = v {
                if !d.is_finite() || d < 0.0 {
                    return Err(config(format!(
                        "retention `{name}` of {:?} must be a number of days ≥ 0",
                        self.pattern
                    )));
                }
            }
        }
        if self.archive_after_days.is_none() && self.prune_after_days.is_none() {
            return Err(config(format!(
                "retention policy {:?} needs archiveAfterDays or pruneAfterDays",
                self.pattern
            )));
        }
        Ok(())
    }

    /// Whether the policy applies to a conversation.
    pub fn matches(&self, c: &ConversationAge) -> bool {
        let key = c.session_key.as_deref().unwrap_or(&c.session_id);
        glob_matches(&self.pattern, key.trim())
    }
}

fn config(msg: impl Into<String>) -> LcmError {
    LcmError::new(ErrorCode::Config, msg)
}

/// Session-key glob matching, as the plugin's `ignoreSessionPatterns`: `*` within
/// one `:`-separated segment, `**` across segments, `?` one character but `:`.
pub fn glob_matches(glob: &str, key: &str) -> bool {
    let g: Vec<char> = glob.chars().collect();
    let k: Vec<char> = key.chars().collect();
    // memo[i][j]: glob from i matches key from j (dynamic programming, linear
    // in glob × key: no backtracking blow-up).
    let mut memo = vec![vec![None::<bool>; k.len() + 1]; g.len() + 1];
    fn go(g: &[char], k: &[char], i: usize, j: usize, memo: &mut Vec<Vec<Option<bool>>>) -> bool {
        if let Some(v) = memo[i][j] {
            return v;
        }
        let v = match g.get(i) {
            None => j == k.len(),
            Some('*') if g.get(i + 1) == Some(&'*') => {
                (j..=k.len()).any(|jj| go(g, k, i + 2, jj, memo))
            }
            Some('*') => {
                let mut jj = j;
                loop {
                    if go(g, k, i + 1, jj, memo) {
                        break true;
                    }
                    if jj < k.len() && k[jj] != ':' {
                        jj += 1;
                    } else {
                        break false;
                    }
                }
            }
            Some('?') => j < k.len() && k[j] != ':' && go(g, k, i + 1, j + 1, memo),
            Some(c) => j < k.len() && k[j] == *c && go(g, k, i + 1, j + 1, memo),
        };
        memo[i][j] = Some(v);
        v
    }
    go(&g, &k, 0, 0, &mut memo)
}

/// Parameters of `prune`.
#[derive(Debug, Default, Clone, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct PruneParams {
    /// Report what would be archived and removed, change nothing.
    #[serde(default)]
    pub dry_run: Option<bool>,
    /// At most this many conversations per call (default 16): the plugin's
    /// `maintain` calls it in small steps.
    #[serde(default)]
    pub limit: Option<usize>,
    /// The time ages are measured from (ISO 8601 or SQLite UTC text); default now.
    /// For simulations and tests.
    #[serde(default)]
    pub now: Option<String>,
}

/// What `prune` does to one conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum PruneKind {
    /// An archive is written; the rows stay.
    Archive,
    /// An archive is written, then the rows are removed.
    Prune,
}

/// Why a conversation was picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum PruneReason {
    /// Idle longer than its policy's days.
    Age,
    /// The database is over `maxDatabaseBytes`: oldest first, ahead of its days.
    Cap,
}

/// One conversation archived (and removed), or that would be.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct PruneAction {
    /// The conversation.
    pub conversation_id: i64,
    /// Its session key, else its session id.
    pub session: String,
    /// The policy's `match`.
    pub policy: String,
    /// `archive` or `prune`.
    pub action: PruneKind,
    /// `age` or `cap`.
    pub reason: PruneReason,
    /// Its newest message's time (SQLite UTC text).
    pub last_activity: String,
    /// Days since then.
    pub idle_days: f64,
    /// Messages it holds.
    pub messages: i64,
    /// The archive's directory (written, reused, or that would be written).
    pub archive: Option<String>,
    /// Done (false in a dry run, or when the conversation changed meanwhile).
    pub done: bool,
    /// Why it was not done, when it was not (dry run aside).
    pub skipped: Option<String>,
}

/// What `prune` did (or would do).
#[derive(Debug, Clone, Default, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct PruneReport {
    /// Nothing was changed.
    pub dry_run: bool,
    /// The conversations, oldest activity first.
    pub actions: Vec<PruneAction>,
    /// Conversations due beyond `limit` (a later call takes them).
    pub remaining: usize,
    /// The database's bytes (pages × page size) before.
    pub database_bytes: i64,
    /// `maxDatabaseBytes`, when set.
    pub max_database_bytes: Option<i64>,
    /// Over the cap before this call.
    pub over_cap: bool,
    /// Over the cap with no policy that could apply: only a warning.
    pub cap_warning: Option<String>,
    /// Messages removed from the database.
    pub messages_removed: i64,
    /// Bytes given back to the file system afterwards (incremental vacuum).
    pub bytes_reclaimed: i64,
}

/// One planned step.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The conversation.
    pub conv: ConversationAge,
    /// The policy's pattern.
    pub policy: String,
    /// What to do.
    pub kind: PruneKind,
    /// Why.
    pub reason: PruneReason,
    /// Days idle.
    pub idle_days: f64,
}

/// Days between a stored time and `now` (0 when unreadable or in the future).
pub fn idle_days(last: &str, now: DateTime<Utc>) -> f64 {
    crate::timestamp::parse(last)
        .map(|t| ((now - t).num_milliseconds() as f64 / 86_400_000.0).max(0.0))
        .unwrap_or(0.0)
}

/// The plan: conversations (oldest activity first) each with the first policy
/// that matches it. `archived` says whether a conversation already has a current
/// archive (archive-only steps are then not repeated). Over the cap
/// (`excess_bytes > 0`), conversations whose policy prunes (has `pruneAfterDays`)
/// and that are idle more than [`CAP_MIN_IDLE_DAYS`] are pruned ahead of their
/// days, oldest first, until the estimate of what they hold (`bytes_per_message`
/// each) covers the excess. A policy that only archives never removes anything.
pub fn plan(
    convs: &[ConversationAge],
    policies: &[RetentionPolicy],
    now: DateTime<Utc>,
    excess_bytes: i64,
    bytes_per_message: f64,
    archived: &dyn Fn(&ConversationAge) -> bool,
) -> Vec<Planned> {
    let mut out = Vec::new();
    let mut freed = 0f64;
    for c in convs {
        let Some(p) = policies.iter().find(|p| p.matches(c)) else {
            continue;
        };
        let idle = idle_days(&c.last_activity, now);
        let step = |kind, reason| Planned {
            conv: c.clone(),
            policy: p.pattern.clone(),
            kind,
            reason,
            idle_days: idle,
        };
        if p.prune_after_days.is_some_and(|d| idle > d) {
            freed += c.message_count as f64 * bytes_per_message;
            out.push(step(PruneKind::Prune, PruneReason::Age));
        } else if p.prune_after_days.is_some()
            && excess_bytes > 0
            && (freed as i64) < excess_bytes
            && idle > CAP_MIN_IDLE_DAYS
        {
            freed += c.message_count as f64 * bytes_per_message;
            out.push(step(PruneKind::Prune, PruneReason::Cap));
        } else if p.archive_after_days.is_some_and(|d| idle > d) && !archived(c) {
            out.push(step(PruneKind::Archive, PruneReason::Age));
        }
    }
    out
}

/// Parses `now` (ISO 8601 or SQLite UTC text), else the clock.
pub fn now_of(p: Option<&str>) -> Result<DateTime<Utc>> {
    match p {
        None => Ok(Utc::now()),
        Some(s) => crate::timestamp::parse(s)
            .ok_or_else(|| LcmError::invalid(format!("prune `now` {s:?} is not a time"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(id: i64, key: &str, last: &str, n: i64) -> ConversationAge {
        ConversationAge {
            conversation_id: id,
            session_id: format!("s{id}"),
            session_key: Some(key.into()),
            active: true,
            last_activity: last.into(),
            message_count: n,
        }
    }

    #[test]
    fn globs_match_within_and_across_segments() {
        assert!(glob_matches("agent:*:cron:**", "agent:main:cron:job:run:7"));
        assert!(!glob_matches("agent:*:cron:*", "agent:main:cron:job:run:7"));
        assert!(glob_matches("agent:*:cron:*", "agent:main:cron:job"));
        assert!(!glob_matches("agent:*:cron", "agent:main:sub:cron"));
        assert!(glob_matches("agent:main:heartbeat", "agent:main:heartbeat"));
        assert!(glob_matches("**", "anything:at:all"));
        assert!(glob_matches("agent:?ain:*", "agent:main:x"));
        assert!(!glob_matches("agent:?:*", "agent::x"));
        // Many stars, long key: no blow-up.
        let key = "a:".repeat(200);
        assert!(!glob_matches("**b**b**b**b**b", &key));
    }

    #[test]
    fn the_first_matching_policy_decides_and_the_cap_prunes_oldest_first() {
        let now = crate::timestamp::parse("2026-12-07 00:00:00").unwrap();
        let convs = vec![
            conv(1, "agent:main:cron:a:run:1", "2026-11-01 00:00:00", 10),
            conv(2, "agent:main:main", "2026-11-02 00:00:00", 100),
            conv(3, "agent:main:cron:a:run:2", "2026-12-03 00:00:00", 10),
            conv(4, "agent:main:cron:a:run:3", "2026-12-06 12:00:00", 10),
        ];
        let policies = vec![
            RetentionPolicy {
                pattern: "agent:*:cron:**".into(),
                archive_after_days: Some(2.0),
                prune_after_days: Some(14.0),
            },
            RetentionPolicy {
                pattern: "**".into(),
                archive_after_days: Some(30.0),
                prune_after_days: None,
            },
        ];
        let p = plan(&convs, &policies, now, 0, 1000.0, &|_| false);
        let got: Vec<_> = p.iter().map(|x| (x.conv.conversation_id, x.kind)).collect();
        assert_eq!(
            got,
            vec![
                (1, PruneKind::Prune),
                (2, PruneKind::Archive),
                (3, PruneKind::Archive)
            ]
        );
        // Already archived: not again.
        let p = plan(&convs, &policies, now, 0, 1000.0, &|c| {
            c.conversation_id == 3
        });
        assert_eq!(p.len(), 2);
        // Over the cap by 15 kB: conversation 1 (age) frees 10 kB; the main chat's
        // policy only archives, so the next is 3 (idle 4 days), and then enough;
        // 4 is too fresh anyway.
        let p = plan(&convs, &policies, now, 15_000, 1000.0, &|_| false);
        let got: Vec<_> = p
            .iter()
            .map(|x| (x.conv.conversation_id, x.kind, x.reason))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, PruneKind::Prune, PruneReason::Age),
                (2, PruneKind::Archive, PruneReason::Age),
                (3, PruneKind::Prune, PruneReason::Cap),
            ]
        );
        let bad = RetentionPolicy {
            pattern: "x".into(),
            archive_after_days: None,
            prune_after_days: Some(-1.0),
        };
        assert_eq!(bad.validate().unwrap_err().code, ErrorCode::Config);
    }
}
