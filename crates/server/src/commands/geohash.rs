//! GEOHASH key [member ...]

use bytes::Bytes;
use rialto_keyspace::geo;
use rialto_resp::Reply;

use super::geo_util::scores;
use super::{Handler, R};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::CmdResult;

pub const GEOHASH: CommandSpec = cmd("geohash", -2, &["readonly"], &["@read", "@geo", "@slow"])
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "geo",
            "3.2.0",
            "Reads members' positions in a geospatial index as standard geohash strings.",
            "O(log(N)) for each member requested, where N is the number of elements in the sorted set.",
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
                Some(s) => Reply::Bulk(Bytes::copy_from_slice(&geo::geohash(s))),
                None => Reply::Null,
            })
            .collect(),
    ))
}
