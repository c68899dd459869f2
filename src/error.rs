//! Typed errors of the core. Every variant maps to a stable code (`LCM_…`) that the
//! binding layer puts on the JavaScript `Error` as `err.code`.

use std::fmt;

/// The stable error codes a caller can branch on (`err.code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ts_rs::TS)]
#[ts(rename = "LcmErrorCode")]
pub enum ErrorCode {
    /// The caller passed something malformed (missing role, wrong type, bad option).
    #[ts(rename = "LCM_INVALID_INPUT")]
    InvalidInput,
    /// The database file could not be opened, created or migrated.
    #[ts(rename = "LCM_DB_OPEN")]
    DbOpen,
    /// SQLite stayed busy/locked past the busy timeout.
    #[ts(rename = "LCM_DB_BUSY")]
    DbBusy,
    /// Any other SQLite failure.
    #[ts(rename = "LCM_DB")]
    Db,
    /// The engine was closed before or during the call.
    #[ts(rename = "LCM_CLOSED")]
    Closed,
    /// A configuration value (timezone, prompt template, provider) is unusable.
    #[ts(rename = "LCM_CONFIG")]
    Config,
    /// A prompt template failed to parse or render.
    #[ts(rename = "LCM_TEMPLATE")]
    Template,
    /// The summarizer provider rejected the credentials (HTTP 401/403).
    #[ts(rename = "LCM_LLM_AUTH")]
    LlmAuth,
    /// The summarizer provider rate-limited the request and retries ran out.
    #[ts(rename = "LCM_LLM_RATE_LIMIT")]
    LlmRateLimit,
    /// A transient provider failure (5xx, timeout, connection) after retries.
    #[ts(rename = "LCM_LLM_TRANSIENT")]
    LlmTransient,
    /// The provider answered with something that is not a usable summary.
    #[ts(rename = "LCM_LLM_BAD_RESPONSE")]
    LlmBadResponse,
    /// The host summarizer callback threw, rejected or returned the wrong type.
    #[ts(rename = "LCM_CALLBACK")]
    Callback,
    /// A referenced conversation, summary, message, file or grant does not exist.
    #[ts(rename = "LCM_NOT_FOUND")]
    NotFound,
    /// A delegation grant was revoked.
    #[ts(rename = "LCM_GRANT_REVOKED")]
    GrantRevoked,
    /// A delegation grant expired.
    #[ts(rename = "LCM_GRANT_EXPIRED")]
    GrantExpired,
    /// A delegation grant does not cover the requested conversation or summary.
    #[ts(rename = "LCM_GRANT_SCOPE")]
    GrantScope,
    /// A delegation grant's token budget is used up.
    #[ts(rename = "LCM_GRANT_EXHAUSTED")]
    GrantExhausted,
    /// The operation was cancelled (AbortSignal or `cancel()`).
    #[ts(rename = "LCM_ABORTED")]
    Aborted,
    /// A filesystem operation failed.
    #[ts(rename = "LCM_IO")]
    Io,
    /// A turn's advancement key was committed before with a different payload.
    #[ts(rename = "LCM_TURN_CONFLICT")]
    TurnConflict,
    /// A bug: an invariant the engine relies on did not hold.
    #[ts(rename = "LCM_INTERNAL")]
    Internal,
}

impl ErrorCode {
    /// The code string exposed to JavaScript.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidInput => "LCM_INVALID_INPUT",
            ErrorCode::DbOpen => "LCM_DB_OPEN",
            ErrorCode::DbBusy => "LCM_DB_BUSY",
            ErrorCode::Db => "LCM_DB",
            ErrorCode::Closed => "LCM_CLOSED",
            ErrorCode::Config => "LCM_CONFIG",
            ErrorCode::Template => "LCM_TEMPLATE",
            ErrorCode::LlmAuth => "LCM_LLM_AUTH",
            ErrorCode::LlmRateLimit => "LCM_LLM_RATE_LIMIT",
            ErrorCode::LlmTransient => "LCM_LLM_TRANSIENT",
            ErrorCode::LlmBadResponse => "LCM_LLM_BAD_RESPONSE",
            ErrorCode::Callback => "LCM_CALLBACK",
            ErrorCode::NotFound => "LCM_NOT_FOUND",
            ErrorCode::GrantRevoked => "LCM_GRANT_REVOKED",
            ErrorCode::GrantExpired => "LCM_GRANT_EXPIRED",
            ErrorCode::GrantScope => "LCM_GRANT_SCOPE",
            ErrorCode::GrantExhausted => "LCM_GRANT_EXHAUSTED",
            ErrorCode::Aborted => "LCM_ABORTED",
            ErrorCode::Io => "LCM_IO",
            ErrorCode::TurnConflict => "LCM_TURN_CONFLICT",
            ErrorCode::Internal => "LCM_INTERNAL",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error of the core: a stable code plus a message a person can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LcmError {
    /// The stable code.
    pub code: ErrorCode,
    /// What went wrong and, where possible, what to do about it.
    pub message: String,
}

impl LcmError {
    /// Builds an error from a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        LcmError {
            code,
            message: message.into(),
        }
    }

    /// Shorthand for [`ErrorCode::InvalidInput`].
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidInput, message)
    }

    /// Shorthand for [`ErrorCode::NotFound`].
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    /// Shorthand for [`ErrorCode::Internal`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }

    /// Shorthand for [`ErrorCode::Closed`].
    pub fn closed() -> Self {
        Self::new(
            ErrorCode::Closed,
            "the engine is closed; open a new LcmEngine to continue",
        )
    }

    /// Prefixes the message with context, keeping the code.
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }
}

impl fmt::Display for LcmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for LcmError {}

impl From<rusqlite::Error> for LcmError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ffi::ErrorCode as C;
        let code = match e.sqlite_error_code() {
            Some(C::DatabaseBusy) | Some(C::DatabaseLocked) => ErrorCode::DbBusy,
            Some(C::NotADatabase) | Some(C::CannotOpen) => ErrorCode::DbOpen,
            _ => ErrorCode::Db,
        };
        let hint = match code {
            ErrorCode::DbBusy => " (another process holds a write lock longer than busyTimeoutMs; retry, or raise busyTimeoutMs)",
            _ => "",
        };
        LcmError::new(code, format!("SQLite error: {e}{hint}"))
    }
}

impl From<std::io::Error> for LcmError {
    fn from(e: std::io::Error) -> Self {
        LcmError::new(ErrorCode::Io, e.to_string())
    }
}

impl From<serde_json::Error> for LcmError {
    fn from(e: serde_json::Error) -> Self {
        LcmError::invalid(format!("invalid JSON: {e}"))
    }
}

/// The result type of the core.
pub type Result<T, E = LcmError> = std::result::Result<T, E>;
