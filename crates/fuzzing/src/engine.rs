//! `engine_ops`: sequences of operations on `rialto_lsm::Db` over `MemFs`, checked against a
//! `BTreeMap` model.
//!
//! Input layout: one options byte (bits 0-1 write buffer of 4 to 16 KiB, bits 2-3 restart
//! interval, bit 4 bloom filters, bit 5 LZ4, bit 6 three levels instead of seven, bit 7 WAL
//! preallocation), then operations until the input ends (at most [`MAX_OPS`]): an opcode
//! byte and its arguments (see [`Harness::step`]).
//!
//! Keys come from a space of 256 (one byte each: short binary keys, keys extending other
//! keys, and keys behind a long shared prefix, so prefix compression and bounds meet edge
//! cases); every write stores a value unique to it (the operation's index), so a stale or
//! misplaced value is always detected. Small write buffers, blocks and files make flushes,
//! compactions and multi-level trees happen within a few dozen writes.
//!
//! Checked after every read: `get`, `get_at` a snapshot, forward and reverse scans with
//! bounds and snapshots, and seeks followed by `next`/`prev` return exactly what the model
//! says. No operation may fail (no faults are injected). A clean reopen keeps everything; a
//! crash (`MemFs::crash(CrashMode::DropUnsynced)`) keeps a state between the last durable one
//! (after a sync write, `sync_wal`, `flush` or `compact_range`) and the latest, at a batch
//! boundary. The full contents are compared at the end.

use std::collections::BTreeMap;
use std::sync::Arc;

use rialto_engine::{EngineIterator, IterOptions, KvEngine, WriteBatch, WriteOptions};
use rialto_io::{CrashMode, MemFs};
use rialto_lsm::triad::TriadOptions;
use rialto_lsm::{BlockCache, Compression, Db, DbIter, Options, Snapshot, ThrottleOptions};

use crate::input::Input;

/// Most operations run per input: bounds the time of one execution.
pub const MAX_OPS: usize = 128;
/// Most snapshots held at once.
const MAX_SNAPSHOTS: usize = 4;
const DIR: &str = "/db";

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// One write of a batch: a put (`Some` value) or a delete.
type Write = (Vec<u8>, Option<Vec<u8>>);

/// The fuzz target. See the [module docs](self).
pub fn engine_ops(data: &[u8]) {
    let mut input = Input::new(data);
    let mut h = Harness::new(input.u8());
    let mut ops = 0;
    while !input.is_empty() && ops < MAX_OPS {
        h.step(&mut input, ops);
        ops += 1;
    }
    h.check_contents(&h.model, None, "final contents");
}

fn options(fs: &MemFs, cfg: u8) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 4096 << (cfg & 3).min(2),
        block_size: 256,
        block_restart_interval: [1, 2, 4, 16][usize::from((cfg >> 2) & 3)],
        bloom_bits_per_key: if cfg & 0x10 != 0 { 10 } else { 0 },
        compression: if cfg & 0x20 != 0 {
            Compression::Lz4
        } else {
            Compression::None
        },
        num_levels: if cfg & 0x40 != 0 { 3 } else { 7 },
        wal_preallocate: cfg & 0x80 != 0,
        // A private, small cache: evictions happen, and no state leaks between executions.
        block_cache: Some(BlockCache::new(64 << 10)),
        // The smallest allowed: tables are closed and reopened by the table cache.
        max_open_files: 16,
        level0_compaction_trigger: 2,
        // High enough that writers are never delayed by a sleep.
        level0_slowdown_trigger: 64,
        level0_stop_trigger: 64,
        target_file_size: 8 << 10,
        max_bytes_for_level_base: 16 << 10,
        level_size_multiplier: 4,
        // Inline: flushes and compactions run on the harness's thread, so an execution is
        // deterministic (what libFuzzer's coverage feedback needs) and spawns no threads.
        // Background threads are exercised by the crash tests and `rialto stress`.
        max_background_jobs: 0,
        // No pacing: it only slows the run down.
        throttle: ThrottleOptions {
            enabled: false,
            ..ThrottleOptions::default()
        },
        io_timeline_capacity: 0,
        // Every TRIAD technique on from the first write (the characterizer's 10,000-operation
        // windows never fill in an execution): hot keys re-logged at flushes, L0 compaction
        // deferred up to 6 files.
        triad: TriadOptions {
            adaptive: false,
            hot_fraction: 0.3,
            max_deferred_l0_files: 6,
            ..TriadOptions::default()
        },
        ..Options::default()
    }
}

