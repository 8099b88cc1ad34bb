//! Compares the command table and `COMMAND` replies with a real Redis 7.0 server, byte for byte
//! in RESP2 and RESP3. Skipped unless `CMDTABLE_REDIS` names one (e.g. `127.0.0.1:7301`).
//!
//! Intentional differences are listed in the `EXCEPTION_*` constants, each with its reason;
//! everything else must be identical.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;

use crate::command_table::{self, CommandSpec};
use crate::commands::command::run;
use bytes::{Bytes, BytesMut};
use rialto_resp::{write_request, Protocol, Reply, ReplyDecoder};

/// CLIENT SETINFO: Redis 7.2 added it, so 7.0 knows nothing about it; we publish 7.2's
/// metadata, checked against the hand-written expectations in `setinfo_is_redis_7_2s`.
const EXCEPTION_NOT_IN_7_0: &[&str] = &["client|setinfo"];

/// Container commands: Redis lists all its subcommands in hash order; we list the ones we
/// implement (for PUBSUB, MEMORY, XGROUP and XINFO all of them), in table order. Each listed subcommand is
/// compared on its own.
const EXCEPTION_SUBCOMMAND_SUBSET: &[&str] = &[
    "client", "config", "command", "slowlog", "acl", "cluster", "pubsub", "script", "function",
    "latency", "memory", "object", "xgroup", "xinfo",
];

/// Key-spec notes are free text, written in our own words.
const EXCEPTION_KEY_SPEC_NOTES: &[&str] = &["set", "getex", "bitfield", "pfcount"];

/// COMMAND DOCS prose, written in our own words for every command: these fields' values are
/// replaced by a placeholder on both sides before comparing (the history's versions are kept).
const EXCEPTION_DOCS_PROSE: &[&str] = &["summary", "complexity", "replaced_by", "history"];

/// COMMAND HELP: the same shape (status lines, usage first), our own text.
const EXCEPTION_HELP_TEXT: &str = "command|help";

struct Conn {
    stream: TcpStream,
    acc: Vec<u8>,
}

impl Conn {
    fn open(addr: &str, proto: Protocol) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect to CMDTABLE_REDIS");
        let mut c = Conn {
            stream,
            acc: Vec::new(),
        };
        if proto == Protocol::Resp3 {
            let (r, _) = c.call(&[b"HELLO".as_slice(), b"3"]);
            assert!(matches!(r, Reply::Map(_)), "HELLO 3: {r:?}");
        }
        c
    }

    /// The reply, decoded and as the raw bytes Redis sent.
    fn call(&mut self, args: &[&[u8]]) -> (Reply, Vec<u8>) {
        let mut out = BytesMut::new();
        write_request(&mut out, args);
        self.stream.write_all(&out).expect("write");
        loop {
            let mut tmp = BytesMut::from(&self.acc[..]);
            if let Some(r) = ReplyDecoder::default().decode(&mut tmp).expect("decode") {
                let used = self.acc.len() - tmp.len();
                let raw: Vec<u8> = self.acc.drain(..used).collect();
                return (r, raw);
            }
            let mut chunk = [0u8; 65536];
            let n = self.stream.read(&mut chunk).expect("read");
            assert!(n > 0, "server closed the connection");
            self.acc.extend_from_slice(&chunk[..n]);
        }
    }
}

fn redis_addr() -> Option<String> {
    let addr = std::env::var("CMDTABLE_REDIS").ok();
    if addr.is_none() {
        eprintln!("CMDTABLE_REDIS not set: skipping the comparison with Redis");
    }
    addr
}

/// Our reply for `args`, encoded for `proto`, with the tree a client decodes from it.
fn ours(args: &[&[u8]], proto: Protocol) -> (Reply, Vec<u8>) {
    let args: Vec<Bytes> = args.iter().map(|a| Bytes::copy_from_slice(a)).collect();
    let mut buf = BytesMut::new();
    run(&args).encode(proto, &mut buf);
    let raw = buf.to_vec();
    let tree = ReplyDecoder::default()
        .decode(&mut buf)
        .expect("decode ours")
        .expect("complete reply");
    assert!(buf.is_empty(), "one reply only");
    (tree, raw)
}

