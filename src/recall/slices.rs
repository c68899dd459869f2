//! Trigram slices: a persisted, bit-sliced signature of message text, for the
//! first regex `grep` after open, before the in-memory catalog is built.
//!
//! Every message's trigram hashes (the catalog's, [`for_each_trigram_hash`]) are
//! put into [`BUCKETS`] buckets. Message ids are cut into blocks of
//! [`BLOCK_IDS`], and each block has one slice per bucket (a row of
//! `lcm_trigram_slices`, key `block × BUCKETS + bucket`, see
//! [`crate::store::slices`]): bit `i` of the slice of bucket `b` says that
//! message `block_start + i` has a trigram in bucket `b`. A query reads only the
//! slices of its own trigrams' buckets (a needle id: ≈ 9 of 1,024 per block, each
//! a row that fits in its page), ANDs them (ORs for alternatives) and gets the ids
//! that may match: never fewer than do match, since a message has a bit in the
//! bucket of every trigram it holds.
//!
//! A block is stored once it is complete, that is once its last id or a larger
//! one is committed: ids only grow (AUTOINCREMENT, and the engine's explicit ids
//! follow the same rule; the deferred full-text watermark relies on it too), and
//! messages are never rewritten, so a stored block never changes. Deleted
//! messages leave bits behind, which only cost a lookup. Ids above the last
//! stored block (the tail) are read and checked one by one. The catalog's first
//! build computes the blocks the file lacks from the hashes it computes anyway
//! ([`BlockBuilder`]); blocks completed later are computed in the background
//! from the messages themselves ([`missing_blocks`]); both are stored a few per
//! transaction, in order, so the stored blocks are always those from 0 up to
//! some block.
//!
//! Once [`GROUP_BLOCKS`] consecutive blocks are stored, one row per bucket in
//! `lcm_trigram_groups` holds their slices one after the other and replaces
//! their rows ([`compact`]): a query then reads one row per bucket for the whole
//! group. A query reads spans ([`spans_newest_first`]: the blocks above the
//! groups, then the groups).
//!
//! Size: `BUCKETS / 8` bytes per message id (128; ≈ 136 with SQLite's row and
//! page overhead).

use super::catalog::{for_each_trigram_hash, Compiled, TrigramSink};
use crate::error::Result;
use crate::store::recall;
use crate::store::slices::{self as rows, SliceTable};

/// Slice rows: `(block × BUCKETS + bucket, bytes)` of `lcm_trigram_slices`, or
/// `(group × BUCKETS + bucket, bytes)` of `lcm_trigram_groups`.
pub type SliceRows = Vec<(i64, Vec<u8>)>;

/// The layout number stored with every block: a change of [`BLOCK_IDS`],
/// [`BUCKETS`], the bucket rule or the trigram hash must change it (rows of
/// another layout are never read).
pub const LAYOUT: i64 = 1;
/// Message ids per block.
pub const BLOCK_IDS: i64 = 2048;
/// Buckets a trigram hash falls into.
pub const BUCKETS: usize = 1024;
/// `u64` words of one bucket's slice.
const WORDS: usize = BLOCK_IDS as usize / 64;
/// Bytes of one bucket's slice.
const SLICE_BYTES: usize = WORDS * 8;

/// The bucket of a trigram hash (bits 32.. of it: the catalog's Bloom filters use
/// the low bits, its coarse filter bits 32..40).
fn bucket(h: u64) -> usize {
    (h >> 32) as usize & (BUCKETS - 1)
}

/// Blocks without a message stored in a row before slices stop: ids that jump
/// further (another writer's explicit id far ahead) leave the rest of the file
/// without slices rather than fill the gap (1,024 rows a block); its regexes then
/// answer as before.
const MAX_EMPTY_BLOCKS: i64 = 64;

/// The block of a message id.
fn block_of(id: i64) -> i64 {
    (id - 1).div_euclid(BLOCK_IDS)
}

/// The first message id of `block`.
pub fn block_start(block: i64) -> i64 {
    block * BLOCK_IDS + 1
}

/// Blocks complete in a file whose largest message id is `max_id`.
fn complete_blocks(max_id: i64) -> i64 {
    max_id.max(0) / BLOCK_IDS
}

