//! The browser's state machines without a terminal: keys and results in, commands
//! and status lines out.

use super::app::{Action, App, Flow, Msg, Node, Screen};
use super::flow::{Cmd, Outcome, Pane, Phase, RewriteFlow};
use super::keys::Key;
use crate::error::{ErrorCode, LcmError};
use crate::prompts::RenderedPrompt;
use crate::rewrite::{PlannedSummary, RewriteEntry, RewriteFailure, RewritePreview, RewriteReport};

pub(super) fn planned(id: &str, depth: i64, tokens: i64) -> PlannedSummary {
    PlannedSummary {
        summary_id: id.into(),
        kind: if depth == 0 {
            crate::store::summaries::SummaryKind::Leaf
        } else {
            crate::store::summaries::SummaryKind::Condensed
        },
        depth,
        child_count: 2,
        token_count: tokens,
        earliest_at: Some("2026-02-17T15:37:00.000Z".into()),
        latest_at: Some("2026-02-17T21:14:00.000Z".into()),
        created_at: "2026-02-17 21:15:00".into(),
    }
}

pub(super) fn preview(id: &str) -> RewritePreview {
    RewritePreview {
        summary: planned(id, 1, 1523),
        time_range: Some("2026-02-17 15:37–21:14 UTC".into()),
        old_content: "old text".into(),
        old_tokens: 1523,
        source_chars: 400,
        source_tokens: 100,
        has_previous_context: false,
        prompt: RenderedPrompt {
            prompt: "PROMPT".into(),
            system_prompt: "SYSTEM".into(),
            template: "condensed-d1",
            source: "embedded".into(),
            target_tokens: 2000,
        },
        skip: None,
    }
}

pub(super) fn entry(id: &str, depth: i64, old: i64, new: i64) -> RewriteEntry {
    RewriteEntry {
        summary_id: id.into(),
        kind: crate::store::summaries::SummaryKind::Condensed,
        depth,
        child_count: 2,
        earliest_at: None,
        latest_at: None,
        time_range: None,
        old_content: format!("old {id}"),
        new_content: format!("new {id}"),
        old_tokens: old,
        new_tokens: new,
        delta: new - old,
        diff: format!("-old {id}\n+new {id}\n"),
        level: None,
        model: Some("m".into()),
        applied: false,
        skipped: None,
    }
}

pub(super) fn report(entries: Vec<RewriteEntry>, error: Option<RewriteFailure>) -> RewriteReport {
    RewriteReport {
        conversation_id: 7,
        dry_run: true,
        planned: entries.len().max(1),
        old_tokens: entries.iter().map(|e| e.old_tokens).sum(),
        new_tokens: entries.iter().map(|e| e.new_tokens).sum(),
        delta: 0,
        entries,
        error,
    }
}

fn rewrite_req(cmds: &[Cmd]) -> (u64, crate::compaction::CancelToken, String) {
    match cmds {
        [Cmd::Rewrite {
            req,
            cancel,
            summary_id,
            ..
        }] => (*req, cancel.clone(), summary_id.clone()),
        other => panic!("expected one Rewrite command, got {other:?}"),
    }
}

fn apply_req(cmds: &[Cmd]) -> (u64, String, String, String) {
    match cmds {
        [Cmd::Apply {
            req,
            summary_id,
            expected,
            content,
            ..
        }] => (*req, summary_id.clone(), expected.clone(), content.clone()),
        other => panic!("expected one Apply command, got {other:?}"),
    }
}