fn enc(r: &Reply, proto: Protocol) -> Vec<u8> {
    let mut b = BytesMut::new();
    r.encode(proto, &mut b);
    b.to_vec()
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).replace("\r\n", " ")
}

fn assert_same(what: &str, proto: Protocol, redis: &[u8], ours: &[u8]) {
    assert!(
        redis == ours,
        "{what} ({proto:?}) differs\n redis: {}\n ours:  {}",
        show(redis),
        show(ours)
    );
}

/// Every command and subcommand in our table that Redis has too (Rialto's own, docs group
/// `rialto`, have no Redis counterpart), by full name.
fn all_names() -> Vec<&'static CommandSpec> {
    command_table::all()
        .iter()
        .flat_map(|c| std::iter::once(c).chain(c.subcommands))
        .filter(|c| !rialto_only(c.name))
        .collect()
}

/// Whether `name` is one of Rialto's own commands.
fn rialto_only(name: &str) -> bool {
    command_table::lookup_fullname(name.as_bytes()).is_some_and(|s| s.docs.group == "rialto")
}

const PROTOS: [Protocol; 2] = [Protocol::Resp2, Protocol::Resp3];

/// Both servers decoded replies must round-trip byte for byte, so comparing trees (after
/// removing an exception) is comparing bytes.
fn decoded(r: (Reply, Vec<u8>), proto: Protocol) -> Reply {
    assert_same("round trip", proto, &r.1, &enc(&r.0, proto));
    r.0
}

fn items(r: &Reply) -> &[Reply] {
    match r {
        Reply::Array(v) | Reply::Set(v) => v,
        other => panic!("not an array: {other:?}"),
    }
}

fn items_mut(r: &mut Reply) -> &mut Vec<Reply> {
    match r {
        Reply::Array(v) | Reply::Set(v) => v,
        other => panic!("not an array: {other:?}"),
    }
}

