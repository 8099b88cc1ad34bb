//! ACL users: each user's passwords (as SHA-256 digests) and selectors, the checks of a
//! command against them, and the user table with authentication.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use rialto_resp::Reply;

use super::catalog::Catalog;
use super::rules::{
    hex, merge_selector_args, sha256, split_args, valid_username, AclError, RuleError,
    SelectorRule, UserRule,
};
use super::selectors::{KeyAccess, Refusal, Selector};
use crate::command_table::{keys_with_flags, CommandSpec};

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
    /// A channel argument of PUBLISH or the subscribe family.
    Channel(Bytes),
}

impl Denied {
    /// `NOPERM this user has no permissions to ...`.
    pub fn to_reply(&self) -> Reply {
        Reply::Error(Bytes::from(self.to_string()))
    }

    /// Why, as EXEC words it when a queued command is no longer allowed.
    pub fn reason(&self) -> &'static str {
        match self {
            Denied::Command(_) => "no permission to execute the command or subcommand",
            Denied::Key(_) => "no permission to touch the specified keys",
            Denied::Channel(_) => "no permission to access one of the channels used as arguments",
        }
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
            Denied::Channel(c) => {
                let mut t = b"This user has no permissions to access the '".to_vec();
                t.extend_from_slice(c);
                t.extend_from_slice(b"' channel");
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
            Denied::Channel(_) => f.write_str(
                "NOPERM this user has no permissions to access one of the channels used as arguments",
            ),
        }
    }
}

impl std::error::Error for Denied {}

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
    pub(super) root: Selector,
    pub(super) selectors: Vec<Selector>,
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

