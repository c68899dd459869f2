//! Query-text helpers: FTS5 sanitization (every token quoted, user-quoted phrases
//! kept whole), regex syntax detection in full-text queries, CJK detection,
//! case normalization shared with the in-memory index, and snippets.

/// The terms of a full-text query: user-quoted phrases (quotes removed) and the
/// whitespace-separated tokens around them (stray `"` removed). Empty terms dropped.
pub fn query_terms(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = raw;
    while let Some(open) = rest.find('"') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('"') else { break };
        push_tokens(&rest[..open], &mut out);
        let phrase = after[..close].trim();
        if !phrase.is_empty() {
            out.push(phrase.to_owned());
        }
        rest = &after[close + 1..];
    }
    push_tokens(rest, &mut out);
    out
}

fn push_tokens(s: &str, out: &mut Vec<String>) {
    for t in s.split_whitespace() {
        let t: String = t.chars().filter(|c| *c != '"').collect();
        if !t.is_empty() {
            out.push(t);
        }
    }
}

/// An FTS5 MATCH expression that treats every term as a literal phrase (implicit
/// AND). No input can produce an FTS5 syntax error or operator: inside a quoted
/// string FTS5 only tokenizes. `None` when the query has no terms.
pub fn fts_match_expression(raw: &str) -> Option<String> {
    let terms = query_terms(raw);
    if terms.is_empty() {
        return None;
    }
    Some(
        terms
            .iter()
            .map(|t| format!("\"{}\"", t.replace('"', "")))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// Names regex syntax in a full-text query that would silently match nothing in
/// FTS5 (alternation, wildcards, character classes, anchors, class escapes).
/// Quoted phrases are not inspected.
pub fn regex_syntax_in_full_text(pattern: &str) -> Option<&'static str> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut in_quote = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev_space = i == 0 || chars[i - 1].is_whitespace();
        match c {
            '"' => in_quote = !in_quote,
            _ if in_quote => {}
            '\\' => {
                if next.is_some_and(|n| "bBdDsSwW".contains(n)) {
                    return Some("regex character escape");
                }
                i += 1;
            }
            '|' => return Some("alternation"),
            '.' if matches!(next, Some('*' | '+' | '?')) => return Some("wildcard"),
            '[' if chars[i + 1..].iter().skip(1).any(|&x| x == ']') => {
                return Some("character class")
            }
            '^' if prev_space => return Some("anchor"),
            '$' if next.is_none_or(char::is_whitespace) => return Some("anchor"),
            _ => {}
        }
        i += 1;
    }
    None
}

/// CJK ideographs, kana and Hangul: scripts the word tokenizer cannot split.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF
        | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// Whether a text contains CJK characters.
pub fn has_cjk(s: &str) -> bool {
    s.chars().any(is_cjk)
}

/// The case normalization of the substring index: each code point is replaced by
/// its lower case when that is a single code point. Applied the same way to texts
/// and to needles, so a substring of a text stays a substring after it.
pub fn normalize(s: &str) -> std::borrow::Cow<'_, str> {
    if s.is_ascii() {
        if s.bytes().any(|b| b.is_ascii_uppercase()) {
            return std::borrow::Cow::Owned(s.to_ascii_lowercase());
        }
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(s.chars().map(normalize_char).collect())
}

/// One code point under [`normalize`].
pub fn normalize_char(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    let mut l = c.to_lowercase();
    match (l.next(), l.next()) {
        (Some(x), None) => x,
        _ => c,
    }
}

/// Flattens a text to one line (`\n`, `\r`, tabs → spaces) and trims it.
pub fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

/// At most `max` characters of a one-line text, `...` marking a cut.
pub fn cut_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let head: String = s.chars().take(max.saturating_sub(3)).collect();
    format!("{head}...")
}

