//! GEOADD key [NX|XX] [CH] longitude latitude member [longitude latitude member ...]
//!
//! ZADD of each position's score (`rialto_keyspace::geo::score_of`), as Redis rewrites it.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, Score, ZAddFlags, ZSetOp};

use super::geo_util::lonlat;
use super::util::{checked, is};
use super::{At, Handler};
use crate::command_table::ArgType::{Block, Double, Key, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const GEOADD: CommandSpec = cmd(
    "geoadd",
    -5,
    &["write", "denyoom"],
    &["@write", "@geo", "@slow"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "update"])])
.docs(
    doc(
        "geo",
        "3.2.0",
        "Adds members with their positions to a geospatial index (a sorted set), or moves them.",
        "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
    )
    .history(&[("6.2.0", "Added the `CH`, `NX` and `XX` options.")])
    .args(&[
        arg("key", Key).key(0),
        arg("condition", OneOf).since("6.2.0").opt().sub(&[
            arg("nx", PureToken).token("NX"),
            arg("xx", PureToken).token("XX"),
        ]),
        arg("change", PureToken).token("CH").since("6.2.0").opt(),
        arg("longitude_latitude_member", Block).multi().sub(&[
            arg("longitude", Double),
            arg("latitude", Double),
            arg("member", Str),
        ]),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let mut f = ZAddFlags::default();
    let mut i = 2;
    while let Some(a) = args.get(i) {
        match () {
            _ if is(a, "nx") => f.nx = true,
            _ if is(a, "xx") => f.xx = true,
            _ if is(a, "ch") => f.ch = true,
            _ => break,
        }
        i += 1;
    }
    let rest = &args[i..];
    if rest.is_empty() || !rest.len().is_multiple_of(3) || (f.nx && f.xx) {
        return Err(reply::syntax());
    }
    let mut items = Vec::with_capacity(rest.len() / 3);
    for t in rest.chunks_exact(3) {
        let (lon, lat) = lonlat(&t[0], &t[1])?;
        items.push((
            Score(rialto_keyspace::geo::score_of(lon, lat)),
            t[2].clone(),
        ));
    }
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::ZSet(ZSetOp::Add {
        key: args[1].clone(),
        flags: f,
        items,
    })))
}
