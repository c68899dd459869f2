//! Recall: `grep`, `describe`, `expand`, grants, `warmRecallIndex`, the tool
//! definitions and `getMessages` with large files re-inlined — thin methods over
//! [`crate::recall::Recall`].

use serde_json::Value;

use super::Engine;
use crate::error::Result;
use crate::recall::grants::{CreateGrantParams, GrantInfo};
use crate::recall::types::{
    DescribeOptions, DescribeResult, ExpandParams, ExpandResult, GetMessagesOptions, GrepParams,
    GrepResult, IndexInfo,
};
use crate::recall::Recall;

impl Engine {
    fn recall(&self) -> Recall<'_> {
        Recall {
            store: &self.store,
            opts: &self.opts,
            zone: self.zone,
            state: &self.recall,
        }
    }

    /// Searches messages and/or summaries by regex or full text (see `grep`).
    pub async fn grep(&self, p: GrepParams) -> Result<GrepResult> {
        self.recall().grep(p).await
    }

    /// Describes a summary or a large file; `None` when the id is unknown or outside
    /// the requested conversation.
    pub async fn describe(
        &self,
        raw_id: String,
        o: DescribeOptions,
    ) -> Result<Option<DescribeResult>> {
        self.recall().describe(raw_id, o).await
    }

    /// Expands summaries to their sources (and leaf messages) within a token cap.
    pub async fn expand(&self, p: ExpandParams) -> Result<ExpandResult> {
        self.recall().expand(p).await
    }

    /// Creates a delegation grant (conversations must exist).
    pub async fn create_grant(&self, p: CreateGrantParams) -> Result<GrantInfo> {
        self.recall().create_grant(p).await
    }

    /// Revokes a grant; false when it is unknown.
    pub fn revoke_grant(&self, grant_id: &str) -> Result<bool> {
        self.recall().revoke_grant(grant_id)
    }

    /// A grant's current state, or `None` when unknown.
    pub fn get_grant(&self, grant_id: &str) -> Result<Option<GrantInfo>> {
        self.recall().get_grant(grant_id)
    }

    /// Builds (or catches up) the in-memory message catalog now, so the next `grep`
    /// does not pay for it; hosts can call it when idle after opening.
    pub async fn warm_recall_index(&self) -> Result<IndexInfo> {
        self.recall().warm_recall_index().await
    }

    /// Starts building the recall catalogs on a read connection in the
    /// background, so the first `grep` after a restart rarely waits for them (the
    /// binding calls it right after open; the CLI does not need it).
    pub fn build_recall_index_in_background(&self) {
        self.recall().build_index_in_background()
    }

    /// The agent tool definitions.
    pub fn recall_tool_definitions(&self) -> Value {
        crate::recall::tools::definitions()
    }

    /// Every message of a conversation in seq order: as ingested (large files
    /// re-inlined from disk) by default, or in stored form with `expandFiles: false`.
    pub async fn get_messages_with(
        &self,
        conversation_id: i64,
        o: GetMessagesOptions,
    ) -> Result<Vec<Value>> {
        self.recall().get_messages_with(conversation_id, o).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EngineOptions;
    use crate::engine::IngestBatchParams;
    use crate::recall::grep::{Mode, Scope, Sort};
    use serde_json::{json, Value};

    /// Regex grep returns exactly what a naive scan returns (newest `limit` by time,
    /// then id), also when timestamps are out of order with ids.
    #[tokio::test]
    async fn regex_grep_equals_a_naive_scan() {
        let opts = EngineOptions {
            db_path: Some(":memory:".into()),
            ..Default::default()
        };
        let e = Engine::open(opts).await.unwrap();
        let words = [
            "Alpha1", "alpha2", "beta-77", "gamma", "DELTA", "Ωmega", "epsilon", "zeta",
        ];
        let mut all = Vec::new();
        for conv in ["a", "b"] {
            let msgs: Vec<Value> = (0..300u64)
                .map(|i| {
                    let w1 = words[(i * 7 % 8) as usize];
                    let w2 = words[(i * 3 % 8) as usize];
                    // Times go backwards every 50 messages (imports, clock skew).
                    let t = 1_771_313_820_000i64 + ((i % 50) as i64 * 60_000) - (i / 50) as i64 * 600_000;
                    json!({"role": "user", "content": format!("m{i} {w1} {} {w2}", i * 37 % 1000), "timestamp": t})
                })
                .collect();
            let r = e
                .ingest_batch(IngestBatchParams {
                    session_id: conv.into(),
                    session_key: None,
                    messages: msgs.clone(),
                    entry_ids: None,
                    is_heartbeat: false,
                })
                .await
                .unwrap();
            for (m, out) in msgs.iter().zip(r.results) {
                all.push((
                    r.conversation_id.unwrap(),
                    out.message_id.unwrap(),
                    m["timestamp"].as_i64().unwrap() / 1000 * 1000,
                    m["content"].as_str().unwrap().to_owned(),
                ));
            }
        }
        for pat in [
            r"(?i)alpha\d",
            r"beta-\d+",
            "gamma|delta",
            r"\b\d{3}\b",
            r"Ωmega",
            "m1\\d ",
        ] {
            let re = regex::Regex::new(pat).unwrap();
            let mut want: Vec<&(i64, i64, i64, String)> = all
                .iter()
                .filter(|m| m.0 == 1 && re.is_match(&m.3))
                .collect();
            want.sort_by_key(|m| std::cmp::Reverse((m.2, m.1)));
            let want: Vec<i64> = want.iter().take(10).map(|m| m.1).collect();
            let got = e
                .grep(GrepParams {
                    pattern: pat.into(),
                    mode: Mode::Regex,
                    scope: Scope::Messages,
                    conversation_id: Some(1),
                    conversation_ids: None,
                    all_conversations: None,
                    since: None,
                    before: None,
                    limit: Some(10),
                    sort: Sort::Recency,
                    grant_id: None,
                })
                .await
                .unwrap();
            let got: Vec<i64> = got.messages.iter().map(|m| m.message_id).collect();
            assert_eq!(got, want, "pattern {pat}");
        }
        for word in ["gamma", "delta", "zeta"] {
            let has = |c: &str| {
                c.split(|ch: char| !ch.is_alphanumeric())
                    .any(|t| t.eq_ignore_ascii_case(word))
            };
            let mut want: Vec<&(i64, i64, i64, String)> =
                all.iter().filter(|m| m.0 == 2 && has(&m.3)).collect();
            want.sort_by_key(|m| std::cmp::Reverse((m.2, m.1)));
            let want: Vec<i64> = want.iter().take(7).map(|m| m.1).collect();
            let p = GrepParams {
                pattern: word.into(),
                mode: Mode::FullText,
                scope: Scope::Both,
                conversation_id: Some(2),
                conversation_ids: None,
                all_conversations: None,
                since: None,
                before: None,
                limit: Some(7),
                sort: Sort::Recency,
                grant_id: None,
            };
            let got = e.grep(p).await.unwrap();
            let got: Vec<i64> = got.messages.iter().map(|m| m.message_id).collect();
            assert_eq!(got, want, "full text {word}");
        }
        e.close().await.unwrap();
    }

    /// Without usable FTS tables, full text still answers (substring / LIKE).
    #[tokio::test]
    async fn full_text_survives_a_missing_fts_index() {
        let opts = EngineOptions {
            db_path: Some(":memory:".into()),
            ..Default::default()
        };
        let e = Engine::open(opts).await.unwrap();
        let msgs = vec![
            json!({"role":"user","content":"the Quokka ate"}),
            json!({"role":"user","content":"nothing here"}),
        ];
        let p = IngestBatchParams {
            session_id: "s".into(),
            session_key: None,
            messages: msgs,
            entry_ids: None,
            is_heartbeat: false,
        };
        e.ingest_batch(p).await.unwrap();
        e.store()
            .write(|c| Ok(c.execute_batch("DROP TABLE messages_fts; DROP TABLE summaries_fts;")?))
            .await
            .unwrap();
        let g = GrepParams {
            pattern: "quokka".into(),
            mode: Mode::FullText,
            scope: Scope::Both,
            conversation_id: Some(1),
            conversation_ids: None,
            all_conversations: None,
            since: None,
            before: None,
            limit: None,
            sort: Sort::Recency,
            grant_id: None,
        };
        let r = e.grep(g).await.unwrap();
        assert_eq!(r.messages.len(), 1);
        assert_eq!(r.message_stats.unwrap().strategy, "trigram-filter");
        assert_eq!(r.summary_stats.unwrap().strategy, "like");
        e.close().await.unwrap();
    }
}
