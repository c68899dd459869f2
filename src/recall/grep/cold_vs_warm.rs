//! The cold paths (SQLite alone, before the catalogs are built) answer exactly
//! what the catalog paths answer: same hits, same order, same snippets and ranks,
//! for messages and for summaries.

use rusqlite::Connection;
use serde_json::json;

use super::cold::search_messages_cold;
use super::summaries::search_summaries_cold;
use super::summaries::search_summaries_reading_all;
use super::{
    build_query, search_messages, search_summaries, Filter, MessageHit, Mode, Sort, SummaryHit,
};
use crate::message::ingest::map_message;
use crate::recall::catalog::Catalog;
use crate::recall::summary_catalog::SummaryCatalog;
use crate::store::conversations::SessionRef;
use crate::store::dag::{persist_summary, NewSummary, Sources};
use crate::store::fts_lag::FtsLag;
use crate::store::messages::{insert_batch, set_raw_content};
use crate::store::recall::SummaryIndex;
use crate::store::Features;

const WORDS: [&str; 8] = [
    "Alpha1", "alpha2", "beta-77", "gamma", "DELTA", "Ωmega", "epsilon", "zeta",
];

/// A migrated in-memory database, with both full-text tables available.
fn database() -> (Connection, Features) {
    let mut conn = Connection::open_in_memory().unwrap();
    let features = crate::store::migrate::migrate(&mut conn).unwrap();
    assert!(
        features.fts5 && features.trigram,
        "the bundled SQLite has FTS5"
    );
    (conn, features)
}

/// Ingests `messages` as one session's batch: its conversation and message ids.
fn insert(
    conn: &mut Connection,
    session: &str,
    messages: impl Iterator<Item = serde_json::Value>,
) -> (i64, Vec<i64>) {
    let batch = messages.map(|m| map_message(&m, None).unwrap()).collect();
    let session = SessionRef {
        session_id: session.into(),
        session_key: None,
    };
    let out = insert_batch(conn, &session, batch).unwrap();
    let ids = out.messages.iter().map(|m| m.message_id.unwrap()).collect();
    (out.conversation_id, ids)
}

fn ingest(conn: &mut Connection, session: &str, base: i64) -> (i64, Vec<i64>) {
    ingest_n(conn, session, base, 400)
}

fn ingest_n(conn: &mut Connection, session: &str, base: i64, n: i64) -> (i64, Vec<i64>) {
    let messages = (0..n).map(|i| {
        let w1 = WORDS[(i * 7 % 8) as usize];
        let w2 = WORDS[(i * 3 % 8) as usize];
        // Times go backwards every 50 messages (imports, clock skew).
        let t = base + (i % 50) * 60_000 - (i / 50) * 600_000;
        let needle = if i % 13 == 0 {
            format!(" code for staging is NEEDLE-{}-{}.", i % 5, i)
        } else {
            String::new()
        };
        let role = ["user", "assistant"][(i % 2) as usize];
        let content = format!("m{i} {w1} {} {w2}{needle}", i * 37 % 1000);
        json!({"role": role, "content": content, "timestamp": t})
    });
    insert(conn, session, messages)
}

/// 40 leaves of 10 messages each and 10 condensed summaries over 4 leaves each;
/// their times follow their sources' (which go backwards now and then).
fn summarize(conn: &mut Connection, conversation_id: i64, ids: &[i64], features: Features) {
    let mut put = |content: String, sources: Sources| {
        let s = NewSummary {
            conversation_id,
            content,
            model: "m".into(),
            sources,
        };
        persist_summary(conn, &s, features).unwrap()
    };
    let leaves: Vec<String> = (0..40)
        .map(|k| {
            let w = WORDS[k % 8];
            let content = format!(
                "leaf {k} {w} code for staging is NEEDLE-{}-{k}. 数据库{} gamma{}",
                k % 5,
                k % 3,
                k % 4
            );
            put(
                content,
                Sources::Messages(ids[k * 10..k * 10 + 10].to_vec()),
            )
        })
        .collect();
    for (k, four) in leaves.chunks(4).enumerate() {
        let content = format!(
            "condensed {k} {} staging NEEDLE-{}-c{k}",
            WORDS[k % 8],
            k % 5
        );
        put(content, Sources::Summaries(four.to_vec()));
    }
}

fn summary_key(h: &SummaryHit) -> (String, i64, String, String, Option<f64>) {
    (
        h.summary_id.clone(),
        h.conversation_id,
        h.created_at.clone(),
        h.snippet.clone(),
        h.rank,
    )
}

fn key(h: &MessageHit) -> Key {
    (
        h.message_id,
        h.conversation_id,
        h.role.clone(),
        h.created_at.clone(),
        h.snippet.clone(),
        h.rank,
    )
}

/// The scopes every query is checked in: each listed conversation alone, all
/// conversations, and conversations 1 and 2 within a time window around the
/// fixtures' messages.
fn scopes(alone: &[i64]) -> Vec<Filter> {
    let base = 1_771_313_820_000i64;
    let mut out: Vec<Filter> = alone
        .iter()
        .map(|c| Filter {
            conversations: Some(vec![*c]),
            ..Filter::default()
        })
        .collect();
    out.push(Filter::default());
    out.push(Filter {
        conversations: Some(vec![1, 2]),
        since_ms: Some(base - 3_000_000),
        before_ms: Some(base + 1_200_000),
    });
    out
}

