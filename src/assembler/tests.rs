//! Assembly end to end over an in-memory store: selection under budgets, the
//! fresh tail, summary presentation, the cache across turns and repairs.

use super::*;
use crate::message::ingest::map_message;
use crate::store::dag::{persist_summary, NewSummary, Sources};
use crate::store::messages::{self, insert_batch, ContextItem};
use crate::store::{migrate, summaries, Features};

struct Db {
    conn: Connection,
    features: Features,
    conv: i64,
    ids: Vec<i64>,
}

const T0: i64 = 1_771_313_820_000;

fn db(msgs: &[Value]) -> Db {
    let mut conn = Connection::open_in_memory().unwrap();
    let features = migrate::migrate(&mut conn).unwrap();
    let batch = msgs
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut m = m.clone();
            m["timestamp"] = json!(T0 + i as i64 * 60_000);
            map_message(&m, None).unwrap()
        })
        .collect();
    let session = SessionRef {
        session_id: "s".into(),
        session_key: None,
    };
    let out = insert_batch(&mut conn, &session, batch).unwrap();
    let ids = out.messages.iter().map(|m| m.message_id.unwrap()).collect();
    Db {
        conn,
        features,
        conv: out.conversation_id,
        ids,
    }
}

impl Db {
    fn leaf(&mut self, content: &str, range: std::ops::Range<usize>) -> String {
        self.summary(content, Sources::Messages(self.ids[range].to_vec()))
    }
    fn summary(&mut self, content: &str, sources: Sources) -> String {
        let s = NewSummary {
            conversation_id: self.conv,
            content: content.into(),
            model: "m".into(),
            sources,
        };
        persist_summary(&mut self.conn, &s, self.features).unwrap()
    }
    fn items(&self) -> Vec<ContextItem> {
        messages::context_items(&self.conn, self.conv).unwrap()
    }
    fn assemble(&self, budget: i64, s: &Settings) -> AssembleResult {
        self.assemble_with(budget, s, &Cache::new())
    }
    fn assemble_with(&self, budget: i64, s: &Settings, cache: &Cache) -> AssembleResult {
        assemble_conversation(&self.conn, self.conv, budget, s, cache).unwrap()
    }
    fn session(&self, budget: i64, live: Option<usize>, s: &Settings) -> Outcome {
        let session = SessionRef {
            session_id: "s".into(),
            session_key: None,
        };
        assemble_session(&self.conn, &session, budget, live, s, &Cache::new()).unwrap()
    }
}

fn settings(tail: i64) -> Settings {
    Settings {
        fresh_tail_count: tail,
        fresh_tail_max_tokens: None,
        format: SummaryFormat::Xml,
        zone: Zone::utc(),
    }
}

fn user(t: &str) -> Value {
    json!({"role": "user", "content": t})
}
fn say(t: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": t}]})
}
fn call(id: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "toolCall", "id": id, "name": "read", "arguments": {"p": 1}}]})
}
fn result(id: &str, t: &str) -> Value {
    json!({"role": "toolResult", "toolCallId": id, "toolName": "read", "content": [{"type": "text", "text": t}], "isError": false})
}

/// The output with each message's timestamp removed (inputs get one at ingest).
/// The messages as the binding sends them (JSON text, kept texts included).
fn sent(r: &AssembleResult) -> String {
    serde_json::to_string(&r.messages).unwrap()
}

/// The messages' values written out now (no kept text involved).
fn written(r: &AssembleResult) -> String {
    let values: Vec<&Value> = r.messages.iter().map(|m| &**m).collect();
    serde_json::to_string(&values).unwrap()
}

fn plain(r: &AssembleResult) -> Vec<Value> {
    r.messages
        .iter()
        .map(|m| {
            let mut m = Value::clone(m);
            if let Some(o) = m.as_object_mut() {
                o.shift_remove("timestamp");
            }
            m
        })
        .collect()
}

