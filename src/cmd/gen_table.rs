//! `rialto gen-table` (hidden): writes a table of typed features (see
//! `rialto_push_input::FeatureTable`) as Parquet, CSV or JSONL, for the benchmarks and
//! compatibility tests of pushes that load rows as hashes. Its CSV holds exactly the text a
//! hash push of its Parquet file stores, and its JSONL the JSON a JSON push writes.

use std::path::PathBuf;

use rialto_push_input::{FeatureTable, Format};

use super::stores_backend::BackendError;

/// Arguments of `rialto gen-table`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Rows (entities `000000000000`, `000000000001`...).
    #[arg(long, default_value_t = 1000)]
    pub rows: u64,
    /// Feature columns besides `id`.
    #[arg(long, default_value_t = 20)]
    pub columns: usize,
    /// A feature is null where (row + column) % N == 0; 0: none.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub null_every: u64,
    /// Output format (default: from --out's extension).
    #[arg(long, value_parser = ["csv", "jsonl", "parquet"])]
    pub format: Option<String>,
    /// The file to write.
    #[arg(long)]
    pub out: PathBuf,
}

/// Writes the table.
pub fn run(args: Args) -> Result<(), BackendError> {
    let format = args
        .format
        .as_deref()
        .and_then(Format::parse)
        .or_else(|| Format::from_path(&args.out))
        .ok_or_else(|| BackendError::Usage("name the format: --format csv|jsonl|parquet".into()))?;
    let table = FeatureTable {
        rows: args.rows,
        columns: args.columns,
        null_every: args.null_every,
    };
    rialto_push_input::write_feature_table(&args.out, format, &table)
        .map_err(|e| BackendError::Store(format!("{}: {e}", args.out.display())))?;
    Ok(())
}