#[test]
fn cold_answers_equal_warm_answers() {
    let (mut conn, features) = database();
    for (session, base) in [("a", 1_771_313_820_000), ("b", 1_771_313_000_000)] {
        let (conversation, ids) = ingest(&mut conn, session, base);
        summarize(&mut conn, conversation, &ids, features);
    }
    FtsLag::new(true).catch_up(&mut conn).unwrap();
    let filters = scopes(&[1]);
    let queries: &[(Mode, Sort, &str)] = &[
        (Mode::Regex, Sort::Recency, r"NEEDLE-3-\d+\."),
        (Mode::Regex, Sort::Recency, r"(?i)needle-1-1\d+"),
        (Mode::Regex, Sort::Recency, r"staging is NEEDLE"),
        // Words ending the literal narrow as prefix tokens when they end in a digit.
        (Mode::Regex, Sort::Recency, r"NEEDLE-2-13"),
        (Mode::Regex, Sort::Recency, r"is NEEDLE-4-2"),
        (Mode::Regex, Sort::Recency, r"m1\d Alpha1 1"),
        (
            Mode::Regex,
            Sort::Recency,
            r"code for staging is|m1 Alpha1 ",
        ),
        (Mode::FullText, Sort::Recency, "gamma"),
        (Mode::FullText, Sort::Recency, "staging"),
        (Mode::FullText, Sort::Recency, "\"alpha2 zeta\""),
        (Mode::FullText, Sort::Relevance, "delta"),
        (Mode::FullText, Sort::Hybrid, "epsilon beta"),
        (Mode::FullText, Sort::Recency, "NEEDLE-2-130"),
        (Mode::FullText, Sort::Recency, "数据库1"),
        (Mode::FullText, Sort::Relevance, "数据库2"),
        (Mode::Regex, Sort::Recency, r"数据库\d gamma[12]"),
    ];
    let mut cat = Catalog::default();
    cat.catch_up(&conn).unwrap();
    let mut sc = SummaryCatalog::default();
    sc.sync(&conn).unwrap();
    let mut summary_hits = 0;
    for f in &filters {
        for &(mode, sort, pattern) in queries {
            for limit in [1, 7, 50] {
                let q = build_query(pattern, mode, sort, limit, f.clone()).unwrap();
                let cold = search_messages_cold(&conn, &q, features).unwrap();
                let (warm, stats) = search_messages(&conn, &cat, &q, features).unwrap();
                let (cold, _) = cold.unwrap_or_else(|| panic!("cold path declined {pattern}"));
                assert!(!stats.truncated, "{pattern}");
                let cold: Vec<_> = cold.iter().map(key).collect();
                let warm: Vec<_> = warm.iter().map(key).collect();
                assert_eq!(
                    cold, warm,
                    "{mode:?} {sort:?} {pattern} limit {limit} {f:?}"
                );
                let cold = search_summaries_cold(&conn, &q, features).unwrap();
                // Recency-ordered searches of the trigram table (regexes, CJK terms)
                // are left to the catalog's path.
                let trigram = mode == Mode::Regex || crate::recall::text::has_cjk(pattern);
                let Some((cold, _)) = cold else {
                    assert!(trigram && sort == Sort::Recency, "cold declined {pattern}");
                    continue;
                };
                let (warm, _) = search_summaries(&conn, &sc, &q, features).unwrap();
                let cold: Vec<_> = cold.iter().map(summary_key).collect();
                let warm: Vec<_> = warm.iter().map(summary_key).collect();
                assert_eq!(
                    cold, warm,
                    "summaries: {mode:?} {sort:?} {pattern} limit {limit} {f:?}"
                );
                summary_hits += warm.len();
            }
        }
    }
    assert!(summary_hits > 100, "the summary queries find summaries");
    // A regex through the full-text words reads its candidates' texts newest first
    // and stops once `limit` match (the answers above are the same either way).
    let q = build_query(
        r"code for staging is",
        Mode::Regex,
        Sort::Recency,
        3,
        Filter::default(),
    )
    .unwrap();
    let (_, stats) = search_messages_cold(&conn, &q, features).unwrap().unwrap();
    assert_eq!(stats.strategy, "fts-words");
    assert!(
        stats.candidates > 40 && stats.scanned < stats.candidates,
        "{stats:?}"
    );
    // Without whole words (or with CJK text), the newest-first scan answers
    // (the table is small enough to read whole).
    for (mode, pattern) in [
        (Mode::Regex, "ECONNRESET"),
        (Mode::Regex, r"\d+"),
        (Mode::FullText, "数据库"),
    ] {
        let q = build_query(pattern, mode, Sort::Recency, 10, Filter::default()).unwrap();
        let (cold, stats) = search_messages_cold(&conn, &q, features).unwrap().unwrap();
        assert_eq!(stats.strategy, "scan-newest", "{pattern}");
        let (warm, _) = search_messages(&conn, &cat, &q, features).unwrap();
        let cold: Vec<_> = cold.iter().map(key).collect();
        let warm: Vec<_> = warm.iter().map(key).collect();
        assert_eq!(cold, warm, "{pattern}");
    }
    // Summaries: a regex without literals the trigram table can use.
    let q = build_query(r"\d+", Mode::Regex, Sort::Recency, 10, Filter::default()).unwrap();
    assert!(search_summaries_cold(&conn, &q, features)
        .unwrap()
        .is_none());
}

