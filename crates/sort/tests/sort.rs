//! End-to-end tests of the external sort, on MemFs and on the real file system.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rialto_io::{Fault, FaultOp, FaultPlan, FsRef, MemFs, PosixFs};
use rialto_sort::{DuplicatePolicy, SortError, SortOptions, Sorted, Sorter};

const TMP: &str = "/spill/dir";

type Records = Vec<(Vec<u8>, Vec<u8>)>;

fn opts(limit: usize, policy: DuplicatePolicy) -> SortOptions {
    SortOptions {
        memory_limit: limit,
        tmp_dir: TMP.into(),
        duplicates: policy,
        ..SortOptions::default()
    }
}

fn mem_sorter(limit: usize, policy: DuplicatePolicy) -> (MemFs, Sorter) {
    let mem = MemFs::new();
    let sorter = Sorter::new(Arc::new(mem.clone()), opts(limit, policy)).unwrap();
    (mem, sorter)
}

fn drain(sorted: &mut Sorted) -> Result<Records, SortError> {
    let mut out = Vec::new();
    while let Some((k, v)) = sorted.next()? {
        out.push((k.to_vec(), v.to_vec()));
    }
    Ok(out)
}

/// Adds everything, finishes and drains; the first error wins.
fn sort_all(sorter: Sorter, records: &[(Vec<u8>, Vec<u8>)]) -> Result<Records, SortError> {
    let mut sorter = sorter;
    for (k, v) in records {
        sorter.add(k, v)?;
    }
    let mut sorted = sorter.finish()?;
    drain(&mut sorted)
}

fn random_records(n: usize, seed: u64) -> Records {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let mut key = vec![0u8; rng.gen_range(1..24)];
            rng.fill(&mut key[..]);
            // Unique keys: the index as a suffix.
            key.extend_from_slice(&(i as u32).to_be_bytes());
            let value = vec![rng.gen(); rng.gen_range(0..120)];
            (key, value)
        })
        .collect()
}

fn sorted_model(records: &[(Vec<u8>, Vec<u8>)]) -> Records {
    let map: BTreeMap<_, _> = records.iter().cloned().collect();
    map.into_iter().collect()
}

#[test]
fn empty_input() {
    let (mem, sorter) = mem_sorter(1 << 20, DuplicatePolicy::Error);
    let mut sorted = sorter.finish().unwrap();
    assert!(sorted.next().unwrap().is_none());
    assert!(sorted.next().unwrap().is_none());
    assert_eq!(sorted.stats().records, 0);
    assert_eq!(mem.op_count(FaultOp::Create), 0);
}

#[test]
fn one_record() {
    let (_, mut sorter) = mem_sorter(1 << 20, DuplicatePolicy::Error);
    sorter.add(b"k", b"v").unwrap();
    let mut sorted = sorter.finish().unwrap();
    assert_eq!(sorted.next().unwrap(), Some((&b"k"[..], &b"v"[..])));
    assert!(sorted.next().unwrap().is_none());
    assert_eq!(sorted.stats().records, 1);
}

#[test]
fn in_memory_sort_writes_no_file() {
    let records = random_records(5000, 1);
    let (mem, sorter) = mem_sorter(64 << 20, DuplicatePolicy::Error);
    assert_eq!(sort_all(sorter, &records).unwrap(), sorted_model(&records));
    assert_eq!(mem.op_count(FaultOp::Any), 0);
}

#[test]
fn in_memory_sort_of_many_records_in_two_parts() {
    // Enough records for the final buffer to be sorted as two halves on two threads.
    let records: Records = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761).to_be_bytes().to_vec(), vec![]))
        .collect();
    let (mem, sorter) = mem_sorter(256 << 20, DuplicatePolicy::Error);
    let out = sort_all(sorter, &records).unwrap();
    assert_eq!(out, sorted_model(&records));
    assert_eq!(mem.op_count(FaultOp::Create), 0);
}

