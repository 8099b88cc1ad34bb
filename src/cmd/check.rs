//! `rialto check --dir DIR`: verifies a database directory offline (see `rialto_lsm::check`).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// Arguments of `rialto check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Database directory (the `dir` of `rialto serve`). The database must not be in use.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
}

/// Why `rialto check` failed.
#[derive(Debug)]
pub enum CheckError {
    /// The directory could not be checked at all.
    Unusable(rialto_engine::Error),
    /// It was checked and is damaged.
    Damaged { problems: usize, dir: String },
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Unusable(e) => write!(f, "cannot check: {e}"),
            CheckError::Damaged { problems, dir } => {
                write!(f, "{problems} problem(s) in {dir}")
            }
        }
    }
}

impl crate::cli::CliError for CheckError {
    fn exit_code(&self) -> u8 {
        1
    }
}

/// Checks the directory, printing one line per note and problem, then a summary.
pub fn run(args: Args) -> Result<(), CheckError> {
    let fs: rialto_io::FsRef = Arc::new(rialto_io::PosixFs::new());
    let report = rialto_lsm::check::check(fs, &args.dir).map_err(CheckError::Unusable)?;
    for n in &report.notes {
        println!("note: {n}");
    }
    for (file, what) in &report.problems {
        println!("problem: {file}: {what}");
    }
    println!(
        "checked {}: {} tables ({} entries), {} WAL segments ({} records): {}",
        args.dir.display(),
        report.tables,
        report.entries,
        report.wal_segments,
        report.wal_records,
        if report.ok() { "ok" } else { "DAMAGED" }
    );
    if report.ok() {
        Ok(())
    } else {
        Err(CheckError::Damaged {
            problems: report.problems.len(),
            dir: args.dir.display().to_string(),
        })
    }
}
