//! The writers and the verifier, over any [`Target`]: the embedded engine (through the
//! merger, as the server commits) or a `rialto serve` over RESP.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rialto_killpoint::splitmix64;

use super::expected::{Expected, Slot, State};
use super::value;
use super::verify::{Observed, Report};

/// Where the writes go.
pub trait Target: Send {
    /// Stores `value` under `key`; `Ok` only once acknowledged.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), String>;
    /// Deletes `key`; `Ok` only once acknowledged.
    fn delete(&mut self, key: &[u8]) -> Result<(), String>;
    /// Stores every pair as one atomic write (a transaction); `Ok` only once acknowledged.
    fn put_group(&mut self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<(), String>;
    /// Reads each of `keys`.
    fn get_many(&mut self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>, String>;
}

/// Why a writer stopped before it was told to.
#[derive(Debug)]
pub enum Stop {
    /// The target failed a request (killed server, read-only engine): the write in flight
    /// stays pending in the expected state.
    Target(String),
    /// The expected-state file failed.
    Io(io::Error),
    /// A read during the run returned what no acknowledged write explains.
    Violation(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Target(e) => write!(f, "target failed: {e}"),
            Stop::Io(e) => write!(f, "expected-state file: {e}"),
            Stop::Violation(v) => write!(f, "{v}"),
        }
    }
}

/// One writer thread's part.
pub struct Writer {
    /// Thread index; it owns the keys `i % threads == thread`.
    pub thread: u32,
    /// Seed of its choices.
    pub seed: u64,
    /// Largest value written.
    pub max_value: usize,
    /// Acknowledged writes before this run (the thread's running total).
    pub acks: u64,
    /// Set to stop.
    pub stop: Arc<AtomicBool>,
}

impl Writer {
    /// Writes (60% puts, 10% atomic puts of 2 to 4 keys, 15% deletes) and checks reads (15%)
    /// of the thread's own keys until stopped or the target fails. `slots` are the verified
    /// states of every key.
    pub fn run(
        mut self,
        target: &mut dyn Target,
        expected: &Expected,
        slots: &[Slot],
    ) -> Result<u64, Stop> {
        let threads = expected.threads();
        let mine: Vec<u32> = (self.thread..expected.keys())
            .step_by(threads as usize)
            .collect();
        if mine.is_empty() {
            return Ok(self.acks);
        }
        let mut state: Vec<State> = mine.iter().map(|&i| slots[i as usize].committed).collect();
        let mut rng = self.seed;
        while !self.stop.load(Ordering::Relaxed) {
            let r = splitmix64(&mut rng);
            let j = (r >> 8) as usize % mine.len();
            let i = mine[j];
            let k = value::key(i);
            let version = state[j].version() + 1;
            match r % 100 {
                60..=69 if mine.len() >= 2 => {
                    self.put_group(target, expected, &mine, &mut state, r)?;
                    continue;
                }
                0..=69 => {
                    let new = State::Put(version);
                    expected.begin(i, new).map_err(Stop::Io)?;
                    target
                        .put(&k, &value::encode(i, version, self.max_value))
                        .map_err(Stop::Target)?;
                    state[j] = new;
                }
                70..=84 => {
                    let new = State::Deleted(version);
                    expected.begin(i, new).map_err(Stop::Io)?;
                    target.delete(&k).map_err(Stop::Target)?;
                    state[j] = new;
                }
                _ => {
                    let got = target
                        .get_many(std::slice::from_ref(&k))
                        .map_err(Stop::Target)?;
                    let o = observe(i, got.into_iter().next().flatten());
                    let slot = Slot {
                        committed: state[j],
                        pending: None,
                    };
                    let mut rep = Report::default();
                    rep.add(i, slot, &o);
                    if let Some(v) = rep.first.pop() {
                        return Err(Stop::Violation(format!("read during the run: {v}")));
                    }
                    continue;
                }
            }
            expected.set(i, state[j]).map_err(Stop::Io)?;
            self.acks += 1;
            expected
                .count_acks(self.thread, self.acks)
                .map_err(Stop::Io)?;
        }
        Ok(self.acks)
    }
}

impl Writer {
    /// One atomic write of 2 to 4 of the thread's keys (distinct), recorded as a group.
    fn put_group(
        &mut self,
        target: &mut dyn Target,
        expected: &Expected,
        mine: &[u32],
        state: &mut [State],
        r: u64,
    ) -> Result<(), Stop> {
        let want = 2 + (r >> 40) as usize % 3;
        let mut js: Vec<usize> = Vec::with_capacity(want);
        let mut pick = r;
        while js.len() < want.min(mine.len()) {
            let j = (splitmix64(&mut pick) >> 8) as usize % mine.len();
            if !js.contains(&j) {
                js.push(j);
            }
        }
        let group: Vec<(u32, u32)> = js
            .iter()
            .map(|&j| (mine[j], state[j].version() + 1))
            .collect();
        for &(i, v) in &group {
            expected.begin(i, State::Put(v)).map_err(Stop::Io)?;
        }
        expected
            .begin_group(self.thread, &group)
            .map_err(Stop::Io)?;
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = group
            .iter()
            .map(|&(i, v)| (value::key(i), value::encode(i, v, self.max_value)))
            .collect();
        target.put_group(&pairs).map_err(Stop::Target)?;
        for (&j, &(i, v)) in js.iter().zip(&group) {
            state[j] = State::Put(v);
            expected.set(i, state[j]).map_err(Stop::Io)?;
        }
        expected.end_group(self.thread).map_err(Stop::Io)?;
        self.acks += group.len() as u64;
        expected
            .count_acks(self.thread, self.acks)
            .map_err(Stop::Io)
    }
}

/// What a read of key `i` shows.
pub fn observe(i: u32, v: Option<Vec<u8>>) -> Observed {
    match v {
        None => Observed::Absent,
        Some(v) => match value::decode(i, &v) {
            Ok(ver) => Observed::Version(ver),
            Err(b) => Observed::Bad(b),
        },
    }
}

/// Reads every key and checks it against `expected`. When clean, records what was found
/// as the committed state (settling the writes that were in flight) and returns the slots.
pub fn verify(target: &mut dyn Target, expected: &Expected) -> Result<(Report, Vec<Slot>), Stop> {
    let mut slots = expected.load().map_err(Stop::Io)?;
    let mut report = Report::default();
    let mut resolved = Vec::with_capacity(slots.len());
    for chunk in (0..expected.keys()).collect::<Vec<_>>().chunks(512) {
        let keys: Vec<Vec<u8>> = chunk.iter().map(|&i| value::key(i)).collect();
        let got = target.get_many(&keys).map_err(Stop::Target)?;
        for (&i, v) in chunk.iter().zip(got) {
            resolved.push(report.add(i, slots[i as usize], &observe(i, v)));
        }
    }
    for group in expected.groups().map_err(Stop::Io)? {
        let found: Vec<State> = group
            .iter()
            .map(|&(i, _)| resolved.get(i as usize).copied().unwrap_or(State::Never))
            .collect();
        report.add_group(&group, &found);
    }
    if report.clean() {
        for t in 0..expected.threads() {
            expected.end_group(t).map_err(Stop::Io)?;
        }
        for (i, (slot, now)) in slots.iter_mut().zip(resolved).enumerate() {
            if slot.committed != now || slot.pending.is_some() {
                expected.set(i as u32, now).map_err(Stop::Io)?;
                *slot = Slot {
                    committed: now,
                    pending: None,
                };
            }
        }
    }
    Ok((report, slots))
}
