//! Delegation grants for sub-agent recall. A grant scopes `grep`, `describe` and
//! `expand` to a set of conversations (optionally to the subtrees of some
//! summaries) and carries a token budget consumed across calls.
//!
//! Grants live **in memory in the engine** and are lost when it closes; they are
//! short-lived by design (default TTL 5 minutes). Checks run in the order
//! exists → revoked → expired → scope, then budget: an unknown id is
//! `LCM_NOT_FOUND`, then `LCM_GRANT_REVOKED`, `LCM_GRANT_EXPIRED`,
//! `LCM_GRANT_SCOPE`, `LCM_GRANT_EXHAUSTED`. Revoked and expired grants are kept
//! for an hour after they stop being usable (so late calls get the precise code),
//! then forgotten.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, LcmError, Result};

/// Default time to live.
pub const DEFAULT_TTL_MS: i64 = 5 * 60 * 1000;
/// Default traversal depth limit of expansions under a grant.
pub const DEFAULT_MAX_DEPTH: i64 = 3;
const RETAIN_MS: i64 = 60 * 60 * 1000;

/// Parameters of `createGrant`.
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct CreateGrantParams {
    /// Conversations the grantee may read (at least one).
    pub conversation_ids: Vec<i64>,
    /// Token budget across calls; default `maxExpandTokens`.
    #[serde(default)]
    pub token_cap: Option<i64>,
    /// Time to live in ms; default 300000. Zero or negative gives an expired grant.
    #[serde(default)]
    pub ttl_ms: Option<i64>,
    /// When non-empty, only these summaries (and their sources) may be described
    /// or expanded.
    #[serde(default)]
    pub summary_ids: Option<Vec<String>>,
    /// Depth limit of expansions (default 3).
    #[serde(default)]
    pub max_depth: Option<i64>,
    /// Who issued it (free text, for diagnostics).
    #[serde(default)]
    pub issuer: Option<String>,
}

/// A delegation grant as reported to callers (kept in memory by the engine; lost
/// on close).
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "Grant")]
pub struct GrantInfo {
    /// `grant_` + 12 characters.
    pub grant_id: String,
    /// Allowed conversations.
    pub conversation_ids: Vec<i64>,
    /// Allowed summary subtrees (empty = the whole conversations).
    pub summary_ids: Vec<String>,
    /// Total budget.
    pub token_cap: i64,
    /// Tokens already returned under this grant.
    pub consumed_tokens: i64,
    /// Budget left.
    pub remaining_tokens: i64,
    /// Depth limit of expansions.
    pub max_depth: i64,
    /// Creation time (ISO).
    pub created_at: String,
    /// Expiry time (ISO).
    pub expires_at: String,
    /// Whether it was revoked.
    pub revoked: bool,
    /// Issuer, when given.
    pub issuer: Option<String>,
}

#[derive(Debug, Clone)]
struct Grant {
    info: GrantInfo,
    expires_ms: i64,
    dead_since_ms: Option<i64>,
}

/// The engine's grants.
#[derive(Debug, Default)]
pub struct Registry {
    grants: HashMap<String, Grant>,
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as i64
}

fn iso(ms: i64) -> String {
    crate::timestamp::from_millis(ms)
        .map(crate::timestamp::to_iso)
        .unwrap_or_default()
}

/// What a call wants to touch.
#[derive(Debug, Clone, Default)]
pub struct Access<'a> {
    /// Conversations the call reads.
    pub conversations: &'a [i64],
    /// Whether the call asked for every conversation.
    pub all_conversations: bool,
}

impl Registry {
    /// Creates a grant. `default_cap` is `maxExpandTokens`.
    pub fn create(
        &mut self,
        p: CreateGrantParams,
        default_cap: i64,
        now: i64,
    ) -> Result<GrantInfo> {
        self.prune(now);
        if p.conversation_ids.is_empty() {
            return Err(LcmError::invalid(
                "createGrant needs at least one conversation id",
            ));
        }
        let token_cap = p.token_cap.unwrap_or(default_cap);
        if token_cap < 1 {
            return Err(LcmError::invalid(format!(
                "tokenCap must be at least 1, got {token_cap}"
            )));
        }
        let max_depth = p.max_depth.unwrap_or(DEFAULT_MAX_DEPTH);
        if max_depth < 1 {
            return Err(LcmError::invalid(format!(
                "maxDepth must be at least 1, got {max_depth}"
            )));
        }
        let ttl = p.ttl_ms.unwrap_or(DEFAULT_TTL_MS);
        let expires_ms = now.saturating_add(ttl);
        let id = format!(
            "grant_{}",
            crate::text::head(&uuid::Uuid::new_v4().simple().to_string(), 12)
        );
        let mut conversation_ids = p.conversation_ids;
        conversation_ids.sort_unstable();
        conversation_ids.dedup();
        let info = GrantInfo {
            grant_id: id.clone(),
            conversation_ids,
            summary_ids: p.summary_ids.unwrap_or_default(),
            token_cap,
            consumed_tokens: 0,
            remaining_tokens: token_cap,
            max_depth,
            created_at: iso(now),
            expires_at: iso(expires_ms),
            revoked: false,
            issuer: p.issuer,
        };
        self.grants.insert(
            id,
            Grant {
                info: info.clone(),
                expires_ms,
                dead_since_ms: None,
            },
        );
        Ok(info)
    }

    /// Revokes a grant; false when it is unknown.
    pub fn revoke(&mut self, id: &str, now: i64) -> bool {
        match self.grants.get_mut(id) {
            Some(g) => {
                g.info.revoked = true;
                g.dead_since_ms.get_or_insert(now);
                true
            }
            None => false,
        }
    }

