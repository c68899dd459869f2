//! Tests that need the whole engine: each opens an [`Engine`](super::Engine) and
//! drives a feature through the async API. They live here, in the engine layer,
//! because feature modules never import the engine (not even in tests).

mod compaction;
mod dagops;
mod doctor;
mod rewrite;
mod round_trip;
