//! Drawing the browser with ratatui: title bar, the screen, the open flow as an
//! overlay, status line and the bar of keys valid now. Colours only when allowed
//! (`NO_COLOR`, `--color never` leave bold / reverse / dim, no colour).

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::app::{App, Flow, Node, Screen};
use super::flow::{signed, variant, DissolveFlow, Pane, Phase, Review, RewriteFlow};
use crate::cli::output::{plural, thousands};
use crate::rewrite::RewritePreview;
use crate::timeformat::Zone;

use crate::cli::visible::{clip, fit};

/// A paragraph of stored text: every one the browser draws goes through here, so
/// no control character reaches the terminal ([`crate::cli::visible::text`]).
fn paragraph<'a>(t: impl Into<Text<'a>>) -> Paragraph<'a> {
    Paragraph::new(crate::cli::visible::text(t.into()))
}

/// Styles, coloured or not.
#[derive(Debug, Clone, Copy)]
pub struct Theme {
    /// Whether colours may be used.
    pub color: bool,
}

impl Theme {
    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }
    fn title(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    fn dim(&self) -> Style {
        Style::default().add_modifier(Modifier::DIM)
    }
    fn selected(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }
    fn key(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }
    fn added(&self) -> Style {
        self.fg(Color::Green)
    }
    fn removed(&self) -> Style {
        self.fg(Color::Red)
    }
}

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Draws one frame.
pub fn draw(f: &mut Frame, app: &App, zone: &Zone, theme: Theme) {
    let area = f.area();
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .split(area);
    draw_title(f, rows[0], app, theme);
    match app.screen {
        Screen::Conversations => draw_conversations(f, rows[1], app, zone, theme),
        Screen::Dag => draw_dag(f, rows[1], app, zone, theme),
        Screen::Context => draw_context(f, rows[1], app, theme),
        Screen::Files => draw_files(f, rows[1], app, theme),
    }
    match &app.flow {
        Some(Flow::Rewrite(r)) => draw_rewrite(f, overlay_area(rows[1]), app, r, zone, theme),
        Some(Flow::Dissolve(d)) => draw_dissolve(f, overlay_area(rows[1]), d, theme),
        None => {}
    }
    if app.help {
        draw_full_help(f, overlay_area(rows[1]), theme);
    }
    f.render_widget(paragraph(app.status.as_str()), rows[2]);
    let keys: Vec<Span> = help_keys(app)
        .iter()
        .enumerate()
        .flat_map(|(i, (k, what))| {
            let sep = if i == 0 { "" } else { " · " };
            [
                Span::raw(sep),
                Span::styled(*k, theme.key()),
                Span::raw(format!(": {what}")),
            ]
        })
        .collect();
    f.render_widget(paragraph(Line::from(keys)), rows[3]);
}

fn overlay_area(r: Rect) -> Rect {
    let w = r.width.saturating_sub(4).max(10).min(r.width);
    let h = r.height.saturating_sub(2).max(3).min(r.height);
    Rect {
        x: r.x + (r.width - w) / 2,
        y: r.y + (r.height - h) / 2,
        width: w,
        height: h,
    }
}

fn draw_title(f: &mut Frame, r: Rect, app: &App, theme: Theme) {
    let where_ = match (app.screen, &app.dag) {
        (Screen::Conversations, _) => "Conversations".to_owned(),
        (Screen::Dag, Some(d)) => format!(
            "Summary DAG · conversation {}",
            d.conversation.conversation_id
        ),
        (Screen::Context, Some(d)) => {
            format!("Context · conversation {}", d.conversation.conversation_id)
        }
        (Screen::Files, Some(d)) => format!(
            "Large files · conversation {}",
            d.conversation.conversation_id
        ),
        _ => String::new(),
    };
    let line = Line::from(vec![
        Span::styled(" lcm-tui ", theme.title()),
        Span::raw(format!(" {where_}  ")),
        Span::styled(app.db_label.clone(), theme.dim()),
    ]);
    f.render_widget(paragraph(line), r);
}

