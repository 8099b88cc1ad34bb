//! GEORADIUSBYMEMBER_RO key member radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH]
//! [COUNT count [ANY]] [ASC|DESC]

use bytes::Bytes;

use super::geo_util::{self, Form};
use super::georadius::{radius_args, RADIUS_COMPLEXITY};
use super::{Handler, R};
use crate::command_table::ArgType::{Block, Double, Integer, Key, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, Arg, CommandSpec, KeySpec};
use crate::reply::CmdResult;

const ARGS: &[Arg] = radius_args!(
    arg("any", PureToken).token("ANY").opt();
    arg("key", Key).key(0),
    arg("member", Str),
    arg("radius", Double),
    arg("unit", OneOf).sub(super::geodist::UNITS);
);

pub const GEORADIUSBYMEMBER_RO: CommandSpec = cmd(
    "georadiusbymember_ro",
    -5,
    &["readonly"],
    &["@read", "@geo", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "geo",
        "3.2.10",
        "Finds the members of a geospatial index within a distance of one of its members.",
        RADIUS_COMPLEXITY,
    )
    .deprecated(
        "6.2.0",
        "`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments",
    )
    .args(ARGS),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    geo_util::read(k, args, Form::ByMember { ro: true })
}