fn bulk_str(r: &Reply) -> String {
    match r {
        Reply::Bulk(b) | Reply::Simple(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("not a string: {other:?}"),
    }
}

/// Replaces the value of every `notes` field of an info entry's key specs (RESP2 or RESP3).
fn blank_notes(entry: &mut Reply) {
    for spec in items_mut(&mut items_mut(entry)[8]) {
        match spec {
            Reply::Map(pairs) => {
                for (k, v) in pairs {
                    if bulk_str(k) == "notes" {
                        *v = Reply::bulk("<notes>");
                    }
                }
            }
            Reply::Array(flat) => {
                if flat.first().map(bulk_str).as_deref() == Some("notes") {
                    flat[1] = Reply::bulk("<notes>");
                }
            }
            other => panic!("key spec: {other:?}"),
        }
    }
}

#[test]
fn command_info_matches_redis() {
    let Some(addr) = redis_addr() else { return };
    for proto in PROTOS {
        let mut redis = Conn::open(&addr, proto);
        for spec in all_names() {
            let args: [&[u8]; 3] = [b"COMMAND", b"INFO", spec.name.as_bytes()];
            let theirs = decoded(redis.call(&args), proto);
            let mine = decoded(ours(&args, proto), proto);
            let name = spec.name;
            if EXCEPTION_NOT_IN_7_0.contains(&name) {
                assert_eq!(items(&theirs), &[Reply::Null], "{name} is unknown to 7.0");
                continue;
            }
            let (mut theirs, mut mine) = (items(&theirs)[0].clone(), items(&mine)[0].clone());
            if EXCEPTION_KEY_SPEC_NOTES.contains(&name) {
                blank_notes(&mut theirs);
                blank_notes(&mut mine);
            }
            if EXCEPTION_SUBCOMMAND_SUBSET.contains(&name) {
                let their_subs = items_mut(&mut theirs).pop().expect("subcommands");
                let my_subs = items_mut(&mut mine).pop().expect("subcommands");
                let their_names: Vec<String> = items(&their_subs)
                    .iter()
                    .map(|s| bulk_str(&items(s)[0]))
                    .collect();
                for sub in items(&my_subs) {
                    let sub_name = bulk_str(&items(sub)[0]);
                    if EXCEPTION_NOT_IN_7_0.contains(&sub_name.as_str()) {
                        continue;
                    }
                    let i = their_names.iter().position(|n| *n == sub_name);
                    let i = i.unwrap_or_else(|| panic!("{sub_name} unknown to Redis"));
                    let what = format!("COMMAND INFO {name} / {sub_name}");
                    let their_sub = &items(&their_subs)[i];
                    assert_same(&what, proto, &enc(their_sub, proto), &enc(sub, proto));
                }
            }
            let what = format!("COMMAND INFO {name}");
            assert_same(&what, proto, &enc(&theirs, proto), &enc(&mine, proto));
        }
    }
}

/// Replaces our-own-words fields with placeholders and drops `subcommands` (compared one by
/// one), in a RESP3 docs tree.
fn normalize_docs(r: &mut Reply) {
    match r {
        Reply::Map(pairs) => {
            pairs.retain(|(k, _)| !matches!(k, Reply::Bulk(b) if &b[..] == b"subcommands"));
            for (k, v) in pairs.iter_mut() {
                let key = bulk_str(k);
                if key == "history" {
                    for entry in items_mut(v) {
                        items_mut(entry)[1] = Reply::bulk("<prose>");
                    }
                } else if EXCEPTION_DOCS_PROSE.contains(&key.as_str()) {
                    *v = Reply::bulk("<prose>");
                } else {
                    normalize_docs(v);
                }
            }
        }
        Reply::Array(v) | Reply::Set(v) => v.iter_mut().for_each(normalize_docs),
        _ => {}
    }
}

/// Sorts every `subcommands` map by name, in RESP3 maps and in their RESP2 form (a flat
/// array of name, value pairs following a `subcommands` bulk string).
fn sort_subcommands(r: &mut Reply) {
    match r {
        Reply::Map(pairs) => {
            for (k, v) in pairs.iter_mut() {
                if bulk_str(k) == "subcommands" {
                    if let Reply::Map(subs) = v {
                        subs.sort_by_key(|(name, _)| bulk_str(name));
                    }
                }
                sort_subcommands(v);
            }
        }
        Reply::Array(flat) => {
            let at = flat
                .iter()
                .position(|e| matches!(e, Reply::Bulk(b) if &b[..] == b"subcommands"));
            if let Some(Reply::Array(subs)) = at.and_then(|i| flat.get_mut(i + 1)) {
                let mut pairs: Vec<Vec<Reply>> = subs.chunks(2).map(<[Reply]>::to_vec).collect();
                pairs.sort_by_key(|p| bulk_str(&p[0]));
                *subs = pairs.into_iter().flatten().collect();
            }
            flat.iter_mut().for_each(sort_subcommands);
        }
        _ => {}
    }
}

fn map_keys(r: &Reply) -> BTreeSet<String> {
    match r {
        Reply::Map(pairs) => pairs.iter().map(|(k, _)| bulk_str(k)).collect(),
        other => panic!("not a map: {other:?}"),
    }
}

fn map_get<'a>(r: &'a Reply, key: &str) -> Option<&'a Reply> {
    match r {
        Reply::Map(pairs) => pairs
            .iter()
            .find(|(k, _)| bulk_str(k) == key)
            .map(|(_, v)| v),
        other => panic!("not a map: {other:?}"),
    }
}

