//! Which stored database each database number names (SWAPDB).
//!
//! A key is stored under a *physical* database byte (`0x01 | db | key`, its expiry key, its
//! count). Clients name *logical* databases (SELECT, MOVE, COPY ... DB). SWAPDB exchanges two
//! entries of this map and writes it, so it is O(1) whatever the databases hold:
//!
//! ```text
//! database map   0x0F  -> 256 bytes: byte n is the physical database of logical database n
//! ```
//!
//! Absent, the map is the identity. Invariants: the map is a permutation of 0..=255 that only
//! ever exchanges numbers below `databases`, so the expiry pass, which walks physical
//! databases, still covers every one. Everything inside the keyspace (data keys, expiry keys,
//! counts, WATCH's table, blocked clients' queues) works on physical databases; logical numbers
//! are translated where they enter: ops as they are applied, reads, walks, counts.

use std::sync::atomic::{AtomicU8, Ordering};

use rialto_engine::KvEngine;
use rialto_lsm::Db;

use crate::error::Result;
use crate::layout::CorruptRecord;

/// The map's key.
pub const DB_MAP: u8 = 0x0F;

/// A map and its inverse.
struct Arrays {
    physical: [AtomicU8; 256],
    logical: [AtomicU8; 256],
}

impl Default for Arrays {
    fn default() -> Arrays {
        Arrays {
            physical: std::array::from_fn(|i| AtomicU8::new(i as u8)),
            logical: std::array::from_fn(|i| AtomicU8::new(i as u8)),
        }
    }
}

impl Arrays {
    fn set(&self, bytes: &[u8; 256]) {
        for (l, &p) in bytes.iter().enumerate() {
            self.physical[l].store(p, Ordering::Release);
            self.logical[p as usize].store(l as u8, Ordering::Release);
        }
    }

    fn bytes(&self) -> [u8; 256] {
        std::array::from_fn(|l| self.physical[l].load(Ordering::Acquire))
    }
}

/// The map, read without a lock: as the merger's order has it (ops, and reads ordered with
/// them), and as published (reads of the published state, which see a SWAPDB only once it is
/// durable, like its data).
#[derive(Default)]
pub struct DbMap {
    exec: Arrays,
    read: Arrays,
}

impl DbMap {
    /// The map stored in `db` (the identity if none is).
    pub(crate) fn load(db: &Db) -> Result<DbMap> {
        let map = DbMap::default();
        if let Some(v) = db.get(&[DB_MAP])? {
            let bytes = Self::decode(&v)?;
            map.exec.set(&bytes);
            map.read.set(&bytes);
        }
        Ok(map)
    }

    fn decode(v: &[u8]) -> Result<[u8; 256], CorruptRecord> {
        let bytes: [u8; 256] = v.try_into().map_err(|_| CorruptRecord("database map"))?;
        let mut seen = [false; 256];
        for &b in &bytes {
            if std::mem::replace(&mut seen[b as usize], true) {
                return Err(CorruptRecord("database map"));
            }
        }
        Ok(bytes)
    }

    /// The physical database of logical database `logical`, in the merger's order.
    #[inline]
    pub fn physical(&self, logical: u8) -> u8 {
        self.exec.physical[logical as usize].load(Ordering::Acquire)
    }

    /// The logical database stored as physical database `physical`, in the merger's order.
    #[inline]
    pub fn logical(&self, physical: u8) -> u8 {
        self.exec.logical[physical as usize].load(Ordering::Acquire)
    }

    /// The physical database of logical database `logical`, as published.
    #[inline]
    pub fn read_physical(&self, logical: u8) -> u8 {
        self.read.physical[logical as usize].load(Ordering::Acquire)
    }

    /// Exchanges logical databases `a` and `b` in the merger's order; the map's new record,
    /// to write in the same transaction and [`DbMap::publish`] once it is durable.
    pub(crate) fn swap(&self, a: u8, b: u8) -> [u8; 256] {
        let mut bytes = self.exec.bytes();
        bytes.swap(a as usize, b as usize);
        self.exec.set(&bytes);
        bytes
    }

    /// Makes `record` (from [`DbMap::swap`]) the map reads use.
    pub(crate) fn publish(&self, record: &[u8; 256]) {
        self.read.set(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_compose_and_the_record_round_trips() {
        let m = DbMap::default();
        assert_eq!(m.physical(3), 3);
        m.swap(0, 1);
        let rec = m.swap(1, 2);
        assert_eq!((m.physical(0), m.physical(1), m.physical(2)), (1, 2, 0));
        assert_eq!((m.logical(1), m.logical(2), m.logical(0)), (0, 1, 2));
        // Reads see it once published.
        assert_eq!(m.read_physical(0), 0);
        m.publish(&rec);
        assert_eq!(m.read_physical(0), 1);
        assert_eq!(DbMap::decode(&rec).unwrap(), rec);
        m.swap(4, 4);
        assert_eq!(m.physical(4), 4);
    }

    #[test]
    fn a_damaged_map_is_refused() {
        assert!(DbMap::decode(&[0u8; 256]).is_err());
        assert!(DbMap::decode(&[1u8; 3]).is_err());
    }
}