#[test]
fn w_preview_inflight_review_applied() {
    let mut f = RewriteFlow::single(7, preview("sum_a"));
    assert!(matches!(f.phase, Phase::Preview { .. }));
    // Scrolling the preview sends nothing.
    let (o, cmds) = f.on_key(Key::Char('j'));
    assert_eq!((o, cmds.len()), (Outcome::Open, 0));
    let (o, cmds) = f.on_key(Key::Enter);
    assert_eq!(o, Outcome::Open);
    let (req, _, id) = rewrite_req(&cmds);
    assert_eq!(id, "sum_a");
    assert!(matches!(f.phase, Phase::Inflight { .. }));
    assert_eq!(f.inflight_line(), "Rewriting sum_a with d1 prompt…");
    // Other keys while in flight do nothing.
    assert_eq!(f.on_key(Key::Char('y')).0, Outcome::Open);
    let (o, cmds) = f.on_rewritten(req, Ok(report(vec![entry("sum_a", 1, 1523, 1401)], None)));
    assert_eq!((o, cmds.len()), (Outcome::Open, 0));
    let Phase::Review(r) = &f.phase else {
        panic!("not in review: {:?}", f.phase)
    };
    assert!(!r.diff);
    f.on_key(Key::Char('d'));
    let Phase::Review(r) = &f.phase else { panic!() };
    assert!(r.diff, "d toggles the diff");
    f.on_key(Key::Char('J'));
    f.on_key(Key::Char('J'));
    let Phase::Review(r) = &f.phase else { panic!() };
    assert_eq!(r.old_scroll, 2);
    let (o, cmds) = f.on_key(Key::Char('y'));
    assert_eq!(o, Outcome::Open);
    let (areq, id, expected, content) = apply_req(&cmds);
    assert_eq!(
        (id.as_str(), expected.as_str(), content.as_str()),
        ("sum_a", "old sum_a", "new sum_a")
    );
    let (o, cmds) = f.on_applied(areq, Ok(1401));
    assert_eq!(
        o,
        Outcome::Closed("Rewrote sum_a: 1,523t → 1,401t (\u{2212}122)".into())
    );
    assert!(matches!(cmds.as_slice(), [Cmd::ReloadDag]));
}

#[test]
fn review_panes_scroll_apart_and_the_diff_has_one() {
    let mut f = RewriteFlow::single(7, preview("sum_a"));
    f.on_key(Key::Down);
    f.on_key(Key::PageDown);
    assert!(
        matches!(f.phase, Phase::Preview { scroll: 11 }),
        "{:?}",
        f.phase
    );
    let (req, ..) = rewrite_req(&f.on_key(Key::Enter).1);
    f.on_rewritten(req, Ok(report(vec![entry("sum_a", 1, 10, 8)], None)));
    let review = |f: &RewriteFlow| match &f.phase {
        Phase::Review(r) => (r.diff, r.focus == Pane::Old, r.old_scroll, r.new_scroll),
        other => panic!("not in review: {other:?}"),
    };
    f.on_key(Key::Char('K'));
    assert_eq!(
        review(&f),
        (false, false, 0, 0),
        "NEW has the focus; K stops at the top"
    );
    f.on_key(Key::Char('J'));
    f.on_key(Key::Tab);
    f.on_key(Key::Char('J'));
    f.on_key(Key::Char('J'));
    assert_eq!(review(&f), (false, true, 2, 1), "tab moves J to OLD");
    f.on_key(Key::Char('K'));
    f.on_key(Key::Char('d'));
    assert_eq!(
        review(&f),
        (true, true, 0, 1),
        "d shows the diff from its top"
    );
    f.on_key(Key::Tab);
    f.on_key(Key::Char('J'));
    assert_eq!(
        review(&f),
        (true, false, 1, 1),
        "the diff scrolls as OLD whatever the focus"
    );
    f.on_key(Key::Char('x'));
    assert_eq!(review(&f), (true, false, 1, 1), "other keys do nothing");
}

#[test]
fn subtree_plan_scrolls_then_starts() {
    let mut f = RewriteFlow::subtree(7, vec![planned("sum_a", 0, 100), planned("sum_b", 1, 200)]);
    f.on_key(Key::Char('j'));
    f.on_key(Key::Char('j'));
    f.on_key(Key::Up);
    assert!(
        matches!(f.phase, Phase::Plan { scroll: 1 }),
        "{:?}",
        f.phase
    );
    let (o, cmds) = f.on_key(Key::Char('y'));
    assert_eq!(o, Outcome::Open);
    assert_eq!(rewrite_req(&cmds).2, "sum_a");
}

#[test]
fn w_discard_and_preview_cancel() {
    let mut f = RewriteFlow::single(7, preview("sum_a"));
    assert_eq!(
        f.on_key(Key::Esc).0,
        Outcome::Closed("Rewrite cancelled; nothing sent.".into())
    );
    let mut f = RewriteFlow::single(7, preview("sum_a"));
    let (req, _, _) = rewrite_req(&f.on_key(Key::Enter).1);
    f.on_rewritten(req, Ok(report(vec![entry("sum_a", 1, 10, 8)], None)));
    let (o, cmds) = f.on_key(Key::Char('n'));
    assert_eq!(
        o,
        Outcome::Closed("Discarded the rewrite of sum_a; nothing written.".into())
    );
    assert!(cmds.is_empty(), "discarding writes nothing");
}

