//! `lcm-tui rewrite <conversation_id>`: rewrite summaries in place with the current
//! prompt templates. A dry run (the default) opens the database read-only and shows
//! each summary's old and new text; `--apply` writes the new texts.

use std::sync::Arc;

use clap::{ArgGroup, Args};

use super::error::{CliError, CliResult, EXIT_FAILURE, EXIT_OK};
use super::output::{colorize_diff, plural, signed_thousands, thousands, Output, Style};
use super::progress::Progress;
use super::{db, Ctx};
use crate::config::EngineOptions;
use crate::error::ErrorCode;
use crate::rewrite::run::{self as rw, ProgressFn, RewriteDb, RewriteEntry, RewriteReport};
use crate::rewrite::{
    PlannedSummary, RewriteOptions, RewriteProgress, Selector, DEFAULT_CONCURRENCY, MAX_CONCURRENCY,
};
use crate::summarize::{build_pipeline, SummarizerChoice, SummaryPipeline};
use crate::timeformat::Zone;

/// The `--provider` values.
pub(crate) const PROVIDERS: [&str; 4] = ["anthropic", "openai", "openai-responses", "offline"];

/// Flags of `lcm-tui rewrite`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["summary", "depth", "all"])))]
#[command(after_long_help = REWRITE_HELP)]
pub struct RewriteArgs {
    /// The conversation whose summaries to rewrite
    pub conversation_id: i64,
    /// Rewrite one summary (with --subtree or --bottom-up: it and every summary beneath it)
    #[arg(long, value_name = "ID")]
    pub summary: Option<String>,
    /// Rewrite every summary of depth N (0 = leaves)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(0..))]
    pub depth: Option<i64>,
    /// Rewrite every summary of the conversation, leaves first
    #[arg(long)]
    pub all: bool,
    /// Show old and new texts without writing (the default)
    #[arg(long, conflicts_with = "apply")]
    pub dry_run: bool,
    /// Write the new texts to the database
    #[arg(long)]
    pub apply: bool,
    /// Print a unified diff of old and new text for each summary
    #[arg(long)]
    pub diff: bool,
    /// Prompt template override directory [default: ~/.config/lcm-tui/prompts]
    #[arg(long, value_name = "PATH")]
    pub prompt_dir: Option<String>,
    /// Summarizer model [default: $LCM_TUI_SUMMARY_MODEL, $LCM_SUMMARY_MODEL, the provider's default]
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Summarizer: anthropic, openai, openai-responses or offline (see below for the default)
    #[arg(long, value_name = "NAME", value_parser = PROVIDERS)]
    pub provider: Option<String>,
    /// Provider base URL, e.g. an OpenAI-compatible server [default: $LCM_TUI_SUMMARY_BASE_URL, $LCM_SUMMARY_BASE_URL]
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Leaves first, then d1, d2, …; with --summary, include the summaries beneath it
    #[arg(long)]
    pub bottom_up: bool,
    /// With --summary: also rewrite every summary beneath it
    #[arg(long, requires = "summary")]
    pub subtree: bool,
    /// Put timestamps / time ranges in the source text (the default)
    #[arg(long, overrides_with = "no_timestamps")]
    pub timestamps: bool,
    /// Leave timestamps out of the source text
    #[arg(long, overrides_with = "timestamps")]
    pub no_timestamps: bool,
    /// Condensed summaries of one depth summarized at once
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CONCURRENCY,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_CONCURRENCY as u64))]
    pub concurrency: usize,
    /// IANA timezone of timestamps in source texts and output [default: $TZ, else UTC]
    #[arg(long, value_name = "ZONE", visible_alias = "tz")]
    pub timezone: Option<String>,
    /// Lines of each OLD / NEW preview (0 = the whole text)
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub preview_lines: usize,
}

