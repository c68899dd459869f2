//! `lcm-tui backfill <session.jsonl>`: imports an OpenClaw / pi session transcript
//! into the database (the leaf path's messages, as `bootstrap` does), optionally
//! compacting it. The dry run (the default) reads the file and reports what would
//! be imported without touching the database.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use serde::Serialize;

use super::error::{CliError, CliResult, EXIT_FAILURE, EXIT_OK};
use super::operator::{self, SummarizerArgs};
use super::output::{plural, thousands, Output, Style};
use super::progress::Progress;
use super::{db, Ctx};
use crate::compaction::{CompactParams, CompactResult, Hooks, Mode};
use crate::store::conversations::{self, SessionRef};
use crate::transcript::{self, BootstrapParams, BootstrapResult, Source, Survey};

/// Flags of `lcm-tui backfill`.
#[derive(Debug, Args)]
#[command(after_long_help = BACKFILL_HELP)]
pub struct BackfillArgs {
    /// The session transcript (JSONL: a header line, then one entry per line)
    pub file: PathBuf,
    /// Session id of the conversation [default: the id in the file's header]
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// Stable session key of the conversation
    #[arg(long, value_name = "KEY")]
    pub session_key: Option<String>,
    /// Report what would be imported without writing (the default)
    #[arg(long, conflicts_with = "apply")]
    pub dry_run: bool,
    /// Import (one transaction; creates the database file when it does not exist)
    #[arg(long)]
    pub apply: bool,
    /// After importing, compact the conversation (a forced sweep under --budget)
    #[arg(long, requires = "apply")]
    pub compact: bool,
    /// Token budget the compaction works toward
    #[arg(long, value_name = "N", default_value_t = 128_000,
          value_parser = clap::value_parser!(i64).range(1..))]
    pub budget: i64,
    /// Summarizer flags for --compact.
    #[command(flatten)]
    pub summarizer: SummarizerArgs,
}

const BACKFILL_HELP: &str = "\
Reads the file streaming (it is never loaded whole). The header line and entries that are
not messages (model changes, labels, custom state, compaction and branch markers) are
skipped; when the file branches, the path from its newest entry back to the root is the
conversation. With --apply the messages are imported in one transaction into the
session's conversation (created when new; an existing one gets only what it lacks, matched
by entry id, then by content), then --compact summarizes it. A dry run prints the counts.

Examples:
  lcm-tui backfill ~/.openclaw/sessions/abc.jsonl
  lcm-tui backfill abc.jsonl --apply --compact --budget 100000 --provider anthropic";

/// What `backfill` reports.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    file: String,
    session_id: String,
    session_key: Option<String>,
    dry_run: bool,
    transcript: Survey,
    /// The session's conversation before the run, when the database has one.
    existing_conversation_id: Option<i64>,
    bootstrap: Option<BootstrapResult>,
    compaction: Option<CompactResult>,
}

/// Runs `lcm-tui backfill`.
pub fn run(a: BackfillArgs, ctx: &mut Ctx) -> CliResult {
    let source = Source::File(a.file.clone());
    let survey = source.survey().map_err(CliError::from)?;
    let session_id = match a.session_id.clone() {
        Some(id) => id,
        None => transcript::header_session_id(&a.file)?.ok_or_else(|| {
            CliError::usage("the file has no session header with an id; pass --session-id")
        })?,
    };
    let session = SessionRef {
        session_id: session_id.clone(),
        session_key: a.session_key.clone(),
    };
    let (path, _) = db::db_path(ctx.global.db.as_deref());
    let existing = existing_conversation(ctx, &path, &session)?;
    let mut report = Report {
        file: a.file.display().to_string(),
        session_id,
        session_key: a.session_key.clone(),
        dry_run: !a.apply,
        transcript: survey,
        existing_conversation_id: existing,
        bootstrap: None,
        compaction: None,
    };
    if a.apply {
        apply(ctx, &a, &path, &mut report)?;
    }
    if ctx.json() {
        ctx.out.json(&report)?;
    } else {
        print(ctx.out, &report);
    }
    let failed = report.compaction.as_ref().is_some_and(|c| !c.ok);
    Ok(if failed { EXIT_FAILURE } else { EXIT_OK })
}