/// The keys valid now, for the help bar.
pub fn help_keys(app: &App) -> Vec<(&'static str, &'static str)> {
    if app.help {
        return vec![("?/esc", "close help")];
    }
    if let Some(flow) = &app.flow {
        return match flow {
            Flow::Rewrite(r) => match &r.phase {
                Phase::Plan { .. } => {
                    vec![("enter/y", "start"), ("esc/n", "cancel"), ("j/k", "scroll")]
                }
                Phase::Preview { .. } => vec![
                    ("enter", "send to API"),
                    ("esc", "cancel"),
                    ("j/k", "scroll"),
                ],
                Phase::Inflight { .. } if r.is_subtree() && !r.stopping => {
                    vec![("esc", "stop after this one")]
                }
                Phase::Inflight { .. } => vec![("esc", "cancel the request")],
                Phase::Review(_) if r.is_subtree() => vec![
                    ("y/enter", "apply"),
                    ("n", "discard"),
                    ("A", "accept all remaining"),
                    ("esc", "discard and stop"),
                    ("d", "diff"),
                    ("tab", "OLD/NEW"),
                    ("J/K", "scroll"),
                ],
                Phase::Review(_) => vec![
                    ("y/enter", "apply"),
                    ("n/esc", "discard"),
                    ("d", "diff"),
                    ("tab", "OLD/NEW"),
                    ("J/K", "scroll"),
                ],
                Phase::Applying { .. } => vec![("…", "writing")],
            },
            Flow::Dissolve(d) if d.plan.is_some() && !d.applying => {
                vec![("y", "apply"), ("n/esc", "cancel"), ("j/k", "scroll")]
            }
            Flow::Dissolve(_) => vec![("esc", "cancel")],
        };
    }
    match app.screen {
        Screen::Conversations => vec![
            ("type", "filter"),
            ("↑↓", "move"),
            ("enter", "open"),
            (
                "esc",
                if app.filter.is_empty() {
                    "quit"
                } else {
                    "clear filter"
                },
            ),
            ("?", "help"),
        ],
        Screen::Dag => vec![
            ("→←", "open"),
            ("m", "msgs"),
            ("w", "rewrite"),
            ("W", "subtree"),
            ("d", "dissolve"),
            ("c", "context"),
            ("f", "files"),
            ("esc", "back"),
            ("q", "quit"),
            ("?", "help"),
        ],
        Screen::Context => vec![
            ("+/-", "budget ×2/÷2"),
            ("j/k", "scroll"),
            ("r", "reassemble"),
            ("esc", "back"),
            ("q", "quit"),
        ],
        Screen::Files => vec![
            ("↑↓", "move"),
            ("J/K", "scroll"),
            ("esc", "back"),
            ("q", "quit"),
        ],
    }
}

fn draw_full_help(f: &mut Frame, r: Rect, theme: Theme) {
    let text = [
        ("Everywhere", ""),
        ("?", "toggle this help"),
        ("Ctrl-C", "quit (cancels a request in flight)"),
        ("Conversations", ""),
        ("type / backspace", "filter by id, session key or id, title"),
        (
            "↑↓ PgUp PgDn",
            "move; enter opens the conversation; esc clears the filter, then quits",
        ),
        ("Summary DAG", ""),
        ("↑↓ j/k g/G", "move in the context list"),
        (
            "→ l enter / ← h",
            "expand a summary into its sources / collapse",
        ),
        ("J/K", "scroll the detail pane"),
        ("m", "show the selected leaf's source messages"),
        (
            "w",
            "rewrite the summary: preview → enter sends → review → y applies",
        ),
        (
            "W",
            "rewrite it and every summary beneath it, bottom-up (A accepts all)",
        ),
        (
            "d",
            "dissolve a context summary back into its sources (preview, y applies)",
        ),
        ("c / f", "context at a budget / large files"),
        ("r", "reload; esc goes back; q quits"),
        ("Review", ""),
        ("y enter / n esc", "apply / discard"),
        ("d / tab / J K", "unified diff / switch OLD-NEW / scroll"),
    ];
    let lines: Vec<Line> = text
        .iter()
        .map(|(k, v)| {
            if v.is_empty() {
                Line::from(Span::styled(*k, theme.title()))
            } else {
                Line::from(vec![
                    Span::styled(format!("  {k:<18}"), theme.key()),
                    Span::raw(*v),
                ])
            }
        })
        .collect();
    f.render_widget(Clear, r);
    f.render_widget(
        paragraph(lines)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" Keys ")),
        r,
    );
}