#[test]
fn w_esc_in_flight_trips_the_cancel_token_and_ignores_the_late_answer() {
    let mut f = RewriteFlow::single(7, preview("sum_a"));
    let (req, cancel, _) = rewrite_req(&f.on_key(Key::Enter).1);
    assert!(!cancel.is_cancelled());
    let (o, cmds) = f.on_key(Key::Esc);
    assert!(cancel.is_cancelled(), "Esc cancels the request itself");
    assert!(cmds.is_empty());
    assert_eq!(
        o,
        Outcome::Closed("Rewrite of sum_a cancelled: request aborted, nothing written.".into())
    );
    // The app drops the flow; a late answer to an old request is ignored by a flow too.
    let mut g = RewriteFlow::single(7, preview("sum_b"));
    let (req2, _, _) = rewrite_req(&g.on_key(Key::Enter).1);
    let (o, cmds) = g.on_rewritten(req2 + 1, Ok(report(vec![entry("sum_b", 1, 1, 1)], None)));
    assert_eq!((o, cmds.len()), (Outcome::Open, 0));
    assert!(matches!(g.phase, Phase::Inflight { .. }));
    let _ = req;
}

#[test]
fn w_failed_call_closes_with_the_error() {
    let mut f = RewriteFlow::single(7, preview("sum_a"));
    let (req, _, _) = rewrite_req(&f.on_key(Key::Enter).1);
    let fail = RewriteFailure {
        summary_id: "sum_a".into(),
        depth: 1,
        code: ErrorCode::LlmAuth,
        message: "invalid api key".into(),
    };
    let (o, _) = f.on_rewritten(req, Ok(report(vec![], Some(fail))));
    assert_eq!(
        o,
        Outcome::Closed("Rewrite of sum_a failed: LCM_LLM_AUTH: invalid api key".into())
    );
    // A stale text (changed since the review) is reported, not written twice.
    let mut f = RewriteFlow::single(7, preview("sum_a"));
    let (req, _, _) = rewrite_req(&f.on_key(Key::Enter).1);
    f.on_rewritten(req, Ok(report(vec![entry("sum_a", 1, 5, 4)], None)));
    let (areq, ..) = apply_req(&f.on_key(Key::Enter).1);
    let (o, cmds) = f.on_applied(areq, Err(LcmError::invalid("sum_a changed")));
    assert_eq!(
        o,
        Outcome::Closed("Rewrite of sum_a failed: sum_a changed".into())
    );
    assert!(cmds.is_empty());
}

#[test]
fn subtree_with_accept_all() {
    let plan = vec![
        planned("sum_l1", 0, 100),
        planned("sum_l2", 0, 100),
        planned("sum_top", 1, 300),
    ];
    let mut f = RewriteFlow::subtree(7, plan);
    assert_eq!(
        f.plan_summary(),
        "Rewrite 3 summaries (2 leaves, 1 d1), bottom-up; ~500t stored now"
    );
    let (req, _, id) = rewrite_req(&f.on_key(Key::Char('y')).1);
    assert_eq!(id, "sum_l1", "leaves first");
    assert_eq!(
        f.inflight_line(),
        "Rewriting sum_l1 with leaf prompt… (1 of 3)"
    );
    f.on_rewritten(req, Ok(report(vec![entry("sum_l1", 0, 100, 80)], None)));
    // Review the first, then accept all the rest.
    let (areq, id, ..) = apply_req(&f.on_key(Key::Char('A')).1);
    assert_eq!(id, "sum_l1");
    let (o, cmds) = f.on_applied(areq, Ok(80));
    assert_eq!(o, Outcome::Open);
    // The next one is asked for only after the child was written (children feed parents).
    let (req, _, id) = rewrite_req(&cmds);
    assert_eq!((id.as_str(), f.progress().as_str()), ("sum_l2", "2 of 3"));
    let (o, cmds) = f.on_rewritten(req, Ok(report(vec![entry("sum_l2", 0, 100, 90)], None)));
    assert_eq!(o, Outcome::Open);
    let (areq, id, ..) = apply_req(&cmds);
    assert_eq!(id, "sum_l2", "accepted without review");
    let (_, cmds) = f.on_applied(areq, Ok(90));
    let (req, _, id) = rewrite_req(&cmds);
    assert_eq!(id, "sum_top");
    let (_, cmds) = f.on_rewritten(req, Ok(report(vec![entry("sum_top", 1, 300, 200)], None)));
    let (areq, ..) = apply_req(&cmds);
    let (o, cmds) = f.on_applied(areq, Ok(200));
    assert_eq!(
        o,
        Outcome::Closed(
            "Rewrote 3 of 3 summaries, 0 discarded. Total: 500t → 370t (\u{2212}130)".into()
        )
    );
    assert!(matches!(cmds.as_slice(), [Cmd::ReloadDag]));
}

