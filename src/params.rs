//! JSON text of call parameters (from JavaScript or a CLI flag) into typed
//! parameters: one parser for every entry point, with errors naming the call.

use serde::Deserialize;
use serde_json::Value;

use crate::error::{LcmError, Result};

/// How an error names the kind of a JSON value ("a string", "null", …).
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses a JSON text of parameters into `T`, naming what was wrong.
pub fn parse_params<T: for<'de> Deserialize<'de>>(what: &str, json: &str) -> Result<T> {
    let repaired = repair_lone_surrogates(json);
    serde_json::from_str(&repaired)
        .map_err(|e| LcmError::invalid(format!("invalid {what} parameters: {e}")))
}

/// JSON text from JavaScript may carry lone UTF-16 surrogates (`\udXXX` escapes),
/// which are not Unicode; they are stored as U+FFFD instead of failing the turn.
pub fn repair_lone_surrogates(json: &str) -> std::borrow::Cow<'_, str> {
    if !json.contains("\\ud") && !json.contains("\\uD") {
        return std::borrow::Cow::Borrowed(json);
    }
    let b = json.as_bytes();
    let mut out = String::with_capacity(json.len());
    let mut i = 0;
    let hex_at = |i: usize| -> Option<u16> {
        let s = json.get(i + 2..i + 6)?;
        (b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u')).then_some(())?;
        u16::from_str_radix(s, 16).ok()
    };
    let mut last = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            if let Some(u) = hex_at(i) {
                let high = (0xD800..0xDC00).contains(&u);
                let low = (0xDC00..0xE000).contains(&u);
                if high && hex_at(i + 6).is_some_and(|n| (0xDC00..0xE000).contains(&n)) {
                    i += 12;
                    continue;
                }
                if high || low {
                    out.push_str(&json[last..i]);
                    out.push_str("\\ufffd");
                    i += 6;
                    last = i;
                    continue;
                }
            }
            i += 2;
            continue;
        }
        i += 1;
    }
    out.push_str(&json[last..]);
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let s = r#"{"a":"x\ud800y","b":"\ud83d\ude00","c":"\udc00"}"#;
        let r = repair_lone_surrogates(s);
        let v: Value = serde_json::from_str(&r).unwrap();
        assert_eq!(v["a"], "x\u{fffd}y");
        assert_eq!(v["b"], "😀");
        assert_eq!(v["c"], "\u{fffd}");
    }
}
