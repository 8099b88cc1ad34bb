//! Rialto's log-structured merge-tree engine.
//!
//! Writes go to a write-ahead log ([`wal`]) and a concurrent skiplist memtable; full memtables
//! are flushed in the background into sorted tables ([`sstable`]) in level 0; a leveled
//! compaction merges tables down the tree. The set of live tables is a [`version`] recorded
//! in a manifest of version edits. See `docs/design.md` for formats and the recovery argument.

pub mod cache;
pub mod check;
pub mod compaction;
mod db;
pub mod iter;
pub mod key;
pub mod memtable;
pub mod options;
mod prefetch;
pub mod sstable;
pub mod throttle;
pub mod triad;
pub mod version;
pub mod wal;

pub use db::{Db, IngestOptions, IngestStats, Ingestion, Snapshot};
pub use iter::db::DbIter;
pub use options::{Compression, Options, WalRecovery};
