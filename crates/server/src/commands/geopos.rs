//! GEOPOS key [member ...]

use bytes::Bytes;
use rialto_keyspace::geo;
use rialto_resp::Reply;

use super::geo_util::{coords, scores};
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
    let scores = scores(k, &args[1], &args[2..])?;
    Ok(Reply::Array(
        scores
            .into_iter()
            .map(|s| match s {
                Some(s) => {
                    let (lon, lat) = geo::position(s);
                    coords(lon, lat)
                }
                None => Reply::NullArray,
            })
            .collect(),
    ))
}