/// Messages of one session: `n` of them from `start` (epoch ms) a minute apart,
/// every third about an invoice, every 97th a CJK note.
fn ingest_in_order(conn: &mut Connection, session: &str, start: i64, n: i64) -> i64 {
    let messages = (0..n).map(|i| {
        let topic = if i % 3 == 0 { "invoice 7" } else { "flight" };
        let cjk = if i % 97 == 0 { " 数据库备份" } else { "" };
        let text = format!("{session} m{i} {topic}{} hotel{cjk}", i % 10);
        json!({"role": "user", "content": text, "timestamp": start + i * 60_000})
    });
    insert(conn, session, messages).0
}

/// Common words, regexes without whole words and CJK substrings are answered
/// newest first with an order proof over time-ordered history, exactly as the
/// catalog answers; when older history was ingested after newer messages (its
/// ids are higher), the proof fails and the query is left to the catalog, or
/// the answer is still the catalog's.
#[test]
fn newest_first_walks_answer_like_the_catalog() {
    let (mut conn, features) = database();
    let now = 1_771_313_820_000i64;
    // Conversation 1: 6,000 messages in time order. Conversation 2: its old
    // history (before conversation 1's), ingested afterwards.
    let c1 = ingest_in_order(&mut conn, "a", now - 6_000 * 60_000, 6_000);
    let c2 = ingest_in_order(&mut conn, "b", now - 20_000 * 60_000, 1_500);
    FtsLag::new(true).catch_up(&mut conn).unwrap();
    let mut cat = Catalog::default();
    cat.catch_up(&conn).unwrap();
    let scope = |c: Vec<i64>| Filter {
        conversations: Some(c),
        ..Filter::default()
    };
    let in_order = [
        scope(vec![c1]),
        Filter {
            conversations: Some(vec![c1]),
            since_ms: Some(now - 3_000 * 60_000),
            before_ms: Some(now - 300 * 60_000),
        },
    ];
    let out_of_order = [scope(vec![c2]), Filter::default(), scope(vec![c1, c2])];
    let queries: &[(Mode, &str)] = &[
        (Mode::FullText, "invoice"),
        (Mode::FullText, "flight3 hotel"),
        (Mode::Regex, r"invoice 7\d hotel"),
        (Mode::Regex, r"(?i)FLIGHT5"),
        (Mode::FullText, "数据库"),
    ];
    let mut answered = 0;
    for (filters, must_answer) in [(&in_order[..], true), (&out_of_order[..], false)] {
        for f in filters {
            for &(mode, pattern) in queries {
                for limit in [1, 20, 200] {
                    let q = build_query(pattern, mode, Sort::Recency, limit, f.clone()).unwrap();
                    let (warm, stats) = search_messages(&conn, &cat, &q, features).unwrap();
                    let cold = search_messages_cold(&conn, &q, features).unwrap();
                    let what = format!("{mode:?} {pattern} limit {limit} {f:?}");
                    // Past 20 hits, rare ones (the CJK note, a regex over one
                    // message in thirty) outrun the walk's budget.
                    let Some((cold, cold_stats)) = cold else {
                        assert!(!must_answer || limit > 20, "cold path declined {what}");
                        continue;
                    };
                    assert!(!stats.truncated, "{what}");
                    assert!(!warm.is_empty(), "{what}");
                    let cold: Vec<_> = cold.iter().map(key).collect();
                    let warm: Vec<_> = warm.iter().map(key).collect();
                    assert_eq!(cold, warm, "{what} ({})", cold_stats.strategy);
                    answered += 1;
                }
            }
        }
    }
    assert!(answered >= 28, "{answered} answered");
    // Out of order and more matches than the walk reads: left to the catalog.
    let q = build_query(
        "invoice",
        Mode::FullText,
        Sort::Recency,
        20,
        Filter::default(),
    )
    .unwrap();
    assert!(search_messages_cold(&conn, &q, features).unwrap().is_none());
}

