//! The in-memory message catalog behind `grep` over messages.
//!
//! For every stored message it keeps the id, conversation, role and time (so scope,
//! time filters and recency order never touch SQLite) and a small Bloom filter of
//! the byte trigrams of its case-normalized text, sized by its distinct trigrams
//! (filled at two bits per trigram position, then folded while at most 60 % of
//! its bits are set: about 1.6 bits per distinct trigram; a power of two between
//! 64 bits and 64 Kibit). A regex or CJK query is turned into the literal
//! fragments every match must contain ([`super::literals`]); only messages whose
//! filter holds all their trigrams are read from SQLite and checked. Before the
//! per-message filters, a bit-sliced coarse filter (256 trigram buckets per
//! message, stored 64 messages to a word) discards most messages with a few word
//! ANDs per block. Filters have false positives, never false negatives, so
//! results are exact.
//!
//! The catalog is built in the background right after open (one pass over
//! `messages`) and caught up on each later search with the rows whose id is above
//! the last one seen (`messages.message_id` is AUTOINCREMENT and messages are
//! never rewritten). Memory: about 26 bytes of columns, 32 bytes of coarse filter
//! and the folded Bloom filter per message (under 10 MiB for the shared
//! 100k-message workload).

use std::collections::HashMap;

use rusqlite::Connection;

use super::literals::Req;
use super::text::normalize;
use crate::error::Result;
use crate::store::recall;

const MIN_WORDS: usize = 1;
const MAX_WORDS: usize = 1024;

/// Buckets of the coarse filter (bits per message).
pub const BUCKETS: usize = 256;

/// Role codes kept per message.
pub const ROLES: [&str; 4] = ["user", "assistant", "tool", "system"];

/// A requirement with its fragments hashed.
#[derive(Debug, Clone)]
pub enum Compiled {
    /// Every part holds.
    All(Vec<Compiled>),
    /// One part holds.
    Any(Vec<Compiled>),
    /// The trigram hashes of one fragment.
    Lit(Vec<u64>),
}

impl Compiled {
    /// Hashes the fragments of a requirement.
    pub fn new(r: &Req) -> Compiled {
        match r {
            Req::All(v) => Compiled::All(v.iter().map(Compiled::new).collect()),
            Req::Any(v) => Compiled::Any(v.iter().map(Compiled::new).collect()),
            Req::Lit(s) => {
                let mut h: Vec<u64> = s.as_bytes().windows(3).map(trigram_hash).collect();
                h.sort_unstable();
                h.dedup();
                Compiled::Lit(h)
            }
        }
    }
}

fn trigram_hash(w: &[u8]) -> u64 {
    mix((u64::from(w[0]) << 16) | (u64::from(w[1]) << 8) | u64::from(w[2]))
}

/// Multiplicative hash of a 24-bit trigram, rotated so its best-mixed bits come
/// first (the Bloom filters use the low bits, the coarse buckets bits 32..40).
fn mix(v: u64) -> u64 {
    v.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_right(24)
}

fn bucket(h: u64) -> usize {
    (h >> 32) as usize % BUCKETS
}

/// A message's text as its trigrams are taken: ASCII as it is (lower-cased byte
/// by byte in [`hashes_of`]), other text through [`normalize`].
fn normalized(content: &str) -> std::borrow::Cow<'_, str> {
    if content.is_ascii() {
        std::borrow::Cow::Borrowed(content)
    } else {
        normalize(content)
    }
}

/// Calls `f` with the hash of every byte trigram of `bytes` (ASCII lower-cased),
/// in text order, repeats included: what every filter of a message holds.
fn hashes_of(bytes: &[u8], mut f: impl FnMut(u64)) {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate() {
        v = ((v << 8) | u64::from(b.to_ascii_lowercase())) & 0xFF_FFFF;
        if i >= 2 {
            f(mix(v));
        }
    }
}

/// Calls `f` with the hash of every trigram of a message's text, as the
/// catalog's filters take them ([`Compiled`] hashes a query's fragments the same
/// way): the one rule a filter of message text is built by.
pub fn for_each_trigram_hash(content: &str, f: impl FnMut(u64)) {
    hashes_of(normalized(content).as_bytes(), f);
}

