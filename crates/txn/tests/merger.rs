//! Behaviour of the transaction merger over the LSM engine: ordering, exactly-once
//! acknowledgement, async commit, failure semantics, reads during stalled syncs, durability
//! modes.

// Groups execute on the merger thread.
mod common;

const INLINE: bool = false;

include!("cases/merger.rs");
