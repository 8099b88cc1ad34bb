//! The expected state: what the database must hold, kept in a file that survives the kill
//! of the process writing it (every update is a `pwrite` into the page cache, which a
//! process crash does not lose; the driver never crashes the machine).
//!
//! ```text
//! 0      magic "RIALTO-STRESS-01" (16 bytes)
//! 16     keys u32 LE, threads u32 LE, reserved (8 bytes)
//! 32     reserved up to 512
//! 512    acknowledged writes per thread: 64 × u64 LE
//! 1024   one 16-byte slot per key: committed u64 LE, pending u64 LE
//! then   one 128-byte group record per thread: count u32 LE, reserved u32, then up to 15
//!        (key u32 LE, version u32 LE): the keys a multi-key write in flight puts
//! ```
//! A slot value is 0 for "never written", else `version << 1 | deleted`. A writer sets
//! `pending` before a write and, once it is acknowledged, sets `committed` and clears
//! `pending`: a kill anywhere in between leaves both candidates recorded. A multi-key write
//! (one transaction) also records its keys and versions as the thread's group before it is
//! sent and clears it once every key's slot is set: after a kill, the keys of a recorded group
//! must all hold their new versions or none of them.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

const MAGIC: &[u8; 16] = b"RIALTO-STRESS-02";
const ACKS_AT: u64 = 512;
const SLOTS_AT: u64 = 1024;
/// Most writer threads (one ack counter each).
pub const MAX_THREADS: u32 = 64;
/// Bytes of one thread's group record.
const GROUP_BYTES: u64 = 128;
/// Most keys in one multi-key write.
pub const MAX_GROUP: usize = 15;

/// A key's state as recorded: never written, deleted, or holding `version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No write ever reached this key.
    Never,
    /// Deleted by the write of this version.
    Deleted(u32),
    /// Holds this version's value.
    Put(u32),
}

impl State {
    /// Packs into a slot value.
    pub fn pack(self) -> u64 {
        match self {
            State::Never => 0,
            State::Deleted(v) => (u64::from(v) << 1) | 1,
            State::Put(v) => u64::from(v) << 1,
        }
    }

    /// Unpacks a slot value.
    pub fn unpack(x: u64) -> State {
        let v = (x >> 1) as u32;
        match (x, x & 1) {
            (0, _) => State::Never,
            (_, 1) => State::Deleted(v),
            _ => State::Put(v),
        }
    }

    /// The version of the write that made this state (0 for never).
    pub fn version(self) -> u32 {
        match self {
            State::Never => 0,
            State::Deleted(v) | State::Put(v) => v,
        }
    }
}

/// One key's recorded states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// The last acknowledged write.
    pub committed: State,
    /// A write begun and not acknowledged (its outcome unknown), if any.
    pub pending: Option<State>,
}

