//! The interactive browser: `lcm-tui` with no subcommand (or `lcm-tui tui`).
//!
//! Screens: conversations (filter by typing), the summary DAG of one conversation
//! (context list, expandable sources, detail pane), the context `assemble` gives at
//! a budget, and large files. Actions on the selected summary: `w` rewrite (preview
//! → in flight → review → apply), `W` subtree rewrite, `d` dissolve.
//!
//! - [`app`]: state and keys (pure), [`flow`]: the rewrite / dissolve state
//!   machines, [`keys`]: key mapping, [`view`]: drawing (stored text made safe
//!   to draw by [`crate::cli::visible`]).
//! - This file: flags, the terminal, and the runner that performs [`app::Action`]s
//!   on the engine (tokio tasks) and posts [`app::Msg`]s back to the UI loop, which
//!   never waits on them: the UI stays responsive while a summarizer call runs, and
//!   Esc trips the call's cancel token, which drops its HTTP request.

pub mod app;
pub mod flow;
pub mod keys;
pub mod view;

use std::io::IsTerminal;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use crossterm::event::{self, Event};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use super::error::{CliError, CliResult, EXIT_OK};
use super::{db, Ctx};
use crate::config::EngineOptions;
use crate::engine::Engine;
use crate::summarize::SummarizerChoice;
use crate::timeformat::Zone;
use app::{Action, App, Msg};

/// Flags of the interactive browser (`lcm-tui [flags]` or `lcm-tui tui [flags]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub struct TuiArgs {
    /// Prompt template override directory for `w`/`W` [default: ~/.config/lcm-tui/prompts, else embedded]
    #[arg(long, value_name = "PATH")]
    pub prompt_dir: Option<String>,
    /// Summarizer model [default: $LCM_TUI_SUMMARY_MODEL, $LCM_SUMMARY_MODEL, the provider's default]
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Summarizer: anthropic, openai, openai-responses or offline [default: as `lcm-tui rewrite`, else offline]
    #[arg(long, value_name = "NAME", value_parser = super::rewrite::PROVIDERS)]
    pub provider: Option<String>,
    /// Provider base URL [default: $LCM_TUI_SUMMARY_BASE_URL, $LCM_SUMMARY_BASE_URL]
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// IANA timezone of the times shown [default: $TZ, else UTC]
    #[arg(long, value_name = "ZONE", visible_alias = "tz")]
    pub timezone: Option<String>,
    /// Leave timestamps out of rewrite source texts
    #[arg(long)]
    pub no_timestamps: bool,
}

/// Performs actions on the engine off the UI thread.
struct Runner {
    engine: Arc<Engine>,
    handle: tokio::runtime::Handle,
    tx: mpsc::Sender<Msg>,
    timestamps: bool,
}

impl Runner {
    fn exec(&self, a: Action) {
        let engine = self.engine.clone();
        let tx = self.tx.clone();
        let timestamps = self.timestamps;
        self.handle.spawn(async move {
            let msg = perform(&engine, a, timestamps).await;
            let _ = tx.send(msg);
        });
    }
}

fn params<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> crate::error::Result<T> {
    serde_json::from_value(v).map_err(|e| crate::error::LcmError::invalid(e.to_string()))
}

