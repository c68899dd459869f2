//! Recall methods of `LcmEngine`: grep, describe, expand, delegation grants and the
//! agent tool definitions. Same pattern as the other methods: one `JSON.stringify`
//! on the JS thread, the work off it, the result `JSON.parse`d on resolve.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::js::{arg_json, call_engine, call_engine_json, parse, resolve_json, string_arg};
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
    pub fn grep<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        call_engine(env, &self.engine, "grep", params, |engine, p| async move {
            engine.grep(p).await
        })
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
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let id = string_arg(id, "describe", "id");
        let json = arg_json(env, options)?;
        call_engine_json(
            env,
            &self.engine,
            "describe",
            json,
            move |engine, o: Option<DescribeOptions>| async move {
                engine.describe(id?, o.unwrap_or_default()).await
            },
        )
    }

    /// Walks from summaries to their sources (and leaf messages with
    /// `includeMessages`), oldest first, stopping at the token cap (`truncated`).
    #[napi(
        ts_args_type = "params: ExpandParams",
        ts_return_type = "Promise<ExpandResult>"
    )]
    pub fn expand<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        call_engine(
            env,
            &self.engine,
            "expand",
            params,
            |engine, p| async move { engine.expand(p).await },
        )
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
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        call_engine(
            env,
            &self.engine,
            "createGrant",
            params,
            |engine, p| async move { engine.create_grant(p).await },
        )
    }

    /// Revokes a grant; resolves false when the id is unknown.
    #[napi(ts_args_type = "grantId: string", ts_return_type = "Promise<boolean>")]
    pub fn revoke_grant<'env>(
        &self,
        env: &'env Env,
        grant_id: Unknown<'env>,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let grant_id = string_arg(grant_id, "revokeGrant", "grantId");
        let engine = self.engine.clone();
        resolve_json(env, async move { engine.revoke_grant(&grant_id?) })
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
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let grant_id = string_arg(grant_id, "getGrant", "grantId");
        let engine = self.engine.clone();
        resolve_json(env, async move { engine.get_grant(&grant_id?) })
    }

    /// Builds (or catches up) the in-memory message catalog behind `grep` now, so
    /// the next search does not pay for it. Optional: `grep` does it on demand.
    #[napi(ts_return_type = "Promise<RecallIndexInfo>")]
    pub fn warm_recall_index<'env>(
        &self,
        env: &'env Env,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let engine = self.engine.clone();
        resolve_json(env, async move { engine.warm_recall_index().await })
    }

    /// JSON-schema definitions of `lcm_grep`, `lcm_describe`, `lcm_expand` and
    /// `lcm_expand_query`, to register as agent tools unchanged.
    #[napi(ts_return_type = "Array<RecallToolDefinition>")]
    pub fn get_recall_tool_definitions<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
        parse(env, &self.engine.recall_tool_definitions().to_string())
    }
}