#[test]
fn subtree_esc_stops_after_the_current_one() {
    let plan = vec![planned("sum_l1", 0, 100), planned("sum_top", 1, 300)];
    let mut f = RewriteFlow::subtree(7, plan);
    let (req, cancel, _) = rewrite_req(&f.on_key(Key::Enter).1);
    let (o, cmds) = f.on_key(Key::Esc);
    assert_eq!((o, cmds.len()), (Outcome::Open, 0));
    assert!(
        f.stopping && !cancel.is_cancelled(),
        "the current call goes on"
    );
    f.on_rewritten(req, Ok(report(vec![entry("sum_l1", 0, 100, 70)], None)));
    assert!(
        matches!(f.phase, Phase::Review(_)),
        "the current one is still reviewed"
    );
    let (areq, ..) = apply_req(&f.on_key(Key::Char('y')).1);
    let (o, cmds) = f.on_applied(areq, Ok(70));
    assert_eq!(
        o,
        Outcome::Closed(
            "Rewrote 1 of 2 summaries (stopped at 2 of 2), 0 discarded. Total: 100t → 70t (\u{2212}30)"
                .into()
        )
    );
    assert!(matches!(cmds.as_slice(), [Cmd::ReloadDag]));
    // n discards one and goes on; a second Esc in flight cancels the request.
    let plan = vec![planned("sum_l1", 0, 100), planned("sum_top", 1, 300)];
    let mut f = RewriteFlow::subtree(7, plan);
    let (req, _, _) = rewrite_req(&f.on_key(Key::Enter).1);
    f.on_rewritten(req, Ok(report(vec![entry("sum_l1", 0, 100, 70)], None)));
    let (_, cmds) = f.on_key(Key::Char('n'));
    let (_, cancel, id) = rewrite_req(&cmds);
    assert_eq!(id, "sum_top");
    f.on_key(Key::Esc);
    let (o, _) = f.on_key(Key::Esc);
    assert!(cancel.is_cancelled());
    assert!(
        matches!(o, Outcome::Closed(s) if s.contains("sum_top cancelled, request aborted") && s.contains("1 discarded"))
    );
}

pub(super) fn conversation(id: i64) -> crate::store::browse::ConversationOverview {
    crate::store::browse::ConversationOverview {
        conversation_id: id,
        session_id: format!("session-{id}"),
        session_key: Some(format!("agent:main:{id}")),
        ..Default::default()
    }
}

/// The context list's first item: summary `id` at `depth`.
pub(super) fn context_summary(id: &str, depth: i64) -> crate::store::messages::ContextItem {
    crate::store::messages::ContextItem {
        ordinal: 0,
        item_type: crate::store::messages::ContextItemType::Summary,
        message_id: None,
        summary_id: Some(id.into()),
        token_count: 10,
        depth: Some(depth),
        role: None,
    }
}

pub(super) fn with_links(
    id: &str,
    depth: i64,
    parents: &[&str],
    messages: &[i64],
) -> crate::engine::SummaryWithLinks {
    crate::engine::SummaryWithLinks {
        summary: crate::store::summaries::SummaryRecord {
            summary_id: id.into(),
            conversation_id: 7,
            kind: if depth == 0 {
                crate::store::summaries::SummaryKind::Leaf
            } else {
                crate::store::summaries::SummaryKind::Condensed
            },
            depth,
            content: format!("content of {id}"),
            token_count: 10,
            earliest_at: None,
            latest_at: None,
            descendant_count: parents.len() as i64,
            descendant_token_count: 0,
            source_message_token_count: 0,
            created_at: "2026-02-17 21:15:00".into(),
            file_ids: Vec::new(),
            model: "m".into(),
        },
        parent_ids: parents.iter().map(|s| s.to_string()).collect(),
        message_ids: messages.to_vec(),
    }
}