/// The expected-state file.
pub struct Expected {
    file: File,
    keys: u32,
    threads: u32,
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl Expected {
    /// Opens `path`, creating it for `keys` keys and `threads` writers if missing. An
    /// existing file must have been made with the same shape.
    pub fn open(path: &Path, keys: u32, threads: u32) -> io::Result<Expected> {
        if threads == 0 || threads > MAX_THREADS {
            return Err(bad(format!("threads must be 1..={MAX_THREADS}")));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let e = Expected {
            file,
            keys,
            threads,
        };
        if e.file.metadata()?.len() == 0 {
            let mut head = [0u8; 32];
            head[..16].copy_from_slice(MAGIC);
            head[16..20].copy_from_slice(&keys.to_le_bytes());
            head[20..24].copy_from_slice(&threads.to_le_bytes());
            e.file
                .set_len(e.groups_at() + GROUP_BYTES * u64::from(threads))?;
            e.file.write_all_at(&head, 0)?;
            return Ok(e);
        }
        let mut head = [0u8; 32];
        e.file.read_exact_at(&mut head, 0)?;
        let got_keys = u32::from_le_bytes([head[16], head[17], head[18], head[19]]);
        let got_threads = u32::from_le_bytes([head[20], head[21], head[22], head[23]]);
        if &head[..16] != MAGIC {
            return Err(bad(format!(
                "{} is not a stress state file",
                path.display()
            )));
        }
        if (got_keys, got_threads) != (keys, threads) {
            return Err(bad(format!(
                "{} was made for {got_keys} keys and {got_threads} threads, not {keys} and {threads}",
                path.display()
            )));
        }
        Ok(e)
    }

    fn groups_at(&self) -> u64 {
        SLOTS_AT + 16 * u64::from(self.keys)
    }

    /// Records that thread `t` is about to send one write that puts each (key, version) of
    /// `group` (at most [`MAX_GROUP`]).
    pub fn begin_group(&self, t: u32, group: &[(u32, u32)]) -> io::Result<()> {
        if group.len() > MAX_GROUP {
            return Err(bad(format!("a group has at most {MAX_GROUP} keys")));
        }
        let mut b = vec![0u8; 8 + 8 * group.len()];
        b[..4].copy_from_slice(&(group.len() as u32).to_le_bytes());
        for (n, (k, v)) in group.iter().enumerate() {
            b[8 + 8 * n..12 + 8 * n].copy_from_slice(&k.to_le_bytes());
            b[12 + 8 * n..16 + 8 * n].copy_from_slice(&v.to_le_bytes());
        }
        self.file
            .write_all_at(&b, self.groups_at() + GROUP_BYTES * u64::from(t))
    }

    /// Thread `t`'s group write is settled.
    pub fn end_group(&self, t: u32) -> io::Result<()> {
        self.file
            .write_all_at(&[0u8; 4], self.groups_at() + GROUP_BYTES * u64::from(t))
    }

    /// The group write each thread had in flight (empty: none).
    pub fn groups(&self) -> io::Result<Vec<Vec<(u32, u32)>>> {
        let mut raw = vec![0u8; (GROUP_BYTES * u64::from(self.threads)) as usize];
        self.file.read_exact_at(&mut raw, self.groups_at())?;
        let word = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap_or([0; 4]));
        Ok(raw
            .chunks_exact(GROUP_BYTES as usize)
            .map(|g| {
                let n = (word(&g[..4]) as usize).min(MAX_GROUP);
                (0..n)
                    .map(|i| {
                        (
                            word(&g[8 + 8 * i..12 + 8 * i]),
                            word(&g[12 + 8 * i..16 + 8 * i]),
                        )
                    })
                    .collect()
            })
            .collect())
    }

    /// Keys in the key space.
    pub fn keys(&self) -> u32 {
        self.keys
    }

    /// Writer threads; thread `t` owns the keys `i` with `i % threads == t`.
    pub fn threads(&self) -> u32 {
        self.threads
    }

    /// Every slot, in key order.
    pub fn load(&self) -> io::Result<Vec<Slot>> {
        let mut raw = vec![0u8; 16 * self.keys as usize];
        self.file.read_exact_at(&mut raw, SLOTS_AT)?;
        Ok(raw
            .chunks_exact(16)
            .map(|c| {
                let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
                let pending = word(&c[8..]);
                Slot {
                    committed: State::unpack(word(&c[..8])),
                    pending: (pending != 0).then(|| State::unpack(pending)),
                }
            })
            .collect())
    }

    /// Records that a write of `state` to key `i` is about to be made.
    pub fn begin(&self, i: u32, state: State) -> io::Result<()> {
        self.file.write_all_at(
            &state.pack().to_le_bytes(),
            SLOTS_AT + 16 * u64::from(i) + 8,
        )
    }

    /// Sets key `i`'s slot: `committed`, nothing pending.
    pub fn set(&self, i: u32, committed: State) -> io::Result<()> {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&committed.pack().to_le_bytes());
        self.file.write_all_at(&b, SLOTS_AT + 16 * u64::from(i))
    }

    /// Records `total` as thread `t`'s count of acknowledged writes over every run.
    pub fn count_acks(&self, t: u32, total: u64) -> io::Result<()> {
        self.file
            .write_all_at(&total.to_le_bytes(), ACKS_AT + 8 * u64::from(t))
    }

    /// Acknowledged writes per thread, over every run.
    pub fn acks(&self) -> io::Result<Vec<u64>> {
        let mut raw = vec![0u8; 8 * self.threads as usize];
        self.file.read_exact_at(&mut raw, ACKS_AT)?;
        Ok(raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_pack_and_survive_reopen() {
        for s in [
            State::Never,
            State::Deleted(3),
            State::Put(1),
            State::Put(u32::MAX >> 1),
        ] {
            assert_eq!(State::unpack(s.pack()), s);
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("expected");
        {
            let e = Expected::open(&p, 10, 2).unwrap();
            e.begin(3, State::Put(1)).unwrap();
            e.set(4, State::Deleted(2)).unwrap();
            e.count_acks(1, 5).unwrap();
        }
        let e = Expected::open(&p, 10, 2).unwrap();
        let s = e.load().unwrap();
        assert_eq!(s[3].pending, Some(State::Put(1)));
        assert_eq!(s[3].committed, State::Never);
        assert_eq!(s[4].committed, State::Deleted(2));
        assert_eq!(s[4].pending, None);
        assert_eq!(e.acks().unwrap(), vec![0, 5]);
        e.begin_group(1, &[(3, 1), (5, 9)]).unwrap();
        assert_eq!(e.groups().unwrap(), vec![vec![], vec![(3, 1), (5, 9)]]);
        e.end_group(1).unwrap();
        assert_eq!(e.groups().unwrap(), vec![vec![], vec![]]);
        assert!(Expected::open(&p, 11, 2).is_err());
    }
}
