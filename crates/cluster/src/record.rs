//! The records of a partition of the log, and the state a replica keeps about each partition.
//!
//! ```text
//! record  := version: u8 (1) | kind: u8 | body
//! kind 1  Claim  node: u32 LE | incarnation: u64 LE | port: u16 LE | host: len u16 LE + bytes
//! kind 2  Write  epoch: u64 LE | incarnation: u64 LE | seq: u64 LE | payload (the rest)
//! ```
//!
//! A claim makes its writer the partition's master from its own offset on: that offset is the
//! master's *epoch*. A write carries the epoch its master claimed under and is applied only if
//! that is still the partition's epoch where it lands in the log; a deposed master's late
//! writes land after its successor's claim and are skipped by every replica alike.
//!
//! ```text
//! state   := version: u8 (1) | next: u64 LE | epoch: u64 LE | last_seq: u64 LE | master: u8
//!            | [node: u32 LE | incarnation: u64 LE | port: u16 LE | host: len u16 LE + bytes]
//! ```
//! `next` is the offset of the first record not yet applied; `epoch` is `u64::MAX` before the
//! first claim.

/// Format version written and understood.
pub const FORMAT: u8 = 1;
const CLAIM: u8 = 1;
const WRITE: u8 = 2;

/// Why a record or a stored state does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Written by a newer version of Rialto: a replica must not guess at it.
    #[error("format version {0} is not understood (this build reads version 1)")]
    Version(u8),
    #[error("malformed: {0}")]
    Malformed(&'static str),
}

/// A node's address for one partition, as clients are told it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Master {
    pub node: u32,
    /// Distinguishes the runs of one node: a restarted node claims afresh.
    pub incarnation: u64,
    pub host: String,
    pub port: u16,
}

/// A decoded record.
#[derive(Debug, PartialEq, Eq)]
pub enum Record<'a> {
    Claim(Master),
    Write {
        epoch: u64,
        incarnation: u64,
        seq: u64,
        payload: &'a [u8],
    },
}

/// A claim's bytes.
pub fn claim(m: &Master) -> Vec<u8> {
    let mut v = Vec::with_capacity(17 + m.host.len());
    v.extend_from_slice(&[FORMAT, CLAIM]);
    put_master(&mut v, m);
    v
}

/// The bytes of a write carrying `payload`.
pub fn write(epoch: u64, incarnation: u64, seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(26 + payload.len());
    v.extend_from_slice(&[FORMAT, WRITE]);
    v.extend_from_slice(&epoch.to_le_bytes());
    v.extend_from_slice(&incarnation.to_le_bytes());
    v.extend_from_slice(&seq.to_le_bytes());
    v.extend_from_slice(payload);
    v
}

fn put_master(v: &mut Vec<u8>, m: &Master) {
    v.extend_from_slice(&m.node.to_le_bytes());
    v.extend_from_slice(&m.incarnation.to_le_bytes());
    v.extend_from_slice(&m.port.to_le_bytes());
    // Hosts are checked to fit when the node's options are.
    let host = &m.host.as_bytes()[..m.host.len().min(usize::from(u16::MAX))];
    v.extend_from_slice(&(host.len() as u16).to_le_bytes());
    v.extend_from_slice(host);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.0.len() < n {
            return Err(DecodeError::Malformed("truncated"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        let mut a = [0; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        let mut a = [0; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    fn master(&mut self) -> Result<Master, DecodeError> {
        let node = self.u32()?;
        let incarnation = self.u64()?;
        let port = self.u16()?;
        let len = usize::from(self.u16()?);
        let host = std::str::from_utf8(self.take(len)?)
            .map_err(|_| DecodeError::Malformed("host is not UTF-8"))?
            .to_owned();
        Ok(Master {
            node,
            incarnation,
            host,
            port,
        })
    }
    fn version(&mut self) -> Result<(), DecodeError> {
        match self.u8() {
            Ok(FORMAT) => Ok(()),
            Ok(v) => Err(DecodeError::Version(v)),
            Err(_) => Err(DecodeError::Malformed("empty")),
        }
    }
    fn end(&self) -> Result<(), DecodeError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::Malformed("bytes after the end"))
        }
    }
}

/// Decodes a record.
pub fn decode(bytes: &[u8]) -> Result<Record<'_>, DecodeError> {
    let mut r = Reader(bytes);
    r.version()?;
    match r.u8()? {
        CLAIM => {
            let m = r.master()?;
            r.end()?;
            Ok(Record::Claim(m))
        }
        WRITE => Ok(Record::Write {
            epoch: r.u64()?,
            incarnation: r.u64()?,
            seq: r.u64()?,
            payload: r.0,
        }),
        _ => Err(DecodeError::Malformed("unknown record kind")),
    }
}

/// What a replica has applied of one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionState {
    /// The offset of the first record not applied yet.
    pub next: u64,
    /// The offset of the claim in force; `u64::MAX` before any.
    pub epoch: u64,
    /// The last sequence number applied from the master in force.
    pub last_seq: u64,
    pub master: Option<Master>,
}

impl Default for PartitionState {
    fn default() -> Self {
        PartitionState {
            next: 0,
            epoch: u64::MAX,
            last_seq: 0,
            master: None,
        }
    }
}

impl PartitionState {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(48);
        v.push(FORMAT);
        v.extend_from_slice(&self.next.to_le_bytes());
        v.extend_from_slice(&self.epoch.to_le_bytes());
        v.extend_from_slice(&self.last_seq.to_le_bytes());
        match &self.master {
            None => v.push(0),
            Some(m) => {
                v.push(1);
                put_master(&mut v, m);
            }
        }
        v
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader(bytes);
        r.version()?;
        let next = r.u64()?;
        let epoch = r.u64()?;
        let last_seq = r.u64()?;
        let master = match r.u8()? {
            0 => None,
            1 => Some(r.master()?),
            _ => return Err(DecodeError::Malformed("master flag")),
        };
        r.end()?;
        Ok(PartitionState {
            next,
            epoch,
            last_seq,
            master,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m() -> Master {
        Master {
            node: 7,
            incarnation: 0xdead_beef,
            host: "10.0.0.7".into(),
            port: 7001,
        }
    }

    #[test]
    fn records_round_trip() {
        assert_eq!(decode(&claim(&m())), Ok(Record::Claim(m())));
        let w = write(42, 9, 3, b"op");
        assert_eq!(
            decode(&w),
            Ok(Record::Write {
                epoch: 42,
                incarnation: 9,
                seq: 3,
                payload: b"op"
            })
        );
    }

    #[test]
    fn damaged_records_are_refused() {
        let c = claim(&m());
        for n in 0..c.len() {
            assert!(decode(&c[..n]).is_err(), "prefix of {n} bytes");
        }
        let mut long = c.clone();
        long.push(0);
        assert!(decode(&long).is_err());
        let mut newer = c;
        newer[0] = 2;
        assert_eq!(decode(&newer), Err(DecodeError::Version(2)));
        assert!(decode(&[FORMAT, 9]).is_err());
    }

    #[test]
    fn states_round_trip() {
        let s = PartitionState::default();
        assert_eq!(PartitionState::decode(&s.encode()), Ok(s));
        let s = PartitionState {
            next: 100,
            epoch: 17,
            last_seq: 5,
            master: Some(m()),
        };
        let b = s.encode();
        assert_eq!(PartitionState::decode(&b), Ok(s));
        for n in 0..b.len() {
            assert!(PartitionState::decode(&b[..n]).is_err());
        }
    }
}
