//! COMMAND [COUNT | INFO | DOCS | GETKEYS | GETKEYSANDFLAGS | LIST | HELP], with Redis 7.0's
//! reply layouts and error texts, answered from the declarations alone.
//!
//! Replies are built as [`Reply`] trees; flags and categories are sets and key specs and docs
//! maps, so encoding for RESP2 gives Redis's flattened arrays and for RESP3 its typed aggregates.

use bytes::Bytes;
use rialto_resp::Reply;

use super::Handler;
use crate::command_table::ArgType::{OneOf, Pattern, String as Str};
use crate::command_table::{
    self, arg, cmd, doc, help, Arg, BeginSearch, CommandSpec, Docs, FindKeys, KeySpec,
};
use crate::glob::glob_match;

const COMMAND_COUNT: CommandSpec = cmd(
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
))
.handler(Handler::Meta(count));

const COMMAND_INFO: CommandSpec = cmd(
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
)
.handler(Handler::Meta(info_cmd));

const COMMAND_DOCS: CommandSpec = cmd(
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
)
.handler(Handler::Meta(docs_cmd));

const COMMAND_GETKEYS: CommandSpec = cmd(
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
))
.handler(Handler::Meta(getkeys));

const COMMAND_GETKEYSANDFLAGS: CommandSpec = cmd(
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
))
.handler(Handler::Meta(getkeysandflags));

const COMMAND_LIST: CommandSpec = cmd(
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
)
.handler(Handler::Meta(list));

const COMMAND_HELP: CommandSpec = cmd(
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
))
.handler(Handler::Meta(help));

pub const COMMAND: CommandSpec = cmd(
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
])
.handler(Handler::Meta(info_all));

/// Runs `COMMAND ...` (`args[0]` the command name as the client sent it) as a connection
/// would after admission: the subcommand resolved, its arity checked, its handler called.
#[cfg(test)]
pub fn run(args: &[Bytes]) -> Reply {
    let base: &'static CommandSpec = &COMMAND;
    match command_table::resolve_in(base, args) {
        Ok(spec) => match spec.handler {
            Some(Handler::Meta(f)) => f(args),
            // COMMAND and its subcommands are all declared with Meta handlers (tested).
            _ => crate::reply::err_string(format!("ERR '{}' does not run here", spec.name)),
        },
        Err(r) => r,
    }
}

fn info_all(_: &[Bytes]) -> Reply {
    Reply::Array(command_table::all().iter().map(info).collect())
}

fn count(_: &[Bytes]) -> Reply {
    Reply::Integer(i64::try_from(command_table::all().len()).unwrap_or(0))
}

fn info_cmd(args: &[Bytes]) -> Reply {
    let names = &args[2..];
    if names.is_empty() {
        return Reply::Array(command_table::all().iter().map(info).collect());
    }
    Reply::Array(
        names
            .iter()
            .map(|n| command_table::lookup_fullname(n).map_or(Reply::Null, info))
            .collect(),
    )
}

fn docs_cmd(args: &[Bytes]) -> Reply {
    let names = &args[2..];
    let entry = |spec: &CommandSpec| (sym_bulk(spec.name), docs(spec));
    if names.is_empty() {
        return Reply::Map(command_table::all().iter().map(entry).collect());
    }
    // Unknown names are left out, not answered with a null.
    Reply::Map(
        names
            .iter()
            .filter_map(|n| command_table::lookup_fullname(n))
            .map(entry)
            .collect(),
    )
}

fn getkeys(args: &[Bytes]) -> Reply {
    keys_of(&args[2..], false)
}

fn getkeysandflags(args: &[Bytes]) -> Reply {
    keys_of(&args[2..], true)
}

