//! GEORADIUS key longitude latitude radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH]
//! [COUNT count [ANY]] [ASC|DESC] [STORE key] [STOREDIST key]
//!
//! A read without STORE or STOREDIST, a write op with one (`ZSetOp::GeoStore`); Redis flags
//! the command a write either way, and so does its declaration.

use bytes::Bytes;
use rialto_keyspace::Op;

use super::geo_util::{self, Form};
use super::{At, Handler, R};
use crate::command_table::ArgType::{Block, Double, Integer, Key, OneOf, PureToken};
use crate::command_table::{arg, cmd, doc, Arg, BeginSearch, CommandSpec, FindKeys, KeySpec};
use crate::reply::CmdResult;

const FORM: Form = Form::Radius { ro: false };

/// The cost of a search of the GEORADIUS family.
pub(super) const RADIUS_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements \
    inside the bounding box of the circular area delimited by center and radius and M is the \
    number of items inside the index.";

/// The arguments of a GEORADIUS form: `head` (the key, the centre and the shape), the
/// options the family shares, then `extra` (STORE and STOREDIST in the writing forms).
macro_rules! radius_args {
    ($any:expr; $($head:expr),* ; $($extra:expr),*) => {
        &[
            $($head,)*
            arg("withcoord", PureToken).token("WITHCOORD").opt(),
            arg("withdist", PureToken).token("WITHDIST").opt(),
            arg("withhash", PureToken).token("WITHHASH").opt(),
            arg("count", Block).opt().sub(&[
                arg("count", Integer).token("COUNT"),
                $any,
            ]),
            arg("order", OneOf).opt().sub(&[
                arg("asc", PureToken).token("ASC"),
                arg("desc", PureToken).token("DESC"),
            ]),
            $($extra),*
        ]
    };
}
pub(super) use radius_args;

/// The key specs of a writing GEORADIUS form: the key, then STORE's and STOREDIST's
/// destinations, looked for from argument `from`.
pub(super) const fn radius_key_specs(from: i32) -> [KeySpec; 3] {
    [
        KeySpec::single(1, &["RO", "access"]),
        KeySpec {
            notes: None,
            flags: &["OW", "update"],
            begin_search: BeginSearch::Keyword {
                keyword: "STORE",
                startfrom: from,
            },
            find_keys: FindKeys::Range {
                lastkey: 0,
                keystep: 1,
                limit: 0,
            },
        },
        KeySpec {
            notes: None,
            flags: &["OW", "update"],
            begin_search: BeginSearch::Keyword {
                keyword: "STOREDIST",
                startfrom: from,
            },
            find_keys: FindKeys::Range {
                lastkey: 0,
                keystep: 1,
                limit: 0,
            },
        },
    ]
}

const ARGS: &[Arg] = radius_args!(
    arg("any", PureToken).token("ANY").since("6.2.0").opt();
    arg("key", Key).key(0),
    arg("longitude", Double),
    arg("latitude", Double),
    arg("radius", Double),
    arg("unit", OneOf).sub(super::geodist::UNITS);
    arg("key", Key).key(1).token("STORE").opt(),
    arg("key", Key).key(2).token("STOREDIST").opt()
);

const SPECS: [KeySpec; 3] = radius_key_specs(6);

pub const GEORADIUS: CommandSpec = cmd(
    "georadius",
    -6,
    &["write", "denyoom", "movablekeys"],
    &["@write", "@geo", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&SPECS)
.docs(
    doc(
        "geo",
        "3.2.0",
        "Finds the members of a geospatial index within a distance of a position, \
         optionally storing them in a sorted set.",
        RADIUS_COMPLEXITY,
    )
    .deprecated(
        "6.2.0",
        "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument",
    )
    .history(&[
        ("6.2.0", "Added the `ANY` option for `COUNT`."),
        ("7.0.0", "Added support for uppercase unit names."),
    ])
    .args(ARGS),
)
.read_form(read, writes)
.handler(Handler::Write(run));

fn writes(args: &[Bytes]) -> bool {
    geo_util::stores(args)
}

fn read(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    geo_util::read(k, args, FORM)
}

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    geo_util::write(at, args, FORM)
}
