//! The browser's state: screens, selection, the open flow, and what each key does.
//! Pure: keys and results come in, [`Action`]s go out for the runner to perform.

use std::collections::{HashMap, HashSet};

use super::flow::{self, DissolveFlow, Outcome, RewriteFlow};
use super::keys::Key;
use crate::assembler::AssembleResult;
use crate::cli::output::plural;
use crate::dagops::dissolve::DissolvePlan;
use crate::engine::SummaryWithLinks;
use crate::error::Result;
use crate::rewrite::{PlannedSummary, RewritePreview, RewriteReport};
use crate::store::browse::ConversationOverview;
use crate::store::largefiles::LargeFileRecord;
use crate::store::messages::ContextItem;

/// Default budget of the Context screen.
pub const DEFAULT_BUDGET: i64 = 32_000;

/// Most lines the summary tree unfolds to (a graph that is not a tree, as only a
/// damaged database holds, could otherwise unfold to more lines than memory).
pub const MAX_TREE_ROWS: usize = 100_000;

/// Work for the runner; each posts one [`Msg`].
#[derive(Debug, Clone)]
pub enum Action {
    /// A flow's command.
    Flow(flow::Cmd),
    /// Every conversation with its counts.
    LoadConversations,
    /// A conversation's context list and summaries.
    LoadDag(i64),
    /// A leaf's source messages, as display lines.
    LoadSources {
        /// The summary.
        summary_id: String,
        /// Its messages in link order.
        message_ids: Vec<i64>,
    },
    /// `assemble` at a budget.
    Assemble {
        /// The session id.
        session_id: String,
        /// The session key.
        session_key: Option<String>,
        /// The budget.
        budget: i64,
    },
    /// A conversation's large files.
    LoadFiles(i64),
    /// `w`: the preview of one summary's rewrite.
    Preview {
        /// The conversation.
        conversation_id: i64,
        /// The summary.
        summary_id: String,
    },
    /// `W`: the plan of a subtree rewrite.
    PlanSubtree {
        /// The conversation.
        conversation_id: i64,
        /// The subtree's root.
        summary_id: String,
    },
}

/// A finished piece of work.
#[derive(Debug)]
pub enum Msg {
    /// [`Action::LoadConversations`].
    Conversations(Result<Vec<ConversationOverview>>),
    /// [`Action::LoadDag`].
    Dag(i64, Result<(Vec<ContextItem>, Vec<SummaryWithLinks>)>),
    /// [`Action::LoadSources`].
    Sources(String, Result<Vec<String>>),
    /// [`Action::Assemble`].
    Context(Result<AssembleResult>),
    /// [`Action::LoadFiles`].
    Files(Result<Vec<LargeFileRecord>>),
    /// [`Action::Preview`].
    Preview(Result<RewritePreview>),
    /// [`Action::PlanSubtree`].
    Plan(Result<Vec<PlannedSummary>>),
    /// [`flow::Cmd::Rewrite`].
    Rewritten(u64, Result<RewriteReport>),
    /// [`flow::Cmd::Apply`].
    Applied(u64, Result<i64>),
    /// [`flow::Cmd::Dissolve`].
    Dissolved(Result<DissolvePlan>),
}

/// The screens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// Every conversation.
    Conversations,
    /// One conversation's context list and summary graph.
    Dag,
    /// What `assemble` gives at a budget.
    Context,
    /// The conversation's large files.
    Files,
}

/// An open action overlay.
#[derive(Debug, Clone)]
pub enum Flow {
    /// `w` / `W`.
    Rewrite(Box<RewriteFlow>),
    /// `d`.
    Dissolve(Box<DissolveFlow>),
}

/// One line of the summary tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A summary (`top`: it is on the context list).
    Summary {
        /// Its id.
        id: String,
        /// On the context list itself.
        top: bool,
        /// Already on the way down to this line (a cycle in a damaged graph): not
        /// unfolded here.
        cycle: bool,
    },
    /// A message on the context list.
    Message {
        /// Its id.
        id: i64,
        /// Its role.
        role: String,
        /// Its tokens.
        tokens: i64,
    },
    /// A leaf's source messages, folded.
    Messages {
        /// The leaf.
        summary_id: String,
        /// How many.
        count: usize,
    },
}

