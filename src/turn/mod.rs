//! Durable turns: what `commitTurn` checks and hashes before the store writes a
//! turn's messages and its receipt in one transaction (`store::turns`).
//!
//! The payload hash, when the host gives none, is the sha256 (lowercase hex) of
//! the canonical JSON of `{admission, entryIds, isHeartbeat, messages, sessionId,
//! sessionKey, terminal}`: object keys sorted by code point at every level, no
//! whitespace, an absent key as `null`, `isHeartbeat` as a boolean. Host-only keys
//! (`runtimeContext`, `runtimeSettings`, `sessionTarget`, …) are not part of it, so a
//! replay with other runtime settings is still the same turn.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::error::{ErrorCode, LcmError, Result};
use crate::store::turns::Receipt;

/// Parameters of `commitTurn`. Keys the host passes besides these are ignored.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitTurnParams {
    /// Runtime session id.
    pub session_id: String,
    /// Stable session key.
    #[serde(default)]
    pub session_key: Option<String>,
    /// The turn's idempotency key.
    pub advancement_key: String,
    /// The host's hash of the payload; computed when absent.
    #[serde(default)]
    pub payload_hash: Option<String>,
    /// The turn's messages, oldest first.
    #[serde(default)]
    pub messages: Vec<Value>,
    /// Transcript entry ids parallel to `messages`.
    #[serde(default)]
    pub entry_ids: Option<Vec<Option<String>>>,
    /// The host's anchor of the turn's first entry.
    #[serde(default)]
    pub admission: Option<Value>,
    /// The host's anchor of the turn's last entry.
    #[serde(default)]
    pub terminal: Option<Value>,
    /// A heartbeat turn stores no messages.
    #[serde(default)]
    pub is_heartbeat: bool,
}

/// Result of `commitTurn`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct CommitTurnResult {
    /// `committed`, or `duplicate`: this key was committed before with the same
    /// payload; nothing was written.
    #[ts(type = "\"committed\" | \"duplicate\"")]
    pub status: &'static str,
    /// The conversation; null for a heartbeat or empty turn of a session without one.
    pub conversation_id: Option<i64>,
    /// Messages stored by this call (0 for a duplicate, a heartbeat, an empty turn,
    /// and entry ids already stored).
    pub ingested_count: usize,
}

/// A validated turn: its hash and the entry id of each message.
#[derive(Debug, Clone)]
pub struct TurnPlan {
    /// The payload hash the receipt records.
    pub payload_hash: String,
    /// Entry ids parallel to the messages.
    pub entry_ids: Vec<Option<String>>,
}

/// Validates a turn and computes its hash and entry ids.
pub fn plan(p: &CommitTurnParams) -> Result<TurnPlan> {
    if p.advancement_key.trim().is_empty() {
        return Err(LcmError::invalid(
            "advancementKey must be a non-empty string",
        ));
    }
    if p.session_id.trim().is_empty() {
        return Err(LcmError::invalid("sessionId must be a non-empty string"));
    }
    check_anchors(p)?;
    let entry_ids = match &p.entry_ids {
        Some(ids) => ids.clone(),
        None => anchor_entry_ids(p),
    };
    let payload_hash = match &p.payload_hash {
        Some(h) if !h.is_empty() => h.clone(),
        _ => payload_hash(p),
    };
    Ok(TurnPlan {
        payload_hash,
        entry_ids,
    })
}

fn anchor_field<'a>(anchor: &'a Option<Value>, key: &str) -> Option<&'a Value> {
    anchor.as_ref().and_then(|a| a.get(key))
}

fn check_anchors(p: &CommitTurnParams) -> Result<()> {
    if let Some(turn_id) = anchor_field(&p.admission, "logicalTurnId").and_then(Value::as_str) {
        if turn_id != p.advancement_key {
            return Err(LcmError::invalid(format!(
                "advancementKey {:?} differs from admission.logicalTurnId {turn_id:?}",
                p.advancement_key
            )));
        }
    }
    let pos = |a: &Option<Value>| anchor_field(a, "activeMessagePosition").and_then(Value::as_i64);
    if let (Some(first), Some(last)) = (pos(&p.admission), pos(&p.terminal)) {
        let expected = last - first + 1;
        if expected != p.messages.len() as i64 {
            return Err(LcmError::invalid(format!(
                "the turn spans transcript positions {first}..={last} ({expected} messages) but messages has {}",
                p.messages.len()
            )));
        }
    }
    Ok(())
}