fn is_summary(m: &Value) -> bool {
    m["role"] == "user"
        && m["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("<summary "))
}

/// What `estimatedTokens` must be: the wire count of every message sent, plus the
/// recall guidance when a summary is.
fn honest(r: &AssembleResult) -> i64 {
    let guidance = if r.messages.iter().any(|m| is_summary(m)) {
        tokens::estimate_wire(RECALL_GUIDANCE)
    } else {
        0
    };
    r.messages.iter().map(|m| wire_tokens(m)).sum::<i64>() + guidance
}

#[test]
fn summaries_and_messages_interleave_in_context_order() {
    let msgs: Vec<Value> = (0..10)
        .map(|i| {
            if i % 2 == 0 {
                user(&format!("u{i}"))
            } else {
                say(&format!("a{i}"))
            }
        })
        .collect();
    let mut d = db(&msgs);
    let a = d.leaf("first part", 0..3);
    let b = d.leaf("second part", 5..7);
    let r = d.assemble(100_000, &settings(2));
    let out = plain(&r);
    assert_eq!(out.len(), 7);
    assert!(out[0]["content"]
        .as_str()
        .unwrap()
        .starts_with(&format!("<summary id=\"{a}\" kind=\"leaf\"")));
    assert_eq!(out[1], say("a3"));
    assert_eq!(out[2], user("u4"));
    assert!(out[3]["content"]
        .as_str()
        .unwrap()
        .contains(&format!("id=\"{b}\"")));
    assert_eq!(&out[4..], &[say("a7"), user("u8"), say("a9")]);
    assert_eq!(
        (r.stats.summaries_included, r.stats.messages_included),
        (2, 5)
    );
    assert_eq!(r.stats.dropped_for_budget, 0);
    assert_eq!(r.estimated_tokens, honest(&r));
    assert_eq!(r.system_prompt_addition.as_deref(), Some(RECALL_GUIDANCE));
    assert!(
        r.messages[1].get("timestamp").is_some(),
        "messages rebuild exactly"
    );
}

#[test]
fn the_budget_keeps_the_newest_contiguous_run() {
    // Costs: tiny, big, small; tail = the last user message.
    let msgs = [
        user("abcd"),
        say(&"x".repeat(400)),
        user(&"y".repeat(20)),
        user("zzzz"),
    ];
    let d = db(&msgs);
    let all = d.assemble(100_000, &settings(1));
    let small = wire_tokens(&all.messages[2]) + wire_tokens(&all.messages[3]);
    let r = d.assemble(small + 1, &settings(1));
    let out = plain(&r);
    // The small message fits; the big one does not, so the tiny older one goes too.
    assert_eq!(out, [user(&"y".repeat(20)), user("zzzz")]);
    assert_eq!(r.stats.dropped_for_budget, 2);
    assert_eq!(r.estimated_tokens, small);
    let r = d.assemble(all.estimated_tokens, &settings(1));
    assert_eq!(r.messages.len(), 4);
    assert!(!r.stats.over_budget);
}

#[test]
fn an_over_budget_tail_is_clamped_to_the_newest_user_turn() {
    let msgs = [
        user(&"o".repeat(400)),
        say(&"p".repeat(400)),
        user(&"q".repeat(40)),
        say(&"a".repeat(40)),
    ];
    let d = db(&msgs);
    let all = d.assemble(100_000, &settings(4));
    let budget = wire_tokens(&all.messages[2]) + wire_tokens(&all.messages[3]) + 10;
    let r = d.assemble(budget, &settings(4));
    assert_eq!(plain(&r), [user(&"q".repeat(40)), say(&"a".repeat(40))]);
    assert!(!r.stats.over_budget);
    let dropped = wire_tokens(&all.messages[0]) + wire_tokens(&all.messages[1]);
    assert_eq!(
        (r.stats.clamped_messages, r.stats.clamped_tokens),
        (2, dropped)
    );
    assert!(r.estimated_tokens <= budget);
}

#[test]
fn the_tail_is_kept_over_budget() {
    let msgs = [
        user("old question"),
        say("old answer"),
        user(&"q".repeat(400)),
        say(&"a".repeat(400)),
    ];
    let d = db(&msgs);
    let r = d.assemble(10, &settings(2));
    assert_eq!(plain(&r), [user(&"q".repeat(400)), say(&"a".repeat(400))]);
    assert!(r.stats.over_budget);
    assert_eq!((r.stats.tail_items, r.stats.tail_tokens), (2, 200));
    assert_eq!(r.estimated_tokens, honest(&r));
    assert_eq!(r.stats.tail_start_ordinal, Some(2));
}

/// The selection computed the plain way: every item resolved, the tail from the
/// whole context list, then the newest contiguous run that fits.
fn oracle(d: &Db, budget: i64, s: &Settings) -> (i64, Vec<i64>, usize) {
    let items = d.items();
    let tail_start = fresh_tail_start(&items, s.fresh_tail_count, s.fresh_tail_max_tokens);
    let cost = |i: &ContextItem| match &i.summary_id {
        Some(id) => {
            let r = summaries::get(&d.conn, id).unwrap().unwrap();
            let view = xml::SummaryView {
                summary_id: r.summary_id,
                kind: r.kind,
                depth: r.depth,
                descendant_count: r.descendant_count,
                earliest_at: r.earliest_at,
                latest_at: r.latest_at,
                created_at: Some(r.created_at),
                parents: summaries::source_summary_ids(&d.conn, id).unwrap(),
                content: r.content,
            };
            tokens::estimate(&xml::render(&view, s.format, s.zone))
        }
        None => i.token_count,
    };
    let tail: i64 = items
        .iter()
        .filter(|i| i.ordinal >= tail_start)
        .map(cost)
        .sum();
    let room = (budget - tail).max(0);
    let (mut used, mut picked) = (0, Vec::new());
    for i in items.iter().rev().filter(|i| i.ordinal < tail_start) {
        if used + cost(i) > room {
            break;
        }
        used += cost(i);
        picked.push(i.ordinal);
    }
    let evictable = items.iter().filter(|i| i.ordinal < tail_start).count();
    let dropped = evictable - picked.len();
    picked.extend(
        items
            .iter()
            .filter(|i| i.ordinal >= tail_start)
            .map(|i| i.ordinal),
    );
    picked.sort_unstable();
    (tail_start, picked, dropped)
}

#[test]
fn streaming_selection_matches_the_plain_computation() {
    let mut msgs = Vec::new();
    for i in 0..60 {
        msgs.push(user(&format!("question {i} {}", "w".repeat(i * 7 % 50))));
        msgs.push(call(&format!("c{i}")));
        msgs.push(result(&format!("c{i}"), &"r & <r> ".repeat(i % 9)));
        msgs.push(say(&format!("answer {i}")));
    }
    // A long assistant-only stretch at the end: the tail must reach back to the
    // newest user message through it.
    msgs.extend((0..12).map(|i| say(&format!("follow-up {i}"))));
    let mut d = db(&msgs);
    let mut leaves = Vec::new();
    for k in 0..8 {
        let hostile = "<&>".repeat(k * 13);
        leaves.push(d.leaf(&format!("leaf {k} {hostile}"), k * 20..k * 20 + 20));
    }
    d.summary(
        "condensed & <stuff>",
        Sources::Summaries(leaves[0..4].to_vec()),
    );
    let total = d.items().len() as i64;
    // One cache across every case: hits and misses must not change anything.
    let cache = Cache::new();
    for (count, cap) in [
        (0, None),
        (4, None),
        (16, None),
        (20, Some(40)),
        (200, None),
    ] {
        let s = Settings {
            fresh_tail_count: count,
            fresh_tail_max_tokens: cap,
            ..settings(0)
        };
        for budget in [1, 30, 80, 150, 300, 600, 1_000, 2_000, 5_000, 100_000] {
            let mut reuse = select::Reuse::default();
            let sel = select::select(&d.conn, d.conv, total, budget, &s, &mut reuse).unwrap();
            let got: Vec<i64> = sel.items.iter().map(|i| i.ordinal).collect();
            let (tail_start, want, dropped) = oracle(&d, budget, &s);
            let case = format!("tail {count} cap {cap:?} budget {budget}");
            assert_eq!(sel.tail_start, tail_start, "{case}");
            assert_eq!(got, want, "{case}");
            assert_eq!(sel.dropped, dropped, "{case}");
            let r = d.assemble_with(budget, &s, &cache);
            assert_eq!(r.estimated_tokens, honest(&r), "{case}");
            let cold = d.assemble(budget, &s);
            assert_eq!(r.messages, cold.messages, "{case}");
            assert_eq!(r.estimated_tokens, cold.estimated_tokens, "{case}");
        }
    }
}

#[test]
fn the_streamed_tail_asks_about_older_user_messages() {
    let mut msgs = vec![user("long ago")];
    msgs.extend((0..10).map(|i| say(&format!("a{i}"))));
    let d = db(&msgs);
    let r = d.assemble(100_000, &settings(3));
    assert_eq!(
        r.stats.tail_start_ordinal,
        Some(0),
        "the newest user turn is kept whole"
    );
    let d = db(&msgs[1..]);
    let r = d.assemble(100_000, &settings(3));
    assert_eq!(
        r.stats.tail_start_ordinal,
        Some(7),
        "without a user message, count decides"
    );
    assert_eq!(r.stats.tail_items, 3);
}

#[test]
fn parents_are_listed_in_link_order() {
    let mut d = db(&[user("a"), say("b"), user("c"), say("d"), user("e")]);
    let a = d.leaf("A", 0..2);
    let b = d.leaf("B", 2..4);
    let c = d.summary("C", Sources::Summaries(vec![a.clone(), b.clone()]));
    // Both link orders: one of them differs from the ids' key order.
    for order in [[&a, &b], [&b, &a]] {
        for (i, id) in order.iter().enumerate() {
            d.conn
                .execute(
                    "UPDATE summary_parents SET ordinal = ?1 WHERE summary_id = ?2 AND parent_summary_id = ?3",
                    rusqlite::params![i as i64, c, id],
                )
                .unwrap();
        }
        let r = d.assemble(10_000, &settings(1));
        let x = r.messages[0]["content"].as_str().unwrap();
        let refs = format!(
            "  <parents>\n    <summary_ref id=\"{}\" />\n    <summary_ref id=\"{}\" />\n  </parents>",
            order[0], order[1]
        );
        assert!(x.contains(&refs), "{x}");
    }
}

#[test]
fn cached_items_are_used_only_while_their_rows_are_unchanged() {
    let msgs = [
        user("a"),
        say("b"),
        user("c"),
        say("d"),
        user("e"),
        say("f"),
    ];
    let mut d = db(&msgs);
    let a = d.leaf("A", 0..2);
    let b = d.leaf("B", 2..4);
    let c = d.summary("C", Sources::Summaries(vec![a.clone(), b.clone()]));
    let cache = Cache::new();
    let first = d.assemble_with(10_000, &settings(2), &cache);
    let again = d.assemble_with(10_000, &settings(2), &cache);
    assert_eq!(first.messages, again.messages);
    // Sending them keeps their text for the next turn.
    assert_eq!(sent(&first), sent(&again));
    // A rewritten summary is rendered again, sources included.
    summaries::replace_content(&mut d.conn, d.conv, &c, "C, revised", d.features).unwrap();
    let r = d.assemble_with(10_000, &settings(2), &cache);
    let x = r.messages[0]["content"].as_str().unwrap();
    assert!(x.contains("\nC, revised\n"), "{x}");
    assert!(x.contains(&format!("<summary_ref id=\"{a}\" />")), "{x}");
    assert!(x.contains(&format!("<summary_ref id=\"{b}\" />")), "{x}");
    assert_eq!(r.estimated_tokens, honest(&r));
    // A changed message row is rebuilt again.
    d.conn
        .execute(
            // Content marker 3: one text block, the content column's text.
            "UPDATE messages SET lcm_envelope = '{\"role\":\"assistant\",\"content\":3,\"note\":1}' WHERE message_id = ?1",
            [d.ids[5]],
        )
        .unwrap();
    let r = d.assemble_with(10_000, &settings(2), &cache);
    assert_eq!(r.messages.last().unwrap()["note"], 1);
    assert_eq!(sent(&r), written(&r));
    assert!(sent(&r).contains(r#""note":1"#));
}

#[test]
fn compact_format_is_used_when_configured() {
    let mut d = db(&[user("a"), say("b"), user("c")]);
    let id = d.leaf("the gist", 0..2);
    let s = Settings {
        format: SummaryFormat::Compact,
        ..settings(1)
    };
    let r = d.assemble(1_000, &s);
    assert_eq!(
        r.messages[0]["content"],
        format!("<summary id=\"{id}\" range=\"2026-02-17 07:37–07:38 UTC\" depth=\"0\">\nthe gist\n</summary>")
    );
}

#[test]
fn evictable_calls_whose_result_was_summarized_are_stripped() {
    let mut d = db(&[
        user("go"),
        call("c1"),
        result("c1", "out"),
        user("next"),
        say("done"),
    ]);
    d.leaf("the result", 2..3);
    let r = d.assemble(10_000, &settings(2));
    let out = plain(&r);
    assert_eq!(out.len(), 4);
    assert_eq!(out[0], user("go"));
    assert!(is_summary(&out[1]));
    assert_eq!(&out[2..], &[user("next"), say("done")]);
    assert_eq!(r.stats.repair.stripped_unpaired_tool_calls, 1);
    assert_eq!(r.stats.repair.dropped_empty_messages, 1);
}

#[test]
fn a_tail_call_without_any_result_gets_a_synthetic_one() {
    let d = db(&[user("go"), call("c9")]);
    let r = d.assemble(10_000, &settings(4));
    let out = plain(&r);
    assert_eq!(out.len(), 3);
    assert_eq!(out[2]["toolCallId"], "c9");
    assert_eq!(out[2]["toolName"], "read");
    assert_eq!(out[2]["content"][0]["text"], MISSING_TOOL_RESULT_TEXT);
    assert_eq!(r.stats.repair.synthetic_tool_results, 1);
    assert_eq!(r.estimated_tokens, honest(&r));
}

#[test]
fn a_tail_call_whose_result_came_before_it_is_stripped_even_when_unloaded() {
    let msgs = [
        user("q"),
        result("c5", &"early ".repeat(50)),
        user("now"),
        call("c5"),
    ];
    let d = db(&msgs);
    for budget in [10_000, 1] {
        let r = d.assemble(budget, &settings(2));
        assert_eq!(plain(&r).last().unwrap(), &user("now"), "budget {budget}");
        assert_eq!(r.stats.repair.stripped_unpaired_tool_calls, 1);
        assert_eq!(r.stats.repair.synthetic_tool_results, 0);
    }
}

#[test]
fn sendable_forms_for_bash_executions_and_id_less_tool_results() {
    let bash = json!({"role": "assistant", "command": "ls", "output": "a\nb"});
    let bare = json!({"role": "toolResult", "toolName": "x", "content": [{"type": "text", "text": "kept"}]});
    let d = db(&[user("q"), bash, bare]);
    let r = d.assemble(10_000, &settings(8));
    let out = plain(&r);
    assert_eq!(
        out[1]["content"],
        json!([{"type": "text", "text": "$ ls\na\nb"}])
    );
    assert_eq!(
        out[2],
        json!({"role": "assistant", "content": [{"type": "text", "text": "kept"}]})
    );
    assert_eq!(r.stats.repair.downgraded_tool_results, 1);
}

#[test]
fn empty_messages_are_dropped_and_strings_become_blocks() {
    let msgs = [
        user("q"),
        json!({"role": "assistant", "content": "plain"}),
        json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "  "}]}),
        json!({"role": "user", "content": []}),
        json!({"role": "assistant", "content": [{"type": "text", "text": ""}, {"type": "text", "text": "real"}]}),
    ];
    let d = db(&msgs);
    let r = d.assemble(10_000, &settings(8));
    assert_eq!(plain(&r), [user("q"), say("plain"), say("real")]);
    assert_eq!(r.stats.repair.dropped_empty_messages, 3);
}

