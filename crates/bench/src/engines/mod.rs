//! Engine adapters: one small file per engine, so that an engine's API change touches one file.

pub mod disk;
pub mod rialto;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
#[cfg(feature = "rocksdb")]
pub mod rocksdb_load;

#[cfg(test)]
pub(crate) mod memory;

use crate::config::EngineKind;
use crate::engine::EngineFactory;
#[cfg(not(feature = "rocksdb"))]
use crate::error::BenchError;
use crate::error::Result;

/// The factory of engine `kind`; RocksDB only in builds with the `rocksdb` feature.
pub fn factory(kind: EngineKind) -> Result<Box<dyn EngineFactory>> {
    match kind {
        EngineKind::Rialto => Ok(Box::new(rialto::RialtoFactory)),
        EngineKind::Disk => Ok(Box::new(disk::DiskFactory)),
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb => Ok(Box::new(rocksdb::RocksDbFactory)),
        #[cfg(not(feature = "rocksdb"))]
        EngineKind::Rocksdb => Err(BenchError::usage(
            "this rialto was built without RocksDB; rebuild with \
             `cargo build --release --features rocksdb` (or use scripts/bench-compare.sh)",
        )),
    }
}
