//! GETEX key [EX s | PX ms | EXAT ts | PXAT ms-ts | PERSIST]

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, TtlChange};

use super::util_opts::{self as opts, For, PERSIST};
use super::At;
use crate::reply::CmdResult;

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let o = opts::parse(args, 2, For::GetEx)?;
    // As Redis: a missing key answers nil before the expiry is validated, so an invalid time
    // travels in the op and fails only once the key is found.
    let ttl = if o.flags & PERSIST != 0 {
        TtlChange::Persist
    } else {
        match opts::expire_time(&o, at.now_ms) {
            Ok(Some(t)) => TtlChange::At(t),
            Ok(None) => TtlChange::Keep,
            Err(bad) => TtlChange::Bad(bad),
        }
    };
    Ok(at.op(OpKind::GetEx {
        key: args[1].clone(),
        ttl,
    }))
}
