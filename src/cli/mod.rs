//! `lcm-tui`, the operator's command line (clap derive). Plain Rust: the addon's
//! `runCli(argv)` and any native binary call [`run`]; tests call [`run_with`] and
//! read the captured output.
//!
//! Conventions every subcommand follows (see [`output`], [`error`], [`db`]):
//! - global flags `--db <path>`, `--json`, `--color auto|always|never`, accepted before
//!   or after the subcommand;
//! - results on stdout, diagnostics on stderr; with `--json` stdout carries exactly one
//!   JSON document (`{"error": …}` on failure);
//! - exit 0 on success, 1 when the job fails, 2 for a bad command line;
//! - the database must exist ([`db::resolve`]); read-only jobs open it read-only.
//!
//! Adding a subcommand: a module with a `clap::Args` struct and
//! `fn run(args, &mut Ctx) -> CliResult`, one variant in [`Command`] and one arm in
//! [`dispatch`].

pub mod backfill;
pub mod db;
pub mod dissolve;
pub mod doctor;
pub mod error;
pub mod operator;
pub mod output;
pub mod progress;
pub mod prompts;
pub mod retention;
pub mod rewrite;
pub mod sessions;
pub mod space;
pub mod status;
pub mod transplant;
pub mod tui;
pub mod visible;

use std::future::Future;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

pub use error::{CliError, CliResult, EXIT_FAILURE, EXIT_OK, EXIT_USAGE};
use output::{ColorMode, Output};

/// `lcm-tui`: inspect and maintain a Lossless Context Management database.
#[derive(Debug, Parser)]
#[command(
    name = "lcm-tui",
    bin_name = "lcm-tui",
    version,
    about = "Inspect and maintain a Lossless Context Management (lcm.db) database",
    long_about = None,
    propagate_version = true,
    after_help = "With no subcommand, opens the interactive browser (lcm-tui tui)."
)]
pub struct Cli {
    /// Flags every subcommand accepts.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The interactive browser's flags (when no subcommand is given).
    #[command(flatten)]
    pub tui: tui::TuiArgs,
    /// The subcommand (none: the interactive browser).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Flags every subcommand accepts (before or after its name).
#[derive(Debug, Clone, Default, Args)]
pub struct GlobalArgs {
    /// SQLite database [default: $OPENCLAW_STATE_DIR/lcm.db, else ~/.openclaw/lcm.db]
    #[arg(
        long,
        global = true,
        value_name = "PATH",
        help_heading = "Global options"
    )]
    pub db: Option<PathBuf>,
    /// Print one JSON document on stdout instead of text
    #[arg(long, global = true, help_heading = "Global options")]
    pub json: bool,
    /// Colour output: auto (terminals without NO_COLOR), always, never
    #[arg(long, global = true, value_enum, default_value_t = ColorMode::Auto, value_name = "WHEN", help_heading = "Global options", hide_possible_values = true)]
    pub color: ColorMode,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Browse conversations and the summary DAG; rewrite (w, W) and dissolve (d) in place (the default)
    Tui(tui::TuiArgs),
    /// Rewrite summaries in place with the current prompts (dry run unless --apply)
    Rewrite(rewrite::RewriteArgs),
    /// List, export, show, diff and render the summarization prompt templates
    Prompts(prompts::PromptsArgs),
    /// Check the store's invariants and broken summaries; --apply repairs them
    Doctor(doctor::DoctorArgs),
    /// Replace a context summary by what it was made from (dry run unless --apply)
    Dissolve(dissolve::DissolveArgs),
    /// Copy a conversation's context summaries into another conversation (dry run unless --apply)
    Transplant(transplant::TransplantArgs),
    /// Import a session transcript (JSONL) into a conversation, optionally compacting it (dry run unless --apply)
    Backfill(backfill::BackfillArgs),
    /// Database size and largest tables, conversations, and one session's context and last compaction
    Status(status::StatusArgs),
    /// List conversations, archived ones with their cause (/reset, /new, rotations)
    Conversations(sessions::ConversationsArgs),
    /// Archive a conversation: its session starts afresh, nothing is deleted
    Archive(sessions::ArchiveArgs),
    /// Make an archived conversation the active one of its session key again
    Unarchive(sessions::UnarchiveArgs),
    /// Take a consistent copy while the gateway keeps writing (online backup API)
    Backup(space::BackupArgs),
    /// Rewrite the file with incremental auto-vacuum (offline; checks free space first)
    Vacuum(space::VacuumArgs),
    /// Show the file's pages, free pages and bytes per table and index
    Space(space::SpaceArgs),
    /// Archive, then remove, idle conversations by retention policy (dry run unless --apply)
    Prune(retention::PruneArgs),
    /// Put a pruned conversation back from its archive, byte for byte
    Restore(retention::RestoreArgs),
}

