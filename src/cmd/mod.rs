//! One module per subcommand: its clap arguments (`Args`) and its `run`.

pub mod bench;
pub mod bench_compare;
pub mod bench_push;
pub mod check;
pub mod gen_table;
pub mod push;
pub mod push_progress;
pub mod serve;
pub mod store;
pub mod stores_backend;
pub mod stress;
