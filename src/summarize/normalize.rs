//! Provider response normalization: collect the answer text from any of the usual
//! response shapes (Anthropic content blocks, Chat Completions choices, Responses
//! `output` items and `output_text`), never from reasoning / thinking payloads, and
//! strip `<think>…</think>`-style blocks that leak into the text. Reasoning-only
//! answers normalize to the empty string, which the pipeline treats as empty output.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// Keys whose string values are answer text.
const TEXT_KEYS: [&str; 2] = ["text", "output_text"];
/// Keys to descend into.
const NESTED_KEYS: [&str; 7] = [
    "content", "summary", "output", "message", "response", "choices", "delta",
];

fn reasoning_like(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.contains("reasoning") || l.contains("thinking")
}

fn is_reasoning_node(o: &serde_json::Map<String, Value>) -> bool {
    ["type", "rawType"].iter().any(|k| {
        o.get(*k)
            .and_then(Value::as_str)
            .is_some_and(reasoning_like)
    })
}

/// A string, or the `value` / `text` of a wrapper object (`{"text": {"value": …}}`).
fn push_text_value(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| push_text_value(x, out)),
        Value::Object(o) => {
            for k in ["value", "text"] {
                if let Some(Value::String(s)) = o.get(k) {
                    out.push(s.clone());
                }
            }
        }
        _ => {}
    }
}

fn collect(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| collect(x, out)),
        Value::Object(o) if !is_reasoning_node(o) => {
            for k in TEXT_KEYS {
                if let Some(x) = o.get(k) {
                    push_text_value(x, out);
                }
            }
            for k in NESTED_KEYS {
                match o.get(k) {
                    Some(Value::String(s)) if k == "content" || k == "summary" => {
                        out.push(s.clone())
                    }
                    Some(x) => collect(x, out),
                    None => {}
                }
            }
        }
        _ => {}
    }
}

/// Every answer fragment in `v`, trimmed, empties and exact duplicates dropped (first
/// wins), joined by newlines.
pub fn collect_text(v: &Value) -> String {
    let mut raw = Vec::new();
    match v {
        Value::String(s) => raw.push(s.clone()),
        _ => collect(v, &mut raw),
    }
    let mut seen = std::collections::HashSet::new();
    let kept: Vec<&str> = raw
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty() && seen.insert(*s))
        .collect();
    kept.join("\n")
}

const REASONING_TAGS: [&str; 3] = ["think", "thinking", "reasoning"];

/// A closed reasoning block standing on its own lines anywhere in the text.
static STANDALONE_BLOCKS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    REASONING_TAGS
        .iter()
        .map(|t| {
            Regex::new(&format!(
                r"(?is)(?:^|\n)[ \t]*<{t}\b[^>]*>.*?</{t}\s*>[ \t]*(?:\n|$)"
            ))
            .expect("valid regex")
        })
        .collect()
});

/// If `text` starts with an opening reasoning tag, the tag name and where the tag ends.
fn leading_open_tag(text: &str) -> Option<(&'static str, usize)> {
    let lower = text
        .chars()
        .take(16)
        .collect::<String>()
        .to_ascii_lowercase();
    for t in REASONING_TAGS {
        let open = format!("<{t}");
        let Some(rest) = lower.strip_prefix(&open) else {
            continue;
        };
        if rest.starts_with('>') || rest.starts_with(char::is_whitespace) {
            let end = text.find('>')? + 1;
            return Some((t, end));
        }
    }
    None
}

/// Removes reasoning that leaked into the answer text: leading closed
/// `<think>`/`<thinking>`/`<reasoning>` blocks, such blocks standing on their own
/// lines, and an unclosed leading block (a cut-off answer: nothing usable). Returns
/// the empty string when only reasoning was there. Tags quoted inside prose stay.
pub fn strip_reasoning(text: &str) -> String {
    let mut rest = text.trim();
    while let Some((tag, open_end)) = leading_open_tag(rest) {
        let lower = rest.to_ascii_lowercase();
        let close = format!("</{tag}");
        match lower[open_end..].find(&close) {
            Some(i) => {
                let after = open_end + i;
                let gt = rest[after..]
                    .find('>')
                    .map_or(rest.len(), |j| after + j + 1);
                rest = rest[gt..].trim_start();
            }
            None => return String::new(),
        }
    }
    let mut s = rest.to_owned();
    for re in STANDALONE_BLOCKS.iter() {
        s = re.replace_all(&s, "\n").into_owned();
    }
    s.trim().to_owned()
}

/// The usable summary text of a provider answer: collected, then reasoning-stripped.
pub fn summary_text(v: &Value) -> String {
    strip_reasoning(&collect_text(v))
}

/// The model a provider says answered (`model` of the response), else the one
/// asked for.
pub fn answer_model(response: &Value, requested: &str) -> String {
    response
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or(requested)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn anthropic_blocks_skip_thinking() {
        let v = json!([
            {"type": "thinking", "thinking": "secret plan", "signature": "x"},
            {"type": "redacted_thinking", "data": "zzz"},
            {"type": "text", "text": "Decided to ship v2."},
            {"type": "text", "text": "Decided to ship v2."},
            {"type": "text", "text": "  "}
        ]);
        assert_eq!(summary_text(&v), "Decided to ship v2.");
    }

    #[test]
    fn chat_completions_and_responses_shapes() {
        let chat = json!({"choices": [{"message": {"role": "assistant", "content": "Summary A", "reasoning_content": "hmm"}}]});
        assert_eq!(summary_text(&chat), "Summary A");
        let parts = json!({"choices": [{"message": {"content": [{"type": "text", "text": "P1"}, {"type": "reasoning", "text": "no"}]}}]});
        assert_eq!(summary_text(&parts), "P1");
        let responses = json!({"output": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thought"}]},
            {"type": "message", "content": [{"type": "output_text", "text": "Summary B"}]}
        ]});
        assert_eq!(summary_text(&responses), "Summary B");
        assert_eq!(
            summary_text(&json!({"output_text": "Summary C"})),
            "Summary C"
        );
        assert_eq!(
            summary_text(&json!({"text": {"value": "wrapped"}})),
            "wrapped"
        );
        assert_eq!(summary_text(&json!({"usage": {"tokens": 3}})), "");
    }

    #[test]
    fn think_blocks_never_become_summary_text() {
        assert_eq!(
            strip_reasoning("<think>plan</think>\n\nThe summary."),
            "The summary."
        );
        assert_eq!(
            strip_reasoning("<THINK>a</THINK><reasoning x=1>b</reasoning> Body"),
            "Body"
        );
        assert_eq!(strip_reasoning("<think>only reasoning</think>"), "");
        assert_eq!(strip_reasoning("<thinking>cut off mid-thought"), "");
        assert_eq!(
            strip_reasoning("Intro.\n<think>\nhidden\n</think>\nOutro."),
            "Intro.\nOutro."
        );
        assert_eq!(
            strip_reasoning("Use the <think> tag carefully."),
            "Use the <think> tag carefully."
        );
        assert_eq!(
            strip_reasoning("<thinker>not a tag we know"),
            "<thinker>not a tag we know"
        );
    }
}