fn local_time(zone: &Zone, sqlite: &str) -> String {
    crate::timestamp::parse(sqlite)
        .map(|t| zone.format_timestamp(t))
        .unwrap_or_else(|| sqlite.to_owned())
}

fn range(zone: &Zone, a: &Option<String>, b: &Option<String>) -> String {
    let p = |v: &Option<String>| v.as_deref().and_then(crate::timestamp::parse);
    match (p(a), p(b)) {
        (Some(a), Some(b)) => zone.format_range(a, b),
        (Some(t), None) | (None, Some(t)) => zone.format_timestamp(t),
        _ => "no time range".into(),
    }
}

fn window(sel: usize, height: usize) -> usize {
    if height == 0 {
        return 0;
    }
    sel.saturating_sub(height - 1)
}

fn draw_conversations(f: &mut Frame, r: Rect, app: &App, zone: &Zone, theme: Theme) {
    let list = app.filtered();
    let title = if app.filter.is_empty() {
        format!(" Conversations ({}) ", list.len())
    } else {
        format!(
            " Conversations ({} of {}) · filter: {} ",
            list.len(),
            app.conversations.len(),
            app.filter
        )
    };
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let header = format!(
        "{:>6}  {:<28} {:>6}  {:<22} {:>9} {:>9}  {}",
        "ID", "SESSION", "MSGS", "SUMMARIES", "STORED", "CONTEXT", "LAST ACTIVITY"
    );
    let mut lines = vec![Line::from(Span::styled(header, theme.dim()))];
    let height = inner.height.saturating_sub(1) as usize;
    let start = window(app.conv_sel, height);
    for (i, c) in list.iter().enumerate().skip(start).take(height) {
        let mut session = c
            .session_key
            .clone()
            .unwrap_or_else(|| c.session_id.clone());
        if c.archived {
            // Archived rows say so first: the key alone names the active one too.
            session = format!(
                "[{}] {session}",
                c.archive_cause.as_deref().unwrap_or("archived")
            );
        }
        let by: Vec<String> = c
            .summaries_by_depth
            .iter()
            .map(|(d, n)| format!("d{d}:{n}"))
            .collect();
        let text = format!(
            "{:>6}  {} {:>6}  {} {:>8}t {:>8}t  {}",
            c.conversation_id,
            fit(&session, 28),
            c.message_count,
            fit(&by.join(" "), 22),
            thousands(c.stored_tokens),
            thousands(c.context_tokens),
            local_time(zone, &c.last_activity)
        );
        let style = if i == app.conv_sel {
            theme.selected()
        } else if c.archived {
            theme.dim()
        } else {
            Style::default()
        };
        lines.push(Line::from(Span::styled(text, style)));
    }
    if list.is_empty() && !app.loading {
        lines.push(Line::from(Span::styled(
            "  no conversation matches",
            theme.dim(),
        )));
    }
    f.render_widget(paragraph(lines), inner);
}

fn draw_dag(f: &mut Frame, r: Rect, app: &App, zone: &Zone, theme: Theme) {
    let cols = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(63), Constraint::Percentage(37)])
        .split(r);
    let Some(dag) = &app.dag else {
        return;
    };
    let rows = app.rows();
    let block = Block::default().borders(Borders::ALL).title(format!(
        " Context list · {} · {}t ",
        plural(dag.context.len(), "item", "items"),
        thousands(dag.conversation.context_tokens)
    ));
    let inner = block.inner(cols[0]);
    f.render_widget(block, cols[0]);
    let height = inner.height as usize;
    let start = window(app.dag_sel, height);
    let mut lines = Vec::new();
    for (i, row) in rows.iter().enumerate().skip(start).take(height) {
        let indent = "  ".repeat(row.level);
        let text = match &row.node {
            Node::Summary { id, cycle, .. } => match dag.summaries.get(id) {
                Some(_) if *cycle => format!("{indent}↺ {id} (a cycle: it is above this line)"),
                Some(s) => {
                    let marker = if app.expanded.contains(id) {
                        "▾"
                    } else {
                        "▸"
                    };
                    let kind = if s.summary.kind == crate::store::summaries::SummaryKind::Leaf {
                        "leaf"
                    } else {
                        "cond"
                    };
                    format!(
                        "{indent}{marker} {id} {kind} d{} {:>5}t {:>3}↓ {}",
                        s.summary.depth,
                        thousands(s.summary.token_count),
                        s.summary.descendant_count,
                        range(zone, &s.summary.earliest_at, &s.summary.latest_at)
                    )
                }
                None => format!("{indent}? {id} (missing)"),
            },
            Node::Message { id, role, tokens } => {
                format!("{indent}  msg {id} {role} {}t", thousands(*tokens))
            }
            Node::Messages { count, .. } => {
                format!("{indent}  ⋯ {count} source messages (m shows them)")
            }
        };
        let style = if i == app.dag_sel {
            theme.selected()
        } else if matches!(row.node, Node::Summary { .. }) {
            Style::default()
        } else {
            theme.dim()
        };
        lines.push(Line::from(Span::styled(text, style)));
    }
    if rows.is_empty() {
        let t = if app.loading {
            "  loading…"
        } else {
            "  empty context list"
        };
        lines.push(Line::from(Span::styled(t, theme.dim())));
    }
    f.render_widget(paragraph(lines), inner);
    draw_detail(f, cols[1], app, zone, theme);
}

