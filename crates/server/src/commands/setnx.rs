//! SETNX key value

use bytes::Bytes;
use rialto_resp::Reply;

use super::W;
use crate::reply::CmdResult;
use crate::store::{check_key, check_value_len};

pub fn run(k: &mut W<'_>, args: &[Bytes]) -> CmdResult {
    check_key(&args[1])?;
    check_value_len(args[2].len())?;
    if k.exists(&args[1])? {
        return Ok(Reply::Integer(0));
    }
    k.set(&args[1], &args[2], None);
    Ok(Reply::Integer(1))
}
