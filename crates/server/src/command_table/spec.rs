//! The vocabulary of command declarations: what `COMMAND INFO` and `COMMAND DOCS` report about a
//! command (Redis 7.0's metadata), with the handler that runs it, and `const` builders so that
//! each command file declares its command as a plain constant.

use bytes::Bytes;

use crate::commands::Handler;

/// A command or subcommand as `COMMAND INFO` and `COMMAND DOCS` describe it.
#[derive(Debug, Clone, Copy)]
pub struct CommandSpec {
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
    /// How the command runs; `None` only for a container whose arity requires a subcommand.
    pub handler: Option<Handler>,
    /// The command's own key finder, for keys its key specs cannot describe exactly (SET's
    /// flags depend on its GET option); used instead of the key specs when set.
    pub getkeys: Option<GetKeysFn>,
    /// A command that writes only with some arguments (SORT with STORE): the read that runs
    /// it otherwise, and the test of the arguments that selects `handler`.
    pub read_form: Option<ReadForm>,
    /// Redis's hidden `may_replicate` flag (not in `COMMAND INFO`): a command not flagged
    /// `write` that may still change data (PFCOUNT's cache), refused in read-only scripts.
    pub may_replicate: bool,
}

/// See [`CommandSpec::read_form`].
#[derive(Debug, Clone, Copy)]
pub struct ReadForm {
    /// Runs the request when `writes` is false.
    pub read: crate::commands::ReadFn,
    /// Whether the request writes (runs as `handler`).
    pub writes: fn(&[Bytes]) -> bool,
}

/// A command's own key finder: the keys of a request (command name at 0).
pub type GetKeysFn = fn(&[Bytes]) -> Vec<KeyRef>;

impl CommandSpec {
    /// Whether the command has this flag, e.g. `"write"`.
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// What runs this request: the read form when the command has one and the arguments do
    /// not write, else the handler.
    pub fn handler_for(&self, args: &[Bytes]) -> Option<Handler> {
        match self.read_form {
            Some(f) if !(f.writes)(args) => Some(Handler::Read(f.read)),
            _ => self.handler,
        }
    }
}

/// A key found in a request: its index in the arguments and its key-spec flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRef {
    pub pos: usize,
    pub flags: &'static [&'static str],
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

// Builders for declarations: everything is `const` so that declarations are plain constants.

pub const NO_DOCS: Docs = Docs {
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

/// A command or subcommand without keys, tips, docs or handler yet.
pub const fn cmd(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    acl_categories: &'static [&'static str],
) -> CommandSpec {
    CommandSpec {
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
        handler: None,
        getkeys: None,
        read_form: None,
        may_replicate: false,
    }
}

impl CommandSpec {
    /// The legacy key range: first, last, step.
    pub const fn keys(self, first_key: i32, last_key: i32, step: i32) -> Self {
        CommandSpec {
            first_key,
            last_key,
            step,
            ..self
        }
    }

    pub const fn tips(self, tips: &'static [&'static str]) -> Self {
        CommandSpec { tips, ..self }
    }

    pub const fn key_specs(self, key_specs: &'static [KeySpec]) -> Self {
        CommandSpec { key_specs, ..self }
    }

    pub const fn docs(self, docs: Docs) -> Self {
        CommandSpec { docs, ..self }
    }

    /// The subcommands, named `parent|sub`, in the order `COMMAND` and `HELP` list them.
    pub const fn subs(self, subcommands: &'static [CommandSpec]) -> Self {
        CommandSpec {
            subcommands,
            ..self
        }
    }

    /// What runs the command.
    pub const fn handler(self, handler: Handler) -> Self {
        CommandSpec {
            handler: Some(handler),
            ..self
        }
    }

    /// The read that runs the request when `writes` says it does not write.
    pub const fn read_form(
        self,
        read: crate::commands::ReadFn,
        writes: fn(&[Bytes]) -> bool,
    ) -> Self {
        CommandSpec {
            read_form: Some(ReadForm { read, writes }),
            ..self
        }
    }

    /// Sets Redis's hidden `may_replicate` flag (see the field).
    pub const fn may_replicate(self) -> Self {
        CommandSpec {
            may_replicate: true,
            ..self
        }
    }

    /// The command's own key finder, used instead of its key specs.
    pub const fn getkeys(self, getkeys: GetKeysFn) -> Self {
        CommandSpec {
            getkeys: Some(getkeys),
            ..self
        }
    }
}

impl KeySpec {
    /// One key at `index`.
    pub const fn single(index: i32, flags: &'static [&'static str]) -> Self {
        KeySpec::range(index, 0, 1, 0, flags)
    }

    pub const fn range(
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

    pub const fn notes(self, notes: &'static str) -> Self {
        KeySpec {
            notes: Some(notes),
            ..self
        }
    }
}

pub const fn doc(
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
    pub const fn deprecated(self, since: &'static str, replaced_by: &'static str) -> Self {
        Docs {
            doc_flags: &["deprecated"],
            deprecated_since: Some(since),
            replaced_by: Some(replaced_by),
            ..self
        }
    }

    /// A system command, documented as such (`doc_flags: syscmd`).
    pub const fn syscmd(self) -> Self {
        Docs {
            doc_flags: &["syscmd"],
            ..self
        }
    }

    pub const fn history(self, history: &'static [(&'static str, &'static str)]) -> Self {
        Docs { history, ..self }
    }

    pub const fn args(self, arguments: &'static [Arg]) -> Self {
        Docs { arguments, ..self }
    }
}

pub const fn arg(name: &'static str, kind: ArgType) -> Arg {
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
    pub const fn key(self, key_spec_index: u32) -> Self {
        Arg {
            key_spec_index: Some(key_spec_index),
            ..self
        }
    }

    pub const fn token(self, token: &'static str) -> Self {
        Arg {
            token: Some(token),
            ..self
        }
    }

    pub const fn since(self, since: &'static str) -> Self {
        Arg {
            since: Some(since),
            ..self
        }
    }

    pub const fn deprecated(self, since: &'static str) -> Self {
        Arg {
            deprecated_since: Some(since),
            ..self
        }
    }

    pub const fn opt(self) -> Self {
        Arg {
            flags: ArgFlags {
                optional: true,
                ..self.flags
            },
            ..self
        }
    }

    pub const fn multi(self) -> Self {
        Arg {
            flags: ArgFlags {
                multiple: true,
                ..self.flags
            },
            ..self
        }
    }

    /// The token repeats before every value.
    pub const fn multi_token(self) -> Self {
        Arg {
            flags: ArgFlags {
                multiple_token: true,
                ..self.flags
            },
            ..self
        }
    }

    pub const fn sub(self, arguments: &'static [Arg]) -> Self {
        Arg { arguments, ..self }
    }
}
