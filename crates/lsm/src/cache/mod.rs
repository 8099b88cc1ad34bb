//! The caches: the block cache ([`block`], uncompressed data blocks, one memory budget for
//! every database in the process), the row cache ([`row`], recently read values by key) and
//! the table cache ([`table`], open table readers). The block and row caches keep their
//! entries in the same open-addressing table (`slot_table`), and admit what a read missed
//! to a full cache on its second miss (`admission`).

mod admission;
pub mod block;
pub mod row;
mod slot_table;
pub mod table;

pub use block::{BlockCache, CacheKey};
