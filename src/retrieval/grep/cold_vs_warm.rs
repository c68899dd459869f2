//! The cold paths (SQLite alone, before the catalogs are built) answer exactly
//! what the catalog paths answer: same hits, same order, same snippets and ranks,
//! for messages and for summaries.

use rusqlite::Connection;
use serde_json::json;

use super::cold::search_messages_cold;
use super::summaries::search_summaries_cold;
use super::{
    build_query, search_messages, search_summaries, Filter, MessageHit, Mode, Sort, SummaryHit,
};
use crate::message::ingest::map_message;
use crate::retrieval::catalog::Catalog;
use crate::retrieval::sumcat::SummaryCatalog;
use crate::retrieval::text::has_cjk;
use crate::store::conversations::SessionRef;
use crate::store::dag::{persist_summary, NewSummary, Sources};
use crate::store::fts_lag::FtsLag;
use crate::store::messages::insert_batch;
use crate::store::Features;

const WORDS: [&str; 8] = [
    "Alpha1", "alpha2", "beta-77", "gamma", "DELTA", "Ωmega", "epsilon", "zeta",
];

fn ingest(conn: &mut Connection, session: &str, base: i64) -> (i64, Vec<i64>) {
    let batch = (0..400i64)
        .map(|i| {
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
            let m = json!({"role": role, "content": format!("m{i} {w1} {} {w2}{needle}", i * 37 % 1000), "timestamp": t});
            map_message(&m, None).unwrap()
        })
        .collect();
    let session = SessionRef {
        session_id: session.into(),
        session_key: None,
    };
    let out = insert_batch(conn, &session, batch).unwrap();
    let ids = out.messages.iter().map(|m| m.message_id.unwrap()).collect();
    (out.conversation_id, ids)
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

fn key(h: &MessageHit) -> (i64, i64, String, String, String, Option<f64>) {
    (
        h.message_id,
        h.conversation_id,
        h.role.clone(),
        h.created_at.clone(),
        h.snippet.clone(),
        h.rank,
    )
}

#[test]
fn cold_answers_equal_warm_answers() {
    let mut conn = Connection::open_in_memory().unwrap();
    crate::store::migrate::migrate(&mut conn).unwrap();
    let features = Features {
        fts5: true,
        trigram: true,
    };
    for (session, base) in [("a", 1_771_313_820_000), ("b", 1_771_313_000_000)] {
        let (conversation, ids) = ingest(&mut conn, session, base);
        summarize(&mut conn, conversation, &ids, features);
    }
    FtsLag::new(true).catch_up(&mut conn).unwrap();
    let base = 1_771_313_820_000i64;
    let filters = [
        Filter {
            conversations: Some(vec![1]),
            ..Filter::default()
        },
        Filter::default(),
        Filter {
            conversations: Some(vec![1, 2]),
            since_ms: Some(base - 3_000_000),
            before_ms: Some(base + 1_200_000),
        },
    ];
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
                let warm = search_messages(&conn, &cat, &q, features).unwrap();
                // CJK substrings are the message catalog's (no trigram table).
                let cold = match cold {
                    None if has_cjk(pattern) => None,
                    None => panic!("cold path declined {pattern}"),
                    Some(_) if has_cjk(pattern) => panic!("cold path took {pattern}"),
                    Some(c) => Some(c),
                };
                let (warm, stats) = warm;
                assert!(!stats.truncated, "{pattern}");
                if let Some((cold, _)) = cold {
                    let cold: Vec<_> = cold.iter().map(key).collect();
                    let warm: Vec<_> = warm.iter().map(key).collect();
                    assert_eq!(
                        cold, warm,
                        "{mode:?} {sort:?} {pattern} limit {limit} {f:?}"
                    );
                }
                let cold = search_summaries_cold(&conn, &q, features).unwrap();
                let (cold, _) =
                    cold.unwrap_or_else(|| panic!("cold declined {pattern} (summaries)"));
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
    // Queries the cold path leaves to the catalog: no whole word in the literal,
    // or more matches than it reads.
    for (mode, pattern) in [(Mode::Regex, "ECONNRESET"), (Mode::Regex, r"\d+")] {
        let q = build_query(pattern, mode, Sort::Recency, 10, Filter::default()).unwrap();
        let cold = search_messages_cold(&conn, &q, features).unwrap();
        assert!(cold.is_none(), "{pattern}");
    }
    // Summaries: a regex without literals the trigram table can use.
    let q = build_query(r"\d+", Mode::Regex, Sort::Recency, 10, Filter::default()).unwrap();
    assert!(search_summaries_cold(&conn, &q, features)
        .unwrap()
        .is_none());
}