/// The highest share of set bits a message's filter is folded down to.
const MAX_FILL: f64 = 0.6;

/// The in-memory catalog of messages, in id order.
#[derive(Debug, Default)]
pub struct Catalog {
    ids: Vec<i64>,
    /// Index into `conv_ids` per message.
    conv: Vec<u32>,
    conv_ids: Vec<i64>,
    conv_index: HashMap<i64, u32>,
    time: Vec<i64>,
    role: Vec<u8>,
    /// Per block of 64 messages: the latest time among all messages up to the
    /// block's end (the running maximum for the last block).
    block_max: Vec<i64>,
    sig_off: Vec<u32>,
    sig_log2: Vec<u8>,
    sig: Vec<u64>,
    /// Bit-sliced coarse filter: per block of 64 messages, [`BUCKETS`] words whose
    /// bit `i` says message `64 * block + i` has a trigram in that bucket.
    coarse: Vec<u64>,
    /// Scratch filter of the message being added.
    scratch: Vec<u64>,
    loaded: bool,
}

/// A message row as read for the catalog.
pub struct NewRow<'a> {
    /// message_id
    pub id: i64,
    /// conversation_id
    pub conversation_id: i64,
    /// DB role.
    pub role: &'a str,
    /// Time, epoch milliseconds.
    pub time_ms: i64,
    /// Plain-text content.
    pub content: &'a str,
}

impl Catalog {
    /// Number of messages.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the catalog holds no message.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The highest id seen (0 when empty).
    pub fn last_id(&self) -> i64 {
        self.ids.last().copied().unwrap_or(0)
    }

    /// Whether the first full load happened.
    pub fn is_loaded(&self) -> bool {
        self.loaded
    }

    /// Bytes of memory held by the catalog's vectors (their capacity).
    pub fn memory_bytes(&self) -> usize {
        self.ids.capacity() * 8
            + self.conv.capacity() * 4
            + self.time.capacity() * 8
            + self.role.capacity()
            + self.sig_off.capacity() * 4
            + self.sig_log2.capacity()
            + self.conv_ids.capacity() * 8
            + self.conv_index.capacity() * 16
            + (self.block_max.capacity() + self.sig.capacity() + self.coarse.capacity()) * 8
    }

    /// Gives back the vectors' spare capacity (after the first full load).
    fn shrink(&mut self) {
        self.ids.shrink_to_fit();
        self.conv.shrink_to_fit();
        self.time.shrink_to_fit();
        self.role.shrink_to_fit();
        self.sig_off.shrink_to_fit();
        self.sig_log2.shrink_to_fit();
        self.block_max.shrink_to_fit();
        self.sig.shrink_to_fit();
        self.coarse.shrink_to_fit();
        self.scratch = Vec::new();
    }

    /// Appends a message; ids must increase.
    pub fn push(&mut self, r: &NewRow) {
        self.push_into(r, &mut ());
    }

    /// [`Catalog::push`], also handing the message's trigram hashes to `sink`.
    fn push_into(&mut self, r: &NewRow, sink: &mut impl TrigramSink) {
        if r.id <= self.last_id() {
            return;
        }
        let ord = self.ids.len();
        self.ids.push(r.id);
        let next = self.conv_ids.len() as u32;
        let c = *self.conv_index.entry(r.conversation_id).or_insert(next);
        if c == next {
            self.conv_ids.push(r.conversation_id);
        }
        self.conv.push(c);
        self.time.push(r.time_ms);
        self.role
            .push(ROLES.iter().position(|x| *x == r.role).unwrap_or(0) as u8);
        if ord.is_multiple_of(64) {
            let before = self.block_max.last().copied().unwrap_or(i64::MIN);
            self.block_max.push(before.max(r.time_ms));
            self.coarse.resize(self.coarse.len() + BUCKETS, 0);
        } else if let Some(m) = self.block_max.last_mut() {
            *m = (*m).max(r.time_ms);
        }
        sink.message(r.id);
        self.push_signature(ord, r.content, sink);
    }

