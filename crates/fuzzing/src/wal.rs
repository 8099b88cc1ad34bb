//! `wal_reader`: reading WAL segments (`rialto_lsm::wal`) from a `MemFs`.
//!
//! Input layout: a mode byte (even: raw, odd: structured), then
//! - raw: the segment number (1 byte), two bytes choosing an offset for `read_record_at`,
//!   then the segment's bytes;
//! - structured: the segment number (1 byte), trailing zero bytes / 16 (1 byte, as a
//!   preallocated segment has), the damage (1 byte kind: 0 none, 1 flip one byte, 2 truncate,
//!   3 append garbage; 2 bytes position; 1 byte XOR), garbage (length-prefixed), then records
//!   (1 byte kind, then a length-prefixed payload each) until the input ends.
//!
//! Raw mode checks that reading never panics nor fails, that the records it returns are
//! contiguous from offset 0, each one verifiable on its own (`read_record_at`) and rewritten
//! byte for byte by `WalWriter`, that write-batch payloads that decode re-encode to the same
//! batch, and that the segment end it reports is right: clean only if nothing but zeros
//! follows, a torn tail only if no valid record follows the bad bytes, corruption only if
//! one does.
//!
//! Structured mode writes the records with `WalWriter`, applies at most one damage, and checks
//! the reader against what was written: every record before the first damaged one comes back
//! exactly, nothing from the damaged record on does (one changed byte cannot pass the CRC32C),
//! and the damage is reported at that record's offset, as corruption if an intact record
//! follows it.

use std::path::Path;

use rialto_engine::WriteBatch;
use rialto_io::{Fs, MemFs};
use rialto_lsm::wal::{
    batch_prefix, decode_batch, read_record_at, read_segment, segment_path, SegmentEnd, WalWriter,
    HEADER_LEN, KIND_BATCH, KIND_EDIT,
};

use crate::input::Input;

const DIR: &str = "/wal";

/// One record as the reader reported it: offset, kind, payload.
type Record = (u64, u8, Vec<u8>);

/// The fuzz target. See the [module docs](self).
pub fn wal_reader(data: &[u8]) {
    let mut input = Input::new(data);
    if !input.bool() {
        raw(input);
    } else {
        structured(input);
    }
}

/// Writes `bytes` as segment `number` of a fresh file system and reads it back.
fn read_back(number: u64, bytes: &[u8]) -> (Vec<Record>, SegmentEnd) {
    let fs = MemFs::new();
    let dir = Path::new(DIR);
    let path = segment_path(dir, number);
    let written = fs.create_dir_all(dir).and_then(|()| {
        let mut f = fs.create(&path)?;
        f.append(bytes)?;
        f.flush()
    });
    written.expect("writing to a fresh MemFs cannot fail");
    let mut records = Vec::new();
    let end = read_segment(&fs, &path, number, |offset, kind, payload| {
        records.push((offset, kind, payload.to_vec()));
        Ok(())
    })
    .expect("reading a MemFs segment does no failing I/O and the callback never fails");
    (records, end)
}

/// The segment `WalWriter` writes for these records.
fn write_segment(number: u64, records: &[(u8, &[u8])]) -> Vec<u8> {
    let fs = MemFs::new();
    let dir = Path::new(DIR);
    let written = fs.create_dir_all(dir).and_then(|()| {
        let mut w = WalWriter::create(&fs, dir, number).map_err(std::io::Error::other)?;
        for (kind, payload) in records {
            w.add_record(*kind, payload)
                .map_err(std::io::Error::other)?;
        }
        fs.read_all(&segment_path(dir, number))
    });
    written.expect("writing to a fresh MemFs cannot fail")
}

fn raw(mut input: Input) {
    let number = u64::from(input.u8());
    let probe = input.u16();
    let segment = input.rest();
    let (records, end) = read_back(number, segment);

    let mut pos = 0u64;
    for (offset, kind, payload) in &records {
        assert_eq!(*offset, pos, "records are contiguous");
        assert!(*kind == KIND_BATCH || *kind == KIND_EDIT, "kind {kind}");
        assert_eq!(
            read_record_at(segment, *offset, number),
            Ok((*kind, &payload[..])),
            "a record read in sequence reads the same by address"
        );
        if *kind == KIND_BATCH {
            batch_round_trip(payload);
        }
        pos += (HEADER_LEN + payload.len()) as u64;
    }
    let valid_len = usize::try_from(pos).expect("records lie inside the segment");
    let framed: Vec<(u8, &[u8])> = records.iter().map(|(_, k, p)| (*k, &p[..])).collect();
    assert_eq!(
        write_segment(number, &framed),
        segment[..valid_len],
        "valid records are rewritten byte for byte"
    );
    check_end(segment, number, valid_len, &end);

    // Reading by address takes any offset, inside the segment or past its end
    // (fuzz/regressions/wal_reader/read-record-at-past-the-end once panicked).
    let past_end = 16;
    let probe_at = u64::from(probe) % (segment.len() as u64 + past_end);
    if let Ok((kind, payload)) = read_record_at(segment, probe_at, number) {
        assert!(kind == KIND_BATCH || kind == KIND_EDIT);
        assert!(probe_at as usize + HEADER_LEN + payload.len() <= segment.len());
    }
}

