//! `wal_reader`: reading WAL segments (`rialto_lsm::wal`) from a `MemFs`.
//!
//! Input layout: a mode byte (even: raw, odd: structured), then
//! - raw: the segment number (1 byte), two bytes choosing an offset for `read_record_at`,
//!   then the segment's bytes;
//! - structured: the segment number (1 byte), trailing zero bytes / 16 (1 byte, as a
//!   preallocated segment has), the damage (1 byte kind: 0 none, 1 flip one byte, 2 truncate,
//!   3 append garbage, 4 zero a range of up to 255 bytes; 2 bytes position; 1 byte XOR or
//!   length), garbage (length-prefixed), then records (1 byte: bit 0 the kind, bit 1 a sync
//!   after it; then a length-prefixed payload each) until the input ends.
//!
//! Raw mode checks that reading never panics nor fails, that the records it returns are
//! contiguous from offset 0, each one verifiable on its own (`read_record_at`) and, where
//! `WalWriter` would write it so, rewritten byte for byte, that write-batch payloads that
//! decode re-encode to the same batch, and that the segment end it reports is right: clean
//! only if nothing but zeros follows; corruption only if a valid record after the bad bytes
//! proves them durable (design §5); a torn tail only if every such record lies inside
//! another valid record after the bad bytes (the reader skips a valid record whole).
//!
//! Structured mode writes the records with `WalWriter` (syncing where asked, so that later
//! records' durable marks cover earlier ones), applies at most one damage, and checks the
//! reader against what was written: every record before the first damaged one comes back
//! exactly, nothing from the damaged record on does (one changed byte cannot pass the
//! CRC32C), and the damage is reported at that record's offset, as corruption if the next
//! record is intact, proves it durable and is the first valid record after it.

use std::path::Path;

use rialto_engine::WriteBatch;
use rialto_io::{Fs, MemFs};
use rialto_lsm::wal::{
    batch_prefix, decode_batch, read_record_at, read_segment, segment_path, Record, SegmentEnd,
    WalWriter, HEADER_LEN, KIND_BATCH, KIND_EDIT,
};

use crate::input::Input;

const DIR: &str = "/wal";

/// One record as the reader reported it: offset, kind, payload, durable mark.
type Read = (u64, u8, Vec<u8>, Option<u64>);

/// The fuzz target. See the [module docs](self).
pub fn wal_reader(data: &[u8]) {
    let mut input = Input::new(data);
    if !input.bool() {
        raw(input);
    } else {
        structured(input);
    }
}

fn owned(r: &Record<'_>) -> Read {
    (r.offset, r.kind, r.payload.to_vec(), r.durable)
}

/// Writes `bytes` as segment `number` of a fresh file system and reads it back.
fn read_back(number: u64, bytes: &[u8]) -> (Vec<Read>, SegmentEnd) {
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
    let end = read_segment(&fs, &path, number, |r| {
        records.push(owned(&r));
        Ok(())
    })
    .expect("reading a MemFs segment does no failing I/O and the callback never fails");
    (records, end)
}

/// The segment `WalWriter` writes for these records (kind, payload, sync after it), and the
/// offset of each record.
fn write_segment(number: u64, records: &[(u8, &[u8], bool)]) -> (Vec<u8>, Vec<u64>) {
    let fs = MemFs::new();
    let dir = Path::new(DIR);
    let mut offsets = Vec::with_capacity(records.len());
    let written = fs.create_dir_all(dir).and_then(|()| {
        let mut w = WalWriter::create(&fs, dir, number).map_err(std::io::Error::other)?;
        for (kind, payload, sync) in records {
            offsets.push(
                w.add_record(*kind, payload)
                    .map_err(std::io::Error::other)?,
            );
            if *sync {
                w.sync().map_err(std::io::Error::other)?;
            }
        }
        fs.read_all(&segment_path(dir, number))
    });
    (
        written.expect("writing to a fresh MemFs cannot fail"),
        offsets,
    )
}

/// The length of a varint64 of `v`.
fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn raw(mut input: Input) {
    let number = u64::from(input.u8());
    let probe = input.u16();
    let segment = input.rest();
    let (records, end) = read_back(number, segment);

    let mut pos = 0u64;
    // Whether a writer that never synced would write these records exactly so: edits, and
    // batches marked durable from offset 0 with the shortest encoding of the mark.
    let mut rewritable = true;
    for (offset, kind, payload, durable) in &records {
        assert_eq!(*offset, pos, "records are contiguous");
        assert!(*kind == KIND_BATCH || *kind == KIND_EDIT, "kind {kind}");
        let again = read_record_at(segment, *offset, number)
            .expect("a record read in sequence reads the same by address");
        assert_eq!(
            owned(&again),
            (*offset, *kind, payload.clone(), *durable),
            "a record read in sequence reads the same by address"
        );
        assert!(
            durable.is_none_or(|d| d <= *offset),
            "a mark never points past its record"
        );
        let mark_len = again.payload_offset - offset - HEADER_LEN as u64;
        rewritable &= match (*kind, durable) {
            (KIND_EDIT, _) => mark_len == 0,
            (_, Some(0)) => mark_len as usize == varint_len(*offset),
            _ => false,
        };
        if *kind == KIND_BATCH {
            batch_round_trip(payload);
        }
        pos = again.end();
    }
    let valid_len = usize::try_from(pos).expect("records lie inside the segment");
    if rewritable {
        let framed: Vec<(u8, &[u8], bool)> = records
            .iter()
            .map(|(_, k, p, _)| (*k, &p[..], false))
            .collect();
        assert_eq!(
            write_segment(number, &framed).0,
            segment[..valid_len],
            "valid records are rewritten byte for byte"
        );
    }
    check_end(segment, number, valid_len, &end);

    // Reading by address takes any offset, inside the segment or past its end
    // (fuzz/regressions/wal_reader/read-record-at-past-the-end once panicked).
    let past_end = 16;
    let probe_at = u64::from(probe) % (segment.len() as u64 + past_end);
    if let Ok(r) = read_record_at(segment, probe_at, number) {
        assert!(r.kind == KIND_BATCH || r.kind == KIND_EDIT);
        assert!(r.end() as usize <= segment.len());
    }
}