/// Without `entryIds`, the first message carries the admission's entry id and the
/// last the terminal's.
fn anchor_entry_ids(p: &CommitTurnParams) -> Vec<Option<String>> {
    let n = p.messages.len();
    let mut ids = vec![None; n];
    let id = |a: &Option<Value>| {
        anchor_field(a, "entryId")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    if n > 0 {
        if let Some(t) = id(&p.terminal) {
            ids[n - 1] = Some(t);
        }
        if let Some(a) = id(&p.admission) {
            ids[0] = Some(a);
        }
    }
    ids
}

/// The documented payload hash (see the module docs).
pub fn payload_hash(p: &CommitTurnParams) -> String {
    let payload = json!({
        "admission": p.admission,
        "entryIds": p.entry_ids,
        "isHeartbeat": p.is_heartbeat,
        "messages": p.messages,
        "sessionId": p.session_id,
        "sessionKey": p.session_key,
        "terminal": p.terminal,
    });
    let mut text = String::new();
    canonical_json(&payload, &mut text);
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Canonical JSON: keys sorted at every level, no whitespace.
pub fn canonical_json(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical_json(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The answer to a key that already has a receipt: `duplicate` for the same hash,
/// `LCM_TURN_CONFLICT` (nothing written) for another.
pub fn replay(receipt: &Receipt, payload_hash: &str) -> Result<CommitTurnResult> {
    if receipt.payload_hash != payload_hash {
        return Err(LcmError::new(
            ErrorCode::TurnConflict,
            format!(
                "turn {:?} was committed before with payload hash {} but this call's hash is {payload_hash}; nothing was written (a different turn reuses the key, or its messages changed)",
                receipt.advancement_key, receipt.payload_hash
            ),
        ));
    }
    Ok(CommitTurnResult {
        status: "duplicate",
        conversation_id: receipt.conversation_id,
        ingested_count: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: Value) -> CommitTurnParams {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let mut s = String::new();
        canonical_json(&json!({"b":1,"a":{"d":[{"z":1,"y":"é"}],"c":null}}), &mut s);
        assert_eq!(s, r#"{"a":{"c":null,"d":[{"y":"é","z":1}]},"b":1}"#);
    }

    #[test]
    fn hash_ignores_key_order_and_host_only_keys() {
        let a = params(
            json!({"sessionId":"s","advancementKey":"k","messages":[{"role":"user","content":"x"}]}),
        );
        let b = params(
            json!({"messages":[{"content":"x","role":"user"}],"advancementKey":"k","sessionId":"s","runtimeContext":{"x":1}}),
        );
        assert_eq!(payload_hash(&a), payload_hash(&b));
        let c = params(
            json!({"sessionId":"s","advancementKey":"k","messages":[{"role":"user","content":"y"}]}),
        );
        assert_ne!(payload_hash(&a), payload_hash(&c));
        assert_eq!(payload_hash(&a).len(), 64);
    }

    #[test]
    fn anchors_give_entry_ids_and_are_checked() {
        let p = params(
            json!({"sessionId":"s","advancementKey":"t1","messages":[{"role":"user","content":"q"},{"role":"assistant","content":[]}],
            "admission":{"entryId":"e1","activeMessagePosition":4,"logicalTurnId":"t1"},"terminal":{"entryId":"e2","activeMessagePosition":5}}),
        );
        let plan = plan(&p).unwrap();
        assert_eq!(
            plan.entry_ids,
            [Some("e1".to_owned()), Some("e2".to_owned())]
        );
        let mut bad = p.clone();
        bad.messages.pop();
        assert!(super::plan(&bad)
            .unwrap_err()
            .message
            .contains("positions 4..=5"));
        let mut other = p;
        other.advancement_key = "t2".into();
        assert!(super::plan(&other)
            .unwrap_err()
            .message
            .contains("logicalTurnId"));
    }
}