/// Whether a valid record of segment `number` starts after `from` in `bytes` and ends by
/// `limit`.
fn valid_record_after(bytes: &[u8], from: usize, number: u64, limit: usize) -> bool {
    (from + 1..bytes.len()).any(|p| {
        // A record's kind byte is 1 or 2: skip the checksum everywhere else (zeros, mostly).
        matches!(
            bytes.get(p + HEADER_LEN - 1),
            Some(&(KIND_BATCH | KIND_EDIT))
        ) && read_record_at(bytes, p as u64, number)
            .is_ok_and(|(_, payload)| p + HEADER_LEN + payload.len() <= limit)
    })
}

/// Checks the reported end of a segment whose valid records end at `valid_len`: clean only
/// before nothing but zeros, a torn tail only if no valid record starts after `valid_len`,
/// corruption only if one does.
fn check_end(bytes: &[u8], number: u64, valid_len: usize, end: &SegmentEnd) {
    let rest = &bytes[valid_len.min(bytes.len())..];
    match end {
        SegmentEnd::Clean => assert!(
            rest.iter().all(|&b| b == 0),
            "clean end, but non-zero bytes follow the last record at {valid_len}"
        ),
        SegmentEnd::TornTail { offset } => {
            assert_eq!(*offset, valid_len as u64, "torn tail offset");
            assert!(rest.iter().any(|&b| b != 0), "torn tail of zeros only");
            // A valid record may end in zero bytes past the last non-zero one
            // (fuzz/regressions/wal_reader/valid-record-ending-in-zeros): search them all.
            let limit = bytes.len();
            assert!(
                !valid_record_after(bytes, valid_len, number, limit),
                "torn tail at {offset}, but a valid record follows"
            );
        }
        SegmentEnd::Corrupt { offset, reason } => {
            assert_eq!(*offset, valid_len as u64, "corruption offset ({reason})");
            assert!(
                valid_record_after(bytes, valid_len, number, bytes.len()),
                "corruption at {offset} ({reason}) with no valid record after it"
            );
        }
    }
}

/// A write-batch payload that decodes re-encodes (canonical prefix, same operations) to a
/// payload decoding to the same batch.
fn batch_round_trip(payload: &[u8]) {
    let Ok((seq, batch)) = decode_batch(payload) else {
        return;
    };
    let (prefix, n) = batch_prefix(seq, batch.count());
    let mut again = prefix[..n].to_vec();
    again.extend_from_slice(batch.ops_data());
    let (seq2, batch2): (u64, WriteBatch) =
        decode_batch(&again).expect("a re-encoded batch decodes");
    assert_eq!(seq2, seq);
    assert!(
        batch2.iter().eq(batch.iter()),
        "batch operations round trip"
    );
}

fn structured(mut input: Input) {
    let number = u64::from(input.u8());
    let zeros = usize::from(input.u8()) * 16;
    let damage = input.u8() % 4;
    let position = usize::from(input.u16());
    let xor = input.u8().max(1);
    let garbage = input.len_prefixed(64);
    let mut records: Vec<(u8, &[u8])> = Vec::new();
    while !input.is_empty() && records.len() < 64 {
        let kind = if input.bool() { KIND_EDIT } else { KIND_BATCH };
        records.push((kind, input.len_prefixed(255)));
    }
    let original = write_segment(number, &records);
    let mut bytes = original.clone();
    bytes.resize(original.len() + zeros, 0);
    match damage {
        1 => {
            let at = position % bytes.len().max(1);
            if let Some(b) = bytes.get_mut(at) {
                *b ^= xor;
            }
        }
        2 => bytes.truncate(position % (bytes.len() + 1)),
        3 => bytes.extend_from_slice(garbage),
        _ => {}
    }
    let (got, end) = read_back(number, &bytes);

    // Spans of the written records, and the first one the damage reached.
    let mut spans = Vec::with_capacity(records.len());
    let mut start = 0;
    for (_, payload) in &records {
        spans.push((start, start + HEADER_LEN + payload.len()));
        start += HEADER_LEN + payload.len();
    }
    let intact = |&(s, e): &(usize, usize)| bytes.get(s..e) == original.get(s..e);
    let first_bad = spans.iter().position(|span| !intact(span));
    let expect_ok = first_bad.unwrap_or(records.len());
    let want: Vec<Record> = records[..expect_ok]
        .iter()
        .zip(&spans)
        .map(|((kind, payload), &(s, _))| (s as u64, *kind, payload.to_vec()))
        .collect();
    assert!(
        got.len() >= want.len() && got[..want.len()] == want[..],
        "records before the damage must come back exactly: got {} of {}",
        got.len(),
        want.len()
    );
    match first_bad {
        Some(bad) => {
            assert_eq!(got.len(), bad, "nothing from the damaged record {bad} on");
            // An intact later record is found by `check_end`'s scan, which then demands
            // corruption rather than a torn tail.
            check_end(&bytes, number, spans[bad].0, &end);
        }
        None => {
            // Every written record is intact; anything after them is zeros or garbage, which
            // may hold records of its own only if garbage was appended.
            if damage != 3 {
                assert_eq!(
                    got.len(),
                    records.len(),
                    "no records beyond the written ones"
                );
            }
            let valid_len = got
                .last()
                .map_or(0, |(o, _, p)| *o as usize + HEADER_LEN + p.len());
            check_end(&bytes, number, valid_len, &end);
        }
    }
}
