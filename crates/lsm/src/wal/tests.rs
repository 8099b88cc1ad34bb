//! Segment round trips, torn tails versus corruption, durable marks and failed appends.

use rialto_engine::Error;
use rialto_io::{Fault, FaultOp, FaultPlan, Fs, MemFs};

use super::reader::data_end;
use super::*;

/// Writes `records` to segment 7, each synced before the next (so each one's mark proves
/// the ones before it durable); returns their offsets.
fn write(fs: &MemFs, records: &[&[u8]]) -> Vec<u64> {
    fs.create_dir_all(Path::new("/db")).unwrap();
    let mut w = WalWriter::create(fs, Path::new("/db"), 7).unwrap();
    records
        .iter()
        .map(|r| {
            let at = w.add_record(KIND_BATCH, r).unwrap();
            w.sync().unwrap();
            at
        })
        .collect()
}

fn torn(offset: u64, records_after: u64) -> impl Fn(&SegmentEnd) -> bool {
    move |e| {
        matches!(e, SegmentEnd::TornTail { offset: o, records_after: n, .. }
            if *o == offset && *n == records_after)
    }
}

fn read(fs: &MemFs) -> (Vec<(u64, Vec<u8>)>, SegmentEnd) {
    let mut out = Vec::new();
    let end = read_segment(fs, &segment_path(Path::new("/db"), 7), 7, |r| {
        out.push((r.offset, r.payload.to_vec()));
        Ok(())
    })
    .unwrap();
    (out, end)
}

#[test]
fn round_trip_with_offsets() {
    let fs = MemFs::new();
    let offs = write(&fs, &[b"one", b"", b"three33"]);
    // 9 header bytes, a 1-byte durable mark, the payload.
    assert_eq!(offs, vec![0, 13, 23]);
    let (recs, end) = read(&fs);
    assert_eq!(end, SegmentEnd::Clean);
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[2], (23, b"three33".to_vec()));
}

#[test]
fn truncated_tail_is_torn() {
    let fs = MemFs::new();
    write(&fs, &[b"one", b"two", b"three"]);
    let p = segment_path(Path::new("/db"), 7);
    let len = fs.file_size(&p).unwrap();
    fs.truncate(&p, len - 2).unwrap();
    let (recs, end) = read(&fs);
    assert_eq!(recs.len(), 2);
    assert!(torn(26, 0)(&end), "{end:?}");
}

#[test]
fn damage_before_a_valid_record_is_corruption() {
    let fs = MemFs::new();
    write(&fs, &[b"one", b"two", b"three"]);
    let p = segment_path(Path::new("/db"), 7);
    fs.corrupt(&p, 14, 0x40).unwrap();
    let (recs, end) = read(&fs);
    assert_eq!(recs.len(), 1);
    assert!(
        matches!(end, SegmentEnd::Corrupt { offset: 13, .. }),
        "{end:?}"
    );
}

#[test]
fn garbled_last_record_is_torn() {
    let fs = MemFs::new();
    write(&fs, &[b"one", b"two", b"three"]);
    let p = segment_path(Path::new("/db"), 7);
    fs.corrupt(&p, 29, 0x01).unwrap();
    let (_, end) = read(&fs);
    assert!(torn(26, 0)(&end), "{end:?}");
}

/// Zeros `range` of segment 7 (bytes a power loss never wrote), leaving the rest.
fn zero(fs: &MemFs, range: std::ops::Range<u64>) {
    let p = segment_path(Path::new("/db"), 7);
    let data = fs.read_all(&p).unwrap();
    for i in range {
        let b = data[i as usize];
        if b != 0 {
            fs.corrupt(&p, i, b).unwrap();
        }
    }
}

