//! ACL users with Redis 7.0's rules, checks, texts and `ACL` command.
//!
//! A user has a name, an on/off switch, passwords kept only as SHA-256 digests (or `nopass`),
//! and one or more *selectors*: the root one written at top level plus any `(...)` ones. A
//! selector allows commands (bits per command and subcommand, set by `+cmd`, `-cmd`, `+@cat`,
//! `-@cat`, `+cmd|sub`), keys (`~pattern` for read and write, `%R~` read, `%W~` write) and
//! channels (`&pattern`, stored and shown but not enforced: Rialto has no pub/sub). A command
//! runs if any selector allows it with all its keys.
//!
//! Commands and categories come from the server's command table, passed as a
//! [`CatalogEntry`] slice. How a user's command rules are printed (`ACL LIST`, `ACL GETUSER`)
//! follows Redis 7.0: not the rules as typed but `+@all`/`-@all`, then the categories that
//! best fit the user's command bits, then single commands, so the text depends on the catalog.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::RwLock;
use rand::RngCore;
use rialto_resp::Reply;
use sha2::{Digest, Sha256};

use crate::glob::GlobPattern;

/// Redis 7.0's command categories, in the order `ACL CAT` lists them.
pub const CATEGORIES: [&str; 21] = [
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

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
    /// Reads the value (GET).
    pub const READ: KeyAccess = KeyAccess {
        read: true,
        write: false,
    };
    /// Writes without reading (SET without GET, DEL).
    pub const WRITE: KeyAccess = KeyAccess {
        read: false,
        write: true,
    };
    /// Reads and writes (INCR, APPEND's result, GETDEL).
    pub const READ_WRITE: KeyAccess = KeyAccess {
        read: true,
        write: true,
    };
    /// Looks only at metadata (EXISTS, TYPE, TTL).
    pub const META: KeyAccess = KeyAccess {
        read: false,
        write: false,
    };
}

/// Where a command's key arguments are, for key permission checks and `ACL DRYRUN`.
#[derive(Clone, Copy, Debug)]
pub enum KeySpec {
    /// No keys.
    None,
    /// Keys at `first`, `first + step`, ... through `last`, all needing `access`. Positions
    /// count the command name as 0 (for `object|encoding`, 0 is `object`); a negative `last`
    /// counts from the end, -1 being the last argument.
    Range {
        /// Position of the first key.
        first: usize,
        /// Position of the last key; negative counts from the end.
        last: i32,
        /// Distance between keys (MSET: 2).
        step: usize,
        /// What each key needs.
        access: KeyAccess,
    },
    /// Found by the command's own parser (numkeys forms, options that change access such as
    /// SET ... GET): positions into the arguments (command name at 0) and their access.
    Custom(fn(&[Bytes]) -> Vec<(usize, KeyAccess)>),
}

/// One command or subcommand of the server's table, as the ACL sees it.
#[derive(Clone, Copy, Debug)]
pub struct CatalogEntry {
    /// Lowercase name; a subcommand is `parent|sub` (`config|get`). A container such as
    /// `config` may be listed with its own categories (Redis gives containers `@slow`, so
    /// `+@slow` allows every CONFIG subcommand); if absent it is added with none.
    pub name: &'static str,
    /// Categories such as `"@read"` (the `@` is optional). Names outside [`CATEGORIES`] add
    /// categories of their own.
    pub categories: &'static [&'static str],
    /// Redis arity: N means exactly N arguments with the name, -N at least N.
    pub arity: i32,
    /// Key positions.
    pub keys: KeySpec,
    /// Allowed whatever the user's command rules (Redis's `no-auth` flag: AUTH, HELLO).
    pub no_auth: bool,
}

impl CatalogEntry {
    /// An entry without keys.
    pub const fn new(
        name: &'static str,
        categories: &'static [&'static str],
        arity: i32,
    ) -> CatalogEntry {
        CatalogEntry {
            name,
            categories,
            arity,
            keys: KeySpec::None,
            no_auth: false,
        }
    }

    /// With this key spec.
    pub const fn keys(mut self, keys: KeySpec) -> CatalogEntry {
        self.keys = keys;
        self
    }

    /// With keys `first..=last` every `step`, all needing `access` (see [`KeySpec::Range`]).
    pub const fn key_range(self, first: usize, last: i32, step: usize, access: KeyAccess) -> Self {
        self.keys(KeySpec::Range {
            first,
            last,
            step,
            access,
        })
    }

    /// Marked `no-auth`.
    pub const fn no_auth(mut self) -> CatalogEntry {
        self.no_auth = true;
        self
    }
}

/// A command as the ACL indexes it.
#[derive(Debug)]
struct Cmd {
    name: String,
    arity: i32,
    keys: KeySpec,
    no_auth: bool,
    parent: Option<usize>,
    subs: Vec<usize>,
}

/// The command table: commands by index, categories and their members.
#[derive(Debug)]
struct Catalog {
    cmds: Vec<Cmd>,
    by_name: HashMap<String, usize>,
    /// Top-level commands in name order, the order rules are printed in.
    top: Vec<usize>,
    cat_names: Vec<String>,
    /// Per category, the commands that have it (containers and subcommands alike).
    cat_members: Vec<Vec<usize>>,
}

impl Catalog {
    fn new(entries: &[CatalogEntry]) -> Catalog {
        let mut c = Catalog {
            cmds: Vec::new(),
            by_name: HashMap::new(),
            top: Vec::new(),
            cat_names: CATEGORIES.iter().map(|s| s.to_string()).collect(),
            cat_members: vec![Vec::new(); CATEGORIES.len()],
        };
        // Containers first, so that subcommands find their parent whatever the order.
        let mut ordered: Vec<&CatalogEntry> =
            entries.iter().filter(|e| !e.name.contains('|')).collect();
        ordered.extend(entries.iter().filter(|e| e.name.contains('|')));
        for e in ordered {
            let name = e.name.to_ascii_lowercase();
            let parts: Vec<&str> = name.split('|').collect();
            if parts.iter().any(|p| p.is_empty())
                || parts.len() > 2
                || c.by_name.contains_key(&name)
            {
                continue; // not expressible in ACL rules, or a duplicate
            }
            let parent = match parts.as_slice() {
                [base, _] => Some(c.container(base)),
                _ => None,
            };
            let idx = c.add(name, e.arity, e.keys, e.no_auth, parent);
            for cat in e.categories {
                let cat = cat.strip_prefix('@').unwrap_or(cat).to_ascii_lowercase();
                if cat.is_empty() {
                    continue;
                }
                let ci = match c.cat_names.iter().position(|n| *n == cat) {
                    Some(i) => i,
                    None => {
                        c.cat_names.push(cat);
                        c.cat_members.push(Vec::new());
                        c.cat_names.len() - 1
                    }
                };
                if !c.cat_members[ci].contains(&idx) {
                    c.cat_members[ci].push(idx);
                }
            }
        }
        let mut top: Vec<usize> = (0..c.cmds.len())
            .filter(|&i| c.cmds[i].parent.is_none())
            .collect();
        top.sort_by(|&a, &b| c.cmds[a].name.cmp(&c.cmds[b].name));
        c.top = top;
        let names: Vec<String> = c.cmds.iter().map(|m| m.name.clone()).collect();
        for m in &mut c.cmds {
            m.subs.sort_by(|&a, &b| names[a].cmp(&names[b]));
        }
        c
    }

    fn add(
        &mut self,
        name: String,
        arity: i32,
        keys: KeySpec,
        no_auth: bool,
        parent: Option<usize>,
    ) -> usize {
        let idx = self.cmds.len();
        self.by_name.insert(name.clone(), idx);
        self.cmds.push(Cmd {
            name,
            arity,
            keys,
            no_auth,
            parent,
            subs: Vec::new(),
        });
        if let Some(p) = parent {
            self.cmds[p].subs.push(idx);
        }
        idx
    }

    /// The container `base`, added (arity -2, no categories) if the catalog lacks it.
    fn container(&mut self, base: &str) -> usize {
        match self.by_name.get(base) {
            Some(&i) => i,
            None => self.add(base.to_string(), -2, KeySpec::None, false, None),
        }
    }

    fn words(&self) -> usize {
        self.cmds.len().div_ceil(64)
    }

