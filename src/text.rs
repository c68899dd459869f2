//! Char-boundary-safe string slicing: the one home of the rule "never slice a `str`
//! at a computed byte index". Every helper here rounds a byte index *down* to the
//! nearest UTF-8 character boundary and clamps it to the text's length, so no input
//! can make it panic; a range whose end falls before its start is empty.
//!
//! Library code slices strings only through these helpers (clippy's
//! `string_slice` lint is on for the crate; a raw slice must carry an `#[allow]`
//! and say why its indices are boundaries).

/// The largest character boundary of `s` at or below byte `i` (clamped to `s.len()`).
pub fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest character boundary of `s` at or above byte `i` (clamped to `s.len()`).
pub fn ceil_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// `s[start..end]` with both indices rounded down to character boundaries; empty
/// when `end` falls before `start`.
pub fn slice(s: &str, start: usize, end: usize) -> &str {
    let start = floor_boundary(s, start);
    let end = floor_boundary(s, end).max(start);
    s.get(start..end).unwrap_or_default()
}

/// The bytes of `s` before `end` (rounded down to a character boundary): always a
/// prefix of `s` of at most `end` bytes.
pub fn head(s: &str, end: usize) -> &str {
    slice(s, 0, end)
}

/// The bytes of `s` from `start` (rounded down to a character boundary) on: always
/// a suffix of `s`.
pub fn tail(s: &str, start: usize) -> &str {
    slice(s, start, s.len())
}

/// The first `n` characters (code points) of `s`.
pub fn prefix_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => head(s, i),
        None => s,
    }
}

/// The last `n` characters (code points) of `s`.
pub fn suffix_chars(s: &str, n: usize) -> &str {
    match s.char_indices().rev().nth(n.saturating_sub(1)) {
        Some((i, _)) if n > 0 => tail(s, i),
        _ if n == 0 => "",
        _ => s,
    }
}

/// At most `max` characters of `s`; when it is longer, its first characters
/// followed by `marker`, the whole within `max` characters (the marker alone when
/// `max` is smaller than it).
pub fn cut_chars(s: &str, max: usize, marker: &str) -> String {
    if s.chars().nth(max).is_none() {
        return s.to_owned();
    }
    let keep = max.saturating_sub(marker.chars().count());
    format!("{}{marker}", prefix_chars(s, keep))
}

/// The first occurrence of `needle` in `haystack` (byte offset), exactly as
/// `haystack.find(needle)`, but cheap for a long needle whose opening is rare (a
/// summarizer prompt and the source text it wraps): `str::find` first builds a
/// searcher over the whole needle (a pass over all of it), this one looks for the
/// needle's first 64 bytes and compares the rest in place, falling back to
/// `str::find` after a few false starts so no input costs more than a few passes.
pub fn find_long(haystack: &str, needle: &str) -> Option<usize> {
    find_probed(haystack, needle, 64, 8)
}

/// [`find_long`] with the probe length (bytes) and false starts allowed.
fn find_probed(haystack: &str, needle: &str, probe: usize, tries: usize) -> Option<usize> {
    let opening = head(needle, probe);
    if needle.len() <= probe || opening.is_empty() {
        return haystack.find(needle);
    }
    let mut from = 0;
    for _ in 0..tries {
        let at = from + tail(haystack, from).find(opening)?;
        if haystack
            .as_bytes()
            .get(at..)?
            .starts_with(needle.as_bytes())
        {
            return Some(at);
        }
        from = ceil_boundary(haystack, at + 1);
    }
    tail(haystack, from).find(needle).map(|i| from + i)
}

#[cfg(test)]
pub(crate) mod strategies {
    //! Proptest strategies for hostile Unicode, shared by every text property test.
    use proptest::prelude::*;

    /// Every Unicode whitespace the issue lists (plus ASCII ones).
    pub const WHITESPACE: &[char] = &[
        ' ', '\t', '\n', '\r', '\u{0B}', '\u{0C}', '\u{85}', '\u{A0}', '\u{1680}', '\u{2000}',
        '\u{2001}', '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}', '\u{2006}', '\u{2007}',
        '\u{2008}', '\u{2009}', '\u{200A}', '\u{2028}', '\u{2029}', '\u{202F}', '\u{205F}',
        '\u{3000}',
    ];