/// Message ids at or below this are covered by stored blocks.
pub fn covered_upto(conn: &rusqlite::Connection) -> Result<i64> {
    Ok(stored_blocks(conn)? * BLOCK_IDS)
}

/// How many blocks are stored (every block below that number is, as a block's
/// rows or in a group).
fn stored_blocks(conn: &rusqlite::Connection) -> Result<i64> {
    let blocks = stored_in(conn, SliceTable::Blocks)?;
    Ok(blocks.max(stored_groups(conn)? * GROUP_BLOCKS))
}

/// How many groups are stored (every group below that number is).
fn stored_groups(conn: &rusqlite::Connection) -> Result<i64> {
    stored_in(conn, SliceTable::Groups)
}

/// The number of units (blocks, or groups) whose rows end at the last key of
/// `table`.
fn stored_in(conn: &rusqlite::Connection, table: SliceTable) -> Result<i64> {
    let buckets = BUCKETS as i64;
    Ok(rows::last_slice(conn, table, LAYOUT)?.map_or(0, |last| (last + 1) / buckets))
}

/// Forgets the stored slices that cover message `id` and every later one (its
/// text was rewritten, so its block's bits may lack its new trigrams): the group
/// holding its block and every later group and block. What stays is still every
/// block from 0 up to some block; the ids above it are checked one by one until a
/// later slice pass stores their blocks again from the messages. Run it inside
/// the write transaction that rewrote the message. Returns the rows deleted.
pub fn forget_message(tx: &rusqlite::Connection, id: i64) -> Result<usize> {
    if id > covered_upto(tx)? {
        return Ok(0);
    }
    let group = block_of(id).max(0) / GROUP_BLOCKS;
    let buckets = BUCKETS as i64;
    rows::forget_from(tx, group * GROUP_BLOCKS * buckets, group * buckets)
}

/// Blocks per group: once a group's blocks are all stored, their rows are
/// replaced by one row per bucket holding the group's slices one after the
/// other (15 × 256 bytes: one row per 4 KiB page), so that a query reads 15×
/// fewer rows, and pages, in the blocks of the group (the pages a fresh
/// connection reads in are most of a first query's cost).
pub const GROUP_BLOCKS: i64 = 15;

/// Stores block rows (see [`missing_blocks`], [`BlockBuilder`]) inside the write
/// transaction `tx`, then replaces the blocks of every group now complete with
/// the group's rows ([`compact`]).
pub fn store(tx: &rusqlite::Connection, blocks: &SliceRows) -> Result<()> {
    // Blocks another engine on the file has grouped meanwhile are not stored
    // again (their rows would never be read, nor deleted).
    let grouped = stored_groups(tx)? * GROUP_BLOCKS * BUCKETS as i64;
    let fresh = blocks.iter().filter(|(k, _)| *k >= grouped);
    rows::store_slices(tx, LAYOUT, fresh)?;
    while compact(tx)? {}
    Ok(())
}

/// Whether the blocks of a group not stored as one are all stored.
pub fn compaction_due(conn: &rusqlite::Connection) -> Result<bool> {
    Ok(due_group(conn)?.is_some())
}

/// The first group not stored as one, when all its blocks are stored.
fn due_group(conn: &rusqlite::Connection) -> Result<Option<i64>> {
    let group = stored_groups(conn)?;
    let blocks = stored_in(conn, SliceTable::Blocks)?;
    Ok((blocks >= (group + 1) * GROUP_BLOCKS).then_some(group))
}