#[test]
fn app_filter_open_expand_and_actions() {
    let (mut app, first) = App::new("db".into(), "offline".into());
    assert!(matches!(first.as_slice(), [Action::LoadConversations]));
    app.on_msg(Msg::Conversations(Ok(vec![
        conversation(7),
        conversation(12),
    ])));
    for c in "12".chars() {
        app.on_key(Key::Char(c));
    }
    assert_eq!(app.filtered().len(), 1);
    let acts = app.on_key(Key::Enter);
    assert!(matches!(acts.as_slice(), [Action::LoadDag(12)]));
    assert_eq!(app.screen, Screen::Dag);
    let ctx = vec![context_summary("sum_top", 1)];
    let sums = vec![
        with_links("sum_top", 1, &["sum_l1"], &[]),
        with_links("sum_l1", 0, &[], &[1, 2]),
    ];
    app.on_msg(Msg::Dag(12, Ok((ctx, sums))));
    assert_eq!(app.rows().len(), 1);
    app.on_key(Key::Right);
    app.on_key(Key::Down);
    app.on_key(Key::Right);
    let rows = app.rows();
    assert_eq!(rows.len(), 3);
    assert_eq!(
        rows[2].node,
        Node::Messages {
            summary_id: "sum_l1".into(),
            count: 2
        }
    );
    // d only dissolves context summaries.
    assert!(app.on_key(Key::Char('d')).is_empty());
    assert!(app.status.contains("not on the context list"));
    assert!(
        matches!(app.on_key(Key::Char('w')).as_slice(), [Action::Preview { summary_id, .. }] if summary_id == "sum_l1")
    );
    app.on_msg(Msg::Preview(Ok(preview("sum_l1"))));
    assert!(matches!(app.flow, Some(Flow::Rewrite(_))));
    // While a flow is open, screen keys go to the flow.
    assert!(app.on_key(Key::Char('q')).is_empty());
    assert!(app.flow.is_none() && !app.quit);
    app.on_key(Key::Left);
    app.on_key(Key::Left);
    assert_eq!(app.dag_sel, 0);
    let acts = app.on_key(Key::Char('d'));
    assert!(matches!(
        acts.as_slice(),
        [Action::Flow(Cmd::Dissolve { apply: false, .. })]
    ));
    app.on_key(Key::Esc);
    assert!(app.flow.is_none());
    app.on_key(Key::Esc);
    assert_eq!(app.screen, Screen::Conversations);
    app.on_key(Key::Interrupt);
    assert!(app.quit);
}

#[test]
fn alt_char_is_esc_then_the_char() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let ev = KeyEvent::new(KeyCode::Char('f'), KeyModifiers::ALT);
    assert_eq!(super::keys::from_event(ev), vec![Key::Esc, Key::Char('f')]);
    let ev = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(super::keys::from_event(ev), vec![Key::Interrupt]);
    let ev = KeyEvent::new(KeyCode::Char('W'), KeyModifiers::SHIFT);
    assert_eq!(super::keys::from_event(ev), vec![Key::Char('W')]);
}

/// Every cell of a frame drawn with `app`, row by row.
pub(super) fn render(app: &App, width: u16, height: u16) -> Vec<Vec<String>> {
    use ratatui::backend::TestBackend;
    let mut t = ratatui::Terminal::new(TestBackend::new(width, height)).unwrap();
    let theme = super::view::Theme { color: false };
    t.draw(|f| super::view::draw(f, app, &crate::timeformat::Zone::utc(), theme))
        .unwrap();
    let buf = t.backend().buffer().clone();
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buf[(x, y)].symbol().to_owned())
                .collect()
        })
        .collect()
}

/// The cell where the ASCII `needle` starts on a rendered row (a wide character
/// takes two cells).
fn column_of(row: &[String], needle: &str) -> Option<usize> {
    let n = needle.len();
    (0..row.len().saturating_sub(n)).find(|&x| {
        row[x..x + n]
            .iter()
            .zip(needle.chars())
            .all(|(cell, c)| cell.len() == 1 && cell.starts_with(c))
    })
}