#[test]
fn repairs_change_the_output_never_the_cached_messages() {
    let msgs = [
        user("go"),
        call("c1"),
        result("c1", "out"),
        user("q"),
        json!({"role": "assistant", "content": "plain"}),
        json!({"role": "assistant", "content": [{"type": "text", "text": ""}, {"type": "text", "text": "real"}]}),
    ];
    let mut d = db(&msgs);
    d.leaf("the result", 2..3);
    let cache = Cache::new();
    let first = d.assemble_with(10_000, &settings(3), &cache);
    let out = plain(&first);
    assert_eq!(out[0], user("go"));
    assert!(is_summary(&out[1]));
    assert_eq!(&out[2..], &[user("q"), say("plain"), say("real")]);
    assert_eq!(first.stats.repair.stripped_unpaired_tool_calls, 1);
    // Every later turn served from the cache repairs the same way: the passes
    // changed copies, never the shared cached messages.
    for _ in 0..2 {
        let again = d.assemble_with(10_000, &settings(3), &cache);
        assert_eq!(again.messages, first.messages);
        // The text each message is sent as (kept from the turn before) says what
        // its repaired value says.
        assert_eq!(sent(&again), written(&again));
        assert_eq!(again.stats.repair, first.stats.repair);
        assert_eq!(again.estimated_tokens, first.estimated_tokens);
    }
    let cached = cache.take(d.conv);
    let contents: Vec<&Value> = cached
        .messages
        .values()
        .map(|c| &c.message["content"])
        .collect();
    assert!(contents.contains(&&json!("plain")), "{contents:?}");
    assert!(
        contents.iter().any(|c| c
            .as_array()
            .is_some_and(|b| b.len() == 2 && b[0]["text"] == "")),
        "{contents:?}"
    );
    assert!(
        contents.iter().any(|c| c
            .as_array()
            .is_some_and(|b| b.iter().any(|x| x["id"] == "c1"))),
        "{contents:?}"
    );
}

