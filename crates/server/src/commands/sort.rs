//! SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
//! [STORE destination]
//!
//! A read without STORE (run where reads run), a write op with it (`OpKind::Sort`): Redis
//! flags the command a write either way, and so does its declaration. The sort itself is the
//! keyspace's (`rialto_keyspace::sort`); this file parses the options as Redis's
//! `sortCommandGeneric` does, in its order, with its refusals of patterns that name other
//! keys (in cluster mode, and for a user who may not read every key).

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, SortBy, SortMode, SortSpec, SortStore};
use rialto_resp::Reply;

use super::util::{checked, is};
use super::{At, Handler, R};
use crate::command_table::ArgType::{Block, Integer, Key, OneOf, Pattern, PureToken};
use crate::command_table::{
    arg, cmd, doc, Arg, BeginSearch, CommandSpec, FindKeys, KeyRef, KeySpec,
};
use crate::reply::{self, CmdResult};

/// The key spec of the keys BY and GET patterns name (SORT and SORT_RO).
pub(super) const PATTERN_KEYS: KeySpec = KeySpec {
    notes: Some(
        "For the optional BY/GET keyword. It is marked 'unknown' because the key names \
         derive from the content of the key we sort",
    ),
    flags: &["RO", "access"],
    begin_search: BeginSearch::Unknown,
    find_keys: FindKeys::Unknown,
};

/// The options SORT and SORT_RO share, as `COMMAND DOCS` lists them (STORE follows in SORT).
macro_rules! sort_args {
    ($($extra:expr),*) => {
        &[
            arg("key", Key).key(0),
            arg("pattern", Pattern).key(1).token("BY").opt(),
            arg("offset_count", Block)
                .token("LIMIT")
                .opt()
                .sub(&[arg("offset", Integer), arg("count", Integer)]),
            arg("pattern", Pattern)
                .key(1)
                .token("GET")
                .opt()
                .multi()
                .multi_token(),
            arg("order", OneOf).opt().sub(&[
                arg("asc", PureToken).token("ASC"),
                arg("desc", PureToken).token("DESC"),
            ]),
            arg("sorting", PureToken).token("ALPHA").opt(),
            $($extra),*
        ]
    };
}
pub(super) use sort_args;

const SORT_ARGS: &[Arg] = sort_args!(arg("destination", Key).key(2).token("STORE").opt());

pub const SORT: CommandSpec = cmd(
    "sort",
    -2,
    &["write", "denyoom", "movablekeys"],
    &[
        "@write",
        "@set",
        "@sortedset",
        "@list",
        "@slow",
        "@dangerous",
    ],
)
.keys(1, 1, 1)
.key_specs(&[
    KeySpec::single(1, &["RO", "access"]),
    PATTERN_KEYS,
    KeySpec {
        notes: Some(
            "For the optional STORE keyword. It is marked 'unknown' because the keyword can \
             appear anywhere in the argument array",
        ),
        flags: &["OW", "update"],
        begin_search: BeginSearch::Unknown,
        find_keys: FindKeys::Unknown,
    },
])
.docs(
    doc(
        "generic",
        "1.0.0",
        "Orders a list's, set's or sorted set's elements, by number or bytes, by themselves or \
         by the keys a pattern makes of them; returns them, or values they name, or stores \
         them as a list.",
        "O(N+M*log(M)) for N elements in the key and M sorted (O(N) when nothing is sorted), \
         plus a key read per element for each BY or GET pattern.",
    )
    .args(SORT_ARGS),
)
.getkeys(keys)
.read_form(read, writes)
.handler(Handler::Write(run));

/// Redis's `sortGetKeys`: the key, and the destination of the last STORE with an argument
/// (options with arguments skipped as it skips them).
fn keys(args: &[Bytes]) -> Vec<KeyRef> {
    let mut out = vec![KeyRef {
        pos: 1,
        flags: &["RO", "access"],
    }];
    let mut store = None;
    let mut i = 2;
    while i < args.len() {
        let a = &args[i];
        if is(a, "limit") {
            i += 2;
        } else if is(a, "get") || is(a, "by") {
            i += 1;
        } else if is(a, "store") && i + 1 < args.len() {
            // The destination itself is looked at next, as an option name.
            store = Some(i + 1);
        }
        i += 1;
    }
    if let Some(pos) = store {
        out.push(KeyRef {
            pos,
            flags: &["OW", "update"],
        });
    }
    out
}

/// Whether the request stores (and so runs as a write).
fn writes(args: &[Bytes]) -> bool {
    parse(args, false, Refuse::default()).is_ok_and(|p| p.store.is_some())
}

fn read(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let p = parse(args, false, Refuse::default()).map_err(Bad::reply)?;
    if p.store.is_some() {
        // `writes` sends such a request to `run`.
        return Err(reply::syntax());
    }
    reply_of(k, &p.sort)
}

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let p = parse(args, false, Refuse::default()).map_err(Bad::reply)?;
    let Some(dst) = p.store else {
        return Err(reply::syntax());
    };
    checked(rialto_keyspace::check_key(&dst))?;
    Ok(at.op(OpKind::Sort(SortStore { dst, sort: p.sort })))
}

