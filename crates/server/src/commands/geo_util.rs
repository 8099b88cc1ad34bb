//! What the geospatial commands share: the read and write forms of a search, and the shape of
//! their replies. Parsing (in `georadiusGeneric`'s order) and the search itself are the
//! keyspace's (`rialto_keyspace::geo`): a search that stores parses where its op is applied.

use bytes::Bytes;
pub use rialto_keyspace::geo::Form;
use rialto_keyspace::geo::{self, Found, Request};
use rialto_keyspace::{Op, OpKind, ZSetOp};
use rialto_resp::Reply;

use super::util::checked;
use super::{At, R};
use crate::reply::{self, CmdResult};

/// A longitude and latitude argument pair, checked to be a position GEOADD can store.
pub fn lonlat(lon: &[u8], lat: &[u8]) -> CmdResult<(f64, f64)> {
    checked(geo::lonlat(lon, lat))
}

/// Meters per `unit` (m, km, ft, mi, any case).
pub fn unit(arg: &[u8]) -> CmdResult<f64> {
    checked(geo::unit(arg))
}

/// The scores of `members` in the sorted set at `key` (`None` for a member it lacks, every
/// one when there is no set).
pub fn scores(k: &mut R<'_, '_>, key: &[u8], members: &[Bytes]) -> CmdResult<Vec<Option<f64>>> {
    let z = k.zset(key)?;
    members
        .iter()
        .map(|m| match &z {
            Some(z) => checked(z.score(k.keys(), m)),
            None => Ok(None),
        })
        .collect()
}

/// A read form: the search's reply (an empty array when the key holds nothing).
pub fn read(k: &mut R<'_, '_>, args: &[Bytes], form: Form) -> CmdResult {
    let z = k.zset(&args[form.src()])?;
    let req = checked(geo::parse(k.keys(), z.as_ref(), args, form))?;
    if req.store.is_some() {
        // A GEORADIUS that stores runs as a write (`stores`).
        return Err(reply::syntax());
    }
    let found = match &z {
        Some(z) => checked(geo::run(k.keys(), z, &req))?,
        None => Vec::new(),
    };
    Ok(Reply::Array(
        found.into_iter().map(|f| item(f, &req)).collect(),
    ))
}

/// A store form: the op, which parses the request where it runs (its errors depend on the
/// searched set).
pub fn write(at: At, args: &[Bytes], form: Form) -> CmdResult<Op> {
    Ok(at.op(OpKind::ZSet(ZSetOp::GeoStore {
        form,
        args: args.to_vec(),
    })))
}

/// Whether a GEORADIUS or GEORADIUSBYMEMBER request names a destination (and so runs as a
/// write, as Redis's key extraction sees it).
pub fn stores(args: &[Bytes]) -> bool {
    geo::radius_store_key(args).is_some()
}

/// One result: the member alone, or with the distance, hash and coordinates asked for.
fn item(f: Found, p: &Request) -> Reply {
    if !(p.withdist || p.withhash || p.withcoord) {
        return Reply::Bulk(f.member);
    }
    let mut out = vec![Reply::Bulk(f.member)];
    if p.withdist {
        out.push(Reply::Bulk(Bytes::from(geo::format_distance(f.dist))));
    }
    if p.withhash {
        out.push(Reply::Integer(f.score as i64));
    }
    if p.withcoord {
        out.push(coords(f.lon, f.lat));
    }
    Reply::Array(out)
}

/// A position as GEOPOS and WITHCOORD reply it.
pub fn coords(lon: f64, lat: f64) -> Reply {
    Reply::Array(vec![Reply::HumanDouble(lon), Reply::HumanDouble(lat)])
}