#[test]
fn command_docs_match_redis() {
    let Some(addr) = redis_addr() else { return };
    let mut r2 = Conn::open(&addr, Protocol::Resp2);
    let mut r3 = Conn::open(&addr, Protocol::Resp3);
    for spec in all_names() {
        let name = spec.name;
        let args: [&[u8]; 3] = [b"COMMAND", b"DOCS", name.as_bytes()];
        let theirs3 = decoded(r3.call(&args), Protocol::Resp3);
        // RESP2 is the RESP3 tree downgraded, on both sides: check Redis downgrades as the
        // resp crate does, then compare the RESP3 trees.
        // Subcommands are compared as sets: Redis lists them in its dict's iteration order,
        // which can differ between two calls (regression: CONFIG's came back rotated on the
        // RESP2 connection while a rehash was under way).
        let mut theirs2 = decoded(r2.call(&args), Protocol::Resp2);
        let mut downgraded = theirs3.as_received(Protocol::Resp2);
        sort_subcommands(&mut theirs2);
        sort_subcommands(&mut downgraded);
        assert_same(
            name,
            Protocol::Resp2,
            &enc(&theirs2, Protocol::Resp2),
            &enc(&downgraded, Protocol::Resp2),
        );
        let (mine3, mine3_raw) = ours(&args, Protocol::Resp3);
        let (_, mine2_raw) = ours(&args, Protocol::Resp2);
        let mine_down = mine3.as_received(Protocol::Resp2);
        assert_same(
            name,
            Protocol::Resp2,
            &enc(&mine_down, Protocol::Resp2),
            &mine2_raw,
        );
        assert_same(
            name,
            Protocol::Resp3,
            &enc(&mine3, Protocol::Resp3),
            &mine3_raw,
        );

        if EXCEPTION_NOT_IN_7_0.contains(&name) {
            assert_eq!(theirs3, Reply::Map(Vec::new()), "{name} is unknown to 7.0");
            continue;
        }
        let (mut theirs, mut mine) = (theirs3, mine3);
        if let (Some(t), Some(m)) = (
            map_get(&theirs, name).and_then(|d| map_get(d, "subcommands")),
            map_get(&mine, name).and_then(|d| map_get(d, "subcommands")),
        ) {
            let (t, m) = (map_keys(t), map_keys(m));
            let extra: Vec<_> = m.difference(&t).collect();
            assert!(
                extra
                    .iter()
                    .all(|n| EXCEPTION_NOT_IN_7_0.contains(&n.as_str())),
                "{name}: subcommands unknown to Redis: {extra:?}"
            );
            assert!(EXCEPTION_SUBCOMMAND_SUBSET.contains(&name));
        }
        normalize_docs(&mut theirs);
        normalize_docs(&mut mine);
        assert_same(
            &format!("COMMAND DOCS {name} (prose and subcommands removed)"),
            Protocol::Resp3,
            &enc(&theirs, Protocol::Resp3),
            &enc(&mine, Protocol::Resp3),
        );
    }
}

/// A few argument lists per keyed command, plus the error cases.
fn getkeys_cases() -> Vec<Vec<String>> {
    let mut cases: Vec<Vec<String>> = [
        "get k",
        "GET k",
        "set k v",
        "set k v EX 10 NX",
        "set k v get",
        "SET k v PX 5 GeT KEEPTTL",
        "set k v XX PXAT 5",
        "setnx k v",
        "setex k 10 v",
        "psetex k 10 v",
        "getset k v",
        "getdel k",
        "getex k",
        "getex k EX 10",
        "getex k PERSIST",
        "mget a",
        "mget a b c",
        "mset a 1",
        "mset a 1 b 2 c 3",
        "mset a 1 b",
        "msetnx a 1 b 2",
        "del a",
        "del a b c",
        "unlink a b",
        "exists a b a",
        "type k",
        "strlen k",
        "append k v",
        "getrange k 0 -1",
        "setrange k 3 v",
        "incr k",
        "decr k",
        "incrby k 2",
        "decrby k 2",
        "incrbyfloat k 1.5",
        "expire k 10",
        "expire k 10 NX",
        "pexpire k 10 GT",
        "expireat k 10",
        "pexpireat k 10 LT",
        "expiretime k",
        "pexpiretime k",
        "ttl k",
        "pttl k",
        "persist k",
        "rename a b",
        "renamenx a b",
        "georadius k 1 2 3 km STORE a",
        "georadius k 1 2 3 km STORE a STOREDIST b WITHDIST",
        "georadius k 1 2 3 km store",
        "georadiusbymember k m 3 km STOREDIST d",
        "georadiusbymember k m store x",
        "geosearchstore d s FROMMEMBER m BYRADIUS 1 km",
        "pfadd k",
        "pfadd k a b",
        "pfcount a",
        "pfcount a b c",
        "pfmerge d",
        "pfmerge d a b",
        "pfdebug getreg k",
        // Errors: no keys, unknown commands, wrong arity.
        "scan 0",
        "scan 0 MATCH * COUNT 10 TYPE string",
        "keys *",
        "ping x",
        "client list",
        "client kill 1.2.3.4:5",
        "client nosuch",
        "client|list x",
        "command getkeys",
        "nosuch x",
        "get",
        "get a b",
        "set k",
        "mset a",
        "rename a",
        "getex",
        "client",
    ]
    .iter()
    .map(|c| c.split(' ').map(String::from).collect())
    .collect();
    // Every keyed command at its minimum arity and with one and two extra arguments.
    for spec in all_names().into_iter().filter(|s| !s.key_specs.is_empty()) {
        let min = spec.arity.unsigned_abs() as usize;
        let extra = if spec.arity < 0 { 0..3 } else { 0..1 };
        for more in extra {
            let mut args = vec![spec.name.to_string()];
            args.extend((1..min + more).map(|i| format!("a{i}")));
            cases.push(args);
        }
    }
    cases
}