/// The sorted elements (or GET values, a missing one null) as SORT and SORT_RO reply them.
pub(super) fn reply_of(k: &mut R<'_, '_>, spec: &SortSpec) -> CmdResult {
    let mode = SortMode {
        store: false,
        script: k.called_by_script(),
    };
    let items = checked(rialto_keyspace::sort(k.keys(), spec, mode))?;
    Ok(Reply::Array(
        items
            .into_iter()
            .map(|v| v.map_or(Reply::Null, Reply::Bulk))
            .collect(),
    ))
}

/// A request parsed.
#[derive(Debug)]
pub(super) struct Parsed {
    pub sort: SortSpec,
    /// STORE's destination (the last one given).
    pub store: Option<Bytes>,
}

/// Which patterns naming other keys are refused (Redis refuses a BY pattern with a `*` and
/// any GET): in cluster mode, where they may name keys of other slots; for a user who may
/// not read every key.
#[derive(Debug, Clone, Copy, Default)]
pub struct Refuse {
    pub cluster: bool,
    pub key_access: bool,
}

/// Why a request was refused, in the order Redis checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Bad {
    Syntax,
    NotInteger,
    ByInCluster,
    GetInCluster,
    ByWithoutAccess,
    GetWithoutAccess,
}

impl Bad {
    pub(super) fn reply(self) -> Reply {
        match self {
            Bad::Syntax => reply::syntax(),
            Bad::NotInteger => reply::not_integer(),
            Bad::ByInCluster => Reply::error("ERR BY option of SORT denied in Cluster mode."),
            Bad::GetInCluster => Reply::error("ERR GET option of SORT denied in Cluster mode."),
            Bad::ByWithoutAccess => {
                Reply::error("ERR BY option of SORT denied due to insufficient ACL permissions.")
            }
            Bad::GetWithoutAccess => {
                Reply::error("ERR GET option of SORT denied due to insufficient ACL permissions.")
            }
        }
    }

    fn is_refusal(self) -> bool {
        !matches!(self, Bad::Syntax | Bad::NotInteger)
    }
}

/// The refusal Redis gives this SORT (`readonly`: SORT_RO) under `refuse`, if parsing it meets
/// one before any other error.
pub fn refusal(args: &[Bytes], readonly: bool, refuse: Refuse) -> Option<Reply> {
    match parse(args, readonly, refuse) {
        Err(b) if b.is_refusal() => Some(b.reply()),
        _ => None,
    }
}

/// What SORT and SORT_RO answer `user`, who may run them, when a BY or GET pattern would read
/// keys and the user may not read every key (Redis checks it as it parses the options).
pub fn acl_refusal(
    user: &crate::acl::users::User,
    spec: &CommandSpec,
    args: &[Bytes],
) -> Option<Reply> {
    let readonly = match spec.name {
        "sort" => false,
        "sort_ro" => true,
        _ => return None,
    };
    let refuse = Refuse {
        cluster: false,
        key_access: true,
    };
    // Parsing first: most requests name no pattern, and then the user is not looked at.
    let r = refusal(args, readonly, refuse)?;
    (!user.reads_every_key(spec.name, args)).then_some(r)
}

/// `sortCommandGeneric`'s option parsing (`args[2..]`), in its order: the last of repeated
/// options wins; any BY without `*` turns sorting off.
pub(super) fn parse(args: &[Bytes], readonly: bool, refuse: Refuse) -> Result<Parsed, Bad> {
    let mut spec = SortSpec {
        key: args[1].clone(),
        by: SortBy::Element,
        offset: 0,
        count: -1,
        gets: Vec::new(),
        desc: false,
        alpha: false,
    };
    let mut store = None;
    let mut nosort = false;
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j];
        if is(a, "asc") {
            spec.desc = false;
        } else if is(a, "desc") {
            spec.desc = true;
        } else if is(a, "alpha") {
            spec.alpha = true;
        } else if is(a, "limit") && left >= 2 {
            let int = |b: &Bytes| reply::parse_i64(b).ok_or(Bad::NotInteger);
            spec.offset = int(&args[j + 1])?;
            spec.count = int(&args[j + 2])?;
            j += 2;
        } else if !readonly && is(a, "store") && left >= 1 {
            store = Some(args[j + 1].clone());
            j += 1;
        } else if is(a, "by") && left >= 1 {
            let p = &args[j + 1];
            if !c_str(p).contains(&b'*') {
                nosort = true;
            } else if refuse.cluster {
                return Err(Bad::ByInCluster);
            } else if refuse.key_access {
                return Err(Bad::ByWithoutAccess);
            }
            spec.by = SortBy::Pattern(p.clone());
            j += 1;
        } else if is(a, "get") && left >= 1 {
            if refuse.cluster {
                return Err(Bad::GetInCluster);
            }
            if refuse.key_access {
                return Err(Bad::GetWithoutAccess);
            }
            spec.gets.push(args[j + 1].clone());
            j += 1;
        } else {
            return Err(Bad::Syntax);
        }
        j += 1;
    }
    if nosort {
        spec.by = SortBy::NoSort;
    }
    Ok(Parsed { sort: spec, store })
}

