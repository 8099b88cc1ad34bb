//! Top-level command names to their position in the declarations: an open-addressing hash
//! table computed at compile time, so that a lookup (on every request) is a hash of three bytes
//! and the length, and usually one case-insensitive comparison, without copying the name.

use super::CommandSpec;

/// Longest command name the index accepts (checked when it is built).
pub const MAX_NAME: usize = 24;

/// Slots of the table: a power of two, at least twice the number of commands.
const SLOTS: usize = 256;

/// Slot values are a position in the declarations plus one; 0 is an empty slot.
pub struct NameIndex {
    slots: [u8; SLOTS],
}

/// The slot of a name: its length and its first, middle and last bytes, each with the ASCII
/// case bit set, so `GET`, `get` and `GeT` land on the same slot. Declared names are lowercase;
/// a request's name need not be.
const fn slot_of(name: &[u8]) -> usize {
    let n = name.len();
    if n == 0 {
        return 0;
    }
    let (a, m, z) = (name[0] | 0x20, name[n / 2] | 0x20, name[n - 1] | 0x20);
    let h = (n as u32)
        .wrapping_mul(0x9e37_79b1)
        .wrapping_add((a as u32) << 16 | (m as u32) << 8 | z as u32)
        .wrapping_mul(0x85eb_ca6b);
    (h >> 24) as usize & (SLOTS - 1)
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
