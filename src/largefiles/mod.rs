//! Large-file handling. At ingest, `<file>` blocks of user and tool-result messages
//! (and whole tool results) of at least `largeFileTokenThreshold` estimated tokens
//! are written to `largeFilesDir/<conversation_id>/<file_id>.<ext>`, recorded in
//! `large_files` with a deterministic exploration summary, and replaced in the
//! stored message by a compact `[LCM File: …]` / `[LCM Tool Output: …]` reference.
//!
//! Losslessness: the stored message holds the reference (that is what assembly
//! shows the model); [`restore`] puts the exact original bytes back, which is what
//! `getMessages` does by default (`expandFiles: true`).

pub mod blocks;
pub mod explore;
pub mod intercept;
pub mod restore;
pub mod storage;
pub mod upgrade;
