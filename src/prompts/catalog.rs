//! Managing the prompt templates on disk: which template is active (embedded or an
//! override file), exporting the embedded defaults as editable files, showing a
//! template's text and diffing an override against its default. `lcm-tui prompts`
//! and the addon's `listPrompts` / `exportPrompts` / `showPrompt` / `diffPrompt`
//! are thin layers over these functions.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{read_override, PromptKind, PromptSet};
use crate::config::EngineOptions;
use crate::error::{ErrorCode, LcmError, Result};

/// The file extension of exported templates (minijinja syntax).
pub const EXPORT_EXTENSION: &str = "jinja";

impl PromptKind {
    /// Parses a template name: case-insensitive, extension optional (`.jinja`,
    /// `.tmpl`); `leaf`, `condensed-d1`, `condensed-d2`, `condensed-d3`, and the short
    /// forms `d0`…`d3`.
    pub fn parse_name(name: &str) -> Option<PromptKind> {
        let lower = name.trim().to_ascii_lowercase();
        let stem = lower
            .strip_suffix(".jinja")
            .or_else(|| lower.strip_suffix(".tmpl"))
            .unwrap_or(&lower);
        match stem {
            "leaf" | "d0" | "condensed-d0" => Some(PromptKind::Leaf),
            "condensed-d1" | "d1" => Some(PromptKind::CondensedD1),
            "condensed-d2" | "d2" => Some(PromptKind::CondensedD2),
            "condensed-d3" | "d3" | "condensed-d3+" | "d3+" => Some(PromptKind::CondensedD3),
            _ => None,
        }
    }

    /// Parses a template name, or `LCM_INVALID_INPUT` listing the valid names.
    pub fn from_name(name: &str) -> Result<PromptKind> {
        PromptKind::parse_name(name).ok_or_else(|| {
            LcmError::invalid(format!(
                "unknown prompt template {name:?}; use one of: {}",
                PromptKind::names().join(", ")
            ))
        })
    }

    /// The four template names, in depth order.
    pub fn names() -> Vec<&'static str> {
        PromptKind::ALL.iter().map(|k| k.name()).collect()
    }

    /// The smallest output depth this template is used for (leaf 0, d1 1, d2 2, d3 3).
    pub fn depth(self) -> i64 {
        match self {
            PromptKind::Leaf => 0,
            PromptKind::CondensedD1 => 1,
            PromptKind::CondensedD2 => 2,
            PromptKind::CondensedD3 => 3,
        }
    }
}

/// The override directory a `promptDir` value means: the value (with `~/` expanded),
/// else `~/.config/lcm-tui/prompts` — the same rule as the engine.
pub fn resolve_dir(prompt_dir: Option<&str>) -> PathBuf {
    EngineOptions {
        prompt_dir: prompt_dir.map(str::to_owned),
        ..EngineOptions::default()
    }
    .resolved_prompt_dir()
}

/// One template in a listing.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct PromptEntry {
    /// `leaf`, `condensed-d1`, `condensed-d2`, `condensed-d3`.
    #[ts(type = "\"leaf\" | \"condensed-d1\" | \"condensed-d2\" | \"condensed-d3\"")]
    pub name: &'static str,
    /// The file name in use: `leaf.jinja` (embedded or override) or `leaf.tmpl`.
    pub file: String,
    /// `embedded` or `override`.
    #[ts(type = "\"embedded\" | \"override\"")]
    pub source: &'static str,
    /// The override file that wins, if any.
    pub path: Option<String>,
    /// Override files present but not used (a `.tmpl` beside a `.jinja` that wins).
    pub shadowed: Vec<String>,
    /// Why the override cannot be used (the engine refuses to open with it), if so.
    pub error: Option<String>,
}

/// What `listPrompts` returns.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct PromptList {
    /// The override directory consulted.
    pub dir: String,
    /// Whether that directory exists.
    pub dir_exists: bool,
    /// The four templates, in depth order.
    pub templates: Vec<PromptEntry>,
}

/// Which template is active for each depth, and whether each override is usable.
pub fn list(prompt_dir: Option<&str>) -> Result<PromptList> {
    let dir = resolve_dir(prompt_dir);
    let mut templates = Vec::with_capacity(4);
    for kind in PromptKind::ALL {
        let found = read_override(&dir, kind)?;
        let (file, source, path) = match &found {
            Some((p, _, _)) => (
                file_name(p),
                "override",
                Some(p.to_string_lossy().into_owned()),
            ),
            None => (
                format!("{}.{EXPORT_EXTENSION}", kind.name()),
                "embedded",
                None,
            ),
        };
        let mut shadowed = Vec::new();
        if let Some((winner, _, _)) = &found {
            let other = dir.join(format!("{}.tmpl", kind.name()));
            if other != *winner && other.is_file() {
                shadowed.push(other.to_string_lossy().into_owned());
            }
        }
        let error = match &found {
            Some(_) => PromptSet::check_one(kind, Some(&dir))
                .err()
                .map(|e| e.message),
            None => None,
        };
        templates.push(PromptEntry {
            name: kind.name(),
            file,
            source,
            path,
            shadowed,
            error,
        });
    }
    Ok(PromptList {
        dir: dir.to_string_lossy().into_owned(),
        dir_exists: dir.is_dir(),
        templates,
    })
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A file `exportPrompts` did not write, and why.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "PromptSkippedFile")]
pub struct SkippedFile {
    /// The file that was left alone.
    pub path: String,
    /// Why.
    pub reason: String,
}

