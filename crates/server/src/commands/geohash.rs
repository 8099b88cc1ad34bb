//! GEOHASH key [member ...]

use bytes::Bytes;
use rialto_keyspace::geo;
use rialto_resp::Reply;

use super::util::checked;
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
    let z = k.zset(&args[1])?;
    let mut out = Vec::with_capacity(args.len() - 2);
    for m in &args[2..] {
        let score = match &z {
            Some(z) => checked(z.score(k.keys(), m))?,
            None => None,
        };
        out.push(match score {
            Some(s) => Reply::Bulk(Bytes::copy_from_slice(&geo::geohash(s))),
            None => Reply::Null,
        });
    }
    Ok(Reply::Array(out))
}
