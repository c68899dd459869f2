//! `lcm-tui prompts`: the summarization prompt templates — which one is active
//! (`--list`), the defaults as editable files (`--export [dir]`, alias `--dump`), a
//! template's text (`--show`), an override against its default (`--diff`) and a
//! rendered preview (`--render`). Template names are case-insensitive with an
//! optional extension: `leaf`, `condensed-d1`, `condensed-d2`, `condensed-d3`.

use std::path::PathBuf;

use clap::{ArgGroup, Args};
use serde_json::json;

use super::error::{CliError, CliResult, EXIT_FAILURE, EXIT_OK};
use super::output::{colorize_diff, Style};
use super::Ctx;
use crate::prompts::catalog;
use crate::prompts::PromptKind;
use crate::summarize::{render_params, RenderParams};

/// Flags of `lcm-tui prompts`.
#[derive(Debug, Args)]
#[command(group(
    ArgGroup::new("action")
        .required(true)
        .args(["list", "export", "dump", "show", "diff", "render"])
))]
#[command(group(ArgGroup::new("export_like").args(["export", "dump"])))]
pub struct PromptsArgs {
    /// Show each template's source: embedded, or the override file that wins (exit 1 if an override is broken)
    #[arg(long)]
    pub list: bool,
    /// Write the embedded defaults as editable .jinja files into DIR [default: the override directory]
    #[arg(long, value_name = "DIR", num_args = 0..=1)]
    pub export: Option<Option<PathBuf>>,
    /// Same as --export
    #[arg(long, value_name = "DIR", num_args = 0..=1)]
    pub dump: Option<Option<PathBuf>>,
    /// With --export: overwrite existing files
    #[arg(long, requires = "export_like")]
    pub force: bool,
    /// Print the active template text (after a "# Source:" line)
    #[arg(long, value_name = "NAME", value_parser = parse_kind)]
    pub show: Option<PromptKind>,
    /// Unified diff of the override against the embedded default
    #[arg(long, value_name = "NAME", value_parser = parse_kind)]
    pub diff: Option<PromptKind>,
    /// Render the template with sample values (or the values given below)
    #[arg(long, value_name = "NAME", value_parser = parse_kind)]
    pub render: Option<PromptKind>,
    /// --render: target length in tokens [default: computed as compaction does]
    #[arg(long, requires = "render", value_name = "N", value_parser = clap::value_parser!(i64).range(1..))]
    pub target_tokens: Option<i64>,
    /// --render: the preceding summary's text
    #[arg(long, requires = "render", value_name = "TEXT")]
    pub previous_context: Option<String>,
    /// --render: number of source items [default: the blocks of the source text]
    #[arg(long, requires = "render", value_name = "N")]
    pub child_count: Option<usize>,
    /// --render: formatted time range, e.g. "2026-02-17 15:37–21:14 UTC"
    #[arg(long, requires = "render", value_name = "TEXT")]
    pub time_range: Option<String>,
    /// --render: output depth [default: the template's depth; 3 or more for condensed-d3]
    #[arg(long, requires = "render", value_name = "N", value_parser = clap::value_parser!(i64).range(0..))]
    pub depth: Option<i64>,
    /// --render: the source text [default: a sample for the template]
    #[arg(long, requires = "render", value_name = "TEXT")]
    pub source_text: Option<String>,
    /// --render: operator instructions
    #[arg(long, requires = "render", value_name = "TEXT")]
    pub custom_instructions: Option<String>,
    /// --render: the aggressive (retry) policy
    #[arg(long, requires = "render")]
    pub aggressive: bool,
    /// --render: also print the system prompt
    #[arg(long, requires = "render")]
    pub system: bool,
    /// Override directory [default: ~/.config/lcm-tui/prompts]
    #[arg(long, value_name = "PATH")]
    pub prompt_dir: Option<String>,
}

fn parse_kind(s: &str) -> Result<PromptKind, String> {
    PromptKind::from_name(s).map_err(|e| e.message)
}