/// What `exportPrompts` did.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "PromptExportReport")]
pub struct ExportReport {
    /// The directory written to.
    pub dir: String,
    /// Files written (created or, with `force`, overwritten).
    pub written: Vec<String>,
    /// Files left alone.
    pub skipped: Vec<SkippedFile>,
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> LcmError {
    LcmError::new(
        ErrorCode::Io,
        format!("cannot {what} {}: {e}", path.display()),
    )
}

/// Writes the embedded defaults as `<name>.jinja` into `dir` (default: the override
/// directory), creating it. An existing file is never overwritten unless `force`;
/// neither is a `<name>.tmpl` override shadowed (a new `.jinja` would win over it).
pub fn export(dir: Option<&str>, force: bool) -> Result<ExportReport> {
    let dir = resolve_dir(dir);
    std::fs::create_dir_all(&dir).map_err(|e| io_err("create the directory", &dir, e))?;
    let mut report = ExportReport {
        dir: dir.to_string_lossy().into_owned(),
        written: Vec::new(),
        skipped: Vec::new(),
    };
    for kind in PromptKind::ALL {
        let path = dir.join(format!("{}.{EXPORT_EXTENSION}", kind.name()));
        let tmpl = dir.join(format!("{}.tmpl", kind.name()));
        if !force {
            if path.exists() {
                report.skipped.push(SkippedFile {
                    path: path.to_string_lossy().into_owned(),
                    reason: "already exists".into(),
                });
                continue;
            }
            if tmpl.is_file() {
                report.skipped.push(SkippedFile {
                    path: path.to_string_lossy().into_owned(),
                    reason: format!(
                        "{} is an override; a .jinja file beside it would take its place",
                        tmpl.display()
                    ),
                });
                continue;
            }
        }
        std::fs::write(&path, kind.embedded()).map_err(|e| io_err("write", &path, e))?;
        report.written.push(path.to_string_lossy().into_owned());
    }
    Ok(report)
}

/// A template's active text.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct ShownPrompt {
    /// `leaf`, `condensed-d1`, …
    #[ts(type = "\"leaf\" | \"condensed-d1\" | \"condensed-d2\" | \"condensed-d3\"")]
    pub name: &'static str,
    /// `embedded` or `override`.
    #[ts(type = "\"embedded\" | \"override\"")]
    pub source: &'static str,
    /// The override file, if one is active.
    pub path: Option<String>,
    /// The template text as written (a `.tmpl` override in Go syntax).
    pub text: String,
}

/// The active template text for `name` (override file as written, else the default).
pub fn show(name: &str, prompt_dir: Option<&str>) -> Result<ShownPrompt> {
    let kind = PromptKind::from_name(name)?;
    let dir = resolve_dir(prompt_dir);
    Ok(match read_override(&dir, kind)? {
        Some((path, text, _)) => ShownPrompt {
            name: kind.name(),
            source: "override",
            path: Some(path.to_string_lossy().into_owned()),
            text,
        },
        None => ShownPrompt {
            name: kind.name(),
            source: "embedded",
            path: None,
            text: kind.embedded().to_owned(),
        },
    })
}

/// An override compared with its embedded default.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct PromptDiff {
    /// `leaf`, `condensed-d1`, …
    #[ts(type = "\"leaf\" | \"condensed-d1\" | \"condensed-d2\" | \"condensed-d3\"")]
    pub name: &'static str,
    /// The override directory consulted.
    pub dir: String,
    /// The override file, if any.
    pub path: Option<String>,
    /// Whether the override equals the default byte for byte.
    pub identical: bool,
    /// Unified diff (embedded → override); `None` without an override.
    pub diff: Option<String>,
}

/// Unified diff of two texts with `a/…`, `b/…` style headers (a missing final
/// newline does not show up as a change).
pub fn unified_diff(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    let with_nl = |s: &str| {
        if s.is_empty() || s.ends_with('\n') {
            s.to_owned()
        } else {
            format!("{s}\n")
        }
    };
    let (old, new) = (with_nl(old), with_nl(new));
    similar::TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header(old_label, new_label)
        .to_string()
}

