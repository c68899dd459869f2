//! `lcm-tui conversations` (every conversation, archived ones with their cause),
//! `lcm-tui archive <conversation_id>` and `lcm-tui unarchive <conversation_id>`:
//! an operator's view and control of session lifecycles. Archiving and unarchiving
//! write at once (one transaction each, and each undoes the other).

use clap::Args;

use super::error::{CliResult, EXIT_OK};
use super::operator;
use super::output::{thousands, Output, Style};
use super::Ctx;
use crate::lifecycle::{ArchiveParams, ArchiveResult};
use crate::store::browse::{self, ConversationOverview};
use crate::store::conversations::ArchiveCause;

/// Flags of `lcm-tui conversations`.
#[derive(Debug, Args)]
#[command(after_long_help = CONVERSATIONS_HELP)]
pub struct ConversationsArgs {
    /// Only archived conversations
    #[arg(long, conflicts_with = "active")]
    pub archived: bool,
    /// Only active conversations
    #[arg(long)]
    pub active: bool,
}

const CONVERSATIONS_HELP: &str = "\
Lists every conversation, most recently active first: id, session key (or id), stored
messages and tokens, and for an archived one its cause (manual-reset, new-session,
idle-reset, daily-reset, compaction-rollover, session-deleted, operator,
session-rollover) and time. --json prints the list as one JSON array.

Examples:
  lcm-tui conversations
  lcm-tui conversations --archived --json";

/// Flags of `lcm-tui archive`.
#[derive(Debug, Args)]
#[command(after_long_help = ARCHIVE_HELP)]
pub struct ArchiveArgs {
    /// The conversation to archive
    pub conversation_id: i64,
    /// Also start a fresh active conversation for its session key
    #[arg(long)]
    pub successor: bool,
}

const ARCHIVE_HELP: &str = "\
Archives a conversation (cause: operator): it is no longer the active conversation of
its session key, so the session's next turn starts from an empty context (with
--successor the fresh conversation is created now). Nothing is deleted: recall still
finds it, and `lcm-tui unarchive` makes it active again.

Example:
  lcm-tui archive 642";

/// Flags of `lcm-tui unarchive`.
#[derive(Debug, Args)]
#[command(after_long_help = UNARCHIVE_HELP)]
pub struct UnarchiveArgs {
    /// The conversation to make active again
    pub conversation_id: i64,
}

const UNARCHIVE_HELP: &str = "\
Makes an archived conversation the active one of its session key again; the
conversation that held the key, if any, is archived (cause: operator) in the same
transaction.

Example:
  lcm-tui unarchive 642";

/// Runs `lcm-tui conversations`.
pub fn conversations(a: ConversationsArgs, ctx: &mut Ctx) -> CliResult {
    let conn = operator::open_dry_run(ctx)?;
    let all = browse::conversations(&conn).map_err(super::error::CliError::from)?;
    let list: Vec<&ConversationOverview> = all
        .iter()
        .filter(|c| (!a.archived || c.archived) && (!a.active || !c.archived))
        .collect();
    if ctx.json() {
        ctx.out.json(&list)?;
        return Ok(EXIT_OK);
    }
    print_list(ctx.out, &list);
    Ok(EXIT_OK)
}

fn print_list(out: &mut Output, list: &[&ConversationOverview]) {
    out.line(&out.paint(
        Style::Bold,
        &format!(
            "{:>6}  {:<40} {:>7} {:>9}  {}",
            "ID", "SESSION", "MSGS", "STORED", "STATE"
        ),
    ));
    for c in list {
        let session = c.session_key.as_deref().unwrap_or(c.session_id.as_str());
        let state = if c.archived {
            format!(
                "archived: {}{}",
                c.archive_cause.as_deref().unwrap_or("unknown cause"),
                c.archived_at
                    .as_deref()
                    .map(|t| format!(" at {t} UTC"))
                    .unwrap_or_default()
            )
        } else {
            "active".to_owned()
        };
        let line = format!(
            "{:>6}  {:<40} {:>7} {:>8}t  {}",
            c.conversation_id,
            out.shown_cut(session, 40),
            c.message_count,
            thousands(c.stored_tokens),
            state
        );
        out.line(&line);
    }
    if list.is_empty() {
        out.line("no conversation");
    }
}

/// Runs `lcm-tui archive`.
pub fn archive(a: ArchiveArgs, ctx: &mut Ctx) -> CliResult {
    let path = ctx.db_path()?;
    let engine = operator::open_apply(ctx, operator::options(&path))?;
    let r = ctx.block_on(engine.archive_conversation(ArchiveParams {
        conversation_id: a.conversation_id,
        cause: Some(ArchiveCause::Operator),
        successor: Some(a.successor),
    }));
    operator::close(ctx, engine);
    report(ctx, &r??, "archived", "was already archived")
}

/// Runs `lcm-tui unarchive`.
pub fn unarchive(a: UnarchiveArgs, ctx: &mut Ctx) -> CliResult {
    let path = ctx.db_path()?;
    let engine = operator::open_apply(ctx, operator::options(&path))?;
    let r = ctx.block_on(engine.unarchive_conversation(a.conversation_id));
    operator::close(ctx, engine);
    report(ctx, &r??, "active again", "was already active")
}

fn report(ctx: &mut Ctx, r: &ArchiveResult, done: &str, noop: &str) -> CliResult {
    if ctx.json() {
        ctx.out.json(r)?;
        return Ok(EXIT_OK);
    }
    let mut line = if r.changed {
        format!("conversation {} {done}", r.conversation_id)
    } else {
        format!("conversation {} {noop}: nothing changed", r.conversation_id)
    };
    if let Some(s) = r.successor_id {
        line.push_str(&format!("; conversation {s} is the active one of its key"));
    }
    if let Some(d) = r.displaced_id {
        line.push_str(&format!(
            "; conversation {d}, which held its key, was archived (operator)"
        ));
    }
    ctx.out.line(&line);
    Ok(EXIT_OK)
}