/// Runs `lcm-tui prompts`.
pub fn run(a: PromptsArgs, ctx: &mut Ctx) -> CliResult {
    // clap waives `requires` when the required flag conflicts with one given, so the
    // flags that belong to one action are checked here.
    let render_flags = [
        ("--target-tokens", a.target_tokens.is_some()),
        ("--previous-context", a.previous_context.is_some()),
        ("--child-count", a.child_count.is_some()),
        ("--time-range", a.time_range.is_some()),
        ("--depth", a.depth.is_some()),
        ("--source-text", a.source_text.is_some()),
        ("--custom-instructions", a.custom_instructions.is_some()),
        ("--aggressive", a.aggressive),
        ("--system", a.system),
    ];
    if a.render.is_none() {
        if let Some((flag, _)) = render_flags.iter().find(|(_, set)| *set) {
            return Err(CliError::usage(format!("{flag} applies only to --render")));
        }
    }
    if a.force && a.export.is_none() && a.dump.is_none() {
        return Err(CliError::usage("--force applies only to --export / --dump"));
    }
    let dir = a.prompt_dir.as_deref();
    if a.list {
        return list(ctx, dir);
    }
    if let Some(target) = a.export.as_ref().or(a.dump.as_ref()) {
        let target = target
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned())
            .or_else(|| a.prompt_dir.clone());
        return export(ctx, target.as_deref(), a.force);
    }
    if let Some(kind) = a.show {
        return show(ctx, kind, dir);
    }
    if let Some(kind) = a.diff {
        return diff(ctx, kind, dir);
    }
    if let Some(kind) = a.render {
        return render(ctx, kind, &a);
    }
    Err(CliError::usage(
        "choose one of --list, --export, --show, --diff, --render",
    ))
}

fn list(ctx: &mut Ctx, dir: Option<&str>) -> CliResult {
    let l = catalog::list(dir)?;
    let broken = l.templates.iter().filter(|t| t.error.is_some()).count();
    if ctx.json() {
        ctx.out.json(&l)?;
    } else {
        let note = if l.dir_exists {
            ""
        } else {
            " (does not exist: every template is embedded)"
        };
        ctx.out
            .line(&format!("Override directory: {}{note}", l.dir));
        let width = l.templates.iter().map(|t| t.file.len()).max().unwrap_or(0) + 3;
        for t in &l.templates {
            let where_ = match (&t.path, &t.error) {
                (None, _) => "embedded (no override)".to_owned(),
                (Some(p), None) => format!("{p} (override)"),
                (Some(p), Some(e)) => format!(
                    "{p} (override, {}: {e})",
                    ctx.out.paint(Style::Red, "INVALID")
                ),
            };
            ctx.out.line(&format!("{:<width$}{where_}", t.file));
            for s in &t.shadowed {
                ctx.out
                    .line(&format!("{:<width$}  ignored: {s} ({} wins)", "", t.file));
            }
        }
    }
    if broken > 0 {
        ctx.out.warn(&format!(
            "{broken} override{} cannot be used; the engine refuses to open with this prompt directory until {} fixed",
            if broken == 1 { "" } else { "s" },
            if broken == 1 { "it is" } else { "they are" }
        ));
        return Ok(EXIT_FAILURE);
    }
    Ok(EXIT_OK)
}

fn export(ctx: &mut Ctx, dir: Option<&str>, force: bool) -> CliResult {
    let r = catalog::export(dir, force)?;
    if ctx.json() {
        ctx.out.json(&r)?;
    } else {
        for w in &r.written {
            ctx.out.line(&format!("wrote    {w}"));
        }
        for s in &r.skipped {
            ctx.out.line(&format!(
                "skipped  {} ({}; --force overwrites)",
                s.path, s.reason
            ));
        }
        ctx.out.line(&format!(
            "Exported {} of 4 templates to {}{}",
            r.written.len(),
            r.dir,
            if r.skipped.is_empty() {
                String::new()
            } else {
                format!("; skipped {}", r.skipped.len())
            }
        ));
    }
    Ok(EXIT_OK)
}

fn show(ctx: &mut Ctx, kind: PromptKind, dir: Option<&str>) -> CliResult {
    let s = catalog::show(kind.name(), dir)?;
    if ctx.json() {
        ctx.out.json(&s)?;
        return Ok(EXIT_OK);
    }
    let source = match &s.path {
        Some(p) => format!("{p} (override)"),
        None => format!("embedded ({}.{})", s.name, catalog::EXPORT_EXTENSION),
    };
    ctx.out.line(&format!("# Source: {source}"));
    ctx.out.write(&s.text);
    if !s.text.ends_with('\n') {
        ctx.out.write("\n");
    }
    Ok(EXIT_OK)
}

fn diff(ctx: &mut Ctx, kind: PromptKind, dir: Option<&str>) -> CliResult {
    let d = catalog::diff(kind.name(), dir)?;
    if ctx.json() {
        ctx.out.json(&d)?;
        return Ok(EXIT_OK);
    }
    match (&d.path, &d.diff) {
        (Some(p), Some(text)) if !d.identical => {
            ctx.out.write(&colorize_diff(text, ctx.out.color));
            if p.ends_with(".tmpl") {
                ctx.out.eline(
                    "note: the override is a Go text/template (.tmpl); it is compared as written with the minijinja default",
                );
            }
        }
        (Some(p), _) => ctx.out.line(&format!(
            "{p} is identical to the embedded {} template.",
            d.name
        )),
        (None, _) => ctx.out.line(&format!(
            "No override for {} in {}: the embedded template is in use (lcm-tui prompts --export writes editable copies).",
            d.name, d.dir
        )),
    }
    Ok(EXIT_OK)
}