/// Summaries with many matches are answered by a newest-first walk over the
/// full-text table's rows ([`super::summaries_newest`]), exactly as reading every match
/// answers: times out of rowid order, two conversations (the second one older),
/// rewritten summaries whose full-text rows moved to the top (some gaining, some
/// losing the words), time filters, full text and regexes (checked against the
/// content), limits up to 200.
#[test]
fn summary_walks_answer_like_reading_every_match() {
    let (mut conn, features) = database();
    let mut leaves = Vec::new();
    for (session, base) in [("a", 1_771_313_820_000), ("b", 1_771_313_000_000)] {
        let (conversation, ids) = ingest_n(&mut conn, session, base, 600);
        for k in 0..300 {
            let content = format!(
                "leaf {k} {} code for staging is NEEDLE-{}-{k}. gamma{}",
                WORDS[k % 8],
                k % 5,
                k % 4
            );
            let s = NewSummary {
                conversation_id: conversation,
                content,
                model: "m".into(),
                sources: Sources::Messages(ids[k * 2..k * 2 + 2].to_vec()),
            };
            leaves.push((
                conversation,
                k,
                persist_summary(&mut conn, &s, features).unwrap(),
            ));
        }
    }
    for (conversation, k, id) in leaves.iter().filter(|l| l.1 % 37 == 0) {
        let content = if k % 2 == 0 {
            format!("rewritten {k} plain text")
        } else {
            format!("rewritten {k} staging is NEEDLE-3-{k} gamma1")
        };
        crate::store::summaries::replace_content(&mut conn, *conversation, id, &content, features)
            .unwrap();
    }
    let mut sc = SummaryCatalog::default();
    sc.sync(&conn).unwrap();
    let filters = scopes(&[1, 2]);
    let queries: &[(Mode, &str)] = &[
        (Mode::FullText, "staging"),
        (Mode::FullText, "gamma1"),
        (Mode::FullText, "\"code for\""),
        (Mode::Regex, r"staging is NEEDLE-\d"),
        (Mode::Regex, r"NEEDLE-3-\d+"),
        (Mode::Regex, r"code for staging is NEEDLE-[12]-\d*7\."),
    ];
    let (mut walked, mut early) = (0, 0);
    for f in &filters {
        for &(mode, pattern) in queries {
            for limit in [1, 7, 50, 200] {
                let q = build_query(pattern, mode, Sort::Recency, limit, f.clone()).unwrap();
                let (walk, stats) = search_summaries(&conn, &sc, &q, features).unwrap();
                let (all, _) = search_summaries_reading_all(&conn, &sc, &q, features).unwrap();
                let walk: Vec<_> = walk.iter().map(summary_key).collect();
                let all: Vec<_> = all.iter().map(summary_key).collect();
                assert!(!all.is_empty(), "{mode:?} {pattern} {f:?}");
                assert_eq!(walk, all, "{mode:?} {pattern} limit {limit} {f:?}");
                if stats.strategy.ends_with("-newest") {
                    walked += 1;
                    // The table has 600 rows: fewer were read when the proof held.
                    early += usize::from(stats.scanned < 600);
                }
            }
        }
    }
    assert!(
        walked >= 40 && early >= 20,
        "{walked} walks, {early} stopped early"
    );
    // The regex whose literal nearly every leaf holds: its walks stop reading the
    // trigram matches and check the rows' content (and answered as above).
    for f in &filters {
        let pattern = r"code for staging is NEEDLE-[12]-\d*7\.";
        let q = build_query(pattern, Mode::Regex, Sort::Recency, 50, f.clone()).unwrap();
        let (expr, re) = (q.trigram.clone().unwrap(), q.regex.clone());
        let w = super::summaries_newest::newest(
            &conn,
            &sc,
            &q,
            SummaryIndex::Trigram,
            &expr,
            re.as_ref(),
        )
        .unwrap()
        .expect("walked");
        assert!(w.unfiltered, "{f:?}");
    }
    // A selective one keeps reading them.
    let q = build_query(
        r"NEEDLE-3-\d+",
        Mode::Regex,
        Sort::Recency,
        50,
        filters[0].clone(),
    )
    .unwrap();
    let (expr, re) = (q.trigram.clone().unwrap(), q.regex.clone());
    let w =
        super::summaries_newest::newest(&conn, &sc, &q, SummaryIndex::Trigram, &expr, re.as_ref());
    assert!(!w.unwrap().is_some_and(|w| w.unfiltered));
}

/// An id whose last word is one character (`NEEDLE-1-5`), in history longer than
/// the newest-first scan reads, behind a middle word in every message: the
/// whole-word expression (`"1"`) has too many matches and the scan gives up, so
/// only the last-resort prefix phrase (`"1 5" *`) answers before the catalog is
/// built — and it answers as the catalog does.
#[test]
fn a_one_character_last_word_is_the_last_resort_before_the_catalog() {
    let (conn, features, cat) = past_the_scan(3_000, |i| {
        // Only among the oldest messages, which the scan never reaches.
        let id = if i % 100 == 0 && i < 1_000 {
            format!(" id NEEDLE-1-{i}")
        } else {
            String::new()
        };
        format!("m{i} step 1 of {}{id}", i % 7)
    });
    for (pattern, hits) in [
        ("NEEDLE-1-5", 1),
        ("NEEDLE-1-0", 1),
        ("NEEDLE-1-1|NEEDLE-1-4", 2),
    ] {
        for limit in [1, 3, 20] {
            let mut q = regex_query(pattern, limit);
            let (cold, warm, stats) = cold_and_warm(&conn, &cat, features, &q);
            assert_eq!(stats.strategy, "fts-words", "{pattern}");
            assert_eq!(warm.len(), hits.min(limit), "{pattern} limit {limit}");
            assert_eq!(cold, warm, "{pattern} limit {limit}");
            // Without the last resort the cold path leaves it to the catalog.
            q.short_words = None;
            assert!(search_messages_cold(&conn, &q, features).unwrap().is_none());
        }
    }
}