#[test]
fn guards_fall_back_to_live_messages() {
    let d = db(&[user("q"), say("a")]);
    let other = SessionRef {
        session_id: "nope".into(),
        session_key: None,
    };
    let o = assemble_session(&d.conn, &other, 100, Some(1), &settings(8), &Cache::new()).unwrap();
    assert!(matches!(
        o,
        Outcome::Fallback(FallbackReason::NoConversation, _)
    ));
    let o = d.session(100, Some(3), &settings(8));
    assert!(matches!(
        o,
        Outcome::Fallback(FallbackReason::IncompleteCoverage, _)
    ));
    let Outcome::Assembled(r) = d.session(100, Some(2), &settings(8)) else {
        panic!("expected an assembly");
    };
    assert_eq!(r.messages.len(), 2);
    let d = db(&[say("only the assistant")]);
    let o = d.session(100, Some(1), &settings(8));
    assert!(matches!(
        o,
        Outcome::Fallback(FallbackReason::NoUserTurn, _)
    ));
    let r = fill_live(
        fallback(FallbackReason::Error, AssembleStats::default()),
        vec![user("live")],
    );
    assert_eq!(r.messages, [SharedMessage::new(user("live"))]);
    assert_eq!(r.estimated_tokens, wire_tokens(&user("live")));
    assert!(r.stats.live_fallback);
}