    /// A command by full name, any case (`config|get`).
    fn lookup(&self, name: &[u8]) -> Option<usize> {
        let name = std::str::from_utf8(name).ok()?;
        if name.bytes().any(|b| b.is_ascii_uppercase()) {
            self.by_name.get(&name.to_ascii_lowercase()).copied()
        } else {
            self.by_name.get(name).copied()
        }
    }

    fn category(&self, name: &[u8]) -> Option<usize> {
        self.cat_names
            .iter()
            .position(|n| n.as_bytes().eq_ignore_ascii_case(name))
    }

    /// The keys of a call of `cmd`: (argument position, access).
    fn keys(&self, cmd: usize, args: &[Bytes]) -> Vec<(usize, KeyAccess)> {
        match self.cmds[cmd].keys {
            KeySpec::None => Vec::new(),
            KeySpec::Custom(f) => f(args),
            KeySpec::Range {
                first,
                last,
                step,
                access,
            } => {
                let argc = args.len() as i64;
                let last = if last < 0 {
                    argc + i64::from(last)
                } else {
                    i64::from(last)
                };
                let last = last.min(argc - 1);
                let mut out = Vec::new();
                let mut i = first as i64;
                while first > 0 && i <= last {
                    out.push((i as usize, access));
                    i += step.max(1) as i64;
                }
                out
            }
        }
    }
}

/// Why a rule was refused; [`message`](Self::message) is Redis's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// No such command, subcommand or category.
    UnknownName,
    /// Not a rule.
    Syntax,
    /// A key pattern after `allkeys`/`~*`.
    KeyAfterAllKeys,
    /// A channel pattern after `allchannels`/`&*`.
    ChannelAfterAllChannels,
    /// `<pass` or `!hash` for a password the user does not have.
    NoSuchPassword,
    /// `#hash`/`!hash` that is not 64 lowercase hex digits.
    BadHash,
    /// `+parent|sub|arg`: first arguments of subcommands cannot be allowed.
    SubcommandFirstArg,
}

impl RuleError {
    /// Redis's text for it.
    pub fn message(self) -> &'static str {
        match self {
            RuleError::UnknownName => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeyAfterAllKeys => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelAfterAllChannels => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// A refused user change; `Display` gives Redis's text without the `ERR ` code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AclError {
    /// A rule failed (for a selector, the whole `(...)` text).
    Rule {
        /// The rule as given.
        rule: Vec<u8>,
        /// Why.
        error: RuleError,
    },
    /// A `(` argument never closed.
    UnmatchedParenthesis {
        /// The argument that opened it.
        rule: Vec<u8>,
    },
    /// A user name with a space, another C `isspace` byte or NUL.
    BadUsername,
    /// `ACL DELUSER default`.
    DefaultUndeletable,
    /// The same user twice in the configuration.
    DuplicateUser {
        /// The name.
        name: Vec<u8>,
    },
    /// A configuration line that is not `user <name> [rule ...]`, or has unbalanced quotes.
    BadUserLine,
}

impl AclError {
    fn text(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            AclError::Rule { rule, error } => {
                out.extend_from_slice(b"Error in ACL SETUSER modifier '");
                out.extend_from_slice(rule);
                out.extend_from_slice(b"': ");
                out.extend_from_slice(error.message().as_bytes());
            }
            AclError::UnmatchedParenthesis { rule } => {
                out.extend_from_slice(b"Unmatched parenthesis in acl selector starting at '");
                out.extend_from_slice(rule);
                out.extend_from_slice(b"'.");
            }
            AclError::BadUsername => {
                out.extend_from_slice(b"Usernames can't contain spaces or null characters")
            }
            AclError::DefaultUndeletable => {
                out.extend_from_slice(b"The 'default' user cannot be removed")
            }
            AclError::DuplicateUser { name } => {
                out.extend_from_slice(
                    b"Duplicate user found. A user can only be defined once in config files: '",
                );
                out.extend_from_slice(name);
                out.push(b'\'');
            }
            AclError::BadUserLine => out.extend_from_slice(
                b"Bad user declaration: expected 'user <username> [rule ...]' with balanced quotes",
            ),
        }
        out
    }

    /// The error reply: `-ERR ` and the text.
    pub fn to_reply(&self) -> Reply {
        let mut t = b"ERR ".to_vec();
        t.extend_from_slice(&self.text());
        Reply::Error(Bytes::from(t))
    }
}

impl fmt::Display for AclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.text()))
    }
}

impl std::error::Error for AclError {}

/// A failed AUTH or HELLO AUTH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthError {
    /// Unknown user, wrong password or disabled user: one answer for all, as Redis gives.
    WrongPass,
    /// `AUTH <password>` while the default user has no password.
    NoDefaultPassword,
}

impl AuthError {
    /// Redis's reply.
    pub fn to_reply(self) -> Reply {
        match self {
            AuthError::WrongPass => {
                Reply::error("WRONGPASS invalid username-password pair or user is disabled.")
            }
            AuthError::NoDefaultPassword => Reply::error(
                "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
            ),
        }
    }
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_reply() {
            Reply::Error(e) => f.write_str(&String::from_utf8_lossy(&e)),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for AuthError {}

/// A refused command. `Display` and [`to_reply`](Self::to_reply) give Redis 7.0's NOPERM
/// texts; [`dryrun_text`](Self::dryrun_text) the longer ones of `ACL DRYRUN`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Denied {
    /// The command (full lowercase name, `config|set` for subcommands).
    Command(String),
    /// A key argument (the one Redis reports: the first refused key of the most permissive
    /// selector).
    Key(Bytes),
}

impl Denied {
    /// `NOPERM this user has no permissions to ...`.
    pub fn to_reply(&self) -> Reply {
        Reply::Error(Bytes::from(self.to_string()))
    }

    /// What `ACL DRYRUN` answers (as a bulk string): `This user has no permissions to ...`.
    pub fn dryrun_text(&self) -> Vec<u8> {
        match self {
            Denied::Command(c) => {
                format!("This user has no permissions to run the '{c}' command").into_bytes()
            }
            Denied::Key(k) => {
                let mut t = b"This user has no permissions to access the '".to_vec();
                t.extend_from_slice(k);
                t.extend_from_slice(b"' key");
                t
            }
        }
    }
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denied::Command(c) => write!(
                f,
                "NOPERM this user has no permissions to run the '{c}' command"
            ),
            Denied::Key(_) => f.write_str(
                "NOPERM this user has no permissions to access one of the keys used as arguments",
            ),
        }
    }
}

impl std::error::Error for Denied {}

#[derive(Clone, Debug)]
struct KeyPattern {
    pattern: Vec<u8>,
    glob: GlobPattern,
    read: bool,
    write: bool,
}

/// One set of command, key and channel permissions.
#[derive(Clone, Debug)]
struct Selector {
    allowed: Vec<u64>,
    /// Set by `+@all`: commands added later are allowed too (printed as `+@all`).
    future: bool,
    /// `+cmd|arg` for commands without subcommands: allowed first arguments (any case).
    first_args: BTreeMap<usize, Vec<Vec<u8>>>,
    all_keys: bool,
    keys: Vec<KeyPattern>,
    all_channels: bool,
    channels: Vec<Vec<u8>>,
}

/// Counted refusals: commands rank below keys, later keys above earlier ones.
type Refusal = (u8, usize);

