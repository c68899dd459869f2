//! Retention: policies that archive, then prune, conversations nobody has written
//! to for a while, and the archives that put them back byte for byte.
//!
//! Nothing leaves the database before it is in a complete archive: the archive's
//! files are written, fsynced and renamed, its manifest (row counts and the sha256
//! of every file) written and fsynced, and only then does one write transaction
//! remove the rows, after checking that the conversation did not change since it
//! was read. A crash at any point leaves every row in the database, or in a
//! complete archive, or both.
//!
//! Layout: `<archiveDir>/<session>-c<id>/<UTC stamp>/` holds one zstd-compressed
//! JSONL file per month of messages (`YYYY-MM.jsonl.zst`: the messages created that
//! month with their parts), `conversation.jsonl.zst` (the conversation row,
//! summaries, links, context list, large-file rows, turn receipts) and
//! `manifest.json`. Each line is `{"table": …, "row": {column: value}}` with
//! SQLite's values as they were stored (see `store::retention`). Large files stay
//! where they are (their rows name them).

pub mod archive;
pub mod policy;

pub use archive::{Manifest, RestoreReport};
pub use policy::{PruneAction, PruneParams, PruneReport, RetentionPolicy};