#[test]
fn spills_and_multi_pass_merge() {
    let records = random_records(20_000, 2);
    // 64 KiB: 32 KiB buffers (about 300 records), fan-in 8: over 60 runs, several passes.
    let (mem, mut sorter) = mem_sorter(64 << 10, DuplicatePolicy::Error);
    for (k, v) in &records {
        sorter.add(k, v).unwrap();
    }
    let mut sorted = sorter.finish().unwrap();
    let stats = sorted.stats();
    // About 32 KiB / (76 + 32) bytes = 300 records per run: the budget holds records.
    assert!((60..75).contains(&stats.runs_spilled), "{stats:?}");
    // Merge passes wrote more than the records once.
    assert!(stats.bytes_spilled > 2 * 20_000 * 60, "{stats:?}");
    assert!(mem.file_names(TMP).len() <= 8);
    assert_eq!(drain(&mut sorted).unwrap(), sorted_model(&records));
    // Every run was read to its end and removed.
    assert!(mem.file_names(TMP).is_empty());
    drop(sorted);
    assert!(mem.file_names(TMP).is_empty());
}

#[test]
fn fan_in_of_two_with_a_tiny_limit() {
    let records = random_records(1500, 3);
    let (mem, sorter) = mem_sorter(1500, DuplicatePolicy::LastWins);
    assert_eq!(sort_all(sorter, &records).unwrap(), sorted_model(&records));
    assert!(mem.file_names(TMP).is_empty());
}

#[test]
fn big_values_and_extreme_bytes() {
    let mut records = vec![
        (vec![0xff; 3], vec![1; 300_000]),
        (vec![0x00], vec![2; 70_000]),
        (vec![0x00, 0x00], vec![]),
        (vec![0x7f, 0x80], vec![3; 5]),
        (vec![0x80], vec![4; 1_000_000]),
    ];
    records.extend(random_records(2000, 4));
    for limit in [16 << 10, 1 << 20, 64 << 20] {
        let (_, sorter) = mem_sorter(limit, DuplicatePolicy::Error);
        assert_eq!(sort_all(sorter, &records).unwrap(), sorted_model(&records));
    }
}

#[test]
fn invalid_records_are_rejected_and_the_sorter_goes_on() {
    let mut o = opts(1 << 20, DuplicatePolicy::Error);
    o.max_key_len = 4;
    o.max_value_len = 8;
    let mut sorter = Sorter::new(Arc::new(MemFs::new()), o).unwrap();
    assert!(matches!(sorter.add(b"", b"v"), Err(SortError::EmptyKey)));
    assert!(matches!(
        sorter.add(b"12345", b"v"),
        Err(SortError::KeyTooLong { len: 5, max: 4 })
    ));
    assert!(matches!(
        sorter.add(b"k", &[0; 9]),
        Err(SortError::ValueTooLong { len: 9, max: 8 })
    ));
    sorter.add(b"1234", &[0; 8]).unwrap();
    let mut sorted = sorter.finish().unwrap();
    assert_eq!(drain(&mut sorted).unwrap().len(), 1);
}

/// A key added first and again last: in the first run and in the final in-memory buffer.
fn split_duplicate(policy: DuplicatePolicy) -> (MemFs, Result<Records, SortError>) {
    let (mem, sorter) = mem_sorter(32 << 10, policy);
    let mut records = vec![(b"dup".to_vec(), b"first".to_vec())];
    records.extend(random_records(3000, 5));
    records.push((b"dup".to_vec(), b"last".to_vec()));
    (mem, sort_all(sorter, &records))
}

#[test]
fn duplicate_across_runs_is_reported() {
    let (mem, result) = split_duplicate(DuplicatePolicy::Error);
    match result {
        Err(SortError::DuplicateKey { key }) => assert_eq!(key, b"dup"),
        other => panic!("expected DuplicateKey, got {other:?}"),
    }
    assert!(mem.file_names(TMP).is_empty());
}

#[test]
fn duplicate_across_runs_last_wins() {
    let (_, result) = split_duplicate(DuplicatePolicy::LastWins);
    let out = result.unwrap();
    let dup: Vec<_> = out.iter().filter(|(k, _)| k == b"dup").collect();
    assert_eq!(dup, vec![&(b"dup".to_vec(), b"last".to_vec())]);
}

#[test]
fn duplicate_found_by_an_intermediate_merge_fails_finish() {
    // More runs than the fan-in of 2: the merge passes meet the duplicate.
    let (mem, mut sorter) = mem_sorter(2000, DuplicatePolicy::Error);
    sorter.add(b"dup", b"1").unwrap();
    for (k, v) in random_records(300, 6) {
        sorter.add(&k, &v).unwrap();
    }
    sorter.add(b"dup", b"2").unwrap();
    for (k, v) in random_records(300, 7) {
        sorter.add(&k, &v).unwrap();
    }
    let result = sorter.finish().and_then(|mut s| drain(&mut s));
    assert!(
        matches!(&result, Err(SortError::DuplicateKey { key }) if key == b"dup"),
        "{result:?}"
    );
    assert!(mem.file_names(TMP).is_empty());
}

