use proptest::prelude::*;
use rusqlite::Connection;

use super::*;
use crate::recall::literals;

/// A migrated in-memory database holding `texts` as user messages (ids 1..).
fn database_of(texts: &[String]) -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    crate::store::migrate::migrate(&mut conn).unwrap();
    append(&mut conn, texts);
    conn
}

/// Stores `texts` as more user messages.
fn append<S: AsRef<str>>(conn: &mut Connection, texts: impl IntoIterator<Item = S>) {
    crate::store::messages::insert_user_texts(conn, texts).unwrap();
}

/// Stores every complete block; how many there were.
fn store_all(conn: &mut Connection) -> usize {
    let slices = missing_blocks(conn, usize::MAX, || Ok(())).unwrap();
    let tx = conn.transaction().unwrap();
    super::store(&tx, &slices).unwrap();
    tx.commit().unwrap();
    slices.len() / BUCKETS
}

fn compiled(pattern: &str) -> Compiled {
    Compiled::new(&literals::of_pattern(pattern).expect("literals"))
}

/// Whether a pattern's literals narrow the slices (no literal at all: no).
fn narrows(pattern: &str) -> bool {
    literals::of_pattern(pattern).is_some_and(|r| constrains(&Compiled::new(&r)))
}

#[test]
fn blocks_are_stored_once_complete_and_never_again() {
    let texts: Vec<String> = (0..2 * BLOCK_IDS + 5)
        .map(|i| format!("message {i}"))
        .collect();
    let mut conn = database_of(&texts[..BLOCK_IDS as usize - 1]);
    assert_eq!(
        store_all(&mut conn),
        0,
        "block 0 is complete only once its last id is used"
    );
    append(&mut conn, &texts[BLOCK_IDS as usize - 1..]);
    assert_eq!(store_all(&mut conn), 2);
    assert_eq!(covered_upto(&conn).unwrap(), 2 * BLOCK_IDS);
    assert_eq!(store_all(&mut conn), 0, "nothing left to store");
    assert_eq!(rows::stored_count(&conn).unwrap(), 2 * BUCKETS as i64);
    let size = rows::stored_size(&conn, BUCKETS as i64 + 5)
        .unwrap()
        .unwrap();
    assert_eq!(
        size as usize,
        BLOCK_IDS as usize / 8,
        "one bucket's slice of block 1"
    );
    // A needle's candidates: itself and few others.
    let found = candidates(&conn, &compiled("message 3000"), 2 * BLOCK_IDS, 100)
        .unwrap()
        .unwrap();
    assert!(found.contains(&3001), "{found:?}");
    assert!(found.len() < 12, "{found:?}");
    // More candidates than the cap: none.
    assert_eq!(
        candidates(&conn, &compiled("message"), 2 * BLOCK_IDS, 100).unwrap(),
        None
    );
}