    /// The current state of a grant, if known.
    pub fn info(&self, id: &str) -> Option<GrantInfo> {
        self.grants.get(id).map(|g| g.info.clone())
    }

    /// Checks a call against a grant (exists → revoked → expired → scope → budget)
    /// and returns the grant's state.
    pub fn check(&mut self, id: &str, access: &Access, now: i64) -> Result<GrantInfo> {
        let g = self
            .grants
            .get_mut(id)
            .ok_or_else(|| LcmError::not_found(format!("unknown grant {id:?}")))?;
        if g.info.revoked {
            return Err(LcmError::new(
                ErrorCode::GrantRevoked,
                format!("grant {id} was revoked"),
            ));
        }
        if now >= g.expires_ms {
            g.dead_since_ms.get_or_insert(g.expires_ms);
            return Err(LcmError::new(
                ErrorCode::GrantExpired,
                format!("grant {id} expired at {}", g.info.expires_at),
            ));
        }
        if access.all_conversations {
            return Err(LcmError::new(
                ErrorCode::GrantScope,
                format!(
                    "grant {id} is limited to conversations {:?}; allConversations is not allowed",
                    g.info.conversation_ids
                ),
            ));
        }
        if let Some(c) = access
            .conversations
            .iter()
            .find(|c| !g.info.conversation_ids.contains(c))
        {
            return Err(LcmError::new(
                ErrorCode::GrantScope,
                format!(
                    "conversation {c} is outside grant {id} (allowed: {:?})",
                    g.info.conversation_ids
                ),
            ));
        }
        if g.info.remaining_tokens <= 0 {
            return Err(LcmError::new(
                ErrorCode::GrantExhausted,
                format!(
                    "grant {id} has used its whole budget of {} tokens",
                    g.info.token_cap
                ),
            ));
        }
        Ok(g.info.clone())
    }

    /// Charges tokens returned under a grant (clamped to the budget) and returns the
    /// new state.
    pub fn consume(&mut self, id: &str, tokens: i64) -> Option<GrantInfo> {
        let g = self.grants.get_mut(id)?;
        g.info.consumed_tokens = (g.info.consumed_tokens + tokens.max(0)).min(g.info.token_cap);
        g.info.remaining_tokens = g.info.token_cap - g.info.consumed_tokens;
        Some(g.info.clone())
    }

    fn prune(&mut self, now: i64) {
        self.grants.retain(|_, g| {
            let dead = g
                .dead_since_ms
                .or((now >= g.expires_ms).then_some(g.expires_ms));
            dead.is_none_or(|d| now - d < RETAIN_MS)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(convs: Vec<i64>, ttl: Option<i64>) -> CreateGrantParams {
        CreateGrantParams {
            conversation_ids: convs,
            token_cap: Some(100),
            ttl_ms: ttl,
            summary_ids: None,
            max_depth: None,
            issuer: None,
        }
    }

    #[test]
    fn checks_run_in_order() {
        let mut r = Registry::default();
        let now = 1_000_000;
        let g = r.create(params(vec![1], None), 4000, now).unwrap();
        assert!(g.grant_id.starts_with("grant_") && g.grant_id.len() == 18);
        let ok = Access {
            conversations: &[1],
            all_conversations: false,
        };
        let bad = Access {
            conversations: &[2],
            all_conversations: false,
        };
        assert!(r.check(&g.grant_id, &ok, now).is_ok());
        assert_eq!(
            r.check(&g.grant_id, &bad, now).unwrap_err().code,
            ErrorCode::GrantScope
        );
        let all = Access {
            conversations: &[],
            all_conversations: true,
        };
        assert_eq!(
            r.check(&g.grant_id, &all, now).unwrap_err().code,
            ErrorCode::GrantScope
        );
        assert_eq!(
            r.check(&g.grant_id, &bad, now + DEFAULT_TTL_MS)
                .unwrap_err()
                .code,
            ErrorCode::GrantExpired
        );
        assert!(r.revoke(&g.grant_id, now));
        assert_eq!(
            r.check(&g.grant_id, &bad, now + DEFAULT_TTL_MS)
                .unwrap_err()
                .code,
            ErrorCode::GrantRevoked
        );
        assert_eq!(
            r.check("grant_nope", &ok, now).unwrap_err().code,
            ErrorCode::NotFound
        );
        assert!(!r.revoke("grant_nope", now));
    }

    #[test]
    fn budget_is_consumed_and_negative_ttl_is_expired() {
        let mut r = Registry::default();
        let g = r.create(params(vec![1], None), 4000, 0).unwrap();
        let ok = Access {
            conversations: &[1],
            all_conversations: false,
        };
        assert_eq!(r.consume(&g.grant_id, 60).unwrap().remaining_tokens, 40);
        assert_eq!(r.consume(&g.grant_id, 60).unwrap().remaining_tokens, 0);
        assert_eq!(
            r.check(&g.grant_id, &ok, 1).unwrap_err().code,
            ErrorCode::GrantExhausted
        );
        let e = r.create(params(vec![1], Some(-5)), 4000, 0).unwrap();
        assert_eq!(
            r.check(&e.grant_id, &ok, 0).unwrap_err().code,
            ErrorCode::GrantExpired
        );
        assert!(r.create(params(vec![], None), 4000, 0).is_err());
        // Dead grants are forgotten an hour later.
        r.revoke(&g.grant_id, 10);
        r.create(params(vec![1], None), 4000, 10 + RETAIN_MS)
            .unwrap();
        assert!(r.info(&g.grant_id).is_none());
    }
}
