//! Checking a database's contents against the expected state: pure, so it is unit-tested
//! on its own (a checker that cannot fail proves nothing).
//!
//! A key passes when it holds its last acknowledged state, or the state of the write that
//! was in flight when the process died (that write may or may not have made it). This is
//! checked in every durability mode: Rialto's contract is that a *process* crash loses
//! nothing acknowledged in any mode (only power loss may cost `everysec`/`no` their unsynced
//! tail), which is stronger than "a prefix of the acknowledged history".

use super::expected::{Slot, State};
use super::value::Bad;

/// What a key holds in the database.
#[derive(Debug, PartialEq, Eq)]
pub enum Observed {
    /// No value.
    Absent,
    /// A value of this version.
    Version(u32),
    /// A value this tool never wrote for the key.
    Bad(Bad),
}

/// A key whose contents no acknowledged or in-flight write explains.
#[derive(Debug, PartialEq, Eq)]
pub enum Violation {
    /// An acknowledged write is missing: the key holds an older state.
    Lost {
        key: u32,
        acknowledged: State,
        found: String,
    },
    /// The key holds something no write made.
    Phantom {
        key: u32,
        acknowledged: State,
        found: String,
    },
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Violation::Lost {
                key,
                acknowledged,
                found,
            } => write!(
                f,
                "lost: key {key} holds {found}, but {acknowledged:?} was acknowledged"
            ),
            Violation::Phantom {
                key,
                acknowledged,
                found,
            } => write!(
                f,
                "phantom: key {key} holds {found}, never written (acknowledged {acknowledged:?})"
            ),
        }
    }
}

fn matches(s: State, o: &Observed) -> bool {
    match (s, o) {
        (State::Never | State::Deleted(_), Observed::Absent) => true,
        (State::Put(v), Observed::Version(w)) => v == *w,
        _ => false,
    }
}

/// Checks key `key`: returns the state it is in (to record as committed from now on).
pub fn check(key: u32, slot: Slot, o: &Observed) -> Result<State, Violation> {
    if matches(slot.committed, o) {
        return Ok(slot.committed);
    }
    if let Some(p) = slot.pending.filter(|p| matches(*p, o)) {
        return Ok(p);
    }
    let acknowledged = slot.committed;
    match o {
        Observed::Bad(b) => Err(Violation::Phantom {
            key,
            acknowledged,
            found: b.to_string(),
        }),
        Observed::Version(v) if *v < acknowledged.version() => Err(Violation::Lost {
            key,
            acknowledged,
            found: format!("version {v}"),
        }),
        Observed::Version(v) => Err(Violation::Phantom {
            key,
            acknowledged,
            found: format!("version {v}"),
        }),
        Observed::Absent => Err(Violation::Lost {
            key,
            acknowledged,
            found: "no value".into(),
        }),
    }
}

/// The outcome of checking every key.
#[derive(Debug, Default)]
pub struct Report {
    /// Keys checked.
    pub keys: u64,
    /// Keys holding a value.
    pub present: u64,
    /// Keys whose in-flight write turned out to have landed.
    pub pending_landed: u64,
    /// Lost acknowledged writes.
    pub lost: u64,
    /// Values no write made.
    pub phantom: u64,
    /// Multi-key writes found applied to some of their keys and not to others.
    pub torn: u64,
    /// The first violations, described.
    pub first: Vec<String>,
}

impl Report {
    /// Records key `key`'s outcome; returns the state to commit (the old one on violation).
    pub fn add(&mut self, key: u32, slot: Slot, o: &Observed) -> State {
        self.keys += 1;
        if matches!(o, Observed::Version(_)) {
            self.present += 1;
        }
        match check(key, slot, o) {
            Ok(s) => {
                if s != slot.committed {
                    self.pending_landed += 1;
                }
                s
            }
            Err(v) => {
                match v {
                    Violation::Lost { .. } => self.lost += 1,
                    Violation::Phantom { .. } => self.phantom += 1,
                }
                if self.first.len() < 10 {
                    self.first.push(v.to_string());
                }
                slot.committed
            }
        }
    }

    /// Checks a multi-key write that was in flight: each (key, version) it put, and the state
    /// each key was found in; all of them or none must hold the write's version.
    pub fn add_group(&mut self, group: &[(u32, u32)], found: &[State]) {
        let landed: Vec<bool> = group
            .iter()
            .zip(found)
            .map(|(&(_, v), s)| *s == State::Put(v))
            .collect();
        if landed.iter().all(|&l| l) || !landed.iter().any(|&l| l) {
            return;
        }
        self.torn += 1;
        if self.first.len() < 10 {
            self.first.push(format!(
                "torn: one multi-key write applied to some keys only: {:?} found as {found:?}",
                group
            ));
        }
    }

    /// Whether nothing was lost, made up or half applied.
    pub fn clean(&self) -> bool {
        self.lost == 0 && self.phantom == 0 && self.torn == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(c: State, p: Option<State>) -> Slot {
        Slot {
            committed: c,
            pending: p,
        }
    }

    #[test]
    fn acknowledged_or_in_flight_states_pass() {
        let s = slot(State::Put(3), Some(State::Deleted(4)));
        assert_eq!(check(1, s, &Observed::Version(3)), Ok(State::Put(3)));
        assert_eq!(check(1, s, &Observed::Absent), Ok(State::Deleted(4)));
        let s = slot(State::Never, None);
        assert_eq!(check(1, s, &Observed::Absent), Ok(State::Never));
        let s = slot(State::Deleted(2), Some(State::Put(3)));
        assert_eq!(check(1, s, &Observed::Version(3)), Ok(State::Put(3)));
    }

    #[test]
    fn lost_and_phantom_writes_are_caught() {
        let s = slot(State::Put(5), None);
        assert!(matches!(
            check(1, s, &Observed::Version(4)),
            Err(Violation::Lost { .. })
        ));
        assert!(matches!(
            check(1, s, &Observed::Absent),
            Err(Violation::Lost { .. })
        ));
        assert!(matches!(
            check(1, s, &Observed::Version(6)),
            Err(Violation::Phantom { .. })
        ));
        assert!(matches!(
            check(1, s, &Observed::Bad(Bad::Checksum)),
            Err(Violation::Phantom { .. })
        ));
        // A delete that was acknowledged must not be undone.
        let s = slot(State::Deleted(7), None);
        assert!(matches!(
            check(1, s, &Observed::Version(6)),
            Err(Violation::Lost { .. })
        ));
        let mut r = Report::default();
        r.add(1, s, &Observed::Version(6));
        r.add(2, slot(State::Never, None), &Observed::Version(1));
        assert_eq!((r.lost, r.phantom, r.clean()), (1, 1, false));
        assert_eq!(r.first.len(), 2);
    }

    #[test]
    fn a_multi_key_write_applied_to_some_keys_only_is_caught() {
        let mut r = Report::default();
        let g = [(1, 4), (2, 7)];
        r.add_group(&g, &[State::Put(4), State::Put(7)]);
        r.add_group(&g, &[State::Put(3), State::Deleted(6)]);
        assert!(r.clean());
        r.add_group(&g, &[State::Put(4), State::Deleted(6)]);
        assert_eq!(r.torn, 1);
        assert!(!r.clean());
    }
}