/// A writer with `synced` records made durable, then `unsynced` ones handed to the OS in
/// one write and never synced (the power-loss case); returns every record's offset.
fn synced_then_unsynced(fs: &MemFs, synced: &[&[u8]], unsynced: &[&[u8]]) -> Vec<u64> {
    fs.create_dir_all(Path::new("/db")).unwrap();
    let mut w = WalWriter::create(fs, Path::new("/db"), 7).unwrap();
    let mut offs = Vec::new();
    for r in synced {
        offs.push(w.add_record(KIND_BATCH, r).unwrap());
        w.sync().unwrap();
    }
    for r in unsynced {
        offs.push(w.add_record_parts_buffered(KIND_BATCH, &[r]).unwrap());
    }
    w.flush().unwrap();
    offs
}

/// The shape that once kept a server down after a power loss: the last write (several
/// records, never synced) reached the disk with a hole in its middle and a whole record
/// after the hole. Nothing proves the hole durable: a torn tail, cut at the hole's record.
#[test]
fn a_hole_inside_the_last_unsynced_write_is_a_torn_tail() {
    let fs = MemFs::new();
    let offs = synced_then_unsynced(&fs, &[b"one", b"two"], &[b"three", &[7; 300], b"five"]);
    zero(&fs, offs[3] + 20..offs[3] + 120);
    let (recs, end) = read(&fs);
    assert_eq!(recs.len(), 3, "the records before the hole are kept");
    assert!(torn(offs[3], 1)(&end), "{end:?}");
}

/// Later pages of a write reached the disk, earlier ones did not.
#[test]
fn later_parts_of_an_unsynced_write_persisted_before_earlier_ones_are_a_torn_tail() {
    let fs = MemFs::new();
    let offs = synced_then_unsynced(&fs, &[b"one"], &[&[1; 100], &[2; 100], &[3; 100]]);
    zero(&fs, offs[1]..offs[2] + 50);
    let (recs, end) = read(&fs);
    assert_eq!(recs.len(), 1);
    assert!(torn(offs[1], 1)(&end), "{end:?}");
}

/// Async commit: a group is written while the sync of the one before is still running,
/// so its mark does not yet cover that group; a crash before the sync returns may tear
/// both. Neither mark proves the torn bytes durable.
#[test]
fn a_group_written_during_the_previous_groups_sync_proves_nothing_about_it() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let mut w = WalWriter::create(&fs, Path::new("/db"), 7).unwrap();
    w.add_record(KIND_BATCH, b"acknowledged").unwrap();
    w.sync().unwrap();
    let in_sync = w.add_record(KIND_BATCH, &[5; 200]).unwrap();
    // The sync covering `in_sync` has not returned when the next group is written.
    let next = w.add_record(KIND_BATCH, &[6; 200]).unwrap();
    drop(w);
    zero(&fs, in_sync + 50..in_sync + 60);
    let (recs, end) = read(&fs);
    assert_eq!(recs.len(), 1);
    assert!(torn(in_sync, 1)(&end), "{end:?}");
    assert!(next > in_sync);
}

/// A record written after a sync returned proves every byte that sync covered.
#[test]
fn a_hole_in_bytes_a_later_mark_covers_is_corruption() {
    let fs = MemFs::new();
    let offs = synced_then_unsynced(&fs, &[b"one", &[4; 300], b"three"], &[b"four"]);
    zero(&fs, offs[1] + 20..offs[1] + 120);
    let (recs, end) = read(&fs);
    assert_eq!(recs.len(), 1);
    assert!(
        matches!(end, SegmentEnd::Corrupt { offset, .. } if offset == offs[1]),
        "{end:?}"
    );
}

