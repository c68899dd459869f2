//! Query-text helpers: FTS5 sanitization (every token quoted, user-quoted phrases
//! kept whole), regex syntax detection in full-text queries, CJK detection,
//! case normalization shared with the in-memory index, and snippets. Slicing goes
//! through the crate's char-boundary-safe [`crate::text`] helpers.

use crate::text;

/// The terms of a full-text query: user-quoted phrases (quotes removed) and the
/// whitespace-separated tokens around them (stray `"` removed). Empty terms dropped.
pub fn query_terms(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = raw;
    while let Some(open) = rest.find('"') {
        let after = text::tail(rest, open + 1);
        let Some(close) = after.find('"') else { break };
        push_tokens(text::head(rest, open), &mut out);
        let phrase = text::head(after, close).trim();
        if !phrase.is_empty() {
            out.push(phrase.to_owned());
        }
        rest = text::tail(after, close + 1);
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
    text::cut_chars(s, max, "...")
}

/// A one-line snippet of about `max` characters around bytes `start..end` of a
/// text, starting up to `before` characters earlier (on a word start when the
/// lead-in has whitespace, whatever its width); `...` marks each cut side. Byte
/// indices inside a character are rounded down; the snippet always contains the
/// matched text (flattened by [`one_line`]).
pub fn window(content: &str, start: usize, end: usize, before: usize, max: usize) -> String {
    let start = text::floor_boundary(content, start);
    let end = text::floor_boundary(content, end).max(start);
    let lead = text::head(content, start)
        .char_indices()
        .rev()
        .nth(before.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    let lead = if lead > 0 {
        text::slice(content, lead, start)
            .char_indices()
            .find(|(_, c)| c.is_whitespace())
            .map_or(lead, |(w, c)| lead + w + c.len_utf8())
    } else {
        0
    };
    let mut body = text::prefix_chars(text::tail(content, lead), max);
    if body.len() < end - lead {
        body = text::slice(content, lead, end);
    }
    let cut_tail = lead + body.len() < content.len();
    format!(
        "{}{}{}",
        if lead > 0 { "..." } else { "" },
        one_line(body),
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
            let needle = text::head(&t, n);
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

    #[test]
    fn window_opens_after_multibyte_whitespace() {
        for ws in crate::text::strategies::WHITESPACE {
            let text = format!("{}{ws}{} needle here", "x".repeat(60), "y".repeat(10));
            let p = text.find("needle").unwrap();
            let s = window(&text, p, p + 6, 60, 200);
            assert!(s.contains("needle here"), "{ws:?}: {s}");
            let s = term_snippet(&text, &["needle".into()], 200);
            assert!(s.contains("needle"), "{ws:?}: {s}");
        }
    }

    use crate::text::strategies::text;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn a_window_contains_its_match(
            pre in text(30), hit in text(4), post in text(30),
            before in 0usize..80, max in 0usize..120, jitter in 0usize..4,
        ) {
            let content = format!("{pre}{hit}{post}");
            let (a, b) = (pre.len(), pre.len() + hit.len());
            let s = window(&content, a, b, before, max);
            prop_assert!(s.contains(&one_line(&hit)), "{s:?} lacks {hit:?}");
            // Indices inside a character never panic either.
            let _ = window(&content, a + jitter, b.saturating_sub(jitter), before, max);
            let _ = window(&content, b + jitter, a, before, max);
        }

        #[test]
        fn term_snippets_contain_a_found_term(pre in text(30), post in text(30), max in 0usize..120) {
            // Terms as `query_terms` makes them: never empty, never whitespace-bounded.
            let content = format!("{pre}needle{post}");
            let other = pre.split_whitespace().next().unwrap_or("needle").to_owned();
            let s = term_snippet(&content, &["NEEDLE".into(), other.clone()], max);
            prop_assert!(s.contains("needle") || s.contains(one_line(&other).as_str()), "{s:?}");
        }

        #[test]
        fn fts_expressions_are_only_quoted_terms(q in text(20)) {
            if let Some(e) = fts_match_expression(&q) {
                // Alternating quote / term / quote, separated by single spaces.
                for (n, part) in e.split('"').enumerate() {
                    prop_assert!(n % 2 == 1 || part.is_empty() || part == " ", "{e:?}");
                }
            }
            let _ = regex_syntax_in_full_text(&q);
            let _ = (has_cjk(&q), normalize(&q), cut_chars(&q, 10));
        }
    }
}
