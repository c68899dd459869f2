//! What `doctor`, `dissolve` and `transplant` share: dry runs on a read-only
//! connection (the file's bytes cannot change, and an unmigrated file is refused
//! rather than migrated), `--apply` through the engine (which migrates first), the
//! summarizer flags, and a progress bar fed from the engine's progress callback.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use clap::Args;
use rusqlite::Connection;

use super::error::CliError;
use super::progress::Progress;
use super::{db, Ctx};
use crate::config::EngineOptions;
use crate::engine::Engine;
use crate::summarize::SummarizerChoice;

/// Opens the database for a dry run: read-only, with temporary tables allowed (the
/// doctor tokenizes message text into one to compare it with the index), and only
/// when it already has the current schema.
pub fn open_dry_run(ctx: &Ctx) -> Result<Connection, CliError> {
    let path = ctx.db_path()?;
    let conn = ctx.open_read_only(&path)?;
    crate::store::operator::allow_temp_tables(&conn)
        .map_err(|e| CliError::from(crate::error::LcmError::from(e)))?;
    crate::doctor::require_current_schema(&conn)?;
    Ok(conn)
}

/// A second connection for FTS5's `integrity-check` command, which SQLite treats as a
/// write statement although it writes nothing (the doctor rolls it back): read-write,
/// never creating the file. `None` when the file cannot be opened for writing; the
/// check then compares index rows only.
pub fn open_fts_probe(ctx: &Ctx) -> Option<Connection> {
    let path = ctx.db_path().ok()?;
    crate::store::operator::open_fts_probe(&path).ok()
}

/// Opens the engine on the database for `--apply`.
pub fn open_apply(ctx: &mut Ctx, opts: EngineOptions) -> Result<Engine, CliError> {
    ctx.open_engine(opts)
}

/// Engine options for a database path.
pub fn options(path: &Path) -> EngineOptions {
    db::engine_options(path)
}

/// Closes the engine, warning (not failing) when closing fails.
pub fn close(ctx: &mut Ctx, engine: Engine) {
    match ctx.block_on(engine.close()) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => ctx
            .out
            .warn(&format!("closing the database: {}", e.message)),
        Err(e) => ctx
            .out
            .warn(&format!("closing the database: {}", e.message)),
    }
}

/// Summarizer flags (used by `doctor --apply` to summarize broken summaries again).
#[derive(Debug, Clone, Default, Args)]
pub struct SummarizerArgs {
    /// Summarizer for repairs: anthropic, openai, openai-responses or offline [default: $LCM_TUI_SUMMARY_PROVIDER, $LCM_SUMMARY_PROVIDER, inferred from --model or the API keys, else offline]
    #[arg(long, value_name = "NAME", value_parser = ["anthropic", "openai", "openai-responses", "offline"])]
    pub provider: Option<String>,
    /// Summarizer model [default: $LCM_TUI_SUMMARY_MODEL, $LCM_SUMMARY_MODEL, the provider's default]
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Provider base URL [default: $LCM_TUI_SUMMARY_BASE_URL, $LCM_SUMMARY_BASE_URL]
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Prompt template override directory [default: ~/.config/lcm-tui/prompts]
    #[arg(long, value_name = "PATH")]
    pub prompt_dir: Option<String>,
    /// IANA timezone of the timestamps in source texts [default: $TZ, else UTC]
    #[arg(long, value_name = "ZONE", visible_alias = "tz")]
    pub timezone: Option<String>,
}

/// Engine options with the summarizer flags applied (see
/// [`SummarizerChoice::with_environment`]; offline when nothing names a provider),
/// and the summarizer's label.
pub fn summarizer_options(path: &Path, a: &SummarizerArgs) -> (EngineOptions, String) {
    let choice = SummarizerChoice::new(a.provider.clone(), a.model.clone(), a.base_url.clone())
        .with_environment();
    let label = choice
        .label()
        .unwrap_or_else(|| "offline (no summarizer configured)".to_owned());
    let mut opts = EngineOptions {
        summary_provider: Some("offline".to_owned()),
        prompt_dir: a.prompt_dir.clone(),
        timezone: a.timezone.clone(),
        ..options(path)
    };
    choice.apply(&mut opts);
    (opts, label)
}

/// A progress callback for the engine and the receiver the command draws from.
pub fn progress_channel() -> (
    crate::doctor::Progress,
    tokio::sync::mpsc::UnboundedReceiver<(String, u64, u64)>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let cb: crate::doctor::Progress = Arc::new(move |phase: &str, done, total| {
        let _ = tx.send((phase.to_owned(), done, total));
    });
    (cb, rx)
}

fn phase_label(phase: &str) -> &str {
    match phase {
        "check" => "checking conversations",
        "repair" => "repairing conversations",
        "resummarize" => "summarizing broken summaries again",
        other => other,
    }
}

/// Runs `fut` on the command's runtime, drawing one progress bar per phase on
/// stderr (only on a terminal, never with `--json`).
pub fn drive<T, F: Future<Output = T>>(
    ctx: &mut Ctx,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<(String, u64, u64)>,
    fut: F,
) -> Result<T, CliError> {
    let handle = ctx.handle()?;
    let json = ctx.json();
    let out = &*ctx.out;
    let mut bar: Option<(String, u64, Progress)> = None;
    let mut show = |(phase, done, total): (String, u64, u64)| {
        if json {
            return;
        }
        if bar.as_ref().is_none_or(|(p, _, _)| *p != phase) {
            bar = Some((
                phase.clone(),
                0,
                Progress::new(out, total, phase_label(&phase)),
            ));
        }
        if let Some((_, shown, b)) = bar.as_mut() {
            while *shown < done {
                b.inc();
                *shown += 1;
            }
        }
    };
    let r = handle.block_on(async {
        tokio::pin!(fut);
        loop {
            tokio::select! {
                biased;
                Some(ev) = rx.recv() => show(ev),
                r = &mut fut => break r,
            }
        }
    });
    Ok(r)
}
