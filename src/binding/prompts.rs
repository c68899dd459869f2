//! Synchronous helpers on the addon: `renderPrompt` (see exactly what a summarizer
//! is sent), `formatTimestamp` and `formatTimeRange` (the prompt/XML time formats).
//! Errors throw an `Error` with the `LCM_…` code.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::js::{coded, opt_string_arg, stringify, to_js, Input, Params};
use crate::error::LcmError;
use crate::prompts::source::parse_time_value;
use crate::timeformat::Zone;

/// The optional `timezone` argument of `what`, resolved (`LCM_CONFIG` for an unknown
/// zone, `LCM_INVALID_INPUT` for a value that is not a string).
fn zone_arg(env: &Env, timezone: Option<Unknown<'_>>, what: &str) -> Result<Zone> {
    let zone =
        opt_string_arg(timezone, what, "timezone").and_then(|tz| Zone::resolve(tz.as_deref()));
    coded(env, zone)
}

fn time_arg(env: &Env, v: Unknown<'_>) -> Result<chrono::DateTime<chrono::Utc>> {
    let json = stringify(env, v)?;
    let parsed = serde_json::from_str::<serde_json::Value>(&json)
        .map_err(|e| LcmError::invalid(format!("not a timestamp: {e}")))
        .and_then(|v| parse_time_value(&v));
    coded(env, parsed)
}

/// Renders the summarization prompt for a depth (0 leaf, 1, 2, 3+) exactly as the
/// engine would send it, with the system prompt, the template used and its source
/// (`embedded` or the override file). Throws `LCM_TEMPLATE` for a broken override.
#[napi(
    ts_args_type = "params: RenderPromptParams",
    ts_return_type = "RenderedPrompt"
)]
pub fn render_prompt<'env>(env: &'env Env, params: Unknown<'env>) -> Result<Unknown<'env>> {
    let params = Params::read(env, params)?.decode("renderPrompt");
    let rendered = params.and_then(crate::summarize::render_params);
    to_js(env, rendered)
}

/// `2026-02-17 15:37 PST`: a time (epoch ms, ISO string or Date) in `timezone`
/// (IANA; default `TZ`, else UTC). Throws `LCM_CONFIG` for an unknown zone.
#[napi(ts_args_type = "value: number | string | Date, timezone?: string")]
pub fn format_timestamp<'env>(
    env: &'env Env,
    value: Unknown<'env>,
    timezone: Option<Unknown<'env>>,
) -> Result<String> {
    let zone = zone_arg(env, timezone, "formatTimestamp")?;
    Ok(zone.format_timestamp(time_arg(env, value)?))
}

/// `2026-02-17 15:37–17:21 PST` within a day, `2026-02-17 – 2026-02-18` across days.
/// Throws `LCM_CONFIG` for an unknown zone.
#[napi(
    ts_args_type = "earliest: number | string | Date, latest: number | string | Date, timezone?: string"
)]
pub fn format_time_range(
    env: &Env,
    earliest: Unknown<'_>,
    latest: Unknown<'_>,
    timezone: Option<Unknown<'_>>,
) -> Result<String> {
    let zone = zone_arg(env, timezone, "formatTimeRange")?;
    let a = time_arg(env, earliest)?;
    let b = time_arg(env, latest)?;
    Ok(zone.format_range(a, b))
}