/// Runs one piece of work the app asked for and reports its result.
async fn perform(e: &Engine, a: Action, timestamps: bool) -> Msg {
    match a {
        Action::LoadConversations => load_conversations(e).await,
        Action::LoadDag(conv) => {
            let r = async {
                let ctx = e.get_context_items(conv).await?;
                let sums = e.get_summaries(conv).await?;
                Ok((ctx, sums))
            }
            .await;
            Msg::Dag(conv, r)
        }
        Action::LoadSources {
            summary_id,
            message_ids,
        } => Msg::Sources(summary_id, load_sources(e, message_ids).await),
        Action::Assemble {
            session_id,
            session_key,
            budget,
        } => {
            let p = params(serde_json::json!({
                "sessionId": session_id, "sessionKey": session_key, "tokenBudget": budget
            }));
            Msg::Context(match p {
                Ok(p) => e.assemble(p).await,
                Err(err) => Err(err),
            })
        }
        Action::LoadFiles(conv) => Msg::Files(
            e.store()
                .read(move |c| crate::store::largefiles::list_in(c, conv))
                .await,
        ),
        Action::Preview {
            conversation_id,
            summary_id,
        } => Msg::Preview(
            e.preview_rewrite(conversation_id, &summary_id, timestamps)
                .await,
        ),
        Action::PlanSubtree {
            conversation_id,
            summary_id,
        } => {
            let p = params(serde_json::json!({
                "conversationId": conversation_id, "summaryId": summary_id, "subtree": true
            }));
            Msg::Plan(match p {
                Ok(p) => e.plan_rewrite(p).await,
                Err(err) => Err(err),
            })
        }
        Action::Flow(cmd) => perform_flow(e, cmd, timestamps).await,
    }
}

/// The conversation list (also reloaded after a flow changed the DAG).
async fn load_conversations(e: &Engine) -> Msg {
    Msg::Conversations(e.store().read(crate::store::browse::conversations).await)
}

/// A summary's source messages, one entry each (`[msg id] role: text`, its text
/// cut by [`source_preview`]).
async fn load_sources(e: &Engine, message_ids: Vec<i64>) -> crate::error::Result<Vec<String>> {
    e.store()
        .read(move |c| {
            let stored = crate::store::messages::stored_by_ids(c, &message_ids)?;
            Ok(stored
                .iter()
                .map(|m| {
                    let text = crate::compaction::source::message_text(m);
                    let shown = source_preview(text.trim());
                    format!("[msg {}] {}: {shown}", m.message_id, m.role)
                })
                .collect())
        })
        .await
}

/// How much of one source message the detail pane shows: the pane is copied and
/// wrapped at every frame, and tool outputs of megabytes stalled the browser: the
/// cap bounds the work of one frame whatever the message's size. The rest is
/// named, not drawn.
const SOURCE_LINES: usize = 200;
/// See [`SOURCE_LINES`].
const SOURCE_CHARS: usize = 20_000;

/// `text`'s first [`SOURCE_LINES`] lines, at most [`SOURCE_CHARS`] characters, then
/// a line saying how much is left out.
pub(crate) fn source_preview(text: &str) -> std::borrow::Cow<'_, str> {
    let by_lines = text
        .match_indices('\n')
        .nth(SOURCE_LINES - 1)
        .map_or(text, |(i, _)| crate::text::head(text, i));
    let shown = crate::text::prefix_chars(by_lines, SOURCE_CHARS);
    if shown.len() == text.len() {
        return std::borrow::Cow::Borrowed(text);
    }
    let rest = crate::text::tail(text, shown.len());
    let rest = rest.strip_prefix('\n').unwrap_or(rest);
    std::borrow::Cow::Owned(format!(
        "{shown}\n… {} more characters ({}) not shown",
        crate::cli::output::thousands(rest.chars().count() as i64),
        crate::cli::output::plural(rest.lines().count(), "line", "lines")
    ))
}

/// Runs a command of an open rewrite or dissolve flow.
async fn perform_flow(e: &Engine, cmd: flow::Cmd, timestamps: bool) -> Msg {
    use flow::Cmd;
    match cmd {
        Cmd::Rewrite {
            req,
            conversation_id,
            summary_id,
            cancel,
        } => {
            let p = params(serde_json::json!({
                "conversationId": conversation_id, "summaryId": summary_id,
                "subtree": false, "apply": false, "timestamps": timestamps
            }));
            Msg::Rewritten(
                req,
                match p {
                    Ok(p) => e.rewrite_with(p, None, cancel).await,
                    Err(err) => Err(err),
                },
            )
        }
        Cmd::Apply {
            req,
            conversation_id,
            summary_id,
            expected,
            content,
        } => Msg::Applied(
            req,
            e.apply_reviewed_rewrite(conversation_id, &summary_id, &expected, &content)
                .await,
        ),
        Cmd::Dissolve {
            conversation_id,
            summary_id,
            apply,
        } => {
            let p = params(serde_json::json!({
                "conversationId": conversation_id, "summaryId": summary_id, "apply": apply
            }));
            Msg::Dissolved(match p {
                Ok(p) => e.dissolve(p).await,
                Err(err) => Err(err),
            })
        }
        Cmd::ReloadDag => load_conversations(e).await,
    }
}