    /// Adds the filters of the message at `ord`: its trigrams go into a scratch
    /// Bloom filter sized for every trigram position (two bits each, a power of
    /// two between 64 bits and 64 Kibit), which is then folded in half (bit `i`
    /// of a filter of `2m` bits is bit `i mod m` of one of `m`) while at most
    /// [`MAX_FILL`] of its bits would be set, so its size follows the number of
    /// distinct trigrams rather than the length of the text.
    fn push_signature(&mut self, ord: usize, content: &str, sink: &mut impl TrigramSink) {
        let norm = normalized(content);
        let bytes = norm.as_bytes();
        let trigrams = bytes.len().saturating_sub(2);
        let words = (trigrams * 2)
            .div_ceil(64)
            .next_power_of_two()
            .clamp(MIN_WORDS, MAX_WORDS);
        self.scratch.clear();
        self.scratch.resize(words, 0);
        let mask = (words * 64 - 1) as u64;
        let doc_bit = 1u64 << (ord % 64);
        let cstart = (ord / 64) * BUCKETS;
        let coarse = &mut self.coarse[cstart..cstart + BUCKETS];
        let sig = &mut self.scratch[..];
        hashes_of(bytes, |h| {
            sink.hash(h);
            let bit = (h & mask) as usize;
            sig[bit >> 6] |= 1 << (bit & 63);
            coarse[bucket(h)] |= doc_bit;
        });
        let mut words = words;
        while words > MIN_WORDS {
            let half = words / 2;
            let (lo, hi) = self.scratch.split_at(half);
            let set: u32 = lo
                .iter()
                .zip(&hi[..half])
                .map(|(a, b)| (a | b).count_ones())
                .sum();
            if f64::from(set) > MAX_FILL * (half * 64) as f64 {
                break;
            }
            for i in 0..half {
                self.scratch[i] |= self.scratch[half + i];
            }
            words = half;
        }
        let off = self.sig.len();
        self.sig.extend_from_slice(&self.scratch[..words]);
        self.sig_off.push(off as u32);
        self.sig_log2.push(words.trailing_zeros() as u8);
    }

    /// Adds the trigrams of `content` to the filters of message `id` (its text was
    /// rewritten: a large file's reference took a model-written summary). Filters
    /// only gain bits, so they still pass every message that matches, old text or
    /// new. Returns false when the message is not in the catalog (a later catch-up
    /// reads its current text).
    pub fn add_text(&mut self, id: i64, content: &str) -> bool {
        let Some(ord) = self.position(id) else {
            return false;
        };
        let off = self.sig_off[ord] as usize;
        let words = 1usize << self.sig_log2[ord];
        let mask = (words * 64 - 1) as u64;
        let doc_bit = 1u64 << (ord % 64);
        let cstart = (ord / 64) * BUCKETS;
        let norm = normalized(content);
        let (sig, coarse) = (&mut self.sig, &mut self.coarse);
        hashes_of(norm.as_bytes(), |h| {
            let bit = (h & mask) as usize;
            sig[off + (bit >> 6)] |= 1 << (bit & 63);
            coarse[cstart + bucket(h)] |= doc_bit;
        });
        true
    }

    /// The position of a message id.
    pub fn position(&self, id: i64) -> Option<usize> {
        self.ids.binary_search(&id).ok()
    }

    /// message_id at a position.
    pub fn id(&self, ord: usize) -> i64 {
        self.ids[ord]
    }

    /// conversation_id at a position.
    pub fn conversation(&self, ord: usize) -> i64 {
        self.conv_ids[self.conv[ord] as usize]
    }

    /// Time (epoch ms) at a position.
    pub fn time(&self, ord: usize) -> i64 {
        self.time[ord]
    }