/// A tree line with its indentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Indentation level.
    pub level: usize,
    /// What it shows.
    pub node: Node,
}

/// The loaded graph of one conversation.
#[derive(Debug, Clone)]
pub struct Dag {
    /// The conversation.
    pub conversation: ConversationOverview,
    /// Its context list.
    pub context: Vec<ContextItem>,
    /// Its summaries by id.
    pub summaries: HashMap<String, SummaryWithLinks>,
}

/// The browser's state.
pub struct App {
    /// The database shown (title bar).
    pub db_label: String,
    /// The summarizer (`openai (gpt-…)`, `offline`, …), for the preview.
    pub summarizer: String,
    /// Current screen.
    pub screen: Screen,
    /// Conversations, as loaded.
    pub conversations: Vec<ConversationOverview>,
    /// Conversations filter text.
    pub filter: String,
    /// Selected row among the filtered conversations.
    pub conv_sel: usize,
    /// The open conversation's graph.
    pub dag: Option<Dag>,
    /// Summaries unfolded in the tree.
    pub expanded: HashSet<String>,
    /// Selected tree line.
    pub dag_sel: usize,
    /// Scroll of the detail pane.
    pub detail_scroll: u16,
    /// Showing the selected leaf's source messages in the detail pane.
    pub show_sources: bool,
    /// Loaded source messages (summary id, lines).
    pub sources: Option<(String, Vec<String>)>,
    /// The summary whose source messages were last asked for.
    sources_requested: Option<String>,
    /// The Context screen's budget.
    pub budget: i64,
    /// The Context screen's assembly.
    pub context: Option<AssembleResult>,
    /// Context screen scroll.
    pub context_scroll: u16,
    /// Large files of the open conversation.
    pub files: Vec<LargeFileRecord>,
    /// Selected file.
    pub file_sel: usize,
    /// The open action, if any.
    pub flow: Option<Flow>,
    /// `?` pressed: the full key list.
    pub help: bool,
    /// The status line.
    pub status: String,
    /// Something is loading.
    pub loading: bool,
    /// Set when the browser should exit.
    pub quit: bool,
}

impl App {
    /// A browser on the conversations screen (loading them).
    pub fn new(db_label: String, summarizer: String) -> (App, Vec<Action>) {
        let app = App {
            db_label,
            summarizer,
            screen: Screen::Conversations,
            conversations: Vec::new(),
            filter: String::new(),
            conv_sel: 0,
            dag: None,
            expanded: HashSet::new(),
            dag_sel: 0,
            detail_scroll: 0,
            show_sources: false,
            sources: None,
            sources_requested: None,
            budget: DEFAULT_BUDGET,
            context: None,
            context_scroll: 0,
            files: Vec::new(),
            file_sel: 0,
            flow: None,
            help: false,
            status: "Loading conversations…".into(),
            loading: true,
            quit: false,
        };
        (app, vec![Action::LoadConversations])
    }

    /// The conversations matching the filter (id, session key or id, title).
    pub fn filtered(&self) -> Vec<&ConversationOverview> {
        let f = self.filter.to_lowercase();
        self.conversations
            .iter()
            .filter(|c| {
                f.is_empty()
                    || c.conversation_id.to_string().contains(&f)
                    || c.session_id.to_lowercase().contains(&f)
                    || c.session_key
                        .as_deref()
                        .is_some_and(|k| k.to_lowercase().contains(&f))
                    || c.title
                        .as_deref()
                        .is_some_and(|t| t.to_lowercase().contains(&f))
            })
            .collect()
    }

    /// The tree lines of the open conversation.
    pub fn rows(&self) -> Vec<Row> {
        let Some(dag) = &self.dag else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in &dag.context {
            match (&item.summary_id, item.message_id) {
                (Some(id), _) => self.push_summary(dag, id, true, &mut Vec::new(), &mut out),
                (None, Some(m)) => out.push(Row {
                    level: 0,
                    node: Node::Message {
                        id: m,
                        role: item.role.clone().unwrap_or_default(),
                        tokens: item.token_count,
                    },
                }),
                _ => {}
            }
        }
        out
    }

