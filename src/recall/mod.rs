//! Recall: `grep` (regex / full text over messages and summaries), `describe`
//! (summaries with lineage and manifest, large files), `expand` (summary → sources
//! → messages under a token cap), delegation grants, and the agent tool
//! definitions. [`run`] runs each call over a store (the engine wraps it);
//! [`types`] holds their parameters and results, [`state`] the per-engine state.

pub mod catalog;
pub mod describe;
pub mod expand;
pub mod grants;
pub mod grep;
pub mod literals;
pub mod render;
pub mod run;
pub mod slices;
pub mod state;
pub mod summary_catalog;
pub mod text;
pub mod tools;
pub mod types;

pub use run::Recall;
pub use state::RecallState;