/// Restores the terminal when dropped (also while unwinding).
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
        let _ = crossterm::execute!(
            std::io::stdout(),
            LeaveAlternateScreen,
            crossterm::cursor::Show
        );
    }
}

/// Runs the browser until the operator quits.
pub fn run(a: TuiArgs, ctx: &mut Ctx) -> CliResult {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(CliError::usage(
            "the interactive browser needs a terminal (stdin and stdout); run a subcommand instead\n\nUsage: lcm-tui [OPTIONS] [COMMAND]   (lcm-tui --help lists the commands)",
        ));
    }
    let path = ctx.db_path()?;
    let zone = Zone::resolve(a.timezone.as_deref())
        .map_err(|e| CliError::usage(format!("--timezone: {}", e.message)))?;
    // As `lcm-tui rewrite`; the offline summarizer when nothing names a provider.
    let mut choice = SummarizerChoice::new(a.provider.clone(), a.model.clone(), a.base_url.clone())
        .with_environment();
    if choice.provider.is_none() {
        choice.provider = Some("offline".to_owned());
    }
    let label = choice.label().unwrap_or_else(|| "offline".to_owned());
    let mut opts = EngineOptions {
        prompt_dir: a.prompt_dir.clone(),
        timezone: a.timezone.clone(),
        ..db::engine_options(&path)
    };
    choice.apply(&mut opts);
    let engine = ctx
        .block_on(Engine::open(opts))?
        .map_err(super::rewrite::config_error)?;
    let engine = Arc::new(engine);
    let theme = view::Theme {
        color: ctx.out.color,
    };
    let handle = ctx.handle()?;
    let result = ui_loop(&engine, handle, &path, label, zone, theme, !a.no_timestamps);
    let closed = ctx.block_on(engine.close())?;
    if let Err(e) = closed {
        ctx.out
            .warn(&format!("closing the database: {}", e.message));
    }
    result
}

fn io_err(e: std::io::Error) -> CliError {
    CliError::failure(format!("terminal: {e}"))
}

fn ui_loop(
    engine: &Arc<Engine>,
    handle: tokio::runtime::Handle,
    path: &std::path::Path,
    label: String,
    zone: Zone,
    theme: view::Theme,
    timestamps: bool,
) -> CliResult {
    let (tx, rx) = mpsc::channel();
    let runner = Runner {
        engine: engine.clone(),
        handle,
        tx,
        timestamps,
    };
    let (mut app, first) = App::new(path.display().to_string(), label);
    first.into_iter().for_each(|a| runner.exec(a));
    terminal::enable_raw_mode().map_err(io_err)?;
    let _guard = TerminalGuard;
    crossterm::execute!(
        std::io::stdout(),
        EnterAlternateScreen,
        crossterm::cursor::Hide
    )
    .map_err(io_err)?;
    let mut term = Terminal::new(CrosstermBackend::new(std::io::stdout())).map_err(io_err)?;
    term.clear().map_err(io_err)?;
    while !app.quit {
        while let Ok(msg) = rx.try_recv() {
            app.on_msg(msg).into_iter().for_each(|a| runner.exec(a));
        }
        if let Some(a) = app.sources_needed() {
            runner.exec(a);
        }
        term.draw(|f| view::draw(f, &app, &zone, theme))
            .map_err(io_err)?;
        if !event::poll(Duration::from_millis(80)).map_err(io_err)? {
            continue;
        }
        match event::read().map_err(io_err)? {
            Event::Key(k) => {
                for key in keys::from_event(k) {
                    app.on_key(key).into_iter().for_each(|a| runner.exec(a));
                }
            }
            Event::Resize(..) => term.autoresize().map_err(io_err)?,
            _ => {}
        }
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod tests;