#[test]
fn stored_text_reaches_the_terminal_visible_and_in_its_columns() {
    let (mut app, _) = App::new("db".into(), "offline".into());
    let mut korean = conversation(7);
    korean.session_key = Some("세션:한국어:긴-이름-입니다-정말로-길어요".into());
    korean.message_count = 41;
    let mut ascii = conversation(12);
    ascii.message_count = 42;
    app.on_msg(Msg::Conversations(Ok(vec![korean, ascii])));
    let rows = render(&app, 120, 12);
    let at41 = rows.iter().find_map(|r| column_of(r, "    41"));
    let at42 = rows.iter().find_map(|r| column_of(r, "    42"));
    assert!(
        at41.is_some() && at41 == at42,
        "columns {at41:?} and {at42:?}"
    );

    app.on_key(Key::Enter);
    let ctx = vec![context_summary("sum_top", 1)];
    let mut top = with_links("sum_top", 1, &[], &[]);
    top.summary.content =
        "\x1b[31mFAIL\x1b[0m src/a.rs\r\n\tcol\x07umn\u{9b}2J 10%\r20%\n👩‍👩‍👧 한국어".into();
    app.on_msg(Msg::Dag(7, Ok((ctx, vec![top]))));
    let rows = render(&app, 120, 16);
    for row in &rows {
        for cell in row {
            assert!(
                !cell.chars().any(char::is_control),
                "{cell:?} in {}",
                row.concat()
            );
        }
    }
    let text: Vec<String> = rows.iter().map(|r| r.concat()).collect();
    assert!(
        text.iter().any(|l| l.contains("␛[31mFAIL␛[0m src/a.rs")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|l| l.contains("        col␇umn\u{fffd}2J 10%␍20%")),
        "{text:#?}"
    );
}

#[test]
fn a_source_message_is_shown_up_to_a_cap_and_the_rest_is_named() {
    use super::{source_preview, SOURCE_CHARS, SOURCE_LINES};
    assert!(matches!(
        source_preview("short\ntext"),
        std::borrow::Cow::Borrowed("short\ntext")
    ));
    let many: String = (0..SOURCE_LINES + 100)
        .map(|i| format!("line {i}\n"))
        .collect();
    let p = source_preview(many.trim());
    let lines: Vec<&str> = p.lines().collect();
    assert_eq!(lines.len(), SOURCE_LINES + 1);
    assert_eq!(
        lines[SOURCE_LINES - 1],
        format!("line {}", SOURCE_LINES - 1)
    );
    let rest: String = (SOURCE_LINES..SOURCE_LINES + 100)
        .map(|i| format!("line {i}\n"))
        .collect();
    let rest = rest.trim();
    assert_eq!(
        lines[SOURCE_LINES],
        format!(
            "… {} more characters (100 lines) not shown",
            rest.chars().count()
        )
    );
    // One long line of Hangul: cut between characters.
    let long = "한".repeat(SOURCE_CHARS + 5);
    let p = source_preview(&long);
    assert!(p.starts_with(&"한".repeat(SOURCE_CHARS)));
    assert!(
        p.ends_with("\n… 5 more characters (1 line) not shown"),
        "{}",
        &p[p.len() - 60..]
    );
}

#[test]
fn status_lines_count_in_the_right_number() {
    let (mut app, _) = App::new("db".into(), "offline".into());
    app.on_msg(Msg::Conversations(Ok(vec![conversation(7)])));
    assert_eq!(app.status, "1 conversation");
    app.on_key(Key::Enter);
    let ctx = vec![context_summary("sum_l1", 0)];
    app.on_msg(Msg::Dag(
        7,
        Ok((ctx, vec![with_links("sum_l1", 0, &[], &[1])])),
    ));
    assert_eq!(app.status, "Conversation 7: 1 item in context, 1 summary");
    let text: String = render(&app, 120, 20)
        .iter()
        .map(|r| r.concat() + "\n")
        .collect();
    assert!(text.contains("Context list · 1 item ·"), "{text}");
    assert!(text.contains("sources: 1 message ·"), "{text}");
}