#[test]
fn dropping_mid_way_removes_spill_files() {
    let (mem, mut sorter) = mem_sorter(16 << 10, DuplicatePolicy::Error);
    for (k, v) in random_records(3000, 8) {
        sorter.add(&k, &v).unwrap();
    }
    assert!(!mem.file_names(TMP).is_empty());
    drop(sorter);
    assert!(mem.file_names(TMP).is_empty());

    // Dropping a half-read stream too.
    let (mem, mut sorter) = mem_sorter(16 << 10, DuplicatePolicy::Error);
    for (k, v) in random_records(3000, 9) {
        sorter.add(&k, &v).unwrap();
    }
    let mut sorted = sorter.finish().unwrap();
    for _ in 0..100 {
        sorted.next().unwrap().unwrap();
    }
    assert!(!mem.file_names(TMP).is_empty());
    drop(sorted);
    assert!(mem.file_names(TMP).is_empty());
}

#[test]
fn write_errors_are_io_errors_and_leave_no_files() {
    let records = random_records(3000, 10);
    for (op, nth) in [
        (FaultOp::Write, 1),
        (FaultOp::Write, 7),
        (FaultOp::Write, 40),
        (FaultOp::Create, 1),
        (FaultOp::Create, 5),
    ] {
        for fault in [Fault::Eio, Fault::NoSpace] {
            let (mem, sorter) = mem_sorter(16 << 10, DuplicatePolicy::Error);
            mem.add_fault(FaultPlan::new(op, nth, fault));
            match sort_all(sorter, &records) {
                Err(SortError::Io { path, source }) => {
                    assert_eq!(source.raw_os_error(), Some(fault.errno()), "{op:?} {nth}");
                    assert!(path.starts_with(TMP), "{}", path.display());
                }
                other => panic!(
                    "{op:?} {nth}: expected Io, got {:?}",
                    other.map(|r| r.len())
                ),
            }
            assert_eq!(mem.faults_fired(), 1);
            assert!(mem.file_names(TMP).is_empty(), "{op:?} {nth}");
        }
    }
}

#[test]
fn a_failed_sorter_refuses_more_work() {
    let (mem, mut sorter) = mem_sorter(16 << 10, DuplicatePolicy::Error);
    mem.add_fault(FaultPlan::new(FaultOp::Write, 1, Fault::Eio).persistent());
    let records = random_records(3000, 11);
    let mut failed = false;
    for (k, v) in &records {
        if sorter.add(k, v).is_err() {
            failed = true;
            break;
        }
    }
    assert!(failed);
    assert!(sorter.add(b"k", b"v").is_err());
    assert!(sorter.finish().is_err());
    assert!(mem.file_names(TMP).is_empty());
}

/// A sorter with at least one complete run file, and the records added to it.
fn sorter_with_a_complete_run(limit: usize, seed: u64, fs: FsRef, dir: &Path) -> (Sorter, Records) {
    let o = SortOptions {
        tmp_dir: dir.to_path_buf(),
        ..opts(limit, DuplicatePolicy::Error)
    };
    let mut sorter = Sorter::new(fs, o).unwrap();
    let records = random_records(4000, seed);
    let mut added = Vec::new();
    for (k, v) in records {
        sorter.add(&k, &v).unwrap();
        added.push((k, v));
        if sorter.stats().runs_spilled >= 1 && added.len() >= 2000 {
            break;
        }
    }
    assert!(sorter.stats().runs_spilled >= 1);
    (sorter, added)
}

fn first_run(names: Vec<String>) -> String {
    let mut names: Vec<_> = names.into_iter().filter(|n| n.ends_with(".run")).collect();
    names.sort();
    names.into_iter().next().expect("a run file")
}

fn expect_corrupt(sorter: Sorter, model: &[(Vec<u8>, Vec<u8>)]) {
    let result = sorter.finish().and_then(|mut s| drain(&mut s));
    match result {
        Err(SortError::Corrupt { .. }) => {}
        Err(e) => panic!("expected Corrupt, got {e}"),
        Ok(out) => {
            assert_ne!(out, sorted_model(model), "corruption went unnoticed");
            panic!("wrong data returned instead of an error");
        }
    }
}