impl Selector {
    fn new(cat: &Catalog) -> Selector {
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

    fn bit(&self, i: usize) -> bool {
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
    fn change_perm(&mut self, cat: &Catalog, cmd: usize, allow: bool) {
        self.set_bit(cmd, allow);
        self.first_args.remove(&cmd);
        for &s in &cat.cmds[cmd].subs {
            self.set_bit(s, allow);
        }
    }

    fn set_category(&mut self, cat: &Catalog, c: usize, allow: bool) {
        for &m in &cat.cat_members[c] {
            self.change_perm(cat, m, allow);
        }
    }

    fn set_all(&mut self, cat: &Catalog, allow: bool) {
        let fill = if allow { u64::MAX } else { 0 };
        self.allowed = vec![fill; cat.words()];
        self.future = allow;
        self.first_args.clear();
    }

    /// Applies one selector rule (Redis's `ACLSetSelector`).
    fn apply(&mut self, cat: &Catalog, op: &[u8]) -> Result<(), RuleError> {
        let is = |s: &str| op.eq_ignore_ascii_case(s.as_bytes());
        let first = op.first().copied().unwrap_or(0);
        let second = op.get(1).copied().unwrap_or(0);
        if is("allkeys") || op == b"~*" {
            self.all_keys = true;
            self.keys.clear();
        } else if is("resetkeys") {
            self.all_keys = false;
            self.keys.clear();
        } else if is("allchannels") || op == b"&*" {
            self.all_channels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.set_all(cat, true);
        } else if is("nocommands") || is("-@all") {
            self.set_all(cat, false);
        } else if first == b'~' || first == b'%' {
            self.add_key_pattern(op)?;
        } else if first == b'&' {
            if self.all_channels {
                return Err(RuleError::ChannelAfterAllChannels);
            }
            let ch = &op[1..];
            if !self.channels.iter().any(|c| c == ch) {
                self.channels.push(ch.to_vec());
            }
        } else if first == b'+' && second != b'@' {
            self.allow_command(cat, &op[1..])?;
        } else if first == b'-' && second != b'@' {
            let cmd = cat.lookup(&op[1..]).ok_or(RuleError::UnknownName)?;
            self.change_perm(cat, cmd, false);
        } else if (first == b'+' || first == b'-') && second == b'@' {
            let c = cat.category(&op[2..]).ok_or(RuleError::UnknownName)?;
            self.set_category(cat, c, first == b'+');
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeyAfterAllKeys);
        }
        let (mut read, mut write) = (true, true);
        let mut offset = 1;
        if op.first() == Some(&b'%') {
            (read, write) = (false, false);
            while let Some(&c) = op.get(offset) {
                offset += 1;
                match c {
                    b'R' | b'r' if !read => read = true,
                    b'W' | b'w' if !write => write = true,
                    b'~' => break,
                    _ => return Err(RuleError::Syntax),
                }
            }
            if !read && !write {
                return Err(RuleError::Syntax);
            }
        }
        let pattern = op.get(offset..).unwrap_or_default();
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

    /// Redis's `ACLSelectorCheckCmd`: `keys` holds (position, key, access).
    fn check(
        &self,
        cat: &Catalog,
        cmd: Option<usize>,
        first_arg: Option<&[u8]>,
        keys: &[(usize, &[u8], KeyAccess)],
    ) -> Result<(), Refusal> {
        let allowed = match cmd {
            Some(i) => {
                cat.cmds[i].no_auth
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
        Ok(())
    }

    /// The command rules as Redis 7.0 prints them: `+@all` or `-@all`, the categories that
    /// best fit (greedily, fewest differences first), then single commands and first args.
    fn describe_commands(&self, cat: &Catalog) -> Vec<u8> {
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
    fn describe_keys(&self) -> Vec<u8> {
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

    fn describe_channels(&self) -> Vec<u8> {
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
    fn describe(&self, cat: &Catalog) -> Vec<u8> {
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sanitize {
    Unset,
    Skip,
    Always,
}

/// An ACL user: a snapshot. Changing a user makes a new `User` with the same
/// [`id`](Self::id); see [`Acl::refresh`].
#[derive(Clone)]
pub struct User {
    id: u64,
    name: Vec<u8>,
    enabled: bool,
    nopass: bool,
    sanitize: Sanitize,
    passwords: Vec<[u8; 32]>,
    root: Selector,
    selectors: Vec<Selector>,
    catalog: Arc<Catalog>,
}

impl fmt::Debug for User {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("User")
            .field("name", &String::from_utf8_lossy(&self.name))
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

fn hex(bytes: &[u8]) -> Vec<u8> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|&b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]])
        .collect()
}

/// A `#`/`!` password hash: exactly 64 lowercase hex digits.
fn parse_hash(h: &[u8]) -> Result<[u8; 32], RuleError> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    if h.len() != 64 {
        return Err(RuleError::BadHash);
    }
    let mut out = [0u8; 32];
    for (o, pair) in out.iter_mut().zip(h.chunks_exact(2)) {
        let (Some(hi), Some(lo)) = (digit(pair[0]), digit(pair[1])) else {
            return Err(RuleError::BadHash);
        };
        *o = hi << 4 | lo;
    }
    Ok(out)
}

/// Compares digests without an early exit, so timing does not reveal a common prefix.
fn digest_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl User {
    /// Whether the user may run every command on every key with any arguments (the default
    /// user without restrictions): the per-request check can then be skipped.
    pub fn unrestricted(&self) -> bool {
        let r = &self.root;
        let n = self.catalog.cmds.len();
        let all_cmds = r.future
            && (0..n).all(|i| {
                r.allowed
                    .get(i / 64)
                    .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
            });
        all_cmds && r.first_args.is_empty() && r.all_keys
    }

    fn new(id: u64, name: &[u8], catalog: Arc<Catalog>) -> User {
        User {
            id,
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            sanitize: Sanitize::Unset,
            passwords: Vec::new(),
            root: Selector::new(&catalog),
            selectors: Vec::new(),
            catalog,
        }
    }

    /// The name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// Stays the same across changes, new when a user is deleted and created again.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// `on`.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// `nopass`: any password is accepted.
    pub fn nopass(&self) -> bool {
        self.nopass
    }

    /// The password digests in hex, as `ACL GETUSER` shows them.
    pub fn password_hashes(&self) -> Vec<String> {
        self.passwords
            .iter()
            .map(|p| String::from_utf8_lossy(&hex(p)).into_owned())
            .collect()
    }

    /// May this user run `args` as command `cmd` (lowercase full name: `get`, `config|get`;
    /// `args` with the command name first)? Keys come from the catalog's [`KeySpec`].
    pub fn check(&self, cmd: &str, args: &[Bytes]) -> Result<(), Denied> {
        let idx = self.catalog.lookup(cmd.as_bytes());
        // Finding keys can cost (a custom parser); skip it when every selector allows all.
        let need_keys = std::iter::once(&self.root)
            .chain(&self.selectors)
            .any(|s| !s.all_keys);
        let positions = match idx {
            Some(i) if need_keys => self.catalog.keys(i, args),
            _ => Vec::new(),
        };
        let keys: Vec<(usize, &[u8], KeyAccess)> = positions
            .into_iter()
            .filter_map(|(p, a)| args.get(p).map(|k| (p, &k[..], a)))
            .collect();
        let first_arg = self.first_arg_of(idx, args);
        self.check_parts(cmd, idx, first_arg, &keys)
    }

    /// Like [`check`](Self::check) with keys the caller found: `first_arg` is the argument
    /// after the command name (for `+cmd|arg` rules).
    pub fn check_keys(
        &self,
        cmd: &str,
        first_arg: Option<&[u8]>,
        keys: &[(&[u8], KeyAccess)],
    ) -> Result<(), Denied> {
        let idx = self.catalog.lookup(cmd.as_bytes());
        let keys: Vec<(usize, &[u8], KeyAccess)> = keys
            .iter()
            .enumerate()
            .map(|(i, &(k, a))| (i, k, a))
            .collect();
        self.check_parts(cmd, idx, first_arg, &keys)
    }

    fn first_arg_of<'a>(&self, idx: Option<usize>, args: &'a [Bytes]) -> Option<&'a [u8]> {
        let at = match idx.and_then(|i| self.catalog.cmds[i].parent) {
            Some(_) => 2,
            None => 1,
        };
        args.get(at).map(|a| &a[..])
    }

    fn check_parts(
        &self,
        cmd: &str,
        idx: Option<usize>,
        first_arg: Option<&[u8]>,
        keys: &[(usize, &[u8], KeyAccess)],
    ) -> Result<(), Denied> {
        let cat = &self.catalog;
        let mut worst: Refusal = (1, 0);
        for sel in std::iter::once(&self.root).chain(&self.selectors) {
            match sel.check(cat, idx, first_arg, keys) {
                Ok(()) => return Ok(()),
                Err(r) => {
                    if r.0 > worst.0 || (r.0 == worst.0 && r.1 > worst.1) {
                        worst = r;
                    }
                }
            }
        }
        if worst.0 == 2 {
            if let Some(&(_, k, _)) = keys.iter().find(|k| k.0 == worst.1) {
                return Err(Denied::Key(Bytes::copy_from_slice(k)));
            }
        }
        let name = match idx {
            Some(i) => cat.cmds[i].name.clone(),
            None => cmd.to_ascii_lowercase(),
        };
        Err(Denied::Command(name))
    }

    /// Applies one user-level rule (Redis's `ACLSetUser`).
    fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let is = |s: &str| op.eq_ignore_ascii_case(s.as_bytes());
        let first = op.first().copied();
        if op.is_empty() {
            // Redis treats an empty rule as no rule.
        } else if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.sanitize = Sanitize::Skip;
        } else if is("sanitize-payload") {
            self.sanitize = Sanitize::Always;
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if first == Some(b'>') || first == Some(b'#') {
            let h = if first == Some(b'>') {
                sha256(&op[1..])
            } else {
                parse_hash(&op[1..])?
            };
            if !self.passwords.contains(&h) {
                self.passwords.push(h);
            }
            self.nopass = false;
        } else if first == Some(b'<') || first == Some(b'!') {
            let h = if first == Some(b'<') {
                sha256(&op[1..])
            } else {
                parse_hash(&op[1..])?
            };
            let at = self.passwords.iter().position(|p| *p == h);
            self.passwords.remove(at.ok_or(RuleError::NoSuchPassword)?);
        } else if first == Some(b'(') && op.last() == Some(&b')') && op.len() >= 2 {
            let mut sel = Selector::new(&self.catalog);
            // Redis splits the inside like a config line; on unbalanced quotes it gets no
            // rules and adds an empty selector.
            for rule in split_args(&op[1..op.len() - 1]).unwrap_or_default() {
                sel.apply(&self.catalog, &rule)?;
            }
            self.selectors.push(sel);
        } else if is("clearselectors") {
            self.selectors.clear();
        } else if is("reset") {
            self.passwords.clear();
            self.nopass = false;
            let cat = Arc::clone(&self.catalog);
            self.root.all_keys = false;
            self.root.keys.clear();
            self.root.all_channels = false;
            self.root.channels.clear();
            self.enabled = false;
            self.sanitize = Sanitize::Always;
            self.selectors.clear();
            self.root.set_all(&cat, false);
        } else {
            let cat = Arc::clone(&self.catalog);
            self.root.apply(&cat, op)?;
        }
        Ok(())
    }

    /// The rules that recreate this user, as `ACL LIST` prints them after `user <name> `.
    pub fn describe(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for f in self.flags() {
            out.extend_from_slice(f.as_bytes());
            out.push(b' ');
        }
        for p in &self.passwords {
            out.push(b'#');
            out.extend_from_slice(&hex(p));
            out.push(b' ');
        }
        out.extend_from_slice(&self.root.describe(&self.catalog));
        for s in &self.selectors {
            out.extend_from_slice(b" (");
            out.extend_from_slice(&s.describe(&self.catalog));
            out.push(b')');
        }
        out
    }

    fn flags(&self) -> Vec<&'static str> {
        let mut f = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            f.push("nopass");
        }
        match self.sanitize {
            Sanitize::Skip => f.push("skip-sanitize-payload"),
            Sanitize::Always => f.push("sanitize-payload"),
            Sanitize::Unset => {}
        }
        f
    }

