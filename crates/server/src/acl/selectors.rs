//! Selectors: sets of command, key and channel permissions. A user has a root selector (the
//! rules written at top level) and any `(...)` ones; a command runs if one of them allows it
//! with all its keys.

use std::collections::BTreeMap;

use super::catalog::Catalog;
use super::rules::{key_pattern, RuleError, SelectorRule};
use crate::glob::GlobPattern;

/// The permissions a key argument needs: `read` for commands that read the value (Redis's
/// ACCESS key flag), `write` for ones that insert, update or delete. A key needing neither
/// (EXISTS, TYPE, STRLEN) is allowed by any key pattern that matches it, `%R~` or `%W~`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct KeyAccess {
    /// Needs a pattern with read permission.
    pub read: bool,
    /// Needs a pattern with write permission.
    pub write: bool,
}

impl KeyAccess {
    /// What a key with these key-spec flags needs: read for `access`, write for `update`,
    /// `insert` or `delete`.
    pub fn of(flags: &[&str]) -> KeyAccess {
        KeyAccess {
            read: flags.contains(&"access"),
            write: flags
                .iter()
                .any(|f| matches!(*f, "update" | "insert" | "delete")),
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct KeyPattern {
    pub pattern: Vec<u8>,
    glob: GlobPattern,
    pub read: bool,
    pub write: bool,
}

/// One set of command, key and channel permissions.
#[derive(Clone, Debug)]
pub(super) struct Selector {
    pub allowed: Vec<u64>,
    /// Set by `+@all`: commands added later are allowed too (printed as `+@all`).
    pub future: bool,
    /// `+cmd|arg` for commands without subcommands: allowed first arguments (any case).
    pub first_args: BTreeMap<usize, Vec<Vec<u8>>>,
    pub all_keys: bool,
    pub keys: Vec<KeyPattern>,
    pub all_channels: bool,
    pub channels: Vec<Vec<u8>>,
}

/// Counted refusals: commands rank below keys, later keys above earlier ones.
pub(super) type Refusal = (u8, usize);

impl Selector {
    pub fn new(cat: &Catalog) -> Selector {
        Selector {
            allowed: vec![0; cat.words()],
            future: false,
            first_args: BTreeMap::new(),
            all_keys: false,
            keys: Vec::new(),
            all_channels: false,
            channels: Vec::new(),
        }
    }

    pub fn bit(&self, i: usize) -> bool {
        self.allowed
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    fn set_bit(&mut self, i: usize, on: bool) {
        if let Some(w) = self.allowed.get_mut(i / 64) {
            if on {
                *w |= 1u64 << (i % 64);
            } else {
                *w &= !(1u64 << (i % 64));
            }
        }
    }

    /// Allows or denies a command with all its subcommands, dropping its first-arg rules.
    pub fn change_perm(&mut self, cat: &Catalog, cmd: usize, allow: bool) {
        self.set_bit(cmd, allow);
        self.first_args.remove(&cmd);
        for &s in &cat.cmds[cmd].subs {
            self.set_bit(s, allow);
        }
    }

    pub fn set_category(&mut self, cat: &Catalog, c: usize, allow: bool) {
        for &m in &cat.cat_members[c] {
            self.change_perm(cat, m, allow);
        }
    }

    pub fn set_all(&mut self, cat: &Catalog, allow: bool) {
        let fill = if allow { u64::MAX } else { 0 };
        self.allowed = vec![fill; cat.words()];
        self.future = allow;
        self.first_args.clear();
    }

    /// Applies one selector rule (Redis's `ACLSetSelector`).
    pub fn apply(&mut self, cat: &Catalog, rule: SelectorRule<'_>) -> Result<(), RuleError> {
        match rule {
            SelectorRule::AllKeys => {
                self.all_keys = true;
                self.keys.clear();
            }
            SelectorRule::ResetKeys => {
                self.all_keys = false;
                self.keys.clear();
            }
            SelectorRule::AllChannels => {
                self.all_channels = true;
                self.channels.clear();
            }
            SelectorRule::ResetChannels => {
                self.all_channels = false;
                self.channels.clear();
            }
            SelectorRule::AllCommands => self.set_all(cat, true),
            SelectorRule::NoCommands => self.set_all(cat, false),
            SelectorRule::Keys(op) => self.add_key_pattern(op)?,
            SelectorRule::Channel(ch) => {
                if self.all_channels {
                    return Err(RuleError::ChannelAfterAllChannels);
                }
                if !self.channels.iter().any(|c| c == ch) {
                    self.channels.push(ch.to_vec());
                }
            }
            SelectorRule::Allow(name) => self.allow_command(cat, name)?,
            SelectorRule::Deny(name) => {
                let cmd = cat.lookup(name).ok_or(RuleError::UnknownName)?;
                self.change_perm(cat, cmd, false);
            }
            SelectorRule::Category { name, allow } => {
                let c = cat.category(name).ok_or(RuleError::UnknownName)?;
                self.set_category(cat, c, allow);
            }
        }
        Ok(())
    }

    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeyAfterAllKeys);
        }
        let (read, write, pattern) = key_pattern(op)?;
        if let Some(k) = self.keys.iter_mut().find(|k| k.pattern == pattern) {
            k.read |= read;
            k.write |= write;
        } else {
            self.keys.push(KeyPattern {
                pattern: pattern.to_vec(),
                glob: GlobPattern::new(pattern, false),
                read,
                write,
            });
        }
        Ok(())
    }

    fn allow_command(&mut self, cat: &Catalog, name: &[u8]) -> Result<(), RuleError> {
        let Some(bar) = name.iter().rposition(|&b| b == b'|') else {
            let cmd = cat.lookup(name).ok_or(RuleError::UnknownName)?;
            self.change_perm(cat, cmd, true);
            return Ok(());
        };
        let (base, sub) = (&name[..bar], &name[bar + 1..]);
        let cmd = cat.lookup(base).ok_or(RuleError::UnknownName)?;
        if cat.cmds[cmd].parent.is_some() {
            return Err(RuleError::SubcommandFirstArg);
        }
        if sub.is_empty() {
            return Err(RuleError::Syntax);
        }
        if !cat.cmds[cmd].subs.is_empty() {
            let full = cat.lookup(name).ok_or(RuleError::UnknownName)?;
            self.change_perm(cat, full, true);
        } else {
            // A first argument of a plain command (`+select|0`), deprecated in Redis but kept.
            let list = self.first_args.entry(cmd).or_default();
            if !list.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                list.push(sub.to_vec());
            }
        }
        Ok(())
    }

