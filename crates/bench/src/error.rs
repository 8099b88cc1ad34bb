//! Errors of the harness. Each carries one readable line; the CLI prints it as
//! `error: <line>` and exits with [`BenchError::exit_code`].

use std::io;

/// Result of a harness operation.
pub type Result<T> = std::result::Result<T, BenchError>;

/// What went wrong while benchmarking.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad flags or flag combination: the user must change the command line (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// The engine failed an operation; `op` names it (e.g. "put", "open /tmp/x").
    #[error("{engine}: {op}: {message}")]
    Engine {
        /// Engine name, so that a comparison run says which engine failed.
        engine: &'static str,
        /// What the harness was doing.
        op: String,
        /// The engine's own error text.
        message: String,
    },
    /// A file operation of the harness itself (making or removing the database directory,
    /// writing the report) failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, with the path.
        context: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

impl BenchError {
    /// A usage error.
    pub fn usage(msg: impl Into<String>) -> Self {
        BenchError::Usage(msg.into())
    }

    /// An engine error of `engine` while doing `op`.
    pub fn engine(
        engine: &'static str,
        op: impl Into<String>,
        err: impl std::fmt::Display,
    ) -> Self {
        BenchError::Engine {
            engine,
            op: op.into(),
            message: err.to_string(),
        }
    }

    /// Wraps an I/O error with context.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        BenchError::Io {
            context: context.into(),
            source,
        }
    }

    /// Process exit code: 2 for usage errors (like clap's), 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            BenchError::Usage(_) => 2,
            _ => 1,
        }
    }
}

/// Writing the report: a closed stdout (e.g. `| head`) is an I/O error like any other.
pub(crate) fn out_err(source: io::Error) -> BenchError {
    BenchError::io("writing the report", source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_lines() {
        let u = BenchError::usage("unknown benchmark 'x'");
        assert_eq!(u.exit_code(), 2);
        assert_eq!(u.to_string(), "unknown benchmark 'x'");
        let e = BenchError::engine("rialto", "put", "disk full");
        assert_eq!(e.exit_code(), 1);
        assert_eq!(e.to_string(), "rialto: put: disk full");
        let io = BenchError::io(
            "create /x",
            io::Error::from(io::ErrorKind::PermissionDenied),
        );
        assert!(io.to_string().starts_with("create /x: "));
    }
}