#[test]
fn command_getkeys_matches_redis() {
    let Some(addr) = redis_addr() else { return };
    for proto in PROTOS {
        let mut redis = Conn::open(&addr, proto);
        for case in getkeys_cases() {
            for sub in ["GETKEYS", "GETKEYSANDFLAGS"] {
                let mut args: Vec<&[u8]> = vec![b"COMMAND", sub.as_bytes()];
                args.extend(case.iter().map(|a| a.as_bytes()));
                let theirs = redis.call(&args);
                let mine = ours(&args, proto);
                assert_same(
                    &format!("COMMAND {sub} {case:?}"),
                    proto,
                    &theirs.1,
                    &mine.1,
                );
            }
        }
    }
}

#[test]
fn errors_and_lookups_match_redis() {
    let Some(addr) = redis_addr() else { return };
    let long = "x".repeat(200);
    let cases: Vec<Vec<&[u8]>> = vec![
        vec![b"COMMAND", b"FOO"],
        vec![b"command", b"foo\nbar"],
        vec![b"CoMmAnD", long.as_bytes()],
        vec![b"command", b"a\0b"],
        vec![b"COMMAND", b"COUNT", b"x"],
        vec![b"COMMAND", b"HELP", b"x"],
        vec![b"COMMAND", b"GETKEYS"],
        vec![b"COMMAND", b"GETKEYSANDFLAGS", b"get"],
        vec![
            b"COMMAND",
            b"INFO",
            b"Client|KILL",
            b"client|",
            b"|",
            b"client|kill|x",
        ],
        vec![
            b"COMMAND",
            b"INFO",
            b"get|x",
            b"",
            b"nosuch",
            b"GeT",
            b"CLIENT|id",
        ],
        vec![b"COMMAND", b"DOCS", b"nosuch", b"|", b"get|x"],
        vec![b"COMMAND", b"LIST", b"FILTERBY", b"foo", b"x"],
        vec![b"COMMAND", b"LIST", b"FILTERBY", b"aclcat"],
        vec![b"COMMAND", b"LIST", b"FILTERBY", b"aclcat", b"a", b"b"],
        vec![b"COMMAND", b"LIST", b"foo"],
        vec![b"COMMAND", b"LIST", b"FILTERBY", b"aclcat", b"nosuch"],
        vec![b"COMMAND", b"LIST", b"FILTERBY", b"aclcat", b"@string"],
        vec![b"COMMAND", b"LIST", b"FILTERBY", b"MODULE", b"x"],
        vec![
            b"COMMAND",
            b"LIST",
            b"FILTERBY",
            b"aclcat",
            b"string",
            b"FILTERBY",
            b"pattern",
            b"*",
        ],
    ];
    for proto in PROTOS {
        let mut redis = Conn::open(&addr, proto);
        for args in &cases {
            let theirs = redis.call(args);
            let mine = ours(args, proto);
            let what = format!("{:?}", args.iter().map(|a| show(a)).collect::<Vec<_>>());
            assert_same(&what, proto, &theirs.1, &mine.1);
        }
    }
}