/// A prepared segment (written as zeros ahead of use): the unsynced records over it come
/// back with holes of zeros, and zeros after them.
#[test]
fn a_torn_write_over_a_prepared_segment_is_a_torn_tail() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let p = segment_path(Path::new("/db"), 7);
    let mut f = fs.create(&p).unwrap();
    f.append(&[0; 8192]).unwrap();
    f.sync_data().unwrap();
    fs.sync_dir(Path::new("/db")).unwrap();
    drop(f);
    let mut w = WalWriter::overwrite(&fs, Path::new("/db"), 7).unwrap();
    w.add_record(KIND_BATCH, b"durable").unwrap();
    w.sync().unwrap();
    let a = w.add_record(KIND_BATCH, &[8; 1000]).unwrap();
    w.add_record(KIND_BATCH, &[9; 1000]).unwrap();
    drop(w);
    fs.crash(rialto_io::CrashMode::KeepAll);
    zero(&fs, a + 4..a + 600);
    let (recs, end) = read(&fs);
    assert_eq!(recs.len(), 1);
    assert!(torn(a, 1)(&end), "{end:?}");
}

/// Records written before durable marks existed (kind 1) keep the rule of their time: a
/// valid one after a bad one makes it corruption.
#[test]
fn unmarked_batches_after_a_bad_record_are_corruption() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let mut raw = Vec::new();
    for payload in [&b"one"[..], b"two", b"three"] {
        let len = payload.len() as u32;
        raw.extend_from_slice(&record_crc(7, len, KIND_BATCH, &[], &[payload]).to_le_bytes());
        raw.extend_from_slice(&len.to_le_bytes());
        raw.push(KIND_BATCH);
        raw.extend_from_slice(payload);
    }
    fs.create(&segment_path(Path::new("/db"), 7)).unwrap();
    append_raw(&fs, &raw);
    let (recs, end) = read(&fs);
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[1], (12, b"two".to_vec()));
    assert_eq!(end, SegmentEnd::Clean);
    fs.corrupt(segment_path(Path::new("/db"), 7), 14, 1)
        .unwrap();
    let (_, end) = read(&fs);
    assert!(
        matches!(end, SegmentEnd::Corrupt { offset: 12, .. }),
        "{end:?}"
    );
}

/// Records written without syncs between them prove nothing about each other; the seal
/// of a clean close proves them all.
#[test]
fn a_sealed_segment_reports_damage_anywhere_as_corruption() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let mut w = WalWriter::create(&fs, Path::new("/db"), 7).unwrap();
    for r in [&b"one"[..], b"two", b"three"] {
        w.add_record(KIND_BATCH, r).unwrap();
    }
    w.seal().unwrap();
    let (recs, end) = read(&fs);
    assert_eq!(end, SegmentEnd::Clean);
    assert_eq!(recs.len(), 4, "three records and the seal");
    assert_eq!(
        decode_batch(&recs[3].1).unwrap().1.count(),
        0,
        "the seal is empty"
    );
    fs.corrupt(segment_path(Path::new("/db"), 7), 15, 1)
        .unwrap();
    let (_, end) = read(&fs);
    assert!(
        matches!(end, SegmentEnd::Corrupt { offset: 13, .. }),
        "{end:?}"
    );
}

/// A mark counts only what a sync returned for: bytes handed over after a sync began, or
/// still buffered, are not claimed.
#[test]
fn marks_claim_only_what_a_finished_sync_covered() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let mut w = WalWriter::create(&fs, Path::new("/db"), 7).unwrap();
    let mark_of = |fs: &MemFs, at: u64| {
        let data = fs.read_all(&segment_path(Path::new("/db"), 7)).unwrap();
        read_record_at(&data, at, 7).unwrap().durable
    };
    let a = w.add_record(KIND_BATCH, b"a").unwrap();
    let b = w.add_record_parts_buffered(KIND_BATCH, &[b"b"]).unwrap();
    w.syncer().sync().unwrap(); // covers `a` only: `b` is still in the process
    let c = w.add_record(KIND_BATCH, b"c").unwrap();
    w.sync().unwrap();
    let d = w.add_record(KIND_BATCH, b"d").unwrap();
    assert_eq!(mark_of(&fs, a), Some(0));
    assert_eq!(mark_of(&fs, b), Some(0));
    assert_eq!(mark_of(&fs, c), Some(b), "the first sync covered `a` alone");
    assert_eq!(mark_of(&fs, d), Some(d));
}

