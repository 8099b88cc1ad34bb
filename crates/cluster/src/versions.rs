//! A pushed version's topic: `<topic>.push.<store id>.<version>`, with as many partitions as
//! the log. A record's partition is its key's (the slot of the full key, prefix included),
//! so a partition of the version topic holds exactly the keys its log partition serves, in
//! the order the pusher sent them; each ends with an end marker carrying the count of its
//! records and a checksum over them, which every node loading the version checks before it
//! reports the version ready. Records travel packed in batches of about [`BATCH_BYTES`]:
//! Kafka's cost is per message, and a pushed record is often a hundred bytes. The start markers make the topic self-describing: a node that
//! loads the version late (it was down during the push) needs nothing else. The layout byte
//! is written only for a hash push: a node from before layouts finds a start marker longer
//! than its prefix, refuses it as malformed and fails the load, which aborts the push, where it
//! would otherwise have written the hashes as strings.
//!
//! ```text
//! record := version: u8 (1) | kind: u8 | body
//!   3 start last_wins: u8 | prefix_len: u32 LE | prefix [| layout: u8]
//!                                                   (first record of every partition; layout
//!                                                   1: hash, absent: string)
//!   1 data  key_len: u32 LE | key (relative to the store's prefix) | value (the rest)
//!   4 batch (key_len: u32 LE | key | value_len: u32 LE | value) * n   (data records, packed)
//!   2 end   records: u64 LE | checksum: u64 LE
//! checksum := XXH3-64 over (key_len: u32 LE | key | value_len: u32 LE | value) of every data
//!             record of the partition, in order
//! ```

use rialto_keyspace::PushLayout;
use xxhash_rust::xxh3::Xxh3;

const FORMAT: u8 = 1;
const DATA: u8 = 1;
const END: u8 = 2;
const START: u8 = 3;
const BATCH: u8 = 4;
/// The start marker's layout byte of a hash push.
const LAYOUT_HASH: u8 = 1;

/// About how many bytes of records one batch message carries (Kafka's default largest
/// message is 1 MiB).
pub const BATCH_BYTES: usize = 256 << 10;

/// Data records packed into one message, for one partition.
pub struct Batch(Vec<u8>);

impl Default for Batch {
    fn default() -> Self {
        let mut v = Vec::with_capacity(BATCH_BYTES + 4096);
        v.push(FORMAT);
        v.push(BATCH);
        Batch(v)
    }
}

impl Batch {
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        self.0.extend_from_slice(&(key.len() as u32).to_le_bytes());
        self.0.extend_from_slice(key);
        self.0
            .extend_from_slice(&(value.len() as u32).to_le_bytes());
        self.0.extend_from_slice(value);
    }

    pub fn is_empty(&self) -> bool {
        self.0.len() == 2
    }

    /// Whether it is full enough to send.
    pub fn full(&self) -> bool {
        self.0.len() >= BATCH_BYTES
    }

    /// The message's bytes; the batch starts empty again.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(self).0
    }
}

/// The data records of a batch message's body.
#[derive(Debug, PartialEq, Eq)]
pub struct BatchRecords<'a>(&'a [u8]);

impl<'a> Iterator for BatchRecords<'a> {
    type Item = Result<(&'a [u8], &'a [u8]), Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let mut field = || -> Result<&'a [u8], Malformed> {
            let n: [u8; 4] = self
                .0
                .get(..4)
                .and_then(|s| s.try_into().ok())
                .ok_or(Malformed("truncated batch"))?;
            let n = u32::from_le_bytes(n) as usize;
            let f = self.0.get(4..4 + n).ok_or(Malformed("truncated batch"))?;
            self.0 = &self.0[4 + n..];
            Ok(f)
        };
        let r = field().and_then(|k| Ok((k, field()?)));
        if r.is_err() {
            self.0 = &[];
        }
        Some(r)
    }
}

