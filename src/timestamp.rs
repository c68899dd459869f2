//! Storage timestamp formats shared with the reference plugin: message and row times
//! as SQLite UTC text (`YYYY-MM-DD HH:MM:SS`), summary time ranges as JavaScript ISO
//! strings (`YYYY-MM-DDTHH:MM:SS.sssZ`). Parsing is lenient: bare SQLite text is UTC.

use chrono::{DateTime, Datelike, NaiveDateTime, SecondsFormat, TimeZone, Timelike, Utc};

/// Parses a stored or user-supplied timestamp: RFC 3339 / ISO with zone, or bare
/// `YYYY-MM-DD HH:MM:SS[.fff]` / `YYYY-MM-DDTHH:MM:SS[.fff]` taken as UTC.
pub fn parse(value: &str) -> Option<DateTime<Utc>> {
    let s = value.trim();
    if s.is_empty() {
        return None;
    }
    parse_stored(s).or_else(|| parse_general(s))
}

/// [`parse`] through chrono's formats (every accepted shape; `s` is trimmed and
/// not empty).
fn parse_general(s: &str) -> Option<DateTime<Utc>> {
    if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
        return Some(dt.with_timezone(&Utc));
    }
    let normalized = s.replacen(' ', "T", 1);
    let naive = normalized.trim_end_matches(['Z', 'z']);
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(n) = NaiveDateTime::parse_from_str(naive, fmt) {
            return Some(Utc.from_utc_datetime(&n));
        }
    }
    chrono::NaiveDate::parse_from_str(naive, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|n| Utc.from_utc_datetime(&n))
}

/// The two shapes this engine stores, read without chrono's format machinery (a
/// sweep parses every source message's time): `YYYY-MM-DD HH:MM:SS` (SQLite) and
/// `YYYY-MM-DDTHH:MM:SS.sssZ` (ISO, milliseconds). `None` for anything else,
/// including invalid dates and leap seconds, which [`parse`] reads the slow way.
fn parse_stored(s: &str) -> Option<DateTime<Utc>> {
    let b = s.as_bytes();
    let digits = |from: usize, len: usize| -> Option<u32> {
        b.get(from..from + len)?.iter().try_fold(0u32, |n, c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let shape_ok = match b.len() {
        19 => b[10] == b' ',
        24 => b[10] == b'T' && b[19] == b'.' && b[23] == b'Z',
        _ => false,
    };
    if !shape_ok || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let millis = if b.len() == 24 { digits(20, 3)? } else { 0 };
    let date = chrono::NaiveDate::from_ymd_opt(digits(0, 4)? as i32, digits(5, 2)?, digits(8, 2)?)?;
    let time = chrono::NaiveTime::from_hms_milli_opt(
        digits(11, 2)?,
        digits(14, 2)?,
        digits(17, 2)?,
        millis,
    )?;
    (digits(17, 2)? < 60).then(|| Utc.from_utc_datetime(&date.and_time(time)))
}

/// A time from epoch milliseconds, if representable.
pub fn from_millis(ms: i64) -> Option<DateTime<Utc>> {
    Utc.timestamp_millis_opt(ms).single()
}

/// SQLite `datetime('now')` format, UTC, whole seconds. Years 0–9999 are written
/// with `write!` (chrono's `format` parses its pattern on every call, a few
/// thousand instructions per ingested message); other years through chrono.
pub fn to_sqlite(t: DateTime<Utc>) -> String {
    use std::fmt::Write;
    if !(0..=9999).contains(&t.year()) {
        return to_sqlite_general(t);
    }
    let mut out = String::with_capacity(19);
    let _ = write!(
        out,
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    out
}

/// [`to_sqlite`] through chrono's formatter (every year).
fn to_sqlite_general(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

/// JavaScript `Date.prototype.toISOString` format.
pub fn to_iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The current time in SQLite format.
pub fn now_sqlite() -> String {
    to_sqlite(Utc::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The fast path reads what the general parser reads, and only that.
        #[test]
        fn the_fast_path_agrees_with_the_general_parser(
            y in 0u32..10000, mo in 0u32..14, d in 0u32..33, h in 0u32..25, mi in 0u32..61,
            se in 0u32..62, ms in 0u32..1000, iso in any::<bool>(), junk in 0usize..3,
        ) {
            let mut s = if iso {
                format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{se:02}.{ms:03}Z")
            } else {
                format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{se:02}")
            };
            if junk == 1 {
                s.replace_range(13..14, "x");
            }
            if let Some(fast) = parse_stored(&s) {
                prop_assert_eq!(Some(fast), parse_general(&s));
                prop_assert_eq!(Some(fast), parse(&s));
            } else {
                prop_assert!(junk == 1 || se >= 60 || parse_general(&s).is_none(), "{}", s);
            }
        }
    }

    proptest! {
        /// The digit-by-digit writer gives chrono's text for every instant.
        #[test]
        fn sqlite_text_agrees_with_chrono(ms in -300_000_000_000_000i64..300_000_000_000_000i64) {
            let t = from_millis(ms).unwrap();
            prop_assert_eq!(to_sqlite(t), to_sqlite_general(t));
        }
    }

    #[test]
    fn parses_all_stored_shapes() {
        let a = parse("2026-02-17 07:37:00").unwrap();
        let b = parse("2026-02-17T07:37:00.000Z").unwrap();
        let c = parse("2026-02-17T08:37:00+01:00").unwrap();
        assert_eq!(a, b);
        assert_eq!(b, c);
        assert_eq!(to_sqlite(a), "2026-02-17 07:37:00");
        assert_eq!(to_iso(a), "2026-02-17T07:37:00.000Z");
        assert!(parse("yesterday").is_none());
    }
}
