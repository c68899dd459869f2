//! `lcm-tui status [--session ID] [--session-key KEY] [--budget N] [--json]`: the
//! database (path, size, largest tables, conversations) and one session's context,
//! as `engine.status` and the chat's `/lcm status` report them.

use clap::Args;

use super::error::{CliResult, EXIT_OK};
use super::operator;
use super::Ctx;
use crate::counts::thousands;
use crate::status::{EngineStatus, StatusParams};

/// Flags of `lcm-tui status`.
#[derive(Debug, Args)]
#[command(after_long_help = STATUS_HELP)]
pub struct StatusArgs {
    /// The session to report on (runtime session id)
    #[arg(long)]
    pub session: Option<String>,
    /// The session's stable key (found first)
    #[arg(long)]
    pub session_key: Option<String>,
    /// The model's context budget in tokens (gives the threshold and whether compaction is due)
    #[arg(long)]
    pub budget: Option<i64>,
    /// Skip the per-table sizes (they read every page of the file)
    #[arg(long)]
    pub no_tables: bool,
}

const STATUS_HELP: &str = "\
Reads only. The per-table sizes come from SQLite's dbstat table and read every page
of the file (a few seconds per GB); --no-tables skips them. The last compaction is
what a running engine remembers: from this command, only the time of the newest
summary is known.

Examples:
  lcm-tui status
  lcm-tui status --session-key agent:main:main --budget 200000 --json";

/// Runs `lcm-tui status`.
pub fn run(a: StatusArgs, ctx: &mut Ctx) -> CliResult {
    let path = ctx.db_path()?;
    let engine = operator::open_apply(ctx, operator::options(&path))?;
    let params = StatusParams {
        session_id: a.session,
        session_key: a.session_key,
        token_budget: a.budget,
        context_threshold: None,
        tables: Some(!a.no_tables),
    };
    let result = ctx.block_on(engine.status(params));
    operator::close(ctx, engine);
    let status = result??;
    if ctx.json() {
        ctx.out.json(&status)?;
    } else {
        for line in render(&status).lines() {
            let shown = ctx.out.shown(line).into_owned();
            ctx.out.line(&shown);
        }
    }
    Ok(EXIT_OK)
}

/// Bytes as people read them (`1.4 MiB`).
pub fn bytes(n: i64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// The status as plain text lines.
pub fn render(s: &EngineStatus) -> String {
    let mut out = String::new();
    let mut line = |t: String| {
        out.push_str(&t);
        out.push('\n');
    };
    let d = &s.database;
    line(format!("Database {}", d.path));
    line(format!(
        "  {} ({} WAL), {} pages of {} B, {} free",
        bytes(d.file_bytes),
        bytes(d.wal_bytes),
        thousands(d.page_count),
        thousands(d.page_size),
        thousands(d.freelist_pages)
    ));
    if let Some(t) = &d.largest_tables {
        let list: Vec<String> = t
            .iter()
            .map(|t| format!("{} {}", t.name, bytes(t.bytes)))
            .collect();
        line(format!("  largest: {}", list.join(", ")));
    }
    if d.unindexed_messages > 0 {
        line(format!(
            "  {} messages waiting for the full-text index",
            thousands(d.unindexed_messages)
        ));
    }
    line(format!(
        "Conversations: {} active, {} archived",
        thousands(s.conversations.active),
        thousands(s.conversations.archived)
    ));
    let Some(x) = &s.session else {
        return out;
    };
    let Some(id) = x.conversation_id else {
        line("Session: nothing stored yet".to_owned());
        return out;
    };
    line(format!("Session (conversation {id})"));
    let budget = match (x.token_budget, x.threshold) {
        (Some(b), Some(t)) => format!(
            " of {} budget ({:.0}%; threshold {} at {})",
            thousands(b),
            100.0 * x.context_tokens as f64 / b as f64,
            thousands(t),
            x.context_threshold
        ),
        _ => String::new(),
    };
    line(format!(
        "  context: {} items, {} tokens{budget}",
        thousands(x.context_items),
        thousands(x.context_tokens)
    ));
    line(format!(
        "  stored: {} messages ({} tokens)",
        thousands(x.messages),
        thousands(x.message_tokens)
    ));
    if x.summaries_by_depth.is_empty() {
        line("  summaries: none".to_owned());
    } else {
        let list: Vec<String> = x
            .summaries_by_depth
            .iter()
            .map(|c| {
                format!(
                    "d{} {} ({} in context)",
                    c.depth,
                    thousands(c.count),
                    thousands(c.in_context)
                )
            })
            .collect();
        line(format!("  summaries: {}", list.join(", ")));
    }
    match (&x.last_compaction, &x.newest_summary_at) {
        (Some(c), _) => line(format!(
            "  last compaction {}: {} → {} tokens, {} summaries, {} summarizer calls ({} → {} tokens){}",
            c.at,
            thousands(c.tokens_before),
            thousands(c.tokens_after),
            thousands(c.passes),
            thousands(c.summarizer_calls),
            thousands(c.tokens_in),
            thousands(c.tokens_out),
            if c.fallbacks > 0 { format!(", {} fallbacks", thousands(c.fallbacks)) } else { String::new() }
        )),
        (None, Some(at)) => line(format!("  newest summary written {at} UTC (no compaction since start)")),
        (None, None) => line("  no compaction yet".to_owned()),
    }
    let p = &x.pending;
    let mut pending = Vec::new();
    if p.compactions_running > 0 {
        pending.push(format!(
            "{} compaction running",
            thousands(p.compactions_running)
        ));
    }
    if p.compaction_due {
        pending.push("compaction due (over threshold)".to_owned());
    }
    if p.context_gap {
        pending.push("a context gap to close".to_owned());
    }
    line(format!(
        "  pending: {}",
        if pending.is_empty() {
            "nothing".to_owned()
        } else {
            pending.join(", ")
        }
    ));
    out
}