#[test]
fn batch_payload_round_trip() {
    let mut b = WriteBatch::new();
    b.put(b"k", b"v");
    b.delete(b"gone");
    let (prefix, n) = batch_prefix(1 << 40, b.count());
    assert_eq!(n, 7);
    let mut payload = prefix[..n].to_vec();
    payload.extend_from_slice(b.ops_data());
    let (seq, d) = decode_batch(&payload).unwrap();
    assert_eq!(seq, 1 << 40);
    assert_eq!(d.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
    assert!(decode_batch(&payload[..payload.len() - 1]).is_err());
    assert!(decode_batch(&[0x80]).is_err());
}

fn append_raw(fs: &MemFs, bytes: &[u8]) {
    let p = segment_path(Path::new("/db"), 7);
    let mut w = fs.open_append(&p).unwrap();
    w.append(bytes).unwrap();
    w.sync_data().unwrap();
}

#[test]
fn zeros_after_the_last_record_are_a_clean_end() {
    let fs = MemFs::new();
    write(&fs, &[b"one", b"two"]);
    append_raw(&fs, &[0u8; 10_000]);
    let (recs, end) = read(&fs);
    assert_eq!(recs.len(), 2);
    assert_eq!(end, SegmentEnd::Clean);
}

#[test]
fn torn_record_before_zeros_is_a_torn_tail() {
    let fs = MemFs::new();
    write(&fs, &[b"one", b"two"]);
    append_raw(&fs, &[9, 9, 9, 9, 200, 0, 0, 0, 1, 7, 7]);
    append_raw(&fs, &[0u8; 5000]);
    let (recs, end) = read(&fs);
    assert_eq!(recs.len(), 2);
    assert!(torn(26, 0)(&end), "{end:?}");
}

#[test]
fn damage_followed_by_a_record_and_zeros_is_corruption() {
    let fs = MemFs::new();
    write(&fs, &[b"one", b"two", b"three"]);
    append_raw(&fs, &[0u8; 5000]);
    fs.corrupt(segment_path(Path::new("/db"), 7), 14, 0x40)
        .unwrap();
    let (_, end) = read(&fs);
    assert!(
        matches!(end, SegmentEnd::Corrupt { offset: 13, .. }),
        "{end:?}"
    );
}

/// Regression (error countdown, `Write` EIO): a flush's hot-key re-log failed in the
/// middle of a record, a writer that had checked the engine before the failure appended
/// behind the torn bytes, and the next sync made the torn record corruption in the middle
/// of a durable segment.
#[test]
fn an_append_after_a_failed_one_fails_and_the_torn_record_stays_last() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let mut w = WalWriter::create(&fs, Path::new("/db"), 7).unwrap();
    w.add_record(KIND_BATCH, b"one").unwrap();
    // The header of the next record goes out; its payload's append fails.
    fs.add_fault(FaultPlan::new(FaultOp::Write, 2, Fault::Eio));
    assert!(w.add_record(KIND_BATCH, b"two").is_err());
    let err = w.add_record(KIND_BATCH, b"three").unwrap_err();
    assert!(matches!(err, Error::ReadOnly(_)), "{err:?}");
    w.sync().unwrap();
    let (recs, end) = read(&fs);
    assert_eq!(recs, vec![(0, b"one".to_vec())]);
    assert!(torn(13, 0)(&end), "{end:?}");
}