/// The keys of the command line `cmdline`, with their flags or not.
fn keys_of(cmdline: &[Bytes], with_flags: bool) -> Reply {
    let Some(spec) = command_table::lookup_command(cmdline) else {
        return Reply::error("ERR Invalid command specified");
    };
    // Key specs flagged `not_key` (shard channels) do not count, as in Redis.
    if spec.key_specs.iter().all(|k| k.flags.contains(&"not_key")) {
        return Reply::error("ERR The command has no key arguments");
    }
    if !command_table::check_arity(spec, cmdline.len()) {
        return Reply::error("ERR Invalid number of arguments specified for command");
    }
    let keys = command_table::keys_with_flags(spec, cmdline);
    if keys.is_empty() {
        return if spec.has_flag("no_mandatory_keys") {
            Reply::Array(Vec::new())
        } else {
            Reply::error("ERR Invalid arguments specified for command")
        };
    }
    Reply::Array(
        keys.iter()
            .map(|k| {
                let key = Reply::Bulk(cmdline.get(k.pos).cloned().unwrap_or_default());
                if with_flags {
                    Reply::Array(vec![key, sym_set(k.flags)])
                } else {
                    key
                }
            })
            .collect(),
    )
}

/// What `COMMAND LIST` keeps.
enum ListFilter<'a> {
    All,
    /// `MODULE`: no command comes from a module.
    Nothing,
    AclCat(&'a [u8]),
    Pattern(&'a [u8]),
}

impl ListFilter<'_> {
    fn keeps(&self, spec: &CommandSpec) -> bool {
        match self {
            ListFilter::All => true,
            ListFilter::Nothing => false,
            ListFilter::AclCat(cat) => spec.acl_categories.iter().any(|c| {
                c.strip_prefix('@')
                    .is_some_and(|c| c.as_bytes().eq_ignore_ascii_case(cat))
            }),
            // Without case, as Redis matches command names.
            ListFilter::Pattern(p) => glob_match(p, spec.name.as_bytes(), true),
        }
    }
}

fn list(args: &[Bytes]) -> Reply {
    let filter = match &args[2..] {
        [] => ListFilter::All,
        // Exactly one FILTERBY and nothing after it; anything else is a syntax error.
        [by, kind, arg] if by.eq_ignore_ascii_case(b"filterby") => {
            if kind.eq_ignore_ascii_case(b"module") {
                ListFilter::Nothing
            } else if kind.eq_ignore_ascii_case(b"aclcat") {
                ListFilter::AclCat(arg)
            } else if kind.eq_ignore_ascii_case(b"pattern") {
                ListFilter::Pattern(arg)
            } else {
                return Reply::error("ERR syntax error");
            }
        }
        _ => return Reply::error("ERR syntax error"),
    };
    let mut names = Vec::new();
    // Parents before their subcommands, as Redis lists them.
    for spec in command_table::all() {
        for s in std::iter::once(spec).chain(spec.subcommands) {
            if filter.keeps(s) {
                names.push(sym_bulk(s.name));
            }
        }
    }
    Reply::Array(names)
}

fn help(_: &[Bytes]) -> Reply {
    help::reply(&COMMAND)
}

/// One `COMMAND INFO` entry: name, arity, flags, first key, last key, step, ACL categories,
/// tips, key specs, subcommands.
fn info(spec: &CommandSpec) -> Reply {
    Reply::Array(vec![
        sym_bulk(spec.name),
        Reply::Integer(spec.arity.into()),
        sym_set(spec.flags),
        Reply::Integer(spec.first_key.into()),
        Reply::Integer(spec.last_key.into()),
        Reply::Integer(spec.step.into()),
        sym_set(spec.acl_categories),
        Reply::Set(spec.tips.iter().map(|t| sym_bulk(t)).collect()),
        Reply::Set(spec.key_specs.iter().map(key_spec).collect()),
        Reply::Set(spec.subcommands.iter().map(info).collect()),
    ])
}