    fn getuser_reply(&self) -> Reply {
        let bulk = |v: Vec<u8>| Reply::Bulk(Bytes::from(v));
        let selector_pairs = |s: &Selector| {
            vec![
                (
                    Reply::bulk("commands"),
                    bulk(s.describe_commands(&self.catalog)),
                ),
                (Reply::bulk("keys"), bulk(s.describe_keys())),
                (Reply::bulk("channels"), bulk(s.describe_channels())),
            ]
        };
        let mut pairs = vec![
            (
                Reply::bulk("flags"),
                Reply::Set(self.flags().into_iter().map(Reply::bulk).collect()),
            ),
            (
                Reply::bulk("passwords"),
                Reply::Array(self.passwords.iter().map(|p| bulk(hex(p))).collect()),
            ),
        ];
        pairs.extend(selector_pairs(&self.root));
        pairs.push((
            Reply::bulk("selectors"),
            Reply::Array(
                self.selectors
                    .iter()
                    .map(|s| Reply::Map(selector_pairs(s)))
                    .collect(),
            ),
        ));
        Reply::Map(pairs)
    }
}

/// C `isspace` in the C locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Splits a line as Redis's `sdssplitargs` does: runs of spaces separate arguments,
/// `"..."` takes `\xHH`, `\n`, `\r`, `\t`, `\b`, `\a` and `\<any>` escapes, `'...'` takes
/// `\'`; a closing quote must be followed by a space or the end. `None` on unbalanced quotes.
/// A NUL ends the line, as in C.
fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let end = line.iter().position(|&b| b == 0).unwrap_or(line.len());
    let s = &line[..end];
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let hexval = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::new();
    let mut p = 0;
    loop {
        while p < s.len() && is_c_space(s[p]) {
            p += 1;
        }
        if p >= s.len() {
            return Some(out);
        }
        let mut cur = Vec::new();
        let (mut dq, mut sq) = (false, false);
        loop {
            let c = at(p);
            if dq {
                if c == 0 {
                    return None;
                } else if c == b'\\' && at(p + 1) == b'x' {
                    if let (Some(h), Some(l)) = (hexval(at(p + 2)), hexval(at(p + 3))) {
                        cur.push(h << 4 | l);
                        p += 3;
                    } else {
                        // `\x` without two hex digits: an ordinary escape of `x`.
                        cur.push(b'x');
                        p += 1;
                    }
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    cur.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        o => o,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else if sq {
                if c == 0 {
                    return None;
                } else if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break,
                    b'"' => dq = true,
                    b'\'' => sq = true,
                    o => cur.push(o),
                }
            }
            p += 1;
        }
        out.push(cur);
    }
}

/// Joins `(` ... `)` arguments into single selector rules, as Redis does before applying
/// them. An argument starting with `(` while one is open starts over, as in Redis.
fn merge_selector_args(rules: &[&[u8]]) -> Result<Vec<Vec<u8>>, AclError> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, &op) in rules.iter().enumerate() {
        let closes = op.last() == Some(&b')');
        if op.first() == Some(&b'(') && !closes {
            open = Some((i, op.to_vec()));
            continue;
        }
        if let Some((_, sel)) = open.as_mut() {
            sel.push(b' ');
            sel.extend_from_slice(op);
            if closes {
                if let Some((_, sel)) = open.take() {
                    out.push(sel);
                }
            }
            continue;
        }
        out.push(op.to_vec());
    }
    match open {
        Some((i, _)) => Err(AclError::UnmatchedParenthesis {
            rule: rules[i].to_vec(),
        }),
        None => Ok(out),
    }
}

fn valid_username(name: &[u8]) -> bool {
    !name.iter().any(|&b| is_c_space(b) || b == 0)
}

/// Splits a configuration line `user <name> [rule ...]` (quotes as in Redis config files)
/// into the name and its rules. Quoted `\x` escapes that make invalid UTF-8 are refused.
pub fn parse_user_line(line: &str) -> Result<(String, Vec<String>), AclError> {
    let mut args = split_args(line.as_bytes()).ok_or(AclError::BadUserLine)?;
    if args.len() < 2 || !args[0].eq_ignore_ascii_case(b"user") {
        return Err(AclError::BadUserLine);
    }
    let rules = args.split_off(2);
    let name = args.pop().unwrap_or_default();
    let text = |v: Vec<u8>| String::from_utf8(v).map_err(|_| AclError::BadUserLine);
    Ok((
        text(name)?,
        rules.into_iter().map(text).collect::<Result<_, _>>()?,
    ))
}

/// Like [`parse_user_line`] without the leading `user` keyword: `<name> [rule ...]`, the
/// form of Rialto's `user` configuration key.
pub fn parse_user_spec(spec: &str) -> Result<(String, Vec<String>), AclError> {
    parse_user_line(&format!("user {spec}"))
}

/// All users, keyed and listed by name in byte order (as Redis's radix tree lists them).
pub struct Acl {
    catalog: Arc<Catalog>,
    users: BTreeMap<Vec<u8>, Arc<User>>,
    next_id: u64,
    generation: Arc<AtomicU64>,
}

impl fmt::Debug for Acl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acl")
            .field("users", &self.users.len())
            .finish_non_exhaustive()
    }
}

