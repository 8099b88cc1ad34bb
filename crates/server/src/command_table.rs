//! Static metadata of every command Rialto implements, as Redis 7.0 reports it in `COMMAND INFO`
//! and `COMMAND DOCS`.
//!
//! Cluster clients (redis-py's `RedisCluster`, Jedis, Lettuce) route requests with the key
//! positions and flags published here, and ACL checks and `COMMAND GETKEYS` use the same key
//! specifications, so arity, flags, key specs, ACL categories, tips and argument structure are
//! Redis 7.0's (`CLIENT SETINFO`, which 7.0 lacks, has 7.2's). The prose of the docs (summaries,
//! complexities, history entries, key-spec notes) is our own wording.

use bytes::Bytes;

/// One variant per top-level command; subcommands share their parent's. Declared in the order of
/// the table (checked by a test), so that [`CmdId::spec`] is an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmdId {
    Ping,
    Echo,
    Hello,
    Auth,
    Select,
    Quit,
    Reset,
    Client,
    Get,
    Set,
    SetNx,
    SetEx,
    PSetEx,
    GetSet,
    GetDel,
    GetEx,
    MGet,
    MSet,
    MSetNx,
    Del,
    Unlink,
    Exists,
    Type,
    StrLen,
    Append,
    GetRange,
    SetRange,
    Incr,
    Decr,
    IncrBy,
    DecrBy,
    IncrByFloat,
    Expire,
    PExpire,
    ExpireAt,
    PExpireAt,
    ExpireTime,
    PExpireTime,
    Ttl,
    PTtl,
    Persist,
    Scan,
    Keys,
    DbSize,
    RandomKey,
    Rename,
    RenameNx,
    FlushDb,
    FlushAll,
    Info,
    Config,
    Command,
    Time,
    SlowLog,
    Shutdown,
    Acl,
    Cluster,
    ReadOnly,
    ReadWrite,
    SubStr,
    Store,
    Push,
}

impl CmdId {
    /// The top-level command's entry.
    pub fn spec(self) -> &'static CommandSpec {
        &table::TABLE[self as usize]
    }
}

/// A command or subcommand as `COMMAND INFO` and `COMMAND DOCS` describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    pub id: CmdId,
    /// Lowercase; a subcommand's is `parent|sub`, e.g. `client|setname`.
    pub name: &'static str,
    /// The exact argument count including the name(s), or its negation for "at least".
    pub arity: i32,
    /// Command flags as Redis prints them (`write`, `readonly`, `fast`, `noscript`...).
    pub flags: &'static [&'static str],
    /// The legacy (pre-7.0) key range: first, last (negative counts from the end), step.
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    /// With the `@`, as Redis prints them.
    pub acl_categories: &'static [&'static str],
    /// Command tips (`request_policy:...`, `nondeterministic_output`...).
    pub tips: &'static [&'static str],
    pub key_specs: &'static [KeySpec],
    pub subcommands: &'static [CommandSpec],
    pub docs: Docs,
}

impl CommandSpec {
    /// Whether the command has this flag, e.g. `"write"`.
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }
}

/// A Redis 7 key specification: where a command's keys are and how it uses them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    /// Free text explaining unusual flags.
    pub notes: Option<&'static str>,
    /// As Redis prints them: one of `RO`/`RW`/`OW`/`RM`, then `access`, `update`, `insert`,
    /// `delete`, `not_key`, `incomplete`, `variable_flags` as they apply.
    pub flags: &'static [&'static str],
    pub begin_search: BeginSearch,
    pub find_keys: FindKeys,
}

/// Where the search for a key spec's keys starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeginSearch {
    /// At this argument index.
    Index(i32),
    /// Just after `keyword`, looked for from index `startfrom` forwards, or backwards from the
    /// end when `startfrom` is negative.
    Keyword {
        keyword: &'static str,
        startfrom: i32,
    },
    Unknown,
}

/// How a key spec's keys follow its starting point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindKeys {
    /// Keys from the start to `lastkey` (relative to the start; negative counts from the end,
    /// -1 being the last argument), every `keystep`. With a negative `lastkey` and a nonzero
    /// `limit`, only the first 1/`limit` of the remaining arguments.
    Range {
        lastkey: i32,
        keystep: i32,
        limit: i32,
    },
    /// The argument at `keynumidx` (relative to the start) holds the number of keys, which begin
    /// at `firstkey` (relative to the start), every `keystep`.
    Keynum {
        keynumidx: i32,
        firstkey: i32,
        keystep: i32,
    },
    Unknown,
}

/// What `COMMAND DOCS` reports for a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Docs {
    pub summary: &'static str,
    /// The Redis version that introduced the command.
    pub since: &'static str,
    /// `connection`, `string`, `generic`, `server`, `cluster`...
    pub group: &'static str,
    pub complexity: &'static str,
    /// E.g. `deprecated`.
    pub doc_flags: &'static [&'static str],
    pub deprecated_since: Option<&'static str>,
    pub replaced_by: Option<&'static str>,
    /// (version, what changed).
    pub history: &'static [(&'static str, &'static str)],
    pub arguments: &'static [Arg],
}

/// One argument in `COMMAND DOCS`; `oneof` and `block` arguments nest others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arg {
    pub name: &'static str,
    pub kind: ArgType,
    /// For a key argument, the index of its key spec.
    pub key_spec_index: Option<u32>,
    pub token: Option<&'static str>,
    pub since: Option<&'static str>,
    pub deprecated_since: Option<&'static str>,
    pub flags: ArgFlags,
    pub arguments: &'static [Arg],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArgType {
    String,
    Integer,
    Double,
    Key,
    Pattern,
    UnixTime,
    PureToken,
    OneOf,
    Block,
}

impl ArgType {
    /// The name `COMMAND DOCS` gives the type.
    pub fn as_str(self) -> &'static str {
        match self {
            ArgType::String => "string",
            ArgType::Integer => "integer",
            ArgType::Double => "double",
            ArgType::Key => "key",
            ArgType::Pattern => "pattern",
            ArgType::UnixTime => "unix-time",
            ArgType::PureToken => "pure-token",
            ArgType::OneOf => "oneof",
            ArgType::Block => "block",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ArgFlags {
    pub optional: bool,
    pub multiple: bool,
    /// The token repeats before every value (`MATCH a MATCH b`), not just once.
    pub multiple_token: bool,
}

impl ArgFlags {
    /// The set flags by the names `COMMAND DOCS` gives them, in its order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        [
            (self.optional, "optional"),
            (self.multiple, "multiple"),
            (self.multiple_token, "multiple_token"),
        ]
        .into_iter()
        .filter_map(|(set, name)| set.then_some(name))
    }

    pub fn is_empty(self) -> bool {
        self == ArgFlags::default()
    }
}

/// Every top-level command, subcommands nested in their parents.
pub fn all() -> &'static [CommandSpec] {
    &table::TABLE
}

/// The top-level command named `name`, in any case.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    // Lowercase into a stack buffer so that the match below compiles to a length switch; no
    // command name is longer than the buffer.
    let mut buf = [0u8; 16];
    let lower = buf.get_mut(..name.len())?;
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    use CmdId::*;
    let id = match &*lower {
        b"ping" => Ping,
        b"echo" => Echo,
        b"hello" => Hello,
        b"auth" => Auth,
        b"select" => Select,
        b"quit" => Quit,
        b"reset" => Reset,
        b"client" => Client,
        b"get" => Get,
        b"set" => Set,
        b"setnx" => SetNx,
        b"setex" => SetEx,
        b"psetex" => PSetEx,
        b"getset" => GetSet,
        b"getdel" => GetDel,
        b"getex" => GetEx,
        b"mget" => MGet,
        b"mset" => MSet,
        b"msetnx" => MSetNx,
        b"del" => Del,
        b"unlink" => Unlink,
        b"exists" => Exists,
        b"type" => Type,
        b"strlen" => StrLen,
        b"append" => Append,
        b"getrange" => GetRange,
        b"setrange" => SetRange,
        b"incr" => Incr,
        b"decr" => Decr,
        b"incrby" => IncrBy,
        b"decrby" => DecrBy,
        b"incrbyfloat" => IncrByFloat,
        b"expire" => Expire,
        b"pexpire" => PExpire,
        b"expireat" => ExpireAt,
        b"pexpireat" => PExpireAt,
        b"expiretime" => ExpireTime,
        b"pexpiretime" => PExpireTime,
        b"ttl" => Ttl,
        b"pttl" => PTtl,
        b"persist" => Persist,
        b"scan" => Scan,
        b"keys" => Keys,
        b"dbsize" => DbSize,
        b"randomkey" => RandomKey,
        b"rename" => Rename,
        b"renamenx" => RenameNx,
        b"flushdb" => FlushDb,
        b"flushall" => FlushAll,
        b"info" => Info,
        b"config" => Config,
        b"command" => Command,
        b"time" => Time,
        b"slowlog" => SlowLog,
        b"shutdown" => Shutdown,
        b"acl" => Acl,
        b"cluster" => Cluster,
        b"readonly" => ReadOnly,
        b"readwrite" => ReadWrite,
        b"substr" => SubStr,
        b"store" => Store,
        b"push" => Push,
        _ => return None,
    };
    Some(id.spec())
}

/// The subcommand `sub` (in any case) of `parent`.
pub fn lookup_sub(parent: &'static CommandSpec, sub: &[u8]) -> Option<&'static CommandSpec> {
    let prefix = parent.name.len() + 1;
    parent.subcommands.iter().find(|s| {
        s.name
            .as_bytes()
            .get(prefix..)
            .is_some_and(|n| n.eq_ignore_ascii_case(sub))
    })
}

/// The command a request invokes, as Redis resolves it: the top-level command, or for a
/// container with at least two arguments, its subcommand `args[1]`.
pub fn lookup_command(args: &[Bytes]) -> Option<&'static CommandSpec> {
    let base = lookup(args.first()?)?;
    match args.get(1) {
        Some(sub) if !base.subcommands.is_empty() => lookup_sub(base, sub),
        _ => Some(base),
    }
}

/// The command or subcommand with this full name (`get`, `client|kill`), in any case, as
/// `COMMAND INFO`, `COMMAND DOCS` and ACL rules name them. A `|` after a command without
/// subcommands, or a second `|`, names nothing.
pub fn lookup_fullname(name: &[u8]) -> Option<&'static CommandSpec> {
    match name.iter().position(|&b| b == b'|') {
        None => lookup(name),
        Some(bar) => {
            let (base, sub) = (name.get(..bar)?, name.get(bar + 1..)?);
            if sub.contains(&b'|') {
                return None;
            }
            lookup_sub(lookup(base)?, sub)
        }
    }
}

/// Whether `argc` arguments (the name(s) included) suit the command's arity.
pub fn check_arity(spec: &CommandSpec, argc: usize) -> bool {
    let n = spec.arity.unsigned_abs() as usize;
    if spec.arity >= 0 {
        argc == n
    } else {
        argc >= n
    }
}