fn draw_detail(f: &mut Frame, r: Rect, app: &App, zone: &Zone, theme: Theme) {
    let Some(dag) = &app.dag else {
        return;
    };
    let rows = app.rows();
    let mut lines: Vec<Line> = Vec::new();
    let mut title = " Detail ".to_owned();
    match rows.get(app.dag_sel).map(|r| &r.node) {
        Some(Node::Message { id, role, tokens }) => {
            lines.push(Line::from(format!(
                "message {id} ({role}), {}t",
                thousands(*tokens)
            )));
            lines.push(Line::from(Span::styled(
                "a raw message on the context list (fresh tail or not yet compacted)",
                theme.dim(),
            )));
        }
        Some(Node::Summary { id, .. }) | Some(Node::Messages { summary_id: id, .. }) => {
            if let Some(s) = dag.summaries.get(id) {
                let m = &s.summary;
                title = format!(" {id} ");
                lines.push(Line::from(format!(
                    "{} · depth {} · {}t",
                    m.kind,
                    m.depth,
                    thousands(m.token_count)
                )));
                lines.push(Line::from(format!(
                    "time: {}",
                    range(zone, &m.earliest_at, &m.latest_at)
                )));
                lines.push(Line::from(format!(
                    "descendants: {} ({}t) · source messages {}t",
                    m.descendant_count,
                    thousands(m.descendant_token_count),
                    thousands(m.source_message_token_count)
                )));
                let sources = if s.parent_ids.is_empty() {
                    plural(s.message_ids.len(), "message", "messages")
                } else {
                    plural(s.parent_ids.len(), "summary", "summaries")
                };
                lines.push(Line::from(format!(
                    "sources: {sources} · created {}",
                    local_time(zone, &m.created_at)
                )));
                lines.push(Line::from(Span::styled("─".repeat(40), theme.dim())));
                lines.extend(m.content.lines().map(|l| Line::from(l.to_owned())));
                if app.show_sources {
                    lines.push(Line::from(Span::styled("─".repeat(40), theme.dim())));
                    match &app.sources {
                        Some((sid, src)) if sid == id => {
                            lines.push(Line::from(Span::styled(
                                format!("Source messages ({})", src.len()),
                                theme.title(),
                            )));
                            let each = src.iter().flat_map(|m| m.split('\n'));
                            lines.extend(each.map(|l| Line::from(l.to_owned())));
                        }
                        _ if s.message_ids.is_empty() => lines.push(Line::from(
                            "a condensed summary: its sources are the summaries beneath it (→)",
                        )),
                        _ => lines.push(Line::from("loading source messages…")),
                    }
                }
            }
        }
        None => {}
    }
    f.render_widget(
        paragraph(lines)
            .wrap(Wrap { trim: false })
            .scroll((app.detail_scroll, 0))
            .block(Block::default().borders(Borders::ALL).title(title)),
        r,
    );
}