/// Replaces the rows of the first group not stored as one, when all its blocks
/// are stored, with the group's rows (bucket by bucket, each the group's blocks'
/// slices in block order; a block without messages as zeros): whether it did.
/// Inside the caller's write transaction; rows of unexpected sizes or another
/// layout leave the blocks as they are.
pub fn compact(tx: &rusqlite::Connection) -> Result<bool> {
    let Some(group) = due_group(tx)? else {
        return Ok(false);
    };
    let first = group * GROUP_BLOCKS;
    let buckets = BUCKETS as i64;
    let keys = first * buckets..(first + GROUP_BLOCKS) * buckets;
    let found = rows::block_slices(tx, keys.clone())?;
    if found.len() as i64 != GROUP_BLOCKS * buckets {
        return Ok(false);
    }
    let mut bits = vec![vec![0u8; GROUP_BLOCKS as usize * SLICE_BYTES]; BUCKETS];
    for (key, layout, bytes) in &found {
        let (block, bucket) = ((key / buckets - first) as usize, (key % buckets) as usize);
        match bytes.len() {
            _ if *layout != LAYOUT => return Ok(false),
            SLICE_BYTES => {
                bits[bucket][block * SLICE_BYTES..][..SLICE_BYTES].copy_from_slice(bytes)
            }
            0 => {}
            _ => return Ok(false),
        }
    }
    let group_rows: SliceRows = bits
        .into_iter()
        .enumerate()
        .map(|(b, bytes)| (group * buckets + b as i64, bytes))
        .collect();
    rows::replace_with_group(tx, LAYOUT, &group_rows, keys)?;
    Ok(true)
}

/// The rows of up to `max` complete blocks not stored yet, from the first
/// missing one on, computed from the messages of `conn`'s snapshot (empty when
/// every complete block is stored). `between` runs after each block (where a
/// background pass yields, or stops with an error).
pub fn missing_blocks(
    conn: &rusqlite::Connection,
    max: usize,
    mut between: impl FnMut() -> Result<()>,
) -> Result<SliceRows> {
    let from = stored_blocks(conn)?;
    let upto = complete_blocks(crate::store::messages::max_message_id(conn)?);
    let mut out = Vec::new();
    for block in (from..upto).take(max) {
        let next = crate::store::messages::next_message_id_from(conn, block_start(block))?;
        if next.is_some_and(|id| block_of(id) - block > MAX_EMPTY_BLOCKS) {
            break;
        }
        out.extend(block_rows(conn, block)?);
        between()?;
    }
    Ok(out)
}

/// A block's rows: the slice of every bucket (words little-endian), keyed
/// `block × BUCKETS + bucket`; empty slices when the block holds no message.
fn block_rows(conn: &rusqlite::Connection, block: i64) -> Result<SliceRows> {
    let start = block_start(block);
    let mut bits = vec![0u64; BUCKETS * WORDS];
    let mut any = false;
    recall::for_each_message_between(conn, start - 1, start + BLOCK_IDS - 1, |r| {
        any = true;
        let i = (r.id - start) as usize;
        let (word, bit) = (i / 64, 1u64 << (i % 64));
        for_each_trigram_hash(r.content(), |h| bits[bucket(h) * WORDS + word] |= bit);
    })?;
    Ok(encode(block, any.then_some(&bits[..])))
}

/// A block's rows from its bits (every bucket's slice, bucket after bucket),
/// words little-endian; empty slices for a block without messages (`None`).
fn encode(block: i64, bits: Option<&[u64]>) -> SliceRows {
    let key = |b: usize| block * BUCKETS as i64 + b as i64;
    (0..BUCKETS)
        .map(|b| {
            let bytes = bits.map_or_else(Vec::new, |bits| {
                bits[b * WORDS..(b + 1) * WORDS]
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .collect()
            });
            (key(b), bytes)
        })
        .collect()
}

/// Builds the rows of the complete blocks a catalog build reads, from the hashes
/// the build computes anyway ([`TrigramSink`]), and hands them to `store` a few
/// blocks at a time: the blocks from `from` on (the first one not stored), up to
/// the last complete one. Holds one block's bits (256 KiB) while it runs.
pub struct BlockBuilder<F: FnMut(SliceRows)> {
    from: i64,
    block: Option<i64>,
    bits: Vec<u64>,
    at: Option<(usize, u64)>,
    done: SliceRows,
    store: F,
}

impl<F: FnMut(SliceRows)> BlockBuilder<F> {
    /// A builder of the blocks `conn` lacks, handing their rows to `store`.
    pub fn new(conn: &rusqlite::Connection, store: F) -> Result<BlockBuilder<F>> {
        Ok(BlockBuilder {
            from: stored_blocks(conn)?,
            block: None,
            bits: Vec::new(),
            at: None,
            done: Vec::new(),
            store,
        })
    }

    /// Ends the build: hands on what is complete given that `last_id` is the
    /// largest id committed (the block holding it is complete only when it is
    /// the block's last id); the rest is dropped.
    pub fn finish(mut self, last_id: i64) {
        if let Some(b) = self.block {
            if complete_blocks(last_id) > b {
                self.complete(b);
            }
        }
        self.flush();
    }