    /// DB role at a position.
    pub fn role(&self, ord: usize) -> &'static str {
        ROLES[self.role[ord] as usize]
    }

    /// The latest time among positions `0..=ord`.
    pub fn max_time_up_to(&self, ord: usize) -> i64 {
        let b = ord / 64;
        let before = if b == 0 {
            i64::MIN
        } else {
            self.block_max[b - 1]
        };
        self.time[b * 64..=ord]
            .iter()
            .fold(before, |m, &t| m.max(t))
    }

    /// The messages of block `b` (positions `64b..64b+63`) that the coarse filter
    /// lets through.
    fn block_mask(&self, b: usize, req: &Compiled) -> u64 {
        match req {
            Compiled::All(v) => v.iter().fold(u64::MAX, |m, r| m & self.block_mask(b, r)),
            Compiled::Any(v) => v.iter().fold(0, |m, r| m | self.block_mask(b, r)),
            Compiled::Lit(hashes) => {
                let words = &self.coarse[b * BUCKETS..(b + 1) * BUCKETS];
                hashes.iter().fold(u64::MAX, |m, &h| m & words[bucket(h)])
            }
        }
    }

    /// Calls `f` with every position that may satisfy `req` (all positions when
    /// `None`), newest id first, until `f` returns false.
    pub fn for_each_candidate_desc(
        &self,
        req: Option<&Compiled>,
        mut f: impl FnMut(usize) -> bool,
    ) {
        let n = self.len();
        for b in (0..n.div_ceil(64)).rev() {
            let valid = if (b + 1) * 64 <= n {
                u64::MAX
            } else {
                (1u64 << (n - b * 64)) - 1
            };
            let mut mask = valid & req.map_or(u64::MAX, |r| self.block_mask(b, r));
            while mask != 0 {
                let i = 63 - mask.leading_zeros() as usize;
                mask &= !(1u64 << i);
                let ord = b * 64 + i;
                if req.is_none_or(|r| self.may_match(ord, r)) && !f(ord) {
                    return;
                }
            }
        }
    }

    /// Whether the message at `ord` may satisfy the requirement.
    pub fn may_match(&self, ord: usize, req: &Compiled) -> bool {
        match req {
            Compiled::All(v) => v.iter().all(|r| self.may_match(ord, r)),
            Compiled::Any(v) => v.iter().any(|r| self.may_match(ord, r)),
            Compiled::Lit(hashes) => {
                let off = self.sig_off[ord] as usize;
                let words = 1usize << self.sig_log2[ord];
                let mask = (words * 64 - 1) as u64;
                let sig = &self.sig[off..off + words];
                hashes.iter().all(|h| {
                    let bit = (h & mask) as usize;
                    sig[bit >> 6] & (1 << (bit & 63)) != 0
                })
            }
        }
    }

    /// Reads the messages added since the last call (all of them the first time).
    /// Returns how many were added.
    pub fn catch_up(&mut self, conn: &Connection) -> Result<usize> {
        self.catch_up_with(conn, || Ok(()))
    }

    /// [`Catalog::catch_up`], calling `between` every [`YIELD_EVERY`] messages
    /// (where a background build gives way to searches in flight, and stops when
    /// the engine closes: an error from `between` ends the build with it, and the
    /// catalog is then only partly filled, fit to be dropped).
    pub fn catch_up_with(
        &mut self,
        conn: &Connection,
        between: impl FnMut() -> Result<()>,
    ) -> Result<usize> {
        self.catch_up_into(conn, between, &mut ())
    }

    /// [`Catalog::catch_up_with`], handing every message's id and trigram hashes
    /// to `sink` as they are computed (the first build stores the trigram slices
    /// of complete blocks this way, without hashing the text twice).
    pub fn catch_up_into(
        &mut self,
        conn: &Connection,
        mut between: impl FnMut() -> Result<()>,
        sink: &mut impl TrigramSink,
    ) -> Result<usize> {
        let mut read = 0usize;
        let added = recall::for_each_message_after(conn, self.last_id(), |r| {
            read += 1;
            if read.is_multiple_of(YIELD_EVERY) {
                between()?;
            }
            let row = NewRow {
                id: r.id,
                conversation_id: r.conversation_id,
                role: r.role,
                time_ms: parse_time_ms(r.created_at),
                content: r.content(),
            };
            self.push_into(&row, sink);
            Ok(())
        })?;
        if !self.loaded {
            self.shrink();
        }
        self.loaded = true;
        Ok(added)
    }
}

