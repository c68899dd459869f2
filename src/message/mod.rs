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
