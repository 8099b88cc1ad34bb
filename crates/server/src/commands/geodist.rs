//! GEODIST key member1 member2 [M|KM|FT|MI]

use bytes::Bytes;
use rialto_keyspace::geo;
use rialto_resp::Reply;

use super::geo_util::unit;
use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::{Key, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const GEODIST: CommandSpec = cmd("geodist", -4, &["readonly"], &["@read", "@geo", "@slow"])
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "geo",
            "3.2.0",
            "Reads the distance between two members of a geospatial index.",
            "O(log(N))",
        )
        .args(&[
            arg("key", Key).key(0),
            arg("member1", Str),
            arg("member2", Str),
            arg("unit", OneOf).opt().sub(UNITS),
        ]),
    )
    .handler(Handler::Read(run));

/// The units a distance may be given or asked in.
pub(super) const UNITS: &[crate::command_table::Arg] = &[
    arg("m", PureToken).token("M"),
    arg("km", PureToken).token("KM"),
    arg("ft", PureToken).token("FT"),
    arg("mi", PureToken).token("MI"),
];

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let to_meters = match args.len() {
        4 => 1.0,
        5 => unit(&args[4])?,
        _ => return Err(reply::syntax()),
    };
    let Some(z) = k.zset(&args[1])? else {
        return Ok(Reply::Null);
    };
    let (Some(a), Some(b)) = (
        checked(z.score(k.keys(), &args[2]))?,
        checked(z.score(k.keys(), &args[3]))?,
    ) else {
        return Ok(Reply::Null);
    };
    let ((lon1, lat1), (lon2, lat2)) = (geo::position(a), geo::position(b));
    let d = geo::distance(lon1, lat1, lon2, lat2) / to_meters;
    Ok(Reply::Bulk(Bytes::from(geo::format_distance(d))))
}
