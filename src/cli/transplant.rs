//! `lcm-tui transplant <source_conversation_id> <target_conversation_id> [--apply]`:
//! copies the source's context summaries, with everything beneath them, to the
//! front of the target's context list. The dry run (the default) opens the database
//! read-only and prints the plan.

use clap::Args;

use super::error::{CliResult, EXIT_OK};
use super::operator;
use super::output::{plural, thousands, Output, Style};
use super::Ctx;
use crate::dagops::transplant::{self, TransplantParams, TransplantPlan};

/// Flags of `lcm-tui transplant`.
#[derive(Debug, Args)]
#[command(after_long_help = TRANSPLANT_HELP)]
pub struct TransplantArgs {
    /// The conversation whose context summaries are copied
    pub source_conversation_id: i64,
    /// The conversation that receives them (in front of its own context items)
    pub target_conversation_id: i64,
    /// Print the plan without writing (the default)
    #[arg(long, conflicts_with = "apply")]
    pub dry_run: bool,
    /// Copy (one transaction)
    #[arg(long)]
    pub apply: bool,
}

const TRANSPLANT_HELP: &str = "\
Copies every summary of the source's context list, every summary beneath them, their
links, and their source messages and parts, under new ids (messages get new seqs after the
target's last). The copies of the context summaries go in front of the target's context
list in the source's order. Refused, with the list, when the target already holds the text
of a summary to copy (transplanted before).

Examples:
  lcm-tui transplant 553 642
  lcm-tui transplant 553 642 --apply";

/// Runs `lcm-tui transplant`.
pub fn run(a: TransplantArgs, ctx: &mut Ctx) -> CliResult {
    let p = TransplantParams {
        source_conversation_id: a.source_conversation_id,
        target_conversation_id: a.target_conversation_id,
        apply: a.apply,
    };
    let plan = if a.apply {
        let path = ctx.db_path()?;
        let engine = operator::open_apply(ctx, operator::options(&path))?;
        let r = ctx.block_on(engine.transplant(p));
        operator::close(ctx, engine);
        r??
    } else {
        let conn = operator::open_dry_run(ctx)?;
        transplant::plan(&conn, &p)?
    };
    if ctx.json() {
        ctx.out.json(&plan)?;
    } else {
        print(ctx.out, &plan);
    }
    Ok(EXIT_OK)
}

fn print(out: &mut Output, p: &TransplantPlan) {
    let head = format!(
        "Transplant: conversation {} → conversation {}",
        p.source_conversation_id, p.target_conversation_id
    );
    out.line(&out.paint(Style::Bold, &head));
    out.line("");
    out.line(&format!(
        "Source context summaries ({}):",
        p.context_summaries.len()
    ));
    for s in &p.context_summaries {
        out.line(&format!(
            "  {}  {:<9}  d{}  {:>6}t  {}",
            s.summary_id,
            s.kind,
            s.depth,
            thousands(s.token_count),
            out.paint(Style::Dim, &format!("\"{}\"", out.shown(&s.preview)))
        ));
    }
    out.line("");
    out.line(&format!(
        "Summaries to copy: {} ({} in the context list, {} beneath)",
        p.summary_count,
        p.context_summaries.len(),
        p.summary_count - p.context_summaries.len()
    ));
    for d in &p.summaries_by_depth {
        out.line(&format!("  d{}: {}", d.depth, d.count));
    }
    out.line(&format!(
        "Messages to copy: {} ({} parts)",
        p.message_count, p.part_count
    ));
    if !p.file_ids.is_empty() {
        out.line(&format!(
            "Large files mentioned: {} (they stay registered to conversation {})",
            p.file_ids.len(),
            p.source_conversation_id
        ));
    }
    out.line("");
    out.line(&format!(
        "Target context now: {} ({} + {})",
        plural(
            p.target_summary_items + p.target_message_items,
            "item",
            "items"
        ),
        plural(p.target_summary_items, "summary", "summaries"),
        plural(p.target_message_items, "message", "messages")
    ));
    out.line(&format!(
        "After: {} prepended, about {} tokens more in the target's context",
        plural(p.context_summaries.len(), "item", "items"),
        thousands(p.token_overhead)
    ));
    out.line("");
    if p.applied {
        out.line(&out.paint(Style::Green, "Done: copied in one transaction."));
        for m in &p.mapping {
            out.line(&format!("  {} → {}", m.from, m.to));
        }
        if let Some((a, b)) = p.seq_range {
            out.line(&format!("Copied messages: seq {a}..{b}"));
        }
        if let Some(n) = p.messages_indexed {
            out.line(&format!(
                "Full-text index: {n} of {} copied messages indexed",
                p.message_count
            ));
        }
    } else {
        out.line(&out.paint(
            Style::Yellow,
            "Dry run: nothing was written. Run with --apply to copy.",
        ));
    }
}