/// A history `beyond` messages longer than the newest-first scan reads (message
/// `i` says `text(i)`, a minute apart), indexed, with its catalog built.
fn past_the_scan(beyond: i64, text: impl Fn(i64) -> String) -> (Connection, Features, Catalog) {
    let (mut conn, features) = database();
    let n = super::newest::MAX_WALK_ROWS as i64 + beyond;
    let messages = (0..n).map(|i| {
        json!({"role": "user", "content": text(i), "timestamp": 1_771_313_820_000i64 + i * 60_000})
    });
    insert(&mut conn, "s", messages);
    FtsLag::new(true).catch_up(&mut conn).unwrap();
    let mut cat = Catalog::default();
    cat.catch_up(&conn).unwrap();
    (conn, features, cat)
}

fn regex_query(pattern: &str, limit: usize) -> super::Query {
    build_query(
        pattern,
        Mode::Regex,
        Sort::Recency,
        limit,
        Filter::default(),
    )
    .unwrap()
}

type Key = (i64, i64, String, String, String, Option<f64>);

/// The cold path's answer (it must answer), the catalog's, and the cold stats.
fn cold_and_warm(
    conn: &Connection,
    cat: &Catalog,
    features: Features,
    q: &super::Query,
) -> (Vec<Key>, Vec<Key>, super::ScopeStats) {
    let (cold, stats) = search_messages_cold(conn, q, features)
        .unwrap()
        .expect("the cold path answers");
    let (warm, _) = search_messages(conn, cat, q, features).unwrap();
    (
        cold.iter().map(key).collect(),
        warm.iter().map(key).collect(),
        stats,
    )
}

/// The last resort reads up to [`super::cold::MAX_LAST_RESORT_CANDIDATES`]
/// matches: its prefix phrase (`"1 1" *`) matches 2,500 messages here (more than
/// the 1,000 other cold queries read), and it still answers as the catalog does
/// instead of leaving the query to the build.
#[test]
fn the_last_resort_reads_a_few_thousand_candidates() {
    let (conn, features, cat) = past_the_scan(3_000, |i| {
        let id = if i % 250 == 0 && i < 2_000 {
            format!(" id NEEDLE-1-1{i}")
        } else {
            String::new()
        };
        // "1 1…" in 2,500 messages, none of them a needle.
        let phrase = if i % 4 == 1 {
            format!(" part 1 1{}", i % 9)
        } else {
            String::new()
        };
        format!("m{i} step 1 of {}{phrase}{id}", i % 7)
    });
    for limit in [1, 3, 20] {
        let (cold, warm, stats) =
            cold_and_warm(&conn, &cat, features, &regex_query("NEEDLE-1-1", limit));
        assert_eq!(stats.strategy, "fts-words");
        assert!(
            stats.candidates > super::newest::MAX_CANDIDATES,
            "{}",
            stats.candidates
        );
        assert_eq!(warm.len(), 8.min(limit));
        assert_eq!(cold, warm, "limit {limit}");
    }
}

/// A rare regex with no whole word to narrow by (`rare\w+ tail`), whose matches
/// lie thousands of messages back: the newest-first scan reads that far and
/// answers as the catalog does; matches only beyond its budget are left to the
/// catalog.
#[test]
fn the_scan_reaches_rare_matches_deep_in_history() {
    let (conn, features, cat) = past_the_scan(2_000, |i| {
        let rare = if (1_500..3_500).contains(&i) && i % 97 == 0 {
            " rareword tail"
        } else if i < 500 && i % 97 == 0 {
            " deepword tail"
        } else {
            ""
        };
        format!("m{i} rare tail words{rare}")
    });
    for limit in [1, 3, 20] {
        let q = regex_query(r"rare\w+ tail", limit);
        assert!(q.words.is_none(), "no whole word to narrow by");
        let (cold, warm, stats) = cold_and_warm(&conn, &cat, features, &q);
        assert_eq!(stats.strategy, "scan-newest");
        assert_eq!(warm.len(), limit);
        assert_eq!(cold, warm, "limit {limit}");
    }
    // The newest 20 lie ≈ 6,700 rows back: deeper than a 4,096-row budget reached.
    let (_, stats) = search_messages_cold(&conn, &regex_query(r"rare\w+ tail", 20), features)
        .unwrap()
        .unwrap();
    assert!(stats.scanned > 6_000, "{}", stats.scanned);
    // Matches only past the budget: the catalog's to answer.
    let q = regex_query(r"deep\w+ tail", 3);
    assert!(search_messages_cold(&conn, &q, features).unwrap().is_none());
    assert_eq!(
        search_messages(&conn, &cat, &q, features).unwrap().0.len(),
        3
    );
}

