//! TypeScript declarations of the JSON shapes the binding passes (params, options,
//! results), generated from the Rust types with `ts-rs`: the Rust doc comments are
//! the one source of the JSDoc.
//!
//! `npm run gen:types` runs [`tests::write_header`], which writes
//! `src/binding/header.d.ts` = the hand-written part (`src/binding/handwritten.d.ts`:
//! generic message types, callbacks, what only JavaScript has) + [`generated`];
//! `napi build` then prepends that header to `index.d.ts`. `npm run check:types`
//! (CI) regenerates both into a temporary directory and fails on a difference.

use ts_rs::{Config, TS};

/// First line of every generated file.
pub const GENERATED_NOTE: &str = "/* generated — do not edit: `npm run gen:types` writes \
     src/binding/header.d.ts from the Rust types (src/typegen.rs) and \
     src/binding/handwritten.d.ts; napi build prepends it to index.d.ts */";

/// Stands for a JSON object of any keys (`Record<string, unknown>`) in `#[ts(as)]`.
pub struct JsonObject;

impl TS for JsonObject {
    type WithoutGenerics = Self;
    type OptionInnerType = Self;
    fn name(_: &Config) -> String {
        "Record<string, unknown>".to_owned()
    }
    fn inline(cfg: &Config) -> String {
        Self::name(cfg)
    }
}

/// The hand-written declarations (what must stay generic or JavaScript-specific).
const HANDWRITTEN: &str = include_str!("binding/handwritten.d.ts");

fn push<T: TS + ?Sized>(cfg: &Config, out: &mut String) {
    out.push('\n');
    if let Some(docs) = T::docs() {
        out.push_str(&format_decl(&docs));
    }
    out.push_str("export ");
    out.push_str(&format_decl(&T::decl(cfg)));
    out.push('\n');
}