/// A key of the 256-key space: `k`, a binary byte, optionally a trailing NUL (a key
/// extending another), optionally behind a long shared prefix.
fn key(b: u8) -> Vec<u8> {
    let mut k = Vec::with_capacity(24);
    if b & 0x80 != 0 {
        k.extend_from_slice(b"a-long-shared-prefix/");
    }
    k.push(b'k');
    k.push(b & 0x3f);
    if b & 0x40 != 0 {
        k.push(0);
    }
    k
}

/// A value unique to operation `op`, of a length chosen by `b`: up to 63 bytes, 126, 252 or
/// 504 (eight of which fill the smallest memtable).
fn value(op: usize, b: u8) -> Vec<u8> {
    let len = usize::from(b & 0x3f) << (b >> 6);
    let mut v = format!("{op}:").into_bytes();
    v.resize(v.len().max(len), b'v');
    v
}

/// Optional iteration bounds: `None` or a key of the space, each chosen by a byte.
fn bound(b: u8, k: u8) -> Option<Vec<u8>> {
    (b & 1 == 1).then(|| key(k))
}

fn apply(map: &mut Map, writes: &[Write]) {
    for (k, v) in writes {
        match v {
            Some(v) => map.insert(k.clone(), v.clone()),
            None => map.remove(k),
        };
    }
}

struct Harness {
    fs: MemFs,
    cfg: u8,
    /// `None` only transiently, while reopening.
    db: Option<Db>,
    /// What the database holds.
    model: Map,
    /// What it holds for sure after a crash: the state at the last durable point.
    durable: Map,
    /// Batches written since `durable`, not yet known durable, in order.
    pending: Vec<Vec<Write>>,
    /// Live snapshots and what they see.
    snapshots: Vec<(Snapshot, Map)>,
}

impl Harness {
    fn new(cfg: u8) -> Self {
        let fs = MemFs::new();
        let db = Db::open(DIR, options(&fs, cfg)).expect("creating a database in MemFs");
        Harness {
            fs,
            cfg,
            db: Some(db),
            model: Map::new(),
            durable: Map::new(),
            pending: Vec::new(),
            snapshots: Vec::new(),
        }
    }

    fn db(&self) -> &Db {
        self.db
            .as_ref()
            .expect("the database is open between operations")
    }

