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

/// The runtime roles the engine accepts.
pub const RUNTIME_ROLES: &[&str] = &["user", "assistant", "toolResult", "tool", "system"];

/// Maps a runtime role to the role stored in `messages.role`.
pub fn db_role(runtime_role: &str) -> Option<&'static str> {
    match runtime_role {
        "user" => Some("user"),
        "assistant" => Some("assistant"),
        "toolResult" | "tool" => Some("tool"),
        "system" => Some("system"),
        _ => None,
    }
}
