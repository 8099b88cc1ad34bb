//! GEOPOS key [member ...]

use bytes::Bytes;
use rialto_keyspace::geo;
use rialto_resp::Reply;

use super::geo_util::coords;
use super::util::checked;
use super::{Handler, R};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const GEOPOS: CommandSpec = cmd("geopos", -2, &["readonly"], &["@read", "@geo", "@slow"])
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "geo",
            "3.2.0",
            "Reads the longitude and latitude of members of a geospatial index.",
            "O(N) where N is the number of members requested.",
        )
        .args(&[arg("key", Key).key(0), arg("member", Str).multi()]),
    )
    .handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let z = k.zset(&args[1])?;
    let mut out = Vec::with_capacity(args.len() - 2);
    for m in &args[2..] {
        let score = match &z {
            Some(z) => checked(z.score(k.keys(), m))?,
            None => None,
        };
        out.push(match score {
            Some(s) => {
                let (lon, lat) = geo::position(s);
                coords(lon, lat)
            }
            None => Reply::NullArray,
        });
    }
    Ok(Reply::Array(out))
}