/// The bytes Redis's C string functions see: up to the first NUL.
fn c_str(b: &[u8]) -> &[u8] {
    b.split(|&c| c == 0).next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<Bytes> {
        line.split(' ')
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect()
    }

    fn positions(line: &str) -> Vec<usize> {
        keys(&args(line)).iter().map(|k| k.pos).collect()
    }

    #[test]
    fn keys_are_found_as_redis_finds_them() {
        assert_eq!(positions("sort abc store def"), [1, 3]);
        assert_eq!(
            positions("sort abc store invalid store stillbad store def"),
            [1, 7]
        );
        assert_eq!(positions("sort abc get store store d"), [1, 5]);
        assert_eq!(positions("sort abc limit 0 1 store d"), [1, 6]);
        assert_eq!(positions("sort abc store"), [1]);
        assert_eq!(positions("sort abc by store"), [1]);
    }

    #[test]
    fn options_parse_in_redis_order() {
        let p = parse(
            &args("sort k by nosort by w_* get # limit 1 2 desc alpha store d"),
            false,
            Refuse::default(),
        )
        .unwrap();
        assert_eq!(p.sort.by, SortBy::NoSort);
        assert_eq!((p.sort.offset, p.sort.count), (1, 2));
        assert!(p.sort.desc && p.sort.alpha);
        assert_eq!(p.store.as_deref(), Some(&b"d"[..]));
        let p = parse(&args("sort k by w_* by x_*"), false, Refuse::default()).unwrap();
        assert_eq!(p.sort.by, SortBy::Pattern(Bytes::from_static(b"x_*")));
        // SORT_RO has no STORE; a trailing option without its argument is a syntax error.
        assert_eq!(
            parse(&args("sort_ro k store d"), true, Refuse::default()).unwrap_err(),
            Bad::Syntax
        );
        assert_eq!(
            parse(&args("sort k limit 1"), false, Refuse::default()).unwrap_err(),
            Bad::Syntax
        );
        assert_eq!(
            parse(&args("sort k limit a 1"), false, Refuse::default()).unwrap_err(),
            Bad::NotInteger
        );
    }

    #[test]
    fn only_a_request_that_stores_runs_as_a_write() {
        let kind = |line: &str| format!("{:?}", SORT.handler_for(&args(line)).unwrap());
        assert_eq!(kind("sort k by w_* get #"), "Read");
        assert_eq!(kind("sort k store d"), "Write");
        assert_eq!(kind("sort k get store"), "Read");
        // A syntax error answers the same from either; the write's parser gives it.
        assert_eq!(kind("sort k store"), "Read");
    }

    #[test]
    fn users_who_may_not_read_every_key_are_refused_patterns() {
        let mut acl = crate::acl::Acl::new(crate::command_table::all(), None);
        let rules: Vec<&[u8]> = vec![b"on", b"nopass", b"+sort", b"~mylist"];
        acl.set_user(b"u", &rules).unwrap();
        let u = acl.user(b"u").unwrap();
        assert!(acl_refusal(&u, &SORT, &args("sort mylist by v*")).is_some());
        assert!(acl_refusal(&u, &SORT, &args("sort mylist get #")).is_some());
        assert!(acl_refusal(&u, &SORT, &args("sort mylist by nosort")).is_none());
        // Write access to every key is not read access.
        acl.set_user(b"u", &[b"%W~*"]).unwrap();
        let u = acl.user(b"u").unwrap();
        assert!(acl_refusal(&u, &SORT, &args("sort mylist by v*")).is_some());
        acl.set_user(b"u", &[b"%R~*"]).unwrap();
        let u = acl.user(b"u").unwrap();
        assert!(acl_refusal(&u, &SORT, &args("sort mylist by v*")).is_none());
    }

    #[test]
    fn patterns_naming_keys_are_refused_where_redis_refuses_them() {
        let cluster = Refuse {
            cluster: true,
            key_access: false,
        };
        let acl = Refuse {
            cluster: false,
            key_access: true,
        };
        let bad = |line: &str, r| parse(&args(line), false, r).unwrap_err();
        assert_eq!(bad("sort k by w_*", cluster), Bad::ByInCluster);
        assert_eq!(bad("sort k get #", cluster), Bad::GetInCluster);
        assert_eq!(bad("sort k by w_*", acl), Bad::ByWithoutAccess);
        assert_eq!(bad("sort k get #", acl), Bad::GetWithoutAccess);
        // A constant BY reads no key; an error met first wins.
        assert!(parse(&args("sort k by nosort"), false, cluster).is_ok());
        assert_eq!(bad("sort k foo get #", cluster), Bad::Syntax);
        assert_eq!(refusal(&args("sort k foo get #"), false, cluster), None);
        assert!(refusal(&args("sort k get # foo"), false, cluster).is_some());
    }
}