impl Acl {
    /// The ACL with only `default`: `on nopass ~* &* +@all`, or with `requirepass` (if not
    /// empty) that password instead of `nopass`.
    pub fn new(catalog: &'static [CatalogEntry], requirepass: Option<&[u8]>) -> Acl {
        let catalog = Arc::new(Catalog::new(catalog));
        let mut acl = Acl {
            catalog,
            users: BTreeMap::new(),
            next_id: 1,
            generation: Arc::new(AtomicU64::new(0)),
        };
        let mut default = User::new(0, b"default", Arc::clone(&acl.catalog));
        for op in ["+@all", "~*", "&*", "on", "nopass"] {
            // These rules are valid for any catalog.
            let _ = default.apply(op.as_bytes());
        }
        acl.users.insert(b"default".to_vec(), Arc::new(default));
        acl.set_requirepass(requirepass);
        acl
    }

    fn bump(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Counts changes to any user. Connections can keep a clone and re-fetch their user
    /// ([`refresh`](Self::refresh)) only when it moved, without taking the lock per command.
    pub fn generation(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.generation)
    }

    /// Creates or changes a user with `rules` (ACL SETUSER): all applied in order, or none.
    pub fn set_user(&mut self, name: &[u8], rules: &[&[u8]]) -> Result<(), AclError> {
        if !valid_username(name) {
            return Err(AclError::BadUsername);
        }
        let merged = merge_selector_args(rules)?;
        let mut user = match self.users.get(name) {
            Some(u) => User::clone(u),
            None => User::new(self.next_id, name, Arc::clone(&self.catalog)),
        };
        for rule in merged {
            if let Err(error) = user.apply(&rule) {
                return Err(AclError::Rule { rule, error });
            }
        }
        if user.id == self.next_id {
            self.next_id += 1;
        }
        self.users.insert(name.to_vec(), Arc::new(user));
        self.bump();
        Ok(())
    }

    /// Loads users from the configuration (`user` lines): all or none. As in Redis, an
    /// existing user (`default`) is reset first, so its line replaces what `requirepass` set;
    /// call this after [`Acl::new`]. A name given twice is an error.
    pub fn load_users(&mut self, users: &[(String, Vec<String>)]) -> Result<(), AclError> {
        let mut seen: Vec<&str> = Vec::new();
        let mut staged = BTreeMap::new();
        let mut next_id = self.next_id;
        for (name, rules) in users {
            if seen.contains(&name.as_str()) {
                return Err(AclError::DuplicateUser {
                    name: name.as_bytes().to_vec(),
                });
            }
            seen.push(name);
            if !valid_username(name.as_bytes()) {
                return Err(AclError::BadUsername);
            }
            let mut user = match self.users.get(name.as_bytes()) {
                Some(u) => {
                    // Only an existing user (`default`) is reset first, as in Redis.
                    let mut u = User::clone(u);
                    let _ = u.apply(b"reset");
                    u
                }
                None => {
                    next_id += 1;
                    User::new(next_id - 1, name.as_bytes(), Arc::clone(&self.catalog))
                }
            };
            let rules: Vec<&[u8]> = rules.iter().map(|r| r.as_bytes()).collect();
            for rule in merge_selector_args(&rules)? {
                if let Err(error) = user.apply(&rule) {
                    return Err(AclError::Rule { rule, error });
                }
            }
            staged.insert(name.as_bytes().to_vec(), Arc::new(user));
        }
        self.users.extend(staged);
        self.next_id = next_id;
        self.bump();
        Ok(())
    }

    /// Deletes users (ACL DELUSER): refused as a whole if `default` is among them. Returns
    /// how many existed. Connections of a deleted user find it gone on
    /// [`refresh`](Self::refresh) and must be closed, as Redis closes them.
    pub fn del_user(&mut self, names: &[&[u8]]) -> Result<usize, AclError> {
        if names.iter().any(|n| *n == b"default") {
            return Err(AclError::DefaultUndeletable);
        }
        let n = names
            .iter()
            .filter(|n| self.users.remove(**n).is_some())
            .count();
        if n > 0 {
            self.bump();
        }
        Ok(n)
    }

    /// A user by name.
    pub fn user(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.get(name).cloned()
    }

    /// The current version of `user`, or `None` if it was deleted (even if a user of the
    /// same name was created since).
    pub fn refresh(&self, user: &User) -> Option<Arc<User>> {
        self.users
            .get(&user.name)
            .filter(|u| u.id == user.id)
            .cloned()
    }

    /// All users in name order.
    pub fn users(&self) -> Vec<Arc<User>> {
        self.users.values().cloned().collect()
    }

    /// Checks a user name and password (AUTH, HELLO AUTH). The password is hashed and
    /// compared without early exit; unknown and disabled users fail like a wrong password.
    pub fn authenticate(&self, user: &[u8], pass: &[u8]) -> Result<Arc<User>, AuthError> {
        let h = sha256(pass);
        let Some(u) = self.users.get(user) else {
            return Err(AuthError::WrongPass);
        };
        if !u.enabled {
            return Err(AuthError::WrongPass);
        }
        if u.nopass {
            return Ok(Arc::clone(u));
        }
        let mut ok = false;
        for p in &u.passwords {
            ok |= digest_eq(p, &h);
        }
        if ok {
            Ok(Arc::clone(u))
        } else {
            Err(AuthError::WrongPass)
        }
    }

    /// `AUTH <password>`: as the default user, refused outright if it has no password.
    pub fn authenticate_default(&self, pass: &[u8]) -> Result<Arc<User>, AuthError> {
        if self.users.get(&b"default"[..]).is_none_or(|u| u.nopass) {
            return Err(AuthError::NoDefaultPassword);
        }
        self.authenticate(b"default", pass)
    }

    /// What setting `requirepass` does: the default user's passwords become this one, or
    /// `nopass` for `None` or empty. Its other rules stay.
    pub fn set_requirepass(&mut self, pass: Option<&[u8]>) {
        let Some(current) = self.users.get(&b"default"[..]) else {
            return;
        };
        let mut u = User::clone(current);
        let _ = u.apply(b"resetpass");
        match pass.filter(|p| !p.is_empty()) {
            Some(p) => {
                let mut op = b">".to_vec();
                op.extend_from_slice(p);
                let _ = u.apply(&op);
            }
            None => {
                let _ = u.apply(b"nopass");
            }
        }
        self.users.insert(b"default".to_vec(), Arc::new(u));
        self.bump();
    }

    /// Whether new connections start unauthenticated: the default user is off or has a
    /// password (Redis authenticates new connections as `default` only if `on nopass`).
    pub fn default_user_needs_auth(&self) -> bool {
        self.users
            .get(&b"default"[..])
            .is_none_or(|u| !(u.nopass && u.enabled))
    }

    /// Whether the default user is `nopass`: Redis's protected mode refuses non-loopback
    /// clients exactly then (whether or not the user is on).
    pub fn default_user_nopass(&self) -> bool {
        self.users.get(&b"default"[..]).is_some_and(|u| u.nopass)
    }

    /// The category names, Redis's first, as `ACL CAT` lists them.
    pub fn categories(&self) -> Vec<&str> {
        self.catalog.cat_names.iter().map(|s| s.as_str()).collect()
    }

    /// The commands of a category (full names), or `None` if there is no such category.
    pub fn category_commands(&self, category: &str) -> Option<Vec<&str>> {
        let c = self.catalog.category(category.as_bytes())?;
        let mut v: Vec<&str> = self.catalog.cat_members[c]
            .iter()
            .map(|&i| self.catalog.cmds[i].name.as_str())
            .collect();
        v.sort_unstable();
        Some(v)
    }