#[test]
fn corrupted_run_on_memfs_gives_corrupt() {
    // 256 KiB: 8 KiB blocks, so the first run has several blocks.
    let limit = 256 << 10;
    for (i, offset) in [0u64, 3, 4, 7, 8, 9, 500, 8190, 20_000, 40_000]
        .into_iter()
        .enumerate()
    {
        let mem = MemFs::new();
        let (sorter, added) =
            sorter_with_a_complete_run(limit, 12, Arc::new(mem.clone()), TMP.as_ref());
        let path = Path::new(TMP).join(first_run(mem.file_names(TMP)));
        let len = mem.file_names(TMP).len();
        assert!(len >= 1);
        let size = rialto_io::Fs::file_size(&mem, &path).unwrap();
        mem.corrupt(&path, offset % size, 1 << (i % 8)).unwrap();
        expect_corrupt(sorter, &added);
        assert!(mem.file_names(TMP).is_empty());
    }
}

#[test]
fn truncated_run_gives_corrupt() {
    let mem = MemFs::new();
    let (sorter, added) =
        sorter_with_a_complete_run(64 << 10, 13, Arc::new(mem.clone()), TMP.as_ref());
    let path = Path::new(TMP).join(first_run(mem.file_names(TMP)));
    let size = rialto_io::Fs::file_size(&mem, &path).unwrap();
    mem.truncate_raw(&path, size - 1).unwrap();
    expect_corrupt(sorter, &added);
}

#[test]
fn posix_fs_sort_and_cleanup() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("spill");
    let records = random_records(20_000, 14);
    let o = SortOptions {
        tmp_dir: tmp.clone(),
        ..opts(128 << 10, DuplicatePolicy::LastWins)
    };
    let sorter = Sorter::new(Arc::new(PosixFs::new()), o).unwrap();
    assert_eq!(sort_all(sorter, &records).unwrap(), sorted_model(&records));
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

#[test]
fn posix_fs_corrupted_run_gives_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("spill");
    let (sorter, added) = sorter_with_a_complete_run(256 << 10, 15, Arc::new(PosixFs::new()), &tmp);
    let names = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let path = tmp.join(first_run(names));
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(&path, bytes).unwrap();
    expect_corrupt(sorter, &added);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

fn record_strategy() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    (
        prop::collection::vec(prop::sample::select(vec![0u8, 1, b'a', 0x7f, 0xff]), 1..4),
        prop::collection::vec(any::<u8>(), 0..40),
    )
}

fn limit_strategy() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..3000, 3000usize..40_000, Just(64 << 20)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn matches_a_btreemap_last_wins(
        records in prop::collection::vec(record_strategy(), 0..300),
        limit in limit_strategy(),
    ) {
        let (mem, sorter) = mem_sorter(limit, DuplicatePolicy::LastWins);
        let out = sort_all(sorter, &records).unwrap();
        prop_assert_eq!(out, sorted_model(&records));
        prop_assert!(mem.file_names(TMP).is_empty());
    }

    #[test]
    fn matches_a_btreemap_error(
        records in prop::collection::vec(record_strategy(), 0..300),
        limit in limit_strategy(),
    ) {
        let (mem, mut sorter) = mem_sorter(limit, DuplicatePolicy::Error);
        for (k, v) in &records {
            sorter.add(k, v).unwrap();
        }
        let mut seen = BTreeSet::new();
        let dups: BTreeSet<Vec<u8>> =
            records.iter().filter(|(k, _)| !seen.insert(k.clone())).map(|(k, _)| k.clone()).collect();
        let model: BTreeMap<_, _> = records.iter().cloned().collect();
        let mut emitted = Vec::new();
        let result = sorter.finish().and_then(|mut sorted| {
            while let Some((k, v)) = sorted.next()? {
                emitted.push((k.to_vec(), v.to_vec()));
            }
            Ok(())
        });
        // Whatever came out is in order and is the last value of its key.
        for w in emitted.windows(2) {
            prop_assert!(w[0].0 < w[1].0);
        }
        for (k, v) in &emitted {
            prop_assert_eq!(model.get(k), Some(v));
        }
        match result {
            Ok(()) => {
                prop_assert!(dups.is_empty());
                prop_assert_eq!(emitted.len(), model.len());
            }
            Err(SortError::DuplicateKey { key }) => prop_assert!(dups.contains(&key)),
            Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e}"))),
        }
        prop_assert!(mem.file_names(TMP).is_empty());
    }
}
