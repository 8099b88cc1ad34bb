//! SET key value [NX | XX] [GET] [EX s | PX ms | EXAT ts | PXAT ms-ts | KEEPTTL]

use bytes::Bytes;
use rialto_keyspace::{Cond, Op, OpKind, Set};

use super::util::checked;
use super::util_opts::{self as opts, For, GET, KEEPTTL, NX, XX};
use super::At;
use crate::reply::CmdResult;

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let (key, value) = (&args[1], &args[2]);
    let o = opts::parse(args, 3, For::Set)?;
    let expire_at_ms = opts::expire_at(&o, at.now_ms, "set")?;
    checked(rialto_keyspace::check_key(key))?;
    checked(rialto_keyspace::check_value_len(value.len()))?;
    let cond = if o.flags & NX != 0 {
        Some(Cond::Nx)
    } else if o.flags & XX != 0 {
        Some(Cond::Xx)
    } else {
        None
    };
    Ok(at.op(OpKind::Set(Set {
        key: key.clone(),
        value: value.clone(),
        expire_at_ms,
        keep_ttl: o.flags & KEEPTTL != 0,
        cond,
        get: o.flags & GET != 0,
    })))
}