fn names_of(r: &Reply) -> Vec<String> {
    items(r).iter().map(bulk_str).collect()
}

#[test]
fn command_list_matches_redis() {
    let Some(addr) = redis_addr() else { return };
    let ours_all: BTreeSet<String> = all_names().iter().map(|s| s.name.to_string()).collect();
    let mut filters: Vec<Vec<&str>> = vec![vec![]];
    let categories: BTreeSet<&str> = all_names()
        .iter()
        .flat_map(|s| s.acl_categories.iter().map(|c| &c[1..]))
        .collect();
    for c in &categories {
        filters.push(vec!["FILTERBY", "ACLCAT", c]);
    }
    filters.push(vec!["FILTERBY", "aclcat", "STRING"]);
    for p in [
        "get*",
        "client|*",
        "CLIENT|K*",
        "*",
        "*|*",
        "?et",
        "[gs]et*",
        "*[^a-m]",
        "cluster|?h*",
    ] {
        filters.push(vec!["filterby", "pattern", p]);
    }
    for proto in PROTOS {
        let mut redis = Conn::open(&addr, proto);
        for f in &filters {
            let mut args: Vec<&[u8]> = vec![b"COMMAND", b"LIST"];
            args.extend(f.iter().map(|a| a.as_bytes()));
            let theirs: BTreeSet<String> = names_of(&redis.call(&args).0).into_iter().collect();
            let mine: Vec<String> = names_of(&ours(&args, proto).0)
                .into_iter()
                .filter(|n| !rialto_only(n))
                .collect();
            let want: BTreeSet<String> = theirs.intersection(&ours_all).cloned().collect();
            let want_extra: BTreeSet<String> = match f.get(1).map(|k| k.to_ascii_lowercase()) {
                // SETINFO is missing from 7.0; it is in category connection.
                Some(k) if k == "aclcat" => {
                    let c = f[2].to_ascii_lowercase();
                    let setinfo = command_table::lookup_fullname(b"client|setinfo");
                    let setinfo = setinfo.expect("setinfo");
                    let cat = format!("@{c}");
                    if setinfo.acl_categories.contains(&cat.as_str()) {
                        ["client|setinfo".to_string()].into()
                    } else {
                        BTreeSet::new()
                    }
                }
                Some(_) => {
                    let p = f[2].as_bytes();
                    ["client|setinfo".to_string()]
                        .into_iter()
                        .filter(|n| glob_nocase(p, n.as_bytes()))
                        .collect()
                }
                None => ["client|setinfo".to_string()].into(),
            };
            let want: BTreeSet<String> = want.union(&want_extra).cloned().collect();
            let got: BTreeSet<String> = mine.iter().cloned().collect();
            assert_eq!(got, want, "COMMAND LIST {f:?} ({proto:?})");
            assert_eq!(got.len(), mine.len(), "no duplicates");
        }
    }
}

#[test]
fn command_help_has_redis_shape() {
    let Some(addr) = redis_addr() else { return };
    for proto in PROTOS {
        let mut redis = Conn::open(&addr, proto);
        let args: [&[u8]; 2] = [b"COMMAND", b"HELP"];
        let (theirs, mine) = (redis.call(&args).0, ours(&args, proto).0);
        // Exception: our own text (see EXCEPTION_HELP_TEXT); same shape.
        for r in [&theirs, &mine] {
            let lines = items(r);
            assert!(lines.iter().all(|l| matches!(l, Reply::Simple(_))));
            assert!(bulk_str(&lines[0]).starts_with("COMMAND <subcommand> [<arg> "));
            assert_eq!(bulk_str(&lines[lines.len() - 2]), "HELP");
        }
        assert_ne!(theirs, mine, "{EXCEPTION_HELP_TEXT}: text is ours");
    }
}

#[test]
fn every_table_command_exists_in_redis() {
    let Some(addr) = redis_addr() else { return };
    let mut redis = Conn::open(&addr, Protocol::Resp2);
    let theirs: BTreeSet<String> = names_of(&redis.call(&[b"COMMAND".as_slice(), b"LIST"]).0)
        .into_iter()
        .collect();
    for spec in all_names() {
        assert!(
            theirs.contains(spec.name) || EXCEPTION_NOT_IN_7_0.contains(&spec.name),
            "{} is not a Redis 7.0 command",
            spec.name
        );
    }
}

