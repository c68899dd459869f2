//! `lcm-tui prune [--apply]` and `lcm-tui restore <archive>`: retention on demand
//! ([`crate::retention`]).

use std::path::PathBuf;

use clap::Args;

use super::error::{CliError, CliResult, EXIT_OK};
use super::operator;
use super::output::thousands;
use super::Ctx;
use crate::retention::policy::PruneKind;
use crate::retention::{PruneParams, RetentionPolicy};

/// Flags of `lcm-tui prune`.
#[derive(Debug, Args)]
#[command(after_long_help = PRUNE_HELP)]
pub struct PruneArgs {
    /// Archive and remove (without it: a dry run listing what would be)
    #[arg(long)]
    pub apply: bool,
    /// The policies, as the plugin's `retention` option (a JSON array)
    #[arg(long, value_name = "JSON")]
    pub retention: Option<String>,
    /// One policy from flags: the session-key glob
    #[arg(long = "match", value_name = "GLOB")]
    pub pattern: Option<String>,
    /// With --match: archive, then remove, conversations idle more than DAYS
    #[arg(long, value_name = "DAYS", requires = "pattern")]
    pub prune_after_days: Option<f64>,
    /// With --match: archive conversations idle more than DAYS
    #[arg(long, value_name = "DAYS", requires = "pattern")]
    pub archive_after_days: Option<f64>,
    /// Where archives go [default: `archive` beside the large-files directory]
    #[arg(long, value_name = "DIR")]
    pub archive_dir: Option<PathBuf>,
    /// Soft cap on the database: over it, prunable conversations go oldest first
    #[arg(long, value_name = "BYTES")]
    pub max_database_bytes: Option<i64>,
    /// Conversations per run at most
    #[arg(long, default_value_t = 1000)]
    pub limit: usize,
}

const PRUNE_HELP: &str = "\
A conversation matched by a policy (session-key glob, first match wins) and idle for more
than its pruneAfterDays is archived, then removed: one zstd-compressed JSONL file per
month of messages plus the conversation's other rows, and a manifest with row counts and
each file's sha256, all fsynced before the removal commits. archiveAfterDays only writes
the archive. `lcm-tui restore <archive>` puts a conversation back byte for byte.

Examples:
  lcm-tui prune --match 'agent:*:cron:**' --prune-after-days 14            # dry run
  lcm-tui prune --match 'agent:*:cron:**' --prune-after-days 14 --apply
  lcm-tui prune --retention '[{\"match\":\"agent:*:heartbeat\",\"pruneAfterDays\":2}]' --apply";

/// Flags of `lcm-tui restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The archive: its directory or its manifest.json
    pub archive: PathBuf,
}

/// Runs `lcm-tui prune`.
pub fn prune(a: PruneArgs, ctx: &mut Ctx) -> CliResult {
    let path = ctx.db_path()?;
    let mut policies: Vec<RetentionPolicy> = match &a.retention {
        Some(json) => serde_json::from_str(json)
            .map_err(|e| CliError::usage(format!("--retention is not a list of policies: {e}")))?,
        None => Vec::new(),
    };
    if let Some(pattern) = &a.pattern {
        policies.push(RetentionPolicy {
            pattern: pattern.clone(),
            archive_after_days: a.archive_after_days,
            prune_after_days: a.prune_after_days,
        });
    }
    if policies.is_empty() && a.max_database_bytes.is_none() {
        return Err(CliError::usage(
            "give the policies: --match GLOB --prune-after-days N, or --retention JSON",
        ));
    }
    let mut opts = operator::options(&path);
    opts.retention = policies;
    opts.archive_dir = a.archive_dir.as_ref().map(|p| p.display().to_string());
    opts.max_database_bytes = a.max_database_bytes;
    let engine = operator::open_apply(ctx, opts)?;
    let params = PruneParams {
        dry_run: Some(!a.apply),
        limit: Some(a.limit.max(1)),
        now: None,
    };
    let report = ctx.block_on(engine.prune(params));
    operator::close(ctx, engine);
    let report = report??;
    if ctx.json() {
        ctx.out.json(&report)?;
        return Ok(EXIT_OK);
    }
    let verb = |k: PruneKind, done: bool| match (k, done, a.apply) {
        (PruneKind::Prune, true, _) => "pruned",
        (PruneKind::Archive, true, _) => "archived",
        (PruneKind::Prune, false, false) => "would prune",
        (PruneKind::Archive, false, false) => "would archive",
        (_, false, true) => "skipped",
    };
    for x in &report.actions {
        ctx.out.line(&format!(
            "{:>13}  c{}  {}  {} messages, idle {:.1} days  → {}",
            verb(x.action, x.done),
            x.conversation_id,
            ctx.out.shown(&x.session),
            thousands(x.messages),
            x.idle_days,
            ctx.out.shown(x.archive.as_deref().unwrap_or("-"))
        ));
        if let Some(s) = &x.skipped {
            ctx.out.line(&format!("               {s}"));
        }
    }
    if let Some(w) = &report.cap_warning {
        ctx.out.warn(w);
    }
    ctx.out.line(&format!(
        "{} conversation(s){}; {} messages removed, {} bytes given back{}",
        report.actions.len(),
        if a.apply {
            ""
        } else {
            " (dry run: nothing changed; --apply does it)"
        },
        thousands(report.messages_removed),
        thousands(report.bytes_reclaimed),
        if report.remaining > 0 {
            format!("; {} more due (run again)", report.remaining)
        } else {
            String::new()
        }
    ));
    Ok(EXIT_OK)
}

/// Runs `lcm-tui restore`.
pub fn restore(a: RestoreArgs, ctx: &mut Ctx) -> CliResult {
    let path = ctx.db_path()?;
    let engine = operator::open_apply(ctx, operator::options(&path))?;
    let params = crate::engine::RestoreArchiveParams {
        path: a.archive.display().to_string(),
    };
    let report = ctx.block_on(engine.restore_archive(params));
    operator::close(ctx, engine);
    let report = report??;
    if ctx.json() {
        ctx.out.json(&report)?;
    } else {
        ctx.out.line(&format!(
            "restored conversation {} ({} messages) from {}{}",
            report.conversation_id,
            thousands(report.messages),
            ctx.out.shown(&report.archive),
            if report.active {
                ""
            } else {
                " (inactive: its session has another conversation now)"
            }
        ));
    }
    Ok(EXIT_OK)
}
