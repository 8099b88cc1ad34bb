//! How the CLI reports failures: one readable line on stderr, `error: ...`, and an exit
//! code of 2 for usage errors, 1 for everything else. clap's own multi-line error pages are
//! folded into that one line, so scripts (and humans scanning a log) see the cause at once.

use std::io::Write;
use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// An error the CLI can report.
pub trait CliError: std::fmt::Display {
    /// Process exit code.
    fn exit_code(&self) -> u8;
}

impl CliError for rialto_bench::BenchError {
    fn exit_code(&self) -> u8 {
        rialto_bench::BenchError::exit_code(self)
    }
}

/// Prints `error: <e>` and returns its exit code.
pub fn fail(e: &dyn CliError) -> ExitCode {
    // A closed stderr leaves the exit code to say it.
    let _ = writeln!(std::io::stderr(), "error: {e}");
    ExitCode::from(e.exit_code())
}

/// Makes output into a closed pipe (`rialto store describe s | head`) end the process
/// quietly, as it ends `cat`: by SIGPIPE, which Rust ignores by default so that every write
/// fails with EPIPE instead, and `println!` panics on that. Not for `serve`, which must
/// outlive whatever reads its logs, nor `push`, which finishes what it began and ignores
/// errors writing its report.
pub fn die_quietly_on_closed_pipes() {
    // SAFETY: restores the default disposition of one signal, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Handles a failed parse: `--help` and `--version` print their page and succeed; anything
/// else prints one line and exits with 2.
pub fn exit_on_parse_error(e: &clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // A closed stdout is not worth an error of its own here.
            let _ = e.print();
            ExitCode::SUCCESS
        }
        _ => {
            let _ = writeln!(std::io::stderr(), "error: {}", one_line(e));
            ExitCode::from(2)
        }
    }
}

/// clap's error as one line: its first line without the `error: ` prefix, plus the
/// suggestion or the accepted values when clap has them.
pub fn one_line(e: &clap::Error) -> String {
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return "a subcommand is required (see 'rialto --help')".to_string();
    }
    let rendered = e.render().to_string();
    let first = rendered
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("invalid command line");
    let mut line = first.strip_prefix("error: ").unwrap_or(first).to_string();
    let list = |v: &ContextValue| match v {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(v) if !v.is_empty() => Some(v.join(", ")),
        _ => None,
    };
    if let Some(s) = e.get(ContextKind::SuggestedArg).and_then(list) {
        line.push_str(&format!(" (did you mean '{s}'?)"));
    } else if let Some(s) = e.get(ContextKind::ValidValue).and_then(list) {
        if !line.contains(&s) {
            line.push_str(&format!(" (expected one of: {s})"));
        }
    }
    line.push_str("; see --help");
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn err(args: &[&str]) -> clap::Error {
        match crate::Cli::try_parse_from(std::iter::once("rialto").chain(args.iter().copied())) {
            Ok(c) => panic!("parsed: {c:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn unknown_flag_is_one_line() {
        let e = err(&["bench", "--nosuch=1"]);
        let line = one_line(&e);
        assert!(!line.contains('\n'), "{line}");
        assert!(line.contains("--nosuch"), "{line}");
        assert!(line.ends_with("; see --help"));
    }

    #[test]
    fn suggestions_and_values_are_kept() {
        let line = one_line(&err(&["bench", "--nuum=5"]));
        assert!(line.contains("did you mean '--num'"), "{line}");
        let line = one_line(&err(&["bench", "--compression_type=snappy"]));
        assert!(
            line.contains("snappy") && line.contains("none, lz4, zstd"),
            "{line}"
        );
        assert!(!line.contains('\n'));
        let line = one_line(&err(&["bench", "--num=ten"]));
        assert!(line.contains("ten") && !line.contains('\n'), "{line}");
    }

    #[test]
    fn help_and_missing_subcommand() {
        assert_eq!(err(&["bench", "--help"]).kind(), ErrorKind::DisplayHelp);
        let help = err(&["bench", "--help"]).render().to_string();
        for flag in [
            "--benchmarks",
            "--num",
            "--reads",
            "--writes",
            "--key_size",
            "--value_size",
            "--threads",
            "--sync",
            "--db",
            "--use_existing_db",
            "--cache_size",
            "--write_buffer_size",
            "--bloom_bits",
            "--compression_type",
            "--histogram",
            "--seed",
            "--engine",
            "--batch_size",
            "--seek_nexts",
            "--compression_ratio",
        ] {
            assert!(help.contains(flag), "help lacks {flag}");
        }
        let compare = err(&["bench-compare", "--help"]).render().to_string();
        assert!(compare.contains("--rounds") && compare.contains("--engines"));
        let e = err(&[]);
        assert!(!one_line(&e).contains('\n'));
    }

    #[test]
    fn parses_db_bench_command_lines() {
        let cli = crate::Cli::try_parse_from([
            "rialto",
            "bench",
            "--benchmarks=fillseq,readrandom",
            "--num",
            "2000",
            "--use_existing_db=0",
            "--histogram=1",
        ])
        .unwrap();
        match cli.command {
            crate::Command::Bench(a) => {
                assert_eq!(a.flags.num, 2000);
                assert!(a.flags.histogram);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn last_flag_wins_like_gflags() {
        let cli = crate::Cli::try_parse_from([
            "rialto",
            "bench-compare",
            "--rounds=3",
            "--num=1000000",
            "--rounds=5",
            "--num",
            "2000",
        ])
        .unwrap();
        match cli.command {
            crate::Command::BenchCompare(a) => {
                assert_eq!(a.flags.rounds, 5);
                assert_eq!(a.flags.bench.num, 2000);
            }
            other => panic!("{other:?}"),
        }
    }
}