fn key_spec(ks: &KeySpec) -> Reply {
    let mut m = Vec::with_capacity(4);
    if let Some(notes) = ks.notes {
        m.push(field("notes", sym_bulk(notes)));
    }
    m.push(field("flags", sym_set(ks.flags)));
    let (kind, spec) = match ks.begin_search {
        BeginSearch::Index(i) => ("index", vec![field("index", Reply::Integer(i.into()))]),
        BeginSearch::Keyword { keyword, startfrom } => (
            "keyword",
            vec![
                field("keyword", sym_bulk(keyword)),
                field("startfrom", Reply::Integer(startfrom.into())),
            ],
        ),
        BeginSearch::Unknown => ("unknown", Vec::new()),
    };
    m.push(field("begin_search", typed(kind, spec)));
    let (kind, spec) = match ks.find_keys {
        FindKeys::Range {
            lastkey,
            keystep,
            limit,
        } => (
            "range",
            vec![
                field("lastkey", Reply::Integer(lastkey.into())),
                field("keystep", Reply::Integer(keystep.into())),
                field("limit", Reply::Integer(limit.into())),
            ],
        ),
        FindKeys::Keynum {
            keynumidx,
            firstkey,
            keystep,
        } => (
            "keynum",
            vec![
                field("keynumidx", Reply::Integer(keynumidx.into())),
                field("firstkey", Reply::Integer(firstkey.into())),
                field("keystep", Reply::Integer(keystep.into())),
            ],
        ),
        FindKeys::Unknown => ("unknown", Vec::new()),
    };
    m.push(field("find_keys", typed(kind, spec)));
    Reply::Map(m)
}

/// `{type: kind, spec: {...}}`, the shape of `begin_search` and `find_keys`.
fn typed(kind: &'static str, spec: Vec<(Reply, Reply)>) -> Reply {
    Reply::Map(vec![
        field("type", sym_bulk(kind)),
        field("spec", Reply::Map(spec)),
    ])
}

/// One `COMMAND DOCS` value; optional fields appear only when set, in Redis's order.
fn docs(spec: &CommandSpec) -> Reply {
    let d: &Docs = &spec.docs;
    let mut m = vec![
        field("summary", sym_bulk(d.summary)),
        field("since", sym_bulk(d.since)),
        field("group", sym_bulk(d.group)),
    ];
    // MONITOR has none in Redis's docs.
    if !d.complexity.is_empty() {
        m.push(field("complexity", sym_bulk(d.complexity)));
    }
    if !d.doc_flags.is_empty() {
        m.push(field("doc_flags", sym_set(d.doc_flags)));
    }
    if let Some(v) = d.deprecated_since {
        m.push(field("deprecated_since", sym_bulk(v)));
    }
    if let Some(v) = d.replaced_by {
        m.push(field("replaced_by", sym_bulk(v)));
    }
    if !d.history.is_empty() {
        let entries = d.history.iter();
        let entries = entries.map(|(v, what)| Reply::Array(vec![sym_bulk(v), sym_bulk(what)]));
        m.push(field("history", Reply::Set(entries.collect())));
    }
    if !d.arguments.is_empty() {
        m.push(field("arguments", args_reply(d.arguments)));
    }
    if !spec.subcommands.is_empty() {
        let subs = spec.subcommands.iter();
        let subs = subs.map(|s| (sym_bulk(s.name), docs(s)));
        m.push(field("subcommands", Reply::Map(subs.collect())));
    }
    Reply::Map(m)
}

fn args_reply(list: &[Arg]) -> Reply {
    Reply::Array(list.iter().map(arg_reply).collect())
}

fn arg_reply(a: &Arg) -> Reply {
    let mut m = vec![
        field("name", sym_bulk(a.name)),
        field("type", sym_bulk(a.kind.as_str())),
    ];
    if let Some(i) = a.key_spec_index {
        m.push(field("key_spec_index", Reply::Integer(i.into())));
    }
    if let Some(t) = a.token {
        m.push(field("token", sym_bulk(t)));
    }
    if let Some(v) = a.since {
        m.push(field("since", sym_bulk(v)));
    }
    if let Some(v) = a.deprecated_since {
        m.push(field("deprecated_since", sym_bulk(v)));
    }
    if !a.flags.is_empty() {
        let flags = a.flags.names().map(Reply::simple).collect();
        m.push(field("flags", Reply::Set(flags)));
    }
    if !a.arguments.is_empty() {
        m.push(field("arguments", args_reply(a.arguments)));
    }
    Reply::Map(m)
}

fn field(name: &'static str, value: Reply) -> (Reply, Reply) {
    (sym_bulk(name), value)
}

/// A bulk string of static text, without copying it.
fn sym_bulk(s: &'static str) -> Reply {
    Reply::Bulk(Bytes::from_static(s.as_bytes()))
}

