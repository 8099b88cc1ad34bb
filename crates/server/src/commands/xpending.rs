//! XPENDING key group [[IDLE min-idle-time] start end count [consumer]]

use bytes::Bytes;
use rialto_keyspace::{NoGroupForm, Stream, StreamError, StreamId};
use rialto_resp::Reply;

use super::stream_util::{id_reply, range_end, range_start};
use super::util::{checked, is};
use super::{Handler, R};
use crate::command_table::ArgType::{Block, Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const XPENDING: CommandSpec = cmd("xpending", -3, &["readonly"], &["@read", "@stream", "@slow"])
    .keys(1, 1, 1)
    .tips(&["nondeterministic_output"])
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "stream",
            "5.0.0",
            "Describes a consumer group's pending entries: a summary, or the entries in a range of ids.",
            "O(1) for the summary (plus one step per consumer); O(N) for N entries returned.",
        )
        .history(&[("6.2.0", "The `IDLE` option and exclusive ranges.")])
        .args(&[
            arg("key", Key).key(0),
            arg("group", Str),
            arg("filters", Block).opt().sub(&[
                arg("min-idle-time", Integer).token("IDLE").since("6.2.0").opt(),
                arg("start", Str),
                arg("end", Str),
                arg("count", Integer),
                arg("consumer", Str).opt(),
            ]),
        ]),
    )
    .handler(Handler::Read(run));

fn run(r: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let n = args.len();
    if n != 3 && !(6..=9).contains(&n) {
        return Err(reply::syntax());
    }
    let mut range = None;
    if n >= 6 {
        let mut at = 3;
        let mut min_idle = 0;
        if is(&args[3], "idle") {
            min_idle = reply::int_arg(&args[4])?;
            if n < 8 {
                return Err(reply::syntax());
            }
            at += 2;
        }
        let count = reply::int_arg(&args[at + 2])?.max(0) as u64;
        let start = range_start(&args[at])?;
        let end = range_end(&args[at + 1])?;
        let consumer = args.get(at + 3).cloned();
        range = Some((min_idle, start, end, count, consumer));
    }
    let (key, group) = (&args[1], &args[2]);
    let s = checked(Stream::load(r.keys(), key))?;
    let missing = || {
        reply::stream_error(&StreamError::NoGroup {
            key: key.clone(),
            group: group.clone(),
            form: NoGroupForm::KeyOrGroup,
        })
    };
    let s = s.ok_or_else(missing)?;
    let g = s.meta.group(group).ok_or_else(missing)?.clone();
    let Some((min_idle, start, end, count, consumer)) = range else {
        if g.pending == 0 {
            return Ok(Reply::Array(vec![
                Reply::Integer(0),
                Reply::Null,
                Reply::Null,
                Reply::NullArray,
            ]));
        }
        let first = checked(s.pending(r.keys(), g.gid, None, StreamId::MIN, StreamId::MAX, 1))?;
        let last = checked(s.last_pending(r.keys(), g.gid))?;
        let consumers = g
            .consumers
            .iter()
            .filter(|c| c.pending > 0)
            .map(|c| {
                Reply::Array(vec![
                    Reply::Bulk(c.name.clone()),
                    Reply::Bulk(Bytes::from(c.pending.to_string())),
                ])
            })
            .collect();
        return Ok(Reply::Array(vec![
            Reply::Integer(g.pending as i64),
            first.first().map_or(Reply::Null, |p| id_reply(p.id)),
            last.map_or(Reply::Null, |p| id_reply(p.id)),
            Reply::Array(consumers),
        ]));
    };
    let cid = match &consumer {
        Some(name) => match g.consumer(name) {
            Some(c) => Some(c.cid),
            None => return Ok(Reply::Array(Vec::new())),
        },
        None => None,
    };
    if count == 0 || start > end {
        return Ok(Reply::Array(Vec::new()));
    }
    let now = r.now_ms();
    // IDLE filters as it goes: read in pages until `count` pass.
    let mut out = Vec::new();
    let mut from = start;
    loop {
        let page = checked(s.pending(r.keys(), g.gid, cid, from, end, 1024))?;
        let full = page.len() == 1024;
        for p in &page {
            if min_idle != 0 && now.wrapping_sub(p.delivered_ms) < min_idle {
                continue;
            }
            let name = g.name_of(p.cid).cloned().unwrap_or_default();
            out.push(Reply::Array(vec![
                id_reply(p.id),
                Reply::Bulk(name),
                Reply::Integer(now.wrapping_sub(p.delivered_ms).max(0)),
                Reply::Integer(p.deliveries as i64),
            ]));
            if out.len() as u64 >= count {
                return Ok(Reply::Array(out));
            }
        }
        match page.last().and_then(|p| p.id.next()) {
            Some(next) if full => from = next,
            _ => return Ok(Reply::Array(out)),
        }
    }
}
