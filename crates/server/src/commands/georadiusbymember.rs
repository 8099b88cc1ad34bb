//! GEORADIUSBYMEMBER key member radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH]
//! [COUNT count [ANY]] [ASC|DESC] [STORE key] [STOREDIST key]
//!
//! GEORADIUS around a member's position: a read without STORE or STOREDIST, a write op with
//! one.

use bytes::Bytes;
use rialto_keyspace::Op;

use super::geo_util::{self, Form};
use super::georadius::{radius_args, radius_key_specs, RADIUS_COMPLEXITY};
use super::{At, Handler, R};
use crate::command_table::ArgType::{Block, Double, Integer, Key, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, Arg, CommandSpec, KeySpec};
use crate::reply::CmdResult;

const FORM: Form = Form::ByMember { ro: false };

const ARGS: &[Arg] = radius_args!(
    arg("any", PureToken).token("ANY").opt();
    arg("key", Key).key(0),
    arg("member", Str),
    arg("radius", Double),
    arg("unit", OneOf).sub(super::geodist::UNITS);
    arg("key", Key).key(1).token("STORE").opt(),
    arg("key", Key).key(2).token("STOREDIST").opt()
);

const SPECS: [KeySpec; 3] = radius_key_specs(5);

pub const GEORADIUSBYMEMBER: CommandSpec = cmd(
    "georadiusbymember",
    -5,
    &["write", "denyoom", "movablekeys"],
    &["@write", "@geo", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&SPECS)
.docs(
    doc(
        "geo",
        "3.2.0",
        "Finds the members of a geospatial index within a distance of one of its members, \
         optionally storing them in a sorted set.",
        RADIUS_COMPLEXITY,
    )
    .deprecated(
        "6.2.0",
        "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and `FROMMEMBER` arguments",
    )
    .history(&[("7.0.0", "Added support for uppercase unit names.")])
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