    /// Runs operation number `op`, read from `input`:
    ///
    /// | opcode % 16 | operation | arguments |
    /// | --- | --- | --- |
    /// | 0-2 | put | key, value length (bit 7 of the opcode: sync) |
    /// | 3 | delete | key (bit 7: sync) |
    /// | 4 | batch of 1-8 puts and deletes | count, then per write: key, value length (0: delete) |
    /// | 5 | get, at a snapshot if one is chosen | key, snapshot choice |
    /// | 6, 7 | forward, reverse scan | bounds (flags, lower key, upper key), snapshot choice |
    /// | 8 | seek or seek_for_prev, then up to 8 moves | bounds, target key, moves |
    /// | 9 | take a snapshot | |
    /// | 10 | release a snapshot | which |
    /// | 11 | flush | |
    /// | 12 | compact_range | bounds |
    /// | 13 | close and reopen | |
    /// | 14 | crash (drop unsynced data) and reopen | |
    /// | 15 | sync the WAL | |
    fn step(&mut self, input: &mut Input, op: usize) {
        let opcode = input.u8();
        let sync = WriteOptions {
            sync: opcode & 0x80 != 0,
        };
        match opcode % 16 {
            0..=2 => {
                let k = key(input.u8());
                let v = value(op, input.u8());
                self.db().put(&k, &v, sync).expect("put");
                self.wrote(vec![(k, Some(v))], sync.sync);
            }
            3 => {
                let k = key(input.u8());
                self.db().delete(&k, sync).expect("delete");
                self.wrote(vec![(k, None)], sync.sync);
            }
            4 => {
                let n = 1 + usize::from(input.u8() % 8);
                let mut batch = WriteBatch::new();
                let mut writes = Vec::with_capacity(n);
                for j in 0..n {
                    let k = key(input.u8());
                    let len = input.u8();
                    if len == 0 {
                        batch.delete(&k);
                        writes.push((k, None));
                    } else {
                        // Unique within the batch too: a key written twice shows which won.
                        let v = value(op * 8 + j, len);
                        batch.put(&k, &v);
                        writes.push((k, Some(v)));
                    }
                }
                self.db().write(batch, sync).expect("write batch");
                self.wrote(writes, sync.sync);
            }
            5 => {
                let k = key(input.u8());
                let (got, want) = match self.snapshot(input.u8()) {
                    Some((s, m)) => (self.db().get_at(s, &k), m.get(&k)),
                    None => (self.db().get(&k), self.model.get(&k)),
                };
                let got = got.expect("get");
                assert_eq!(got.as_deref(), want.map(|v| &v[..]), "get {k:?}");
            }
            6 | 7 => {
                let (lower, upper) = self.bounds(input);
                let snap = input.u8();
                let forward = opcode % 16 == 6;
                let (s, m) = match self.snapshot(snap) {
                    Some((s, m)) => (Some(s.clone()), m),
                    None => (None, &self.model),
                };
                self.scan(m, lower, upper, s, forward);
            }
            8 => self.navigate(input),
            9 => {
                if self.snapshots.len() == MAX_SNAPSHOTS {
                    self.snapshots.remove(0);
                }
                let s = self.db().snapshot();
                self.snapshots.push((s, self.model.clone()));
            }
            10 => {
                let i = usize::from(input.u8());
                if !self.snapshots.is_empty() {
                    self.snapshots.remove(i % self.snapshots.len());
                }
            }
            11 => {
                self.db().flush().expect("flush");
                self.made_durable();
            }
            12 => {
                let (lower, upper) = self.bounds(input);
                self.db()
                    .compact_range(lower.as_deref(), upper.as_deref())
                    .expect("compact_range");
                self.made_durable();
            }
            13 => {
                self.snapshots.clear();
                let db = self.db.take().expect("the database is open");
                db.close().expect("close");
                self.made_durable();
                self.reopen();
                self.check_contents(&self.model, None, "after a clean reopen");
            }
            14 => self.crash(),
            _ => {
                self.db().sync_wal().expect("sync_wal");
                self.made_durable();
            }
        }
    }

    fn wrote(&mut self, writes: Vec<Write>, sync: bool) {
        apply(&mut self.model, &writes);
        if sync {
            // A synced write makes every earlier write durable too: the log is sequential.
            self.made_durable();
        } else {
            self.pending.push(writes);
        }
    }

    fn made_durable(&mut self) {
        self.durable.clone_from(&self.model);
        self.pending.clear();
    }

    /// The snapshot chosen by `b` (its low bit says whether to use one at all).
    fn snapshot(&self, b: u8) -> Option<&(Snapshot, Map)> {
        if b & 1 == 0 || self.snapshots.is_empty() {
            return None;
        }
        self.snapshots
            .get(usize::from(b >> 1) % self.snapshots.len())
    }