/// The topic of version `version` of store `id`.
pub fn topic(log_topic: &str, id: u32, version: u32) -> String {
    format!("{log_topic}.push.{id}.{version}")
}

/// A start marker's bytes: how duplicates are resolved, the store's prefix and what the
/// values are.
pub fn start(last_wins: bool, prefix: &[u8], layout: PushLayout) -> Vec<u8> {
    let mut v = Vec::with_capacity(8 + prefix.len());
    v.push(FORMAT);
    v.push(START);
    v.push(u8::from(last_wins));
    v.extend_from_slice(&(prefix.len() as u32).to_le_bytes());
    v.extend_from_slice(prefix);
    if layout == PushLayout::Hash {
        v.push(LAYOUT_HASH);
    }
    v
}

/// A data record's bytes.
pub fn data(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(6 + key.len() + value.len());
    v.push(FORMAT);
    v.push(DATA);
    v.extend_from_slice(&(key.len() as u32).to_le_bytes());
    v.extend_from_slice(key);
    v.extend_from_slice(value);
    v
}

/// An end marker's bytes.
pub fn end(records: u64, checksum: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(18);
    v.push(FORMAT);
    v.push(END);
    v.extend_from_slice(&records.to_le_bytes());
    v.extend_from_slice(&checksum.to_le_bytes());
    v
}

/// A record of a version topic.
#[derive(Debug, PartialEq, Eq)]
pub enum VersionRecord<'a> {
    Start {
        last_wins: bool,
        prefix: &'a [u8],
        layout: PushLayout,
    },
    Batch(BatchRecords<'a>),
    Data {
        key: &'a [u8],
        value: &'a [u8],
    },
    End {
        records: u64,
        checksum: u64,
    },
}

/// A version record that does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed version record: {0}")]
pub struct Malformed(&'static str);

/// Decodes strictly.
pub fn decode(b: &[u8]) -> Result<VersionRecord<'_>, Malformed> {
    match b {
        [FORMAT, DATA, rest @ ..] => {
            let n: [u8; 4] = rest
                .get(..4)
                .and_then(|s| s.try_into().ok())
                .ok_or(Malformed("truncated"))?;
            let n = u32::from_le_bytes(n) as usize;
            let key = rest.get(4..4 + n).ok_or(Malformed("truncated"))?;
            Ok(VersionRecord::Data {
                key,
                value: &rest[4 + n..],
            })
        }
        [FORMAT, END, rest @ ..] if rest.len() == 16 => Ok(VersionRecord::End {
            records: u64::from_le_bytes(rest[..8].try_into().map_err(|_| Malformed("end"))?),
            checksum: u64::from_le_bytes(rest[8..].try_into().map_err(|_| Malformed("end"))?),
        }),
        [FORMAT, BATCH, rest @ ..] => Ok(VersionRecord::Batch(BatchRecords(rest))),
        [FORMAT, START, lw @ (0 | 1), rest @ ..] => {
            let n: [u8; 4] = rest
                .get(..4)
                .and_then(|s| s.try_into().ok())
                .ok_or(Malformed("truncated"))?;
            let n = u32::from_le_bytes(n) as usize;
            let (prefix, layout) = match rest.get(4..).map(|r| r.split_at_checked(n)) {
                Some(Some((prefix, []))) => (prefix, PushLayout::String),
                Some(Some((prefix, [LAYOUT_HASH]))) => (prefix, PushLayout::Hash),
                _ => return Err(Malformed("start")),
            };
            Ok(VersionRecord::Start {
                last_wins: *lw == 1,
                prefix,
                layout,
            })
        }
        [FORMAT, ..] => Err(Malformed("unknown kind or length")),
        _ => Err(Malformed("unknown format version")),
    }
}

/// The count and checksum of one partition's data records.
pub struct Tally {
    pub records: u64,
    hash: Xxh3,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            records: 0,
            hash: Xxh3::new(),
        }
    }
}

