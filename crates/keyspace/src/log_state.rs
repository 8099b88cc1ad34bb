//! What a replica of a replicated log stores about each partition it applies, beside the data.
//!
//! ```text
//! log state key  0x08 | partition (u32 BE)  -> the log's own encoding (opaque here)
//! ```
//! The state is written by the transaction that applies the partition's records, so it is
//! durable with exactly the writes it accounts for: after any crash the stored state and
//! the data agree, and the log is resumed from it.

use bytes::Bytes;
use rialto_engine::{EngineIterator, IterOptions, KvEngine};
use rialto_lsm::Db;

use crate::error::{Error, Result};

/// Prefix of log state keys.
pub const LOG_STATE: u8 = 0x08;

pub(crate) fn key(partition: u32) -> [u8; 5] {
    let mut k = [LOG_STATE; 5];
    k[1..].copy_from_slice(&partition.to_be_bytes());
    k
}

/// Every partition's stored state, in partition order, as the published state holds them.
pub(crate) fn load_all(db: &Db) -> Result<Vec<(u32, Bytes)>> {
    let mut it = db.iter(IterOptions {
        lower: Some(vec![LOG_STATE]),
        upper: Some(vec![LOG_STATE + 1]),
        snapshot: None,
    })?;
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        let k = it.key();
        let partition = k
            .get(1..5)
            .filter(|_| k.len() == 5)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_be_bytes)
            .ok_or(Error::CorruptLogState)?;
        out.push((partition, Bytes::copy_from_slice(it.value())));
        it.next();
    }
    it.status()?;
    Ok(out)
}
