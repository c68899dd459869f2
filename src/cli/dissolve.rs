//! `lcm-tui dissolve <conversation_id> --summary <id> [--apply] [--keep]`: replaces
//! a summary of the context list by what it was made from. The dry run (the default)
//! opens the database read-only and prints the plan.

use clap::Args;

use super::error::{CliResult, EXIT_OK};
use super::operator;
use super::output::{plural, signed_thousands, thousands, Output, Style};
use super::Ctx;
use crate::dagops::dissolve::{self, DissolveParams, DissolvePlan};

/// Flags of `lcm-tui dissolve`.
#[derive(Debug, Args)]
#[command(after_long_help = DISSOLVE_HELP)]
pub struct DissolveArgs {
    /// The conversation whose context list holds the summary
    pub conversation_id: i64,
    /// The summary to dissolve (a context item)
    #[arg(long, value_name = "ID", visible_alias = "summary-id")]
    pub summary: String,
    /// Print the plan without writing (the default)
    #[arg(long, conflicts_with = "apply")]
    pub dry_run: bool,
    /// Dissolve it (one transaction)
    #[arg(long)]
    pub apply: bool,
    /// Keep the summary row (unreferenced, with its links) instead of deleting it
    #[arg(long)]
    pub keep: bool,
}

const DISSOLVE_HELP: &str = "\
A condensed summary comes back as its child summaries, in link order; a leaf as its
source messages. Later items shift and ordinals stay 0..n-1. By default the dissolved
summary, its links and its full-text rows are deleted; --keep keeps the row. A summary
that is not a context item is an error naming the summary that holds it.

Examples:
  lcm-tui dissolve 642 --summary sum_f8ee4e7a5a7b7090
  lcm-tui dissolve 642 --summary sum_f8ee4e7a5a7b7090 --apply";

/// Runs `lcm-tui dissolve`.
pub fn run(a: DissolveArgs, ctx: &mut Ctx) -> CliResult {
    let p = DissolveParams {
        conversation_id: a.conversation_id,
        summary_id: a.summary.trim().to_owned(),
        apply: a.apply,
        keep: a.keep,
    };
    let plan = if a.apply {
        let path = ctx.db_path()?;
        let engine = operator::open_apply(ctx, operator::options(&path))?;
        let r = ctx.block_on(engine.dissolve(p));
        operator::close(ctx, engine);
        r??
    } else {
        let conn = operator::open_dry_run(ctx)?;
        dissolve::plan(&conn, &p)?
    };
    if ctx.json() {
        ctx.out.json(&plan)?;
    } else {
        print(ctx.out, &plan);
    }
    Ok(EXIT_OK)
}

fn print(out: &mut Output, p: &DissolvePlan) {
    let t = &p.target;
    let head = format!(
        "Dissolve {} ({}, d{}, {}t) at context item {} of conversation {}",
        t.summary_id,
        t.kind,
        t.depth,
        thousands(t.token_count),
        t.ordinal.unwrap_or(0),
        p.conversation_id
    );
    out.line(&out.paint(Style::Bold, &head));
    let what = if p
        .restored
        .first()
        .is_some_and(|r| r.item_type == crate::store::messages::ContextItemType::Message)
    {
        "source messages"
    } else {
        "child summaries"
    };
    out.line(&format!("Restores {} {what}:", p.restored.len()));
    for (i, r) in p.restored.iter().enumerate() {
        let name = match (&r.summary_id, r.message_id) {
            (Some(s), _) => format!(
                "{s} ({}, d{})",
                r.kind.map_or("?", |k| k.as_str()),
                r.depth.unwrap_or(0)
            ),
            (_, Some(m)) => format!(
                "message {m} (seq {}, {})",
                r.seq.unwrap_or(0),
                r.role.as_deref().unwrap_or("?")
            ),
            _ => String::new(),
        };
        let at = t.ordinal.unwrap_or(0) + i as i64;
        out.line(&format!(
            "  [{at}] {name} {}t  {}",
            thousands(r.token_count),
            out.paint(Style::Dim, &out.shown(&r.preview))
        ));
    }
    out.line("");
    out.line(&format!(
        "Context: {} → {}, {}t → {}t ({}t)",
        p.context_items_before,
        plural(p.context_items_after, "item", "items"),
        thousands(p.context_tokens_before),
        thousands(p.context_tokens_after),
        signed_thousands(p.token_delta)
    ));
    if p.shift == 0 {
        out.line("Shift: no item moves.");
    } else {
        out.line(&format!(
            "Shift: {} item(s) after ordinal {} move by {}",
            p.items_shifted,
            t.ordinal.unwrap_or(0),
            signed_thousands(p.shift)
        ));
    }
    let fate = if p.keep {
        "The summary row is kept, unreferenced, with its links."
    } else {
        "The summary row, its links and its full-text rows are deleted (--keep keeps the row)."
    };
    out.line(fate);
    out.line("");
    let done = if p.applied {
        out.paint(Style::Green, "Done: dissolved in one transaction.")
    } else {
        out.paint(
            Style::Yellow,
            "Dry run: nothing was written. Run with --apply to dissolve.",
        )
    };
    out.line(&done);
}
