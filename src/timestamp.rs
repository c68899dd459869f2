//! Storage timestamp formats shared with the reference plugin: message and row times
//! as SQLite UTC text (`YYYY-MM-DD HH:MM:SS`), summary time ranges as JavaScript ISO
//! strings (`YYYY-MM-DDTHH:MM:SS.sssZ`). Parsing is lenient: bare SQLite text is UTC.

use chrono::{DateTime, NaiveDateTime, SecondsFormat, TimeZone, Utc};

/// Parses a stored or user-supplied timestamp: RFC 3339 / ISO with zone, or bare
/// `YYYY-MM-DD HH:MM:SS[.fff]` / `YYYY-MM-DDTHH:MM:SS[.fff]` taken as UTC.
pub fn parse(value: &str) -> Option<DateTime<Utc>> {
    let s = value.trim();
    if s.is_empty() {
        return None;
    }
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

/// A time from epoch milliseconds, if representable.
pub fn from_millis(ms: i64) -> Option<DateTime<Utc>> {
    Utc.timestamp_millis_opt(ms).single()
}

/// SQLite `datetime('now')` format, UTC, whole seconds.
pub fn to_sqlite(t: DateTime<Utc>) -> String {
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
