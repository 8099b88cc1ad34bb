//! [`SortError`] and its helpers.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// Everything that can go wrong while sorting.
#[derive(Debug, thiserror::Error)]
pub enum SortError {
    /// A file-system operation on a run file (or the temporary directory) failed.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory the operation was about.
        path: PathBuf,
        /// The error the file system returned.
        #[source]
        source: io::Error,
    },
    /// A run file read back differs from what was written: checksum mismatch, bad length,
    /// unparsable record, truncated file.
    #[error("corrupt sort run {} at offset {offset}: {reason}", path.display())]
    Corrupt {
        /// The run file.
        path: PathBuf,
        /// Offset in the file of the block (or record) found bad.
        offset: u64,
        /// What was wrong.
        reason: String,
    },
    /// Two records with the same key were added under [`DuplicatePolicy::Error`].
    ///
    /// [`DuplicatePolicy::Error`]: crate::DuplicatePolicy::Error
    #[error("duplicate key {}", escape_key(key))]
    DuplicateKey {
        /// The duplicated key.
        key: Vec<u8>,
    },
    /// A key longer than [`SortOptions::max_key_len`](crate::SortOptions::max_key_len).
    #[error("key of {len} bytes is longer than the limit of {max} bytes")]
    KeyTooLong {
        /// Length of the rejected key.
        len: usize,
        /// The limit in force.
        max: usize,
    },
    /// A value longer than [`SortOptions::max_value_len`](crate::SortOptions::max_value_len).
    #[error("value of {len} bytes is longer than the limit of {max} bytes")]
    ValueTooLong {
        /// Length of the rejected value.
        len: usize,
        /// The limit in force.
        max: usize,
    },
    /// An empty key (keys must have at least one byte).
    #[error("empty key")]
    EmptyKey,
}

impl SortError {
    pub(crate) fn io(path: &Path, source: io::Error) -> Self {
        SortError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn corrupt(path: &Path, offset: u64, reason: impl Into<String>) -> Self {
        SortError::Corrupt {
            path: path.to_path_buf(),
            offset,
            reason: reason.into(),
        }
    }

    /// Returned by every call after a sorter or merge failed: the first error said why.
    pub(crate) fn failed_earlier(path: &Path) -> Self {
        SortError::io(
            path,
            io::Error::other("the sort failed earlier (see the first error) and cannot continue"),
        )
    }
}

/// Bytes of a key shown in messages; longer keys are cut and their length given.
const KEY_SHOWN: usize = 100;

/// `key` in double quotes, printable ASCII as-is and every other byte (and `"` and `\`) as
/// `\xNN`, cut after [`KEY_SHOWN`] bytes.
pub(crate) fn escape_key(key: &[u8]) -> String {
    let mut s = String::with_capacity(key.len().min(KEY_SHOWN) + 2);
    s.push('"');
    for &b in key.iter().take(KEY_SHOWN) {
        match b {
            b'"' | b'\\' => {
                let _ = write!(s, "\\x{b:02x}");
            }
            0x20..=0x7e => s.push(char::from(b)),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s.push('"');
    if key.len() > KEY_SHOWN {
        let _ = write!(s, "... ({} bytes)", key.len());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_truncates() {
        assert_eq!(escape_key(b"abc"), "\"abc\"");
        assert_eq!(
            escape_key(b"a\x00\xff\"\\ z"),
            "\"a\\x00\\xff\\x22\\x5c z\""
        );
        let long = vec![b'k'; 300];
        let shown = escape_key(&long);
        assert!(shown.starts_with(&format!("\"{}\"", "k".repeat(100))));
        assert!(shown.ends_with("... (300 bytes)"));
        let e = SortError::DuplicateKey {
            key: b"x\x01".to_vec(),
        };
        assert_eq!(e.to_string(), "duplicate key \"x\\x01\"");
    }
}
