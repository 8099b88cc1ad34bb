//! What the stream commands share: id arguments as Redis reads them, the trim options of XADD
//! and XTRIM, and entries as replies carry them.

use bytes::Bytes;
use rialto_keyspace::{NodeLimits, StreamEntry, StreamId, Trim, TrimBy};
use rialto_resp::Reply;

use super::util::is;
use crate::reply::{self, CmdResult};

/// A strict id (`-` and `+` refused; a missing sequence is 0).
pub fn strict_id(arg: &[u8]) -> CmdResult<StreamId> {
    StreamId::parse(arg, 0, true, false)
        .map(|(id, _)| id)
        .ok_or_else(reply::invalid_stream_id)
}

/// A range bound: `-`, `+`, an id (a missing sequence is `missing_seq`), or `(id`, exclusive
/// (then strict). The bool is whether it was exclusive.
pub fn interval_id(arg: &[u8], missing_seq: u64) -> CmdResult<(StreamId, bool)> {
    if arg.len() > 1 && arg[0] == b'(' {
        return StreamId::parse(&arg[1..], missing_seq, true, false)
            .map(|(id, _)| (id, true))
            .ok_or_else(reply::invalid_stream_id);
    }
    StreamId::parse(arg, missing_seq, false, false)
        .map(|(id, _)| (id, false))
        .ok_or_else(reply::invalid_stream_id)
}

/// The start of a range: inclusive, or the id after an exclusive one.
pub fn range_start(arg: &[u8]) -> CmdResult<StreamId> {
    match interval_id(arg, 0)? {
        (id, false) => Ok(id),
        (id, true) => id
            .next()
            .ok_or_else(|| Reply::error("ERR invalid start ID for the interval")),
    }
}

/// The end of a range: inclusive (a missing sequence is the greatest), or the id before an
/// exclusive one.
pub fn range_end(arg: &[u8]) -> CmdResult<StreamId> {
    match interval_id(arg, u64::MAX)? {
        (id, false) => Ok(id),
        (id, true) => id
            .prev()
            .ok_or_else(|| Reply::error("ERR invalid end ID for the interval")),
    }
}

/// An id as replies carry it.
pub fn id_reply(id: StreamId) -> Reply {
    Reply::Bulk(id.to_bytes())
}

/// `[id, [field, value, ...]]`.
pub fn entry_reply(e: StreamEntry) -> Reply {
    Reply::Array(vec![
        id_reply(e.id),
        Reply::Array(e.fields.into_iter().map(Reply::Bulk).collect()),
    ])
}

/// Redis's answer to a subcommand with the wrong arguments.
pub fn subcommand_syntax(args: &[Bytes]) -> Reply {
    reply::err_string(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        String::from_utf8_lossy(&args[1]),
        String::from_utf8_lossy(&args[0]).to_uppercase()
    ))
}

/// XADD's and XTRIM's options, as Redis's `streamParseAddOrTrimArgsOrReply` reads them.
pub struct AddOrTrim {
    /// Where XADD's id is.
    pub id_at: usize,
    pub nomkstream: bool,
    pub trim: Option<Trim>,
    /// XADD's id: `None` for `*`; else the id and whether its sequence was given.
    pub id: Option<(StreamId, bool)>,
}

pub fn add_or_trim(args: &[Bytes], xadd: bool, node: NodeLimits) -> CmdResult<AddOrTrim> {
    let mut by: Option<TrimBy> = None;
    let mut approx = false;
    let mut limit: Option<i64> = None;
    let mut nomkstream = false;
    let mut id = None;
    let mut i = 2;
    let both = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = &args[i];
        if xadd && &opt[..] == b"*" {
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if by.is_some() {
                return Err(Reply::error(both));
            }
            approx = false;
            let next = &args[i + 1];
            if more >= 2 && &next[..] == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && &next[..] == b"=" {
                i += 1;
            }
            let value = &args[i + 1];
            by = Some(if is(opt, "maxlen") {
                let n = reply::int_arg(value)?;
                if n < 0 {
                    return Err(Reply::error("ERR The MAXLEN argument must be >= 0."));
                }
                TrimBy::MaxLen(n as u64)
            } else {
                TrimBy::MinId(strict_id(value)?)
            });
            i += 1;
        } else if is(opt, "limit") && more > 0 {
            let n = reply::int_arg(&args[i + 1])?;
            if n < 0 {
                return Err(Reply::error("ERR The LIMIT argument must be >= 0."));
            }
            limit = Some(n);
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            nomkstream = true;
        } else if xadd {
            id = Some(StreamId::parse(opt, 0, true, true).ok_or_else(reply::invalid_stream_id)?);
            break;
        } else {
            return Err(reply::syntax());
        }
        i += 1;
    }
    if limit.is_some_and(|l| l > 0) && by.is_none() {
        return Err(Reply::error(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && by.is_none() {
        return Err(Reply::error(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    let limit = match limit {
        Some(_) if !approx => {
            return Err(Reply::error(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ))
        }
        Some(l) => l as u64,
        None if approx => {
            let l = 100u64.saturating_mul(node.max_entries);
            if l == 0 {
                10_000
            } else {
                l.min(1_000_000)
            }
        }
        None => 0,
    };
    Ok(AddOrTrim {
        id_at: i,
        nomkstream,
        trim: by.map(|by| Trim { by, approx, limit }),
        id,
    })
}

/// A BLOCK timeout in milliseconds (`None`: forever).
pub fn block_ms(arg: &[u8]) -> CmdResult<Option<u64>> {
    let n = reply::parse_i64(arg)
        .ok_or_else(|| Reply::error("ERR timeout is not an integer or out of range"))?;
    if n < 0 {
        return Err(Reply::error("ERR timeout is negative"));
    }
    Ok((n > 0).then_some(n as u64))
}