#[test]
fn source_messages_are_drawn_line_by_line() {
    let (mut app, _) = App::new("db".into(), "offline".into());
    app.on_msg(Msg::Conversations(Ok(vec![conversation(7)])));
    app.on_key(Key::Enter);
    let ctx = vec![context_summary("sum_l1", 0)];
    app.on_msg(Msg::Dag(
        7,
        Ok((ctx, vec![with_links("sum_l1", 0, &[], &[1, 2])])),
    ));
    assert!(matches!(
        app.on_key(Key::Char('m')).as_slice(),
        [Action::LoadSources { .. }]
    ));
    let big: String = (0..100_000).map(|i| format!("output line {i}\n")).collect();
    let sources = vec![
        format!("[msg 1] user: first line\nsecond line"),
        format!("[msg 2] toolResult: {}", super::source_preview(big.trim())),
    ];
    app.on_msg(Msg::Sources("sum_l1".into(), Ok(sources)));
    let text: Vec<String> = render(&app, 120, 60).iter().map(|r| r.concat()).collect();
    assert!(
        text.iter().any(|l| l.contains("[msg 1] user: first line")),
        "{text:#?}"
    );
    assert!(text.iter().any(|l| l.contains("│second line")), "{text:#?}");
    assert!(!text.iter().any(|l| l.contains('␊')), "{text:#?}");
}

#[test]
fn every_screen_draws_at_any_terminal_size_and_sends_no_control_character() {
    // Draws without a panic, and no cell holds a control character.
    const SIZES: [(u16, u16); 8] = [
        (1, 1),
        (2, 2),
        (5, 3),
        (9, 4),
        (12, 6),
        (20, 8),
        (33, 11),
        (80, 24),
    ];
    let check = |app: &App| {
        for (w, h) in SIZES {
            for row in render(app, w, h) {
                assert!(!row.concat().chars().any(char::is_control), "{row:?}");
            }
        }
    };
    let (mut app, _) = App::new("db".into(), "offline".into());
    let mut wide = conversation(7);
    wide.session_key = Some("세션:한국어:👩‍👩‍👧‍👦".into());
    app.on_msg(Msg::Conversations(Ok(vec![wide, conversation(12)])));
    check(&app);
    app.on_key(Key::Enter);
    let mut top = with_links("sum_top", 1, &["sum_l1"], &[]);
    top.summary.content = "한국어 \x1b[31m\ttext\r\n".repeat(30);
    let sums = vec![top, with_links("sum_l1", 0, &[], &[1, 2])];
    app.on_msg(Msg::Dag(7, Ok((vec![context_summary("sum_top", 1)], sums))));
    check(&app);
    app.on_key(Key::Right);
    app.on_key(Key::Down);
    app.on_key(Key::Char('m'));
    app.on_msg(Msg::Sources(
        "sum_l1".into(),
        Ok(vec!["[msg 1] user: 中文\nline".into()]),
    ));
    check(&app);
    app.on_key(Key::Char('?'));
    assert!(app.help);
    check(&app);
    app.on_key(Key::Char('?'));
    app.on_key(Key::Char('w'));
    app.on_msg(Msg::Preview(Ok(preview("sum_l1"))));
    check(&app);
    let Some(Flow::Rewrite(f)) = app.flow.as_mut() else {
        panic!("no rewrite flow")
    };
    let (req, ..) = rewrite_req(&f.on_key(Key::Enter).1);
    check(&app);
    let Some(Flow::Rewrite(f)) = app.flow.as_mut() else {
        panic!("no rewrite flow")
    };
    f.on_rewritten(req, Ok(report(vec![entry("sum_l1", 0, 10, 8)], None)));
    check(&app);
    app.flow = Some(Flow::Rewrite(Box::new(RewriteFlow::subtree(
        7,
        vec![planned("sum_l1", 0, 100), planned("sum_top", 1, 300)],
    ))));
    check(&app);
    app.flow = None;
    app.on_key(Key::Char('c'));
    assert_eq!(app.screen, Screen::Context);
    let message = |role: &str, text: &str| {
        crate::assembler::SharedMessage::new(serde_json::json!({"role": role, "content": text}))
    };
    app.on_msg(Msg::Context(Ok(crate::assembler::AssembleResult {
        messages: vec![
            message("user", "한국어\x1b[2J"),
            message("assistant", "\tok\r"),
        ],
        estimated_tokens: 12,
        stats: Default::default(),
        system_prompt_addition: None,
        summary_positions: Vec::new(),
    })));
    check(&app);
    app.on_key(Key::Esc);
    app.on_key(Key::Char('f'));
    assert_eq!(app.screen, Screen::Files);
    check(&app);
}