    /// ACL DRYRUN's answer for `args` (user, then command and its arguments).
    fn dryrun(&self, args: &[Bytes]) -> Reply {
        let (Some(name), Some(cmd_name)) = (args.first(), args.get(1)) else {
            return wrong_arity("acl|dryrun");
        };
        let Some(user) = self.users.get(&name[..]) else {
            return err_with(b"ERR User '", name, b"' not found");
        };
        let cmd_args = &args[1..];
        let cat = &self.catalog;
        let not_found = || err_with(b"ERR Command '", cmd_name, b"' not found");
        // Like Redis's command table lookup: `config|get` is not a command name here.
        let top = cat
            .lookup(cmd_name)
            .filter(|&i| cat.cmds[i].parent.is_none());
        let Some(mut idx) = top else {
            return not_found();
        };
        if !cat.cmds[idx].subs.is_empty() && cmd_args.len() >= 2 {
            let mut full = cmd_name.to_vec();
            full.push(b'|');
            full.extend_from_slice(&cmd_args[1]);
            match cat.lookup(&full) {
                Some(s) => idx = s,
                None => return not_found(),
            }
        }
        let c = &cat.cmds[idx];
        let argc = cmd_args.len() as i64;
        let arity = i64::from(c.arity);
        if (arity > 0 && arity != argc) || argc < -arity {
            return wrong_arity(&c.name);
        }
        match user.check(&c.name, cmd_args) {
            Ok(()) => Reply::simple("OK"),
            Err(d) => Reply::Bulk(Bytes::from(d.dryrun_text())),
        }
    }
}

fn wrong_arity(name: &str) -> Reply {
    Reply::Error(Bytes::from(format!(
        "ERR wrong number of arguments for '{name}' command"
    )))
}

fn err_with(prefix: &[u8], middle: &[u8], suffix: &[u8]) -> Reply {
    let mut t = prefix.to_vec();
    t.extend_from_slice(middle);
    t.extend_from_slice(suffix);
    Reply::Error(Bytes::from(t))
}

/// At most `n` bytes of `s`, as C's `%.128s` prints an argument.
fn truncated(s: &[u8], n: usize) -> &[u8] {
    &s[..s.len().min(n)]
}