/// A key found in a request: its index in the arguments and its key-spec flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRef {
    pub pos: usize,
    pub flags: &'static [&'static str],
}

/// The indexes into `args` (`args[0]` being the command name) of every key of the request, in
/// key-spec order, as Redis 7.0 finds them for ACL checks, `COMMAND GETKEYS` and cluster
/// routing. Arguments that do not fit a key spec yield no keys at all, as in Redis.
pub fn key_positions(spec: &CommandSpec, args: &[Bytes]) -> Vec<usize> {
    let mut out = Vec::new();
    if !find_keys(spec, args, |pos, _| out.push(pos)) {
        out.clear();
    }
    out
}

/// [`key_positions`] with each key's flags, as `COMMAND GETKEYSANDFLAGS` reports them. For a
/// command whose spec has `variable_flags` the flags depend on the arguments.
pub fn keys_with_flags(spec: &CommandSpec, args: &[Bytes]) -> Vec<KeyRef> {
    let mut out = Vec::new();
    if !find_keys(spec, args, |pos, flags| out.push(KeyRef { pos, flags })) {
        out.clear();
    }
    if spec
        .key_specs
        .iter()
        .any(|k| k.flags.contains(&"variable_flags"))
    {
        let flags = variable_flags(spec, args);
        out.iter_mut().for_each(|k| k.flags = flags);
    }
    out
}

/// The real flags of a key whose spec says `variable_flags`.
fn variable_flags(spec: &CommandSpec, args: &[Bytes]) -> &'static [&'static str] {
    match spec.id {
        // SET reads the old value only with GET (options start after key and value).
        CmdId::Set
            if args
                .get(3..)
                .is_some_and(|opts| opts.iter().any(|a| a.eq_ignore_ascii_case(b"get"))) =>
        {
            &["RW", "access", "update"]
        }
        CmdId::Set => &["OW", "update"],
        _ => spec.key_specs.first().map_or(&[], |k| k.flags),
    }
}

/// Calls `found` for every key the specs locate; false if a spec does not fit the arguments,
/// in which case Redis reports no keys.
fn find_keys(
    spec: &CommandSpec,
    args: &[Bytes],
    mut found: impl FnMut(usize, &'static [&'static str]),
) -> bool {
    // Signed arithmetic as in Redis: relative positions may be negative.
    let argc = i64::try_from(args.len()).unwrap_or(i64::MAX);
    for ks in spec.key_specs {
        let first = match ks.begin_search {
            BeginSearch::Index(i) => i64::from(i),
            BeginSearch::Keyword { keyword, startfrom } => {
                match keyword_start(args, argc, keyword, i64::from(startfrom)) {
                    Some(first) => first,
                    // An absent keyword means no keys from this spec, not an error.
                    None => continue,
                }
            }
            BeginSearch::Unknown => return false,
        };
        let (first, last, step) = match ks.find_keys {
            FindKeys::Range {
                lastkey,
                keystep,
                limit,
            } => {
                let (lastkey, limit) = (i64::from(lastkey), i64::from(limit));
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (first, last, i64::from(keystep))
            }
            FindKeys::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                let Some(numkeys) = usize::try_from(first + i64::from(keynumidx))
                    .ok()
                    .and_then(|i| args.get(i))
                    .and_then(|a| parse_count(a))
                else {
                    return false;
                };
                if numkeys == 0 {
                    continue;
                }
                let (first, step) = (first + i64::from(firstkey), i64::from(keystep));
                // Saturating: a huge count from the client must fail the bounds check below,
                // not overflow.
                let last = (numkeys - 1).saturating_mul(step).saturating_add(first);
                (first, last, step)
            }
            FindKeys::Unknown => return false,
        };
        if step <= 0 || first < 1 || first >= argc || last >= argc || last < first {
            return false;
        }
        let mut i = first;
        while i <= last {
            // In range by the check above.
            found(i as usize, ks.flags);
            i += step;
        }
    }
    true
}

/// The index just after the first `keyword` found searching from `startfrom`.
fn keyword_start(args: &[Bytes], argc: i64, keyword: &str, startfrom: i64) -> Option<i64> {
    // Forwards up to the second-to-last argument, or backwards down to index 2, as Redis does
    // (the end index itself is never examined).
    let (start, end) = if startfrom > 0 {
        (startfrom, argc - 1)
    } else {
        (argc + startfrom, 1)
    };
    let dir = if start <= end { 1 } else { -1 };
    let mut i = start;
    while i != end {
        let arg = usize::try_from(i)
            .ok()
            .filter(|&i| i >= 1)
            .and_then(|i| args.get(i))?;
        if arg.eq_ignore_ascii_case(keyword.as_bytes()) {
            return Some(i + 1);
        }
        i += dir;
    }
    None
}

/// A non-negative decimal count, as a keynum argument must be.
fn parse_count(arg: &[u8]) -> Option<i64> {
    if arg.first() == Some(&b'+') {
        return None;
    }
    std::str::from_utf8(arg)
        .ok()?
        .parse::<i64>()
        .ok()
        .filter(|&n| n >= 0)
}

// Builders for the table below: everything is `const` so the table is a plain static.

const NO_DOCS: Docs = Docs {
    summary: "",
    since: "",
    group: "",
    complexity: "",
    doc_flags: &[],
    deprecated_since: None,
    replaced_by: None,
    history: &[],
    arguments: &[],
};

const fn cmd(
    id: CmdId,
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    acl_categories: &'static [&'static str],
) -> CommandSpec {
    CommandSpec {
        id,
        name,
        arity,
        flags,
        first_key: 0,
        last_key: 0,
        step: 0,
        acl_categories,
        tips: &[],
        key_specs: &[],
        subcommands: &[],
        docs: NO_DOCS,
    }
}

impl CommandSpec {
    const fn keys(self, first_key: i32, last_key: i32, step: i32) -> Self {
        CommandSpec {
            first_key,
            last_key,
            step,
            ..self
        }
    }

    const fn tips(self, tips: &'static [&'static str]) -> Self {
        CommandSpec { tips, ..self }
    }

    const fn key_specs(self, key_specs: &'static [KeySpec]) -> Self {
        CommandSpec { key_specs, ..self }
    }

    const fn docs(self, docs: Docs) -> Self {
        CommandSpec { docs, ..self }
    }

    const fn subs(self, subcommands: &'static [CommandSpec]) -> Self {
        CommandSpec {
            subcommands,
            ..self
        }
    }
}

impl KeySpec {
    /// One key at `index`.
    const fn single(index: i32, flags: &'static [&'static str]) -> Self {
        KeySpec::range(index, 0, 1, 0, flags)
    }

    const fn range(
        index: i32,
        lastkey: i32,
        keystep: i32,
        limit: i32,
        flags: &'static [&'static str],
    ) -> Self {
        KeySpec {
            notes: None,
            flags,
            begin_search: BeginSearch::Index(index),
            find_keys: FindKeys::Range {
                lastkey,
                keystep,
                limit,
            },
        }
    }

    const fn notes(self, notes: &'static str) -> Self {
        KeySpec {
            notes: Some(notes),
            ..self
        }
    }
}

const fn doc(
    group: &'static str,
    since: &'static str,
    summary: &'static str,
    complexity: &'static str,
) -> Docs {
    Docs {
        summary,
        since,
        group,
        complexity,
        ..NO_DOCS
    }
}

impl Docs {
    const fn deprecated(self, since: &'static str, replaced_by: &'static str) -> Self {
        Docs {
            doc_flags: &["deprecated"],
            deprecated_since: Some(since),
            replaced_by: Some(replaced_by),
            ..self
        }
    }

    const fn history(self, history: &'static [(&'static str, &'static str)]) -> Self {
        Docs { history, ..self }
    }

    const fn args(self, arguments: &'static [Arg]) -> Self {
        Docs { arguments, ..self }
    }
}

const fn arg(name: &'static str, kind: ArgType) -> Arg {
    Arg {
        name,
        kind,
        key_spec_index: None,
        token: None,
        since: None,
        deprecated_since: None,
        flags: ArgFlags {
            optional: false,
            multiple: false,
            multiple_token: false,
        },
        arguments: &[],
    }
}

impl Arg {
    const fn key(self, key_spec_index: u32) -> Self {
        Arg {
            key_spec_index: Some(key_spec_index),
            ..self
        }
    }

    const fn token(self, token: &'static str) -> Self {
        Arg {
            token: Some(token),
            ..self
        }
    }

    const fn since(self, since: &'static str) -> Self {
        Arg {
            since: Some(since),
            ..self
        }
    }

    const fn deprecated(self, since: &'static str) -> Self {
        Arg {
            deprecated_since: Some(since),
            ..self
        }
    }

    const fn opt(self) -> Self {
        Arg {
            flags: ArgFlags {
                optional: true,
                ..self.flags
            },
            ..self
        }
    }

    const fn multi(self) -> Self {
        Arg {
            flags: ArgFlags {
                multiple: true,
                ..self.flags
            },
            ..self
        }
    }

    const fn sub(self, arguments: &'static [Arg]) -> Self {
        Arg { arguments, ..self }
    }
}

mod table {
    use super::ArgType::String as Str;
    use super::ArgType::{Block, Double, Integer, Key, OneOf, Pattern, PureToken, UnixTime};
    use super::CmdId::*;
    use super::{arg, cmd, doc, CommandSpec, KeySpec};

    // One const per command, parents after their subcommands. Every fact but the prose (see the
    // module docs) is Redis 7.0.15's, checked against redis-server by tests/redis_compat.rs.
    pub(super) static TABLE: [CommandSpec; 62] = [
        PING,
        ECHO,
        HELLO,
        AUTH,
        SELECT,
        QUIT,
        RESET,
        CLIENT,
        GET,
        SET,
        SETNX,
        SETEX,
        PSETEX,
        GETSET,
        GETDEL,
        GETEX,
        MGET,
        MSET,
        MSETNX,
        DEL,
        UNLINK,
        EXISTS,
        TYPE,
        STRLEN,
        APPEND,
        GETRANGE,
        SETRANGE,
        INCR,
        DECR,
        INCRBY,
        DECRBY,
        INCRBYFLOAT,
        EXPIRE,
        PEXPIRE,
        EXPIREAT,
        PEXPIREAT,
        EXPIRETIME,
        PEXPIRETIME,
        TTL,
        PTTL,
        PERSIST,
        SCAN,
        KEYS,
        DBSIZE,
        RANDOMKEY,
        RENAME,
        RENAMENX,
        FLUSHDB,
        FLUSHALL,
        INFO,
        CONFIG,
        COMMAND,
        TIME,
        SLOWLOG,
        SHUTDOWN,
        ACL,
        CLUSTER,
        READONLY,
        READWRITE,
        SUBSTR,
        STORE,
        PUSH,
    ];

    const PING: CommandSpec = cmd(Ping, "ping", -1, &["fast"], &["@fast", "@connection"])
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .docs(
            doc(
                "connection",
                "1.0.0",
                "Checks that the connection is alive: replies PONG, or echoes the argument.",
                "O(1)",
            )
            .args(&[arg("message", Str).opt()]),
        );