fn floor_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A one-line snippet of about `max` characters around bytes `start..end` of a
/// text, starting up to `before` characters earlier; `...` marks each cut side.
pub fn window(content: &str, start: usize, end: usize, before: usize, max: usize) -> String {
    let start = floor_char(content, start);
    let lead = content[..start]
        .char_indices()
        .rev()
        .nth(before.saturating_sub(1))
        .map(|(i, _)| i)
        .unwrap_or(0);
    let lead = if lead > 0 {
        content[lead..start]
            .find(char::is_whitespace)
            .map(|w| lead + w + 1)
            .filter(|&w| w <= start)
            .unwrap_or(lead)
    } else {
        0
    };
    let end = floor_char(content, end.max(start));
    let body: String = content[lead..].chars().take(max).collect();
    let body = if body.len() < end - lead {
        content[lead..end].to_owned()
    } else {
        body
    };
    let cut_tail = lead + body.len() < content.len();
    format!(
        "{}{}{}",
        if lead > 0 { "..." } else { "" },
        one_line(&body),
        if cut_tail { "..." } else { "" }
    )
}

/// A snippet around the first occurrence of any query term (ASCII case-insensitive;
/// a term not found verbatim is tried by shrinking prefixes down to 4 characters,
/// which finds stemmed matches), else the text's opening.
pub fn term_snippet(content: &str, terms: &[String], max: usize) -> String {
    let hay = content.to_ascii_lowercase();
    let mut best: Option<(usize, usize)> = None;
    for t in terms {
        let t = t.to_ascii_lowercase();
        let mut n = t.len();
        while n > 0 {
            let needle = &t[..floor_char(&t, n)];
            if needle.is_empty() {
                break;
            }
            if let Some(p) = memchr::memmem::find(hay.as_bytes(), needle.as_bytes()) {
                if best.is_none_or(|(b, _)| p < b) {
                    best = Some((p, p + needle.len()));
                }
                break;
            }
            if n <= 4 {
                break;
            }
            n -= 1;
        }
    }
    let (s, e) = best.unwrap_or((0, 0));
    window(content, s, e, 60, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_queries_are_quoted() {
        assert_eq!(fts_match_expression("a OR b").unwrap(), r#""a" "OR" "b""#);
        assert_eq!(
            fts_match_expression("NEAR(a b)").unwrap(),
            r#""NEAR(a" "b)""#
        );
        assert_eq!(
            fts_match_expression("content:x *").unwrap(),
            r#""content:x" "*""#
        );
        assert_eq!(
            fts_match_expression("say \"hello world\" now").unwrap(),
            r#""say" "hello world" "now""#
        );
        assert_eq!(
            fts_match_expression("unbalanced \"quote").unwrap(),
            r#""unbalanced" "quote""#
        );
        assert_eq!(fts_match_expression("\"\" \" "), None);
        assert_eq!(fts_match_expression("   "), None);
    }

    #[test]
    fn regex_syntax_is_named() {
        assert_eq!(regex_syntax_in_full_text("a|b"), Some("alternation"));
        assert_eq!(regex_syntax_in_full_text("foo.*bar"), Some("wildcard"));
        assert_eq!(regex_syntax_in_full_text("[abc]"), Some("character class"));
        assert_eq!(regex_syntax_in_full_text("^start"), Some("anchor"));
        assert_eq!(
            regex_syntax_in_full_text("\\d+"),
            Some("regex character escape")
        );
        assert_eq!(regex_syntax_in_full_text("\"a|b\" c"), None);
        assert_eq!(
            regex_syntax_in_full_text("NEAR( a AND b ) content: *"),
            None
        );
        assert_eq!(regex_syntax_in_full_text("cost $5"), None);
    }

    #[test]
    fn snippets_and_normalization() {
        let text = format!(
            "{} the NEEDLE-1-2 is here {}",
            "pad ".repeat(50),
            "tail ".repeat(60)
        );
        let s = term_snippet(&text, &["needle-1-2".into()], 200);
        assert!(
            s.starts_with("...") && s.contains("NEEDLE-1-2") && s.ends_with("..."),
            "{s}"
        );
        assert!(s.chars().count() <= 206);
        let s = term_snippet("I was running fast", &["runner".into()], 200);
        assert_eq!(s, "I was running fast");
        assert_eq!(normalize("ÄbC"), "äbc");
        assert_eq!(cut_chars("abcdef", 5), "ab...");
        assert!(has_cjk("数据库 ok") && !has_cjk("plain"));
    }
}