/// Redis's `string2ll` followed by a range check for `long`: strict decimal.
fn parse_long(s: &[u8]) -> Option<i64> {
    let digits = s.strip_prefix(b"-").unwrap_or(s);
    let leading_ok = match digits {
        [b'0'] => s.len() == 1,
        [b'1'..=b'9', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    if !leading_ok {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// The ACL HELP lines (Rialto's own wording).
const HELP: &[&str] = &[
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    Without a category: the command categories. With one: its commands.",
    "DELUSER <username> [<username> ...]",
    "    Remove these users (not 'default').",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Tell whether the user could run this command, without running it.",
    "GETUSER <username>",
    "    Show a user's flags, password hashes, commands, keys, channels and selectors.",
    "GENPASS [<bits>]",
    "    A random password of 256 bits, or of <bits> bits (hex digits, up to 4096 bits).",
    "LIST",
    "    Every user as the rules that would create it.",
    "LOAD",
    "    Not supported: users come from the configuration and ACL SETUSER.",
    "LOG [<count> | RESET]",
    "    Denied-command log: always empty here.",
    "SAVE",
    "    Not supported: users come from the configuration and ACL SETUSER.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create a user or change it with these rules, all or none.",
    "USERS",
    "    The user names.",
    "WHOAMI",
    "    The user of this connection.",
    "HELP",
    "    This text.",
];

/// The `ACL` command: `args` as received (`ACL`, the subcommand, its arguments);
/// `current_user` is the connection's user (for WHOAMI). SETUSER and DELUSER take the write
/// lock, the rest the read lock (GENPASS none).
pub fn acl_command(acl: &RwLock<Acl>, current_user: &[u8], args: &[Bytes]) -> Reply {
    let Some(sub_raw) = args.get(1) else {
        return wrong_arity("acl");
    };
    let sub = sub_raw.to_ascii_lowercase();
    let arity: i64 = match &sub[..] {
        b"cat" | b"genpass" | b"log" => -2,
        b"deluser" | b"setuser" => -3,
        b"dryrun" => -4,
        b"getuser" => 3,
        b"list" | b"load" | b"save" | b"users" | b"whoami" | b"help" => 2,
        _ => {
            let mut t = b"ERR unknown subcommand '".to_vec();
            t.extend_from_slice(truncated(sub_raw, 128));
            t.extend_from_slice(b"'. Try ");
            t.extend_from_slice(&args[0].to_ascii_uppercase());
            t.extend_from_slice(b" HELP.");
            return Reply::Error(Bytes::from(t));
        }
    };
    let argc = args.len() as i64;
    if (arity > 0 && argc != arity) || argc < -arity {
        let name = format!("acl|{}", String::from_utf8_lossy(&sub));
        return wrong_arity(&name);
    }
    let syntax = || {
        let mut t = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
        t.extend_from_slice(truncated(sub_raw, 128));
        t.extend_from_slice(b"'. Try ");
        t.extend_from_slice(&args[0].to_ascii_uppercase());
        t.extend_from_slice(b" HELP.");
        Reply::Error(Bytes::from(t))
    };
    let bulk = |v: Vec<u8>| Reply::Bulk(Bytes::from(v));
    match &sub[..] {
        b"setuser" => {
            let rules: Vec<&[u8]> = args[3..].iter().map(|a| &a[..]).collect();
            match acl.write().set_user(&args[2], &rules) {
                Ok(()) => Reply::simple("OK"),
                Err(e) => e.to_reply(),
            }
        }
        b"deluser" => {
            let names: Vec<&[u8]> = args[2..].iter().map(|a| &a[..]).collect();
            match acl.write().del_user(&names) {
                Ok(n) => Reply::Integer(n as i64),
                Err(e) => e.to_reply(),
            }
        }
        b"getuser" => match acl.read().users.get(&args[2][..]) {
            Some(u) => u.getuser_reply(),
            None => Reply::Null,
        },
        b"list" => Reply::Array(
            acl.read()
                .users
                .values()
                .map(|u| {
                    let mut line = b"user ".to_vec();
                    line.extend_from_slice(&u.name);
                    line.push(b' ');
                    line.extend_from_slice(&u.describe());
                    bulk(line)
                })
                .collect(),
        ),
        b"users" => Reply::Array(acl.read().users.keys().map(|n| bulk(n.clone())).collect()),
        b"whoami" => Reply::bulk(current_user),
        b"cat" => {
            let acl = acl.read();
            match args.get(2) {
                None => Reply::Array(acl.catalog.cat_names.iter().map(Reply::bulk).collect()),
                Some(_) if args.len() > 3 => syntax(),
                Some(name) => match acl.catalog.category(name) {
                    Some(c) => {
                        let mut names: Vec<&str> = acl.catalog.cat_members[c]
                            .iter()
                            .map(|&i| acl.catalog.cmds[i].name.as_str())
                            .collect();
                        names.sort_unstable();
                        Reply::Array(names.into_iter().map(Reply::bulk).collect())
                    }
                    None => err_with(b"ERR Unknown category '", truncated(name, 128), b"'"),
                },
            }
        }
        b"genpass" => {
            if args.len() > 3 {
                return syntax();
            }
            let bits = match args.get(2) {
                None => 256,
                Some(a) => match parse_long(a) {
                    None => return Reply::error("ERR value is not an integer or out of range"),
                    Some(b) if !(1..=4096).contains(&b) => return Reply::error(
                        "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
                    ),
                    Some(b) => b as usize,
                },
            };
            let chars = bits.div_ceil(4);
            let mut raw = vec![0u8; chars.div_ceil(2)];
            rand::thread_rng().fill_bytes(&mut raw);
            let mut h = hex(&raw);
            h.truncate(chars);
            bulk(h)
        }
        b"dryrun" => acl.read().dryrun(&args[2..]),
        b"log" => match args.get(2) {
            None => Reply::Array(Vec::new()),
            Some(_) if args.len() > 3 => syntax(),
            Some(a) if a.eq_ignore_ascii_case(b"reset") => Reply::simple("OK"),
            Some(a) => match parse_long(a) {
                Some(_) => Reply::Array(Vec::new()),
                None => Reply::error("ERR value is not an integer or out of range"),
            },
        },
        b"load" | b"save" => Reply::error(
            "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.",
        ),
        _ => Reply::Array(HELP.iter().map(|l| Reply::simple(l)).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: KeyAccess = KeyAccess::READ;
    const W: KeyAccess = KeyAccess::WRITE;
    const RW: KeyAccess = KeyAccess::READ_WRITE;

    fn copy_keys(_: &[Bytes]) -> Vec<(usize, KeyAccess)> {
        vec![(1, R), (2, W)]
    }

    static CATALOG: &[CatalogEntry] = &[
        CatalogEntry::new("get", &["@read", "@string", "@fast"], 2).key_range(1, 1, 1, R),
        CatalogEntry::new("set", &["@write", "@string", "@slow"], -3).key_range(1, 1, 1, W),
        CatalogEntry::new("incr", &["@write", "@string", "@fast"], 2).key_range(1, 1, 1, RW),
        CatalogEntry::new("mget", &["@read", "@string", "@fast"], -2).key_range(1, -1, 1, R),
        CatalogEntry::new("mset", &["@write", "@string", "@slow"], -3).key_range(1, -1, 2, W),
        CatalogEntry::new("exists", &["@keyspace", "@read", "@fast"], -2).key_range(
            1,
            -1,
            1,
            KeyAccess::META,
        ),
        CatalogEntry::new("copy", &["@keyspace", "@write", "@slow"], -3)
            .keys(KeySpec::Custom(copy_keys)),
        CatalogEntry::new(
            "flushall",
            &["@keyspace", "@write", "@slow", "@dangerous"],
            -1,
        ),
        CatalogEntry::new("keys", &["@keyspace", "@read", "@slow", "@dangerous"], 2),
        CatalogEntry::new("select", &["@fast", "@connection"], 2),
        CatalogEntry::new("auth", &["@fast", "@connection"], -2).no_auth(),
        CatalogEntry::new("config", &["@slow"], -2),
        CatalogEntry::new("config|get", &["@admin", "@slow", "@dangerous"], -3),
        CatalogEntry::new("config|set", &["@admin", "@slow", "@dangerous"], -4),
    ];

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn args(s: &str) -> Vec<Bytes> {
        s.split(' ').map(b).collect()
    }

    fn acl() -> RwLock<Acl> {
        RwLock::new(Acl::new(CATALOG, None))
    }

    fn run(acl: &RwLock<Acl>, line: &str) -> Reply {
        acl_command(acl, b"default", &args(line))
    }

    fn list_line(acl: &RwLock<Acl>, name: &str) -> String {
        let u = acl.read().user(name.as_bytes()).expect("user");
        String::from_utf8(u.describe()).expect("utf8")
    }

    #[test]
    fn default_user() {
        let a = acl();
        assert_eq!(list_line(&a, "default"), "on nopass ~* &* +@all");
        assert!(!a.read().default_user_needs_auth());
        a.write().set_requirepass(Some(b"pw"));
        assert!(a.read().default_user_needs_auth());
        let h = String::from_utf8(hex(&sha256(b"pw"))).expect("hex");
        assert_eq!(list_line(&a, "default"), format!("on #{h} ~* &* +@all"));
        assert!(a.read().authenticate_default(b"pw").is_ok());
        assert_eq!(
            a.read().authenticate_default(b"no").map(|_| ()),
            Err(AuthError::WrongPass)
        );
        a.write().set_requirepass(Some(b""));
        assert_eq!(
            a.read().authenticate_default(b"x").map(|_| ()),
            Err(AuthError::NoDefaultPassword)
        );
    }

    #[test]
    fn describe_rules() {
        let a = acl();
        assert_eq!(run(&a, "ACL SETUSER u"), Reply::simple("OK"));
        assert_eq!(list_line(&a, "u"), "off resetchannels -@all");
        run(&a, "ACL SETUSER u reset");
        assert_eq!(
            list_line(&a, "u"),
            "off sanitize-payload resetchannels -@all"
        );
        run(
            &a,
            "ACL SETUSER v on ~a* %R~b* %W~c* %R~d* %W~d* &ch +@read -get +config|get",
        );
        assert_eq!(
            list_line(&a, "v"),
            "on ~a* %R~b* %W~c* ~d* resetchannels &ch -@all +@read +config|get -get"
        );
        run(&a, "ACL SETUSER w +@all -config|set -flushall");
        assert_eq!(
            list_line(&a, "w"),
            "off resetchannels +@all -config|set -flushall"
        );
        run(&a, "ACL SETUSER x +select|0 +select|1 +SELECT|0");
        assert_eq!(
            list_line(&a, "x"),
            "off resetchannels -@all +select|0 +select|1"
        );
        run(&a, "ACL SETUSER x -select");
        assert_eq!(list_line(&a, "x"), "off resetchannels -@all");
        // `+@slow` reaches every subcommand through the container.
        run(&a, "ACL SETUSER y +@slow");
        let y = a.read().user(b"y").expect("y");
        assert!(y.check("config|get", &args("config get x")).is_ok());
        run(&a, "ACL SETUSER z (~a +get) (%R~b +set)");
        assert_eq!(
            list_line(&a, "z"),
            "off resetchannels -@all (~a resetchannels -@all +get) (%R~b resetchannels -@all +set)"
        );
    }

    #[test]
    fn errors_and_atomicity() {
        let a = acl();
        run(&a, "ACL SETUSER u on");
        let e = run(&a, "ACL SETUSER u off +nosuch");
        assert_eq!(
            e,
            Reply::error("ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL")
        );
        assert!(a.read().user(b"u").expect("u").enabled());
        assert!(matches!(run(&a, "ACL SETUSER u ~* ~x"), Reply::Error(_)));
        assert_eq!(
            run(&a, "ACL SETUSER u (~a +get"),
            Reply::error("ERR Unmatched parenthesis in acl selector starting at '(~a'.")
        );
        assert_eq!(
            run(&a, "ACL SETUSER u +config|get|x"),
            Reply::error("ERR Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is not supported")
        );
        assert_eq!(
            run(&a, "ACL DELUSER u default"),
            Reply::error("ERR The 'default' user cannot be removed")
        );
        assert_eq!(run(&a, "ACL DELUSER u u nobody"), Reply::Integer(1));
        assert_eq!(
            acl_command(&a, b"default", &[b("ACL"), b("SETUSER"), b("a b")]),
            Reply::error("ERR Usernames can't contain spaces or null characters")
        );
    }

    #[test]
    fn checks() {
        let a = acl();
        run(&a, "ACL SETUSER u on >pw %R~r* %W~w* ~b* +@all -flushall");
        let u = a.read().authenticate(b"u", b"pw").expect("auth");
        assert!(u.check("get", &args("get r1")).is_ok());
        assert_eq!(u.check("get", &args("get w1")), Err(Denied::Key(b("w1"))));
        assert!(u.check("set", &args("set w1 v")).is_ok());
        assert!(u.check("incr", &args("incr b1")).is_ok());
        assert!(u.check("incr", &args("incr w1")).is_err());
        assert!(u.check("exists", &args("exists r1 w1")).is_ok());
        assert!(u.check("copy", &args("copy r1 w1")).is_ok());
        assert_eq!(
            u.check("copy", &args("copy w1 r1")),
            Err(Denied::Key(b("w1")))
        );
        assert_eq!(
            u.check("mget", &args("mget r1 w1 w2")),
            Err(Denied::Key(b("w1")))
        );
        let d = u.check("flushall", &args("flushall")).expect_err("denied");
        assert_eq!(
            d.to_reply(),
            Reply::error("NOPERM this user has no permissions to run the 'flushall' command")
        );
        assert_eq!(
            Denied::Key(b("k")).to_reply(),
            Reply::error(
                "NOPERM this user has no permissions to access one of the keys used as arguments"
            )
        );
        assert!(a.read().authenticate(b"u", b"bad").is_err());
        assert!(a.read().authenticate(b"nobody", b"pw").is_err());
        run(&a, "ACL SETUSER u off");
        assert!(a.read().authenticate(b"u", b"pw").is_err());
        // A refreshed snapshot sees the change; a deleted user is gone for good.
        let now = a.read().refresh(&u).expect("still there");
        assert!(!now.enabled());
        run(&a, "ACL DELUSER u");
        run(&a, "ACL SETUSER u on");
        assert!(a.read().refresh(&u).is_none());
    }

    #[test]
    fn dryrun() {
        let a = acl();
        run(
            &a,
            "ACL SETUSER u on nopass ~foo* +get +config|get +select|0",
        );
        let t = |s: &str| Reply::bulk(s);
        assert_eq!(run(&a, "ACL DRYRUN u get foo1"), Reply::simple("OK"));
        assert_eq!(
            run(&a, "ACL DRYRUN u get bar"),
            t("This user has no permissions to access the 'bar' key")
        );
        assert_eq!(
            run(&a, "ACL DRYRUN u set foo v"),
            t("This user has no permissions to run the 'set' command")
        );
        assert_eq!(
            run(&a, "ACL DRYRUN u config set a b"),
            t("This user has no permissions to run the 'config|set' command")
        );
        assert_eq!(run(&a, "ACL DRYRUN u config get a"), Reply::simple("OK"));
        assert_eq!(run(&a, "ACL DRYRUN u select 0"), Reply::simple("OK"));
        assert_eq!(run(&a, "ACL DRYRUN u auth x"), Reply::simple("OK"));
        assert_eq!(
            run(&a, "ACL DRYRUN u config"),
            Reply::error("ERR wrong number of arguments for 'config' command")
        );
        assert_eq!(
            run(&a, "ACL DRYRUN u config nosuch"),
            Reply::error("ERR Command 'config' not found")
        );
        assert_eq!(
            run(&a, "ACL DRYRUN u NOSUCH"),
            Reply::error("ERR Command 'NOSUCH' not found")
        );
        assert_eq!(
            run(&a, "ACL DRYRUN x get a"),
            Reply::error("ERR User 'x' not found")
        );
        assert_eq!(
            run(&a, "ACL DRYRUN u"),
            Reply::error("ERR wrong number of arguments for 'acl|dryrun' command")
        );
    }

    #[test]
    fn misc_subcommands() {
        let a = acl();
        assert_eq!(run(&a, "ACL WHOAMI"), Reply::bulk("default"));
        assert!(matches!(run(&a, "ACL GENPASS"), Reply::Bulk(p) if p.len() == 64));
        assert!(matches!(run(&a, "ACL GENPASS 5"), Reply::Bulk(p) if p.len() == 2));
        assert!(matches!(run(&a, "ACL GENPASS 0"), Reply::Error(_)));
        assert_eq!(run(&a, "ACL GETUSER nobody"), Reply::Null);
        assert_eq!(
            run(&a, "ACL CAT nosuch"),
            Reply::error("ERR Unknown category 'nosuch'")
        );
        assert_eq!(
            run(&a, "ACL CAT dangerous"),
            Reply::Array(vec![
                Reply::bulk("config|get"),
                Reply::bulk("config|set"),
                Reply::bulk("flushall"),
                Reply::bulk("keys")
            ])
        );
        assert_eq!(
            run(&a, "acl foo"),
            Reply::error("ERR unknown subcommand 'foo'. Try ACL HELP.")
        );
        assert!(matches!(run(&a, "ACL HELP"), Reply::Array(_)));
    }

    #[test]
    fn config_lines() {
        let (name, rules) =
            parse_user_line("user app on >secret ~features:* +@read \"+@write\"").expect("line");
        assert_eq!(name, "app");
        assert_eq!(rules, ["on", ">secret", "~features:*", "+@read", "+@write"]);
        assert!(parse_user_line("user").is_err());
        assert!(parse_user_line("usr x").is_err());
        assert!(parse_user_line("user x \"on").is_err());
        let h = String::from_utf8(hex(&sha256(b"secret"))).expect("hex");
        let a = acl();
        let users = vec![
            parse_user_spec(&format!("app on #{h} ~f:* +@read")).expect("spec"),
            parse_user_spec("default on nopass ~* +@all").expect("spec"),
        ];
        a.write().load_users(&users).expect("load");
        assert!(a.read().authenticate(b"app", b"secret").is_ok());
        assert_eq!(
            list_line(&a, "app"),
            format!("on #{h} ~f:* resetchannels -@all +@read")
        );
        assert_eq!(
            list_line(&a, "default"),
            "on nopass sanitize-payload ~* resetchannels +@all"
        );
        let dup = vec![users[0].clone(), users[0].clone()];
        assert!(matches!(
            a.write().load_users(&dup),
            Err(AclError::DuplicateUser { .. })
        ));
    }

    #[test]
    fn split_args_like_redis() {
        let v = split_args(b" a \"b c\" 'd\\'e' \"\\x41\\n\"").expect("split");
        assert_eq!(
            v,
            vec![
                b"a".to_vec(),
                b"b c".to_vec(),
                b"d'e".to_vec(),
                b"A\n".to_vec()
            ]
        );
        assert!(split_args(b"\"a\"b").is_none());
        assert!(split_args(b"'a").is_none());
    }

    const VOCAB: &[&str] = &[
        "on",
        "off",
        "nopass",
        "resetpass",
        ">pw",
        "<pw",
        ">x",
        "reset",
        "allkeys",
        "resetkeys",
        "~a*",
        "%R~b*",
        "%W~a*",
        "%RW~*",
        "~*",
        "&*",
        "&c",
        "resetchannels",
        "allchannels",
        "+@all",
        "-@all",
        "+@read",
        "-@write",
        "+@string",
        "-@dangerous",
        "+@slow",
        "+get",
        "-get",
        "+config",
        "-config|set",
        "+config|get",
        "+select|0",
        "+select|1",
        "-select",
        "+@fast",
        "(~x +set)",
        "(",
        "+get)",
        "clearselectors",
        "sanitize-payload",
        "skip-sanitize-payload",
        "+flushall",
        "-@keyspace",
        "+auth",
        "+copy",
        "%r~r",
    ];

    fn rule() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        prop_oneof![
            4 => proptest::sample::select(VOCAB).prop_map(|s| s.as_bytes().to_vec()),
            // Random bytes, minus those that split or quote rules when printed and reloaded
            // (Redis has the same limits).
            1 => proptest::collection::vec(any::<u8>(), 0..6).prop_map(|mut v| {
                for b in &mut v {
                    if is_c_space(*b) || b"\"'()\0".contains(b) {
                        *b = b'_';
                    }
                }
                v
            }),
        ]
    }

    proptest::proptest! {
        /// Any rules: no panic, all-or-nothing, and what we print loads back to the same
        /// permissions.
        #[test]
        fn rules_roundtrip(rules in proptest::collection::vec(rule(), 0..8)) {
            let mut acl = Acl::new(CATALOG, None);
            let refs: Vec<&[u8]> = rules.iter().map(|r| r.as_slice()).collect();
            if acl.set_user(b"u", &refs).is_err() {
                proptest::prop_assert!(acl.user(b"u").is_none());
                return Ok(());
            }
            let u = acl.user(b"u").expect("created");
            let text = u.describe();
            let again: Vec<&[u8]> = text.split(|&b| b == b' ').collect();
            // Redis prints a `%RW~*` pattern as `~*`, which then loads as allkeys: such users
            // do not round-trip, in Redis as here.
            let rw_star = std::iter::once(&u.root)
                .chain(&u.selectors)
                .any(|s| s.keys.iter().any(|k| k.pattern == b"*" && k.read && k.write));
            if !rw_star {
                acl.set_user(b"v", &again).expect("reload");
                let v = acl.user(b"v").expect("v");
                proptest::prop_assert_eq!(v.describe(), text);
                for line in ["get a1", "set x v", "config get x", "config set x y", "select 0",
                             "flushall", "copy r a", "mget a b", "auth x"] {
                    let a = args(line);
                    let name = if a[0] == "config" { format!("config|{}", std::str::from_utf8(&a[1]).unwrap_or("")) } else { line.split(' ').next().unwrap_or("").to_string() };
                    proptest::prop_assert_eq!(u.check(&name, &a), v.check(&name, &a));
                }
            }
        }

        #[test]
        fn acl_command_never_panics(a in proptest::collection::vec(rule(), 0..6), sub in proptest::sample::select(&["setuser", "getuser", "deluser", "dryrun", "cat", "genpass", "log", "list", "users", "whoami", "help", "x"][..])) {
            let acl = RwLock::new(Acl::new(CATALOG, None));
            let mut args = vec![b("ACL"), b(sub)];
            args.extend(a.into_iter().map(Bytes::from));
            let _ = acl_command(&acl, b"default", &args);
        }
    }

    #[test]
    fn shareable_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Acl>();
        send_sync::<Arc<User>>();
    }

    #[test]
    fn parse_long_strict() {
        assert_eq!(parse_long(b"12"), Some(12));
        assert_eq!(parse_long(b"-3"), Some(-3));
        assert_eq!(parse_long(b"0"), Some(0));
        for bad in [
            &b"01"[..],
            b"+1",
            b" 1",
            b"",
            b"-",
            b"-0",
            b"99999999999999999999",
        ] {
            assert_eq!(parse_long(bad), None, "{bad:?}");
        }
    }
}
