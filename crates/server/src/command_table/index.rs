//! Top-level command names to their position in the declarations: an open-addressing hash
//! table computed at compile time, so that a lookup (on every request) is a case-folding hash
//! and usually one case-insensitive comparison, without copying the name.

use super::CommandSpec;

/// Longest command name the index accepts (checked when it is built).
pub const MAX_NAME: usize = 24;

/// Slots of the table: a power of two, at least twice the number of commands.
const SLOTS: usize = 512;

/// Slot values are a position in the declarations plus one; 0 is an empty slot.
pub struct NameIndex {
    slots: [u8; SLOTS],
}

/// The slot of a name: FNV-1a over its bytes with the ASCII case bit set, so `GET`, `get` and
/// `GeT` land on the same slot (declared names are lowercase; a request's need not be).
const fn slot_of(name: &[u8]) -> usize {
    let mut h: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < name.len() {
        h ^= (name[i] | 0x20) as u32;
        h = h.wrapping_mul(0x0100_0193);
        i += 1;
    }
    (h ^ (h >> 16)) as usize & (SLOTS - 1)
}

const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl NameIndex {
    /// Indexes `commands` by name. Fails the build on a name that is not lowercase, holds a
    /// `|`, is longer than [`MAX_NAME`], or is declared twice.
    pub const fn build(commands: &[CommandSpec]) -> NameIndex {
        assert!(commands.len() * 2 <= SLOTS && commands.len() < u8::MAX as usize);
        let mut slots = [0u8; SLOTS];
        let mut i = 0;
        while i < commands.len() {
            let name = commands[i].name.as_bytes();
            assert!(
                !name.is_empty() && name.len() <= MAX_NAME,
                "command name length"
            );
            let mut c = 0;
            while c < name.len() {
                assert!(
                    !name[c].is_ascii_uppercase() && name[c] != b'|',
                    "command names are lowercase, without '|'"
                );
                c += 1;
            }
            let mut s = slot_of(name);
            while slots[s] != 0 {
                let other = commands[slots[s] as usize - 1].name.as_bytes();
                assert!(!same(other, name), "command declared twice");
                s = (s + 1) & (SLOTS - 1);
            }
            slots[s] = i as u8 + 1;
            i += 1;
        }
        NameIndex { slots }
    }

    /// The position in `commands` (those the index was built from) of the command named
    /// `name`, in any case.
    pub fn find(&self, commands: &[CommandSpec], name: &[u8]) -> Option<usize> {
        if name.len() > MAX_NAME {
            return None;
        }
        let mut s = slot_of(name);
        loop {
            let i = usize::from(self.slots[s]).checked_sub(1)?;
            if commands.get(i)?.name.as_bytes().eq_ignore_ascii_case(name) {
                return Some(i);
            }
            s = (s + 1) & (SLOTS - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commands every request names (GET, SET...) are found at their first slot.
    #[test]
    fn hot_commands_need_one_probe() {
        let commands = crate::commands::COMMANDS;
        let index = NameIndex::build(commands);
        for name in [
            "get", "set", "mget", "mset", "del", "incr", "exists", "expire", "ping", "hello",
        ] {
            let i = index.find(commands, name.as_bytes()).expect("declared");
            let slot = slot_of(name.as_bytes());
            assert_eq!(
                usize::from(index.slots[slot]),
                i + 1,
                "{name} is not at its first slot"
            );
            assert_eq!(
                index.find(commands, name.to_uppercase().as_bytes()),
                Some(i)
            );
        }
    }
}