/// A message whose stored content is not UTF-8 (as another writer might store
/// it) has no text. The newest-first scan matches a regex against the stored
/// bytes and checks only its matches' text, and answers as the catalog does: no
/// hit where only the bytes match, and the same for patterns that match empty
/// text (those are matched against the text of every row).
#[test]
fn content_that_is_not_utf8_searches_as_no_text() {
    let (mut conn, features) = database();
    let messages = (0..300).map(|i| {
        json!({"role": "user", "content": format!("m{i} hello world {}", i % 3), "timestamp": 1_771_313_820_000i64 + i * 60_000})
    });
    let (_, ids) = insert(&mut conn, "s", messages);
    // Every tenth: "hello\xff world".
    let broken: usize = ids
        .iter()
        .filter(|id| *id % 10 == 0)
        .map(|&id| set_raw_content(&conn, id, b"hello\xff world").unwrap())
        .sum();
    assert_eq!(broken, ids.len() / 10);
    FtsLag::new(true).catch_up(&mut conn).unwrap();
    let mut cat = Catalog::default();
    cat.catch_up(&conn).unwrap();
    for pattern in ["hel+o", "l+o\\W", "^$", "z*", "^hel+o"] {
        for limit in [1, 5, 400] {
            let (cold, warm, stats) =
                cold_and_warm(&conn, &cat, features, &regex_query(pattern, limit));
            assert_eq!(stats.strategy, "scan-newest", "{pattern}");
            assert_eq!(cold, warm, "{pattern} limit {limit}");
            // A broken row's empty text matches only patterns that match empty text.
            let broken = cold.iter().filter(|k| k.0 % 10 == 0).count();
            let matches_empty = regex::Regex::new(pattern).unwrap().is_match("");
            assert_eq!(broken > 0, matches_empty, "{pattern} limit {limit}");
        }
    }
    // The valid rows match as before.
    let (cold, _, _) = cold_and_warm(&conn, &cat, features, &regex_query("hel+o", 400));
    assert_eq!(cold.len(), 270);
}

/// Stores the slices of every complete block, as the engine's background pass
/// does (groups of complete blocks replace them): how many blocks were stored.
fn store_all_slices(conn: &mut Connection) -> usize {
    use crate::recall::slices::{missing_blocks, store, BUCKETS};
    let rows = missing_blocks(conn, usize::MAX, || Ok(())).unwrap();
    let tx = conn.transaction().unwrap();
    store(&tx, &rows).unwrap();
    tx.commit().unwrap();
    rows.len() / BUCKETS
}

/// With trigram slices stored, a regex's first answer comes from them (the
/// stored blocks' candidates, the tail above them read whole) and equals the
/// catalog's in every scope and at every limit, with history whose times go
/// backwards, messages that are not UTF-8 (no text), and case-insensitive,
/// alternative and non-ASCII literals.
#[test]
fn regexes_through_the_trigram_slices_answer_like_the_catalog() {
    let (mut conn, features) = database();
    let (a, ids) = ingest_n(&mut conn, "a", 1_771_313_820_000, 2_600);
    ingest_n(&mut conn, "b", 1_771_313_000_000, 2_600);
    // Another writer's bytes, in a stored block and in the tail.
    for id in [ids[26], ids[39], 5_174] {
        set_raw_content(&conn, id, b"code for staging is NEEDLE-1-26\xff").unwrap();
    }
    insert(
        &mut conn,
        "c",
        (0..30).map(|i| json!({"role": "user", "content": format!("Ωmega 数据库{i} ünïcode-{i}"), "timestamp": 1_771_313_820_000i64 + i})),
    );
    FtsLag::new(true).catch_up(&mut conn).unwrap();
    assert_eq!(
        store_all_slices(&mut conn),
        2,
        "ids 1..=4096 are two complete blocks"
    );
    let mut cat = Catalog::default();
    cat.catch_up(&conn).unwrap();
    let patterns = [
        r"NEEDLE-3-\d+\.",
        r"(?i)needle-1-1\d+",
        r"NEEDLE-2-13",
        r"NEEDLE-1-26",
        r"is NEEDLE-4-2",
        r"m1\d Alpha1 1",
        r"m25\d\d (alpha2|gamma)",
        r"(?i)ΩMEGA 数据库1",
        r"ünïcode-2\b",
        r"DELTA 9\d\d",
    ];
    let mut answered = 0;
    for f in scopes(&[a]) {
        for pattern in patterns {
            for limit in [1, 7, 50] {
                let q = build_query(pattern, Mode::Regex, Sort::Recency, limit, f.clone()).unwrap();
                let (cold, warm, stats) = cold_and_warm(&conn, &cat, features, &q);
                assert_eq!(cold, warm, "{pattern} limit {limit} {f:?}");
                if stats.strategy == "trigram-slices" {
                    answered += 1;
                }
            }
        }
    }
    assert!(
        answered >= 5 * 3 * scopes(&[a]).len(),
        "{answered} answers through the slices"
    );
    // Through the slices: a two-character last word (cheap words go first), and
    // literals without whole ASCII words.
    for pattern in [
        "NEEDLE-1-26",
        "NEEDLE-2-13",
        "(?i)ΩMEGA 数据库1",
        r"ünïcode-2\b",
        r"DELTA 9\d\d",
    ] {
        let (_, _, stats) = cold_and_warm(&conn, &cat, features, &regex_query(pattern, 5));
        assert_eq!(stats.strategy, "trigram-slices", "{pattern}");
    }
    let (_, _, stats) = cold_and_warm(&conn, &cat, features, &regex_query("NEEDLE-2-130", 5));
    assert_eq!(
        stats.strategy, "fts-words",
        "a three-character prefix is cheap"
    );
    // The slices narrow: a needle id is read with a handful of others, not thousands.
    let (_, _, stats) = cold_and_warm(&conn, &cat, features, &regex_query("NEEDLE-2-13", 20));
    assert_eq!(stats.strategy, "trigram-slices");
    assert!(stats.candidates < 20, "{stats:?}");
    // A common word (≈ 1,300 of 5,200 messages hold "gamma"): the blocks' dense
    // candidates are read as ranges of rows (times going backwards defeat the
    // order proof here: everything is read).
    let (cold, warm, stats) = cold_and_warm(&conn, &cat, features, &regex_query("gamma", 5));
    assert_eq!(stats.strategy, "trigram-slices");
    assert_eq!(cold, warm);
    for f in scopes(&[a]) {
        let q = build_query("gamma", Mode::Regex, Sort::Recency, 900, f.clone()).unwrap();
        let (cold, warm, stats) = cold_and_warm(&conn, &cat, features, &q);
        assert_eq!(stats.strategy, "trigram-slices", "{f:?}");
        assert_eq!(cold, warm, "{f:?}");
    }
    // Alternatives matching most messages: every one is a candidate, read and
    // checked as ranges.
    let q = regex_query("(?i)(alpha|beta|gamma|delta|epsilon|zeta|mega)", 30);
    let (cold, warm, stats) = cold_and_warm(&conn, &cat, features, &q);
    assert_eq!(stats.strategy, "trigram-slices");
    assert_eq!(cold, warm);
    // A regex its literals do not narrow (a fragment shorter than a trigram) is
    // left to the other paths.
    for pattern in [r"\d+", "m1"] {
        let q = regex_query(pattern, 5);
        let found = search_messages_cold(&conn, &q, features).unwrap();
        assert_ne!(
            found.map(|f| f.1.strategy),
            Some("trigram-slices".to_owned()),
            "{pattern}"
        );
    }
}

