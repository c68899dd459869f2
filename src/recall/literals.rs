//! What a regex requires of a text: the literal fragments every match must contain,
//! combined with AND / OR, extracted from the pattern's HIR (regex-syntax). The
//! in-memory substring index uses them to skip texts that cannot match before the
//! regex runs. Fragments are case-normalized ([`super::text::normalize`]), so the
//! requirement also holds for case-insensitive patterns.

use regex_syntax::hir::{Class, Hir, HirKind};

use super::text::normalize_char;

/// Shortest useful fragment, in bytes (the index works on byte trigrams).
pub const MIN_FRAGMENT_BYTES: usize = 3;

/// A necessary condition on a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Req {
    /// Every part holds.
    All(Vec<Req>),
    /// At least one part holds.
    Any(Vec<Req>),
    /// The normalized text contains this normalized fragment.
    Lit(String),
}

/// The requirement of a pattern, or `None` when the pattern has no usable literal
/// (then every text is a candidate). `pattern` must already compile as a regex.
pub fn of_pattern(pattern: &str) -> Option<Req> {
    let hir = regex_syntax::ParserBuilder::new()
        .nest_limit(250)
        .build()
        .parse(pattern)
        .ok()?;
    of_hir(&hir)
}

/// A requirement on texts that contain every one of `terms` (case-normalized).
pub fn of_terms(terms: &[String]) -> Option<Req> {
    let parts: Vec<Req> = terms
        .iter()
        .filter_map(|t| lit(super::text::normalize(t).into_owned()))
        .collect();
    all(parts)
}

fn lit(s: String) -> Option<Req> {
    (s.len() >= MIN_FRAGMENT_BYTES).then_some(Req::Lit(s))
}

fn all(mut parts: Vec<Req>) -> Option<Req> {
    match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(Req::All(parts)),
    }
}

fn of_hir(h: &Hir) -> Option<Req> {
    if let Some(s) = literal_of(h) {
        return lit(s);
    }
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) | HirKind::Literal(_) | HirKind::Class(_) => None,
        HirKind::Repetition(r) if r.min >= 1 => of_hir(&r.sub),
        HirKind::Repetition(_) => None,
        HirKind::Capture(c) => of_hir(&c.sub),
        HirKind::Concat(subs) => of_concat(subs),
        HirKind::Alternation(subs) => {
            let branches: Option<Vec<Req>> = subs.iter().map(of_hir).collect();
            Some(Req::Any(branches?))
        }
    }
}

/// Adjacent literal parts of a concatenation are joined into one fragment (look
/// assertions are zero-width, so they do not break adjacency).
fn of_concat(subs: &[Hir]) -> Option<Req> {
    let mut parts = Vec::new();
    let mut run = String::new();
    for s in subs {
        if let Some(l) = literal_of(s) {
            run.push_str(&l);
            continue;
        }
        parts.extend(lit(std::mem::take(&mut run)));
        parts.extend(of_hir(s));
    }
    parts.extend(lit(run));
    all(parts)
}

/// The exact normalized text a node always matches, when it matches only one.
fn literal_of(h: &Hir) -> Option<String> {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => Some(String::new()),
        HirKind::Literal(l) => std::str::from_utf8(&l.0)
            .ok()
            .map(|s| s.chars().map(normalize_char).collect()),
        HirKind::Class(c) => single_char(c).map(String::from),
        HirKind::Capture(c) => literal_of(&c.sub),
        HirKind::Concat(subs) => subs.iter().map(literal_of).collect(),
        HirKind::Repetition(r) if Some(r.min) == r.max && r.min <= 16 => {
            literal_of(&r.sub).map(|s| s.repeat(r.min as usize))
        }
        _ => None,
    }
}

/// A class all of whose members normalize to one code point (e.g. `[Kk]` under
/// `(?i)`), as that code point.
fn single_char(c: &Class) -> Option<char> {
    let mut members: Vec<char> = Vec::new();
    match c {
        Class::Unicode(u) => {
            for r in u.ranges() {
                if (r.end() as u32) - (r.start() as u32) > 8 {
                    return None;
                }
                members.extend(r.start()..=r.end());
            }
        }
        Class::Bytes(b) => {
            for r in b.ranges() {
                if r.end() > 0x7f || r.end() - r.start() > 8 {
                    return None;
                }
                members.extend((r.start()..=r.end()).map(char::from));
            }
        }
    }
    let first = normalize_char(*members.first()?);
    members
        .iter()
        .all(|&m| normalize_char(m) == first)
        .then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> Req {
        Req::Lit(s.into())
    }

    #[test]
    fn literals_are_joined_and_normalized() {
        assert_eq!(of_pattern("NEEDLE-1-5"), Some(l("needle-1-5")));
        assert_eq!(of_pattern(r"\bECONNRESET\b"), Some(l("econnreset")));
        assert_eq!(of_pattern("(?i)hello world"), Some(l("hello world")));
        assert_eq!(
            of_pattern("foo.*bar"),
            Some(Req::All(vec![l("foo"), l("bar")]))
        );
        assert_eq!(
            of_pattern("(foo|barbaz)qux"),
            Some(Req::All(vec![
                Req::Any(vec![l("foo"), l("barbaz")]),
                l("qux")
            ]))
        );
        assert_eq!(of_pattern("(NEEDLE)-1"), Some(l("needle-1")));
        assert_eq!(of_pattern("a{3}b"), Some(l("aaab")));
    }

    #[test]
    fn patterns_without_a_required_literal_give_none() {
        assert_eq!(of_pattern(r"\d{4}-\d{2}"), None);
        assert_eq!(of_pattern("(foo)?bar?"), None);
        assert_eq!(of_pattern("foo|.*"), None);
        assert_eq!(of_pattern("ab"), None);
        assert_eq!(of_pattern("(a+)+$"), None);
        // (?i)s matches the long s, which does not lower-case to s: no fragment.
        assert_eq!(of_pattern("(?i)sss"), None);
    }

    #[test]
    fn terms_requirement() {
        assert_eq!(of_terms(&["数据库".into(), "ab".into()]), Some(l("数据库")));
        assert_eq!(of_terms(&["ab".into()]), None);
    }
}
