//! Rialto's log-structured merge-tree engine.
//!
//! Writes go to a write-ahead log ([`wal`]) and a concurrent skiplist memtable; full memtables
//! are flushed in the background into sorted tables ([`sstable`]) in level 0; a leveled
//! compaction merges tables down the tree. The set of live tables is a [`version`] recorded
//! in a manifest of version edits. See `docs/design.md` for formats and the recovery argument.

// The on-disk formats stay public as namespaces: the fuzz targets, the format tests and
// `rialto check` read and write files through them directly. `triad` is the vocabulary of
// TRIAD's options and statistics (modes, workload classes, windows, decisions).
pub mod check;
pub mod key;
pub mod sstable;
pub mod triad;
pub mod version;
pub mod wal;

mod cache;
mod compaction;
mod db;
mod iter;
mod memtable;
mod options;
mod prefetch;
mod throttle;

pub use cache::row::PREFETCH_MAX;
pub use cache::BlockCache;
pub use db::{Db, IngestOptions, IngestStats, Ingestion, Sampler, Snapshot};
pub use iter::db::DbIter;
pub use iter::InternalIterator;
pub use memtable::MemTable;
pub use options::{Compression, CompressionFor, Options, WalRecovery};
pub use throttle::ThrottleOptions;