#[test]
fn a_cycle_in_a_damaged_graph_shows_once_and_does_not_unfold() {
    let (mut app, _) = App::new("db".into(), "offline".into());
    app.on_msg(Msg::Conversations(Ok(vec![conversation(7)])));
    app.on_key(Key::Enter);
    // sum_a names sum_top, its own parent, as a parent: a cycle.
    let sums = vec![
        with_links("sum_top", 1, &["sum_a"], &[]),
        with_links("sum_a", 0, &["sum_top"], &[1]),
    ];
    app.on_msg(Msg::Dag(7, Ok((vec![context_summary("sum_top", 1)], sums))));
    app.on_key(Key::Right);
    app.on_key(Key::Down);
    app.on_key(Key::Right);
    let cycle = |id: &str| Node::Summary {
        id: id.into(),
        top: false,
        cycle: true,
    };
    let nodes: Vec<Node> = app.rows().into_iter().map(|r| r.node).collect();
    assert_eq!(nodes.len(), 4, "{nodes:?}");
    assert_eq!(nodes[2], cycle("sum_top"));
    app.on_key(Key::Down);
    app.on_key(Key::Right);
    assert_eq!(app.rows().len(), 4, "a cycle line does not unfold");
    let text: String = render(&app, 100, 10)
        .iter()
        .map(|r| r.concat() + "\n")
        .collect();
    assert!(
        text.contains("↺ sum_top (a cycle: it is above this line)"),
        "{text}"
    );
    // Left on it goes up to the line it hangs from, folding nothing.
    app.on_key(Key::Left);
    assert_eq!((app.dag_sel, app.rows().len()), (1, 4));
    // Folding sum_top from below keeps the selection on a line.
    app.dag_sel = 3;
    app.on_key(Key::Up);
    app.on_key(Key::Up);
    app.on_key(Key::Up);
    app.on_key(Key::Left);
    assert_eq!((app.dag_sel, app.rows().len()), (0, 1));
}

#[test]
fn reopening_a_conversation_keeps_its_tree_until_the_reload() {
    let (mut app, _) = App::new("db".into(), "offline".into());
    app.on_msg(Msg::Conversations(Ok(vec![
        conversation(7),
        conversation(12),
    ])));
    app.on_key(Key::Enter);
    let sums = vec![
        with_links("sum_top", 1, &["sum_a"], &[]),
        with_links("sum_a", 0, &[], &[1]),
    ];
    let dag = || (vec![context_summary("sum_top", 1)], sums.clone());
    app.on_msg(Msg::Dag(7, Ok(dag())));
    app.on_key(Key::Right);
    app.on_key(Key::Down);
    assert_eq!((app.dag_sel, app.rows().len()), (1, 2));
    app.on_key(Key::Esc);
    assert!(matches!(
        app.on_key(Key::Enter).as_slice(),
        [Action::LoadDag(7)]
    ));
    assert_eq!(
        (app.dag_sel, app.rows().len()),
        (1, 2),
        "kept while it reloads"
    );
    app.on_msg(Msg::Dag(7, Ok(dag())));
    assert_eq!((app.dag_sel, app.rows().len()), (1, 2));
    app.on_key(Key::Esc);
    app.on_key(Key::Down);
    assert!(matches!(
        app.on_key(Key::Enter).as_slice(),
        [Action::LoadDag(12)]
    ));
    assert_eq!(
        (app.dag_sel, app.rows().len()),
        (0, 0),
        "another conversation starts afresh"
    );
}

#[test]
fn archived_conversations_are_listed_with_their_cause() {
    let (mut app, _) = App::new("db".into(), "offline".into());
    let mut old = conversation(3);
    old.archived = true;
    old.archive_cause = Some("manual-reset".into());
    let current = conversation(4);
    app.on_msg(Msg::Conversations(Ok(vec![current, old])));
    let rows: Vec<String> = render(&app, 120, 12)
        .into_iter()
        .map(|r| r.concat())
        .collect();
    let line = |id: &str| {
        rows.iter()
            .find(|r| r.trim_start_matches('│').trim_start().starts_with(id))
            .cloned()
            .unwrap_or_default()
    };
    assert!(
        line("3").contains("[manual-reset] agent:main:3"),
        "{rows:#?}"
    );
    assert!(
        line("4").contains("agent:main:4") && !line("4").contains('['),
        "{rows:#?}"
    );
}