fn draw_context(f: &mut Frame, r: Rect, app: &App, theme: Theme) {
    let mut lines = Vec::new();
    let title = format!(" Context at {}t ", thousands(app.budget));
    match &app.context {
        Some(a) if !app.loading => {
            let s = &a.stats;
            lines.push(Line::from(format!(
                "budget {}t · assembled {}, ~{}t ({}, {}; {} dropped for the budget){}",
                thousands(s.token_budget),
                plural(a.messages.len(), "message", "messages"),
                thousands(a.estimated_tokens),
                plural(s.summaries_included, "summary", "summaries"),
                plural(s.messages_included, "message", "messages"),
                s.dropped_for_budget,
                if s.over_budget { " · over budget" } else { "" }
            )));
            if let Some(reason) = &s.fallback_reason {
                lines.push(Line::from(format!("fallback: {reason:?}")));
            }
            lines.push(Line::from(Span::styled("─".repeat(60), theme.dim())));
            for (i, m) in a.messages.iter().enumerate() {
                let role = m.get("role").and_then(|v| v.as_str()).unwrap_or("?");
                let text = message_preview(m);
                let tokens = crate::tokens::estimate(&text);
                lines.push(Line::from(format!(
                    "{i:>4} {role:<10} {:>6}t  {}",
                    thousands(tokens),
                    clip(
                        text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""),
                        200
                    )
                )));
            }
        }
        _ => lines.push(Line::from("assembling…")),
    }
    f.render_widget(
        paragraph(lines)
            .scroll((app.context_scroll, 0))
            .block(Block::default().borders(Borders::ALL).title(title)),
        r,
    );
}

fn message_preview(m: &serde_json::Value) -> String {
    match m.get("content") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

fn draw_files(f: &mut Frame, r: Rect, app: &App, theme: Theme) {
    let parts = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(45), Constraint::Percentage(55)])
        .split(r);
    let mut lines = vec![Line::from(Span::styled(
        format!("{:<22} {:<30} {:<24} {:>10}", "ID", "NAME", "MIME", "SIZE"),
        theme.dim(),
    ))];
    for (i, file) in app.files.iter().enumerate() {
        let text = format!(
            "{} {} {} {:>10}",
            fit(&file.file_id, 22),
            fit(file.file_name.as_deref().unwrap_or("-"), 30),
            fit(file.mime_type.as_deref().unwrap_or("-"), 24),
            file.byte_size
                .map(|b| format!("{}B", thousands(b)))
                .unwrap_or_default()
        );
        let style = if i == app.file_sel {
            theme.selected()
        } else {
            Style::default()
        };
        lines.push(Line::from(Span::styled(text, style)));
    }
    if app.files.is_empty() {
        let t = if app.loading {
            "loading…"
        } else {
            "no large files in this conversation"
        };
        lines.push(Line::from(Span::styled(t, theme.dim())));
    }
    f.render_widget(
        paragraph(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(format!(" Large files ({}) ", app.files.len())),
        ),
        parts[0],
    );
    let summary = app
        .files
        .get(app.file_sel)
        .and_then(|f| f.exploration_summary.clone())
        .unwrap_or_default();
    f.render_widget(
        paragraph(summary)
            .wrap(Wrap { trim: false })
            .scroll((app.detail_scroll, 0))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" Exploration summary "),
            ),
        parts[1],
    );
}

fn draw_rewrite(f: &mut Frame, r: Rect, app: &App, flow: &RewriteFlow, zone: &Zone, theme: Theme) {
    f.render_widget(Clear, r);
    match &flow.phase {
        Phase::Plan { scroll } => {
            let root = flow
                .queue
                .last()
                .map(|p| p.summary_id.as_str())
                .unwrap_or("");
            let title = format!(" Rewrite subtree of {root} — plan ");
            panel(f, r, title, plan_lines(flow, zone), *scroll);
        }
        Phase::Preview { scroll } => {
            let Some(p) = &flow.preview else {
                return;
            };
            let title = format!(" Rewrite {} — preview ", p.summary.summary_id);
            panel(
                f,
                r,
                title,
                preview_lines(p, &app.summarizer, theme),
                *scroll,
            );
        }
        Phase::Inflight { since, .. } => {
            panel(f, r, " Rewriting ".into(), inflight_lines(flow, *since), 0)
        }
        Phase::Review(rv) => draw_review(f, r, flow, rv, false, theme),
        Phase::Applying { review, .. } => draw_review(f, r, flow, review, true, theme),
    }
}

