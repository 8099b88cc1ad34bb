//! A push's table writing, on a second thread beside the merge.
//!
//! At commit, two jobs remain: producing the sorted stream (a k-way merge over the spilled
//! runs, whose blocks are read and checksummed) and writing tables (data blocks, bloom
//! filter, the copy into the page cache). A profile of a 10M-record push put the kernel's
//! copies of run reads and table writes at a third of all samples, all on the one thread that
//! did both while the other core idled through the commit. So the merging thread packs
//! records, already as the engine keys and records they become, into batches of about
//! [`BATCH_BYTES`], and a writer thread adds them to the ingestion in the same order (one
//! channel, one writer).
//!
//! Memory: at most [`IN_FLIGHT`] batches queued, one being written and one being filled,
//! about 1 MiB; a record larger than a batch makes a batch of its own. Batches are recycled.
//!
//! Failure: whichever side fails first stops both. A merge error is reported and the writer's
//! ingestion dropped (which removes its files); a write error ends the writer, whose closed
//! channel stops the merge at its next batch.

use std::sync::mpsc;

use rialto_lsm::Ingestion;
use rialto_sort::Sorted;

use super::{StoreError, StoreResult};
use crate::layout::{self, Kind};

/// Bytes of records the merging thread packs before handing a batch over.
pub(super) const BATCH_BYTES: usize = 256 << 10;
/// Batches queued for the writer; the merging thread waits when the writer is this far behind.
pub(super) const IN_FLIGHT: usize = 2;

/// The sorted records of a push (the sorter's output).
pub(super) trait SortedSource {
    /// The next `(key, value)` in ascending key order, `None` at the end.
    fn next_record(&mut self) -> StoreResult<Option<(&[u8], &[u8])>>;
}

impl SortedSource for Sorted {
    fn next_record(&mut self) -> StoreResult<Option<(&[u8], &[u8])>> {
        self.next().map_err(|e| StoreError::Input(e.to_string()))
    }
}

/// Where the engine keys and records go (the ingestion).
pub(super) trait RecordSink: Send {
    /// Appends one entry; keys arrive strictly increasing.
    fn add(&mut self, key: &[u8], record: &[u8]) -> StoreResult<()>;
}

impl RecordSink for Ingestion {
    fn add(&mut self, key: &[u8], record: &[u8]) -> StoreResult<()> {
        Ingestion::add(self, key, record).map_err(StoreError::from)
    }
}

/// What [`write_sorted`] did.
pub(super) struct Written<S> {
    /// The sink, every record added, for the caller to finish.
    pub sink: S,
    /// Records written.
    pub records: u64,
    /// Key (without `head`) and value bytes of those records.
    pub bytes: u64,
}

/// Records packed for the writer: `data` holds each entry's key then its record; `ends` the
/// offsets where each key and each record end.
#[derive(Default)]
struct Batch {
    data: Vec<u8>,
    ends: Vec<(usize, usize)>,
}

impl Batch {
    fn push(&mut self, head: &[u8], key: &[u8], kind: Kind, value: &[u8]) {
        self.data.extend_from_slice(head);
        self.data.extend_from_slice(key);
        let key_end = self.data.len();
        // No expiry: a pushed record is the header byte of its kind, then the value.
        let (h, n) = layout::header(kind, false, None);
        self.data.extend_from_slice(&h[..n]);
        self.data.extend_from_slice(value);
        self.ends.push((key_end, self.data.len()));
    }

    fn write_to(&self, sink: &mut impl RecordSink) -> StoreResult<()> {
        let mut start = 0;
        for &(key_end, end) in &self.ends {
            sink.add(&self.data[start..key_end], &self.data[key_end..end])?;
            start = end;
        }
        Ok(())
    }

    /// Empties the batch for reuse, giving back the room a huge record took.
    fn recycle(mut self) -> Batch {
        self.data.clear();
        self.ends.clear();
        if self.data.capacity() > 4 * BATCH_BYTES {
            self.data.shrink_to(2 * BATCH_BYTES);
        }
        self
    }
}

