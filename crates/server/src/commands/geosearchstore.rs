//! GEOSEARCHSTORE destination source FROMMEMBER member|FROMLONLAT longitude latitude
//! BYRADIUS radius M|KM|FT|MI|BYBOX width height M|KM|FT|MI [ASC|DESC] [COUNT count [ANY]]
//! [STOREDIST]
//!
//! GEOSEARCH whose results become the sorted set `destination` (`ZSetOp::GeoStore`).

use bytes::Bytes;
use rialto_keyspace::Op;

use super::geo_util::{self, Form};
use super::geosearch::search_args;
use super::{At, Handler};
use crate::command_table::ArgType::{Block, Double, Integer, Key, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, Arg, CommandSpec, KeySpec};
use crate::reply::CmdResult;

const ARGS: &[Arg] = search_args!(
    arg("destination", Key).key(0),
    arg("source", Key).key(1);
    arg("storedist", PureToken).token("STOREDIST").opt()
);

pub const GEOSEARCHSTORE: CommandSpec = cmd(
    "geosearchstore",
    -8,
    &["write", "denyoom"],
    &["@write", "@geo", "@slow"],
)
.keys(1, 2, 1)
.key_specs(&[
    KeySpec::single(1, &["OW", "update"]),
    KeySpec::single(2, &["RO", "access"]),
])
.docs(
    doc(
        "geo",
        "6.2.0",
        "Stores the members of a geospatial index within a circle or a box around a position \
         or a member in a sorted set.",
        "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area \
         around the shape provided as the filter and M is the number of items inside the shape",
    )
    .history(&[("7.0.0", "Added support for uppercase unit names.")])
    .args(ARGS),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    geo_util::write(at, args, Form::SearchStore)
}
