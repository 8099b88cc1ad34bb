//! MSET key value [key value ...], MSETNX key value [key value ...]

use bytes::Bytes;
use rialto_resp::Reply;

use super::W;
use crate::reply::{self, CmdResult};
use crate::store::{check_key, check_value_len};

fn check_pairs(args: &[Bytes], name: &str) -> CmdResult<()> {
    if args.len().is_multiple_of(2) {
        return Err(reply::wrong_arity(name));
    }
    for pair in args[1..].chunks_exact(2) {
        check_key(&pair[0])?;
        check_value_len(pair[1].len())?;
    }
    Ok(())
}

/// MSET: blind writes; a later pair for the same key wins.
pub fn mset(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    check_pairs(args, "mset")?;
    for pair in args[1..].chunks_exact(2) {
        k.set(&pair[0], &pair[1], None);
    }
    Ok(reply::ok())
}

/// MSETNX: all or nothing, only if no key exists.
pub fn msetnx(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    check_pairs(args, "msetnx")?;
    for pair in args[1..].chunks_exact(2) {
        if k.exists(&pair[0])? {
            return Ok(Reply::Integer(0));
        }
    }
    for pair in args[1..].chunks_exact(2) {
        k.set(&pair[0], &pair[1], None);
    }
    Ok(Reply::Integer(1))
}
