//! Human-facing time formatting in the configured IANA timezone: prompt headers
//! (`2026-02-17 15:37 PST`), ranges (`2026-02-17 15:37–17:21 PST`,
//! `2026-02-17 – 2026-02-18`) and the XML attribute form (`2026-02-17T15:37:00`).

use chrono::{DateTime, Datelike, Timelike, Utc};
use chrono_tz::Tz;

use crate::error::{ErrorCode, LcmError, Result};

/// A resolved timezone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone(pub Tz);

impl Zone {
    /// The zone from an explicit name, else `TZ`, else UTC. An explicit name that is
    /// not an IANA zone is a configuration error; an unusable `TZ` falls back to UTC.
    pub fn resolve(explicit: Option<&str>) -> Result<Zone> {
        if let Some(name) = explicit.filter(|s| !s.trim().is_empty()) {
            return Self::parse(name);
        }
        let from_env = std::env::var("TZ").ok();
        let env_name = from_env.as_deref().map(|s| s.trim_start_matches(':'));
        Ok(env_name
            .and_then(|n| Self::parse(n).ok())
            .unwrap_or(Zone(Tz::UTC)))
    }

    /// Parses an IANA zone name.
    pub fn parse(name: &str) -> Result<Zone> {
        name.trim().parse::<Tz>().map(Zone).map_err(|_| {
            LcmError::new(
                ErrorCode::Config,
                format!("unknown timezone {name:?}; use an IANA name such as \"America/Los_Angeles\" or \"UTC\""),
            )
        })
    }

    /// UTC.
    pub fn utc() -> Zone {
        Zone(Tz::UTC)
    }

    /// `2026-02-17 15:37 PST`.
    pub fn format_timestamp(&self, t: DateTime<Utc>) -> String {
        let l = t.with_timezone(&self.0);
        format!("{} {}", minute(&l), self.abbrev(t))
    }

    /// `2026-02-17 15:37–17:21 PST` within one local day, `2026-02-17 – 2026-02-18`
    /// across days, one timestamp when both ends are the same minute.
    pub fn format_range(&self, earliest: DateTime<Utc>, latest: DateTime<Utc>) -> String {
        let (a, b) = if earliest <= latest {
            (earliest, latest)
        } else {
            (latest, earliest)
        };
        let la = a.with_timezone(&self.0);
        let lb = b.with_timezone(&self.0);
        let (sa, sb) = (minute(&la), minute(&lb));
        if sa == sb {
            return self.format_timestamp(a);
        }
        if la.date_naive() == lb.date_naive() {
            return format!("{sa}–{} {}", lb.format("%H:%M"), self.abbrev(b));
        }
        format!("{} – {}", la.format("%Y-%m-%d"), lb.format("%Y-%m-%d"))
    }

    /// Local time without zone, as the reference XML attributes show it.
    pub fn format_attr(&self, t: DateTime<Utc>) -> String {
        t.with_timezone(&self.0)
            .format("%Y-%m-%dT%H:%M:%S")
            .to_string()
    }

    fn abbrev(&self, t: DateTime<Utc>) -> String {
        if self.0 == Tz::UTC {
            return "UTC".into();
        }
        t.with_timezone(&self.0).format("%Z").to_string()
    }
}

/// `%Y-%m-%d %H:%M` (every source message header has one): written directly for
/// four-digit years, through chrono's formatter otherwise.
fn minute(l: &DateTime<Tz>) -> String {
    if (0..=9999).contains(&l.year()) {
        return format!(
            "{:04}-{:02}-{:02} {:02}:{:02}",
            l.year(),
            l.month(),
            l.day(),
            l.hour(),
            l.minute()
        );
    }
    l.format("%Y-%m-%d %H:%M").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timestamp::parse;

    #[test]
    fn minutes_are_written_as_chrono_writes_them() {
        let la = Zone::parse("America/Los_Angeles").unwrap();
        for text in [
            "2026-02-17T23:37:00Z",
            "0001-01-01T00:05:00Z",
            "9999-12-31T23:59:59Z",
        ] {
            let t = parse(text).unwrap().with_timezone(&la.0);
            assert_eq!(minute(&t), t.format("%Y-%m-%d %H:%M").to_string());
        }
        let far = DateTime::<Utc>::from_timestamp(300_000_000_000, 0)
            .unwrap()
            .with_timezone(&la.0);
        assert_eq!(minute(&far), far.format("%Y-%m-%d %H:%M").to_string());
    }

    #[test]
    fn formats_match_the_design() {
        let la = Zone::parse("America/Los_Angeles").unwrap();
        let a = parse("2026-02-17T23:37:00Z").unwrap();
        let b = parse("2026-02-18T01:21:00Z").unwrap();
        assert_eq!(la.format_timestamp(a), "2026-02-17 15:37 PST");
        assert_eq!(la.format_range(a, b), "2026-02-17 15:37–17:21 PST");
        assert_eq!(la.format_range(a, a), "2026-02-17 15:37 PST");
        let c = parse("2026-02-19T01:00:00Z").unwrap();
        assert_eq!(la.format_range(a, c), "2026-02-17 – 2026-02-18");
        assert_eq!(Zone::utc().format_timestamp(a), "2026-02-17 23:37 UTC");
        assert_eq!(la.format_attr(a), "2026-02-17T15:37:00");
        assert_eq!(
            Zone::parse("Mars/Olympus").unwrap_err().code,
            ErrorCode::Config
        );
    }
}