/// A subtree run's plan: the summaries it will rewrite, children first.
fn plan_lines(flow: &RewriteFlow, zone: &Zone) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(flow.plan_summary()), Line::from("")];
    for (i, p) in flow.queue.iter().enumerate() {
        lines.push(Line::from(format!(
            "{:>4}. {} d{} {:<9} {:>6}t  {}",
            i + 1,
            p.summary_id,
            p.depth,
            p.kind,
            thousands(p.token_count),
            range(zone, &p.earliest_at, &p.latest_at)
        )));
    }
    lines
}

/// A single rewrite's preview: what would be sent, and to whom.
fn preview_lines(p: &RewritePreview, summarizer: &str, theme: Theme) -> Vec<Line<'static>> {
    let s = &p.summary;
    let source = if p.prompt.source == "embedded" {
        "embedded".to_owned()
    } else {
        format!("override file {}", p.prompt.source)
    };
    let mut lines = vec![
        Line::from(format!(
            "Summary: {} ({} d{}, {} {})",
            s.summary_id,
            s.kind,
            s.depth,
            s.child_count,
            if s.depth == 0 { "messages" } else { "children" }
        )),
        Line::from(format!(
            "Time range: {}",
            p.time_range.clone().unwrap_or_else(|| "none".into())
        )),
        Line::from(format!(
            "Prompt variant: {} (template {}, {source})",
            variant(s.depth),
            p.prompt.template
        )),
        Line::from(format!("Summarizer: {summarizer}")),
        Line::from(format!(
            "Source: {} chars, ~{}t · previous context: {} · target {}t · stored now {}t",
            thousands(p.source_chars as i64),
            thousands(p.source_tokens),
            if p.has_previous_context { "yes" } else { "no" },
            thousands(p.prompt.target_tokens),
            thousands(p.old_tokens)
        )),
        Line::from(format!(
            "Estimated tokens sent: ~{}",
            thousands(
                crate::tokens::estimate(&p.prompt.prompt)
                    + crate::tokens::estimate(&p.prompt.system_prompt)
            )
        )),
    ];
    if let Some(skip) = &p.skip {
        lines.push(Line::from(Span::styled(
            format!("Cannot rewrite: {skip}"),
            theme.removed(),
        )));
    }
    let section = |title: &'static str| Line::from(Span::styled(title, theme.title()));
    lines.push(section("── system prompt ──"));
    let text = |t: &str| {
        t.lines()
            .map(|l| Line::from(l.to_owned()))
            .collect::<Vec<_>>()
    };
    lines.extend(text(&p.prompt.system_prompt));
    lines.push(section("── prompt (user message, as sent) ──"));
    lines.extend(text(&p.prompt.prompt));
    lines
}

/// The spinner and progress of a request in flight.
fn inflight_lines(flow: &RewriteFlow, since: std::time::Instant) -> Vec<Line<'static>> {
    let frame = (since.elapsed().as_millis() / 100) as usize % SPINNER.len();
    let mut lines = vec![
        Line::from(""),
        Line::from(format!(
            "  {} {} {}s",
            SPINNER[frame],
            flow.inflight_line(),
            since.elapsed().as_secs()
        )),
        Line::from(""),
    ];
    if flow.stopping {
        lines.push(Line::from(
            "  Stopping after this one (esc again cancels the request).",
        ));
    }
    if flow.is_subtree() {
        lines.push(Line::from(format!(
            "  So far: {} applied, {} discarded",
            flow.applied, flow.discarded
        )));
    }
    lines
}

fn panel(f: &mut Frame, r: Rect, title: String, lines: Vec<Line>, scroll: u16) {
    f.render_widget(
        paragraph(lines)
            .wrap(Wrap { trim: false })
            .scroll((scroll, 0))
            .block(Block::default().borders(Borders::ALL).title(title)),
        r,
    );
}

