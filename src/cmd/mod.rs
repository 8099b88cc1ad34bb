//! One module per subcommand: its clap arguments (`Args`) and its `run`.

pub mod bench;
pub mod bench_compare;
pub mod check;
pub mod serve;
