//! `lcm-tui doctor [conversation_id] [--all] [--apply]`: checks the store's
//! invariants and lists broken summaries. The dry run (the default) opens the
//! database read-only and calls no summarizer; `--apply` repairs what can be repaired
//! without loss and summarizes broken summaries again, bottom-up. Exit 0 when nothing
//! is (left) to repair, 1 otherwise.

use std::sync::Arc;

use clap::{ArgGroup, Args};

use super::error::{CliError, CliResult, EXIT_FAILURE, EXIT_OK};
use super::operator::{self, SummarizerArgs};
use super::output::{thousands, Output, Style};
use super::Ctx;
use crate::doctor::{
    self, BrokenSummary, DoctorParams, DoctorReport, Findings, ResummaryStatus, Violation,
};

/// Flags of `lcm-tui doctor`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("scope").required(true).args(["conversation_id", "all"])))]
#[command(after_long_help = DOCTOR_HELP)]
pub struct DoctorArgs {
    /// The conversation to check
    pub conversation_id: Option<i64>,
    /// Check every conversation
    #[arg(long)]
    pub all: bool,
    /// Report without writing (the default)
    #[arg(long, conflicts_with = "apply")]
    pub dry_run: bool,
    /// Repair what can be repaired without loss, then summarize broken summaries again
    #[arg(long)]
    pub apply: bool,
    /// Summarizer for --apply.
    #[command(flatten)]
    pub summarizer: SummarizerArgs,
}

const DOCTOR_HELP: &str = "\
Checks (always, read-only): SQLite's integrity check; context ordinals 0..n-1; links and
context items pointing at existing rows of the same conversation; no cycle; every message
covered exactly once by the context list or a summary reachable from it; each summary's
time range, descendant and token counts, depth and file ids equal to their recomputation;
full-text rows in sync with their tables. Broken summaries: text ending with the engine's
[Truncated from N tokens] / [Capped …] marker or the reference plugin's fallback markers,
listed in repair order (leaves first). The dry run calls no summarizer.

