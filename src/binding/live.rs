//! `assemble`'s live messages stay on the JavaScript side. The host may pass its whole
//! transcript every turn; serializing it only to learn its length would cost the JS
//! thread time in proportion to the session. The binding keeps a reference to the
//! array, sends the core only its length, and — when the core falls back — resolves
//! with that very array (by identity) and its token estimate, or, when it is over
//! the budget, with a new array of the messages the clamp keeps (the same objects).

use napi::bindgen_prelude::*;
use napi::UnknownRef;

use super::js::{coded, copy_without, parse, stringify};
use crate::assembler::{self, AssembleResult};
use crate::error::LcmError;

/// The host's `messages` array, held until the call resolves.
pub struct LiveArray {
    array: UnknownRef,
    len: usize,
}

impl LiveArray {
    /// How many live messages the host passed.
    pub fn len(&self) -> usize {
        self.len
    }
}

/// The parameters as JSON without `messages` when `messages` is an array (kept as a
/// reference), else as given (so the core reports a malformed `messages`).
pub fn split_messages<'env>(
    env: &'env Env,
    params: Unknown<'env>,
) -> Result<(String, Option<LiveArray>)> {
    if params.get_type()? != ValueType::Object {
        return Ok((stringify(env, params)?, None));
    }
    // SAFETY: `params` is a value of this env, checked above to be an object.
    let obj: Object = unsafe { params.cast()? };
    let messages: Unknown = obj.get_named_property("messages")?;
    if !messages.is_array()? {
        return Ok((stringify(env, params)?, None));
    }
    // SAFETY: `messages` is a value of this env, checked above to be an array.
    let array: Array = unsafe { messages.cast()? };
    let len = array.len() as usize;
    let copy = copy_without(env, &obj, &["messages"])?;
    let json = stringify(env, copy.to_unknown())?;
    let array = messages.create_ref()?;
    Ok((json, Some(LiveArray { array, len })))
}

/// The core's result serialized off the JS thread, with what the resolve step needs.
/// Summary texts (most of the bytes) travel beside the JSON and become JavaScript
/// strings directly, so the JS thread does not scan them in `JSON.parse`.
pub struct Prepared {
    text: String,
    summaries: Vec<(usize, String)>,
    live_fallback: bool,
    token_budget: i64,
}

/// Serializes a result (call it in the future, off the JS thread).
pub fn prepare(r: crate::error::Result<AssembleResult>) -> crate::error::Result<Prepared> {
    let mut r = r?;
    let mut summaries = Vec::with_capacity(r.summary_positions.len());
    for &i in &r.summary_positions {
        // Summary messages are made per assembly (never shared with the cache), so
        // this takes the text out without copying the message.
        let content = r
            .messages
            .get_mut(i)
            .and_then(|m| m.make_mut().get_mut("content"));
        if let Some(serde_json::Value::String(s)) = content {
            summaries.push((i, std::mem::take(s)));
        }
    }
    Ok(Prepared {
        text: serde_json::to_string(&r)
            .map_err(|e| LcmError::internal(format!("cannot serialize result: {e}")))?,
        summaries,
        live_fallback: r.stats.live_fallback,
        token_budget: r.stats.token_budget,
    })
}

/// Puts the summary texts into the parsed result's messages.
fn restore_summaries(env: &Env, value: &Unknown, summaries: &[(usize, String)]) -> Result<()> {
    if summaries.is_empty() {
        return Ok(());
    }
    // SAFETY: `value` is `JSON.parse` of a serialized `AssembleResult` struct
    // (`build`), so an object of this env.
    let obj: Object = unsafe { value.cast()? };
    let messages: Object = obj.get_named_property("messages")?;
    for (i, text) in summaries {
        let mut m: Object = messages.get_element(*i as u32)?;
        m.set_named_property("content", env.create_string(text)?)?;
    }
    Ok(())
}

/// The resolved value; on a live fallback `messages` is the host's own array and
/// `estimatedTokens` its estimate. Releases the reference either way.
pub fn resolve<'env>(
    env: &'env Env,
    r: crate::error::Result<Prepared>,
    live: Option<LiveArray>,
) -> Result<Unknown<'env>> {
    let out = build(env, r, live.as_ref());
    if let Some(l) = live {
        l.array.unref(env)?;
    }
    out
}

fn build<'env>(
    env: &'env Env,
    r: crate::error::Result<Prepared>,
    live: Option<&LiveArray>,
) -> Result<Unknown<'env>> {
    let p = coded(env, r)?;
    let value = parse(env, &p.text)?;
    restore_summaries(env, &value, &p.summaries)?;
    let Some(l) = live.filter(|_| p.live_fallback) else {
        return Ok(value);
    };
    let array = l.array.get_value(env)?;
    let values: Vec<serde_json::Value> =
        serde_json::from_str(&stringify(env, array)?).unwrap_or_default();
    let c = assembler::clamp_live(&values, p.token_budget);
    // SAFETY: `value` is `JSON.parse` of a serialized `AssembleResult` struct,
    // so an object of this env.
    let mut obj: Object = unsafe { value.cast()? };
    if c.dropped == 0 {
        obj.set_named_property("messages", array)?;
    } else {
        // The kept messages, by identity, in a new array.
        // SAFETY: `array` is the value `l.array` references: the host's `messages`,
        // checked to be an array in `split_messages` when the reference was made.
        let source: Array = unsafe { array.cast()? };
        let mut kept = env.create_array(0)?;
        for (i, _) in c.keep.iter().enumerate().filter(|(_, k)| **k) {
            kept.insert(source.get::<Unknown>(i as u32)?)?;
        }
        obj.set_named_property("messages", kept)?;
    }
    obj.set_named_property("estimatedTokens", c.tokens)?;
    let mut stats: Object = obj.get_named_property("stats")?;
    stats.set_named_property("messagesIncluded", (c.keep.len() - c.dropped) as i64)?;
    stats.set_named_property("overBudget", c.tokens > p.token_budget)?;
    stats.set_named_property("clampedMessages", c.dropped as i64)?;
    stats.set_named_property("clampedTokens", c.dropped_tokens)?;
    Ok(value)
}