    fn key_allowed(&self, key: &[u8], access: KeyAccess) -> bool {
        self.keys
            .iter()
            .any(|p| (p.read || !access.read) && (p.write || !access.write) && p.glob.matches(key))
    }

    /// Redis's `ACLCheckChannelAgainstList`: a channel matches the patterns as a glob; a
    /// pattern (PSUBSCRIBE's) only equal to one of them, literally.
    pub(super) fn channel_allowed(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.all_channels
            || self.channels.iter().any(|p| {
                if is_pattern {
                    p[..] == *channel
                } else {
                    crate::glob::glob_match(p, channel, false)
                }
            })
    }

    /// Whether the selector may read any key: `allkeys`, or a `*` pattern with read access
    /// (Redis's `ACLSelectorHasUnrestrictedKeyAccess` for reads).
    pub fn reads_every_key(&self) -> bool {
        self.all_keys || self.keys.iter().any(|p| p.read && p.pattern == b"*")
    }

    /// Redis's `ACLSelectorCheckCmd`: `keys` holds (position, key, access), `channels`
    /// (position, channel, is a pattern).
    pub fn check(
        &self,
        cat: &Catalog,
        cmd: Option<usize>,
        first_arg: Option<&[u8]>,
        keys: &[(usize, &[u8], KeyAccess)],
        channels: &[(usize, &[u8], bool)],
    ) -> Result<(), Refusal> {
        let allowed = match cmd {
            Some(i) => {
                cat.no_auth(i)
                    || self.bit(i)
                    || first_arg.is_some_and(|a| {
                        self.first_args
                            .get(&i)
                            .is_some_and(|l| l.iter().any(|x| x.eq_ignore_ascii_case(a)))
                    })
            }
            None => self.future,
        };
        if !allowed {
            return Err((1, 0));
        }
        if !self.all_keys {
            for &(pos, key, access) in keys {
                if !self.key_allowed(key, access) {
                    return Err((2, pos));
                }
            }
        }
        for &(pos, channel, is_pattern) in channels {
            if !self.channel_allowed(channel, is_pattern) {
                return Err((4, pos));
            }
        }
        Ok(())
    }

