//! Rialto's transaction merger (RavenDB's design): operations from many writers are merged
//! into one journal write and one `fdatasync`, and with async commit the next group already
//! executes while the previous one syncs.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # fn demo(db: Arc<rialto_lsm::Db>) -> rialto_engine::Result<()> {
//! use rialto_txn::{Merger, MergerOptions};
//! let merger = Merger::start(db, MergerOptions::default(), Arc::new(rialto_io::SystemClock::new()))?;
//! // INCR: a read-modify-write that may build on writes not yet durable; the reply is
//! // released only once this write is durable.
//! let n = merger
//!     .submit(|tx| {
//!         let n = match tx.get(b"counter")? {
//!             Some(v) => std::str::from_utf8(&v).ok().and_then(|s| s.parse::<i64>().ok()).unwrap_or(0),
//!             None => 0,
//!         } + 1;
//!         tx.put(b"counter", n.to_string().as_bytes());
//!         Ok(n)
//!     })
//!     .wait()?;
//! # let _ = n; Ok(()) }
//! ```
//!
//! Reads go straight to the engine ([`Merger::engine`]): they see durable writes only and
//! never wait for a sync.

mod context;
mod handle;
mod merger;
mod observer;
mod options;
mod poll;
mod stats;

pub use context::{AfterCommit, Savepoint, TxnContext};
pub use handle::CommitHandle;
pub use merger::Merger;
pub use observer::WriteObserver;
pub use options::{Durability, MergerOptions};
pub use stats::{MergerStats, GROUP_SIZE_BOUNDS, GROUP_SIZE_BUCKETS};
