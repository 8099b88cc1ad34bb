//! `rialto`: the command-line entry point. Each subcommand lives in its own module under
//! [`cmd`], so that adding one (`serve`, ...) touches only this enum and its module.

mod cli;
mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Rialto: a key-value database for serving derived data.
#[derive(Debug, Parser)]
#[command(name = "rialto", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run db_bench-compatible benchmarks (same flags, same report lines as RocksDB's db_bench).
    // gflags semantics: a flag given twice takes its last value.
    #[command(after_help = rialto_bench::config::AFTER_HELP, args_override_self = true)]
    Bench(cmd::bench::Args),
    /// Run the same benchmarks on Rialto and RocksDB, alternately, several rounds, and print
    /// a table of median ops/sec and ratios (needs a build with `--features rocksdb`).
    #[command(after_help = rialto_bench::compare::AFTER_HELP, args_override_self = true)]
    BenchCompare(cmd::bench_compare::Args),
    /// Serve the Redis protocol (RESP2/RESP3) on the embedded engine. Every write is durable
    /// before it is acknowledged unless --appendfsync says otherwise.
    #[command(after_help = rialto_server::help_text())]
    Serve(cmd::serve::Args),
    /// Verify a database directory offline: every checksum and the invariants recovery
    /// relies on; one line per problem, exit 1 if any.
    Check(cmd::check::Args),
    /// Load a dataset (CSV, JSONL or Parquet files) into a store as its new version and swap
    /// it in atomically; streamed writes made meanwhile are replayed on top.
    Push(cmd::push::Args),
    /// Create, describe, list, delete and roll back stores.
    Store(cmd::store::Args),
    /// Benchmark a batch push against RocksDB's random-put and SstFileWriter+ingest loads of
    /// the same file (RocksDB needs a build with `--features rocksdb`).
    BenchPush(cmd::bench_push::Args),
    /// Write a table of typed features (Parquet, CSV or JSONL) for push benchmarks and tests.
    #[command(hide = true)]
    GenTable(cmd::gen_table::Args),
    /// Crash-test: kill the engine (or a server) at random moments, restart it and verify
    /// that nothing acknowledged was lost and nothing never written appeared.
    Stress(cmd::stress::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return cli::exit_on_parse_error(&e),
    };
    if !matches!(cli.command, Command::Serve(_) | Command::Push(_)) {
        cli::die_quietly_on_closed_pipes();
    }
    let result = match cli.command {
        Command::Bench(args) => cmd::bench::run(args),
        Command::BenchCompare(args) => cmd::bench_compare::run(args),
        Command::Check(args) => {
            return match cmd::check::run(args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => cli::fail(&e),
            }
        }
        Command::Push(args) => {
            return match cmd::push::run(args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => cli::fail(&e),
            }
        }
        Command::BenchPush(args) => {
            return match cmd::bench_push::run(args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => cli::fail(&e),
            }
        }
        Command::GenTable(args) => {
            return match cmd::gen_table::run(args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => cli::fail(&e),
            }
        }
        Command::Store(args) => {
            return match cmd::store::run(args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => cli::fail(&e),
            }
        }
        Command::Stress(args) => {
            return match cmd::stress::run(args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => cli::fail(&e),
            }
        }
        Command::Serve(args) => {
            return match cmd::serve::run(args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => cli::fail(&e),
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => cli::fail(&e),
    }
}