impl Tally {
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        self.records += 1;
        self.hash.update(&(key.len() as u32).to_le_bytes());
        self.hash.update(key);
        self.hash.update(&(value.len() as u32).to_le_bytes());
        self.hash.update(value);
    }

    pub fn checksum(&self) -> u64 {
        self.hash.digest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_is_refused() {
        let d = data(b"k", b"value");
        assert_eq!(
            decode(&d),
            Ok(VersionRecord::Data {
                key: b"k",
                value: b"value"
            })
        );
        assert!(decode(&d[..5]).is_err());
        let e = end(3, 99);
        assert_eq!(
            decode(&e),
            Ok(VersionRecord::End {
                records: 3,
                checksum: 99
            })
        );
        for n in 0..e.len() {
            assert!(decode(&e[..n]).is_err(), "{n}");
        }
        assert!(decode(&[2, 1]).is_err());
        let st = start(true, b"f:", PushLayout::String);
        assert_eq!(
            decode(&st),
            Ok(VersionRecord::Start {
                last_wins: true,
                prefix: b"f:",
                layout: PushLayout::String,
            })
        );
        for n in 0..st.len() {
            assert!(decode(&st[..n]).is_err(), "{n}");
        }
        let hs = start(false, b"f:", PushLayout::Hash);
        assert_eq!(
            decode(&hs),
            Ok(VersionRecord::Start {
                last_wins: false,
                prefix: b"f:",
                layout: PushLayout::Hash,
            })
        );
        // A string push's marker is the one nodes from before layouts read.
        assert_eq!(st, [&[1u8, 3, 1, 2, 0, 0, 0][..], b"f:"].concat());
        assert_eq!(hs.len(), st.len() + 1);
        for bad in [&[2u8][..], &[1, 1]] {
            let mut b = st.clone();
            b.extend_from_slice(bad);
            assert!(decode(&b).is_err(), "{bad:?}");
        }
        assert_eq!(
            decode(&data(b"", b"")),
            Ok(VersionRecord::Data {
                key: b"",
                value: b""
            })
        );
    }

    #[test]
    fn batches_carry_their_records_in_order_and_damage_is_refused() {
        let mut b = Batch::default();
        assert!(b.is_empty());
        b.add(b"k1", b"v1");
        b.add(b"", b"");
        b.add(b"k3", &[7u8; 300]);
        let bytes = b.take();
        assert!(b.is_empty());
        let Ok(VersionRecord::Batch(recs)) = decode(&bytes) else {
            panic!("not a batch")
        };
        let got: Vec<_> = recs.map(|r| r.unwrap()).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], (&b"k1"[..], &b"v1"[..]));
        assert_eq!(got[1], (&b""[..], &b""[..]));
        assert_eq!(got[2].1.len(), 300);
        for cut in 3..bytes.len() {
            let Ok(VersionRecord::Batch(recs)) = decode(&bytes[..cut]) else {
                panic!("not a batch")
            };
            let all: Vec<_> = recs.collect();
            let whole = all.iter().filter(|r| r.is_ok()).count();
            assert!(all.iter().any(|r| r.is_err()) || whole < 3, "cut {cut}");
        }
    }

    #[test]
    fn the_checksum_sees_order_and_boundaries() {
        let sum = |recs: &[(&[u8], &[u8])]| {
            let mut t = Tally::default();
            for (k, v) in recs {
                t.add(k, v);
            }
            t.checksum()
        };
        let a: &[(&[u8], &[u8])] = &[(b"a", b"1"), (b"b", b"2")];
        let b: &[(&[u8], &[u8])] = &[(b"b", b"2"), (b"a", b"1")];
        let c: &[(&[u8], &[u8])] = &[(b"a1", b""), (b"b", b"2")];
        assert_ne!(sum(a), sum(b));
        assert_ne!(sum(a), sum(c));
        assert_eq!(sum(a), sum(a));
    }
}
