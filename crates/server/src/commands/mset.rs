//! MSET key value [key value ...], MSETNX key value [key value ...]

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};

use super::At;
use crate::reply::{self, CmdResult};

fn pairs(args: &[Bytes], name: &str) -> CmdResult<Vec<(Bytes, Bytes)>> {
    if args.len().is_multiple_of(2) {
        return Err(reply::wrong_arity(name));
    }
    Ok(args[1..]
        .chunks_exact(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect())
}

/// MSET: blind writes; a later pair for the same key wins.
pub fn mset(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::MSet {
        pairs: pairs(args, "mset")?,
    }))
}

/// MSETNX: all or nothing, only if no key exists.
pub fn msetnx(at: At, args: &[Bytes]) -> CmdResult<Op> {
    Ok(at.op(OpKind::MSetNx {
        pairs: pairs(args, "msetnx")?,
    }))
}