/// What a catalog build hands on of every message it adds: its id, then the
/// hash of each trigram of its text (repeats included), as its filters take them.
pub trait TrigramSink {
    /// The next message (ids increase).
    fn message(&mut self, id: i64);
    /// A trigram hash of that message.
    fn hash(&mut self, h: u64);
}

/// No sink.
impl TrigramSink for () {
    fn message(&mut self, _: i64) {}
    fn hash(&mut self, _: u64) {}
}

/// Messages read between two calls of a build's `between`: bounds how long a
/// build runs before it yields its core or gives way to a search.
pub const YIELD_EVERY: usize = 256;

/// Epoch milliseconds of a stored time (`YYYY-MM-DD HH:MM:SS` fast path, any other
/// accepted shape through [`crate::timestamp::parse`]); 0 when unparseable.
pub fn parse_time_ms(s: &str) -> i64 {
    fast_sqlite_time(s.as_bytes())
        .or_else(|| crate::timestamp::parse(s).map(|t| t.timestamp_millis()))
        .unwrap_or(0)
}

fn fast_sqlite_time(b: &[u8]) -> Option<i64> {
    if b.len() != 19
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b' '
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        b[r].iter().try_fold(0i64, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    Some(days_from_civil(y, m, d) * 86_400_000 + (hh * 3600 + mm * 60 + ss) * 1000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::literals;

    fn row<'a>(id: i64, content: &'a str) -> NewRow<'a> {
        NewRow {
            id,
            conversation_id: 1,
            role: "user",
            time_ms: id * 1000,
            content,
        }
    }

    #[test]
    fn filters_have_no_false_negatives() {
        let mut c = Catalog::default();
        let texts: Vec<String> = (0..500)
            .map(|i| {
                format!(
                    "message {i} says Hello-{} and {}",
                    i * 7,
                    "filler words ".repeat(i % 40)
                )
            })
            .collect();
        for (i, t) in texts.iter().enumerate() {
            c.push(&row(i as i64 + 1, t));
        }
        for i in (0..500).step_by(37) {
            let pat = format!("(?i)HELLO-{}\\b", i * 7);
            let req = Compiled::new(&literals::of_pattern(&pat).unwrap());
            let ord = c.position(i as i64 + 1).unwrap();
            assert!(c.may_match(ord, &req));
            let hits = (0..c.len()).filter(|&o| c.may_match(o, &req)).count();
            // A message lacking `d` of the literal's trigrams passes with
            // probability at most MAX_FILL^d (one bit per trigram, at most that
            // share of bits set): the filters must do about that well.
            let needle = format!("hello-{}", i * 7);
            let expected: f64 = texts
                .iter()
                .map(|t| {
                    let t = t.to_ascii_lowercase();
                    let d = needle
                        .as_bytes()
                        .windows(3)
                        .filter(|w| !t.as_bytes().windows(3).any(|x| x == *w))
                        .count();
                    MAX_FILL.powi(d as i32)
                })
                .sum();
            assert!(
                (hits as f64) < 2.0 * expected + 5.0,
                "filter too weak: {hits} hits, {expected:.1} expected"
            );
            let mut seen = Vec::new();
            c.for_each_candidate_desc(Some(&req), |o| {
                seen.push(o);
                true
            });
            assert!(seen.contains(&ord));
            assert!(seen.len() <= hits);
            assert!(seen.windows(2).all(|w| w[0] > w[1]));
        }
        assert_eq!(c.max_time_up_to(10), 11_000);
        let mut all = 0;
        c.for_each_candidate_desc(None, |_| {
            all += 1;
            true
        });
        assert_eq!(all, 500);
    }

    #[test]
    fn sqlite_times_parse_fast_and_right() {
        assert_eq!(parse_time_ms("1970-01-01 00:00:01"), 1000);
        assert_eq!(
            parse_time_ms("2026-02-17 07:37:00"),
            crate::timestamp::parse("2026-02-17T07:37:00Z")
                .unwrap()
                .timestamp_millis()
        );
        assert_eq!(parse_time_ms("2026-02-17T07:37:00.500Z"), 1771313820500);
        assert_eq!(parse_time_ms("garbage"), 0);
    }
}
