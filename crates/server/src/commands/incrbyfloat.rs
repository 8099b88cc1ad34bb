//! INCRBYFLOAT key increment — computed in C `long double` by the keyspace, as Redis does, so
//! the stored text matches Redis's digit for digit; keeps the TTL.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};

use super::util::checked;
use super::At;
use crate::reply::CmdResult;

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    checked(rialto_keyspace::check_key(&args[1]))?;
    Ok(at.op(OpKind::IncrByFloat {
        key: args[1].clone(),
        incr: args[2].clone(),
    }))
}