    /// Pieces real text is made of, hostile ones included.
    const PIECES: &[&str] = &[
        "a",
        "Z",
        "needle",
        "0",
        ".",
        "!",
        "?",
        "\"",
        "'",
        "<",
        ">",
        "&",
        "/",
        "\\",
        "{{",
        "}}",
        "{%",
        "#}",
        "*",
        "|",
        "[",
        "]",
        "^",
        "$",
        "\0",
        "\u{1b}[31m",
        "\u{7}",
        "\u{9b}",
        "\u{7f}",
        "e\u{301}",
        "\u{0308}",
        "é",
        "ß",
        "İ",
        "漢字",
        "数据库",
        "한국어",
        "ひらがな",
        "😀",
        "👩\u{200D}👩\u{200D}👧",
        "🏳️\u{200D}🌈",
        "שלום",
        "مرحبا",
        "\u{202E}",
        "\u{200F}",
        "\u{FEFF}",
        "\u{10FFFF}",
        "<file name=\"a\">",
        "</file>",
        "[LCM File: file_0123456789abcdef",
        "file_0123456789abcdef",
        "NEAR(",
        "OR",
        "\"phrase\"",
    ];

    /// One hostile piece: a listed fragment, any whitespace, or any code point.
    pub fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => proptest::sample::select(PIECES).prop_map(str::to_owned),
            3 => proptest::sample::select(WHITESPACE).prop_map(String::from),
            2 => any::<char>().prop_map(String::from),
        ]
    }

    /// A hostile text of up to `max` pieces.
    pub fn text(max: usize) -> impl Strategy<Value = String> {
        proptest::collection::vec(piece(), 0..max).prop_map(|v| v.concat())
    }
}

#[cfg(test)]
mod tests {
    use super::strategies::text;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn boundaries_round_inside_multibyte_characters() {
        let s = "a\u{a0}b\u{3000}c😀";
        assert_eq!(floor_boundary(s, 2), 1);
        assert_eq!(ceil_boundary(s, 2), 3);
        assert_eq!(head(s, 5), "a\u{a0}b");
        assert_eq!(tail(s, 5), "\u{3000}c😀");
        assert_eq!(slice(s, 9, 2), "");
        assert_eq!(head(s, 999), s);
        assert_eq!(prefix_chars(s, 2), "a\u{a0}");
        assert_eq!(suffix_chars(s, 2), "c😀");
        assert_eq!(suffix_chars(s, 0), "");
        assert_eq!(suffix_chars(s, 99), s);
        assert_eq!(cut_chars("abcdef", 5, "..."), "ab...");
        assert_eq!(cut_chars("漢字漢字", 3, "…"), "漢字…");
        assert_eq!(cut_chars("abc", 3, "..."), "abc");
    }

    #[test]
    fn find_long_sees_overlapping_openings() {
        assert_eq!(find_probed("xaaaaaab", "aaab", 2, 8), Some(4));
        assert_eq!(find_probed("xaaaaaab", "aaab", 2, 1), Some(4));
        assert_eq!(find_probed("漢字漢字漢字x", "漢字漢字x", 4, 8), Some(6));
        assert_eq!(find_probed("abc", "abcd", 2, 8), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn slices_never_panic_and_are_substrings(s in text(40), a in 0usize..200, b in 0usize..200) {
            let h = head(&s, a);
            prop_assert!(s.starts_with(h) && h.len() <= a);
            let t = tail(&s, a);
            prop_assert!(s.ends_with(t));
            prop_assert!(s.contains(slice(&s, a, b)));
            prop_assert!(s.is_char_boundary(ceil_boundary(&s, a)));
        }

        #[test]
        fn find_long_finds_what_find_finds(
            a in text(12), n in text(12), b in text(12), probe in 1usize..12, tries in 0usize..4, plant in any::<bool>(),
        ) {
            let hay = if plant { format!("{a}{n}{b}{n}") } else { format!("{a}{b}") };
            prop_assert_eq!(find_probed(&hay, &n, probe, tries), hay.find(n.as_str()));
            prop_assert_eq!(find_long(&hay, &n), hay.find(n.as_str()));
        }

        #[test]
        fn char_prefixes_and_cuts_stay_within_the_cap(s in text(40), n in 0usize..60) {
            let p = prefix_chars(&s, n);
            prop_assert!(s.starts_with(p) && p.chars().count() == n.min(s.chars().count()));
            let q = suffix_chars(&s, n);
            prop_assert!(s.ends_with(q) && q.chars().count() == n.min(s.chars().count()));
            let c = cut_chars(&s, n.max(3), "...");
            prop_assert!(c.chars().count() <= n.max(3));
            let kept = c.strip_suffix("...").filter(|_| c != s).unwrap_or(&c);
            prop_assert!(s.starts_with(kept));
        }
    }
}
