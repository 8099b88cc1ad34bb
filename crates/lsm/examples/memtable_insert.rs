//! Memtable insert cost for the server's SET shape: `N` random keys of a 1M keyspace in the
//! server's key encoding (`0x01 | db | "key:" 12 digits`), 101-byte records (a flags byte and
//! a 100-byte value), inserted in groups of `G` as commit groups are.
//!
//! `cargo run --release -p rialto-lsm --example memtable_insert -- [N] [G] [ROUNDS]`
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rialto_engine::WriteBatch;
use rialto_lsm::MemTable;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let n = args.first().copied().unwrap_or(200_000);
    let g = args.get(1).copied().unwrap_or(5).max(1);
    let rounds = args.get(2).copied().unwrap_or(5);
    let value = vec![b'x'; 101];
    for round in 0..rounds {
        let mut rng = rand::rngs::StdRng::seed_from_u64(round as u64);
        let batches: Vec<WriteBatch> = (0..n / g)
            .map(|_| {
                let mut b = WriteBatch::new();
                for _ in 0..g {
                    let k = format!("\x01\x00key:{:012}", rng.gen_range(0..1_000_000u64));
                    b.put(k.as_bytes(), &value);
                }
                b
            })
            .collect();
        let mem = MemTable::new(1);
        let start = Instant::now();
        let mut seq = 1;
        for b in &batches {
            mem.insert_batch(b, seq);
            seq += u64::from(b.count());
        }
        let el = start.elapsed();
        println!(
            "round {round}: {} inserts in groups of {g}: {:.0} ns each, memtable {} MiB",
            seq - 1,
            el.as_nanos() as f64 / (seq - 1) as f64,
            mem.approximate_memory_usage() >> 20
        );
    }
}