#[test]
fn bad_parameters_are_invalid_input() {
    let p = |v: Value| {
        validate(serde_json::from_value(v).unwrap())
            .err()
            .map(|e| e.code)
    };
    assert_eq!(p(json!({"tokenBudget": 5})), Some(ErrorCode::InvalidInput));
    assert_eq!(
        p(json!({"sessionId": " ", "tokenBudget": 5})),
        Some(ErrorCode::InvalidInput)
    );
    assert_eq!(
        p(json!({"sessionId": "s", "tokenBudget": 0})),
        Some(ErrorCode::InvalidInput)
    );
    assert_eq!(
        p(json!({"sessionId": "s", "tokenBudget": -3})),
        Some(ErrorCode::InvalidInput)
    );
    assert_eq!(p(json!({"sessionId": "s"})), Some(ErrorCode::InvalidInput));
    assert_eq!(p(json!({"sessionId": "s", "tokenBudget": 10.7})), None);
}

#[test]
fn a_newest_turn_over_the_budget_has_its_largest_tool_result_cut_to_fit() {
    let big = "line of code that keeps going; ".repeat(400);
    let msgs = [
        user("older"),
        say("older answer"),
        user("read the file"),
        call("c1"),
        result("c1", &big),
        say("done"),
    ];
    let d = db(&msgs);
    let budget = 600;
    let r = d.assemble(budget, &settings(4));
    assert!(
        r.estimated_tokens <= budget,
        "{} > {budget}",
        r.estimated_tokens
    );
    assert!(!r.stats.over_budget);
    assert_eq!(r.stats.trimmed_tool_results, 1);
    assert_eq!(r.estimated_tokens, honest(&r));
    let out = plain(&r);
    assert_eq!(out[0], user("read the file"));
    let text = out[2]["content"][0]["text"].as_str().unwrap();
    assert!(text.ends_with(TRIM_MARKER), "{text}");
    assert!(big.starts_with(text.strip_suffix(TRIM_MARKER).unwrap()));
    // With room, nothing is cut.
    let r = d.assemble(100_000, &settings(4));
    assert_eq!(r.stats.trimmed_tool_results, 0);
    assert_eq!(plain(&r)[4]["content"][0]["text"], big.as_str());
}