    /// Block `b` (held in `bits`, with a message at least) is complete.
    fn complete(&mut self, b: i64) {
        if b >= self.from {
            let rows = encode(b, Some(&self.bits[..]));
            self.done.extend(rows);
        }
        if self.done.len() >= SLICE_ROWS_PER_WRITE {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if !self.done.is_empty() {
            (self.store)(std::mem::take(&mut self.done));
        }
    }
}

/// Rows handed to the store at a time (4 blocks).
const SLICE_ROWS_PER_WRITE: usize = 4 * BUCKETS;

impl<F: FnMut(SliceRows)> TrigramSink for BlockBuilder<F> {
    fn message(&mut self, id: i64) {
        let b = block_of(id);
        if self.block != Some(b) {
            if let Some(prev) = self.block {
                self.complete(prev);
            }
            // Blocks no message falls in, before this one (stored blocks have no
            // gap: every block from 0 up to the last stored one is stored).
            let first_empty = self.block.map_or(0, |p| p + 1).max(self.from);
            if b - first_empty > MAX_EMPTY_BLOCKS {
                self.from = i64::MAX;
            } else {
                for empty in first_empty..b {
                    self.done.extend(encode(empty, None));
                }
            }
            self.block = Some(b);
            if b >= self.from {
                self.bits.clear();
                self.bits.resize(BUCKETS * WORDS, 0);
            }
        }
        let i = (id - block_start(b)) as usize;
        self.at = (b >= self.from).then_some((i / 64, 1u64 << (i % 64)));
    }

    fn hash(&mut self, h: u64) {
        if let Some((word, bit)) = self.at {
            self.bits[bucket(h) * WORDS + word] |= bit;
        }
    }
}

/// Whether `req` narrows anything: a fragment shorter than a trigram holds every
/// message.
pub fn constrains(req: &Compiled) -> bool {
    match req {
        Compiled::Lit(h) => !h.is_empty(),
        Compiled::All(v) => v.iter().any(constrains),
        Compiled::Any(v) => !v.is_empty() && v.iter().all(constrains),
    }
}

/// A run of stored blocks read at once: one block's rows, or a group's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The first block.
    first: i64,
    /// The group, when the span is one.
    group: Option<i64>,
}

impl Span {
    /// The first message id of the span.
    pub fn start(&self) -> i64 {
        block_start(self.first)
    }

    /// The last message id of the span.
    pub fn end(&self) -> i64 {
        block_start(self.first + self.blocks() as i64) - 1
    }

    fn blocks(&self) -> usize {
        if self.group.is_some() {
            GROUP_BLOCKS as usize
        } else {
            1
        }
    }
}

/// The spans of the stored blocks, newest first: the blocks above the stored
/// groups one by one, then the groups.
pub fn spans_newest_first(conn: &rusqlite::Connection) -> Result<Vec<Span>> {
    let groups = stored_groups(conn)?;
    let blocks = stored_blocks(conn)?;
    let singles = (groups * GROUP_BLOCKS..blocks).rev().map(|b| Span {
        first: b,
        group: None,
    });
    let grouped = (0..groups).rev().map(|g| Span {
        first: g * GROUP_BLOCKS,
        group: Some(g),
    });
    Ok(singles.chain(grouped).collect())
}

/// Reads, span by span, the ids whose slices hold one query's requirement:
/// only the slices of its trigrams' buckets, through one blob handle per table.
pub struct Matcher<'c, 'r> {
    req: &'r Compiled,
    needed: Vec<usize>,
    blocks: rows::SliceReader<'c>,
    groups: rows::SliceReader<'c>,
    slices: Vec<Vec<u64>>,
    buf: Vec<u8>,
}

impl<'c, 'r> Matcher<'c, 'r> {
    /// A matcher of `req` over the slices stored in `conn`. Use it only when
    /// `req` [`constrains`] the search.
    pub fn new(conn: &'c rusqlite::Connection, req: &'r Compiled) -> Matcher<'c, 'r> {
        let mut needed: Vec<usize> = Vec::new();
        buckets_of(req, &mut needed);
        needed.sort_unstable();
        needed.dedup();
        Matcher {
            req,
            slices: vec![Vec::new(); needed.len()],
            needed,
            blocks: rows::SliceReader::new(conn, SliceTable::Blocks),
            groups: rows::SliceReader::new(conn, SliceTable::Groups),
            buf: Vec::new(),
        }
    }