/// Slices are read only when they can be trusted: a file with none stored, or
/// with another layout's rows, or with a tail past the bound, answers as
/// before; an empty block (ids never used) holds no candidate.
#[test]
fn the_trigram_slices_are_read_only_when_they_cover_the_file() {
    let (mut conn, features) = database();
    ingest_n(&mut conn, "a", 1_771_313_820_000, 2_100);
    FtsLag::new(true).catch_up(&mut conn).unwrap();
    let q = regex_query("NEEDLE-2-13", 20);
    let strategy = |conn: &Connection| {
        search_messages_cold(conn, &q, features)
            .unwrap()
            .map(|f| f.1.strategy)
    };
    assert_eq!(
        strategy(&conn).as_deref(),
        Some("fts-words"),
        "no slices stored"
    );
    // Another layout's block is not read.
    let tx = conn.transaction().unwrap();
    let other: Vec<(i64, Vec<u8>)> = (0..1024).map(|k| (k, vec![0xff; 256])).collect();
    crate::store::slices::store_slices(&tx, crate::recall::slices::LAYOUT + 1, &other).unwrap();
    tx.commit().unwrap();
    assert_eq!(
        strategy(&conn).as_deref(),
        Some("fts-words"),
        "another layout"
    );
    assert_eq!(store_all_slices(&mut conn), 1);
    assert_eq!(
        crate::store::slices::stored_count(&conn).unwrap(),
        1024,
        "the other layout's rows are gone"
    );
    assert_eq!(strategy(&conn).as_deref(), Some("trigram-slices"));
    // Ids jump past a whole block (an id is never reused, so the gap stays).
    crate::store::messages::skip_message_ids_to(&conn, 3 * 2048 + 10).unwrap();
    let (_, later) = ingest_n(&mut conn, "a", 1_771_313_920_000, 30);
    assert!(later[0] > 3 * 2048, "{later:?}");
    FtsLag::new(true).catch_up(&mut conn).unwrap();
    assert_eq!(
        store_all_slices(&mut conn),
        2,
        "blocks 1 (part of it used) and 2 (none)"
    );
    let mut cat = Catalog::default();
    cat.catch_up(&conn).unwrap();
    for pattern in ["NEEDLE-2-13", r"NEEDLE-\d-2\d\b", r"Ωmega 2\d"] {
        let (cold, warm, stats) = cold_and_warm(&conn, &cat, features, &regex_query(pattern, 50));
        assert_eq!(stats.strategy, "trigram-slices", "{pattern}");
        assert_eq!(cold, warm, "{pattern}");
    }
    // A tail longer than the bound: left to the other paths.
    crate::store::slices::forget_slices_above(&conn, 1023).unwrap();
    ingest_n(&mut conn, "a", 1_771_314_920_000, 8_200);
    FtsLag::new(true).catch_up(&mut conn).unwrap();
    assert_ne!(strategy(&conn).as_deref(), Some("trigram-slices"));
}

