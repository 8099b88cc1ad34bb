//! `rialto bench-compare`: Rialto against RocksDB, alternating, medians of several rounds.
//! `scripts/bench-compare.sh` builds RocksDB in and calls this.

use rialto_bench::{BenchError, CompareFlags};

/// Arguments of `rialto bench-compare`: `--rounds`, `--engines`, and every bench flag.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub flags: CompareFlags,
}

/// Runs the comparison, printing every run's report and then the table on stdout.
pub fn run(args: Args) -> Result<(), BenchError> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    rialto_bench::run_compare(&args.flags, &mut out).map(|_| ())
}
