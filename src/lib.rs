//! lcm-native: Lossless Context Management for LLM agents.
//!
//! Every message is kept in SQLite; old messages are summarized into a DAG of leaf
//! and condensed summaries; each turn's context is assembled from XML-wrapped
//! summaries plus a fresh tail of raw messages. See ARCHITECTURE.md for the codemap.
//!
//! Only [`binding`] knows about JavaScript; everything else is plain Rust.

// Library code slices strings only through `text`'s char-boundary-safe helpers.
#![cfg_attr(not(test), warn(clippy::string_slice))]

pub mod assembler;
pub mod cli;
pub mod compaction;
pub mod config;
pub mod counts;
pub mod dagops;
pub mod doctor;
pub mod engine;
pub mod error;
pub mod host;
pub mod ingest;
pub mod largefiles;
pub mod lifecycle;
pub mod message;
pub mod params;
pub mod prompts;
pub mod recall;
pub mod retention;
pub mod rewrite;
pub mod status;
pub mod store;
pub mod summarize;
pub mod text;
pub mod timeformat;
pub mod timestamp;
pub mod tokens;
pub mod transcript;
pub mod turn;

mod binding;
#[cfg(test)]
mod props;
pub mod typegen;
