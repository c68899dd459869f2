//! Recall methods of `LcmEngine`: grep, describe, expand, delegation grants and the
//! agent tool definitions, through the one call path (`engine_call!`).

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::js::{call, engine_call, parse, string_arg, Params, Pending};
use super::LcmEngine;
use crate::recall::types::DescribeOptions;

#[napi]
impl LcmEngine {
    /// Searches messages and/or summaries. `mode: "regex"` (default; Rust regex
    /// syntax, linear time) or `"full_text"` (FTS5, every term quoted; CJK through
    /// substring matching). Needs `conversationId`, `allConversations: true` or a
    /// `grantId`. Resolves with structured hits and the tool's `text` rendering.
    #[napi(
        ts_args_type = "params: GrepParams",
        ts_return_type = "Promise<GrepResult>"
    )]
    pub fn grep<'env>(&self, env: &'env Env, params: Unknown<'env>) -> Result<Pending<'env>> {
        engine_call!(env, self, "grep", Params::read(env, params)? => |p| grep(p))
    }

    /// Describes a `sum_…` summary (lineage, manifest, content) or a `file_…` large
    /// file (exploration summary; content with `expandFile` or `includeContent`).
    /// Resolves with null for unknown ids or ids outside `conversationId`.
    #[napi(
        ts_args_type = "id: string, options?: DescribeOptions",
        ts_return_type = "Promise<DescribeResult | null>"
    )]
    pub fn describe<'env>(
        &self,
        env: &'env Env,
        id: Unknown<'env>,
        options: Option<Unknown<'env>>,
    ) -> Result<Pending<'env>> {
        // Options first: a bad options object is reported before a bad id.
        let o = Params::<Option<DescribeOptions>>::optional(env, options)?;
        let id = string_arg(id, "describe", "id");
        let input = (o, id);
        engine_call!(env, self, "describe", input => |(o, id)| describe(id, o.unwrap_or_default()))
    }

    /// Walks from summaries to their sources (and leaf messages with
    /// `includeMessages`), oldest first, stopping at the token cap (`truncated`).
    #[napi(
        ts_args_type = "params: ExpandParams",
        ts_return_type = "Promise<ExpandResult>"
    )]
    pub fn expand<'env>(&self, env: &'env Env, params: Unknown<'env>) -> Result<Pending<'env>> {
        engine_call!(env, self, "expand", Params::read(env, params)? => |p| expand(p))
    }

    /// Creates an in-memory delegation grant scoping grep/describe/expand to some
    /// conversations with a token budget and a time to live.
    #[napi(
        ts_args_type = "params: CreateGrantParams",
        ts_return_type = "Promise<Grant>"
    )]
    pub fn create_grant<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        engine_call!(env, self, "createGrant", Params::read(env, params)? => |p| create_grant(p))
    }

    /// Revokes a grant; resolves false when the id is unknown.
    #[napi(ts_args_type = "grantId: string", ts_return_type = "Promise<boolean>")]
    pub fn revoke_grant<'env>(
        &self,
        env: &'env Env,
        grant_id: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        let id = string_arg(grant_id, "revokeGrant", "grantId");
        call(
            env,
            &self.engine,
            "revokeGrant",
            id,
            |engine, id| async move { engine.revoke_grant(&id) },
        )
    }

    /// A grant's current state (budget left, expiry, revoked), or null.
    #[napi(
        ts_args_type = "grantId: string",
        ts_return_type = "Promise<Grant | null>"
    )]
    pub fn get_grant<'env>(
        &self,
        env: &'env Env,
        grant_id: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        let id = string_arg(grant_id, "getGrant", "grantId");
        call(env, &self.engine, "getGrant", id, |engine, id| async move {
            engine.get_grant(&id)
        })
    }

    /// Builds (or catches up) the in-memory message catalog behind `grep` now, so
    /// the next search does not pay for it. Optional: `grep` does it on demand.
    #[napi(ts_return_type = "Promise<RecallIndexInfo>")]
    pub fn warm_recall_index<'env>(&self, env: &'env Env) -> Result<Pending<'env>> {
        engine_call!(env, self, "warmRecallIndex", () => |()| warm_recall_index())
    }

    /// JSON-schema definitions of `lcm_grep`, `lcm_describe`, `lcm_expand` and
    /// `lcm_expand_query`, to register as agent tools unchanged.
    #[napi(ts_return_type = "Array<RecallToolDefinition>")]
    pub fn get_recall_tool_definitions<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        parse(env, &self.engine.recall_tool_definitions().to_string())
    }
}