    /// The command rules as Redis 7.0 prints them: `+@all` or `-@all`, the categories that
    /// best fit (greedily, fewest differences first), then single commands and first args.
    pub fn describe_commands(&self, cat: &Catalog) -> Vec<u8> {
        let mut out: Vec<u8> = Vec::new();
        let additive = !self.future;
        let mut fake = Selector::new(cat);
        fake.set_all(cat, self.future);
        out.extend_from_slice(if additive { b"-@all " } else { b"+@all " });
        // `temp` starts as the user's bits; each chosen category is undone in it so that
        // overlapping categories are not counted twice.
        let mut temp = self.clone();
        let mut applied = vec![false; cat.cat_names.len()];
        loop {
            let mut best = None;
            let (mut min_diff, mut max_same) = (usize::MAX, 0usize);
            for (j, members) in cat.cat_members.iter().enumerate() {
                if applied[j] {
                    continue;
                }
                let on = members.iter().filter(|&&m| temp.bit(m)).count();
                let off = members.len() - on;
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                    best = Some(j);
                    min_diff = diff;
                    max_same = same;
                }
            }
            let Some(j) = best else { break };
            fake.set_category(cat, j, additive);
            temp.set_category(cat, j, !additive);
            out.push(if additive { b'+' } else { b'-' });
            out.push(b'@');
            out.extend_from_slice(cat.cat_names[j].as_bytes());
            out.push(b' ');
            applied[j] = true;
        }
        for &c in &cat.top {
            self.describe_single(cat, &mut fake, c, &mut out);
        }
        out.pop(); // the trailing space
        out
    }

    fn describe_single(&self, cat: &Catalog, fake: &mut Selector, c: usize, out: &mut Vec<u8>) {
        let user_bit = self.bit(c);
        if user_bit != fake.bit(c) {
            out.push(if user_bit { b'+' } else { b'-' });
            out.extend_from_slice(cat.cmds[c].name.as_bytes());
            out.push(b' ');
            fake.change_perm(cat, c, user_bit);
        }
        for &s in &cat.cmds[c].subs {
            self.describe_single(cat, fake, s, out);
        }
        if !user_bit {
            for a in self.first_args.get(&c).into_iter().flatten() {
                out.push(b'+');
                out.extend_from_slice(cat.cmds[c].name.as_bytes());
                out.push(b'|');
                out.extend_from_slice(a);
                out.push(b' ');
            }
        }
    }

    /// Key patterns as `ACL GETUSER` shows them (space separated; `~*` for allkeys).
    pub fn describe_keys(&self) -> Vec<u8> {
        if self.all_keys {
            return b"~*".to_vec();
        }
        let mut out = Vec::new();
        for (i, k) in self.keys.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            out.extend_from_slice(match (k.read, k.write) {
                (true, false) => b"%R~",
                (false, true) => b"%W~",
                _ => b"~",
            });
            out.extend_from_slice(&k.pattern);
        }
        out
    }

    pub fn describe_channels(&self) -> Vec<u8> {
        if self.all_channels {
            return b"&*".to_vec();
        }
        let mut out = Vec::new();
        for (i, c) in self.channels.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            out.push(b'&');
            out.extend_from_slice(c);
        }
        out
    }

    /// The selector as `ACL LIST` prints it: keys, channels, commands.
    pub fn describe(&self, cat: &Catalog) -> Vec<u8> {
        let mut out = self.describe_keys();
        if !out.is_empty() {
            out.push(b' ');
        }
        if self.all_channels {
            out.extend_from_slice(b"&* ");
        } else {
            out.extend_from_slice(b"resetchannels ");
            for c in &self.channels {
                out.push(b'&');
                out.extend_from_slice(c);
                out.push(b' ');
            }
        }
        out.extend_from_slice(&self.describe_commands(cat));
        out
    }
}