/// A set of status strings: how Redis sends flags and categories.
fn sym_set(items: &'static [&'static str]) -> Reply {
    Reply::Set(items.iter().map(|s| Reply::simple(s)).collect())
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use rialto_resp::Protocol;

    use super::*;

    fn cmd(line: &str) -> Reply {
        let args: Vec<Bytes> = line
            .split(' ')
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        run(&args)
    }

    fn encoded(r: &Reply, proto: Protocol) -> String {
        let mut b = BytesMut::new();
        r.encode(proto, &mut b);
        String::from_utf8_lossy(&b).replace("\r\n", " ")
    }

    fn err(text: &str) -> Reply {
        Reply::Error(Bytes::copy_from_slice(text.as_bytes()))
    }

    #[test]
    fn info_layout_in_both_protocols() {
        // Byte for byte what redis-server 7.0 sends (CRLFs shown as spaces).
        let get = cmd("COMMAND INFO get");
        assert_eq!(
            encoded(&get, Protocol::Resp2),
            "*1 *10 $3 get :2 *2 +readonly +fast :1 :1 :1 *3 +@read +@string +@fast *0 *1 \
             *6 $5 flags *2 +RO +access \
             $12 begin_search *4 $4 type $5 index $4 spec *2 $5 index :1 \
             $9 find_keys *4 $4 type $5 range $4 spec *6 $7 lastkey :0 $7 keystep :1 $5 limit :0 \
             *0 "
        );
        assert_eq!(
            encoded(&get, Protocol::Resp3),
            "*1 *10 $3 get :2 ~2 +readonly +fast :1 :1 :1 ~3 +@read +@string +@fast ~0 ~1 \
             %3 $5 flags ~2 +RO +access \
             $12 begin_search %2 $4 type $5 index $4 spec %1 $5 index :1 \
             $9 find_keys %2 $4 type $5 range $4 spec %3 $7 lastkey :0 $7 keystep :1 $5 limit :0 \
             ~0 "
        );
    }

    #[test]
    fn whole_table_replies() {
        let n = command_table::all().len();
        assert_eq!(cmd("COMMAND COUNT"), Reply::Integer(n as i64));
        let Reply::Array(all) = cmd("command") else {
            panic!("COMMAND is an array")
        };
        assert_eq!(all.len(), n);
        assert_eq!(cmd("COMMAND"), cmd("COMMAND INFO"));
        let Reply::Map(docs) = cmd("COMMAND DOCS") else {
            panic!("COMMAND DOCS is a map")
        };
        assert_eq!(docs.len(), n);
        // Parents carry their subcommands in both.
        let Reply::Array(client) = cmd("COMMAND INFO client") else {
            panic!("array")
        };
        let Some(Reply::Array(client)) = client.first() else {
            panic!("entry")
        };
        assert_eq!(
            client.last(),
            Some(&Reply::Set(vec![
                info(command_table::lookup_fullname(b"client|setname").expect("setname")),
                info(command_table::lookup_fullname(b"client|getname").expect("getname")),
                info(command_table::lookup_fullname(b"client|id").expect("id")),
                info(command_table::lookup_fullname(b"client|list").expect("list")),
                info(command_table::lookup_fullname(b"client|info").expect("info")),
                info(command_table::lookup_fullname(b"client|setinfo").expect("setinfo")),
                info(command_table::lookup_fullname(b"client|kill").expect("kill")),
                info(command_table::lookup_fullname(b"client|unblock").expect("unblock")),
                info(command_table::lookup_fullname(b"client|reply").expect("reply")),
                info(command_table::lookup_fullname(b"client|no-evict").expect("no-evict")),
                info(command_table::lookup_fullname(b"client|tracking").expect("tracking")),
                info(command_table::lookup_fullname(b"client|caching").expect("caching")),
                info(command_table::lookup_fullname(b"client|getredir").expect("getredir")),
                info(command_table::lookup_fullname(b"client|trackinginfo").expect("info")),
                info(command_table::lookup_fullname(b"client|help").expect("help")),
            ]))
        );
    }

    #[test]
    fn info_and_docs_with_unknown_names() {
        let Reply::Array(v) = cmd("COMMAND INFO nosuch GET client|") else {
            panic!("array")
        };
        assert_eq!(v.len(), 3);
        assert_eq!((&v[0], &v[2]), (&Reply::Null, &Reply::Null));
        let Reply::Map(m) = cmd("COMMAND DOCS nosuch Client|Kill") else {
            panic!("map")
        };
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].0, Reply::bulk("client|kill"));
    }

    #[test]
    fn dispatch_errors() {
        assert_eq!(
            cmd("command foo"),
            err("ERR unknown subcommand 'foo'. Try COMMAND HELP.")
        );
        let long = format!("command {}", "x".repeat(200));
        let want = format!(
            "ERR unknown subcommand '{}'. Try COMMAND HELP.",
            "x".repeat(128)
        );
        assert_eq!(cmd(&long), err(&want));
        assert_eq!(
            cmd("CoMmand a\0b"),
            err("ERR unknown subcommand 'a'. Try COMMAND HELP.")
        );
        assert_eq!(
            cmd("command count x"),
            err("ERR wrong number of arguments for 'command|count' command")
        );
        assert_eq!(
            cmd("command getkeys get"),
            err("ERR wrong number of arguments for 'command|getkeys' command")
        );
    }

    #[test]
    fn getkeys() {
        let keys = |line: &str| cmd(line);
        let bulks = |v: &[&str]| Reply::Array(v.iter().map(Reply::bulk).collect());
        assert_eq!(keys("COMMAND GETKEYS mset a 1 b 2"), bulks(&["a", "b"]));
        assert_eq!(
            keys("COMMAND GETKEYS client list"),
            err("ERR The command has no key arguments")
        );
        assert_eq!(
            keys("COMMAND GETKEYS nosuch x"),
            err("ERR Invalid command specified")
        );
        assert_eq!(
            keys("COMMAND GETKEYS client nosuch"),
            err("ERR Invalid command specified")
        );
        assert_eq!(
            keys("COMMAND GETKEYS get a b"),
            err("ERR Invalid number of arguments specified for command")
        );
        let flags = |f: &[&'static str]| Reply::Set(f.iter().map(|s| Reply::simple(s)).collect());
        assert_eq!(
            keys("COMMAND GETKEYSANDFLAGS set k v get"),
            Reply::Array(vec![Reply::Array(vec![
                Reply::bulk("k"),
                flags(&["RW", "access", "update"])
            ])])
        );
    }

    #[test]
    fn list_and_filters() {
        let names = |line: &str| match cmd(line) {
            Reply::Array(v) => v,
            other => panic!("{other:?}"),
        };
        let total: usize = command_table::all()
            .iter()
            .map(|c| 1 + c.subcommands.len())
            .sum();
        let all = names("COMMAND LIST");
        assert_eq!(all.len(), total);
        // Parents come before their subcommands.
        let pos = |n: &str| all.iter().position(|r| *r == Reply::bulk(n));
        assert!(pos("client") < pos("client|setname"));
        assert_eq!(names("COMMAND LIST FILTERBY pattern *").len(), total);
        assert_eq!(
            names("COMMAND LIST filterby PATTERN CLIENT|KILL"),
            [Reply::bulk("client|kill")]
        );
        assert!(names("COMMAND LIST FILTERBY module x").is_empty());
        assert!(names("COMMAND LIST FILTERBY aclcat nosuch").is_empty());
        assert!(names("COMMAND LIST FILTERBY aclcat @string").is_empty());
        let strings = names("COMMAND LIST FILTERBY ACLCAT String");
        assert!(strings.contains(&Reply::bulk("getex")) && !strings.contains(&Reply::bulk("del")));
        for bad in [
            "COMMAND LIST x",
            "COMMAND LIST FILTERBY aclcat",
            "COMMAND LIST FILTERBY foo x",
            "COMMAND LIST FILTERBY aclcat string FILTERBY pattern *",
        ] {
            assert_eq!(cmd(bad), err("ERR syntax error"), "{bad}");
        }
    }

    #[test]
    fn help_is_status_lines() {
        let Reply::Array(lines) = cmd("command help") else {
            panic!("array")
        };
        assert!(lines.len() > 2 && lines.iter().all(|l| matches!(l, Reply::Simple(_))));
    }
}
