//! Exit codes and the error type of the command line.
//!
//! - [`EXIT_OK`] (0): the command did what was asked.
//! - [`EXIT_FAILURE`] (1): the job failed — a missing database, an unknown id, a
//!   summarizer error, an I/O error, an invalid prompt override.
//! - [`EXIT_USAGE`] (2): the command line itself is wrong (clap errors, conflicting or
//!   out-of-range flags).

use crate::error::{ErrorCode, LcmError};

/// Success.
pub const EXIT_OK: i32 = 0;
/// The job failed.
pub const EXIT_FAILURE: i32 = 1;
/// Bad usage.
pub const EXIT_USAGE: i32 = 2;

/// An error a subcommand returns: the exit code, the core's `LCM_…` code when there
/// is one, and a message a person can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// The process exit code ([`EXIT_FAILURE`] or [`EXIT_USAGE`]).
    pub exit: i32,
    /// The core error code, if the error came from the core.
    pub code: Option<ErrorCode>,
    /// What went wrong and what to do.
    pub message: String,
}

impl CliError {
    /// A command-line mistake (exit 2).
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError {
            exit: EXIT_USAGE,
            code: None,
            message: message.into(),
        }
    }

    /// A failed job without a core code (exit 1).
    pub fn failure(message: impl Into<String>) -> CliError {
        CliError {
            exit: EXIT_FAILURE,
            code: None,
            message: message.into(),
        }
    }

    /// The JSON form: `{"error": {"code", "message", "exit"}}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "error": {
                "code": self.code.map(|c| c.as_str()),
                "message": self.message,
                "exit": self.exit,
            }
        })
    }
}

impl From<LcmError> for CliError {
    fn from(e: LcmError) -> Self {
        CliError {
            exit: EXIT_FAILURE,
            code: Some(e.code),
            message: e.message,
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.code {
            Some(c) => write!(f, "{} [{}]", self.message, c.as_str()),
            None => f.write_str(&self.message),
        }
    }
}

/// Result of a subcommand: an exit code, or an error to report.
pub type CliResult = std::result::Result<i32, CliError>;