#[test]
fn buffered_records_reach_the_os_at_the_next_flush_or_sync_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let fs = rialto_io::PosixFs::new();
    let path = segment_path(dir.path(), 7);
    let on_disk = || std::fs::read(&path).unwrap();
    let mut w = WalWriter::create(&fs, dir.path(), 7).unwrap();
    w.add_record_parts_buffered(KIND_BATCH, &[b"one"]).unwrap();
    w.add_record_parts_buffered(KIND_BATCH, &[b"two"]).unwrap();
    assert!(on_disk().is_empty(), "still in the process");
    assert_eq!(w.flush().unwrap(), 2 * (HEADER_LEN + 4) as u64);
    assert_eq!(on_disk().len(), 2 * (HEADER_LEN + 4));
    assert_eq!(w.flush().unwrap(), 0, "nothing more buffered");
    w.add_record_parts_buffered(KIND_BATCH, &[b"three"])
        .unwrap();
    // An unbuffered add hands over what is buffered before it, too.
    w.add_record(KIND_BATCH, b"four").unwrap();
    w.add_record_parts_buffered(KIND_BATCH, &[b"five"]).unwrap();
    w.sync().unwrap();
    let mut recs = Vec::new();
    read_segment(&fs, &path, 7, |r| {
        recs.push(r.payload.to_vec());
        Ok(())
    })
    .unwrap();
    let want: Vec<&[u8]> = vec![b"one", b"two", b"three", b"four", b"five"];
    assert_eq!(recs, want);
}

#[test]
fn buffered_bytes_count_what_the_next_hand_off_carries() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let mut w = WalWriter::create(&fs, Path::new("/db"), 7).unwrap();
    w.add_record_parts_buffered(KIND_BATCH, &[b"one"]).unwrap();
    w.add_record_parts_buffered(KIND_BATCH, &[b"two"]).unwrap();
    assert_eq!(w.buffered_bytes(), 2 * (HEADER_LEN + 4) as u64);
    w.add_record(KIND_BATCH, b"three").unwrap();
    assert_eq!(w.buffered_bytes(), 0, "the unbuffered add handed them over");
    w.add_record_parts_buffered(KIND_BATCH, &[b"four"]).unwrap();
    assert_eq!(w.buffered_bytes(), (HEADER_LEN + 5) as u64);
    assert_eq!(w.flush().unwrap(), (HEADER_LEN + 5) as u64);
    assert_eq!(w.buffered_bytes(), 0);
}

#[test]
fn a_failed_flush_fails_the_segment() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let mut w = WalWriter::create(&fs, Path::new("/db"), 7).unwrap();
    w.add_record(KIND_BATCH, b"one").unwrap();
    w.add_record_parts_buffered(KIND_BATCH, &[b"two"]).unwrap();
    // MemFs counts a flush as a write: fail it.
    fs.add_fault(FaultPlan::new(FaultOp::Write, 1, Fault::Eio));
    assert!(
        matches!(w.flush(), Err(Error::Io { .. })),
        "the flush fails"
    );
    let err = w.add_record(KIND_BATCH, b"three").unwrap_err();
    assert!(matches!(err, Error::ReadOnly(_)), "{err:?}");
    assert!(matches!(w.flush(), Err(Error::ReadOnly(_))));
}

#[test]
fn data_end_drops_trailing_zeros_across_pages() {
    for len in [0usize, 1, 4095, 4096, 4097, 8192, 3 * 4096 + 17] {
        for last in [None, Some(0), Some(len / 2), len.checked_sub(1)] {
            let mut data = vec![0u8; len];
            let want = match last.filter(|&i| i < len) {
                Some(i) => {
                    data[i] = 1;
                    i + 1
                }
                None => 0,
            };
            assert_eq!(data_end(&data), want, "len {len}, non-zero at {last:?}");
        }
    }
}

#[test]
fn record_from_another_segment_fails() {
    let fs = MemFs::new();
    write(&fs, &[b"one"]);
    let data = fs.read_all(&segment_path(Path::new("/db"), 7)).unwrap();
    assert!(read_record_at(&data, 0, 7).is_ok());
    assert_eq!(read_record_at(&data, 0, 7).unwrap().durable, Some(0));
    assert!(read_record_at(&data, 0, 8).is_err());
}
