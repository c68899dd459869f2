//! JSON-schema definitions of the agent recall tools (`lcm_grep`, `lcm_describe`,
//! `lcm_expand`, `lcm_expand_query`), for the plugin to register as they are. The
//! parameters follow the reference tools; the descriptions are ours.

use serde_json::{json, Value};

fn conversation_params() -> (Value, Value) {
    (
        json!({"type": "number", "description": "Conversation to search or read. Defaults to the current session's conversation."}),
        json!({"type": "boolean", "description": "Set true to work across every conversation (ignored when conversationId is given; not allowed for delegated sub-agents)."}),
    )
}

fn grep() -> Value {
    let (conv, all) = conversation_params();
    json!({
        "name": "lcm_grep",
        "label": "LCM Grep",
        "description": "Search the full history of this conversation, including messages that were compacted out of your context and the summaries that replaced them. Use it to find exact wording, identifiers, errors, numbers or decisions from earlier. mode \"regex\" (default) takes a regular expression (linear-time engine, no backreferences or lookaround); mode \"full_text\" takes words, all of which must appear (word-stemmed, case-insensitive; keep a multi-word phrase in double quotes). Results list [conv=C msg#ID] and sum_… ids with a snippet, newest first; pass a sum_… id to lcm_describe or lcm_expand_query to read more.",
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "What to look for: a regex in regex mode, or 1-3 distinctive words / one quoted phrase in full_text mode."},
                "mode": {"type": "string", "enum": ["regex", "full_text"], "description": "\"regex\" (default) or \"full_text\"."},
                "scope": {"type": "string", "enum": ["messages", "summaries", "both"], "description": "Search raw messages, summaries, or both (default)."},
                "conversationId": conv,
                "allConversations": all,
                "since": {"type": "string", "description": "Only matches at or after this ISO-8601 time."},
                "before": {"type": "string", "description": "Only matches before this ISO-8601 time (must be later than since)."},
                "limit": {"type": "number", "minimum": 1, "maximum": 200, "description": "Results per scope (default 50)."},
                "sort": {"type": "string", "enum": ["recency", "relevance", "hybrid"], "description": "full_text only: newest first (default), best match first, or best match discounted by age."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }
    })
}

fn describe() -> Value {
    let (conv, all) = conversation_params();
    json!({
        "name": "lcm_describe",
        "label": "LCM Describe",
        "description": "Look up one LCM item by id. For a summary (sum_…): its full text, time range, token counts, the summaries it was built from (parents), the summaries built from it (children), and a manifest of its source subtree with the token cost of expanding each node against your budget. For a stored file (file_…, also shown in [LCM File: …] or [LCM Tool Output: …] references, which you may paste whole as id): name, type, size and an exploration summary; set expandFile to read the content itself (bounded, optionally by line range).",
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "A sum_… or file_… id, or a pasted [LCM File: …] reference."},
                "conversationId": conv,
                "allConversations": all,
                "tokenCap": {"type": "number", "minimum": 1, "description": "Budget used to mark manifest nodes as in or over budget."},
                "expandFile": {"type": "boolean", "description": "For file_… ids: include the file content (up to expandFileMaxBytes)."},
                "expandFileMaxBytes": {"type": "number", "minimum": 1024, "maximum": 512000, "description": "Most bytes of content returned with expandFile (default 32768)."},
                "startLine": {"type": "number", "minimum": 1, "description": "With expandFile: first line (1-based) of the part to read."},
                "endLine": {"type": "number", "minimum": 1, "description": "With expandFile: last line (1-based, inclusive) of the part to read."}
            },
            "required": ["id"],
            "additionalProperties": false
        }
    })
}

fn expand() -> Value {
    let (conv, all) = conversation_params();
    json!({
        "name": "lcm_expand",
        "label": "LCM Expand",
        "description": "For delegated recall sub-agents. Walk from summaries down to what they were built from: the source summaries, level by level, and with includeMessages the original messages under leaf summaries. Give summaryIds, or a full-text query to pick the matching summaries. Everything returned counts against your grant's token budget; the walk stops when the budget or tokenCap is reached and says so ([Truncated: yes]). Check costs with lcm_describe first.",
        "parameters": {
            "type": "object",
            "properties": {
                "summaryIds": {"type": "array", "items": {"type": "string"}, "description": "sum_… ids to expand, in priority order."},
                "query": {"type": "string", "description": "Full-text query selecting summaries to expand (used instead of summaryIds)."},
                "maxDepth": {"type": "number", "minimum": 1, "maximum": 10, "description": "Levels of sources to descend (default 3)."},
                "tokenCap": {"type": "number", "minimum": 1, "description": "Most tokens returned by this call."},
                "includeMessages": {"type": "boolean", "description": "Also return the original messages under leaf summaries (default false)."},
                "conversationId": conv,
                "allConversations": all
            },
            "additionalProperties": false
        }
    })
}

fn expand_query() -> Value {
    let (conv, all) = conversation_params();
    json!({
        "name": "lcm_expand_query",
        "label": "LCM Expand Query",
        "description": "Answer a focused question from compacted history without loading it into your context: the matching summaries (given as summaryIds, or found with a short full-text query) are expanded by a sub-agent under a scoped, time-limited token budget, which returns a concise answer with the ids it relied on. Use it when a summary mentions something you need in detail.",
        "parameters": {
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The question to answer from the expanded history."},
                "summaryIds": {"type": "array", "items": {"type": "string"}, "description": "sum_… ids to start from."},
                "query": {"type": "string", "description": "Full-text query (1-3 words or one quoted phrase) to find the summaries to start from."},
                "conversationId": conv,
                "allConversations": all,
                "maxTokens": {"type": "number", "minimum": 1, "description": "Target length of the answer in tokens (default 2000)."},
                "tokenCap": {"type": "number", "minimum": 1, "description": "Budget of the sub-agent's expansion (default maxExpandTokens)."}
            },
            "required": ["prompt"],
            "additionalProperties": false
        }
    })
}

/// The four tool definitions, in registration order.
pub fn definitions() -> Value {
    json!([grep(), describe(), expand(), expand_query()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_schema_with_its_required_parameters() {
        let d = definitions();
        let names: Vec<&str> = d
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["lcm_grep", "lcm_describe", "lcm_expand", "lcm_expand_query"]
        );
        assert_eq!(d[0]["parameters"]["required"], json!(["pattern"]));
        assert_eq!(
            d[0]["parameters"]["properties"]["limit"]["maximum"],
            json!(200)
        );
        assert_eq!(d[3]["parameters"]["required"], json!(["prompt"]));
    }
}