    const ECHO: CommandSpec = cmd(
        Echo,
        "echo",
        2,
        &["loading", "stale", "fast"],
        &["@fast", "@connection"],
    )
    .docs(
        doc(
            "connection",
            "1.0.0",
            "Replies with the message it was given.",
            "O(1)",
        )
        .args(&[arg("message", Str)]),
    );

    const HELLO: CommandSpec = cmd(
        Hello,
        "hello",
        -1,
        &[
            "noscript",
            "loading",
            "stale",
            "fast",
            "no_auth",
            "allow_busy",
        ],
        &["@fast", "@connection"],
    )
    .docs(
        doc(
            "connection",
            "6.0.0",
            "Picks the protocol version; can also authenticate and name the connection.",
            "O(1)",
        )
        .history(&[(
            "6.2.0",
            "`protover` is optional; without it the reply describes the connection.",
        )])
        .args(&[arg("arguments", Block).opt().sub(&[
            arg("protover", Integer),
            arg("username_password", Block)
                .token("AUTH")
                .opt()
                .sub(&[arg("username", Str), arg("password", Str)]),
            arg("clientname", Str).token("SETNAME").opt(),
        ])]),
    );

    const AUTH: CommandSpec = cmd(
        Auth,
        "auth",
        -2,
        &[
            "noscript",
            "loading",
            "stale",
            "fast",
            "no_auth",
            "allow_busy",
        ],
        &["@fast", "@connection"],
    )
    .docs(
        doc(
            "connection",
            "1.0.0",
            "Authenticates the connection as a user, or as the default user given only a password.",
            "O(N), N being the number of passwords the user has.",
        )
        .history(&[("6.0.0", "Takes a username, for ACL users.")])
        .args(&[
            arg("username", Str).since("6.0.0").opt(),
            arg("password", Str),
        ]),
    );

    const SELECT: CommandSpec = cmd(
        Select,
        "select",
        2,
        &["loading", "stale", "fast"],
        &["@fast", "@connection"],
    )
    .docs(
        doc(
            "connection",
            "1.0.0",
            "Switches the connection to another numbered database.",
            "O(1)",
        )
        .args(&[arg("index", Integer)]),
    );

    const QUIT: CommandSpec = cmd(
        Quit,
        "quit",
        -1,
        &[
            "noscript",
            "loading",
            "stale",
            "fast",
            "no_auth",
            "allow_busy",
        ],
        &["@fast", "@connection"],
    )
    .docs(doc(
        "connection",
        "1.0.0",
        "Asks the server to close the connection.",
        "O(1)",
    ));

    const RESET: CommandSpec = cmd(
        Reset,
        "reset",
        1,
        &[
            "noscript",
            "loading",
            "stale",
            "fast",
            "no_auth",
            "allow_busy",
        ],
        &["@fast", "@connection"],
    )
    .docs(doc(
        "connection",
        "6.2.0",
        "Returns the connection to the state of a new one.",
        "O(1)",
    ));

    const CLIENT_SETNAME: CommandSpec = cmd(
        Client,
        "client|setname",
        3,
        &["noscript", "loading", "stale"],
        &["@slow", "@connection"],
    )
    .docs(
        doc(
            "connection",
            "2.6.9",
            "Assigns a name to the current connection.",
            "O(1)",
        )
        .args(&[arg("connection-name", Str)]),
    );

    const CLIENT_GETNAME: CommandSpec = cmd(
        Client,
        "client|getname",
        2,
        &["noscript", "loading", "stale"],
        &["@slow", "@connection"],
    )
    .docs(doc(
        "connection",
        "2.6.9",
        "Returns the name of the current connection, if it has one.",
        "O(1)",
    ));

    const CLIENT_ID: CommandSpec = cmd(
        Client,
        "client|id",
        2,
        &["noscript", "loading", "stale"],
        &["@slow", "@connection"],
    )
    .docs(doc(
        "connection",
        "5.0.0",
        "Returns the ID the server assigned to this connection.",
        "O(1)",
    ));

    const CLIENT_LIST: CommandSpec = cmd(
        Client,
        "client|list",
        -2,
        &["admin", "noscript", "loading", "stale"],
        &["@admin", "@slow", "@dangerous", "@connection"],
    )
    .tips(&["nondeterministic_output"])
    .docs(
        doc(
            "connection",
            "2.4.0",
            "Lists the open client connections and their properties.",
            "O(N), N being the number of connected clients.",
        )
        .history(&[
            ("2.8.12", "New field `id`."),
            ("5.0.0", "New `TYPE` filter."),
            ("6.0.0", "New field `user`."),
            (
                "6.2.0",
                "New fields `argv-mem`, `tot-mem`, `laddr` and `redir`; new `ID` filter.",
            ),
            ("7.0.0", "New fields `resp`, `multi-mem`, `rbs` and `rbp`."),
            ("7.0.3", "New field `ssub`."),
        ])
        .args(&[
            arg("normal_master_replica_pubsub", OneOf)
                .token("TYPE")
                .since("5.0.0")
                .opt()
                .sub(&[
                    arg("normal", PureToken).token("NORMAL"),
                    arg("master", PureToken).token("MASTER"),
                    arg("replica", PureToken).token("REPLICA"),
                    arg("pubsub", PureToken).token("PUBSUB"),
                ]),
            arg("id", Block)
                .token("ID")
                .since("6.2.0")
                .opt()
                .sub(&[arg("client-id", Integer).multi()]),
        ]),
    );

    const CLIENT_INFO: CommandSpec = cmd(
        Client,
        "client|info",
        2,
        &["noscript", "loading", "stale"],
        &["@slow", "@connection"],
    )
    .tips(&["nondeterministic_output"])
    .docs(doc(
        "connection",
        "6.2.0",
        "Describes the current connection in the format of CLIENT LIST.",
        "O(1)",
    ));

    // Redis 7.2 added SETINFO; this is 7.2's metadata.
    const CLIENT_SETINFO: CommandSpec = cmd(
        Client,
        "client|setinfo",
        4,
        &["noscript", "loading", "stale"],
        &["@slow", "@connection"],
    )
    .docs(
        doc(
            "connection",
            "7.2.0",
            "Records the name or version of the client library on the connection.",
            "O(1)",
        )
        .args(&[arg("attr", OneOf).sub(&[
            arg("libname", Str).token("lib-name"),
            arg("libver", Str).token("lib-ver"),
        ])]),
    );

    const CLIENT_KILL: CommandSpec = cmd(
        Client,
        "client|kill",
        -3,
        &["admin", "noscript", "loading", "stale"],
        &["@admin", "@slow", "@dangerous", "@connection"],
    )
    .docs(
        doc(
            "connection",
            "2.4.0",
            "Closes the client connections that match the given filters.",
            "O(N), N being the number of connected clients.",
        )
        .history(&[
            ("2.8.12", "Filters given as option and value pairs."),
            ("2.8.12", "Filter `ID`."),
            ("3.2.0", "Value `master` for the `TYPE` filter."),
            (
                "5.0.0",
                "`TYPE replica` supersedes `TYPE slave`, which keeps working.",
            ),
            ("6.2.0", "Filter `LADDR`."),
        ])
        .args(&[arg("filter", OneOf).sub(&[
            arg("ip:port", Str).deprecated("2.8.12"),
            arg("new-format", OneOf).multi().sub(&[
                arg("client-id", Integer).token("ID").since("2.8.12").opt(),
                arg("normal_master_slave_pubsub", OneOf)
                    .token("TYPE")
                    .since("2.8.12")
                    .opt()
                    .sub(&[
                        arg("normal", PureToken).token("NORMAL"),
                        arg("master", PureToken).token("MASTER").since("3.2.0"),
                        arg("slave", PureToken).token("SLAVE"),
                        arg("replica", PureToken).token("REPLICA").since("5.0.0"),
                        arg("pubsub", PureToken).token("PUBSUB"),
                    ]),
                arg("username", Str).token("USER").opt(),
                arg("ip:port", Str).token("ADDR").opt(),
                arg("ip:port", Str).token("LADDR").since("6.2.0").opt(),
                arg("yes/no", Str).token("SKIPME").opt(),
            ]),
        ])]),
    );

    const CLIENT_HELP: CommandSpec = cmd(
        Client,
        "client|help",
        2,
        &["loading", "stale"],
        &["@slow", "@connection"],
    )
    .docs(doc(
        "connection",
        "5.0.0",
        "Lists the CLIENT subcommands with a short description of each.",
        "O(1)",
    ));

    const CLIENT: CommandSpec = cmd(Client, "client", -2, &[], &["@slow"])
        .docs(doc(
            "connection",
            "2.4.0",
            "Groups the subcommands that inspect and manage client connections.",
            "Varies by subcommand.",
        ))
        .subs(&[
            CLIENT_SETNAME,
            CLIENT_GETNAME,
            CLIENT_ID,
            CLIENT_LIST,
            CLIENT_INFO,
            CLIENT_SETINFO,
            CLIENT_KILL,
            CLIENT_HELP,
        ]);

    const GET: CommandSpec = cmd(
        Get,
        "get",
        2,
        &["readonly", "fast"],
        &["@read", "@string", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "string",
            "1.0.0",
            "Returns the string value stored at a key.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0)]),
    );

    const SET: CommandSpec = cmd(
        Set,
        "set",
        -3,
        &["write", "denyoom"],
        &["@write", "@string", "@slow"],
    )
    .keys(1, 1, 1)
    .key_specs(&[
        KeySpec::single(1, &["RW", "access", "update", "variable_flags"])
            .notes("Flags vary: RW and ACCESS only with GET, which reads the old value"),
    ])
    .docs(
        doc(
            "string",
            "1.0.0",
            "Stores a string value at a key, with optional expiry and existence conditions.",
            "O(1)",
        )
        .history(&[
            ("2.6.12", "Options `EX`, `PX`, `NX` and `XX`."),
            ("6.0.0", "Option `KEEPTTL`."),
            ("6.2.0", "Options `GET`, `EXAT` and `PXAT`."),
            ("7.0.0", "`NX` may be combined with `GET`."),
        ])
        .args(&[
            arg("key", Key).key(0),
            arg("value", Str),
            arg("condition", OneOf).since("2.6.12").opt().sub(&[
                arg("nx", PureToken).token("NX"),
                arg("xx", PureToken).token("XX"),
            ]),
            arg("get", PureToken).token("GET").since("6.2.0").opt(),
            arg("expiration", OneOf).opt().sub(&[
                arg("seconds", Integer).token("EX").since("2.6.12"),
                arg("milliseconds", Integer).token("PX").since("2.6.12"),
                arg("unix-time-seconds", UnixTime)
                    .token("EXAT")
                    .since("6.2.0"),
                arg("unix-time-milliseconds", UnixTime)
                    .token("PXAT")
                    .since("6.2.0"),
                arg("keepttl", PureToken).token("KEEPTTL").since("6.0.0"),
            ]),
        ]),
    );

    const SETNX: CommandSpec = cmd(
        SetNx,
        "setnx",
        3,
        &["write", "denyoom", "fast"],
        &["@write", "@string", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["OW", "insert"])])
    .docs(
        doc(
            "string",
            "1.0.0",
            "Stores a string value at a key only when the key is absent.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0), arg("value", Str)]),
    );

    const SETEX: CommandSpec = cmd(
        SetEx,
        "setex",
        4,
        &["write", "denyoom"],
        &["@write", "@string", "@slow"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["OW", "update"])])
    .docs(
        doc(
            "string",
            "2.0.0",
            "Stores a string value at a key with a time to live in seconds.",
            "O(1)",
        )
        .args(&[
            arg("key", Key).key(0),
            arg("seconds", Integer),
            arg("value", Str),
        ]),
    );

