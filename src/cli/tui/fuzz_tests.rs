//! The browser under any sequence of keys and answers: the runner's answers come
//! late, out of order, as errors or never, for a conversation that is no longer
//! open, with hostile text, from a summary graph that may hold a cycle (a damaged
//! database is what an operator opens the browser for). Nothing panics or hangs,
//! the selections stay on a row, and no frame sends a control character.

use proptest::prelude::*;

use super::app::{Action, App, Msg};
use super::flow::Cmd;
use super::keys::Key;
use super::tests::{
    context_summary, conversation, entry, planned, preview, render, report, with_links,
};
use crate::assembler::{AssembleResult, SharedMessage};
use crate::dagops::dissolve::{DissolvePlan, RestoredItem};
use crate::dagops::SummaryView;
use crate::error::{ErrorCode, LcmError};
use crate::store::largefiles::LargeFileRecord;
use crate::store::messages::ContextItem;
use crate::text::strategies;

/// One event reaching the browser.
#[derive(Debug, Clone)]
enum Step {
    /// The operator presses a key.
    Key(Key),
    /// The runner answers the pending action at this index (modulo how many are
    /// pending): with a result, or with an error.
    Answer { at: usize, ok: bool },
    /// The terminal draws a frame of this size.
    Draw(u16, u16),
}

fn key() -> impl Strategy<Value = Key> {
    // The keys that go somewhere (open, unfold, move, start and answer a flow) come
    // most often, so that sequences reach deep screens; quitting comes rarely.
    let onward = [Key::Enter, Key::Right, Key::Down, Key::Tab];
    let onward_chars: Vec<char> = "jlwWdyaAcfm".chars().collect();
    let other = [
        Key::Esc,
        Key::Backspace,
        Key::Up,
        Key::Left,
        Key::PageUp,
        Key::PageDown,
        Key::Home,
        Key::End,
    ];
    let other_chars: Vec<char> = "kJKhgGrDYnN?+-/ 17é한".chars().collect();
    prop_oneof![
        8 => proptest::sample::select(onward.to_vec()),
        6 => proptest::sample::select(onward_chars).prop_map(Key::Char),
        4 => proptest::sample::select(other.to_vec()),
        3 => proptest::sample::select(other_chars).prop_map(Key::Char),
        1 => prop_oneof![Just(Key::Interrupt), Just(Key::Char('q'))],
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => key().prop_map(Step::Key),
        6 => (any::<usize>(), proptest::bool::weighted(0.9))
            .prop_map(|(at, ok)| Step::Answer { at, ok }),
        1 => (1u16..100, 1u16..40).prop_map(|(w, h)| Step::Draw(w, h)),
    ]
}

/// What the database holds: two conversations; conversation 7's context list is a
/// condensed summary over two leaves and a raw message. `cyclic`: the leaves also
/// name the condensed summary as a parent.
#[derive(Debug, Clone)]
struct World {
    text: String,
    cyclic: bool,
}

impl World {
    fn err(&self) -> LcmError {
        LcmError::new(ErrorCode::Internal, format!("failed: {}", self.text))
    }

    fn conversations(&self) -> Vec<crate::store::browse::ConversationOverview> {
        let mut a = conversation(7);
        a.session_key = Some(self.text.clone());
        a.title = Some(self.text.clone());
        vec![a, conversation(12)]
    }

    fn dag(&self) -> (Vec<ContextItem>, Vec<crate::engine::SummaryWithLinks>) {
        let back: &[&str] = if self.cyclic { &["sum_top"] } else { &[] };
        let mut top = with_links("sum_top", 1, &["sum_a", "sum_b"], &[]);
        top.summary.content = self.text.clone();
        let mut a = with_links("sum_a", 0, back, &[1, 2]);
        a.summary.content = self.text.repeat(3);
        let b = with_links("sum_b", 0, back, &[3]);
        let message = ContextItem {
            ordinal: 1,
            item_type: crate::store::messages::ContextItemType::Message,
            message_id: Some(4),
            summary_id: None,
            token_count: 7,
            depth: None,
            role: Some(self.text.clone()),
        };
        (
            vec![context_summary("sum_top", 1), message],
            vec![top, a, b],
        )
    }

    fn assembled(&self) -> AssembleResult {
        let m = |role: &str| {
            SharedMessage::new(serde_json::json!({"role": role, "content": self.text}))
        };
        AssembleResult {
            messages: vec![m("user"), m("assistant"), m(&self.text)],
            estimated_tokens: 30,
            stats: Default::default(),
            system_prompt_addition: None,
            summary_positions: Vec::new(),
        }
    }

    fn files(&self, conv: i64) -> Vec<LargeFileRecord> {
        let file = |id: &str| LargeFileRecord {
            file_id: id.into(),
            conversation_id: conv,
            file_name: Some(self.text.clone()),
            mime_type: Some(self.text.clone()),
            byte_size: Some(1234),
            line_count: Some(56),
            storage_uri: "/nowhere".into(),
            exploration_summary: Some(self.text.clone()),
            created_at: "2026-02-17 21:15:00".into(),
            source: None,
        };
        vec![file("file_0123456789abcdef"), file("file_fedcba9876543210")]
    }