#[test]
fn what_narrows_and_what_does_not() {
    assert!(narrows("abc"));
    assert!(!narrows("ab"));
    assert!(!narrows(r"\d+"));
    assert!(narrows("abc.*d"), "one fragment of an AND is enough");
    assert!(!narrows("abc|d"), "every alternative must narrow");
    assert!(narrows("abc|def"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// No false negatives: every message holding a literal (any Unicode, any
    /// case) is among the candidates of that literal, in a stored block.
    #[test]
    fn a_message_is_a_candidate_of_every_literal_it_holds(
        texts in proptest::collection::vec(crate::text::strategies::text(40), 1..30),
        pick in any::<proptest::sample::Index>(),
        from in 0usize..40,
        len in 3usize..12,
    ) {
        // The picked text sits in block 0, which more messages then complete
        // (each text made unique: identical messages of a batch are stored once).
        let texts: Vec<String> = texts.iter().enumerate().map(|(i, t)| format!("t{i}\u{1f}{t}")).collect();
        let mut all: Vec<String> = texts.clone();
        all.extend((all.len() as i64..=BLOCK_IDS).map(|i| format!("filler {i}")));
        let mut conn = database_of(&all);
        prop_assert_eq!(store_all(&mut conn), 1);
        let k = pick.index(texts.len());
        let chars: Vec<char> = texts[k].chars().collect();
        let piece: String = chars.iter().skip(from.min(chars.len())).take(len).collect();
        let pattern = format!("(?i){}", regex::escape(&piece));
        let Some(req) = literals::of_pattern(&pattern) else { return Ok(()) };
        let req = Compiled::new(&req);
        if !constrains(&req) {
            return Ok(());
        }
        let found = candidates(&conn, &req, BLOCK_IDS, usize::MAX).unwrap().unwrap();
        prop_assert!(found.contains(&(k as i64 + 1)), "{:?} not a candidate of {:?}", texts[k], pattern);
    }
}

/// What a catalog build hands on ([`BlockBuilder`]) is byte for byte what the
/// background pass computes from the stored messages ([`missing_blocks`]), also
/// with blocks no message falls in (before the first message and between two),
/// the last block complete or not, and blocks already stored left out.
#[test]
fn a_catalog_build_stores_what_the_background_pass_would() {
    let texts: Vec<String> = (0..BLOCK_IDS as usize + 40)
        .map(|i| format!("t{i} Ωmega 数据库 NEEDLE-{}-{i}\u{a0}🎉", i % 7))
        .collect();
    let mut conn = database_of(&texts[..10]);
    // Ids jump past blocks 1 and 2, then fill block 3 up to its last id.
    crate::store::messages::skip_message_ids_to(&conn, 3 * BLOCK_IDS + 7).unwrap();
    append(&mut conn, texts[10..].iter().take((BLOCK_IDS - 7) as usize));
    let max = crate::store::messages::max_message_id(&conn).unwrap();
    assert_eq!(max, 4 * BLOCK_IDS, "block 3 ends at its last id: complete");
    let built = |from_stored: bool| {
        let mut got = Vec::new();
        let mut cat = crate::recall::catalog::Catalog::default();
        let mut b = BlockBuilder::new(&conn, |rows| got.extend(rows)).unwrap();
        if from_stored {
            b.from = 2;
        }
        cat.catch_up_into(&conn, || Ok(()), &mut b).unwrap();
        b.finish(cat.last_id());
        got
    };
    let from_pass = missing_blocks(&conn, usize::MAX, || Ok(())).unwrap();
    assert_eq!(from_pass.len(), 4 * BUCKETS);
    assert_eq!(built(false), from_pass);
    assert_eq!(
        built(true),
        from_pass[2 * BUCKETS..].to_vec(),
        "blocks 0 and 1 already stored"
    );
    // Block 1 and 2 are empty; block 0 and 3 are not.
    let empty = |b: usize| {
        from_pass[b * BUCKETS..(b + 1) * BUCKETS]
            .iter()
            .all(|r| r.1.is_empty())
    };
    assert_eq!(
        (empty(0), empty(1), empty(2), empty(3)),
        (false, true, true, false)
    );
    // An incomplete last block is not handed on.
    let mut conn = database_of(&texts[..BLOCK_IDS as usize + 3]);
    let mut got = Vec::new();
    let mut cat = crate::recall::catalog::Catalog::default();
    let mut b = BlockBuilder::new(&conn, |rows| got.extend(rows)).unwrap();
    cat.catch_up_into(&conn, || Ok(()), &mut b).unwrap();
    b.finish(cat.last_id());
    assert_eq!(got.len(), BUCKETS, "block 0 only");
    assert_eq!(store_all(&mut conn), 1);
}

/// Ids that jump far ahead (another writer's explicit id) are not filled with
/// empty blocks: slices stop before the gap, by the build and by the pass.
#[test]
fn a_far_jump_of_ids_stops_the_slices_instead_of_filling_the_gap() {
    let texts: Vec<String> = (0..BLOCK_IDS + 5).map(|i| format!("m{i}")).collect();
    let mut conn = database_of(&texts[..(BLOCK_IDS + 2) as usize]);
    crate::store::messages::skip_message_ids_to(&conn, 1_000_000_000_000).unwrap();
    append(&mut conn, &texts[(BLOCK_IDS + 2) as usize..]);
    let mut got = Vec::new();
    let mut cat = crate::recall::catalog::Catalog::default();
    let mut b = BlockBuilder::new(&conn, |rows| got.extend(rows)).unwrap();
    cat.catch_up_into(&conn, || Ok(()), &mut b).unwrap();
    b.finish(cat.last_id());
    assert_eq!(
        got.len(),
        2 * BUCKETS,
        "blocks 0 and 1 (ids 2049, 2050), then nothing"
    );
    assert_eq!(store_all(&mut conn), 2, "the pass: blocks 0 and 1");
    assert_eq!(store_all(&mut conn), 0, "and nothing more, ever");
    assert_eq!(covered_upto(&conn).unwrap(), 2 * BLOCK_IDS);
}

/// Every candidate of `pattern` in the stored spans, oldest first.
fn all_candidates(conn: &Connection, pattern: &str) -> Option<Vec<i64>> {
    candidates(
        conn,
        &compiled(pattern),
        covered_upto(conn).unwrap(),
        usize::MAX,
    )
    .unwrap()
}

/// Once a group's blocks are all stored, one row per bucket replaces their
/// rows, in the same transaction; the candidates, the covered ids and what is
/// missing stay the same, an empty block reads as no candidate, the blocks above
/// go on as blocks, and rows of another size leave the blocks as they are.
#[test]
fn a_group_replaces_its_blocks_and_gives_the_same_candidates() {
    let n = (GROUP_BLOCKS + 1) * BLOCK_IDS + 100;
    let texts: Vec<String> = (0..n)
        .map(|i| format!("message {i} {}", ["alpha", "beta", "gamma"][i as usize % 3]))
        .collect();
    let mut conn = database_of(&texts);
    let blocks = missing_blocks(&conn, usize::MAX, || Ok(())).unwrap();
    assert_eq!(blocks.len() as i64, (GROUP_BLOCKS + 1) * BUCKETS as i64);
    // Stored as blocks alone first.
    let tx = conn.transaction().unwrap();
    rows::store_slices(&tx, LAYOUT, &blocks).unwrap();
    tx.commit().unwrap();
    let patterns = [
        "message 3000",
        "message 2",
        "beta",
        "message 1\\d 1",
        "gamma|alpha",
    ];
    let before: Vec<_> = patterns.iter().map(|p| all_candidates(&conn, p)).collect();
    assert!(before.iter().all(Option::is_some));
    let covered = covered_upto(&conn).unwrap();
    assert_eq!(covered, (GROUP_BLOCKS + 1) * BLOCK_IDS);
    // Compacted: one group, block 15 left as a block.
    let tx = conn.transaction().unwrap();
    assert!(compact(&tx).unwrap());
    assert!(!compact(&tx).unwrap(), "one group is complete");
    tx.commit().unwrap();
    assert_eq!(rows::stored_count(&conn).unwrap(), BUCKETS as i64);
    assert_eq!(
        rows::stored_count_in(&conn, SliceTable::Groups).unwrap(),
        BUCKETS as i64
    );
    assert_eq!(covered_upto(&conn).unwrap(), covered);
    assert!(missing_blocks(&conn, usize::MAX, || Ok(()))
        .unwrap()
        .is_empty());
    let after: Vec<_> = patterns.iter().map(|p| all_candidates(&conn, p)).collect();
    assert_eq!(before, after);
    let spans = spans_newest_first(&conn).unwrap();
    assert_eq!(spans.len(), 2);
    assert_eq!(
        (spans[0].start(), spans[0].end()),
        (15 * BLOCK_IDS + 1, covered)
    );
    assert_eq!((spans[1].start(), spans[1].end()), (1, 15 * BLOCK_IDS));
    // Another engine's write of blocks already grouped (it computed them before
    // the group formed) stores none of them again.
    let tx = conn.transaction().unwrap();
    super::store(&tx, &blocks).unwrap();
    tx.commit().unwrap();
    assert_eq!(rows::stored_count(&conn).unwrap(), BUCKETS as i64);
    assert_eq!(
        rows::stored_count_in(&conn, SliceTable::Groups).unwrap(),
        BUCKETS as i64
    );
    // Rows of another layout go, groups too, at the next write.
    let tx = conn.transaction().unwrap();
    rows::store_slices(&tx, LAYOUT + 1, &[(0, vec![0; SLICE_BYTES])]).unwrap();
    tx.commit().unwrap();
    assert_eq!(rows::stored_count_in(&conn, SliceTable::Groups).unwrap(), 0);
    assert_eq!(covered_upto(&conn).unwrap(), 0);
}

/// A group holding an empty block (ids never used) and a row of an unexpected
/// size: the empty block reads as zeros, the odd row stops the compaction.
#[test]
fn a_group_keeps_empty_blocks_empty_and_refuses_odd_rows() {
    let texts: Vec<String> = (0..BLOCK_IDS).map(|i| format!("message {i}")).collect();
    let mut conn = database_of(&texts);
    // Block 1 is never used; blocks 2.. are.
    crate::store::messages::skip_message_ids_to(&conn, 2 * BLOCK_IDS).unwrap();
    append(
        &mut conn,
        (0..(GROUP_BLOCKS - 2) * BLOCK_IDS + 10).map(|i| format!("later {i}")),
    );
    let blocks = missing_blocks(&conn, usize::MAX, || Ok(())).unwrap();
    assert_eq!(blocks.len() as i64, GROUP_BLOCKS * BUCKETS as i64);
    // An odd row in block 3: no group.
    let mut odd = blocks.clone();
    odd[3 * BUCKETS + 7].1.pop();
    let tx = conn.transaction().unwrap();
    super::store(&tx, &odd).unwrap();
    assert_eq!(rows::stored_count_in(&tx, SliceTable::Groups).unwrap(), 0);
    tx.rollback().unwrap();
    let tx = conn.transaction().unwrap();
    super::store(&tx, &blocks).unwrap();
    tx.commit().unwrap();
    assert_eq!(rows::stored_count(&conn).unwrap(), 0, "all in the group");
    assert_eq!(covered_upto(&conn).unwrap(), GROUP_BLOCKS * BLOCK_IDS);
    let found = all_candidates(&conn, "later 17").unwrap();
    assert!(found.contains(&(2 * BLOCK_IDS + 18)), "{found:?}");
    assert!(
        found
            .iter()
            .all(|&id| !(BLOCK_IDS + 1..=2 * BLOCK_IDS).contains(&id)),
        "no id of the empty block"
    );
    let message = all_candidates(&conn, "message 100").unwrap();
    assert!(message.contains(&101), "{message:?}");
}

/// A rewritten message's stored slices go from its group on: what stays is
/// still every block from 0 up to some block, and the next pass stores the
/// rest again from the messages' current text (its new words included).
#[test]
fn forgetting_a_rewritten_message_drops_its_group_and_what_follows() {
    let n = (GROUP_BLOCKS + 2) * BLOCK_IDS + 10;
    let texts: Vec<String> = (0..n).map(|i| format!("message {i}")).collect();
    let mut conn = database_of(&texts);
    store_all(&mut conn);
    assert_eq!(
        rows::stored_count_in(&conn, SliceTable::Groups).unwrap(),
        BUCKETS as i64
    );
    assert_eq!(covered_upto(&conn).unwrap(), (GROUP_BLOCKS + 2) * BLOCK_IDS);
    // Not covered yet (the tail): nothing to forget.
    assert_eq!(forget_message(&conn, n).unwrap(), 0);
    // A message of block 16: its group is group 1 (blocks 15..30), so blocks 15
    // and 16 go and group 0 stays.
    let id = 16 * BLOCK_IDS + 7;
    conn.execute(
        "UPDATE messages SET content = 'quokkafield rewritten' WHERE message_id = ?1",
        [id],
    )
    .unwrap();
    assert!(!all_candidates(&conn, "quokkafield").unwrap().contains(&id));
    assert_eq!(forget_message(&conn, id).unwrap(), 2 * BUCKETS);
    assert_eq!(covered_upto(&conn).unwrap(), GROUP_BLOCKS * BLOCK_IDS);
    assert_eq!(store_all(&mut conn), 2);
    assert!(all_candidates(&conn, "quokkafield").unwrap().contains(&id));
    // A message inside the group: the group and everything after it go.
    let tx = conn.transaction().unwrap();
    assert_eq!(forget_message(&tx, 5).unwrap(), 3 * BUCKETS);
    tx.commit().unwrap();
    assert_eq!(covered_upto(&conn).unwrap(), 0);
    assert_eq!(store_all(&mut conn), (GROUP_BLOCKS + 2) as usize);
}