const REWRITE_HELP: &str = "\
Summarizer: --provider, else $LCM_TUI_SUMMARY_PROVIDER or $LCM_SUMMARY_PROVIDER, else
inferred from --model (claude-* → anthropic, gpt-*/o1-*/o3-*/o4-* → openai), else openai
when a base URL is given, else anthropic when ANTHROPIC_API_KEY is set, else openai when
OPENAI_API_KEY is set. Keys come from ANTHROPIC_API_KEY / OPENAI_API_KEY. `offline` is the
extractive summarizer (no network).

Order: leaves first (one after another: each leaf's previous context is the leaf before it,
possibly just rewritten), then each depth; condensed summaries of one depth run up to
--concurrency at a time. Sources are read fresh, so rewritten children feed their parents;
a dry run shows the same cascade.

--apply updates only each summary's content and token count (and its full-text rows), one
transaction per summary. A summarizer error stops the run: rewrites already applied stay,
nothing partial is written, exit code 1.

Examples:
  lcm-tui rewrite 642 --summary sum_f8ee4e7a5a7b7090 --diff
  lcm-tui rewrite 642 --depth 1 --provider openai --model gpt-4.1-mini
  lcm-tui rewrite 642 --all --apply --prompt-dir ~/my-prompts/";

/// The summarizer (see [`SummarizerChoice::with_environment`]); a usage error when
/// nothing names a provider.
fn summarizer(a: &RewriteArgs) -> Result<SummarizerChoice, CliError> {
    let choice = SummarizerChoice::new(a.provider.clone(), a.model.clone(), a.base_url.clone())
        .with_environment();
    if choice.provider.is_none() {
        return Err(CliError::usage(
            "no summarizer configured: pass --provider anthropic|openai|offline (keys come from ANTHROPIC_API_KEY / OPENAI_API_KEY)",
        ));
    }
    Ok(choice)
}

/// A configuration error in the command line's words (flags, not option names).
pub(crate) fn config_error(e: crate::error::LcmError) -> CliError {
    let mut c = CliError::from(e);
    if c.code == Some(ErrorCode::Config) {
        c.message = c
            .message
            .replace("summaryApiKey or ", "")
            .replace("summaryModel", "--model")
            .replace("summaryBaseUrl", "--base-url")
            .replace("summaryProvider", "--provider");
    }
    c
}

fn selector(a: &RewriteArgs) -> Selector {
    match (&a.summary, a.depth) {
        (Some(id), _) => Selector::Summary {
            id: id.trim().to_owned(),
            subtree: a.subtree || a.bottom_up,
        },
        (None, Some(d)) => Selector::Depth(d),
        (None, None) => Selector::All,
    }
}