    fn dissolved(&self, conv: i64, summary_id: &str, apply: bool) -> DissolvePlan {
        let item = |m: i64| RestoredItem {
            item_type: crate::store::messages::ContextItemType::Message,
            summary_id: None,
            message_id: Some(m),
            kind: None,
            depth: None,
            role: Some("user".into()),
            seq: Some(m),
            token_count: 5,
            preview: self.text.clone(),
        };
        DissolvePlan {
            conversation_id: conv,
            target: SummaryView {
                summary_id: summary_id.into(),
                kind: crate::store::summaries::SummaryKind::Leaf,
                depth: 0,
                token_count: 10,
                ordinal: Some(0),
                preview: self.text.clone(),
            },
            restored: vec![item(1), item(2)],
            context_items_before: 2,
            context_items_after: 3,
            context_tokens_before: 17,
            context_tokens_after: 17,
            token_delta: 0,
            items_shifted: 1,
            shift: 1,
            keep: true,
            applied: apply,
        }
    }

    /// The runner's answer to `action`.
    fn answer(&self, action: Action, ok: bool) -> Msg {
        let res = |v| if ok { Ok(v) } else { Err(self.err()) };
        match action {
            Action::LoadConversations | Action::Flow(Cmd::ReloadDag) => {
                Msg::Conversations(res(self.conversations()))
            }
            Action::LoadDag(c) => Msg::Dag(c, if ok { Ok(self.dag()) } else { Err(self.err()) }),
            Action::LoadSources {
                summary_id,
                message_ids,
            } => {
                let lines = message_ids
                    .iter()
                    .map(|m| format!("[msg {m}] user: {}", self.text))
                    .collect();
                Msg::Sources(summary_id, if ok { Ok(lines) } else { Err(self.err()) })
            }
            Action::Assemble { .. } => Msg::Context(if ok {
                Ok(self.assembled())
            } else {
                Err(self.err())
            }),
            Action::LoadFiles(c) => Msg::Files(if ok {
                Ok(self.files(c))
            } else {
                Err(self.err())
            }),
            Action::Preview { summary_id, .. } => {
                let mut p = preview(&summary_id);
                p.old_content = self.text.clone();
                Msg::Preview(if ok { Ok(p) } else { Err(self.err()) })
            }
            Action::PlanSubtree { .. } => {
                let plan = vec![
                    planned("sum_a", 0, 10),
                    planned("sum_b", 0, 10),
                    planned("sum_top", 1, 10),
                ];
                Msg::Plan(if ok { Ok(plan) } else { Err(self.err()) })
            }
            Action::Flow(Cmd::Rewrite {
                req, summary_id, ..
            }) => {
                let mut e = entry(&summary_id, 0, 10, 8);
                e.new_content = self.text.clone();
                e.diff = format!("-old\n+{}\n", self.text);
                let r = report(vec![e], None);
                Msg::Rewritten(req, if ok { Ok(r) } else { Err(self.err()) })
            }
            Action::Flow(Cmd::Apply { req, .. }) => {
                Msg::Applied(req, if ok { Ok(8) } else { Err(self.err()) })
            }
            Action::Flow(Cmd::Dissolve {
                conversation_id,
                summary_id,
                apply,
            }) => {
                let plan = self.dissolved(conversation_id, &summary_id, apply);
                Msg::Dissolved(if ok { Ok(plan) } else { Err(self.err()) })
            }
        }
    }
}

/// The selections point at a row that exists (or at 0 when there is none).
fn check_selections(app: &App) {
    let on_a_row = |sel: usize, n: usize| sel < n.max(1);
    assert!(
        on_a_row(app.conv_sel, app.filtered().len()),
        "conversation selection"
    );
    assert!(on_a_row(app.dag_sel, app.rows().len()), "tree selection");
    assert!(on_a_row(app.file_sel, app.files.len()), "file selection");
}

fn check_frame(app: &App, w: u16, h: u16) {
    for row in render(app, w, h) {
        let row = row.concat();
        assert!(!row.chars().any(char::is_control), "{row:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn any_keys_and_answers_in_any_order_leave_a_browser_that_draws(
        opened in proptest::bool::weighted(0.8),
        steps in proptest::collection::vec(step(), 0..200),
        text in strategies::text(12),
        cyclic in any::<bool>(),
    ) {
        let world = World { text, cyclic };
        let (mut app, first) = App::new("db".into(), "offline".into());
        let mut pending: Vec<Action> = first;
        // Most sequences start in a conversation's graph: on the conversations
        // screen most characters only type into the filter.
        let opening = [
            Step::Answer { at: 0, ok: true },
            Step::Key(Key::Enter),
            Step::Answer { at: 0, ok: true },
        ];
        let opening = if opened { &opening[..] } else { &[] };
        for s in opening.iter().cloned().chain(steps) {
            match s {
                Step::Key(k) => pending.extend(app.on_key(k)),
                Step::Answer { at, ok } if !pending.is_empty() => {
                    let action = pending.remove(at % pending.len());
                    pending.extend(app.on_msg(world.answer(action, ok)));
                }
                Step::Answer { .. } => {}
                Step::Draw(w, h) => check_frame(&app, w, h),
            }
            check_selections(&app);
            prop_assert!(app.rows().len() <= 64, "{} tree lines", app.rows().len());
        }
        check_frame(&app, 80, 24);
    }
}