fn draw_review(
    f: &mut Frame,
    r: Rect,
    flow: &RewriteFlow,
    rv: &Review,
    applying: bool,
    theme: Theme,
) {
    let e = &rv.entry;
    let progress = if flow.is_subtree() {
        format!(" — {}", flow.progress())
    } else {
        String::new()
    };
    let unit = if e.depth == 0 { "messages" } else { "children" };
    let title = format!(
        " Rewrite: {} (d{}, {} {unit}){progress} ",
        e.summary_id, e.depth, e.child_count
    );
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let parts = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Min(2),
            Constraint::Length(1),
        ])
        .split(inner);
    f.render_widget(
        paragraph(format!(
            "Time range: {}",
            e.time_range.clone().unwrap_or_else(|| "none".into())
        )),
        parts[0],
    );
    let delta = format!(
        "Δ tokens: {} ({} → {}){}",
        signed(e.delta),
        thousands(e.old_tokens),
        thousands(e.new_tokens),
        if applying { " · applying…" } else { "" }
    );
    f.render_widget(paragraph(Span::styled(delta, theme.key())), parts[2]);
    if rv.diff {
        let lines: Vec<Line> = e
            .diff
            .lines()
            .map(|l| {
                let style = if l.starts_with('+') {
                    theme.added()
                } else if l.starts_with('-') {
                    theme.removed()
                } else {
                    Style::default()
                };
                Line::from(Span::styled(l.to_owned(), style))
            })
            .collect();
        let lines = if lines.is_empty() {
            vec![Line::from("(no difference)")]
        } else {
            lines
        };
        panel(
            f,
            parts[1],
            " Unified diff (d: back to OLD/NEW) ".into(),
            lines,
            rv.old_scroll,
        );
        return;
    }
    let halves = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
        .split(parts[1]);
    let mark = |p: Pane| if rv.focus == p { "▶ " } else { "" };
    panel(
        f,
        halves[0],
        format!(
            " {}OLD ({} tokens) ",
            mark(Pane::Old),
            thousands(e.old_tokens)
        ),
        e.old_content
            .lines()
            .map(|l| Line::from(l.to_owned()))
            .collect(),
        rv.old_scroll,
    );
    panel(
        f,
        halves[1],
        format!(
            " {}NEW ({} tokens) ",
            mark(Pane::New),
            thousands(e.new_tokens)
        ),
        e.new_content
            .lines()
            .map(|l| Line::from(l.to_owned()))
            .collect(),
        rv.new_scroll,
    );
}

fn draw_dissolve(f: &mut Frame, r: Rect, d: &DissolveFlow, theme: Theme) {
    f.render_widget(Clear, r);
    let Some(p) = &d.plan else {
        panel(
            f,
            r,
            format!(" Dissolve {} ", d.summary_id),
            vec![Line::from("planning…")],
            0,
        );
        return;
    };
    let t = &p.target;
    let ord = t.ordinal.unwrap_or(0);
    let mut lines = vec![
        Line::from(format!(
            "{} (d{} {}, {}t) at context ordinal {ord} is replaced by {}:",
            t.summary_id,
            t.depth,
            t.kind,
            thousands(t.token_count),
            plural(p.restored.len(), "item", "items")
        )),
        Line::from(""),
    ];
    for (i, it) in p.restored.iter().enumerate() {
        let what = match (&it.summary_id, it.message_id) {
            (Some(s), _) => format!("summary {s} d{}", it.depth.unwrap_or(0)),
            (None, Some(m)) => format!("message {m} {}", it.role.clone().unwrap_or_default()),
            _ => "?".into(),
        };
        lines.push(Line::from(format!(
            "{:>5}  {what} {}t  {}",
            ord + i as i64,
            thousands(it.token_count),
            clip(&it.preview.replace('\n', " "), 60)
        )));
    }
    lines.push(Line::from(""));
    let first_after = ord + 1;
    lines.push(Line::from(if p.items_shifted > 0 {
        format!(
            "Ordinals {first_after}…{} ({}) shift by {} to {}…{}",
            first_after + p.items_shifted - 1,
            plural(p.items_shifted, "later item", "later items"),
            signed(p.shift),
            first_after + p.shift,
            first_after + p.shift + p.items_shifted - 1
        )
    } else {
        "No later items: no ordinal shifts.".to_owned()
    }));
    lines.push(Line::from(format!(
        "Context: {}, {}t → {}, {}t ({})",
        plural(p.context_items_before, "item", "items"),
        thousands(p.context_tokens_before),
        plural(p.context_items_after, "item", "items"),
        thousands(p.context_tokens_after),
        signed(p.token_delta)
    )));
    lines.push(Line::from(Span::styled(
        if d.applying {
            "applying…"
        } else {
            "y: apply · n/esc: cancel"
        },
        theme.key(),
    )));
    panel(
        f,
        r,
        format!(" Dissolve {} ", d.summary_id),
        lines,
        d.scroll,
    );
}