/// The walk through the trigram slices reads the tail above the stored blocks,
/// then only the candidates of each block, newest first: a rare regex with no
/// whole word to narrow by answers as the catalog does from thousands of
/// messages back, reading a fraction of what the scan reads, and one whose
/// matches lie past the scan's budget is answered too.
#[test]
fn the_slices_walk_reaches_rare_matches_reading_only_candidates() {
    let (mut conn, features, cat) = past_the_scan(2_000, |i| {
        let rare = if (1_500..3_500).contains(&i) && i % 97 == 0 {
            " rareword tail"
        } else if i < 500 && i % 97 == 0 {
            " deepword tail"
        } else {
            ""
        };
        format!("m{i} plain words{rare}")
    });
    assert_eq!(store_all_slices(&mut conn), 4);
    for limit in [1, 3, 20] {
        let q = regex_query(r"rare\w+ tail", limit);
        let (cold, warm, stats) = cold_and_warm(&conn, &cat, features, &q);
        assert_eq!(stats.strategy, "trigram-slices");
        assert_eq!(warm.len(), limit);
        assert_eq!(cold, warm, "limit {limit}");
        // The tail (2,000 rows) and the candidates: not the ≈ 8,500 rows the
        // scan reads.
        assert!(stats.scanned < 2_100, "{stats:?}");
    }
    let q = regex_query(r"deep\w+ tail", 3);
    let (cold, warm, stats) = cold_and_warm(&conn, &cat, features, &q);
    assert_eq!(stats.strategy, "trigram-slices");
    assert_eq!((cold.len(), &cold), (3, &warm));
    // A common word: the newest rows of the tail hold the answer (the order
    // proof holds), and nothing else is read.
    let (cold, warm, stats) = cold_and_warm(&conn, &cat, features, &regex_query("plain w", 20));
    assert_eq!(stats.strategy, "trigram-slices");
    assert_eq!(cold, warm);
    assert!(stats.scanned <= 64, "{stats:?}");
    // Rows past the tail in time order: a fifth of the messages, from the tail
    // down into the blocks as ranges, until the proof holds.
    let q = regex_query(r"m\d*[05] plain", 400);
    let (cold, warm, stats) = cold_and_warm(&conn, &cat, features, &q);
    assert_eq!(stats.strategy, "trigram-slices");
    assert_eq!((cold.len(), &cold), (400, &warm));
    assert!(stats.scanned < 2_000 + 1_000, "{stats:?}");
}

/// A walk through the slices that reads too much (thousands of candidates read
/// by id, none matching) gives up, and the query is left to the other paths
/// and, here, to the catalog.
#[test]
fn the_slices_walk_gives_up_past_its_budget() {
    let (mut conn, features) = database();
    let n = 36_000i64;
    // Every fifth message holds both words, in the other order: candidates too
    // sparse to read as ranges, none a match (and every hundredth two others).
    let messages = (0..n).map(|i| {
        let text = if i % 100 == 0 {
            format!("m{i} omega then alpha, zeta then kappa")
        } else if i % 5 == 0 {
            format!("m{i} omega then alpha")
        } else {
            format!("m{i} plain")
        };
        json!({"role": "user", "content": text, "timestamp": 1_771_313_820_000i64 + i * 1_000})
    });
    insert(&mut conn, "s", messages);
    FtsLag::new(true).catch_up(&mut conn).unwrap();
    assert_eq!(store_all_slices(&mut conn), 17);
    let mut cat = Catalog::default();
    cat.catch_up(&conn).unwrap();
    let q = regex_query(r"alpha\s+omega", 5);
    let found = search_messages_cold(&conn, &q, features).unwrap();
    assert!(found.is_none(), "{:?}", found.map(|f| f.1));
    assert!(search_messages(&conn, &cat, &q, features)
        .unwrap()
        .0
        .is_empty());
    // With fewer candidates (one message in a hundred), the walk reads them all
    // and answers that nothing matches.
    let q = regex_query(r"kappa\s+zeta", 5);
    let (cold, warm, stats) = cold_and_warm(&conn, &cat, features, &q);
    assert_eq!(stats.strategy, "trigram-slices");
    assert!(cold.is_empty() && warm.is_empty());
    // Blocks 0–14 are one group, 15 and 16 blocks: answers through both as the
    // catalog's, in every scope and at every limit.
    use crate::store::slices::{stored_count_in, SliceTable};
    assert_eq!(stored_count_in(&conn, SliceTable::Groups).unwrap(), 1024);
    assert_eq!(
        stored_count_in(&conn, SliceTable::Blocks).unwrap(),
        2 * 1024
    );
    for pattern in [
        r"m1\d\d00 omega",
        r"m3070\d plain",
        r"zeta then kappa",
        r"m2\d{4} omega then",
    ] {
        for limit in [1, 20, 400] {
            let q = regex_query(pattern, limit);
            let (cold, warm, stats) = cold_and_warm(&conn, &cat, features, &q);
            assert_eq!(stats.strategy, "trigram-slices", "{pattern}");
            assert_eq!(cold, warm, "{pattern} limit {limit}");
        }
    }
}
