//! `rialto bench`: db_bench-compatible benchmarks; the harness is the `rialto-bench` crate.

use rialto_bench::{BenchError, BenchFlags};

/// Arguments of `rialto bench`: db_bench's flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub flags: BenchFlags,
}

/// Runs the benchmarks, printing db_bench's report on stdout.
pub fn run(args: Args) -> Result<(), BenchError> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    rialto_bench::run_bench(&args.flags, &mut out).map(|_| ())
}
