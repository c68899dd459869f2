//! What the doctor reports: one [`Violation`] per broken invariant, naming the rows.

use serde::Serialize;
use serde_json::Value;

/// The kinds of violation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "ViolationKind")]
pub enum Kind {
    /// `PRAGMA integrity_check` did not answer `ok`.
    SqliteIntegrity,
    /// Context ordinals are not 0..n-1.
    OrdinalGap,
    /// A context item points at a message or summary that does not exist.
    ContextDangling,
    /// A context item points at a row of another conversation.
    ContextForeign,
    /// A `summary_parents` / `summary_messages` row points at a missing row.
    LinkDangling,
    /// A link joins rows of two conversations.
    LinkForeign,
    /// `summary_parents` links form a cycle.
    Cycle,
    /// A summary is reached from the context list by more than one path.
    ReachedTwice,
    /// A summary has no sources, or both messages and summaries as sources.
    SummarySources,
    /// Messages covered neither by the context list nor by a summary reachable from it.
    UncoveredMessages,
    /// A message covered more than once.
    CoveredTwice,
    /// A summary's derived columns differ from their recomputation.
    Metadata,
    /// A row without its full-text row.
    FtsMissing,
    /// A full-text row without its row.
    FtsExtra,
    /// A full-text row whose text differs from its row.
    FtsOutdated,
    /// Two full-text rows for one row.
    FtsDuplicate,
    /// A full-text index that does not match its stored text.
    FtsIndex,
    /// A large file is not at its recorded path but under `largeFilesDir` by its id.
    LargeFileMoved,
    /// A large file is neither at its recorded path nor under `largeFilesDir`.
    LargeFileMissing,
}

/// One broken invariant.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    /// What is broken.
    pub kind: Kind,
    /// The conversation it belongs to (`None`: the whole database).
    pub conversation_id: Option<i64>,
    /// Summaries involved.
    pub summary_ids: Vec<String>,
    /// Messages involved.
    pub message_ids: Vec<i64>,
    /// Whether `apply` repairs it without losing anything.
    pub repairable: bool,
    /// What is wrong, naming the rows.
    pub message: String,
    /// Kind-specific details (columns, ordinals, table).
    #[serde(skip_serializing_if = "Value::is_null")]
    #[ts(as = "Option<crate::typegen::JsonObject>", optional)]
    pub details: Value,
}

impl Violation {
    /// A violation without rows or details.
    pub fn new(kind: Kind, conversation_id: Option<i64>, message: impl Into<String>) -> Self {
        Violation {
            kind,
            conversation_id,
            summary_ids: Vec::new(),
            message_ids: Vec::new(),
            repairable: false,
            message: message.into(),
            details: Value::Null,
        }
    }

    /// Sets the summaries involved.
    pub fn summaries(mut self, ids: Vec<String>) -> Self {
        self.summary_ids = ids;
        self
    }

    /// Sets the messages involved.
    pub fn messages(mut self, ids: Vec<i64>) -> Self {
        self.message_ids = ids;
        self
    }

    /// Marks it repairable.
    pub fn repairable(mut self) -> Self {
        self.repairable = true;
        self
    }

    /// Sets the details.
    pub fn details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// A key that identifies the violation across two checks (kind + rows).
    pub fn key(&self) -> (Kind, Option<i64>, Vec<String>, Vec<i64>) {
        (
            self.kind,
            self.conversation_id,
            self.summary_ids.clone(),
            self.message_ids.clone(),
        )
    }
}

/// A short list of ids for messages (`1, 2, 3 … (+7 more)`).
pub fn list<T: std::fmt::Display>(ids: &[T]) -> String {
    const SHOWN: usize = 12;
    let mut s = ids
        .iter()
        .take(SHOWN)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        s.push_str(&format!(" … (+{} more)", ids.len() - SHOWN));
    }
    s
}