/// What a subcommand gets: the output streams, the global flags and an async runtime
/// for engine calls (created on first use).
pub struct Ctx<'a> {
    /// Where to write.
    pub out: &'a mut Output,
    /// The global flags.
    pub global: GlobalArgs,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Ctx<'_> {
    /// Whether `--json` is in effect.
    pub fn json(&self) -> bool {
        self.global.json
    }

    /// The database file (`--db`, `$OPENCLAW_STATE_DIR/lcm.db`, `~/.openclaw/lcm.db`);
    /// an error when it does not exist.
    pub fn db_path(&self) -> Result<PathBuf, CliError> {
        db::resolve(self.global.db.as_deref())
    }

    /// The command's async runtime (created on first use). `Handle::block_on` on it
    /// lets a caller keep using `ctx.out` while a future runs.
    pub fn handle(&mut self) -> Result<tokio::runtime::Handle, CliError> {
        if self.runtime.is_none() {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("lcm-tui")
                .enable_all()
                .build()
                .map_err(|e| CliError::failure(format!("cannot start the async runtime: {e}")))?;
            self.runtime = Some(rt);
        }
        match &self.runtime {
            Some(rt) => Ok(rt.handle().clone()),
            None => Err(CliError::failure("no async runtime")),
        }
    }

    /// Runs a future to completion on the command's runtime.
    pub fn block_on<F: Future>(&mut self, fut: F) -> Result<F::Output, CliError> {
        Ok(self.handle()?.block_on(fut))
    }

    /// Opens the engine on the database for writing (the file must exist).
    pub fn open_engine(
        &mut self,
        opts: crate::config::EngineOptions,
    ) -> Result<crate::engine::Engine, CliError> {
        self.block_on(db::open_engine(opts))?
    }

    /// Opens the database read-only.
    pub fn open_read_only(&self, path: &Path) -> Result<rusqlite::Connection, CliError> {
        db::open_read_only(path)
    }
}

fn dispatch(command: Command, ctx: &mut Ctx) -> CliResult {
    match command {
        Command::Tui(a) => tui::run(a, ctx),
        Command::Rewrite(a) => rewrite::run(a, ctx),
        Command::Prompts(a) => prompts::run(a, ctx),
        Command::Doctor(a) => doctor::run(a, ctx),
        Command::Dissolve(a) => dissolve::run(a, ctx),
        Command::Transplant(a) => transplant::run(a, ctx),
        Command::Backfill(a) => backfill::run(a, ctx),
        Command::Status(a) => status::run(a, ctx),
        Command::Conversations(a) => sessions::conversations(a, ctx),
        Command::Archive(a) => sessions::archive(a, ctx),
        Command::Unarchive(a) => sessions::unarchive(a, ctx),
        Command::Backup(a) => space::backup(a, ctx),
        Command::Vacuum(a) => space::vacuum(a, ctx),
        Command::Space(a) => space::report(a, ctx),
        Command::Prune(a) => retention::prune(a, ctx),
        Command::Restore(a) => retention::restore(a, ctx),
    }
}

/// The running command's Ctrl-C token, and whether a command listens to it.
static INTERRUPT: std::sync::Mutex<Option<crate::compaction::CancelToken>> =
    std::sync::Mutex::new(None);

/// A command that can stop cleanly on Ctrl-C takes this token (a fresh one per
/// command); [`interrupt`] trips it.
pub fn interrupt_token() -> crate::compaction::CancelToken {
    let t = crate::compaction::CancelToken::new();
    if let Ok(mut g) = INTERRUPT.lock() {
        *g = Some(t.clone());
    }
    t
}

/// Ctrl-C, forwarded by the `lcm-tui` shim: trips the running command's token.
/// Returns false when no running command listens (the shim then exits at once).
pub fn interrupt() -> bool {
    match INTERRUPT.lock().ok().and_then(|g| g.clone()) {
        Some(t) => {
            t.cancel();
            true
        }
        None => false,
    }
}

/// Runs `lcm-tui` with `argv` (the arguments after the program name) on the process's
/// stdout and stderr; returns the exit code.
pub fn run(argv: Vec<String>) -> i32 {
    let mode = color_mode_hint(&argv);
    let mut out = Output::stdio(mode);
    let code = run_with(argv, &mut out);
    out.flush();
    code
}

/// `--color` read ahead of parsing, so clap's own messages follow it too.
fn color_mode_hint(argv: &[String]) -> ColorMode {
    let mut mode = ColorMode::Auto;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let v = match a.strip_prefix("--color=") {
            Some(v) => Some(v.to_owned()),
            None if a == "--color" => it.next().cloned(),
            None => None,
        };
        match v.as_deref() {
            Some("always") => mode = ColorMode::Always,
            Some("never") => mode = ColorMode::Never,
            Some("auto") => mode = ColorMode::Auto,
            _ => {}
        }
    }
    mode
}

/// Runs `lcm-tui` with `argv` on the given output; returns the exit code.
pub fn run_with(argv: Vec<String>, out: &mut Output) -> i32 {
    let args = std::iter::once("lcm-tui".to_owned()).chain(argv);
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let text = if (out.color_err && e.use_stderr()) || (out.color && !e.use_stderr()) {
                e.render().ansi().to_string()
            } else {
                e.render().to_string()
            };
            if e.use_stderr() {
                out.eline(text.trim_end());
            } else {
                out.line(text.trim_end());
            }
            return match e.exit_code() {
                0 => EXIT_OK,
                _ => EXIT_USAGE,
            };
        }
    };
    out.json = cli.global.json;
    let mut ctx = Ctx {
        out,
        global: cli.global,
        runtime: None,
    };
    let result = match cli.command {
        Some(_) if cli.tui != tui::TuiArgs::default() => Err(CliError::usage(
            "the browser's flags (--provider, --model, --prompt-dir, …) go after a subcommand's name, e.g. lcm-tui rewrite 642 --provider openai",
        )),
        Some(command) => dispatch(command, &mut ctx),
        None => dispatch(Command::Tui(cli.tui), &mut ctx),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            if ctx.global.json {
                let _ = ctx.out.json(&e.to_json());
            }
            ctx.out.error(&e);
            e.exit
        }
    };
    if let Ok(mut g) = INTERRUPT.lock() {
        *g = None;
    }
    if let Some(rt) = ctx.runtime.take() {
        rt.shutdown_timeout(std::time::Duration::from_secs(5));
    }
    ctx.out.flush();
    code
}

#[cfg(test)]
mod operator_tests;
#[cfg(test)]
mod tests;
