//! GETRANGE key start end — inclusive, negative indexes count from the end (Redis 7 rules).

use bytes::Bytes;
use rialto_resp::Reply;

use super::R;
use crate::reply::{self, CmdResult};

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let mut start = reply::int_arg(&args[2])?;
    let mut end = reply::int_arg(&args[3])?;
    let Some(rec) = k.get(&args[1])? else {
        return Ok(Reply::Bulk(Bytes::new()));
    };
    let len = rec.value.len() as i64;
    if start < 0 && end < 0 && start > end {
        return Ok(Reply::Bulk(Bytes::new()));
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return Ok(Reply::Bulk(Bytes::new()));
    }
    Ok(Reply::Bulk(rec.value.slice(start as usize..=end as usize)))
}
