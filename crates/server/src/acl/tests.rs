//! The ACL as a whole: rules, their text, checks and the `ACL` command over a small catalog.

use bytes::Bytes;
use parking_lot::RwLock;
use rialto_resp::Reply;
use std::sync::Arc;

use super::rules::AclError;
use super::rules::{hex, is_c_space, sha256};
use super::users::{AuthError, Denied};
use super::*;
use crate::command_table::{cmd, CommandSpec, KeySpec};
use crate::commands::acl::acl_command;

const RO: &[&str] = &["RO", "access"];
const OW: &[&str] = &["OW", "update"];

const CONFIG_GET: CommandSpec = cmd("config|get", -3, &[], &["@admin", "@slow", "@dangerous"]);
const CONFIG_SET: CommandSpec = cmd("config|set", -4, &[], &["@admin", "@slow", "@dangerous"]);

static CATALOG: &[CommandSpec] = &[
    cmd("get", 2, &[], &["@read", "@string", "@fast"]).key_specs(&[KeySpec::single(1, RO)]),
    cmd("set", -3, &[], &["@write", "@string", "@slow"]).key_specs(&[KeySpec::single(1, OW)]),
    cmd("incr", 2, &[], &["@write", "@string", "@fast"])
        .key_specs(&[KeySpec::single(1, &["RW", "access", "update"])]),
    cmd("mget", -2, &[], &["@read", "@string", "@fast"])
        .key_specs(&[KeySpec::range(1, -1, 1, 0, RO)]),
    cmd("mset", -3, &[], &["@write", "@string", "@slow"])
        .key_specs(&[KeySpec::range(1, -1, 2, 0, OW)]),
    cmd("exists", -2, &[], &["@keyspace", "@read", "@fast"]).key_specs(&[KeySpec::range(
        1,
        -1,
        1,
        0,
        &["RO"],
    )]),
    cmd("copy", -3, &[], &["@keyspace", "@write", "@slow"])
        .key_specs(&[KeySpec::single(1, RO), KeySpec::single(2, OW)]),
    cmd(
        "flushall",
        -1,
        &[],
        &["@keyspace", "@write", "@slow", "@dangerous"],
    ),
    cmd(
        "keys",
        2,
        &[],
        &["@keyspace", "@read", "@slow", "@dangerous"],
    ),
    cmd("select", 2, &[], &["@fast", "@connection"]),
    cmd("auth", -2, &["no_auth"], &["@fast", "@connection"]),
    cmd("config", -2, &[], &["@slow"]).subs(&[CONFIG_GET, CONFIG_SET]),
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
        Reply::error(
            "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"
        )
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