    fn bounds(&self, input: &mut Input) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let flags = input.u8();
        let lower = bound(flags, input.u8());
        let upper = bound(flags >> 1, input.u8());
        (lower, upper)
    }

    fn reopen(&mut self) {
        let db = Db::open(DIR, options(&self.fs, self.cfg)).expect("reopen");
        self.db = Some(db);
    }

    /// Power loss: unsynced bytes and directory entries vanish. The database is dropped after
    /// the crash (the crash already cut its handles off), then reopened; its contents must be one of the states between the last
    /// durable one and the latest.
    fn crash(&mut self) {
        self.snapshots.clear();
        self.fs.crash(CrashMode::DropUnsynced);
        drop(self.db.take());
        // Whatever the dying process did after the power loss is not on the disk either.
        self.fs.crash(CrashMode::DropUnsynced);
        self.reopen();
        let got = self.contents(None, None, None);
        let mut candidate = self.durable.clone();
        let mut matched = got == candidate;
        for writes in &self.pending {
            if matched {
                break;
            }
            apply(&mut candidate, writes);
            matched = got == candidate;
        }
        assert!(
            matched,
            "after a crash the database holds {} keys, which is no state between the last \
             durable one ({} keys) and the latest ({} keys, {} batches later)",
            got.len(),
            self.durable.len(),
            self.model.len(),
            self.pending.len()
        );
        self.model = got;
        self.made_durable();
    }

    /// An iterator within bounds, as of `snapshot` (the latest state if `None`).
    fn iter(
        &self,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        snapshot: Option<Snapshot>,
    ) -> DbIter {
        self.db()
            .iter(IterOptions {
                lower,
                upper,
                snapshot,
            })
            .expect("iter")
    }

    /// Everything within bounds, scanned forward, as of `snapshot`.
    fn contents(
        &self,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        snapshot: Option<Snapshot>,
    ) -> Map {
        let mut it = self.iter(lower, upper, snapshot);
        it.seek_to_first();
        let mut out = Map::new();
        while it.valid() {
            let prev = out.insert(it.key().to_vec(), it.value().to_vec());
            assert!(prev.is_none(), "a scan returned {:?} twice", it.key());
            it.next();
        }
        it.status().expect("scan");
        out
    }

    fn check_contents(&self, want: &Map, snapshot: Option<Snapshot>, what: &str) {
        let got = self.contents(None, None, snapshot);
        assert!(
            got == *want,
            "{what}: {} keys, model {} keys",
            got.len(),
            want.len()
        );
    }

    /// Scans within bounds and compares with the model's view, in either direction.
    fn scan(
        &self,
        model: &Map,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        snapshot: Option<Snapshot>,
        forward: bool,
    ) {
        let want = view(model, lower.as_deref(), upper.as_deref());
        let mut it = self.iter(lower, upper, snapshot);
        let mut got: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(want.len());
        if forward {
            it.seek_to_first();
        } else {
            it.seek_to_last();
        }
        while it.valid() {
            assert!(
                got.len() < want.len(),
                "scan returned more than the model holds"
            );
            got.push((it.key().to_vec(), it.value().to_vec()));
            if forward {
                it.next();
            } else {
                it.prev();
            }
        }
        it.status().expect("scan");
        if !forward {
            got.reverse();
        }
        let same = got.len() == want.len()
            && got
                .iter()
                .zip(&want)
                .all(|(g, (k, v))| g.0 == **k && g.1 == **v);
        assert!(
            same,
            "{} scan differs from the model",
            if forward { "forward" } else { "reverse" }
        );
    }

    /// A seek (or seek_for_prev) then up to 8 moves, each position compared with the model.
    fn navigate(&mut self, input: &mut Input) {
        let (lower, upper) = self.bounds(input);
        let target = key(input.u8());
        let moves = input.u8();
        let want = view(&self.model, lower.as_deref(), upper.as_deref());
        let mut it = self.iter(lower, upper, None);
        let mut pos = if moves & 1 == 0 {
            it.seek(&target);
            want.iter()
                .position(|(k, _)| k.as_slice() >= target.as_slice())
        } else {
            it.seek_for_prev(&target);
            want.iter()
                .rposition(|(k, _)| k.as_slice() <= target.as_slice())
        };
        for step in 0..8 {
            let got = it.valid().then(|| (it.key().to_vec(), it.value().to_vec()));
            let expected = pos.map(|i| (want[i].0.clone(), want[i].1.clone()));
            assert_eq!(got, expected, "position after {step} moves");
            let Some(i) = pos else { break };
            if moves >> (step % 7 + 1) & 1 == 0 {
                it.next();
                pos = (i + 1 < want.len()).then_some(i + 1);
            } else {
                it.prev();
                pos = i.checked_sub(1);
            }
        }
        it.status().expect("navigation");
    }
}

/// The model's entries within `[lower, upper)`.
fn view<'a>(
    model: &'a Map,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
) -> Vec<(&'a Vec<u8>, &'a Vec<u8>)> {
    model
        .iter()
        .filter(|(k, _)| {
            lower.is_none_or(|l| k.as_slice() >= l) && upper.is_none_or(|u| k.as_slice() < u)
        })
        .collect()
}