/// Every valid record of segment `number` that starts after `from` in `bytes`, at any offset.
/// A valid record may end in zero bytes past the last non-zero one
/// (fuzz/regressions/wal_reader/valid-record-ending-in-zeros): all of `bytes` is searched.
fn records_after(bytes: &[u8], from: usize, number: u64) -> Vec<Record<'_>> {
    (from + 1..bytes.len())
        // A record's kind byte is 1, 2 or 3: skip the checksum everywhere else.
        .filter(|&p| matches!(bytes.get(p + HEADER_LEN - 1), Some(1..=3)))
        .filter_map(|p| read_record_at(bytes, p as u64, number).ok())
        .collect()
}

/// Checks the reported end of a segment whose valid records end at `valid_len` (see the
/// module docs).
fn check_end(bytes: &[u8], number: u64, valid_len: usize, end: &SegmentEnd) {
    let rest = &bytes[valid_len.min(bytes.len())..];
    let after = records_after(bytes, valid_len, number);
    let bad = valid_len as u64;
    match end {
        SegmentEnd::Clean => assert!(
            rest.iter().all(|&b| b == 0),
            "clean end, but non-zero bytes follow the last record at {valid_len}"
        ),
        SegmentEnd::TornTail {
            offset,
            records_after,
            ..
        } => {
            assert_eq!(*offset, bad, "torn tail offset");
            assert!(rest.iter().any(|&b| b != 0), "torn tail of zeros only");
            assert!(
                *records_after as usize <= after.len(),
                "records after the tear"
            );
            for q in after.iter().filter(|q| q.proves_durable(bad)) {
                assert!(
                    after
                        .iter()
                        .any(|r| r.offset < q.offset && q.offset < r.end()),
                    "torn tail at {offset}, but the record at {} proves it durable",
                    q.offset
                );
            }
        }
        SegmentEnd::Corrupt { offset, reason } => {
            assert_eq!(*offset, bad, "corruption offset ({reason})");
            assert!(
                after.iter().any(|q| q.proves_durable(bad)),
                "corruption at {offset} ({reason}) with no record after it proving it durable"
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
    let damage = input.u8() % 5;
    let position = usize::from(input.u16());
    let xor = input.u8().max(1);
    let garbage = input.len_prefixed(64);
    let mut records: Vec<(u8, &[u8], bool)> = Vec::new();
    while !input.is_empty() && records.len() < 64 {
        let flags = input.u8();
        let kind = if flags & 1 == 1 {
            KIND_EDIT
        } else {
            KIND_BATCH
        };
        records.push((kind, input.len_prefixed(255), flags & 2 != 0));
    }
    let (original, offsets) = write_segment(number, &records);
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
        4 => {
            // A hole: sectors of a write that never reached the disk read as zeros.
            let at = position % bytes.len().max(1);
            let end = (at + usize::from(xor)).min(bytes.len());
            bytes[at..end].fill(0);
        }
        _ => {}
    }
    let (got, end) = read_back(number, &bytes);

    // Spans of the written records, and the first one the damage reached.
    let spans: Vec<(usize, usize)> = offsets
        .iter()
        .zip(offsets.iter().skip(1).chain([&(original.len() as u64)]))
        .map(|(&s, &e)| (s as usize, e as usize))
        .collect();
    let intact = |&(s, e): &(usize, usize)| bytes.get(s..e) == original.get(s..e);
    let first_bad = spans.iter().position(|span| !intact(span));
    let expect_ok = first_bad.unwrap_or(records.len());
    let want: Vec<(u64, u8, &[u8])> = records[..expect_ok]
        .iter()
        .zip(&spans)
        .map(|((kind, payload, _), &(s, _))| (s as u64, *kind, *payload))
        .collect();
    let got_plain: Vec<(u64, u8, &[u8])> =
        got.iter().map(|(o, k, p, _)| (*o, *k, &p[..])).collect();
    assert!(
        got_plain.len() >= want.len() && got_plain[..want.len()] == want[..],
        "records before the damage must come back exactly: got {} of {}",
        got.len(),
        want.len()
    );
    match first_bad {
        Some(bad) => {
            assert_eq!(got.len(), bad, "nothing from the damaged record {bad} on");
            check_end(&bytes, number, spans[bad].0, &end);
            // The next record, intact, proving the damaged one durable and found first by
            // the reader's scan, makes it corruption.
            let (bad_at, next_at) = spans[bad];
            if let Some(next) = spans.get(bad + 1).filter(|span| intact(span)) {
                let first_found = records_after(&bytes, bad_at, number).into_iter().next();
                if let Some(r) = first_found.filter(|r| r.offset as usize == next_at) {
                    if r.proves_durable(bad_at as u64) {
                        assert!(
                            matches!(end, SegmentEnd::Corrupt { .. }),
                            "record {} at {} proves the damaged one durable: {end:?}",
                            bad + 1,
                            next.0
                        );
                    }
                }
            }
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
            let valid_len = spans.last().map_or(0, |&(_, e)| e);
            let valid_len = if got.len() > records.len() {
                let last = read_record_at(&bytes, got[got.len() - 1].0, number)
                    .expect("a record read comes back by address");
                last.end() as usize
            } else {
                valid_len
            };
            check_end(&bytes, number, valid_len, &end);
        }
    }
}