/// The override of `name` against its embedded default.
pub fn diff(name: &str, prompt_dir: Option<&str>) -> Result<PromptDiff> {
    let kind = PromptKind::from_name(name)?;
    let dir = resolve_dir(prompt_dir);
    let found = read_override(&dir, kind)?;
    let (path, diff, identical) = match found {
        None => (None, None, false),
        Some((path, text, _)) => {
            let label = format!("embedded/{}.{EXPORT_EXTENSION}", kind.name());
            let d = unified_diff(kind.embedded(), &text, &label, &path.to_string_lossy());
            let identical = text == kind.embedded();
            (
                Some(path.to_string_lossy().into_owned()),
                Some(d),
                identical,
            )
        }
    };
    Ok(PromptDiff {
        name: kind.name(),
        dir: dir.to_string_lossy().into_owned(),
        path,
        identical,
        diff,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> (tempfile::TempDir, String) {
        let d = tempfile::tempdir().unwrap();
        let s = d.path().to_string_lossy().into_owned();
        (d, s)
    }

    #[test]
    fn names_are_case_insensitive_with_optional_extension() {
        assert_eq!(
            PromptKind::parse_name("Condensed-D1.TMPL"),
            Some(PromptKind::CondensedD1)
        );
        assert_eq!(PromptKind::parse_name("leaf.jinja"), Some(PromptKind::Leaf));
        assert_eq!(PromptKind::parse_name("d3"), Some(PromptKind::CondensedD3));
        assert!(PromptKind::from_name("d4x")
            .unwrap_err()
            .message
            .contains("leaf, condensed-d1, condensed-d2, condensed-d3"));
    }

    #[test]
    fn list_export_show_diff_round_trip() {
        let (_g, d) = dir();
        let l = list(Some(&d)).unwrap();
        assert!(l.templates.iter().all(|t| t.source == "embedded"));
        let r = export(Some(&d), false).unwrap();
        assert_eq!(r.written.len(), 4);
        assert!(r.skipped.is_empty());
        // Exported defaults are overrides now, identical to the embedded text.
        let l = list(Some(&d)).unwrap();
        assert!(l
            .templates
            .iter()
            .all(|t| t.source == "override" && t.error.is_none()));
        let df = diff("leaf", Some(&d)).unwrap();
        assert!(df.identical);
        assert_eq!(df.diff.as_deref(), Some(""));
        // A second export skips everything; force rewrites.
        let r = export(Some(&d), false).unwrap();
        assert_eq!((r.written.len(), r.skipped.len()), (0, 4));
        let p = Path::new(&d).join("condensed-d1.jinja");
        std::fs::write(
            &p,
            "Condense {{ source_text }} in {{ target_tokens }} tokens.\n",
        )
        .unwrap();
        let s = show("CONDENSED-D1", Some(&d)).unwrap();
        assert_eq!(s.source, "override");
        assert!(s.text.starts_with("Condense"));
        let df = diff("condensed-d1", Some(&d)).unwrap();
        assert!(!df.identical);
        let text = df.diff.unwrap();
        assert!(text.contains("+Condense {{ source_text }}"));
        assert!(text.starts_with("--- embedded/condensed-d1.jinja\n+++ "));
        let r = export(Some(&d), true).unwrap();
        assert_eq!(r.written.len(), 4);
        assert!(diff("condensed-d1", Some(&d)).unwrap().identical);
    }

    #[test]
    fn broken_overrides_and_shadowed_files_are_reported() {
        let (_g, d) = dir();
        std::fs::write(Path::new(&d).join("leaf.jinja"), "{% if %}").unwrap();
        std::fs::write(Path::new(&d).join("leaf.tmpl"), "{{.SourceText}}").unwrap();
        std::fs::write(Path::new(&d).join("condensed-d2.tmpl"), "{{.SourceText}}").unwrap();
        let l = list(Some(&d)).unwrap();
        let leaf = &l.templates[0];
        assert_eq!(leaf.file, "leaf.jinja");
        assert!(leaf.error.as_deref().unwrap().contains("leaf.jinja"));
        assert_eq!(leaf.shadowed.len(), 1);
        assert_eq!(l.templates[2].file, "condensed-d2.tmpl");
        assert!(l.templates[2].error.is_none());
        // Export leaves the .tmpl override's place alone without force.
        let r = export(Some(&d), false).unwrap();
        let skipped: Vec<&str> = r.skipped.iter().map(|s| s.path.as_str()).collect();
        assert!(skipped.iter().any(|p| p.ends_with("leaf.jinja")));
        assert!(skipped.iter().any(|p| p.ends_with("condensed-d2.jinja")));
        assert_eq!(r.written.len(), 2);
        assert!(diff("condensed-d3", Some(&d)).unwrap().diff.is_some());
        let (_g2, empty) = dir();
        assert!(diff("leaf", Some(&empty)).unwrap().diff.is_none());
    }
}