/// Writes every record of `source` to `sink` as the engine entry `head ++ key` → a record of
/// `kind` holding the value (a string's bytes, a packed collection's payload), merging on
/// this thread and writing on a second one.
pub(super) fn write_sorted<S: RecordSink>(
    source: &mut impl SortedSource,
    sink: S,
    head: &[u8],
    kind: Kind,
) -> StoreResult<Written<S>> {
    std::thread::scope(|scope| {
        let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(IN_FLIGHT);
        let (empty_tx, empty_rx) = mpsc::channel::<Batch>();
        let writer = std::thread::Builder::new()
            .name("rialto-push-write".into())
            .spawn_scoped(scope, move || -> StoreResult<S> {
                let mut sink = sink;
                for batch in full_rx {
                    batch.write_to(&mut sink)?;
                    // The merging thread may be gone already (it failed): nothing to recycle.
                    let _ = empty_tx.send(batch.recycle());
                }
                Ok(sink)
            })
            .map_err(|e| {
                StoreError::Engine(rialto_engine::Error::io(
                    "start the push's table writer thread",
                    e,
                ))
            })?;

        let mut merged: StoreResult<()> = Ok(());
        let (mut records, mut bytes) = (0u64, 0u64);
        let mut batch = Batch::default();
        loop {
            match source.next_record() {
                Err(e) => {
                    merged = Err(e);
                    break;
                }
                Ok(None) => {
                    if !batch.ends.is_empty() {
                        // A closed channel means the writer failed: its join says why.
                        let _ = full_tx.send(batch);
                    }
                    break;
                }
                Ok(Some((k, v))) => {
                    batch.push(head, k, kind, v);
                    records += 1;
                    bytes += (k.len() + v.len()) as u64;
                    if batch.data.len() >= BATCH_BYTES {
                        let next = empty_rx.try_recv().unwrap_or_default();
                        if full_tx.send(std::mem::replace(&mut batch, next)).is_err() {
                            break;
                        }
                    }
                }
            }
        }
        drop(full_tx);
        let written = match writer.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        // A merge error comes first; the writer's sink is then dropped with its files.
        merged?;
        Ok(Written {
            sink: written?,
            records,
            bytes,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// Yields `n` records `key{i:08}` → `i` repeated `len(i)` times, failing at `fail_at`.
    struct Source {
        next: usize,
        n: usize,
        fail_at: Option<usize>,
        key: Vec<u8>,
        value: Vec<u8>,
        len: fn(usize) -> usize,
    }

    impl Source {
        fn new(n: usize, len: fn(usize) -> usize) -> Source {
            Source {
                next: 0,
                n,
                fail_at: None,
                key: Vec::new(),
                value: Vec::new(),
                len,
            }
        }
    }

    impl SortedSource for Source {
        fn next_record(&mut self) -> StoreResult<Option<(&[u8], &[u8])>> {
            let i = self.next;
            if Some(i) == self.fail_at {
                return Err(StoreError::Input("run 3 is corrupt".into()));
            }
            if i == self.n {
                return Ok(None);
            }
            self.next += 1;
            self.key = format!("key{i:08}").into_bytes();
            self.value = vec![(i % 251) as u8; (self.len)(i)];
            Ok(Some((&self.key, &self.value)))
        }
    }

    #[derive(Default)]
    struct Sink {
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        fail_at: Option<usize>,
        dropped: Arc<AtomicBool>,
    }

    impl RecordSink for Sink {
        fn add(&mut self, key: &[u8], record: &[u8]) -> StoreResult<()> {
            if Some(self.entries.len()) == self.fail_at {
                return Err(StoreError::Engine(rialto_engine::Error::io(
                    "write table",
                    std::io::Error::other("injected"),
                )));
            }
            self.entries.push((key.to_vec(), record.to_vec()));
            Ok(())
        }
    }

    impl Drop for Sink {
        fn drop(&mut self) {
            self.dropped.store(true, Ordering::SeqCst);
        }
    }

    fn expected_record(i: usize, len: usize) -> Vec<u8> {
        let mut r = Vec::new();
        layout::encode_record_into(&mut r, None, &vec![(i % 251) as u8; len]);
        r
    }

    #[test]
    fn every_record_arrives_in_order_across_many_batches_with_its_head() {
        // About 40 batches, and every 5000th record larger than a whole batch.
        let len = |i: usize| {
            if i % 5000 == 4999 {
                BATCH_BYTES + 17
            } else {
                100
            }
        };
        let n = 100_000;
        let mut src = Source::new(n, len);
        let w = write_sorted(&mut src, Sink::default(), b"v1:", Kind::String).unwrap();
        assert_eq!(w.records, n as u64);
        let raw: usize = (0..n).map(|i| 11 + len(i)).sum();
        assert_eq!(w.bytes, raw as u64);
        assert_eq!(w.sink.entries.len(), n);
        for (i, (k, r)) in w.sink.entries.iter().enumerate() {
            assert_eq!(k, format!("v1:key{i:08}").as_bytes());
            assert_eq!(r, &expected_record(i, len(i)), "record {i}");
        }
    }

    #[test]
    fn hash_records_carry_the_hash_kind() {
        let mut src = Source::new(3, |_| 5);
        let w = write_sorted(&mut src, Sink::default(), b"h", Kind::Hash).unwrap();
        for (i, (_, r)) in w.sink.entries.iter().enumerate() {
            let rec = layout::Record::decode(bytes::Bytes::from(r.clone())).unwrap();
            assert_eq!(
                (rec.kind, rec.large, rec.expire_at_ms),
                (Kind::Hash, false, None)
            );
            assert_eq!(&rec.value[..], &vec![(i % 251) as u8; 5][..]);
        }
    }

    #[test]
    fn an_empty_stream_writes_nothing() {
        let mut src = Source::new(0, |_| 1);
        let w = write_sorted(&mut src, Sink::default(), b"h", Kind::String).unwrap();
        assert_eq!((w.records, w.bytes, w.sink.entries.len()), (0, 0, 0));
    }

    #[test]
    fn a_merge_error_is_reported_and_the_sink_dropped() {
        let mut src = Source::new(50_000, |_| 100);
        src.fail_at = Some(30_000);
        let dropped = Arc::new(AtomicBool::new(false));
        let mut sink = Sink::default();
        sink.dropped = Arc::clone(&dropped);
        let err = write_sorted(&mut src, sink, b"h", Kind::String)
            .err()
            .unwrap();
        assert!(err.to_string().contains("run 3 is corrupt"), "{err}");
        assert!(dropped.load(Ordering::SeqCst));
    }

    #[test]
    fn a_write_error_stops_the_merge_and_is_reported() {
        let mut src = Source::new(200_000, |_| 100);
        let mut sink = Sink::default();
        sink.fail_at = Some(10);
        let err = write_sorted(&mut src, sink, b"h", Kind::String)
            .err()
            .unwrap();
        assert!(err.to_string().contains("injected"), "{err}");
        // The merge stopped within the queue's reach of the failure, not at the end.
        let per_batch = BATCH_BYTES / 100;
        assert!(
            src.next < (IN_FLIGHT + 3) * per_batch,
            "merged {} records after the writer failed",
            src.next
        );
    }
}
