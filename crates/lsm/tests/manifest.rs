//! Manifest recovery on damaged input; failures found by fuzzing, kept as named tests.

use std::path::Path;
use std::sync::Arc;

use rialto_engine::Error;
use rialto_io::{Fs, MemFs};
use rialto_lsm::version::{current_file_name, manifest_file_name, VersionEdit, VersionSet};
use rialto_lsm::wal::{WalWriter, KIND_EDIT};

fn manifest_with(fs: &MemFs, number: u64, edit: &VersionEdit) {
    let dir = Path::new("/db");
    fs.create_dir_all(dir).unwrap();
    let mut w = WalWriter::create_named(fs, dir, manifest_file_name(number), number).unwrap();
    w.add_record(KIND_EDIT, &edit.encode()).unwrap();
    w.sync().unwrap();
    let mut c = fs.create(&dir.join(current_file_name())).unwrap();
    c.append(format!("{}\n", manifest_file_name(number)).as_bytes())
        .unwrap();
    c.sync_all().unwrap();
}

/// Fuzzing (`manifest`, fuzz/regressions/manifest/file-number-overflow): a manifest recording a
/// next file number near `u64::MAX` made recovery compute `number + 1` and later hand out
/// numbers with `+= 1`, overflowing. It is damage, reported as corruption.
#[test]
fn a_huge_next_file_number_is_corruption_not_an_overflow() {
    for (manifest, next) in [(2, u64::MAX), (2, 1 << 56), (u64::MAX - 1, 3)] {
        let fs = MemFs::new();
        let edit = VersionEdit {
            next_file_number: Some(next),
            log_number: Some(1),
            last_sequence: Some(0),
            ..Default::default()
        };
        manifest_with(&fs, manifest, &edit);
        let r = VersionSet::recover(Arc::new(fs.clone()), Path::new("/db"), 7);
        assert!(
            matches!(r, Err(Error::Corruption { .. })),
            "manifest {manifest}, next {next}: {:?}",
            r.err()
        );
    }
    // A sane number still recovers.
    let fs = MemFs::new();
    let edit = VersionEdit {
        next_file_number: Some(10),
        log_number: Some(1),
        last_sequence: Some(0),
        ..Default::default()
    };
    manifest_with(&fs, 2, &edit);
    assert!(VersionSet::recover(Arc::new(fs), Path::new("/db"), 7).is_ok());
}
