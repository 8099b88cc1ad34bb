//! Measures the external sort on the real file system.
//!
//! ```text
//! cargo run --release -p rialto-sort --example sort_speed -- [RECORDS] [MEMORY_MIB] [TMP_DIR]
//! ```
//!
//! Sorts RECORDS (default 10,000,000) records of random 16-byte keys and 100-byte values with a
//! memory limit of MEMORY_MIB (default 256) MiB, spilling to TMP_DIR (default a fresh
//! directory under the system's temporary directory), checks the output is in order and
//! complete, and prints how long each phase took.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use rialto_io::PosixFs;
use rialto_sort::{SortOptions, Sorter};

const KEY_LEN: usize = 16;
const VALUE_LEN: usize = 100;

fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> Result<T, String> {
    match args.get(i) {
        None => Ok(default),
        Some(s) => s
            .replace('_', "")
            .parse()
            .map_err(|_| format!("cannot parse argument {i}: {s:?}")),
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = arg(&args, 1, 10_000_000)?;
    let mib: usize = arg(&args, 2, 256)?;
    let tmp_dir = match args.get(3) {
        Some(d) => PathBuf::from(d),
        None => std::env::temp_dir().join(format!("rialto-sort-speed-{}", std::process::id())),
    };
    let opts = SortOptions {
        memory_limit: mib << 20,
        tmp_dir: tmp_dir.clone(),
        ..SortOptions::default()
    };
    println!(
        "{n} records of {KEY_LEN}+{VALUE_LEN} bytes ({:.0} MiB), memory limit {mib} MiB, \
         spilling to {}",
        (n as f64) * (KEY_LEN + VALUE_LEN) as f64 / (1u64 << 20) as f64,
        tmp_dir.display()
    );

    // Values are slices of a random pool, so that the loop measures the sort, not the
    // random number generator.
    let mut rng = SmallRng::seed_from_u64(42);
    let mut pool = vec![0u8; 1 << 20];
    rng.fill_bytes(&mut pool);

    let start = Instant::now();
    let mut sorter = Sorter::new(Arc::new(PosixFs::new()), opts).map_err(|e| e.to_string())?;
    let mut key = [0u8; KEY_LEN];
    for i in 0..n {
        key[..8].copy_from_slice(&rng.gen::<u64>().to_le_bytes());
        key[8..].copy_from_slice(&rng.gen::<u64>().to_le_bytes());
        let off = (i as usize).wrapping_mul(7919) % (pool.len() - VALUE_LEN);
        sorter
            .add(&key, &pool[off..off + VALUE_LEN])
            .map_err(|e| e.to_string())?;
    }
    let added = start.elapsed();
    let mut sorted = sorter.finish().map_err(|e| e.to_string())?;
    let finished = start.elapsed();
    let stats = sorted.stats();

    let mut count = 0u64;
    let mut prev = [0u8; KEY_LEN];
    while let Some((k, v)) = sorted.next().map_err(|e| e.to_string())? {
        if count > 0 && k <= &prev[..] {
            return Err(format!("out of order at record {count}"));
        }
        if k.len() != KEY_LEN || v.len() != VALUE_LEN {
            return Err(format!("bad record {count}"));
        }
        prev.copy_from_slice(k);
        count += 1;
    }
    let total = start.elapsed();
    let stats_end = sorted.stats();
    drop(sorted);
    if count != n {
        return Err(format!("{count} records out of {n} in"));
    }
    let _ = std::fs::remove_dir(&tmp_dir);

    let secs = |d: std::time::Duration| d.as_secs_f64();
    println!(
        "add {:.2} s, finish {:.2} s, merge/read {:.2} s, total {:.2} s ({:.2} M records/s)",
        secs(added),
        secs(finished - added),
        secs(total - finished),
        secs(total),
        n as f64 / secs(total) / 1e6
    );
    println!(
        "runs spilled {}, bytes spilled {:.0} MiB, duplicates dropped {}",
        stats.runs_spilled,
        stats_end.bytes_spilled as f64 / (1u64 << 20) as f64,
        stats_end.duplicates_dropped
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sort_speed: {e}");
            ExitCode::FAILURE
        }
    }
}
