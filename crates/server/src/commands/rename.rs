//! RENAME key newkey, RENAMENX key newkey — the value moves with its TTL.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};

use super::At;
use crate::reply::CmdResult;

fn rename(at: At, args: &[Bytes], nx: bool) -> CmdResult<Op> {
    Ok(at.op(OpKind::Rename {
        src: args[1].clone(),
        dst: args[2].clone(),
        nx,
    }))
}

/// RENAME
pub fn rename_cmd(at: At, args: &[Bytes]) -> CmdResult<Op> {
    rename(at, args, false)
}

/// RENAMENX
pub fn renamenx(at: At, args: &[Bytes]) -> CmdResult<Op> {
    rename(at, args, true)
}
