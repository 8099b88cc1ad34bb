//! Compares the ACL and glob modules with a real Redis 7.0 server. Skipped unless
//! `ACL_REDIS=host:port` names a scratch server (its users, `requirepass` and db 9 are
//! changed and restored).
//!
//! The ACL side runs on the server's own full command table (from `COMMAND`), with keys found
//! by the server's `COMMAND GETKEYSANDFLAGS`, so that rule printing (which depends on every
//! command's categories) and key checks can be compared exactly. Redis prints single-command
//! rules and category members in hash-table order, so those runs are compared sorted.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::acl::Acl;
use crate::command_table::{cmd, CommandSpec, KeyRef};
use crate::commands::acl::acl_command;
use crate::glob::{glob_match, GlobPattern};
use bytes::{Bytes, BytesMut};
use parking_lot::RwLock;
use rialto_resp::{write_request, Protocol, Reply, ReplyDecoder, ReplyLimits};

struct Conn {
    stream: TcpStream,
    buf: BytesMut,
    dec: ReplyDecoder,
}

impl Conn {
    fn open(addr: &str) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect to ACL_REDIS");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        Conn {
            stream,
            buf: BytesMut::new(),
            dec: ReplyDecoder::new(ReplyLimits::default()),
        }
    }

    fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Reply {
        let mut out = BytesMut::new();
        write_request(&mut out, args);
        self.stream.write_all(&out).expect("write");
        loop {
            if let Some(r) = self.dec.decode(&mut self.buf).expect("decode") {
                return r;
            }
            let mut chunk = [0u8; 65536];
            let n = self.stream.read(&mut chunk).expect("read");
            assert!(n > 0, "server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

fn addr() -> Option<String> {
    std::env::var("ACL_REDIS").ok().filter(|a| !a.is_empty())
}

fn text(r: &Reply) -> Vec<u8> {
    match r {
        Reply::Bulk(b) | Reply::Simple(b) | Reply::Error(b) => b.to_vec(),
        other => panic!("not a string: {other:?}"),
    }
}

fn list(r: &Reply) -> &[Reply] {
    match r {
        Reply::Array(v) | Reply::Set(v) => v,
        other => panic!("not a list: {other:?}"),
    }
}

fn int(r: &Reply) -> i64 {
    match r {
        Reply::Integer(n) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

/// The connection the catalog's key finder asks (`COMMAND GETKEYSANDFLAGS`).
static KEY_CONN: OnceLock<Mutex<Conn>> = OnceLock::new();

/// Keys as the server finds them: read needs `access`, write needs insert/update/delete.
fn server_keys(args: &[Bytes]) -> Vec<KeyRef> {
    let Some(conn) = KEY_CONN.get() else {
        return Vec::new();
    };
    let mut req: Vec<Bytes> = vec![
        Bytes::from_static(b"COMMAND"),
        Bytes::from_static(b"GETKEYSANDFLAGS"),
    ];
    req.extend_from_slice(args);
    let reply = conn.lock().expect("lock").cmd(&req);
    let Reply::Array(items) = reply else {
        return Vec::new(); // "no key arguments" and the like
    };
    let mut out = Vec::new();
    let mut prev = 0;
    for item in items {
        let pair = list(&item);
        let key = text(&pair[0]);
        let flags: Vec<String> = list(&pair[1])
            .iter()
            .map(|f| String::from_utf8_lossy(&text(f)).to_ascii_lowercase())
            .collect();
        let has = |f: &str| flags.iter().any(|x| x == f);
        // What the ACL reads of the flags: the access they need.
        let flags: &'static [&'static str] = match (
            has("access"),
            has("insert") || has("update") || has("delete"),
        ) {
            (true, true) => &["RW", "access", "update"],
            (true, false) => &["RO", "access"],
            (false, true) => &["OW", "update"],
            (false, false) => &["RO"],
        };
        let pos = (prev + 1..args.len())
            .find(|&i| args[i][..] == key[..])
            .or_else(|| (1..args.len()).find(|&i| args[i][..] == key[..]))
            .unwrap_or(prev + 1);
        prev = pos;
        out.push(KeyRef { pos, flags });
    }
    out
}

fn leak(s: Vec<u8>) -> &'static str {
    Box::leak(String::from_utf8(s).expect("utf8").into_boxed_str())
}

/// A command of the server's `COMMAND` reply as a declaration, its keys found by the server.
fn spec_of(info: &Reply) -> CommandSpec {
    let f = list(info);
    let name = leak(text(&f[0]));
    let arity = int(&f[1]) as i32;
    let flags: Vec<&'static str> = list(&f[2]).iter().map(|x| leak(text(x))).collect();
    let cats: Vec<&'static str> = list(&f[6]).iter().map(|c| leak(text(c))).collect();
    let subs: Vec<CommandSpec> = list(&f[9]).iter().map(spec_of).collect();
    let mut spec = cmd(
        name,
        arity,
        Box::leak(flags.into_boxed_slice()),
        Box::leak(cats.into_boxed_slice()),
    )
    .subs(Box::leak(subs.into_boxed_slice()));
    if !list(&f[8]).is_empty() {
        spec = spec.getkeys(server_keys);
    }
    spec
}

fn server_catalog(c: &mut Conn) -> &'static [CommandSpec] {
    let out: Vec<CommandSpec> = list(&c.cmd(&["COMMAND"])).iter().map(spec_of).collect();
    Box::leak(out.into_boxed_slice())
}

/// Sorts each run of single-command rules (`+get`, `-config|set`), which Redis prints in
/// hash-table order; `+@cat` rules, patterns and parentheses keep their places.
fn norm_rules(s: &[u8]) -> Vec<u8> {
    let s = String::from_utf8_lossy(s)
        .replace('(', "( ")
        .replace(')', " )");
    let mut out: Vec<&str> = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    for t in s.split(' ') {
        let single = (t.starts_with('+') || t.starts_with('-')) && !t[1..].starts_with('@');
        if single {
            run.push(t);
        } else {
            run.sort_unstable();
            out.append(&mut run);
            out.push(t);
        }
    }
    run.sort_unstable();
    out.append(&mut run);
    out.join(" ")
        .replace("( ", "(")
        .replace(" )", ")")
        .into_bytes()
}

fn norm_map(pairs: &[(Reply, Reply)]) -> Vec<(Reply, Reply)> {
    pairs
        .iter()
        .map(|(k, v)| {
            let v = match (text(k).as_slice(), v) {
                (b"commands", Reply::Bulk(b)) => Reply::Bulk(norm_rules(b).into()),
                (b"selectors", Reply::Array(sels)) => Reply::Array(
                    sels.iter()
                        .map(|s| match s {
                            Reply::Map(p) => Reply::Map(norm_map(p)),
                            Reply::Array(flat) => Reply::Array(norm_flat(flat)),
                            o => o.clone(),
                        })
                        .collect(),
                ),
                _ => v.clone(),
            };
            (k.clone(), v)
        })
        .collect()
}

/// A RESP2 map: keys and values alternating.
fn norm_flat(flat: &[Reply]) -> Vec<Reply> {
    let pairs: Vec<(Reply, Reply)> = flat
        .chunks(2)
        .map(|c| (c[0].clone(), c.get(1).cloned().unwrap_or(Reply::Null)))
        .collect();
    norm_map(&pairs)
        .into_iter()
        .flat_map(|(k, v)| [k, v])
        .collect()
}

/// Makes replies comparable where Redis's order or randomness is not part of the contract.
fn normalize(args: &[&[u8]], r: Reply) -> Reply {
    let sub = args
        .get(1)
        .map(|s| s.to_ascii_lowercase())
        .unwrap_or_default();
    match (sub.as_slice(), r) {
        (b"list", Reply::Array(lines)) => Reply::Array(
            lines
                .iter()
                .map(|l| Reply::Bulk(norm_rules(&text(l)).into()))
                .collect(),
        ),
        (b"getuser", Reply::Map(p)) => Reply::Map(norm_map(&p)),
        (b"getuser", Reply::Array(flat)) => Reply::Array(norm_flat(&flat)),
        (b"cat", Reply::Array(mut v)) if args.len() == 3 => {
            v.sort_by_key(text);
            Reply::Array(v)
        }
        (b"genpass", Reply::Bulk(p)) => {
            assert!(p
                .iter()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
            Reply::Bulk(format!("{} hex digits", p.len()).into())
        }
        (_, r) => r,
    }
}

fn split(line: &str) -> Vec<Vec<u8>> {
    line.split(' ').map(|s| s.as_bytes().to_vec()).collect()
}

struct Pair {
    redis: Conn,
    mine: RwLock<Acl>,
    proto: Protocol,
    mismatches: Vec<String>,
}

impl Pair {
    fn both(&mut self, args: &[Vec<u8>]) -> (Reply, Reply) {
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        let theirs = normalize(&refs, self.redis.cmd(&refs));
        let bytes: Vec<Bytes> = args.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        let ours = normalize(
            &refs,
            acl_command(&self.mine, b"default", &bytes).as_received(self.proto),
        );
        if theirs != ours {
            self.mismatches.push(format!(
                "{:?} ({:?})\n  redis: {theirs:?}\n  mine:  {ours:?}",
                refs.iter()
                    .map(|a| String::from_utf8_lossy(a))
                    .collect::<Vec<_>>(),
                self.proto
            ));
        }
        (theirs, ours)
    }

    fn run(&mut self, line: &str) {
        self.both(&split(line));
    }
}

const SCENARIO: &[&str] = &[
    "ACL LOG RESET",
    "ACL SETUSER t1",
    "ACL GETUSER t1",
    "ACL SETUSER t1 reset",
    "ACL GETUSER t1",
    "ACL SETUSER t2 on >p1 >p2 ~a* %R~b* %W~c* %RW~d* +@read -get +config|get &ch*",
    "ACL GETUSER t2",
    "ACL SETUSER t3 +@all -get +get",
    "ACL SETUSER t4 +config|get +config",
    "ACL SETUSER t5 +config -config|set",
    "ACL SETUSER t6 +@READ +@read -@read",
    "ACL SETUSER t7 +select|0 +select|1 -select",
    "ACL SETUSER t8 +select|0 +SELECT|AbC +select|abc +get|x %RW~* ~foo",
    "ACL SETUSER t9 +@all -@dangerous -get +acl|whoami -client +client|id",
    "ACL SETUSER t10 -@all +@read +@write -@dangerous +keys",
    "ACL SETUSER t11 +@slow",
    "ACL SETUSER t12 +@fast -@write",
    "ACL SETUSER t13 allcommands -config|get nocommands +@hash +@string -append",
    "ACL SETUSER t14 (~a +get) (%R~b +set)",
    "ACL GETUSER t14",
    "ACL SETUSER t15 (~a +get) clearselectors",
    "ACL SETUSER t16 ( ~x +get)",
    "ACL SETUSER t17 (\"a +get)",
    "ACL SETUSER t18 ~a resetkeys ~b &x allchannels",
    "ACL SETUSER t19 on >a >a >b <a nopass >c",
    "ACL SETUSER t20 on #2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6 >b !2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6",
    "ACL SETUSER t21 skip-sanitize-payload",
    "ACL SETUSER t21 sanitize-payload on",
    "ACL SETUSER t22 %R %R~ ~ %rw~a",
    "ACL SETUSER t23 +@all -@keyspace -@read +get +@admin -@slow",
    "ACL SETUSER t24 -@all +@string +@list -lpush +@stream -xadd -@fast",
    "ACL SETUSER t25 +@all -@all +debug|x +set +@pubsub -publish",
    "ACL SETUSER t26 ~* (~x +@read) (%W~y* +@write -del) on nopass",
    "ACL SETUSER t27 on nopass +@all (%R~r* +@all) %W~w*",
    "ACL SETUSER t28 on nopass +get +config|get +select|0 ~foo* (+set ~bar*)",
    "ACL SETUSER t29 on nopass %R~r* %W~w* ~b* +@all",
    "ACL SETUSER t30 +@all -object +object|encoding -@scripting +eval +object|freq",
    // Errors: nothing of the failed command applies.
    "ACL SETUSER t1 on +nosuch",
    "ACL SETUSER t1 on +@nocat",
    "ACL SETUSER t1 bogus",
    "ACL SETUSER t1 ~* ~foo",
    "ACL SETUSER t1 allkeys %R~foo",
    "ACL SETUSER t1 allkeys %X~a",
    "ACL SETUSER t1 &* &foo",
    "ACL SETUSER t1 <nopw",
    "ACL SETUSER t1 #abc",
    "ACL SETUSER t1 !ABC",
    "ACL SETUSER t1 #2E7D2C03A9507AE265ECF5B5356885A53393A2029D241394997265A1A25AEFC6",
    "ACL SETUSER t1 +config|get|x",
    "ACL SETUSER t1 +config|get|",
    "ACL SETUSER t1 +config|",
    "ACL SETUSER t1 -config|",
    "ACL SETUSER t1 +config|nosub",
    "ACL SETUSER t1 -config|nosub",
    "ACL SETUSER t1 -select|0",
    "ACL SETUSER t1 +select|",
    "ACL SETUSER t1 +|x",
    "ACL SETUSER t1 %~foo",
    "ACL SETUSER t1 %",
    "ACL SETUSER t1 %X~a",
    "ACL SETUSER t1 %RR~a",
    "ACL SETUSER t1 +",
    "ACL SETUSER t1 -",
    "ACL SETUSER t1 +@",
    "ACL SETUSER t1 on (~a +get",
    "ACL SETUSER t1 (~a (~b +get)",
    "ACL SETUSER t1 (on)",
    "ACL SETUSER t1 ()",
    "ACL SETUSER t1 (",
    "ACL SETUSER t1 )",
    "ACL SETUSER t1 a)",
    "ACL SETUSER t1 (\"\" +get)",
    "ACL SETUSER t1 (~a +nosuch)",
    "ACL SETUSER t1 on off ON",
    "ACL SETUSER t1 ALLKEYS RESETKEYS %R~k ALLCHANNELS NOPASS RESETPASS >x",
    "ACL GETUSER t1",
    "ACL USERS",
    "ACL LIST",
    "ACL GETUSER nouser",
    "ACL DELUSER default t1",
    "ACL DELUSER t1 t1 nouser",
    "ACL DELUSER t1",
    "ACL DELUSER",
    "ACL CAT",
    "ACL CAT read",
    "ACL CAT READ",
    "ACL CAT slow",
    "ACL CAT dangerous",
    "ACL CAT nocat",
    "ACL CAT read extra",
    "ACL GENPASS",
    "ACL GENPASS 5",
    "ACL GENPASS 1",
    "ACL GENPASS 4096",
    "ACL GENPASS 0",
    "ACL GENPASS 4097",
    "ACL GENPASS abc",
    "ACL GENPASS 01",
    "ACL GENPASS 1 2",
    "ACL GENPASS -1",
    "ACL WHOAMI",
    "ACL WHOAMI x",
    "ACL foo",
    "ACL",
    "acl Users",
    "ACL GETUSER",
    "ACL GETUSER a b",
    "ACL LIST x",
    "ACL USERS x",
    "ACL LOG",
    "ACL LOG abc",
    "ACL LOG reset",
    "ACL LOG -1",
    "ACL LOG 1 2",
    "ACL SAVE",
    "ACL LOAD",
    "ACL HELP x",
    "ACL SETUSER",
    "ACL DRYRUN",
    "ACL DRYRUN t2",
    "ACL DRYRUN t2 get",
    "ACL DRYRUN nouser get x",
    "ACL DRYRUN t2 nocmd",
    "ACL DRYRUN t2 NOCMD x",
    "ACL DRYRUN t2 config|get x",
    "ACL DRYRUN t2 config",
    "ACL DRYRUN t2 config nosub",
    "ACL DRYRUN t2 CONFIG GET x",
    // Channels: a channel matches the user's patterns as a glob, PSUBSCRIBE's pattern only
    // equal to one; the unsubscribe family is not checked.
    "ACL SETUSER pc on nopass +@all ~* resetchannels &news.* &lit (+publish &sel*)",
    "ACL DRYRUN pc publish news.1 x",
    "ACL DRYRUN pc publish other x",
    "ACL DRYRUN pc publish selected x",
    "ACL DRYRUN pc subscribe news.a other",
    "ACL DRYRUN pc subscribe news.a lit",
    "ACL DRYRUN pc psubscribe news.*",
    "ACL DRYRUN pc psubscribe news.a*",
    "ACL DRYRUN pc psubscribe lit other",
    "ACL DRYRUN pc ssubscribe other",
    "ACL DRYRUN pc spublish other x",
    "ACL DRYRUN pc unsubscribe other",
    "ACL DRYRUN pc punsubscribe other",
    "ACL DRYRUN default publish other x",
    "ACL DRYRUN t2 config set x y",
];

/// Commands run through ACL DRYRUN for each DRYRUN_USERS user.
const DRYRUN_CMDS: &[&str] = &[
    "get r1",
    "get w1",
    "get b1",
    "get foo1",
    "get bar1",
    "get x",
    "get y1",
    "set w1 v",
    "set r1 v",
    "set w1 v get",
    "set bar1 v",
    "set y1 v",
    "exists r1 w1",
    "copy r1 w1",
    "copy w1 r1",
    "mget r1 w1 x",
    "mget x foo1 bar1 foo2",
    "mset w1 a w2 b",
    "mset y1 a x b",
    "lmove r1 w1 left right",
    "incr w1",
    "incr b1",
    "append w1 x",
    "del r1",
    "del y1",
    "strlen w1",
    "type w1",
    "object encoding w1",
    "object freq x",
    "sort r1",
    "sort_ro r1",
    "scan 0",
    "keys x",
    "eval return 1 r1",
    "select 0",
    "select 1",
    "auth x",
    "hello",
    "ping",
    "flushall",
    "config get x",
    "config set x y",
    "client id",
    "acl whoami",
    "debug x",
];

const DRYRUN_USERS: &[&str] = &[
    "default", "t2", "t8", "t14", "t26", "t27", "t28", "t29", "t30",
];

fn acl_scenario(addr: &str, proto: Protocol, catalog: &'static [CommandSpec]) -> Vec<String> {
    let mut redis = Conn::open(addr);
    if proto == Protocol::Resp3 {
        redis.cmd(&["HELLO", "3"]);
    }
    // Start from the default user alone.
    for u in list(&redis.cmd(&["ACL", "USERS"])) {
        let name = text(u);
        if name != b"default" {
            redis.cmd(&[&b"ACL"[..], b"DELUSER", &name]);
        }
    }
    let mut p = Pair {
        redis,
        mine: RwLock::new(Acl::new(catalog, None)),
        proto,
        mismatches: Vec::new(),
    };
    p.run("ACL LIST");
    for line in SCENARIO {
        p.run(line);
    }
    // Binary and odd user names.
    for name in [&b"a b"[..], b"a\tb", b"a\x00b", b"", b"\xc3\xa9", b"\xff"] {
        p.both(&[
            b"ACL".to_vec(),
            b"SETUSER".to_vec(),
            name.to_vec(),
            b"on".to_vec(),
        ]);
    }
    let long = "x".repeat(200);
    p.run(&format!("ACL CAT {long}"));
    p.run(&format!("ACL {long}"));
    p.run("ACL USERS");
    p.run("ACL LIST");
    for user in DRYRUN_USERS {
        for cmd in DRYRUN_CMDS {
            p.run(&format!("ACL DRYRUN {user} {cmd}"));
        }
    }
    // What Redis prints must mean the same to us: load each LIST line into a new user and
    // compare what we print for it with what we print for the original.
    let lines = list(&p.redis.cmd(&["ACL", "LIST"])).to_vec();
    for line in lines {
        let line = text(&line);
        let parts: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        let (name, rules) = (parts[1], &parts[2..]);
        let mut copy = b"copy-".to_vec();
        copy.extend_from_slice(name);
        // Redis itself cannot always reload its own output (`%RW~* ~foo` prints as
        // `~* ~foo`); then both must refuse it alike.
        let mut args = vec![b"ACL".to_vec(), b"SETUSER".to_vec(), copy.clone()];
        args.extend(rules.iter().map(|r| r.to_vec()));
        if let (Reply::Error(_), _) = p.both(&args) {
            continue;
        }
        let acl = p.mine.read();
        let a = acl.user(name).map(|u| norm_rules(&u.describe()));
        let b = acl.user(&copy).map(|u| norm_rules(&u.describe()));
        if a != b {
            p.mismatches.push(format!(
                "reloaded {:?}: {a:?} vs {b:?}",
                String::from_utf8_lossy(name)
            ));
        }
    }
    p.mismatches
}

fn default_line(c: &mut Conn) -> Vec<u8> {
    list(&c.cmd(&["ACL", "LIST"]))
        .iter()
        .map(text)
        .find(|l| l.starts_with(b"user default "))
        .unwrap_or_default()
}

fn auth_scenario(addr: &str, catalog: &'static [CommandSpec]) -> Vec<String> {
    let mut admin = Conn::open(addr);
    let acl = RwLock::new(Acl::new(catalog, None));
    let mut mismatches = Vec::new();
    let setups = [
        "ACL SETUSER a1 on >secret >other",
        "ACL SETUSER a2 off >secret",
        "ACL SETUSER a3 on nopass",
        "ACL SETUSER a4 off nopass",
        "ACL SETUSER a5 on",
    ];
    for s in setups {
        let args = split(s);
        admin.cmd(&args);
        let b: Vec<Bytes> = args.into_iter().map(Bytes::from).collect();
        acl_command(&acl, b"default", &b);
    }
    let check = |mismatches: &mut Vec<String>, args: &[&str], acl: &RwLock<Acl>| {
        let mut c = Conn::open(addr);
        let theirs = c.cmd(args);
        let a = acl.read();
        let ours = match args.len() {
            2 => a.authenticate_default(args[1].as_bytes()),
            _ => a.authenticate(args[1].as_bytes(), args[2].as_bytes()),
        }
        .map(|_| Reply::simple("OK"))
        .unwrap_or_else(|e| e.to_reply());
        if theirs != ours {
            mismatches.push(format!("{args:?}: redis {theirs:?}, mine {ours:?}"));
        }
    };
    for args in [
        &["AUTH", "a1", "secret"][..],
        &["AUTH", "a1", "other"],
        &["AUTH", "a1", "wrong"],
        &["AUTH", "a2", "secret"],
        &["AUTH", "a3", "anything"],
        &["AUTH", "a4", "anything"],
        &["AUTH", "a5", ""],
        &["AUTH", "nouser", "x"],
        &["AUTH", "default", "x"],
        &["AUTH", "x"],
    ] {
        check(&mut mismatches, args, &acl);
    }
    let needs_auth = |c: &mut Conn| matches!(c.cmd(&["PING"]), Reply::Error(_));
    let mut fresh = Conn::open(addr);
    if needs_auth(&mut fresh) != acl.read().default_user_needs_auth() {
        mismatches.push("needs auth without requirepass".into());
    }
    admin.cmd(&["CONFIG", "SET", "requirepass", "pw"]);
    acl.write().set_requirepass(Some(b"pw"));
    let mut fresh = Conn::open(addr);
    if needs_auth(&mut fresh) != acl.read().default_user_needs_auth() {
        mismatches.push("needs auth with requirepass".into());
    }
    for args in [
        &["AUTH", "pw"][..],
        &["AUTH", "nope"],
        &["AUTH", "default", "pw"],
    ] {
        check(&mut mismatches, args, &acl);
    }
    let theirs = default_line(&mut admin);
    let ours =
        String::from_utf8(acl.read().user(b"default").expect("default").describe()).expect("utf8");
    if theirs != format!("user default {ours}").into_bytes() {
        mismatches.push(format!(
            "default with requirepass: {:?} vs {ours}",
            String::from_utf8_lossy(&theirs)
        ));
    }
    admin.cmd(&["CONFIG", "SET", "requirepass", ""]);
    acl.write().set_requirepass(None);
    let theirs = default_line(&mut admin);
    if theirs != b"user default on nopass ~* &* +@all" {
        mismatches.push(format!(
            "default after requirepass reset: {:?}",
            String::from_utf8_lossy(&theirs)
        ));
    }
    // Turning the default user off also makes connections start unauthenticated.
    admin.cmd(&["ACL", "SETUSER", "default", "off"]);
    acl.write().set_user(b"default", &[b"off"]).expect("off");
    let mut fresh = Conn::open(addr);
    if needs_auth(&mut fresh) != acl.read().default_user_needs_auth() {
        mismatches.push("needs auth with default off".into());
    }
    admin.cmd(&["ACL", "SETUSER", "default", "on"]);
    for u in ["a1", "a2", "a3", "a4", "a5"] {
        admin.cmd(&["ACL", "DELUSER", u]);
    }
    mismatches
}

const GLOB_KEYS: &[&[u8]] = &[
    b"",
    b"a",
    b"b",
    b"ab",
    b"abc",
    b"aXc",
    b"a*c",
    b"a?c",
    b"a[c",
    b"a]c",
    b"a\\c",
    b"a-c",
    b"^",
    b"]",
    b"[",
    b"-",
    b"\\",
    b"*",
    b"?",
    b"A",
    b"Z",
    b"z",
    b"_",
    b"`",
    b"\xff",
    b"\x80",
    b"\x7f",
    b"0",
    b"9",
    b"hello",
    b"hallo",
    b"hxllo",
    b"hllo",
    b"heeello",
    b"h\\llo",
    b"a^b",
    b"ba",
    b"bab",
    b"abab",
    b"aab",
    b"aaa",
    b"[a]",
    b"a-",
    b"\\\\",
    b"foo:bar",
    b"foo:baz:1",
];

const GLOB_PATTERNS: &[&[u8]] = &[
    b"*",
    b"**",
    b"?",
    b"??",
    b"?*",
    b"*?",
    b"a*",
    b"*c",
    b"a*c",
    b"a?c",
    b"a\\*c",
    b"a\\?c",
    b"a[*]c",
    b"a[?]c",
    b"[ab]",
    b"[^ab]",
    b"[a-c]",
    b"[c-a]",
    b"[^a-c]",
    b"[a-]",
    b"[-a]",
    b"[]",
    b"[]a]",
    b"[^]",
    b"[^]]",
    b"[",
    b"[a",
    b"[ab",
    b"[^",
    b"[\\]]",
    b"[\\",
    b"a\\",
    b"\\",
    b"\\\\",
    b"\\a",
    b"[a-\xff]",
    b"[\x80-\xff]",
    b"[\xff-a]",
    b"[0-9]",
    b"[A-Z]",
    b"[Z-a]",
    b"[^A-Z]",
    b"h[ae]llo",
    b"h[^e]llo",
    b"h*llo",
    b"h?llo",
    b"h\\llo",
    b"h\\\\llo",
    b"a[\\-]c",
    b"a[b-]c",
    b"a[-b]c",
    b"*a*b*",
    b"*ab",
    b"a*b*",
    b"[[]",
    b"[[a]",
    b"[a-c-e]",
    b"foo:*",
    b"foo:*:*",
    b"foo:ba?",
    b"*:*",
    b"[a-a]",
    b"[^a-a]*",
    b"[a\\",
    b"[a\\]",
    b"[\\a-c]",
    b"[a-\\]",
    b"a[^]c",
    b"a[]c",
    b"a[]]c",
    b"[]]",
    b"[!a]",
    b"\\[a\\]",
];

fn glob_scenario(addr: &str) -> Vec<String> {
    let mut c = Conn::open(addr);
    c.cmd(&["SELECT", "9"]);
    c.cmd(&["FLUSHDB"]);
    let mut keys: Vec<Vec<u8>> = GLOB_KEYS.iter().map(|k| k.to_vec()).collect();
    // And every string of up to 4 bytes over a small alphabet.
    let alphabet = b"ab-]";
    for len in 1..=4u32 {
        for n in 0..alphabet.len().pow(len) {
            let mut k = Vec::new();
            let mut m = n;
            for _ in 0..len {
                k.push(alphabet[m % alphabet.len()]);
                m /= alphabet.len();
            }
            keys.push(k);
        }
    }
    keys.sort();
    keys.dedup();
    for k in &keys {
        c.cmd(&[&b"SET"[..], k, b"1"]);
    }
    let mut patterns: Vec<Vec<u8>> = GLOB_PATTERNS.iter().map(|p| p.to_vec()).collect();
    // Random patterns over the characters that matter.
    let palette = b"ab*?[]^-\\";
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..1500 {
        let len = (next() % 8) as usize;
        patterns.push(
            (0..len)
                .map(|_| palette[(next() % palette.len() as u64) as usize])
                .collect(),
        );
    }
    // Redis's nesting limit: 1000 `*` groups are followed, 1001 are not.
    let long_key = vec![b'a'; 1001];
    c.cmd(&[&b"SET"[..], &long_key, b"1"]);
    keys.push(long_key);
    patterns.push(b"*a".repeat(1000));
    patterns.push(b"*a".repeat(1001));
    let mut l = b"*a".repeat(1000);
    l.push(b'*');
    patterns.push(l);
    let mut mismatches = Vec::new();
    for p in &patterns {
        let mut theirs: Vec<Vec<u8>> = list(&c.cmd(&[&b"KEYS"[..], p])).iter().map(text).collect();
        theirs.sort();
        let g = GlobPattern::new(p, false);
        let mut ours: Vec<Vec<u8>> = keys
            .iter()
            .filter(|k| g.is_match_all() || g.matches(k))
            .cloned()
            .collect();
        ours.sort();
        for k in &keys {
            assert_eq!(g.matches(k), glob_match(p, k, false));
        }
        if theirs != ours {
            mismatches.push(format!(
                "KEYS {:?}: redis {} keys, mine {}",
                String::from_utf8_lossy(p),
                theirs.len(),
                ours.len()
            ));
        }
    }
    c.cmd(&["FLUSHDB"]);
    // Without case: COMMAND LIST FILTERBY PATTERN matches command names that way.
    let names: Vec<Vec<u8>> = list(&c.cmd(&["COMMAND", "LIST"]))
        .iter()
        .map(text)
        .collect();
    let palette = b"cCoOnNfFgGeEtT*?[]^-|\\";
    let mut npat: Vec<Vec<u8>> = vec![
        b"CONFIG*".to_vec(),
        b"c[A-Z]*".to_vec(),
        b"*|[G-S]*".to_vec(),
        b"[^A-Z]*".to_vec(),
        b"[Z-a]*".to_vec(),
        b"[\\C]*".to_vec(),
        b"\\C*".to_vec(),
    ];
    for _ in 0..600 {
        let len = 1 + (next() % 6) as usize;
        let mut p: Vec<u8> = (0..len)
            .map(|_| palette[(next() % palette.len() as u64) as usize])
            .collect();
        if next() % 2 == 0 {
            p.push(b'*');
        }
        npat.push(p);
    }
    for p in &npat {
        let mut theirs: Vec<Vec<u8>> =
            list(&c.cmd(&[&b"COMMAND"[..], b"LIST", b"FILTERBY", b"PATTERN", p]))
                .iter()
                .map(text)
                .collect();
        theirs.sort();
        let mut ours: Vec<Vec<u8>> = names
            .iter()
            .filter(|n| glob_match(p, n, true))
            .cloned()
            .collect();
        ours.sort();
        if theirs != ours {
            mismatches.push(format!(
                "COMMAND LIST FILTERBY PATTERN {:?}: redis {} names, mine {}",
                String::from_utf8_lossy(p),
                theirs.len(),
                ours.len()
            ));
        }
    }
    mismatches
}

#[test]
fn same_as_redis() {
    let Some(addr) = addr() else {
        eprintln!("ACL_REDIS not set: skipped");
        return;
    };
    let mut admin = Conn::open(&addr);
    let catalog = server_catalog(&mut admin);
    let _ = KEY_CONN.set(Mutex::new(Conn::open(&addr)));
    let mut all = Vec::new();
    all.extend(acl_scenario(&addr, Protocol::Resp3, catalog));
    all.extend(acl_scenario(&addr, Protocol::Resp2, catalog));
    all.extend(auth_scenario(&addr, catalog));
    all.extend(glob_scenario(&addr));
    for m in &all {
        eprintln!("MISMATCH {m}");
    }
    assert!(all.is_empty(), "{} mismatches", all.len());
}