fn existing_conversation(
    ctx: &Ctx,
    path: &Path,
    session: &SessionRef,
) -> Result<Option<i64>, CliError> {
    if !path.is_file() {
        return Ok(None);
    }
    let conn = ctx.open_read_only(path)?;
    Ok(conversations::find(&conn, session)?.map(|c| c.conversation_id))
}

fn apply(
    ctx: &mut Ctx,
    a: &BackfillArgs,
    path: &Path,
    report: &mut Report,
) -> Result<(), CliError> {
    let (opts, _) = operator::summarizer_options(path, &a.summarizer);
    let engine = ctx.block_on(crate::engine::Engine::open(opts))??;
    let bar = Arc::new(Progress::new(
        ctx.out,
        report.transcript.messages as u64,
        "importing",
    ));
    let tick = bar.clone();
    let params = BootstrapParams {
        session_id: report.session_id.clone(),
        session_key: report.session_key.clone(),
        session_file: Some(a.file.to_string_lossy().into_owned()),
        transcript_entries: None,
        transcript_tail: false,
        max_import_tokens: None,
        skip_heartbeat_turns: false,
    };
    let imported = ctx.block_on(engine.bootstrap(params, Some(Arc::new(move |_, _| tick.inc()))));
    bar.finish();
    let imported = match imported {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            operator::close(ctx, engine);
            return Err(e.into());
        }
        Err(e) => {
            operator::close(ctx, engine);
            return Err(e);
        }
    };
    if a.compact {
        report.compaction = Some(compact(
            ctx,
            &engine,
            a,
            &report.session_id,
            report.session_key.clone(),
        )?);
    }
    report.bootstrap = Some(imported);
    operator::close(ctx, engine);
    Ok(())
}

fn compact(
    ctx: &mut Ctx,
    engine: &crate::engine::Engine,
    a: &BackfillArgs,
    session_id: &str,
    session_key: Option<String>,
) -> Result<CompactResult, CliError> {
    let hooks = Hooks::default();
    let p = CompactParams {
        session_id: session_id.to_owned(),
        session_key,
        token_budget: a.budget,
        mode: Mode::Sweep,
        force: true,
        current_token_count: None,
        custom_instructions: None,
        target_tokens: None,
        overrides: None,
    };
    Ok(ctx.block_on(engine.compact(p, hooks))??)
}

fn print(out: &mut Output, r: &Report) {
    let t = &r.transcript;
    let head = if r.dry_run {
        format!("Backfill (dry run): {}", r.file)
    } else {
        format!("Backfill: {}", r.file)
    };
    out.line(&out.paint(Style::Bold, &head));
    out.line(&format!("  session id    {}", r.session_id));
    if let Some(k) = &r.session_key {
        out.line(&format!("  session key   {k}"));
    }
    let roles: Vec<String> = t.roles.iter().map(|(k, v)| format!("{k} {v}")).collect();
    out.line(&format!(
        "  messages      {} on the leaf path ({})",
        thousands(t.messages as i64),
        roles.join(", ")
    ));
    out.line(&format!("  tokens        {}", thousands(t.tokens)));
    out.line(&format!(
        "  skipped       {} (other entry types, abandoned branches, unreadable lines)",
        plural(t.skipped_entries, "entry", "entries")
    ));
    if t.invalid_messages > 0 {
        out.line(&format!(
            "  invalid       {} without a role (the import would refuse the file)",
            plural(t.invalid_messages, "message", "messages")
        ));
    }
    let conversation = match r.existing_conversation_id {
        Some(id) => format!("conversation {id} exists: only what it lacks is imported"),
        None if r.dry_run => "a new conversation would be created".to_owned(),
        None => "a new conversation".to_owned(),
    };
    out.line(&format!("  conversation  {conversation}"));
    if let Some(b) = &r.bootstrap {
        out.line(&format!(
            "  imported      {} into conversation {} ({})",
            plural(b.imported_messages, "message", "messages"),
            b.conversation_id.unwrap_or(0),
            b.reason
        ));
    }
    if let Some(c) = &r.compaction {
        out.line(&format!(
            "  compaction    {}: {} passes, {}t → {}t",
            c.reason,
            c.passes.len(),
            thousands(c.tokens_before),
            thousands(c.tokens_after)
        ));
    }
    out.line("");
    if r.dry_run {
        out.line(&out.paint(
            Style::Yellow,
            "Dry run: nothing was written. Run with --apply to import.",
        ));
    }
}