    const PSETEX: CommandSpec = cmd(
        PSetEx,
        "psetex",
        4,
        &["write", "denyoom"],
        &["@write", "@string", "@slow"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["OW", "update"])])
    .docs(
        doc(
            "string",
            "2.6.0",
            "Stores a string value at a key with a time to live in milliseconds.",
            "O(1)",
        )
        .args(&[
            arg("key", Key).key(0),
            arg("milliseconds", Integer),
            arg("value", Str),
        ]),
    );

    const GETSET: CommandSpec = cmd(
        GetSet,
        "getset",
        3,
        &["write", "denyoom", "fast"],
        &["@write", "@string", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
    .docs(
        doc(
            "string",
            "1.0.0",
            "Stores a new string value at a key and returns the value it replaced.",
            "O(1)",
        )
        .deprecated("6.2.0", "`SET` with its `GET` option")
        .args(&[arg("key", Key).key(0), arg("value", Str)]),
    );

    const GETDEL: CommandSpec = cmd(
        GetDel,
        "getdel",
        2,
        &["write", "fast"],
        &["@write", "@string", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "access", "delete"])])
    .docs(
        doc(
            "string",
            "6.2.0",
            "Returns the string value of a key and removes the key.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0)]),
    );

    const GETEX: CommandSpec = cmd(
        GetEx,
        "getex",
        -2,
        &["write", "fast"],
        &["@write", "@string", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "access", "update"])
        .notes("Changing the expiry modifies the key, hence RW and UPDATE")])
    .docs(
        doc(
            "string",
            "6.2.0",
            "Returns the string value of a key, optionally changing or clearing its expiry.",
            "O(1)",
        )
        .args(&[
            arg("key", Key).key(0),
            arg("expiration", OneOf).opt().sub(&[
                arg("seconds", Integer).token("EX"),
                arg("milliseconds", Integer).token("PX"),
                arg("unix-time-seconds", UnixTime).token("EXAT"),
                arg("unix-time-milliseconds", UnixTime).token("PXAT"),
                arg("persist", PureToken).token("PERSIST"),
            ]),
        ]),
    );

    const MGET: CommandSpec = cmd(
        MGet,
        "mget",
        -2,
        &["readonly", "fast"],
        &["@read", "@string", "@fast"],
    )
    .keys(1, -1, 1)
    .tips(&["request_policy:multi_shard"])
    .key_specs(&[KeySpec::range(1, -1, 1, 0, &["RO", "access"])])
    .docs(
        doc(
            "string",
            "1.0.0",
            "Returns the string values of several keys at once.",
            "O(N), N being the number of keys requested.",
        )
        .args(&[arg("key", Key).key(0).multi()]),
    );

    const MSET: CommandSpec = cmd(
        MSet,
        "mset",
        -3,
        &["write", "denyoom"],
        &["@write", "@string", "@slow"],
    )
    .keys(1, -1, 2)
    .tips(&[
        "request_policy:multi_shard",
        "response_policy:all_succeeded",
    ])
    .key_specs(&[KeySpec::range(1, -1, 2, 0, &["OW", "update"])])
    .docs(
        doc(
            "string",
            "1.0.1",
            "Stores several key-value pairs at once.",
            "O(N), N being the number of keys written.",
        )
        .args(&[arg("key_value", Block)
            .multi()
            .sub(&[arg("key", Key).key(0), arg("value", Str)])]),
    );

    const MSETNX: CommandSpec = cmd(
        MSetNx,
        "msetnx",
        -3,
        &["write", "denyoom"],
        &["@write", "@string", "@slow"],
    )
    .keys(1, -1, 2)
    .tips(&["request_policy:multi_shard", "response_policy:agg_min"])
    .key_specs(&[KeySpec::range(1, -1, 2, 0, &["OW", "insert"])])
    .docs(
        doc(
            "string",
            "1.0.1",
            "Stores several key-value pairs at once, only if none of the keys exists yet.",
            "O(N), N being the number of keys written.",
        )
        .args(&[arg("key_value", Block)
            .multi()
            .sub(&[arg("key", Key).key(0), arg("value", Str)])]),
    );

    const DEL: CommandSpec = cmd(
        Del,
        "del",
        -2,
        &["write"],
        &["@keyspace", "@write", "@slow"],
    )
    .keys(1, -1, 1)
    .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
    .key_specs(&[KeySpec::range(1, -1, 1, 0, &["RM", "delete"])])
    .docs(
        doc(
            "generic",
            "1.0.0",
            "Removes one or more keys.",
            "O(N) for N keys; removing a collection is O(M) in its elements, a string O(1).",
        )
        .args(&[arg("key", Key).key(0).multi()]),
    );

    const UNLINK: CommandSpec = cmd(
        Unlink,
        "unlink",
        -2,
        &["write", "fast"],
        &["@keyspace", "@write", "@fast"],
    )
    .keys(1, -1, 1)
    .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
    .key_specs(&[KeySpec::range(1, -1, 1, 0, &["RM", "delete"])])
    .docs(
        doc(
            "generic",
            "4.0.0",
            "Removes one or more keys and frees their memory in the background.",
            "O(1) per key now; freeing the memory later is O(M) in the values' allocations.",
        )
        .args(&[arg("key", Key).key(0).multi()]),
    );

    const EXISTS: CommandSpec = cmd(
        Exists,
        "exists",
        -2,
        &["readonly", "fast"],
        &["@keyspace", "@read", "@fast"],
    )
    .keys(1, -1, 1)
    .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
    .key_specs(&[KeySpec::range(1, -1, 1, 0, &["RO"])])
    .docs(
        doc(
            "generic",
            "1.0.0",
            "Counts how many of the given keys exist.",
            "O(N), N being the number of keys checked.",
        )
        .history(&[("3.0.3", "Takes several keys.")])
        .args(&[arg("key", Key).key(0).multi()]),
    );

    const TYPE: CommandSpec = cmd(
        Type,
        "type",
        2,
        &["readonly", "fast"],
        &["@keyspace", "@read", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO"])])
    .docs(
        doc(
            "generic",
            "1.0.0",
            "Returns the type of the value stored at a key.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0)]),
    );

    const STRLEN: CommandSpec = cmd(
        StrLen,
        "strlen",
        2,
        &["readonly", "fast"],
        &["@read", "@string", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO"])])
    .docs(
        doc(
            "string",
            "2.2.0",
            "Returns the length in bytes of the string stored at a key.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0)]),
    );

    const APPEND: CommandSpec = cmd(
        Append,
        "append",
        3,
        &["write", "denyoom", "fast"],
        &["@write", "@string", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "insert"])])
    .docs(
        doc(
            "string",
            "2.0.0",
            "Appends bytes to the end of the string stored at a key.",
            "O(1) amortized: strings grow with spare room, so small appends stay cheap.",
        )
        .args(&[arg("key", Key).key(0), arg("value", Str)]),
    );

    const GETRANGE: CommandSpec = cmd(
        GetRange,
        "getrange",
        4,
        &["readonly"],
        &["@read", "@string", "@slow"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "string",
            "2.4.0",
            "Returns the part of a string value between two offsets.",
            "O(N), N being the length of the returned part, so effectively O(1) for short ranges.",
        )
        .args(&[
            arg("key", Key).key(0),
            arg("start", Integer),
            arg("end", Integer),
        ]),
    );

    const SUBSTR: CommandSpec = cmd(
        SubStr,
        "substr",
        4,
        &["readonly"],
        &["@read", "@string", "@slow"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "string",
            "1.0.0",
            "Returns the part of a string value between two offsets (the old name of GETRANGE).",
            "O(N), N being the length of the returned part, so effectively O(1) for short ranges.",
        )
        .deprecated("2.0.0", "`GETRANGE`")
        .args(&[
            arg("key", Key).key(0),
            arg("start", Integer),
            arg("end", Integer),
        ]),
    );

    const SETRANGE: CommandSpec = cmd(
        SetRange,
        "setrange",
        4,
        &["write", "denyoom"],
        &["@write", "@string", "@slow"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "update"])])
    .docs(
        doc(
            "string",
            "2.2.0",
            "Overwrites part of a string value, starting at an offset.",
            "O(1) plus copying the new bytes: O(M) for M bytes written.",
        )
        .args(&[
            arg("key", Key).key(0),
            arg("offset", Integer),
            arg("value", Str),
        ]),
    );

    const INCR: CommandSpec = cmd(
        Incr,
        "incr",
        2,
        &["write", "denyoom", "fast"],
        &["@write", "@string", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
    .docs(
        doc(
            "string",
            "1.0.0",
            "Adds one to the integer stored at a key.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0)]),
    );

    const DECR: CommandSpec = cmd(
        Decr,
        "decr",
        2,
        &["write", "denyoom", "fast"],
        &["@write", "@string", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
    .docs(
        doc(
            "string",
            "1.0.0",
            "Subtracts one from the integer stored at a key.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0)]),
    );

    const INCRBY: CommandSpec = cmd(
        IncrBy,
        "incrby",
        3,
        &["write", "denyoom", "fast"],
        &["@write", "@string", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
    .docs(
        doc(
            "string",
            "1.0.0",
            "Adds an integer amount to the integer stored at a key.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0), arg("increment", Integer)]),
    );

    const DECRBY: CommandSpec = cmd(
        DecrBy,
        "decrby",
        3,
        &["write", "denyoom", "fast"],
        &["@write", "@string", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
    .docs(
        doc(
            "string",
            "1.0.0",
            "Subtracts an integer amount from the integer stored at a key.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0), arg("decrement", Integer)]),
    );

    const INCRBYFLOAT: CommandSpec = cmd(
        IncrByFloat,
        "incrbyfloat",
        3,
        &["write", "denyoom", "fast"],
        &["@write", "@string", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "access", "update"])])
    .docs(
        doc(
            "string",
            "2.6.0",
            "Adds a floating-point amount to the number stored at a key.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0), arg("increment", Double)]),
    );

    const EXPIRE: CommandSpec = cmd(
        Expire,
        "expire",
        -3,
        &["write", "fast"],
        &["@keyspace", "@write", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "update"])])
    .docs(
        doc(
            "generic",
            "1.0.0",
            "Sets the time to live of a key, in seconds.",
            "O(1)",
        )
        .history(&[("7.0.0", "Conditions `NX`, `XX`, `GT` and `LT`.")])
        .args(&[
            arg("key", Key).key(0),
            arg("seconds", Integer),
            arg("condition", OneOf).since("7.0.0").opt().sub(&[
                arg("nx", PureToken).token("NX"),
                arg("xx", PureToken).token("XX"),
                arg("gt", PureToken).token("GT"),
                arg("lt", PureToken).token("LT"),
            ]),
        ]),
    );

    const PEXPIRE: CommandSpec = cmd(
        PExpire,
        "pexpire",
        -3,
        &["write", "fast"],
        &["@keyspace", "@write", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "update"])])
    .docs(
        doc(
            "generic",
            "2.6.0",
            "Sets the time to live of a key, in milliseconds.",
            "O(1)",
        )
        .history(&[("7.0.0", "Conditions `NX`, `XX`, `GT` and `LT`.")])
        .args(&[
            arg("key", Key).key(0),
            arg("milliseconds", Integer),
            arg("condition", OneOf).since("7.0.0").opt().sub(&[
                arg("nx", PureToken).token("NX"),
                arg("xx", PureToken).token("XX"),
                arg("gt", PureToken).token("GT"),
                arg("lt", PureToken).token("LT"),
            ]),
        ]),
    );

    const EXPIREAT: CommandSpec = cmd(
        ExpireAt,
        "expireat",
        -3,
        &["write", "fast"],
        &["@keyspace", "@write", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "update"])])
    .docs(
        doc(
            "generic",
            "1.2.0",
            "Sets when a key expires, as a Unix time in seconds.",
            "O(1)",
        )
        .history(&[("7.0.0", "Conditions `NX`, `XX`, `GT` and `LT`.")])
        .args(&[
            arg("key", Key).key(0),
            arg("unix-time-seconds", UnixTime),
            arg("condition", OneOf).since("7.0.0").opt().sub(&[
                arg("nx", PureToken).token("NX"),
                arg("xx", PureToken).token("XX"),
                arg("gt", PureToken).token("GT"),
                arg("lt", PureToken).token("LT"),
            ]),
        ]),
    );

    const PEXPIREAT: CommandSpec = cmd(
        PExpireAt,
        "pexpireat",
        -3,
        &["write", "fast"],
        &["@keyspace", "@write", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "update"])])
    .docs(
        doc(
            "generic",
            "2.6.0",
            "Sets when a key expires, as a Unix time in milliseconds.",
            "O(1)",
        )
        .history(&[("7.0.0", "Conditions `NX`, `XX`, `GT` and `LT`.")])
        .args(&[
            arg("key", Key).key(0),
            arg("unix-time-milliseconds", UnixTime),
            arg("condition", OneOf).since("7.0.0").opt().sub(&[
                arg("nx", PureToken).token("NX"),
                arg("xx", PureToken).token("XX"),
                arg("gt", PureToken).token("GT"),
                arg("lt", PureToken).token("LT"),
            ]),
        ]),
    );

    const EXPIRETIME: CommandSpec = cmd(
        ExpireTime,
        "expiretime",
        2,
        &["readonly", "fast"],
        &["@keyspace", "@read", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "generic",
            "7.0.0",
            "Returns when a key expires, as a Unix time in seconds.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0)]),
    );

    const PEXPIRETIME: CommandSpec = cmd(
        PExpireTime,
        "pexpiretime",
        2,
        &["readonly", "fast"],
        &["@keyspace", "@read", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "generic",
            "7.0.0",
            "Returns when a key expires, as a Unix time in milliseconds.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0)]),
    );

    const TTL: CommandSpec = cmd(
        Ttl,
        "ttl",
        2,
        &["readonly", "fast"],
        &["@keyspace", "@read", "@fast"],
    )
    .keys(1, 1, 1)
    .tips(&["nondeterministic_output"])
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "generic",
            "1.0.0",
            "Returns the remaining time to live of a key, in seconds.",
            "O(1)",
        )
        .history(&[("2.8.0", "Replies -2 when the key does not exist.")])
        .args(&[arg("key", Key).key(0)]),
    );

    const PTTL: CommandSpec = cmd(
        PTtl,
        "pttl",
        2,
        &["readonly", "fast"],
        &["@keyspace", "@read", "@fast"],
    )
    .keys(1, 1, 1)
    .tips(&["nondeterministic_output"])
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "generic",
            "2.6.0",
            "Returns the remaining time to live of a key, in milliseconds.",
            "O(1)",
        )
        .history(&[("2.8.0", "Replies -2 when the key does not exist.")])
        .args(&[arg("key", Key).key(0)]),
    );

    const PERSIST: CommandSpec = cmd(
        Persist,
        "persist",
        2,
        &["write", "fast"],
        &["@keyspace", "@write", "@fast"],
    )
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RW", "update"])])
    .docs(
        doc(
            "generic",
            "2.2.0",
            "Clears the expiry of a key so that it is kept until deleted.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0)]),
    );

    const SCAN: CommandSpec = cmd(
        Scan,
        "scan",
        -2,
        &["readonly"],
        &["@keyspace", "@read", "@slow"],
    )
    .tips(&["nondeterministic_output", "request_policy:special"])
    .docs(
        doc(
            "generic",
            "2.8.0",
            "Walks the keyspace a batch at a time with a cursor.",
            "O(1) per call; O(N) over a whole iteration back to cursor 0, for N keys.",
        )
        .history(&[("6.0.0", "Option `TYPE`.")])
        .args(&[
            arg("cursor", Integer),
            arg("pattern", Pattern).token("MATCH").opt(),
            arg("count", Integer).token("COUNT").opt(),
            arg("type", Str).token("TYPE").since("6.0.0").opt(),
        ]),
    );

    const KEYS: CommandSpec = cmd(
        Keys,
        "keys",
        2,
        &["readonly"],
        &["@keyspace", "@read", "@slow", "@dangerous"],
    )
    .tips(&["request_policy:all_shards", "nondeterministic_output_order"])
    .docs(
        doc(
            "generic",
            "1.0.0",
            "Returns every key whose name matches a glob-style pattern.",
            "O(N), N being the number of keys in the database, for short key names and patterns.",
        )
        .args(&[arg("pattern", Pattern)]),
    );

    const DBSIZE: CommandSpec = cmd(
        DbSize,
        "dbsize",
        1,
        &["readonly", "fast"],
        &["@keyspace", "@read", "@fast"],
    )
    .tips(&["request_policy:all_shards", "response_policy:agg_sum"])
    .docs(doc(
        "server",
        "1.0.0",
        "Returns how many keys the current database holds.",
        "O(1)",
    ));

    const RANDOMKEY: CommandSpec = cmd(
        RandomKey,
        "randomkey",
        1,
        &["readonly"],
        &["@keyspace", "@read", "@slow"],
    )
    .tips(&["request_policy:all_shards", "nondeterministic_output"])
    .docs(doc(
        "generic",
        "1.0.0",
        "Returns a key picked at random from the current database.",
        "O(1)",
    ));

    const RENAME: CommandSpec = cmd(
        Rename,
        "rename",
        3,
        &["write"],
        &["@keyspace", "@write", "@slow"],
    )
    .keys(1, 2, 1)
    .key_specs(&[
        KeySpec::single(1, &["RW", "access", "delete"]),
        KeySpec::single(2, &["OW", "update"]),
    ])
    .docs(
        doc(
            "generic",
            "1.0.0",
            "Gives a key a new name, replacing any key that already had it.",
            "O(1)",
        )
        .args(&[arg("key", Key).key(0), arg("newkey", Key).key(1)]),
    );

    const RENAMENX: CommandSpec = cmd(
        RenameNx,
        "renamenx",
        3,
        &["write", "fast"],
        &["@keyspace", "@write", "@fast"],
    )
    .keys(1, 2, 1)
    .key_specs(&[
        KeySpec::single(1, &["RW", "access", "delete"]),
        KeySpec::single(2, &["OW", "insert"]),
    ])
    .docs(
        doc(
            "generic",
            "1.0.0",
            "Gives a key a new name, only if no other key has that name.",
            "O(1)",
        )
        .history(&[(
            "3.2.0",
            "Renaming a key to its own name is no longer an error.",
        )])
        .args(&[arg("key", Key).key(0), arg("newkey", Key).key(1)]),
    );

    const FLUSHDB: CommandSpec = cmd(
        FlushDb,
        "flushdb",
        -1,
        &["write"],
        &["@keyspace", "@write", "@slow", "@dangerous"],
    )
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .docs(
        doc(
            "server",
            "1.0.0",
            "Deletes every key of the current database.",
            "O(N), N being the number of keys in the current database.",
        )
        .history(&[
            ("4.0.0", "Modifier `ASYNC`."),
            ("6.2.0", "Modifier `SYNC`."),
        ])
        .args(&[arg("async", OneOf).opt().sub(&[
            arg("async", PureToken).token("ASYNC").since("4.0.0"),
            arg("sync", PureToken).token("SYNC").since("6.2.0"),
        ])]),
    );

    const FLUSHALL: CommandSpec = cmd(
        FlushAll,
        "flushall",
        -1,
        &["write"],
        &["@keyspace", "@write", "@slow", "@dangerous"],
    )
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .docs(
        doc(
            "server",
            "1.0.0",
            "Deletes every key of every database.",
            "O(N), N being the number of keys across all databases.",
        )
        .history(&[
            ("4.0.0", "Modifier `ASYNC`."),
            ("6.2.0", "Modifier `SYNC`."),
        ])
        .args(&[arg("async", OneOf).opt().sub(&[
            arg("async", PureToken).token("ASYNC").since("4.0.0"),
            arg("sync", PureToken).token("SYNC").since("6.2.0"),
        ])]),
    );

    const INFO: CommandSpec = cmd(
        Info,
        "info",
        -1,
        &["loading", "stale"],
        &["@slow", "@dangerous"],
    )
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_shards",
        "response_policy:special",
    ])
    .docs(
        doc(
            "server",
            "1.0.0",
            "Reports information and statistics about the server, by section.",
            "O(1)",
        )
        .history(&[("7.0.0", "Takes several sections.")])
        .args(&[arg("section", Str).opt().multi()]),
    );

    const CONFIG_GET: CommandSpec = cmd(
        Config,
        "config|get",
        -3,
        &["admin", "noscript", "loading", "stale"],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(
        doc(
            "server",
            "2.0.0",
            "Returns the configuration parameters matching the patterns, with their values.",
            "O(N), N being the number of parameters requested.",
        )
        .history(&[("7.0.0", "Takes several patterns.")])
        .args(&[arg("parameter", Block)
            .multi()
            .sub(&[arg("parameter", Str)])]),
    );

    const CONFIG_SET: CommandSpec = cmd(
        Config,
        "config|set",
        -4,
        &["admin", "noscript", "loading", "stale"],
        &["@admin", "@slow", "@dangerous"],
    )
    .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
    .docs(
        doc(
            "server",
            "2.0.0",
            "Changes configuration parameters while the server runs.",
            "O(N), N being the number of parameters given.",
        )
        .history(&[("7.0.0", "Sets several parameters in one call.")])
        .args(&[arg("parameter_value", Block)
            .multi()
            .sub(&[arg("parameter", Str), arg("value", Str)])]),
    );

    const CONFIG_RESETSTAT: CommandSpec = cmd(
        Config,
        "config|resetstat",
        2,
        &["admin", "noscript", "loading", "stale"],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(doc(
        "server",
        "2.0.0",
        "Zeroes the statistics reported by INFO.",
        "O(1)",
    ));

    // Rialto's own commands (docs group "rialto"): stores and batch pushes.
    const STORE_CREATE: CommandSpec = cmd(
        Store,
        "store|create",
        -3,
        &["admin", "noscript"],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(
        doc(
            "rialto",
            "0.1.0",
            "Creates a store owning the keys that start with its prefix (default `NAME:`), with an empty version 1.",
            "O(1)",
        )
        .args(&[
            arg("name", Str),
            arg("prefix", Str).token("PREFIX").opt(),
            arg("seconds", Integer).token("REWIND").opt(),
        ]),
    );

    const STORE_DESCRIBE: CommandSpec = cmd(
        Store,
        "store|describe",
        3,
        &["loading", "stale"],
        &["@slow"],
    )
    .docs(
        doc(
            "rialto",
            "0.1.0",
            "Returns a store's prefix, versions and push in progress.",
            "O(1)",
        )
        .args(&[arg("name", Str)]),
    );

    const STORE_LIST: CommandSpec = cmd(Store, "store|list", 2, &["loading", "stale"], &["@slow"])
        .docs(doc(
            "rialto",
            "0.1.0",
            "Returns the names of every store.",
            "O(N), N being the number of stores.",
        ));

    const STORE_DELETE: CommandSpec = cmd(
        Store,
        "store|delete",
        3,
        &["admin", "noscript"],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(
        doc(
            "rialto",
            "0.1.0",
            "Deletes a store; its data is removed in the background.",
            "O(1); the removal is O(N) in the store's files and streamed keys.",
        )
        .args(&[arg("name", Str)]),
    );

    const STORE_ROLLBACK: CommandSpec = cmd(
        Store,
        "store|rollback",
        3,
        &["admin", "noscript"],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(
        doc(
            "rialto",
            "0.1.0",
            "Makes a store's previous version current again (a second rollback undoes the first).",
            "O(1)",
        )
        .args(&[arg("name", Str)]),
    );

    const STORE_HELP: CommandSpec = cmd(Store, "store|help", 2, &["loading", "stale"], &["@slow"])
        .docs(doc(
            "rialto",
            "0.1.0",
            "Lists the STORE subcommands with a short description of each.",
            "O(1)",
        ));

    const STORE: CommandSpec = cmd(Store, "store", -2, &[], &["@slow"])
        .docs(doc(
            "rialto",
            "0.1.0",
            "Groups the subcommands that manage stores and their versions.",
            "Varies by subcommand.",
        ))
        .subs(&[
            STORE_CREATE,
            STORE_DESCRIBE,
            STORE_LIST,
            STORE_DELETE,
            STORE_ROLLBACK,
            STORE_HELP,
        ]);

    const PUSH_BEGIN: CommandSpec = cmd(
        Push,
        "push|begin",
        -3,
        &["admin", "noscript"],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(
        doc(
            "rialto",
            "0.1.0",
            "Begins a batch push into a store; returns the push id.",
            "O(1)",
        )
        .args(&[
            arg("store", Str),
            arg("policy", Str).token("DUPLICATES").opt(),
        ]),
    );

    const PUSH_ADD: CommandSpec = cmd(
        Push,
        "push|add",
        -5,
        &["admin", "noscript"],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(
        doc(
            "rialto",
            "0.1.0",
            "Adds records (keys relative to the store's prefix) to a push, in any order.",
            "O(N), N being the number of records.",
        )
        .args(&[
            arg("id", Integer),
            arg("data", Block)
                .multi()
                .sub(&[arg("key", Str), arg("value", Str)]),
        ]),
    );

    const PUSH_COMMIT: CommandSpec = cmd(
        Push,
        "push|commit",
        3,
        &["admin", "noscript"],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(
        doc(
            "rialto",
            "0.1.0",
            "Sorts and loads a push's records as the store's new version and swaps it in.",
            "O(N log N), N being the number of records.",
        )
        .args(&[arg("id", Integer)]),
    );

    const PUSH_ABORT: CommandSpec = cmd(
        Push,
        "push|abort",
        3,
        &["admin", "noscript"],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(
        doc(
            "rialto",
            "0.1.0",
            "Abandons a push; the store keeps its current version.",
            "O(1)",
        )
        .args(&[arg("id", Integer)]),
    );

    const PUSH_LIST: CommandSpec = cmd(Push, "push|list", 2, &["loading", "stale"], &["@slow"])
        .docs(doc(
            "rialto",
            "0.1.0",
            "Returns the pushes in progress as id, store pairs.",
            "O(N), N being the number of pushes in progress.",
        ));

    const PUSH_HELP: CommandSpec = cmd(Push, "push|help", 2, &["loading", "stale"], &["@slow"])
        .docs(doc(
            "rialto",
            "0.1.0",
            "Lists the PUSH subcommands with a short description of each.",
            "O(1)",
        ));

    const PUSH: CommandSpec = cmd(Push, "push", -2, &[], &["@slow"])
        .docs(doc(
            "rialto",
            "0.1.0",
            "Groups the subcommands of batch pushes.",
            "Varies by subcommand.",
        ))
        .subs(&[
            PUSH_BEGIN,
            PUSH_ADD,
            PUSH_COMMIT,
            PUSH_ABORT,
            PUSH_LIST,
            PUSH_HELP,
        ]);

    const CONFIG_HELP: CommandSpec =
        cmd(Config, "config|help", 2, &["loading", "stale"], &["@slow"]).docs(doc(
            "server",
            "5.0.0",
            "Lists the CONFIG subcommands with a short description of each.",
            "O(1)",
        ));

    const CONFIG: CommandSpec = cmd(Config, "config", -2, &[], &["@slow"])
        .docs(doc(
            "server",
            "2.0.0",
            "Groups the subcommands that read and change the server configuration.",
            "Varies by subcommand.",
        ))
        .subs(&[CONFIG_GET, CONFIG_SET, CONFIG_RESETSTAT, CONFIG_HELP]);

    const COMMAND_COUNT: CommandSpec = cmd(
        Command,
        "command|count",
        2,
        &["loading", "stale"],
        &["@slow", "@connection"],
    )
    .docs(doc(
        "server",
        "2.8.13",
        "Returns the number of commands the server supports.",
        "O(1)",
    ));

    const COMMAND_INFO: CommandSpec = cmd(
        Command,
        "command|info",
        -2,
        &["loading", "stale"],
        &["@slow", "@connection"],
    )
    .tips(&["nondeterministic_output_order"])
    .docs(
        doc(
            "server",
            "2.8.13",
            "Describes the named commands, or every command when none is named.",
            "O(N), N being the number of commands described.",
        )
        .history(&[("7.0.0", "With no names, describes every command.")])
        .args(&[arg("command-name", Str).opt().multi()]),
    );

    const COMMAND_DOCS: CommandSpec = cmd(
        Command,
        "command|docs",
        -2,
        &["loading", "stale"],
        &["@slow", "@connection"],
    )
    .tips(&["nondeterministic_output_order"])
    .docs(
        doc(
            "server",
            "7.0.0",
            "Returns the documentation of the named commands, or of every command.",
            "O(N), N being the number of commands described.",
        )
        .args(&[arg("command-name", Str).opt().multi()]),
    );

    const COMMAND_GETKEYS: CommandSpec = cmd(
        Command,
        "command|getkeys",
        -4,
        &["loading", "stale"],
        &["@slow", "@connection"],
    )
    .docs(doc(
        "server",
        "2.8.13",
        "Extracts the keys from a complete command line.",
        "O(N), N being the number of arguments of the command line.",
    ));

    const COMMAND_GETKEYSANDFLAGS: CommandSpec = cmd(
        Command,
        "command|getkeysandflags",
        -4,
        &["loading", "stale"],
        &["@slow", "@connection"],
    )
    .docs(doc(
        "server",
        "7.0.0",
        "Extracts the keys from a complete command line, with how each is accessed.",
        "O(N), N being the number of arguments of the command line.",
    ));

    const COMMAND_LIST: CommandSpec = cmd(
        Command,
        "command|list",
        -2,
        &["loading", "stale"],
        &["@slow", "@connection"],
    )
    .tips(&["nondeterministic_output_order"])
    .docs(
        doc(
            "server",
            "7.0.0",
            "Returns the names of the supported commands, optionally filtered.",
            "O(N), N being the number of commands.",
        )
        .args(&[arg("filterby", OneOf).token("FILTERBY").opt().sub(&[
            arg("module-name", Str).token("MODULE"),
            arg("category", Str).token("ACLCAT"),
            arg("pattern", Pattern).token("PATTERN"),
        ])]),
    );

    const COMMAND_HELP: CommandSpec = cmd(
        Command,
        "command|help",
        2,
        &["loading", "stale"],
        &["@slow", "@connection"],
    )
    .docs(doc(
        "server",
        "5.0.0",
        "Lists the COMMAND subcommands with a short description of each.",
        "O(1)",
    ));

    const COMMAND: CommandSpec = cmd(
        Command,
        "command",
        -1,
        &["loading", "stale"],
        &["@slow", "@connection"],
    )
    .tips(&["nondeterministic_output_order"])
    .docs(doc(
        "server",
        "2.8.13",
        "Describes every command the server supports.",
        "O(N), N being the number of commands.",
    ))
    .subs(&[
        COMMAND_COUNT,
        COMMAND_INFO,
        COMMAND_DOCS,
        COMMAND_GETKEYS,
        COMMAND_GETKEYSANDFLAGS,
        COMMAND_LIST,
        COMMAND_HELP,
    ]);

    const TIME: CommandSpec = cmd(Time, "time", 1, &["loading", "stale", "fast"], &["@fast"])
        .tips(&["nondeterministic_output"])
        .docs(doc(
            "server",
            "2.6.0",
            "Returns the server clock as Unix seconds and microseconds.",
            "O(1)",
        ));

    const SLOWLOG_GET: CommandSpec = cmd(
        SlowLog,
        "slowlog|get",
        -2,
        &["admin", "loading", "stale"],
        &["@admin", "@slow", "@dangerous"],
    )
    .tips(&["request_policy:all_nodes", "nondeterministic_output"])
    .docs(
        doc(
            "server",
            "2.2.12",
            "Returns the newest entries of the slow query log.",
            "O(N), N being the number of entries returned.",
        )
        .history(&[("4.0.0", "Entries include the client's address and name.")])
        .args(&[arg("count", Integer).opt()]),
    );

    const SLOWLOG_LEN: CommandSpec = cmd(
        SlowLog,
        "slowlog|len",
        2,
        &["admin", "loading", "stale"],
        &["@admin", "@slow", "@dangerous"],
    )
    .tips(&[
        "request_policy:all_nodes",
        "response_policy:agg_sum",
        "nondeterministic_output",
    ])
    .docs(doc(
        "server",
        "2.2.12",
        "Returns the number of entries in the slow query log.",
        "O(1)",
    ));

    const SLOWLOG_RESET: CommandSpec = cmd(
        SlowLog,
        "slowlog|reset",
        2,
        &["admin", "loading", "stale"],
        &["@admin", "@slow", "@dangerous"],
    )
    .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
    .docs(doc(
        "server",
        "2.2.12",
        "Empties the slow query log.",
        "O(N), N being the number of entries removed.",
    ));

    const SLOWLOG_HELP: CommandSpec = cmd(
        SlowLog,
        "slowlog|help",
        2,
        &["loading", "stale"],
        &["@slow"],
    )
    .docs(doc(
        "server",
        "6.2.0",
        "Lists the SLOWLOG subcommands with a short description of each.",
        "O(1)",
    ));

    const SLOWLOG: CommandSpec = cmd(SlowLog, "slowlog", -2, &[], &["@slow"])
        .docs(doc(
            "server",
            "2.2.12",
            "Groups the subcommands that inspect the slow query log.",
            "Varies by subcommand.",
        ))
        .subs(&[SLOWLOG_GET, SLOWLOG_LEN, SLOWLOG_RESET, SLOWLOG_HELP]);

    const SHUTDOWN: CommandSpec = cmd(
        Shutdown,
        "shutdown",
        -1,
        &[
            "admin",
            "noscript",
            "loading",
            "stale",
            "no_multi",
            "allow_busy",
        ],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(
        doc(
            "server",
            "1.0.0",
            "Stops the server, saving the data first unless told otherwise.",
            "O(N) when saving, N being the number of keys across all databases; O(1) otherwise.",
        )
        .history(&[("7.0.0", "Modifiers `NOW`, `FORCE` and `ABORT`.")])
        .args(&[
            arg("nosave_save", OneOf).opt().sub(&[
                arg("nosave", PureToken).token("NOSAVE"),
                arg("save", PureToken).token("SAVE"),
            ]),
            arg("now", PureToken).token("NOW").since("7.0.0").opt(),
            arg("force", PureToken).token("FORCE").since("7.0.0").opt(),
            arg("abort", PureToken).token("ABORT").since("7.0.0").opt(),
        ]),
    );

    const ACL_WHOAMI: CommandSpec = cmd(
        Acl,
        "acl|whoami",
        2,
        &["noscript", "loading", "stale"],
        &["@slow"],
    )
    .docs(doc(
        "server",
        "6.0.0",
        "Returns the user the current connection is authenticated as.",
        "O(1)",
    ));

    const ACL_SETUSER: CommandSpec = cmd(
        Acl,
        "acl|setuser",
        -3,
        &["admin", "noscript", "loading", "stale"],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(
        doc(
            "server",
            "6.0.0",
            "Creates a user or changes the access rules of a user.",
            "O(N), N being the number of rules given.",
        )
        .history(&[
            ("6.2.0", "Pub/Sub channel patterns."),
            ("7.0.0", "Selectors, and key permissions by kind of access."),
        ])
        .args(&[arg("username", Str), arg("rule", Str).opt().multi()]),
    );

    const ACL_GETUSER: CommandSpec = cmd(
        Acl,
        "acl|getuser",
        3,
        &["admin", "noscript", "loading", "stale"],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(
        doc(
            "server",
            "6.0.0",
            "Returns the access rules of a user.",
            "O(N), N being the number of passwords, command rules and patterns of the user.",
        )
        .history(&[
            ("6.2.0", "Pub/Sub channel patterns."),
            (
                "7.0.0",
                "Selectors; key and channel patterns shown as rules rather than lists.",
            ),
        ])
        .args(&[arg("username", Str)]),
    );

    const ACL_DELUSER: CommandSpec = cmd(
        Acl,
        "acl|deluser",
        -3,
        &["admin", "noscript", "loading", "stale"],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(
        doc(
            "server",
            "6.0.0",
            "Deletes users and their access rules.",
            "O(1) amortized per user.",
        )
        .args(&[arg("username", Str).multi()]),
    );

    const ACL_LIST: CommandSpec = cmd(
        Acl,
        "acl|list",
        2,
        &["admin", "noscript", "loading", "stale"],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(doc(
        "server",
        "6.0.0",
        "Returns the rules of every user in the format of the ACL file.",
        "O(N), N being the number of users.",
    ));

    const ACL_USERS: CommandSpec = cmd(
        Acl,
        "acl|users",
        2,
        &["admin", "noscript", "loading", "stale"],
        &["@admin", "@slow", "@dangerous"],
    )
    .docs(doc(
        "server",
        "6.0.0",
        "Returns the names of all users.",
        "O(N), N being the number of users.",
    ));

    const ACL_CAT: CommandSpec = cmd(
        Acl,
        "acl|cat",
        -2,
        &["noscript", "loading", "stale"],
        &["@slow"],
    )
    .docs(
        doc(
            "server",
            "6.0.0",
            "Returns the ACL category names, or the commands of one category.",
            "O(1), the categories and commands being fixed.",
        )
        .args(&[arg("categoryname", Str).opt()]),
    );

    const ACL_HELP: CommandSpec =
        cmd(Acl, "acl|help", 2, &["loading", "stale"], &["@slow"]).docs(doc(
            "server",
            "6.0.0",
            "Lists the ACL subcommands with a short description of each.",
            "O(1)",
        ));

    const ACL: CommandSpec = cmd(Acl, "acl", -2, &[], &["@slow"])
        .docs(doc(
            "server",
            "6.0.0",
            "Groups the subcommands that manage users and their access rules.",
            "Varies by subcommand.",
        ))
        .subs(&[
            ACL_WHOAMI,
            ACL_SETUSER,
            ACL_GETUSER,
            ACL_DELUSER,
            ACL_LIST,
            ACL_USERS,
            ACL_CAT,
            ACL_HELP,
        ]);

    const CLUSTER_INFO: CommandSpec = cmd(Cluster, "cluster|info", 2, &["stale"], &["@slow"])
        .tips(&["nondeterministic_output"])
        .docs(doc(
            "cluster",
            "3.0.0",
            "Reports the state and counters of the cluster as this node sees them.",
            "O(1)",
        ));

    const CLUSTER_SLOTS: CommandSpec = cmd(Cluster, "cluster|slots", 2, &["stale"], &["@slow"])
        .tips(&["nondeterministic_output"])
        .docs(
            doc(
                "cluster",
                "3.0.0",
                "Returns the nodes that serve each range of hash slots.",
                "O(N), N being the number of nodes in the cluster.",
            )
            .deprecated("7.0.0", "`CLUSTER SHARDS`")
            .history(&[
                ("4.0.0", "Node IDs in the reply."),
                ("7.0.0", "More networking metadata per node."),
            ]),
        );

    const CLUSTER_SHARDS: CommandSpec = cmd(Cluster, "cluster|shards", 2, &["stale"], &["@slow"])
        .tips(&["nondeterministic_output"])
        .docs(doc(
            "cluster",
            "7.0.0",
            "Returns the shards of the cluster with their slot ranges and nodes.",
            "O(N), N being the number of nodes in the cluster.",
        ));

    const CLUSTER_NODES: CommandSpec = cmd(Cluster, "cluster|nodes", 2, &["stale"], &["@slow"])
        .tips(&["nondeterministic_output"])
        .docs(doc(
            "cluster",
            "3.0.0",
            "Returns the cluster configuration as this node sees it, one node per line.",
            "O(N), N being the number of nodes in the cluster.",
        ));

    const CLUSTER_MYID: CommandSpec = cmd(Cluster, "cluster|myid", 2, &["stale"], &["@slow"]).docs(
        doc("cluster", "3.0.0", "Returns the ID of this node.", "O(1)"),
    );

    const CLUSTER_KEYSLOT: CommandSpec = cmd(Cluster, "cluster|keyslot", 3, &["stale"], &["@slow"])
        .docs(
            doc(
                "cluster",
                "3.0.0",
                "Returns the hash slot that a key maps to.",
                "O(N), N being the length of the key in bytes.",
            )
            .args(&[arg("key", Str)]),
        );

    const CLUSTER_HELP: CommandSpec = cmd(
        Cluster,
        "cluster|help",
        2,
        &["loading", "stale"],
        &["@slow"],
    )
    .docs(doc(
        "cluster",
        "5.0.0",
        "Lists the CLUSTER subcommands with a short description of each.",
        "O(1)",
    ));

    const CLUSTER: CommandSpec = cmd(Cluster, "cluster", -2, &[], &["@slow"])
        .docs(doc(
            "cluster",
            "3.0.0",
            "Groups the subcommands that describe the cluster.",
            "Varies by subcommand.",
        ))
        .subs(&[
            CLUSTER_INFO,
            CLUSTER_SLOTS,
            CLUSTER_SHARDS,
            CLUSTER_NODES,
            CLUSTER_MYID,
            CLUSTER_KEYSLOT,
            CLUSTER_HELP,
        ]);

    const READONLY: CommandSpec = cmd(
        ReadOnly,
        "readonly",
        1,
        &["loading", "stale", "fast"],
        &["@fast", "@connection"],
    )
    .docs(doc(
        "cluster",
        "3.0.0",
        "Allows this connection to read from a replica node of a cluster.",
        "O(1)",
    ));

    const READWRITE: CommandSpec = cmd(
        ReadWrite,
        "readwrite",
        1,
        &["loading", "stale", "fast"],
        &["@fast", "@connection"],
    )
    .docs(doc(
        "cluster",
        "3.0.0",
        "Ends the read-only mode of this connection to a cluster replica.",
        "O(1)",
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<Bytes> {
        line.split(' ')
            .filter(|a| !a.is_empty())
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect()
    }

    fn every() -> impl Iterator<Item = &'static CommandSpec> {
        all()
            .iter()
            .flat_map(|c| std::iter::once(c).chain(c.subcommands))
    }

    fn positions(line: &str) -> Vec<usize> {
        let args = argv(line);
        let spec = lookup_command(&args).expect("known command");
        key_positions(spec, &args)
    }

    #[test]
    fn ids_index_the_table() {
        for (i, c) in all().iter().enumerate() {
            assert_eq!(c.id as usize, i, "{} is out of CmdId order", c.name);
            assert!(std::ptr::eq(c.id.spec(), c));
            for s in c.subcommands {
                assert_eq!(s.id, c.id, "{}", s.name);
                assert!(s.subcommands.is_empty());
                let sub = s
                    .name
                    .strip_prefix(c.name)
                    .and_then(|r| r.strip_prefix('|'));
                assert!(sub.is_some_and(|n| !n.is_empty()), "{}", s.name);
            }
        }
    }

    #[test]
    fn names_are_lowercase_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for c in every() {
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(seen.insert(c.name), "{} twice", c.name);
        }
        assert_eq!(all().len(), 62);
        assert_eq!(seen.len(), 62 + 38 + 12);
    }

    #[test]
    fn lookups_ignore_case() {
        for c in all() {
            let upper = c.name.to_ascii_uppercase();
            assert!(std::ptr::eq(lookup(upper.as_bytes()).expect("top"), c));
            for s in c.subcommands {
                let sub = s.name.rsplit('|').next().unwrap_or_default();
                let found = lookup_sub(c, sub.to_ascii_uppercase().as_bytes()).expect("sub");
                assert!(std::ptr::eq(found, s));
                let full = s.name.to_ascii_uppercase();
                assert!(std::ptr::eq(
                    lookup_fullname(full.as_bytes()).expect("full"),
                    s
                ));
            }
        }
        for missing in [
            &b"nosuch"[..],
            b"",
            b"getx",
            b"incrbyfloatandmore",
            b"client|setname",
        ] {
            assert!(lookup(missing).is_none());
        }
        let client = CmdId::Client.spec();
        assert!(lookup_sub(client, b"nosuch").is_none());
        assert!(lookup_sub(client, b"").is_none());
        for missing in [
            &b"client|"[..],
            b"|",
            b"|get",
            b"get|x",
            b"client|kill|x",
            b"",
        ] {
            assert!(lookup_fullname(missing).is_none());
        }
        assert_eq!(
            lookup_fullname(b"Client|Kill").map(|s| s.name),
            Some("client|kill")
        );
    }

    #[test]
    fn lookup_command_resolves_subcommands() {
        let name = |line: &str| lookup_command(&argv(line)).map(|s| s.name);
        assert_eq!(name("client setname x"), Some("client|setname"));
        assert_eq!(name("CLIENT"), Some("client"));
        assert_eq!(name("client nosuch"), None);
        assert_eq!(name("get k"), Some("get"));
        assert_eq!(name("get k extra"), Some("get"));
        assert_eq!(name("nosuch"), None);
        assert_eq!(name(""), None);
    }

    #[test]
    fn check_arity_exact_and_minimum() {
        let arity = |name: &[u8], argc| check_arity(lookup_fullname(name).expect("known"), argc);
        assert!(arity(b"get", 2) && !arity(b"get", 1) && !arity(b"get", 3));
        assert!(arity(b"set", 3) && arity(b"set", 9) && !arity(b"set", 2));
        assert!(arity(b"ping", 1) && arity(b"ping", 2) && !arity(b"ping", 0));
        assert!(arity(b"client", 2) && !arity(b"client", 1));
        assert!(arity(b"client|setname", 3) && !arity(b"client|setname", 4));
        assert!(arity(b"command|getkeys", 4) && !arity(b"command|getkeys", 3));
        assert!(arity(b"reset", 1) && !arity(b"reset", 2));
    }

    #[test]
    fn key_positions_follow_the_key_specs() {
        assert_eq!(positions("get k"), [1]);
        assert_eq!(positions("set k v EX 10 GET"), [1]);
        assert_eq!(positions("getex k PERSIST"), [1]);
        assert_eq!(positions("mget a b c"), [1, 2, 3]);
        assert_eq!(positions("mset a 1 b 2"), [1, 3]);
        assert_eq!(positions("mset a 1 b"), [1, 3]);
        assert_eq!(positions("del a b"), [1, 2]);
        assert_eq!(positions("exists a a"), [1, 2]);
        assert_eq!(positions("rename a b"), [1, 2]);
        assert_eq!(positions("expire k 10 NX"), [1]);
        // No keys: keyless commands, and arguments that do not reach a spec's keys.
        assert!(positions("ping").is_empty());
        assert!(positions("scan 0 MATCH k*").is_empty());
        assert!(positions("client kill 1.2.3.4:5").is_empty());
        assert!(positions("get").is_empty());
        assert!(positions("del").is_empty());
        assert!(positions("rename a").is_empty());
    }

    #[test]
    fn set_key_flags_depend_on_get() {
        let flags = |line: &str| {
            let args = argv(line);
            let keys = keys_with_flags(CmdId::Set.spec(), &args);
            assert_eq!(keys.len(), 1);
            keys[0].flags
        };
        assert_eq!(flags("set k v"), ["OW", "update"]);
        assert_eq!(flags("set k v EX 1 NX"), ["OW", "update"]);
        assert_eq!(flags("set k v gEt"), ["RW", "access", "update"]);
        // The value itself being "get" is not the option.
        assert_eq!(flags("set k get"), ["OW", "update"]);
        let args = argv("rename a b");
        let keys = keys_with_flags(CmdId::Rename.spec(), &args);
        assert_eq!(keys[0].flags, ["RW", "access", "delete"]);
        assert_eq!(keys[1].flags, ["OW", "update"]);
    }

    // Shapes no command in the table uses yet, modelled on Redis commands that have them.
    static KEYNUM: CommandSpec = cmd(CmdId::Ping, "keynum", -3, &[], &[]).key_specs(&[
        // ZUNIONSTORE-like: destination, then numkeys and the keys.
        KeySpec::single(1, &["OW", "update"]),
        KeySpec {
            notes: None,
            flags: &["RO", "access"],
            begin_search: BeginSearch::Index(2),
            find_keys: FindKeys::Keynum {
                keynumidx: 0,
                firstkey: 1,
                keystep: 1,
            },
        },
    ]);
    static KEYNUM_PAIRS: CommandSpec =
        cmd(CmdId::Ping, "pairs", -2, &[], &[]).key_specs(&[KeySpec {
            notes: None,
            flags: &["OW", "update"],
            begin_search: BeginSearch::Index(1),
            find_keys: FindKeys::Keynum {
                keynumidx: 0,
                firstkey: 1,
                keystep: 2,
            },
        }]);
    static KEYWORD: CommandSpec = cmd(CmdId::Ping, "keyword", -2, &[], &[]).key_specs(&[
        // XREAD-like: keys are the first half of what follows STREAMS.
        KeySpec {
            notes: None,
            flags: &["RO", "access"],
            begin_search: BeginSearch::Keyword {
                keyword: "STREAMS",
                startfrom: 1,
            },
            find_keys: FindKeys::Range {
                lastkey: -1,
                keystep: 1,
                limit: 2,
            },
        },
        // MIGRATE-like: KEYS searched backwards from the end.
        KeySpec {
            notes: None,
            flags: &["RW", "access", "delete"],
            begin_search: BeginSearch::Keyword {
                keyword: "KEYS",
                startfrom: -2,
            },
            find_keys: FindKeys::Range {
                lastkey: -1,
                keystep: 1,
                limit: 0,
            },
        },
    ]);

    #[test]
    fn keynum_specs() {
        let pos = |line: &str| key_positions(&KEYNUM, &argv(line));
        assert_eq!(pos("z dest 2 a b"), [1, 3, 4]);
        assert_eq!(pos("z dest 0"), [1]);
        // More keys announced than given, or a bad count: no keys at all.
        assert!(pos("z dest 3 a b").is_empty());
        assert!(pos("z dest x a").is_empty());
        assert!(pos("z dest -1 a").is_empty());
        assert!(pos("z dest +1 a").is_empty());
        assert!(pos("z dest 9223372036854775807 a").is_empty());
    }

    #[test]
    fn keynum_with_a_step() {
        let pos = |line: &str| key_positions(&KEYNUM_PAIRS, &argv(line));
        assert_eq!(pos("p 2 k1 v1 k2 v2"), [2, 4]);
        assert!(pos("p 3 k1 v1 k2 v2").is_empty());
        assert!(pos("p 9223372036854775807 k v").is_empty());
    }

    #[test]
    fn keyword_specs() {
        let pos = |line: &str| key_positions(&KEYWORD, &argv(line));
        assert_eq!(pos("x COUNT 1 STREAMS a b 0 0"), [4, 5]);
        assert_eq!(pos("x streams a 0"), [2]);
        // Absent keywords: no keys from that spec, without invalidating the others.
        assert!(pos("x COUNT 1").is_empty());
        // The keyword as the last argument is not searched for.
        assert!(pos("x a STREAMS").is_empty());
        assert_eq!(pos("x h p KEYS k1 k2"), [4, 5]);
        // The STREAMS spec takes the first half of everything after it, KEYS included.
        assert_eq!(pos("x STREAMS s 0 KEYS k"), [2, 3, 5]);
    }

    #[test]
    fn legacy_key_range_agrees_with_key_specs() {
        for c in every().filter(|c| !c.key_specs.is_empty()) {
            for extra in 0..4 {
                let n = c.arity.unsigned_abs() as usize + extra;
                if !check_arity(c, n) {
                    continue;
                }
                let args: Vec<Bytes> = (0..n).map(|i| Bytes::from(format!("a{i}"))).collect();
                let last = if c.last_key < 0 {
                    n as i32 + c.last_key
                } else {
                    c.last_key
                };
                let legacy: Vec<usize> = (c.first_key..=last)
                    .step_by(c.step as usize)
                    .map(|i| i as usize)
                    .collect();
                assert_eq!(key_positions(c, &args), legacy, "{} with {n} args", c.name);
            }
        }
    }

    #[test]
    fn docs_are_complete_and_key_args_name_key_specs() {
        fn key_args(args: &[Arg], out: &mut Vec<u32>) {
            for a in args {
                assert_eq!(
                    a.kind == ArgType::Key,
                    a.key_spec_index.is_some(),
                    "{}",
                    a.name
                );
                out.extend(a.key_spec_index);
                assert_eq!(
                    matches!(a.kind, ArgType::OneOf | ArgType::Block),
                    !a.arguments.is_empty()
                );
                key_args(a.arguments, out);
            }
        }
        for c in every() {
            let d = &c.docs;
            for text in [d.summary, d.since, d.group, d.complexity] {
                assert!(!text.is_empty(), "{}", c.name);
            }
            assert_eq!(
                d.deprecated_since.is_some(),
                d.doc_flags.contains(&"deprecated")
            );
            let mut used = Vec::new();
            key_args(d.arguments, &mut used);
            used.sort_unstable();
            let all: Vec<u32> = (0..c.key_specs.len() as u32).collect();
            assert_eq!(used, all, "{}: every key spec has its argument", c.name);
        }
    }

    #[test]
    fn flags_agree_with_acl_categories() {
        for c in every() {
            let cat = |name: &str| c.acl_categories.contains(&name);
            assert_eq!(c.has_flag("write"), cat("@write"), "{}", c.name);
            assert_eq!(c.has_flag("readonly"), cat("@read"), "{}", c.name);
            assert_eq!(c.has_flag("admin"), cat("@admin"), "{}", c.name);
            assert_eq!(c.has_flag("fast"), cat("@fast"), "{}", c.name);
            assert_eq!(!c.has_flag("fast"), cat("@slow"), "{}", c.name);
            assert!(c.acl_categories.iter().all(|c| c.starts_with('@')));
        }
    }
}
