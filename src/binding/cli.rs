//! The command line and the prompt-template catalog on the addon: `runCli(argv)`
//! (what `bin/lcm-tui.js` calls) and `listPrompts` / `exportPrompts` /
//! `showPrompt` / `diffPrompt` (the functions behind `lcm-tui prompts`).
#![cfg_attr(test, allow(dead_code))]

use super::js::{opt_string_arg, resolve_json, string_arg, to_js, Input, Params, Pending};
use crate::error::LcmError;
use crate::prompts::catalog;
use napi::bindgen_prelude::*;
use napi_derive::napi;

/// Runs `lcm-tui` with `argv` (the arguments after the program name) on its own
/// thread, writing to the process's stdout and stderr. Resolves with the exit code:
/// 0 success, 1 the job failed, 2 bad usage.
#[napi(
    ts_args_type = "argv: Array<string>",
    ts_return_type = "Promise<number>"
)]
pub fn run_cli<'env>(env: &'env Env, argv: Unknown<'env>) -> Result<Pending<'env>> {
    let argv = Params::<Vec<String>>::read(env, argv)?;
    resolve_json(env, async move {
        let argv = argv.decode("runCli")?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("lcm-tui".into())
            .spawn(move || {
                let _ = tx.send(crate::cli::run(argv));
            })
            .map_err(|e| LcmError::internal(format!("cannot start lcm-tui: {e}")))?;
        Ok(rx.await.unwrap_or(crate::cli::EXIT_FAILURE))
    })
}

/// Forwards Ctrl-C to the running `lcm-tui` command (`rewrite` drops its in-flight
/// summarizer request and stops; nothing partial is written). Returns false when no
/// running command listens, so the caller can exit at once.
#[napi]
pub fn interrupt_cli() -> bool {
    crate::cli::interrupt()
}

/// Each template and where it comes from: embedded, or the override file in
/// `promptDir` (default `~/.config/lcm-tui/prompts`) that wins, with the reason an
/// override cannot be used.
#[napi(ts_args_type = "promptDir?: string", ts_return_type = "PromptList")]
pub fn list_prompts<'env>(
    env: &'env Env,
    prompt_dir: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
    let dir = opt_string_arg(prompt_dir, "listPrompts", "promptDir");
    to_js(env, dir.and_then(|d| catalog::list(d.as_deref())))
}

/// Parameters of `exportPrompts`.
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
struct ExportParams {
    dir: Option<String>,
    force: bool,
}

/// Writes the embedded templates as editable `<name>.jinja` files into `dir`
/// (default `~/.config/lcm-tui/prompts`). Existing files are skipped (and reported)
/// unless `force`. Throws `LCM_IO` when the directory cannot be written.
#[napi(
    ts_args_type = "params?: { dir?: string; force?: boolean }",
    ts_return_type = "PromptExportReport"
)]
pub fn export_prompts<'env>(
    env: &'env Env,
    params: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
    let parsed = Params::<Option<ExportParams>>::optional(env, params)?.decode("exportPrompts");
    let r = parsed.and_then(|p| {
        let p = p.unwrap_or_default();
        catalog::export(p.dir.as_deref(), p.force)
    });
    to_js(env, r)
}

/// The `name, promptDir?` arguments of `what`, checked.
fn name_and_dir(
    what: &str,
    name: Unknown,
    prompt_dir: Option<Unknown>,
) -> crate::error::Result<(String, Option<String>)> {
    Ok((
        string_arg(name, what, "name")?,
        opt_string_arg(prompt_dir, what, "promptDir")?,
    ))
}

/// The active text of a template (`leaf`, `condensed-d1`, …; case-insensitive,
/// extension optional): the override file as written, else the embedded default.
#[napi(
    ts_args_type = "name: string, promptDir?: string",
    ts_return_type = "ShownPrompt"
)]
pub fn show_prompt<'env>(
    env: &'env Env,
    name: Unknown<'env>,
    prompt_dir: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
    let shown = name_and_dir("showPrompt", name, prompt_dir)
        .and_then(|(name, dir)| catalog::show(&name, dir.as_deref()));
    to_js(env, shown)
}

/// A unified diff of a template's override against its embedded default (`diff` is
/// null when there is no override).
#[napi(
    ts_args_type = "name: string, promptDir?: string",
    ts_return_type = "PromptDiff"
)]
pub fn diff_prompt<'env>(
    env: &'env Env,
    name: Unknown<'env>,
    prompt_dir: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
    let diff = name_and_dir("diffPrompt", name, prompt_dir)
        .and_then(|(name, dir)| catalog::diff(&name, dir.as_deref()));
    to_js(env, diff)
}