--apply: one transaction restores lost links (when the holder's stored counts prove them)
or puts uncovered rows back into the context list, recomputes columns, renumbers
ordinals and rewrites full-text rows; no message is ever deleted. Then each broken summary
is summarized again with the current prompts (its own transaction); a summarizer error
stops there and exits 1.

Exit codes: 0 nothing (left) to repair, 1 a violation or broken summary remains (or the
job failed), 2 bad usage.

Examples:
  lcm-tui doctor 642
  lcm-tui doctor --all --json
  lcm-tui doctor 642 --apply --provider anthropic";

/// Runs `lcm-tui doctor`.
pub fn run(a: DoctorArgs, ctx: &mut Ctx) -> CliResult {
    let (report, label) = if a.apply {
        apply(&a, ctx)?
    } else {
        (dry_run(&a, ctx)?, None)
    };
    if ctx.json() {
        ctx.out.json(&report)?;
    } else {
        print(ctx.out, &report, label.as_deref());
    }
    Ok(if report.ok { EXIT_OK } else { EXIT_FAILURE })
}

fn dry_run(a: &DoctorArgs, ctx: &mut Ctx) -> Result<DoctorReport, CliError> {
    let conn = operator::open_dry_run(ctx)?;
    let probe = operator::open_fts_probe(ctx);
    let features = doctor::features_of(&conn)?;
    let (ids, scope) = match a.conversation_id {
        Some(id) => {
            doctor::require_conversation(&conn, id)?;
            (vec![id], Some(id))
        }
        None => (doctor::conversation_ids(&conn)?, None),
    };
    let (cb, rx) = operator::progress_channel();
    let list = ids.clone();
    let job = ctx.handle()?.spawn_blocking(move || {
        doctor::check_with(&conn, probe.as_ref(), features, &list, scope, Some(&cb))
    });
    let found = operator::drive(ctx, rx, job)?
        .map_err(|e| CliError::failure(format!("the check stopped: {e}")))??;
    Ok(DoctorReport::dry_run(ids, found))
}

fn apply(a: &DoctorArgs, ctx: &mut Ctx) -> Result<(DoctorReport, Option<String>), CliError> {
    let path = ctx.db_path()?;
    let (opts, label) = operator::summarizer_options(&path, &a.summarizer);
    let engine = Arc::new(operator::open_apply(ctx, opts)?);
    let params = DoctorParams {
        conversation_id: a.conversation_id,
        all: a.all,
        apply: true,
    };
    let (cb, rx) = operator::progress_channel();
    let e = engine.clone();
    let result = operator::drive(ctx, rx, async move { e.doctor(params, Some(cb)).await });
    if let Ok(engine) = Arc::try_unwrap(engine) {
        operator::close(ctx, engine);
    }
    Ok((result??, Some(label)))
}

fn kind_name(v: &Violation) -> String {
    serde_json::to_value(v.kind)
        .ok()
        .and_then(|k| k.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn print_violations(out: &mut Output, v: &[Violation]) {
    if v.is_empty() {
        out.line(&format!("  {} no violations", out.paint(Style::Green, "✓")));
        return;
    }
    for x in v {
        let mark = out.paint(Style::Red, "✗");
        let note = if x.repairable {
            String::new()
        } else {
            out.paint(Style::Yellow, " (not repairable without loss)")
        };
        let message = out.shown(&x.message);
        out.line(&format!("  {mark} [{}] {message}{note}", kind_name(x)));
    }
}

fn print_broken(out: &mut Output, b: &[BrokenSummary]) {
    if b.is_empty() {
        out.line(&format!("  {} none", out.paint(Style::Green, "✓")));
        return;
    }
    for s in b {
        let at = match (s.context_ordinal, s.reachable) {
            (Some(o), _) => format!("context item {o}"),
            (None, true) => "under a context summary".to_owned(),
            (None, false) => "unreachable".to_owned(),
        };
        out.line(&format!(
            "  {:>3}. conversation {}  {}  {} d{}  {}t  {} chars  {at}  {}",
            s.order,
            s.conversation_id,
            s.summary_id,
            s.kind,
            s.depth,
            thousands(s.token_count),
            thousands(s.chars as i64),
            out.paint(Style::Dim, &s.marker_text)
        ));
    }
}

fn print_findings(out: &mut Output, f: &Findings) {
    out.line(&out.paint(Style::Bold, "Integrity"));
    print_violations(out, &f.violations);
    out.line("");
    out.line(&out.paint(Style::Bold, "Broken summaries (repair order, leaves first)"));
    print_broken(out, &f.broken_summaries);
}

fn scope_line(r: &DoctorReport) -> String {
    match r.conversation_ids.as_slice() {
        [one] if r.conversation_ids.len() == 1 => format!("conversation {one}"),
        ids => format!("{} conversations", ids.len()),
    }
}

fn print(out: &mut Output, r: &DoctorReport, label: Option<&str>) {
    let mode = match (r.applied, label) {
        (true, Some(l)) => format!("apply (summarizer: {l})"),
        (true, None) => "apply".to_owned(),
        _ => "dry run: nothing is written (--apply repairs)".to_owned(),
    };
    out.line(&out.paint(Style::Bold, &format!("Doctor — {} — {mode}", scope_line(r))));
    out.line("");
    print_findings(out, &r.found);
    if r.applied {
        print_applied(out, r);
    }
    out.line("");
    let summary = match (&r.remaining, r.ok) {
        (_, true) if r.applied => out.paint(Style::Green, "OK: everything found was repaired."),
        (_, true) => out.paint(Style::Green, "OK: no violation, no broken summary."),
        (Some(rem), false) => out.paint(
            Style::Red,
            &format!(
                "Not OK: {} violation(s) and {} broken summary(ies) remain.",
                rem.violations.len(),
                rem.broken_summaries.len()
            ),
        ),
        (None, false) => out.paint(
            Style::Red,
            &format!(
                "Not OK: {} violation(s), {} broken summary(ies). Run with --apply to repair.",
                r.found.violations.len(),
                r.found.broken_summaries.len()
            ),
        ),
    };
    out.line(&summary);
}

fn print_applied(out: &mut Output, r: &DoctorReport) {
    out.line("");
    out.line(&out.paint(Style::Bold, "Repairs"));
    if r.repairs.is_empty() {
        out.line("  (none)");
    }
    for x in &r.repairs {
        let message = out.shown(&x.message);
        out.line(&format!("  {} {message}", out.paint(Style::Green, "✓")));
    }
    for s in r
        .resummarized
        .iter()
        .filter(|s| s.status != ResummaryStatus::Repaired)
    {
        let why = match s.status {
            ResummaryStatus::StillBroken => {
                "the summarizer's answer would end with a marker again; left as it is"
            }
            _ => "its text changed meanwhile; left as it is",
        };
        out.line(&format!(
            "  {} {}: {why}",
            out.paint(Style::Yellow, "!"),
            s.summary_id
        ));
    }
    if let Some(e) = &r.error {
        out.line(&format!(
            "  {} summarizing {} again failed: {} [{}]; the summaries after it were not attempted",
            out.paint(Style::Red, "✗"),
            e.summary_id,
            e.message,
            e.code
        ));
    }
    if let Some(rem) = &r.remaining {
        if !rem.is_clean() {
            out.line("");
            out.line(&out.paint(Style::Bold, "Still found after the repairs"));
            print_violations(out, &rem.violations);
            print_broken(out, &rem.broken_summaries);
        }
    }
}