fn depth_breakdown(plan: &[PlannedSummary]) -> String {
    let mut by: std::collections::BTreeMap<i64, usize> = Default::default();
    for p in plan {
        *by.entry(p.depth).or_default() += 1;
    }
    by.iter()
        .map(|(d, n)| {
            if *d == 0 {
                plural(*n, "leaf", "leaves")
            } else {
                format!("{n} d{d}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs `lcm-tui rewrite`.
pub fn run(a: RewriteArgs, ctx: &mut Ctx) -> CliResult {
    if a.subtree && a.summary.is_none() {
        // clap waives `requires` when the required flag conflicts with one given.
        return Err(CliError::usage(
            "--subtree needs --summary <id> (--all and --depth already cover whole levels)",
        ));
    }
    let path = ctx.db_path()?;
    let zone = Zone::resolve(a.timezone.as_deref())
        .map_err(|e| CliError::usage(format!("--timezone: {}", e.message)))?;
    let choice = summarizer(&a)?;
    let mut opts = EngineOptions {
        prompt_dir: a.prompt_dir.clone(),
        timezone: a.timezone.clone(),
        ..db::engine_options(&path)
    };
    choice.apply(&mut opts);
    let tags = opts.strip_injected_context_tags.clone();
    let apply = a.apply;
    let (db, pipeline, engine): (RewriteDb, Arc<dyn SummaryPipeline>, _) = if apply {
        let engine = ctx
            .block_on(crate::engine::Engine::open(opts))?
            .map_err(config_error)?;
        (
            RewriteDb::Store(engine.store().clone()),
            engine.pipeline(),
            Some(engine),
        )
    } else {
        let pipeline = build_pipeline(&opts, None).map_err(config_error)?;
        let conn = ctx.open_read_only(&path)?;
        (RewriteDb::read_only(conn), pipeline, None)
    };
    let label = choice.label().unwrap_or_default();
    let result = rewrite(ctx, &a, &db, pipeline, zone, &label, tags);
    if let Some(engine) = engine {
        let closed = ctx.block_on(engine.close())?;
        if let Err(e) = closed {
            ctx.out
                .warn(&format!("closing the database: {}", e.message));
        }
    }
    result
}

fn rewrite(
    ctx: &mut Ctx,
    a: &RewriteArgs,
    db: &RewriteDb,
    pipeline: Arc<dyn SummaryPipeline>,
    zone: Zone,
    label: &str,
    strip_tags: Vec<String>,
) -> CliResult {
    let conv = a.conversation_id;
    let sel = selector(a);
    let plan = ctx.block_on(rw::plan_on(db, conv, sel.clone()))??;
    let json = ctx.json();
    if plan.is_empty() {
        let empty = RewriteReport {
            conversation_id: conv,
            dry_run: !a.apply,
            planned: 0,
            entries: Vec::new(),
            old_tokens: 0,
            new_tokens: 0,
            delta: 0,
            error: None,
        };
        if json {
            ctx.out.json(&empty)?;
        } else {
            ctx.out.line(&format!(
                "Conversation {conv} has no summaries; nothing to rewrite."
            ));
        }
        return Ok(EXIT_OK);
    }
    if !json {
        let mode = if a.apply {
            "writing each new text as it is ready"
        } else {
            "dry run: nothing is written (--apply writes)"
        };
        ctx.out.line(&format!(
            "Rewriting {} of conversation {conv} ({}) with {} — {mode}.",
            plural(plan.len(), "summary", "summaries"),
            depth_breakdown(&plan),
            label,
        ));
        ctx.out.line("");
    }
    let opts = RewriteOptions {
        conversation_id: conv,
        selector: sel,
        apply: a.apply,
        timestamps: !a.no_timestamps,
        concurrency: a.concurrency,
        // Ctrl-C (forwarded by the shim) drops the in-flight request.
        cancel: super::interrupt_token(),
        strip_tags,
    };
    let bar = if json {
        Progress::hidden()
    } else {
        Progress::new(ctx.out, plan.len() as u64, "rewriting")
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<RewriteProgress>();
    let cb: ProgressFn = Arc::new(move |p: &RewriteProgress| {
        let _ = tx.send(p.clone());
    });
    let handle = ctx.handle()?;
    let out = &mut *ctx.out;
    let preview = a.preview_lines;
    let show_diff = a.diff;
    let report = handle.block_on(async {
        let fut = rw::run(db, pipeline, zone, opts, Some(cb));
        tokio::pin!(fut);
        let mut show = |p: RewriteProgress| {
            bar.inc();
            bar.set_message(&format!("{} (d{})", p.entry.summary_id, p.entry.depth));
            if !json {
                bar.suspend(|| print_entry(out, &p.entry, preview, show_diff));
            }
        };
        loop {
            tokio::select! {
                biased;
                Some(p) = rx.recv() => show(p),
                r = &mut fut => {
                    while let Ok(p) = rx.try_recv() {
                        show(p);
                    }
                    break r;
                }
            }
        }
    })?;
    bar.finish();
    finish(ctx, &report)
}

fn finish(ctx: &mut Ctx, r: &RewriteReport) -> CliResult {
    let failed = rw::report_error(r);
    if ctx.json() {
        ctx.out.json(r)?;
    } else {
        let n = r.entries.len();
        let verb = if r.dry_run {
            "Would rewrite"
        } else {
            "Rewrote"
        };
        let skipped = r.entries.iter().filter(|e| e.skipped.is_some()).count();
        let skipped = if skipped > 0 {
            format!(" ({skipped} skipped)")
        } else {
            String::new()
        };
        let line = format!(
            "{verb} {}{skipped}. Total: {}t → {}t ({})",
            plural(n, "summary", "summaries"),
            thousands(r.old_tokens),
            thousands(r.new_tokens),
            signed_thousands(r.delta)
        );
        ctx.out.line(&ctx.out.paint(Style::Bold, &line));
    }
    match failed {
        Some(e) => {
            ctx.out.error(&CliError::from(e));
            Ok(EXIT_FAILURE)
        }
        None => Ok(EXIT_OK),
    }
}

fn preview_lines(out: &mut Output, text: &str, max_lines: usize) {
    let lines: Vec<&str> = text.trim().lines().collect();
    let shown = if max_lines == 0 {
        lines.len()
    } else {
        max_lines.min(lines.len())
    };
    for l in &lines[..shown] {
        let l = if max_lines == 0 {
            out.shown(l).into_owned()
        } else {
            out.shown_cut(l, 160)
        };
        out.line(&format!("  {l}"));
    }
    if shown < lines.len() {
        let more = lines.len() - shown;
        let note = format!(
            "  … {more} more {} (--preview-lines 0 shows all)",
            if more == 1 { "line" } else { "lines" }
        );
        out.line(&out.paint(Style::Dim, &note));
    }
}

fn level_name(l: crate::summarize::Level) -> &'static str {
    use crate::summarize::Level;
    match l {
        Level::Normal => "normal",
        Level::Aggressive => "aggressive (the normal prompt's answer was too long)",
        Level::Fallback => {
            "fallback (deterministic truncation: the summarizer's answers were too long)"
        }
        Level::Capped => "capped (the answer was over the overage cap)",
    }
}

/// One summary's block: header, OLD and NEW previews, the token delta, the diff.
pub fn print_entry(out: &mut Output, e: &RewriteEntry, preview: usize, diff: bool) {
    let what = if e.depth <= 0 {
        plural(e.child_count.max(0) as usize, "message", "messages")
    } else {
        plural(e.child_count.max(0) as usize, "child", "children")
    };
    let range = e
        .time_range
        .as_deref()
        .map(|r| format!(", {r}"))
        .unwrap_or_default();
    let header = format!("━━━ {} (d{}, {what}{range}) ━━━", e.summary_id, e.depth);
    out.line(&out.paint(Style::Bold, &header));
    out.line("");
    if let Some(why) = &e.skipped {
        out.line(&out.paint(Style::Yellow, &format!("  skipped: {why}; left as it is")));
        out.line("");
        return;
    }
    out.line(&format!("OLD ({} tokens):", e.old_tokens));
    preview_lines(out, &e.old_content, preview);
    out.line("");
    out.line(&format!("NEW ({} tokens):", e.new_tokens));
    preview_lines(out, &e.new_content, preview);
    out.line("");
    let delta = format!(
        "  Δ tokens: {} ({} → {})",
        signed_thousands(e.delta),
        e.old_tokens,
        e.new_tokens
    );
    let style = if e.delta <= 0 {
        Style::Green
    } else {
        Style::Yellow
    };
    out.line(&out.paint(style, &delta));
    let mut notes = Vec::new();
    if let Some(l) = e.level.filter(|l| *l != crate::summarize::Level::Normal) {
        notes.push(format!("level: {}", level_name(l)));
    }
    if e.applied {
        notes.push("written".to_owned());
    }
    if !notes.is_empty() {
        out.line(&out.paint(Style::Dim, &format!("  ({})", notes.join("; "))));
    }
    if diff {
        out.line("");
        if e.diff.is_empty() {
            out.line("  (no change)");
        } else {
            let colored = colorize_diff(&out.shown(&e.diff), out.color);
            out.write(&colored);
            if !colored.ends_with('\n') {
                out.write("\n");
            }
        }
    }
    out.line("");
}
