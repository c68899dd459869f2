//! What checking one conversation finds, shared by the check (`check`), the
//! restoration plan (`relink`) and the repairs (`repair`): what holds a row, the
//! uncovered units, how each is restored, and the analysis itself.

use std::collections::HashMap;
use std::fmt;

use super::violation::Violation;
use crate::store::derived::Meta;

/// What holds a message or a summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// The context item at this ordinal.
    Context(i64),
    /// A summary that lists it as a source.
    Summary(String),
    /// The item at this position of the items `/new` took out of the context.
    Pruned(i64),
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Holder::Context(o) => write!(f, "context item {o}"),
            Holder::Summary(s) => f.write_str(s),
            Holder::Pruned(p) => write!(f, "pruned context item {p}"),
        }
    }
}

/// Rows nothing reachable covers, restorable as one piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unit {
    /// An unreachable summary all of whose messages are uncovered.
    Summary {
        /// The topmost unreachable summary.
        id: String,
        /// Its messages.
        messages: Vec<i64>,
    },
    /// A message under no summary at all.
    Message(i64),
}

/// The results of checking one conversation.
#[derive(Debug, Default)]
pub struct Analysis {
    /// Own summaries, sources before the summaries built from them (cycles left out).
    pub order: Vec<String>,
    /// Summaries on a cycle.
    pub cycle: Vec<String>,
    /// Recomputed derived columns.
    pub expected: HashMap<String, Meta>,
    /// What reaches each reachable summary.
    pub reached: HashMap<String, Vec<Holder>>,
    /// What covers each covered message.
    pub covered: HashMap<i64, Vec<Holder>>,
    /// Uncovered rows, grouped for repair.
    pub units: Vec<Unit>,
    /// How each unit will be restored.
    pub restores: Vec<Restore>,
    /// Everything found.
    pub violations: Vec<Violation>,
}

/// How an uncovered unit is restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restore {
    /// Linked back to the summary that provably held it.
    Link {
        /// The holder.
        holder: String,
        /// What it held.
        unit: Unit,
    },
    /// Put back into the context list.
    Context(Unit),
}
