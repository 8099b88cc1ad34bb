//! The error type shared by engines.

use std::io;

/// Result of an engine operation.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong in an engine operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O operation failed; `context` names the operation and file.
    #[error("I/O error: {context}: {source}")]
    Io {
        /// What was being done, e.g. "sync WAL 000012.log".
        context: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Stored data failed a checksum or structural check. Never returned as data.
    #[error("corruption in {file} at offset {offset}: {reason}")]
    Corruption {
        /// File that holds the bad bytes.
        file: String,
        /// Byte offset of the bad record or block.
        offset: u64,
        /// What check failed.
        reason: String,
    },
    /// The caller passed something the engine cannot accept (too long a key, bad option...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A previous write or sync failed; the engine refuses writes until reopened.
    #[error("engine is read-only after a failure: {0}")]
    ReadOnly(String),
    /// Another process or handle holds the database directory.
    #[error("database directory {0} is locked by another process")]
    Locked(String),
    /// The database does not exist and creation was not requested.
    #[error("no database at {0}")]
    NotFound(String),
    /// The engine is shutting down or closed.
    #[error("engine is closed")]
    Closed,
    /// A transaction's own code failed unexpectedly (it panicked): its writes were dropped,
    /// and the engine goes on.
    #[error("transaction aborted by an internal error: {0}")]
    Aborted(String),
}

impl Error {
    /// Wraps an I/O error with context.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
    /// A corruption error.
    pub fn corruption(file: impl Into<String>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }
    /// A copy of this error (`io::Error` is not `Clone`; the copy keeps its kind and text).
    /// Iterators and the read-only state hand the same error to many callers.
    pub fn duplicate(&self) -> Error {
        match self {
            Error::Io { context, source } => Error::Io {
                context: context.clone(),
                source: match source.raw_os_error() {
                    Some(code) => io::Error::from_raw_os_error(code),
                    None => io::Error::new(source.kind(), source.to_string()),
                },
            },
            Error::Corruption {
                file,
                offset,
                reason,
            } => Error::Corruption {
                file: file.clone(),
                offset: *offset,
                reason: reason.clone(),
            },
            Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
            Error::ReadOnly(s) => Error::ReadOnly(s.clone()),
            Error::Locked(s) => Error::Locked(s.clone()),
            Error::NotFound(s) => Error::NotFound(s.clone()),
            Error::Closed => Error::Closed,
            Error::Aborted(s) => Error::Aborted(s.clone()),
        }
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}
