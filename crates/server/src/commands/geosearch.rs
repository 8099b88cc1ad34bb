//! GEOSEARCH key FROMMEMBER member|FROMLONLAT longitude latitude
//! BYRADIUS radius M|KM|FT|MI|BYBOX width height M|KM|FT|MI [ASC|DESC] [COUNT count [ANY]]
//! [WITHCOORD] [WITHDIST] [WITHHASH]

use bytes::Bytes;

use super::geo_util::{self, Form};
use super::{Handler, R};
use crate::command_table::ArgType::{Block, Double, Integer, Key, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, Arg, CommandSpec, KeySpec};
use crate::reply::CmdResult;

/// The centre, the shape, the order and the count, as GEOSEARCH and GEOSEARCHSTORE take them.
macro_rules! search_args {
    ($($head:expr),* ; $($extra:expr),*) => {
        &[
            $($head,)*
            arg("from", OneOf).sub(&[
                arg("member", Str).token("FROMMEMBER"),
                arg("longitude_latitude", Block).token("FROMLONLAT").sub(&[
                    arg("longitude", Double),
                    arg("latitude", Double),
                ]),
            ]),
            arg("by", OneOf).sub(&[
                arg("circle", Block).sub(&[
                    arg("radius", Double).token("BYRADIUS"),
                    arg("unit", OneOf).sub(super::geodist::UNITS),
                ]),
                arg("box", Block).sub(&[
                    arg("width", Double).token("BYBOX"),
                    arg("height", Double),
                    arg("unit", OneOf).sub(super::geodist::UNITS),
                ]),
            ]),
            arg("order", OneOf).opt().sub(&[
                arg("asc", PureToken).token("ASC"),
                arg("desc", PureToken).token("DESC"),
            ]),
            arg("count", Block).opt().sub(&[
                arg("count", Integer).token("COUNT"),
                arg("any", PureToken).token("ANY").opt(),
            ]),
            $($extra),*
        ]
    };
}
pub(super) use search_args;

const ARGS: &[Arg] = search_args!(
    arg("key", Key).key(0);
    arg("withcoord", PureToken).token("WITHCOORD").opt(),
    arg("withdist", PureToken).token("WITHDIST").opt(),
    arg("withhash", PureToken).token("WITHHASH").opt()
);

pub const GEOSEARCH: CommandSpec = cmd("geosearch", -7, &["readonly"], &["@read", "@geo", "@slow"])
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "geo",
            "6.2.0",
            "Finds the members of a geospatial index within a circle or a box around a position \
             or a member.",
            "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area \
             around the shape provided as the filter and M is the number of items inside the shape",
        )
        .history(&[("7.0.0", "Added support for uppercase unit names.")])
        .args(ARGS),
    )
    .handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    geo_util::read(k, args, Form::Search)
}
