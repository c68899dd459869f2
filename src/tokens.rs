//! Token estimation, CJK- and emoji-aware (the reference plugin's HEAD estimator):
//! CJK ideographs, kana, Hangul and full-width forms cost 1.5 tokens, other
//! supplementary-plane code points (emoji) cost 2, everything else 0.25; the total
//! is rounded up.

/// Weight of one code point, in quarter tokens (so the sum stays an integer).
fn quarter_tokens(c: char) -> u64 {
    let cp = c as u32;
    let cjk = matches!(cp,
        0x3000..=0x303F      // CJK symbols and punctuation
        | 0x3040..=0x30FF    // hiragana, katakana
        | 0x3400..=0x4DBF    // ext A
        | 0x4E00..=0x9FFF    // unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xFF00..=0xFFEF    // full-width forms
        | 0x20000..=0x2FA1F  // ext B–F and compatibility supplement
    );
    if cjk {
        6
    } else if cp > 0xFFFF {
        8
    } else {
        1
    }
}

/// Estimated token count of a text.
pub fn estimate(text: &str) -> i64 {
    quarters(text).div_ceil(4) as i64
}

/// Σ [`quarter_tokens`] over the text; ASCII runs are counted 64 bytes at a time
/// (one quarter each) and only other code points are decoded.
fn quarters(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let (mut total, mut i) = (0u64, 0usize);
    while i < bytes.len() {
        let end = (i + 64).min(bytes.len());
        if bytes[i..end].is_ascii() {
            total += (end - i) as u64;
            i = end;
            continue;
        }
        // Decode whole code points from a boundary until past this block.
        for c in crate::text::tail(text, i).chars() {
            total += quarter_tokens(c);
            i += c.len_utf8();
            if i >= end {
                break;
            }
        }
    }
    total
}

/// Hundredths of a token per byte of ASCII as providers' BPE tokenizers split
/// serialized JSON: letters and spaces 0.28, digits 0.34 (numbers split in groups
/// of up to three), punctuation and control characters 0.6 (JSON quotes, braces
/// and escapes are mostly tokens of their own). Calibrated on serialized agent
/// messages (prose, code, tool JSON, CJK) against the larger of the `o200k` and
/// `cl100k` counts: 1.07–1.18× their total, no message more than 4 % below it
/// (docs/decisions/token-counting.md).
const WIRE_ASCII: [u8; 128] = {
    let mut t = [60u8; 128];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        if b.is_ascii_alphabetic() || b == b' ' {
            t[c] = 28;
        } else if b.is_ascii_digit() {
            t[c] = 34;
        }
        c += 1;
    }
    t
};

/// Hundredths of a token of one non-ASCII code point on the wire: CJK 1.5 (rare
/// ideographs take two byte-level tokens), other supplementary-plane code points
/// (emoji) 2, everything else 0.6.
fn wire_hundredths(c: char) -> u64 {
    match quarter_tokens(c) {
        6 => 150,
        8 => 200,
        _ => 60,
    }
}

/// A conservative token count of text as a provider receives it (serialized JSON
/// included): what the budget of an assembled context is held to when no exact
/// tokenizer applies. Higher than [`estimate`] (which stays the stored and
/// reference-compatible count).
pub fn estimate_wire(text: &str) -> i64 {
    let mut total = 0u64;
    for c in text.chars() {
        total += if c.is_ascii() {
            u64::from(WIRE_ASCII[c as usize])
        } else {
            wire_hundredths(c)
        };
    }
    total.div_ceil(100) as i64
}

/// The longest prefix of `text` whose [`estimate_wire`] stays within `max_tokens`,
/// cut on a code-point boundary.
pub fn truncate_to_wire(text: &str, max_tokens: i64) -> &str {
    let budget = (max_tokens.max(0) as u64) * 100;
    let mut used = 0u64;
    for (i, c) in text.char_indices() {
        used += if c.is_ascii() {
            u64::from(WIRE_ASCII[c as usize])
        } else {
            wire_hundredths(c)
        };
        if used > budget {
            return crate::text::head(text, i);
        }
    }
    text
}

/// The longest prefix of `text` whose estimate stays within `max_tokens`, cut on a
/// code-point boundary.
pub fn truncate_to_tokens(text: &str, max_tokens: i64) -> &str {
    let budget = (max_tokens.max(0) as u64) * 4;
    let mut used = 0u64;
    for (i, c) in text.char_indices() {
        used += quarter_tokens(c);
        if used > budget {
            return crate::text::head(text, i);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_is_four_chars_per_token() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("abcd"), 1);
        assert_eq!(estimate("abcde"), 2);
    }

    #[test]
    fn cjk_and_emoji_cost_more() {
        assert_eq!(estimate("漢字"), 3);
        assert_eq!(estimate("😀"), 2);
        assert_eq!(estimate("한"), 2);
    }

    #[test]
    fn block_counting_equals_per_code_point_counting() {
        let samples = [
            "plain ascii ".repeat(20),
            format!(
                "{}漢字{}😀{}é",
                "a".repeat(63),
                "b".repeat(70),
                "c".repeat(5)
            ),
            "한국어 텍스트와 emoji 🎉 mixed with ascii ".repeat(9),
            "é".repeat(100),
            String::new(),
        ];
        for s in samples {
            let naive: u64 = s.chars().map(quarter_tokens).sum();
            assert_eq!(quarters(&s), naive, "{s:?}");
        }
    }

    #[test]
    fn wire_counts_json_punctuation_and_cjk_above_the_stored_estimate() {
        assert_eq!(estimate_wire(""), 0);
        let json = r#"{"role":"toolResult","content":[{"type":"text","text":"ok"}]}"#;
        assert!(estimate_wire(json) > estimate(json));
        assert_eq!(estimate_wire("漢字"), 3);
        assert_eq!(estimate_wire("😀"), 2);
        assert_eq!(estimate_wire("abcd"), 2);
    }

    #[test]
    fn wire_truncation_is_the_longest_prefix_within_the_cap() {
        for s in ["abc def, ghi.", "漢字漢字", "x\"y\nz😀😀", ""] {
            for cap in 0..8 {
                let t = truncate_to_wire(s, cap);
                assert!(s.starts_with(t));
                assert!(estimate_wire(t) <= cap, "{t:?} over {cap}");
                if t.len() < s.len() {
                    let next = crate::text::prefix_chars(s, t.chars().count() + 1);
                    assert!(
                        estimate_wire(next) > cap || next.len() == t.len(),
                        "{s:?} {cap}"
                    );
                }
            }
        }
    }

    #[test]
    fn truncation_respects_code_points() {
        let s = "漢字漢字";
        let t = truncate_to_tokens(s, 3);
        assert_eq!(t, "漢字");
        assert_eq!(truncate_to_tokens("abcdefgh", 1), "abcd");
        assert_eq!(truncate_to_tokens("abc", 10), "abc");
    }
}
