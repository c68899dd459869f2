//! Recall: `grep` (regex / full text over messages and summaries), `describe`
//! (summaries with lineage and manifest, large files), `expand` (summary → sources
//! → messages under a token cap), delegation grants, and the agent tool
//! definitions. The engine methods are in [`api`]; the rest is plain logic over a
//! connection, tested on its own.

pub mod api;
pub mod catalog;
pub mod describe;
pub mod expand;
pub mod grants;
pub mod grep;
pub mod literals;
pub mod render;
pub mod sumcat;
pub mod text;
pub mod tools;

pub use api::RecallState;