/// Redis 7.2's metadata for CLIENT SETINFO, which the 7.0 server cannot show us.
#[test]
fn setinfo_is_redis_7_2s() {
    let spec = command_table::lookup_fullname(b"CLIENT|SETINFO").expect("setinfo");
    assert_eq!(spec.arity, 4);
    assert_eq!(spec.flags, ["noscript", "loading", "stale"]);
    assert_eq!((spec.first_key, spec.last_key, spec.step), (0, 0, 0));
    assert_eq!(spec.acl_categories, ["@slow", "@connection"]);
    assert!(spec.tips.is_empty() && spec.key_specs.is_empty());
    let d = &spec.docs;
    assert_eq!((d.since, d.group), ("7.2.0", "connection"));
    let (mine, _) = ours(&[b"COMMAND", b"DOCS", b"client|setinfo"], Protocol::Resp3);
    let docs = map_get(&mine, "client|setinfo").expect("docs");
    let s = |t: &str| Reply::bulk(t);
    let arg = |name: &str, token: &str| {
        Reply::Map(vec![
            (s("name"), s(name)),
            (s("type"), s("string")),
            (s("token"), s(token)),
        ])
    };
    let want = Reply::Array(vec![Reply::Map(vec![
        (s("name"), s("attr")),
        (s("type"), s("oneof")),
        (
            s("arguments"),
            Reply::Array(vec![arg("libname", "lib-name"), arg("libver", "lib-ver")]),
        ),
    ])]);
    assert_eq!(map_get(docs, "arguments"), Some(&want));
}

/// A case-insensitive glob (`*`, `?`, `[...]` with ranges and `^`, `\` escapes), enough to
/// test `COMMAND LIST FILTERBY PATTERN`; the server passes its own Redis-exact one.
fn glob_nocase(pattern: &[u8], name: &[u8]) -> bool {
    fn eq(a: u8, b: u8) -> bool {
        a.eq_ignore_ascii_case(&b)
    }
    fn class(p: &[u8], c: u8) -> Option<(bool, usize)> {
        // Returns whether `c` matches the class starting after `[`, and the class length.
        let (neg, mut i) = if p.first() == Some(&b'^') {
            (true, 1)
        } else {
            (false, 0)
        };
        let mut hit = false;
        while i < p.len() && p[i] != b']' {
            if p[i] == b'\\' && i + 1 < p.len() {
                hit |= eq(p[i + 1], c);
                i += 2;
            } else if i + 2 < p.len() && p[i + 1] == b'-' && p[i + 2] != b']' {
                let (lo, hi) = (p[i].to_ascii_lowercase(), p[i + 2].to_ascii_lowercase());
                let (lo, hi) = (lo.min(hi), lo.max(hi));
                hit |= (lo..=hi).contains(&c.to_ascii_lowercase());
                i += 3;
            } else {
                hit |= eq(p[i], c);
                i += 1;
            }
        }
        (i < p.len()).then_some((hit != neg, i + 1))
    }
    match pattern.first() {
        None => name.is_empty(),
        Some(b'*') => (0..=name.len()).any(|i| glob_nocase(&pattern[1..], &name[i..])),
        Some(b'?') => !name.is_empty() && glob_nocase(&pattern[1..], &name[1..]),
        Some(b'[') => match (
            name.first(),
            class(&pattern[1..], *name.first().unwrap_or(&0)),
        ) {
            (Some(_), Some((true, len))) => glob_nocase(&pattern[1 + len..], &name[1..]),
            _ => false,
        },
        Some(b'\\') if pattern.len() > 1 => {
            name.first().is_some_and(|&c| eq(c, pattern[1]))
                && glob_nocase(&pattern[2..], &name[1..])
        }
        Some(&p) => {
            name.first().is_some_and(|&c| eq(c, p)) && glob_nocase(&pattern[1..], &name[1..])
        }
    }
}