/// Sample values for `--render`: a short, domain-neutral source per template.
fn sample(kind: PromptKind) -> (&'static str, &'static str) {
    match kind {
        PromptKind::Leaf => (
            "[2026-02-17 15:37 UTC] [user]\nCompare the three quotes for the kitchen renovation and tell me which fits a $25k budget.\n\n\
             [2026-02-17 15:39 UTC] [assistant]\nQuote B (Harper & Sons, $23,800) fits; A is $27,400 and C leaves out the electrical work.\n\n\
             [2026-02-17 15:52 UTC] [user]\nBook a site visit with Harper & Sons for Thursday morning.",
            "2026-02-17 15:37–15:52 UTC",
        ),
        PromptKind::CondensedD1 => (
            "[2026-02-17 15:37–15:52 UTC]\nCompared three renovation quotes; chose Harper & Sons ($23,800, within the $25k budget). Site visit requested for Thursday morning.\n\n\
             [2026-02-17 18:05–21:14 UTC]\nSite visit confirmed for Thu 09:00. Drafted questions about permits and the electrical panel; deposit terms still open.",
            "2026-02-17 15:37–21:14 UTC",
        ),
        PromptKind::CondensedD2 => (
            "[2026-02-17 15:37–21:14 UTC]\nKitchen renovation: Harper & Sons chosen ($23,800); site visit booked for Thursday.\n\n\
             [2026-02-19 09:00–12:30 UTC]\nSite visit done; permit needed for the panel upgrade (+$1,100). Contract signed, 30% deposit paid.",
            "2026-02-17 – 2026-02-19",
        ),
        PromptKind::CondensedD3 => (
            "[2026-02-17 – 2026-02-19]\nKitchen renovation contracted with Harper & Sons ($24,900 incl. permit); deposit paid.\n\n\
             [2026-03-02 – 2026-03-20]\nDemolition and electrical done; cabinets delayed two weeks; final inspection passed on 2026-03-20.",
            "2026-02-17 – 2026-03-20",
        ),
    }
}

fn render(ctx: &mut Ctx, kind: PromptKind, a: &PromptsArgs) -> CliResult {
    let depth = a.depth.unwrap_or(kind.depth());
    let chosen = PromptKind::for_depth(depth);
    if chosen != kind {
        return Err(CliError::usage(format!(
            "--depth {depth} uses the {} template, not {}; omit --depth or pick a matching one",
            chosen.name(),
            kind.name()
        )));
    }
    let (sample_text, sample_range) = sample(kind);
    let using_sample = a.source_text.is_none();
    let params = RenderParams {
        depth,
        aggressive: a.aggressive,
        target_tokens: a.target_tokens,
        previous_context: a.previous_context.clone(),
        child_count: a.child_count,
        time_range: a
            .time_range
            .clone()
            .or_else(|| using_sample.then(|| sample_range.to_owned())),
        source_text: a
            .source_text
            .clone()
            .unwrap_or_else(|| sample_text.to_owned()),
        custom_instructions: a.custom_instructions.clone(),
        prompt_dir: a.prompt_dir.clone(),
        leaf_target_tokens: None,
        condensed_target_tokens: None,
    };
    let r = render_params(params)?;
    if ctx.json() {
        ctx.out.json(&json!({
            "template": r.template,
            "source": r.source,
            "depth": depth,
            "targetTokens": r.target_tokens,
            "sampleSource": using_sample,
            "prompt": r.prompt,
            "systemPrompt": r.system_prompt,
        }))?;
        return Ok(EXIT_OK);
    }
    ctx.out.line(&format!(
        "# Template: {} (depth {depth}) — Source: {}",
        r.template, r.source
    ));
    ctx.out.line(&format!(
        "# Target: {} tokens{}",
        r.target_tokens,
        if using_sample {
            " — sample source text"
        } else {
            ""
        }
    ));
    if a.system {
        ctx.out.line("");
        ctx.out.line("# System prompt:");
        ctx.out.line(&r.system_prompt);
        ctx.out.line("");
        ctx.out.line("# Prompt:");
    } else {
        ctx.out.line("");
    }
    ctx.out.line(&r.prompt);
    Ok(EXIT_OK)
}