mod budget_props {
    use proptest::prelude::*;

    use super::*;

    /// One piece of a transcript: prose, code, CJK, or tool-call JSON.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z ,.]{1,400}",
            "(fn [a-z_]{1,8}\\(x: i64\\) -> i64 \\{ x \\+ [0-9]{1,4} \\}\n){1,20}",
            "[一-龥ぁ-んア-ン가-힣。、]{1,200}",
            "(\\{\"id\": [0-9]{1,6}, \"ok\": (true|false), \"v\": \\[[0-9, ]{0,20}\\]\\}, ){1,20}",
            crate::text::strategies::text(120),
        ]
    }

    /// A transcript of user turns, replies, and tool calls with their results.
    fn transcript() -> impl Strategy<Value = Vec<Value>> {
        prop::collection::vec((0u8..4, piece()), 1..40).prop_map(|turns| {
            let mut out = vec![user("start")];
            for (k, (kind, text)) in turns.into_iter().enumerate() {
                match kind {
                    0 => out.push(user(&text)),
                    1 => out.push(say(&text)),
                    _ => {
                        let id = format!("c{k}");
                        out.push(call(&id));
                        out.push(result(&id, &text));
                    }
                }
            }
            out
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The serialized output stays within the budget by the chosen count (and by
        /// chars/4 of its JSON) unless the newest user turn alone is over it, and
        /// `estimatedTokens` is that count.
        #[test]
        fn the_serialized_output_holds_the_budget(
            msgs in transcript(),
            budget in 30i64..6_000,
            tail in 0i64..8,
            summarized in 0usize..3,
        ) {
            let mut d = db(&msgs);
            if summarized > 0 && msgs.len() > summarized * 2 + 1 {
                d.leaf(&"earlier work, summarized ".repeat(20), 0..summarized * 2);
            }
            let r = d.assemble(budget, &settings(tail));
            prop_assert_eq!(r.estimated_tokens, honest(&r));
            if r.messages.is_empty() {
                // Nothing fits (the session-level guard then sends the live messages).
                return Ok(());
            }
            let wire = serde_json::to_string(&r.messages).unwrap();
            let guidance = r.system_prompt_addition.as_deref().unwrap_or("");
            let chosen = tokens::estimate_wire(&wire) + tokens::estimate_wire(guidance);
            prop_assert!(chosen <= r.estimated_tokens, "{chosen} > {}", r.estimated_tokens);
            let chars4 = (wire.len() + guidance.len()).div_ceil(4) as i64;
            prop_assert!(chars4 <= r.estimated_tokens, "chars/4 {chars4} > {}", r.estimated_tokens);
            if r.estimated_tokens > budget {
                prop_assert!(r.stats.over_budget);
                // Over only when what the clamp may not drop is: the output starts
                // at the newest user message (or has none: the session-level guard
                // then sends the live messages, clamped).
                let newest = r.messages.iter().rposition(|m| pairing::role(m) == "user");
                prop_assert!(matches!(newest, None | Some(0)), "over budget with droppable messages left");
            }
        }
    }
}