    /// A summary's line, then, when it is unfolded, the lines beneath it. A summary
    /// that is already on the way down to it (a cycle: only a damaged database has
    /// one) is shown but not unfolded again, and the tree stops at
    /// [`MAX_TREE_ROWS`] lines.
    fn push_summary<'a>(
        &self,
        dag: &'a Dag,
        id: &'a str,
        top: bool,
        path: &mut Vec<&'a str>,
        out: &mut Vec<Row>,
    ) {
        let cycle = path.contains(&id);
        out.push(Row {
            level: path.len(),
            node: Node::Summary {
                id: id.to_owned(),
                top,
                cycle,
            },
        });
        if cycle || !self.expanded.contains(id) || out.len() >= MAX_TREE_ROWS {
            return;
        }
        let Some(s) = dag.summaries.get(id) else {
            return;
        };
        let level = path.len();
        path.push(id);
        for child in &s.parent_ids {
            self.push_summary(dag, child, false, path, out);
        }
        path.pop();
        if !s.message_ids.is_empty() {
            out.push(Row {
                level: level + 1,
                node: Node::Messages {
                    summary_id: id.to_owned(),
                    count: s.message_ids.len(),
                },
            });
        }
    }

    /// The summary on the selected tree line (a folded message line counts as its leaf).
    pub fn selected_summary(&self) -> Option<(String, bool)> {
        match self.rows().get(self.dag_sel).map(|r| r.node.clone()) {
            Some(Node::Summary { id, top, .. }) => Some((id, top)),
            Some(Node::Messages { summary_id, .. }) => Some((summary_id, false)),
            _ => None,
        }
    }

    /// Handles a key.
    pub fn on_key(&mut self, key: Key) -> Vec<Action> {
        if key == Key::Interrupt {
            self.cancel_flow();
            self.quit = true;
            return Vec::new();
        }
        if let Some(f) = self.flow.as_mut() {
            let (outcome, cmds) = match f {
                Flow::Rewrite(r) => r.on_key(key),
                Flow::Dissolve(d) => d.on_key(key),
            };
            return self.after_flow(outcome, cmds);
        }
        if self.help {
            if matches!(key, Key::Char('?') | Key::Esc | Key::Char('q')) {
                self.help = false;
            }
            return Vec::new();
        }
        if key == Key::Char('?') {
            self.help = true;
            return Vec::new();
        }
        match self.screen {
            Screen::Conversations => self.conversations_key(key),
            Screen::Dag => self.dag_key(key),
            Screen::Context => self.context_key(key),
            Screen::Files => self.files_key(key),
        }
    }

    fn cancel_flow(&mut self) {
        if let Some(Flow::Rewrite(r)) = &self.flow {
            if let flow::Phase::Inflight { cancel, .. } = &r.phase {
                cancel.cancel();
            }
        }
    }

    fn after_flow(&mut self, outcome: Outcome, cmds: Vec<flow::Cmd>) -> Vec<Action> {
        if let Outcome::Closed(status) = outcome {
            self.flow = None;
            self.status = status;
        }
        let mut out = Vec::new();
        for c in cmds {
            match c {
                flow::Cmd::ReloadDag => {
                    if let Some(d) = &self.dag {
                        out.push(Action::LoadDag(d.conversation.conversation_id));
                    }
                    out.push(Action::LoadConversations);
                    self.sources = None;
                    self.sources_requested = None;
                }
                c => out.push(Action::Flow(c)),
            }
        }
        out
    }

    fn conversations_key(&mut self, key: Key) -> Vec<Action> {
        let n = self.filtered().len();
        match key {
            Key::Up => self.conv_sel = self.conv_sel.saturating_sub(1),
            Key::Down => self.conv_sel = (self.conv_sel + 1).min(n.saturating_sub(1)),
            Key::PageUp => self.conv_sel = self.conv_sel.saturating_sub(10),
            Key::PageDown => self.conv_sel = (self.conv_sel + 10).min(n.saturating_sub(1)),
            Key::Home => self.conv_sel = 0,
            Key::End => self.conv_sel = n.saturating_sub(1),
            Key::Enter => {
                let Some(c) = self.filtered().get(self.conv_sel).map(|c| (*c).clone()) else {
                    return Vec::new();
                };
                let id = c.conversation_id;
                self.open_conversation(c);
                return vec![Action::LoadDag(id)];
            }
            Key::Backspace => {
                self.filter.pop();
                self.conv_sel = 0;
            }
            Key::Esc if !self.filter.is_empty() => {
                self.filter.clear();
                self.conv_sel = 0;
            }
            Key::Esc => self.quit = true,
            Key::Char(c) if !c.is_control() => {
                self.filter.push(c);
                self.conv_sel = 0;
            }
            _ => {}
        }
        Vec::new()
    }

    /// Opens a conversation's graph (it loads). Reopening the one last open keeps
    /// its tree, unfolding and selection on screen until the reload replaces them.
    fn open_conversation(&mut self, c: ConversationOverview) {
        self.status = format!("Loading conversation {}…", c.conversation_id);
        self.loading = true;
        self.screen = Screen::Dag;
        if let Some(d) = self.dag.as_mut() {
            if d.conversation.conversation_id == c.conversation_id {
                d.conversation = c;
                return;
            }
        }
        self.expanded.clear();
        self.dag_sel = 0;
        self.detail_scroll = 0;
        self.sources = None;
        self.show_sources = false;
        self.dag = Some(Dag {
            conversation: c,
            context: Vec::new(),
            summaries: HashMap::new(),
        });
    }

    fn conversation_id(&self) -> Option<i64> {
        self.dag.as_ref().map(|d| d.conversation.conversation_id)
    }

    fn dag_key(&mut self, key: Key) -> Vec<Action> {
        let rows = self.rows();
        let n = rows.len();
        let before = self.dag_sel;
        match key {
            Key::Up | Key::Char('k') => self.dag_sel = self.dag_sel.saturating_sub(1),
            Key::Down | Key::Char('j') => {
                self.dag_sel = (self.dag_sel + 1).min(n.saturating_sub(1))
            }
            Key::PageUp => self.dag_sel = self.dag_sel.saturating_sub(10),
            Key::PageDown => self.dag_sel = (self.dag_sel + 10).min(n.saturating_sub(1)),
            Key::Home | Key::Char('g') => self.dag_sel = 0,
            Key::End | Key::Char('G') => self.dag_sel = n.saturating_sub(1),
            Key::Right | Key::Char('l') | Key::Enter => {
                if let Some(Node::Summary {
                    id, cycle: false, ..
                }) = rows.get(self.dag_sel).map(|r| &r.node)
                {
                    self.expanded.insert(id.clone());
                }
            }
            Key::Left | Key::Char('h') => self.collapse(&rows),
            Key::Char('J') => self.detail_scroll = self.detail_scroll.saturating_add(1),
            Key::Char('K') => self.detail_scroll = self.detail_scroll.saturating_sub(1),
            Key::Char('m') => return self.toggle_sources(),
            Key::Char('w') | Key::Char('W') => return self.start_rewrite(key == Key::Char('W')),
            Key::Char('d') => return self.start_dissolve(),
            Key::Char('c') => return self.open_context(),
            Key::Char('f') => {
                let Some(conv) = self.conversation_id() else {
                    return Vec::new();
                };
                self.screen = Screen::Files;
                self.file_sel = 0;
                self.loading = true;
                return vec![Action::LoadFiles(conv)];
            }
            Key::Char('r') => {
                if let Some(conv) = self.conversation_id() {
                    self.loading = true;
                    return vec![Action::LoadDag(conv), Action::LoadConversations];
                }
            }
            Key::Esc | Key::Backspace => self.screen = Screen::Conversations,
            Key::Char('q') => self.quit = true,
            _ => {}
        }
        if self.dag_sel != before {
            self.detail_scroll = 0;
        }
        Vec::new()
    }

    /// Folds the selected summary, or else goes up to the line it hangs from.
    fn collapse(&mut self, rows: &[Row]) {
        let Some(row) = rows.get(self.dag_sel) else {
            return;
        };
        if let Node::Summary {
            id, cycle: false, ..
        } = &row.node
        {
            if self.expanded.remove(id) {
                // Folded everywhere it shows: the selection stays on its first line.
                let now = self.rows();
                self.dag_sel = now
                    .iter()
                    .position(|r| matches!(&r.node, Node::Summary { id: s, .. } if s == id))
                    .unwrap_or(0)
                    .min(now.len().saturating_sub(1));
                return;
            }
        }
        // Up to the line it hangs from.
        if row.level == 0 {
            return;
        }
        if let Some(p) = rows[..self.dag_sel]
            .iter()
            .rposition(|r| r.level < row.level)
        {
            self.dag_sel = p;
        }
    }

    fn toggle_sources(&mut self) -> Vec<Action> {
        self.show_sources = !self.show_sources;
        self.sources_needed().into_iter().collect()
    }

    /// Source messages for the newly selected leaf when the pane shows them (asked
    /// for once per selection).
    pub fn sources_needed(&mut self) -> Option<Action> {
        if !self.show_sources || self.screen != Screen::Dag || self.flow.is_some() {
            return None;
        }
        let (id, _) = self.selected_summary()?;
        if self.sources.as_ref().is_some_and(|(s, _)| *s == id)
            || self.sources_requested.as_deref() == Some(id.as_str())
        {
            return None;
        }
        let ids = self.dag.as_ref()?.summaries.get(&id)?.message_ids.clone();
        self.sources_requested = Some(id.clone());
        Some(Action::LoadSources {
            summary_id: id,
            message_ids: ids,
        })
    }

    fn start_rewrite(&mut self, subtree: bool) -> Vec<Action> {
        let (Some(conv), Some((id, _))) = (self.conversation_id(), self.selected_summary()) else {
            self.status = "Select a summary first (w rewrites it, W its subtree).".into();
            return Vec::new();
        };
        self.status = if subtree {
            format!("Planning the rewrite of {id} and its sources…")
        } else {
            format!("Preparing the rewrite of {id}…")
        };
        if subtree {
            vec![Action::PlanSubtree {
                conversation_id: conv,
                summary_id: id,
            }]
        } else {
            vec![Action::Preview {
                conversation_id: conv,
                summary_id: id,
            }]
        }
    }

    fn start_dissolve(&mut self) -> Vec<Action> {
        let (Some(conv), Some((id, top))) = (self.conversation_id(), self.selected_summary())
        else {
            self.status = "Select a context summary first.".into();
            return Vec::new();
        };
        if !top {
            self.status = format!(
                "{id} is not on the context list; d dissolves context summaries (the top-level lines)."
            );
            return Vec::new();
        }
        let (f, cmds) = DissolveFlow::start(conv, id);
        self.flow = Some(Flow::Dissolve(Box::new(f)));
        self.after_flow(Outcome::Open, cmds)
    }

    fn open_context(&mut self) -> Vec<Action> {
        let Some(d) = &self.dag else {
            return Vec::new();
        };
        self.screen = Screen::Context;
        self.context_scroll = 0;
        self.loading = true;
        vec![Action::Assemble {
            session_id: d.conversation.session_id.clone(),
            session_key: d.conversation.session_key.clone(),
            budget: self.budget,
        }]
    }

    fn context_key(&mut self, key: Key) -> Vec<Action> {
        match key {
            Key::Char('+') | Key::Char('=') => {
                self.budget = (self.budget * 2).min(10_000_000);
                return self.open_context();
            }
            Key::Char('-') => {
                self.budget = (self.budget / 2).max(256);
                return self.open_context();
            }
            Key::Char('r') => return self.open_context(),
            Key::Esc | Key::Backspace => self.screen = Screen::Dag,
            Key::Char('q') => self.quit = true,
            k => flow::scroll_key(&mut self.context_scroll, k),
        }
        Vec::new()
    }

    fn files_key(&mut self, key: Key) -> Vec<Action> {
        let n = self.files.len();
        match key {
            Key::Up | Key::Char('k') => self.file_sel = self.file_sel.saturating_sub(1),
            Key::Down | Key::Char('j') => {
                self.file_sel = (self.file_sel + 1).min(n.saturating_sub(1))
            }
            Key::Char('J') => self.detail_scroll = self.detail_scroll.saturating_add(1),
            Key::Char('K') => self.detail_scroll = self.detail_scroll.saturating_sub(1),
            Key::Esc | Key::Backspace => self.screen = Screen::Dag,
            Key::Char('q') => self.quit = true,
            _ => {}
        }
        Vec::new()
    }

    /// Handles a finished piece of work.
    pub fn on_msg(&mut self, msg: Msg) -> Vec<Action> {
        match msg {
            Msg::Conversations(r) => self.on_conversations(r),
            Msg::Dag(conv, r) => self.on_dag(conv, r),
            Msg::Sources(id, r) => match r {
                Ok(lines) => self.sources = Some((id, lines)),
                Err(e) => self.status = format!("Cannot read the sources of {id}: {}", e.message),
            },
            Msg::Context(r) => {
                self.loading = false;
                match r {
                    Ok(a) => self.context = Some(a),
                    Err(e) => self.status = format!("Cannot assemble: {}", e.message),
                }
            }
            Msg::Files(r) => {
                self.loading = false;
                match r {
                    Ok(f) => self.files = f,
                    Err(e) => self.status = format!("Cannot list large files: {}", e.message),
                }
            }
            Msg::Preview(r) => match (r, self.conversation_id()) {
                (Ok(p), Some(conv)) => {
                    self.status = format!("Preview of {}", p.summary.summary_id);
                    self.flow = Some(Flow::Rewrite(Box::new(RewriteFlow::single(conv, p))));
                }
                (Err(e), _) => self.status = format!("Cannot prepare the rewrite: {}", e.message),
                _ => {}
            },
            Msg::Plan(r) => match (r, self.conversation_id()) {
                (Ok(p), Some(conv)) => {
                    self.status = format!("Plan of {}", plural(p.len(), "summary", "summaries"));
                    self.flow = Some(Flow::Rewrite(Box::new(RewriteFlow::subtree(conv, p))));
                }
                (Err(e), _) => self.status = format!("Cannot plan the rewrite: {}", e.message),
                _ => {}
            },
            Msg::Rewritten(req, r) => {
                if let Some(Flow::Rewrite(f)) = self.flow.as_mut() {
                    let (o, c) = f.on_rewritten(req, r);
                    return self.after_flow(o, c);
                }
            }
            Msg::Applied(req, r) => {
                if let Some(Flow::Rewrite(f)) = self.flow.as_mut() {
                    let (o, c) = f.on_applied(req, r);
                    return self.after_flow(o, c);
                }
            }
            Msg::Dissolved(r) => {
                if let Some(Flow::Dissolve(f)) = self.flow.as_mut() {
                    let (o, c) = f.on_result(r);
                    return self.after_flow(o, c);
                }
            }
        }
        Vec::new()
    }

    /// The conversation list, reloaded; the open conversation's row is refreshed.
    fn on_conversations(&mut self, r: Result<Vec<ConversationOverview>>) {
        self.loading = false;
        let list = match r {
            Ok(list) => list,
            Err(e) => {
                self.status = format!("Cannot list conversations: {}", e.message);
                return;
            }
        };
        if self.status.starts_with("Loading conversations") {
            self.status = plural(list.len(), "conversation", "conversations");
        }
        if let Some(d) = self.dag.as_mut() {
            let open = d.conversation.conversation_id;
            if let Some(c) = list.iter().find(|c| c.conversation_id == open) {
                d.conversation = c.clone();
            }
        }
        self.conversations = list;
        let n = self.filtered().len();
        self.conv_sel = self.conv_sel.min(n.saturating_sub(1));
    }

    /// A conversation's context items and summaries, if it is still the open one.
    fn on_dag(&mut self, conv: i64, r: Result<(Vec<ContextItem>, Vec<SummaryWithLinks>)>) {
        self.loading = false;
        match (r, self.dag.as_mut()) {
            (Ok((context, list)), Some(d)) if d.conversation.conversation_id == conv => {
                d.context = context;
                d.summaries = list
                    .into_iter()
                    .map(|s| (s.summary.summary_id.clone(), s))
                    .collect();
                if self.status.starts_with("Loading conversation") {
                    self.status = format!(
                        "Conversation {conv}: {} in context, {}",
                        plural(d.context.len(), "item", "items"),
                        plural(d.summaries.len(), "summary", "summaries")
                    );
                }
                let n = self.rows().len();
                self.dag_sel = self.dag_sel.min(n.saturating_sub(1));
            }
            (Err(e), _) => self.status = format!("Cannot load conversation {conv}: {}", e.message),
            _ => {}
        }
    }
}