/// Compares digests without an early exit, so timing does not reveal a common prefix.
fn digest_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl User {
    /// Whether the user may run every command on every key and channel with any arguments
    /// (the default user without restrictions): the per-request check can then be skipped.
    pub fn unrestricted(&self) -> bool {
        let r = &self.root;
        let n = self.catalog.cmds.len();
        let all_cmds = r.future
            && (0..n).all(|i| {
                r.allowed
                    .get(i / 64)
                    .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
            });
        all_cmds && r.first_args.is_empty() && r.all_keys && r.all_channels
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
    /// `args` with the command name first)? Keys are found as the command's declaration says.
    pub fn check(&self, cmd: &str, args: &[Bytes]) -> Result<(), Denied> {
        self.with_parts(cmd, args, |idx, first_arg, keys, channels| {
            self.check_parts(cmd, idx, first_arg, keys, channels)
        })
    }

    /// Redis's `ACLUserCheckCmdWithUnrestrictedKeyAccess` for reads: whether a selector that
    /// allows this request may also read every key (`allkeys`, or a `*` pattern with read
    /// access). SORT's BY and GET patterns read keys no key spec names, so they need it.
    pub fn reads_every_key(&self, cmd: &str, args: &[Bytes]) -> bool {
        self.with_parts(cmd, args, |idx, first_arg, keys, channels| {
            std::iter::once(&self.root).chain(&self.selectors).any(|s| {
                s.check(&self.catalog, idx, first_arg, keys, channels)
                    .is_ok()
                    && s.reads_every_key()
            })
        })
    }

    /// Runs `f` on what a request's check looks at: the command's index, its first argument,
    /// its keys (position, key, access) and channels (position, channel, is a pattern).
    fn with_parts<R>(
        &self,
        cmd: &str,
        args: &[Bytes],
        f: impl FnOnce(
            Option<usize>,
            Option<&[u8]>,
            &[(usize, &[u8], KeyAccess)],
            &[(usize, &[u8], bool)],
        ) -> R,
    ) -> R {
        let idx = self.catalog.lookup(cmd.as_bytes());
        // Finding keys can cost; skip it when every selector allows all keys.
        let need_keys = std::iter::once(&self.root)
            .chain(&self.selectors)
            .any(|s| !s.all_keys);
        let found = match idx {
            Some(i) if need_keys => keys_with_flags(self.catalog.cmds[i].spec, args),
            _ => Vec::new(),
        };
        let keys: Vec<(usize, &[u8], KeyAccess)> = found
            .into_iter()
            // Shard channels are declared as keys that are not keys: never checked as keys.
            .filter(|k| !k.flags.contains(&"not_key"))
            .filter_map(|k| {
                args.get(k.pos)
                    .map(|a| (k.pos, &a[..], KeyAccess::of(k.flags)))
            })
            .collect();
        let first_arg = self.first_arg_of(idx, args);
        let need_channels = std::iter::once(&self.root)
            .chain(&self.selectors)
            .any(|s| !s.all_channels);
        let channels = if need_channels {
            channels_of(cmd, args)
        } else {
            Vec::new()
        };
        f(idx, first_arg, &keys, &channels)
    }

    /// Whether any selector allows `channel` (a pattern subscription when `is_pattern`),
    /// Redis's `ACLUserCheckChannelPerm`.
    pub fn channel_allowed(&self, channel: &[u8], is_pattern: bool) -> bool {
        std::iter::once(&self.root)
            .chain(&self.selectors)
            .any(|s| s.channel_allowed(channel, is_pattern))
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
        channels: &[(usize, &[u8], bool)],
    ) -> Result<(), Denied> {
        let cat = &self.catalog;
        let mut worst: Refusal = (1, 0);
        for sel in std::iter::once(&self.root).chain(&self.selectors) {
            match sel.check(cat, idx, first_arg, keys, channels) {
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
        if worst.0 == 4 {
            if let Some(&(_, c, _)) = channels.iter().find(|c| c.0 == worst.1) {
                return Err(Denied::Channel(Bytes::copy_from_slice(c)));
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
        match UserRule::parse(op)? {
            UserRule::Nothing => {}
            UserRule::On => self.enabled = true,
            UserRule::Off => self.enabled = false,
            UserRule::SkipSanitizePayload => self.sanitize = Sanitize::Skip,
            UserRule::SanitizePayload => self.sanitize = Sanitize::Always,
            UserRule::NoPass => {
                self.nopass = true;
                self.passwords.clear();
            }
            UserRule::ResetPass => {
                self.nopass = false;
                self.passwords.clear();
            }
            UserRule::AddPassword(h) => {
                if !self.passwords.contains(&h) {
                    self.passwords.push(h);
                }
                self.nopass = false;
            }
            UserRule::RemovePassword(h) => {
                let at = self.passwords.iter().position(|p| *p == h);
                self.passwords.remove(at.ok_or(RuleError::NoSuchPassword)?);
            }
            UserRule::Selector(inside) => {
                let mut sel = Selector::new(&self.catalog);
                // Redis splits the inside like a config line; on unbalanced quotes it gets no
                // rules and adds an empty selector.
                for rule in split_args(inside).unwrap_or_default() {
                    sel.apply(&self.catalog, SelectorRule::parse(&rule)?)?;
                }
                self.selectors.push(sel);
            }
            UserRule::ClearSelectors => self.selectors.clear(),
            UserRule::Reset => {
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
            }
            UserRule::Root(rule) => {
                let cat = Arc::clone(&self.catalog);
                self.root.apply(&cat, rule)?;
            }
        }
        Ok(())
    }

    /// The rules that recreate this user, as `ACL LIST` prints them after `user <name> `.
    pub fn describe(&self) -> Vec<u8> {
        self.describe_with(true)
    }

    /// The rules that recreate this user's permissions, without its passwords: what another
    /// node needs to check commands as this user (a replicated script's calls).
    pub fn describe_permissions(&self) -> Vec<u8> {
        self.describe_with(false)
    }

    fn describe_with(&self, passwords: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for f in self.flags() {
            out.extend_from_slice(f.as_bytes());
            out.push(b' ');
        }
        for p in self.passwords.iter().filter(|_| passwords) {
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

    /// What `ACL GETUSER` answers for the user.
    pub fn getuser_reply(&self) -> Reply {
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
    /// `commands` are those rules may name: the server's declarations.
    pub fn new(commands: &'static [CommandSpec], requirepass: Option<&[u8]>) -> Acl {
        let catalog = Arc::new(Catalog::new(commands));
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

    /// The names of every user, in name order.
    pub fn user_names(&self) -> Vec<&[u8]> {
        self.users.keys().map(|n| &n[..]).collect()
    }

    /// The command a command line runs among those the ACL knows, as `ACL DRYRUN` resolves it;
    /// `None` if there is no such command.
    pub fn command(&self, args: &[Bytes]) -> Option<&'static CommandSpec> {
        self.catalog.resolve(args)
    }
}

/// The channels a request publishes or subscribes to, as Redis 7.0 checks them: (position,
/// channel, is a pattern). The unsubscribe family is never checked.
fn channels_of<'a>(cmd: &str, args: &'a [Bytes]) -> Vec<(usize, &'a [u8], bool)> {
    let all = |pattern: bool| {
        args.iter()
            .enumerate()
            .skip(1)
            .map(|(i, a)| (i, &a[..], pattern))
            .collect()
    };
    match cmd {
        "publish" | "spublish" => args
            .get(1)
            .map(|c| vec![(1, &c[..], false)])
            .unwrap_or_default(),
        "subscribe" | "ssubscribe" => all(false),
        "psubscribe" => all(true),
        _ => Vec::new(),
    }
}