/// Lays out a `ts-rs` declaration (one line, fields as `/**…*/name: T, `) one
/// field per line, one-line doc comments as `/** … */`.
// Every slice index sits at an ASCII delimiter (`/**`, `*/`, `"`, `{`, `,`).
#[allow(clippy::string_slice)]
fn format_decl(decl: &str) -> String {
    let mut out = String::with_capacity(decl.len() + 64);
    let mut depth = 0usize;
    // `<…>`, `(…)` and `[…]` nesting: a comma inside does not end a field.
    let mut nested = 0usize;
    let mut rest = decl;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("/**") {
            let end = rest.find("*/").map_or(rest.len(), |i| i + 2);
            let body: Vec<&str> = rest[3..end - 2]
                .lines()
                .map(|l| l.trim().trim_start_matches('*').trim())
                .filter(|l| !l.is_empty())
                .collect();
            let pad = "  ".repeat(depth);
            if body.len() == 1 {
                out.push_str(&format!("/** {} */\n{pad}", body[0]));
            } else {
                out.push_str("/**");
                for line in body {
                    out.push_str(&format!("\n{pad} * {line}"));
                }
                out.push_str(&format!("\n{pad} */\n{pad}"));
            }
            rest = rest[end..].trim_start_matches('\n');
            continue;
        }
        match c {
            '"' => {
                let end = rest[1..].find('"').map_or(rest.len(), |i| i + 2);
                out.push_str(&rest[..end]);
                rest = &rest[end..];
                continue;
            }
            '{' => {
                depth += 1;
                out.push('{');
                rest = &rest[1..];
                if depth == 1 {
                    rest = rest.trim_start();
                    if rest.starts_with('}') {
                        continue;
                    }
                    out.push_str("\n  ");
                }
                continue;
            }
            '}' => {
                if depth == 1 {
                    while out.ends_with(' ') {
                        out.pop();
                    }
                    out.push('\n');
                }
                depth = depth.saturating_sub(1);
            }
            '<' | '(' | '[' => nested += 1,
            '>' | ')' | ']' => nested = nested.saturating_sub(1),
            ',' if depth == 1 && nested == 0 => {
                out.push(',');
                rest = rest[1..].trim_start();
                if !rest.starts_with('}') {
                    out.push_str("\n  ");
                }
                continue;
            }
            _ => {}
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

macro_rules! declare {
    ($cfg:expr, $out:expr; $($ty:ty),* $(,)?) => {
        $( push::<$ty>($cfg, $out); )*
    };
}

/// The generated declarations, in a fixed order.
pub fn generated() -> String {
    let cfg = Config::new().with_large_int("number");
    let mut out = String::new();
    use crate::recall;
    out.push_str("\n/* ---- Engine options ---- */\n");
    declare!(&cfg, &mut out;
        crate::config::SummaryFormat,
        crate::config::FallbackProvider,
        crate::config::EngineOptions,
    );
    out.push_str("\n/* ---- Errors ---- */\n");
    declare!(&cfg, &mut out; crate::error::ErrorCode);
    out.push_str("\n/* ---- Recall (grep / describe / expand / grants) ---- */\n");
    declare!(&cfg, &mut out;
        recall::types::GetMessagesOptions,
        recall::grep::Mode,
        recall::grep::Scope,
        recall::grep::Sort,
        recall::types::GrepParams,
        recall::grep::MessageHit,
        recall::grep::SummaryHit,
        recall::grep::ScopeStats,
        recall::types::GrepResult,
        recall::types::DescribeOptions,
        recall::describe::ManifestNode,
        recall::describe::SummaryDescription,
        recall::describe::FileDescription,
        recall::types::DescribeResult,
        recall::types::ExpandParams,
        recall::expand::ExpandedSummary,
        recall::expand::ExpandedMessage,
        recall::expand::WalkRoot,
        recall::types::ExpandResult,
        recall::grants::CreateGrantParams,
        recall::grants::GrantInfo,
        recall::types::IndexInfo,
    );
    out.push_str("\n/* ---- Summaries, context items ---- */\n");
    declare!(&cfg, &mut out;
        crate::store::summaries::SummaryKind,
        crate::store::messages::ContextItemType,
        crate::summarize::Level,
    );
    out.push_str("\n/* ---- Store rows ---- */\n");
    declare!(&cfg, &mut out;
        crate::store::conversations::ConversationRecord,
        crate::store::conversations::ArchiveCause,
        crate::store::messages::ContextItem,
        crate::store::summaries::SummaryRecord,
        crate::engine::SummaryWithLinks,
        crate::store::messages::ConversationStats,
        crate::engine::InsertSummaryParams,
    );
    out.push_str("\n/* ---- Status ---- */\n");
    declare!(&cfg, &mut out;
        crate::status::StatusParams,
        crate::status::EngineStatus,
        crate::largefiles::upgrade::SummarizeLargeFilesParams,
        crate::largefiles::upgrade::SummarizeLargeFilesResult,
        crate::status::DatabaseStatus,
        crate::store::status::TableSize,
        crate::status::ConversationCounts,
        crate::status::SessionStatus,
        crate::store::status::DepthCount,
        crate::compaction::control::CompactionRecord,
        crate::status::PendingWork,
    );
    out.push_str("\n/* ---- Ingest, turns, transcripts ---- */\n");
    declare!(&cfg, &mut out;
        crate::ingest::IngestResult,
        crate::store::messages::IngestedMessage,
        crate::ingest::IngestBatchResult,
        crate::turn::CommitTurnResult,
        crate::transcript::BootstrapResult,
    );
    out.push_str("\n/* ---- Session lifecycle ---- */\n");
    declare!(&cfg, &mut out;
        crate::lifecycle::EndReason,
        crate::lifecycle::EndSessionParams,
        crate::lifecycle::LifecycleAction,
        crate::lifecycle::EndSessionResult,
        crate::lifecycle::ArchiveParams,
        crate::lifecycle::ArchiveResult,
        crate::lifecycle::PruneContextParams,
    );
    out.push_str("\n/* ---- Context assembly ---- */\n");
    declare!(&cfg, &mut out;
        crate::assembler::FallbackReason,
        crate::assembler::pairing::RepairStats,
        crate::assembler::AssembleStats,
    );
    use crate::{compaction, summarize};
    out.push_str("\n/* ---- Summarizers and prompts ---- */\n");
    declare!(&cfg, &mut out;
        summarize::SummaryRequest,
        summarize::SummarizeTextParams,
        summarize::SummarizeOutput,
        summarize::render::RenderParams,
        crate::prompts::RenderedPrompt,
    );
    out.push_str("\n/* ---- Compaction ---- */\n");
    declare!(&cfg, &mut out;
        compaction::PolicyOverrides,
        compaction::EvaluateParams,
        compaction::Evaluation,
        compaction::Mode,
        compaction::pass::PassRecord,
        crate::summarize::meter::Usage,
        compaction::CompactResult,
        compaction::turn::AfterTurnResult,
    );
    use crate::prompts::catalog;
    out.push_str("\n/* ---- Prompt templates ---- */\n");
    declare!(&cfg, &mut out;
        catalog::PromptEntry,
        catalog::PromptList,
        catalog::SkippedFile,
        catalog::ExportReport,
        catalog::ShownPrompt,
        catalog::PromptDiff,
    );
    use crate::rewrite;
    out.push_str("\n/* ---- Rewrite ---- */\n");
    declare!(&cfg, &mut out;
        rewrite::SelectorParams,
        crate::store::summaries::SummaryOutline,
        rewrite::run::RewriteEntry,
        rewrite::run::RewriteProgress,
        rewrite::run::RewriteFailure,
        rewrite::run::RewriteReport,
    );
    use crate::{dagops, doctor};
    out.push_str("\n/* ---- Doctor ---- */\n");
    declare!(&cfg, &mut out;
        doctor::DoctorParams,
        doctor::Kind,
        doctor::Violation,
        doctor::markers::MarkerKind,
        doctor::BrokenSummary,
        doctor::RepairKind,
        doctor::Repair,
        doctor::ResummaryStatus,
        doctor::Resummarized,
        doctor::StopError,
        doctor::Findings,
        doctor::DoctorReport,
    );
    out.push_str("\n/* ---- DAG operations (dissolve / transplant) ---- */\n");
    declare!(&cfg, &mut out;
        dagops::SummaryView,
        dagops::dissolve::DissolveParams,
        dagops::dissolve::RestoredItem,
        dagops::dissolve::DissolvePlan,
        dagops::transplant::TransplantParams,
        dagops::transplant::DepthCount,
        dagops::transplant::IdPair,
        dagops::transplant::TransplantPlan,
    );
    out.push_str("\n/* ---- Space: backup, storage stats, reclaim ---- */\n");
    declare!(&cfg, &mut out;
        crate::engine::BackupParams,
        crate::store::space::BackupReport,
        crate::engine::StorageStatsParams,
        crate::store::space::TableSpace,
        crate::store::space::SpaceReport,
        crate::engine::ReclaimSpaceParams,
        crate::engine::ReclaimSpaceResult,
    );
    out.push_str("\n/* ---- Retention ---- */\n");
    declare!(&cfg, &mut out;
        crate::retention::RetentionPolicy,
        crate::retention::PruneParams,
        crate::retention::policy::PruneKind,
        crate::retention::policy::PruneReason,
        crate::retention::PruneAction,
        crate::retention::PruneReport,
        crate::engine::RestoreArchiveParams,
        crate::retention::RestoreReport,
        crate::engine::PrunedSummary,
    );
    out
}

/// The whole header: note, hand-written part, generated part.
pub fn header() -> String {
    format!(
        "{GENERATED_NOTE}\n/* eslint-disable */\n{}{}",
        strip_comment_head(HANDWRITTEN),
        generated()
    )
}

/// The hand-written file without its leading `//` lines (they describe that file).
fn strip_comment_head(text: &str) -> &str {
    let mut rest = text;
    while rest.starts_with("//") {
        rest = rest.split_once('\n').map_or("", |(_, r)| r);
    }
    rest
}

#[cfg(test)]
mod tests {
    /// Writes the header to `$LCM_GEN_TYPES` (a path) when set; always checks that
    /// it generates.
    #[test]
    fn write_header() {
        let header = super::header();
        assert!(header.starts_with(super::GENERATED_NOTE));
        if let Ok(path) = std::env::var("LCM_GEN_TYPES") {
            std::fs::write(&path, header).expect("write the generated header");
        }
    }

    /// Every engine option is optional in TypeScript: a host passes only what it
    /// sets, and serde fills the rest with defaults.
    #[test]
    fn every_engine_option_is_optional() {
        use ts_rs::TS;
        let decl = <crate::config::EngineOptions as TS>::decl(&ts_rs::Config::new());
        let no_comments = regex::Regex::new(r"(?s)/\*.*?\*/|//[^\n]*").unwrap();
        let decl = no_comments.replace_all(&decl, "");
        let field = regex::Regex::new(r"(?m)^\s*(\w+)(\??):").unwrap();
        let fields: Vec<_> = field.captures_iter(&decl).collect();
        assert!(fields.len() > 20, "parsed the fields of: {decl}");
        for f in fields {
            assert_eq!(
                &f[2], "?",
                "EngineOptions.{} is required in TypeScript: add #[ts(optional)]",
                &f[1]
            );
        }
    }

    /// `LcmErrorCode` lists exactly the codes `ErrorCode::as_str` gives.
    #[test]
    fn error_code_union_is_every_code() {
        use crate::error::ErrorCode::{self, *};
        use ts_rs::TS;
        let all = [
            InvalidInput,
            DbOpen,
            DbBusy,
            Db,
            Closed,
            Config,
            Template,
            LlmAuth,
            LlmRateLimit,
            LlmTransient,
            LlmBadResponse,
            Callback,
            NotFound,
            GrantRevoked,
            GrantExpired,
            GrantScope,
            GrantExhausted,
            Aborted,
            Io,
            TurnConflict,
            Internal,
        ];
        let names: Vec<String> = all.iter().map(|c| format!("\"{}\"", c.as_str())).collect();
        let union = <ErrorCode as TS>::inline(&ts_rs::Config::new());
        assert_eq!(union, names.join(" | "));
    }
}