    /// Replaces `out` with the ids of `span` whose slices hold the requirement,
    /// in increasing order (none for a block without messages); false when the
    /// span is not stored in this layout (a slice is missing or of another
    /// size), and then nothing read can be trusted.
    pub fn span(&mut self, span: Span, out: &mut Vec<i64>) -> Result<bool> {
        out.clear();
        let (reader, key_base) = match span.group {
            Some(g) => (&mut self.groups, g),
            None => (&mut self.blocks, span.first),
        };
        let size = span.blocks() * SLICE_BYTES;
        self.buf.resize(size, 0);
        for (slot, &b) in self.needed.iter().enumerate() {
            match reader.read(key_base * BUCKETS as i64 + b as i64, &mut self.buf)? {
                Some(n) if n == size => {}
                // An empty slice: the block holds no message.
                Some(0) if span.group.is_none() => return Ok(true),
                // Missing, or of another size: not a span of ours.
                _ => return Ok(false),
            }
            let words = &mut self.slices[slot];
            words.clear();
            words.extend(
                self.buf
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())),
            );
        }
        let needed = &self.needed;
        let slices = &self.slices;
        let at = |b: usize| &slices[needed.binary_search(&b).unwrap_or(0)][..];
        let start = span.start();
        for (w, word) in mask(self.req, &at, span.blocks() * WORDS)
            .iter()
            .enumerate()
        {
            let mut word = *word;
            while word != 0 {
                let i = word.trailing_zeros() as usize;
                word &= word - 1;
                out.push(start + (w * 64 + i) as i64);
            }
        }
        Ok(true)
    }
}

/// The ids up to `covered` (a multiple of [`BLOCK_IDS`], see [`covered_upto`])
/// whose slices hold `req`, in increasing order; `None` when a block is not
/// stored in this layout or there are more than `cap`.
#[cfg(test)]
pub fn candidates(
    conn: &rusqlite::Connection,
    req: &Compiled,
    covered: i64,
    cap: usize,
) -> Result<Option<Vec<i64>>> {
    let mut m = Matcher::new(conn, req);
    let mut ids = Vec::new();
    let mut out = Vec::new();
    let mut spans = spans_newest_first(conn)?;
    spans.reverse();
    for span in spans.into_iter().filter(|s| s.start() <= covered) {
        if !m.span(span, &mut ids)? {
            return Ok(None);
        }
        out.extend(ids.iter().filter(|&&id| id <= covered));
        if out.len() > cap {
            return Ok(None);
        }
    }
    Ok(Some(out))
}

/// Every bucket `req`'s fragments fall into.
fn buckets_of(req: &Compiled, out: &mut Vec<usize>) {
    match req {
        Compiled::Lit(h) => out.extend(h.iter().map(|&h| bucket(h))),
        Compiled::All(v) | Compiled::Any(v) => v.iter().for_each(|r| buckets_of(r, out)),
    }
}

/// The ids of a span (as `words` words of bits) that may satisfy `req`, from its
/// slices.
fn mask<'a>(req: &Compiled, at: &impl Fn(usize) -> &'a [u64], words: usize) -> Vec<u64> {
    let and = |m: &mut Vec<u64>, s: &[u64]| m.iter_mut().zip(s).for_each(|(m, s)| *m &= s);
    match req {
        Compiled::Lit(h) => h.iter().fold(vec![u64::MAX; words], |mut m, &h| {
            and(&mut m, at(bucket(h)));
            m
        }),
        Compiled::All(v) => v.iter().fold(vec![u64::MAX; words], |mut m, r| {
            and(&mut m, &mask(r, at, words));
            m
        }),
        Compiled::Any(v) => v.iter().fold(vec![0; words], |mut m, r| {
            m.iter_mut()
                .zip(mask(r, at, words))
                .for_each(|(m, s)| *m |= s);
            m
        }),
    }
}

#[cfg(test)]
mod tests;
