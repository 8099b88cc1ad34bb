//! Replays the committed fuzzing inputs through the target bodies, so that the ordinary
//! `cargo test` on stable turns the corpus into a regression suite.
//!
//! For each target `T`, every file of `fuzz/regressions/T/` (inputs that once crashed) and the
//! files of `fuzz/corpus/T/` (the minimised coverage corpus) are run through the body.
//!
//! Sampling rule, to keep debug builds fast: in a build with debug assertions (plain
//! `cargo test`), at most [`DEBUG_SAMPLE`] corpus files per target are replayed, evenly
//! spaced over the files sorted by name (deterministic: the same files every run); in a
//! release build (`cargo test --release`), or with `RIALTO_FUZZ_CORPUS=all`, every file.
//! Regression inputs are always all replayed.
//!
//! A crash found by fuzzing is fixed before its input is added to the regressions.

use std::path::{Path, PathBuf};

use rialto_fuzzing::alloc_meter::{self, CountingAllocator};
use rialto_fuzzing::TARGETS;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

/// Corpus files replayed per target in debug builds.
const DEBUG_SAMPLE: usize = 150;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Files of `dir`, sorted by name; none if it does not exist.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The corpus files to replay (see the sampling rule in the module docs).
fn sample(all: Vec<PathBuf>) -> Vec<PathBuf> {
    let everything =
        !cfg!(debug_assertions) || std::env::var("RIALTO_FUZZ_CORPUS").is_ok_and(|v| v == "all");
    if everything || all.len() <= DEBUG_SAMPLE {
        return all;
    }
    (0..DEBUG_SAMPLE)
        .map(|i| all[i * all.len() / DEBUG_SAMPLE].clone())
        .collect()
}

fn target(name: &str) -> fn(&[u8]) {
    TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .unwrap_or_else(|| panic!("no target {name}"))
}

fn replay(name: &str) {
    let body = target(name);
    let corpus = files(&fuzz_dir().join("corpus").join(name));
    assert!(!corpus.is_empty(), "fuzz/corpus/{name} is empty or missing");
    let regressions = files(&fuzz_dir().join("regressions").join(name));
    for path in sample(corpus).iter().chain(&regressions) {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        eprintln!("replaying {}", path.display());
        body(&data);
    }
}

#[test]
fn the_counting_allocator_is_installed() {
    // Without it, `resp_decode` cannot check its allocation bound.
    assert!(alloc_meter::is_installed());
}

#[test]
fn resp_decode() {
    replay("resp_decode");
}

#[test]
fn wal_reader() {
    replay("wal_reader");
}

#[test]
fn sstable() {
    replay("sstable");
}

#[test]
fn manifest() {
    replay("manifest");
}

#[test]
fn engine_ops() {
    replay("engine_ops");
}
