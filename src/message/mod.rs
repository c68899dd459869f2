//! OpenClaw `AgentMessage` ↔ database rows. [`ingest`] maps a message to the
//! `messages` row and its `message_parts` rows (reference-compatible columns plus a
//! lossless envelope); [`rebuild`] turns stored rows back into the message.

pub mod ingest;
pub mod rebuild;

/// Block `type` names that are tool calls, in any provider's spelling.
pub const TOOL_CALL_TYPES: &[&str] = &[
    "toolCall",
    "toolUse",
    "tool_use",
    "tool-use",
    "functionCall",
    "function_call",
];

/// Block `type` names that are tool results.
pub const TOOL_RESULT_TYPES: &[&str] = &["toolResult", "tool_result", "function_call_output"];

/// Block `type` names that are model reasoning.
pub const REASONING_TYPES: &[&str] = &["thinking", "reasoning", "redacted_thinking"];

/// The runtime roles with a reference mapping of their own; every other role (the
/// host's `bashExecution`, `custom`, `branchSummary`, `compactionSummary`, a plugin's
/// own) is stored too, under [`OTHER_ROLE_DB`].
pub const RUNTIME_ROLES: &[&str] = &["user", "assistant", "toolResult", "tool", "system"];

/// The DB role of a message whose runtime role the reference does not map (its
/// fallback: such rows read back as assistant output).
pub const OTHER_ROLE_DB: &str = "assistant";

/// The member by which the host marks a message it keeps in the transcript but
/// never shows the model (a context-free command, a nested tool's display record).
pub const EXCLUDE_FROM_CONTEXT: &str = "excludeFromContext";

/// Whether the host marked `message` as not for the model's context
/// (`excludeFromContext: true`). Such a message is stored and searchable like any
/// other, but neither assembled nor given to the summarizer.
pub fn excluded_from_context(message: &serde_json::Value) -> bool {
    message.get(EXCLUDE_FROM_CONTEXT) == Some(&serde_json::Value::Bool(true))
}

/// [`excluded_from_context`] of a stored message, from its envelope (the message
/// without its content); a row without one (written by the reference) is never
/// excluded. Only an envelope that holds the marker's text is parsed.
pub fn envelope_excluded_from_context(envelope: Option<&str>) -> bool {
    envelope.is_some_and(|e| {
        e.contains(EXCLUDE_FROM_CONTEXT)
            && serde_json::from_str::<serde_json::Value>(e).is_ok_and(|v| excluded_from_context(&v))
    })
}

/// Maps a runtime role to the role stored in `messages.role`.
pub fn db_role(runtime_role: &str) -> &'static str {
    match runtime_role {
        "user" => "user",
        "assistant" => "assistant",
        "toolResult" | "tool" => "tool",
        "system" => "system",
        _ => OTHER_ROLE_DB,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_top_level_true_excludes_a_message() {
        assert!(excluded_from_context(
            &json!({"role":"user","excludeFromContext":true})
        ));
        for m in [
            json!({"role":"user","excludeFromContext":false}),
            json!({"role":"user","excludeFromContext":"true"}),
            json!({"role":"custom","details":{"excludeFromContext":true}}),
            json!({"role":"user"}),
        ] {
            assert!(!excluded_from_context(&m), "{m}");
        }
        let env = |v: serde_json::Value| Some(v.to_string());
        assert!(envelope_excluded_from_context(
            env(json!({"role":"toolResult","content":2,"excludeFromContext":true})).as_deref()
        ));
        assert!(!envelope_excluded_from_context(
            env(json!({"role":"custom","details":{"excludeFromContext":true}})).as_deref()
        ));
        assert!(!envelope_excluded_from_context(None));
        assert!(!envelope_excluded_from_context(Some(
            "excludeFromContext: not json"
        )));
    }
}
