//! Counts as people read them: thousands separators and nouns that agree with
//! their count. One home for the operator CLI's output and the texts the engine
//! writes itself (an empty source's summary label).

/// `45230` → `45,230`.
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// `1 line`, `2 lines`, `1,024 lines`: a count with thousands separators and the
/// noun that agrees with it.
pub fn plural(n: impl TryInto<i64>, one: &str, many: &str) -> String {
    let n = n.try_into().unwrap_or(i64::MAX);
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// `-7130` → `-7,130`, `122` → `+122`, `0` → `0`.
pub fn signed_thousands(n: i64) -> String {
    if n > 0 {
        format!("+{}", thousands(n))
    } else {
        thousands(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(thousands(45230), "45,230");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(thousands(-7130), "-7,130");
        assert_eq!(signed_thousands(122), "+122");
        assert_eq!(signed_thousands(0), "0");
        assert_eq!(signed_thousands(-1234), "-1,234");
    }

    #[test]
    fn counted_nouns_agree_with_their_count() {
        assert_eq!(plural(1usize, "summary", "summaries"), "1 summary");
        assert_eq!(plural(0usize, "summary", "summaries"), "0 summaries");
        assert_eq!(plural(2i64, "item", "items"), "2 items");
        assert_eq!(plural(12_345u64, "line", "lines"), "12,345 lines");
        assert_eq!(
            plural(usize::MAX, "line", "lines"),
            "9,223,372,036,854,775,807 lines"
        );
    }
}
