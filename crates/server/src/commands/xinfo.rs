//! XINFO STREAM key [FULL [COUNT count]] | GROUPS key | CONSUMERS key group | HELP

use bytes::Bytes;
use rialto_keyspace::{NoGroupForm, Stream, StreamError, StreamId, StreamMeta};
use rialto_resp::Reply;

use super::stream_util::{entry_reply, id_reply, subcommand_syntax};
use super::util::{checked, is};
use super::{Ctx, Handler, Outcome, R};
use crate::command_table::help;
use crate::command_table::ArgType::{Block, Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

const XINFO_CONSUMERS: CommandSpec = cmd(
    "xinfo|consumers",
    4,
    &["readonly"],
    &["@read", "@stream", "@slow"],
)
.keys(2, 2, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(2, &["RO", "access"])])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Lists the consumers of a consumer group.",
        "O(1) per consumer.",
    )
    .args(&[arg("key", Key).key(0), arg("groupname", Str)]),
)
.handler(Handler::Read(consumers));

const XINFO_GROUPS: CommandSpec = cmd(
    "xinfo|groups",
    3,
    &["readonly"],
    &["@read", "@stream", "@slow"],
)
.keys(2, 2, 1)
.key_specs(&[KeySpec::single(2, &["RO", "access"])])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Lists the consumer groups of a stream.",
        "O(1) per group.",
    )
    .history(&[("7.0.0", "The `entries-read` and `lag` fields.")])
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(groups));

const XINFO_HELP: CommandSpec = cmd(
    "xinfo|help",
    2,
    &["loading", "stale"],
    &["@stream", "@slow"],
)
.docs(doc(
    "stream",
    "5.0.0",
    "Lists the XINFO subcommands with a short description of each.",
    "O(1)",
))
.handler(Handler::Conn(help));

const XINFO_STREAM: CommandSpec = cmd("xinfo|stream", -3, &["readonly"], &["@read", "@stream", "@slow"])
    .keys(2, 2, 1)
    .key_specs(&[KeySpec::single(2, &["RO", "access"])])
    .docs(
        doc(
            "stream",
            "5.0.0",
            "Describes a stream: its counters and ends, or (FULL) its entries, groups and pending entries.",
            "O(1), plus the nodes counted; FULL: O(N) for N entries, groups, consumers and pending entries returned.",
        )
        .history(&[
            ("6.0.0", "The `FULL` modifier."),
            ("7.0.0", "The `max-deleted-entry-id`, `entries-added`, `recorded-first-entry-id`, `entries-read` and `lag` fields."),
        ])
        .args(&[
            arg("key", Key).key(0),
            arg("full", Block).token("FULL").opt().sub(&[
                arg("count", Integer).token("COUNT").opt(),
            ]),
        ]),
    )
    .handler(Handler::Read(stream));

pub const XINFO: CommandSpec = cmd("xinfo", -2, &[], &["@slow"])
    .docs(doc(
        "stream",
        "5.0.0",
        "A container for the stream introspection commands.",
        "Depends on the subcommand.",
    ))
    .subs(&[XINFO_CONSUMERS, XINFO_GROUPS, XINFO_STREAM, XINFO_HELP]);

fn help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&XINFO))
}

fn s(text: &'static str) -> Reply {
    Reply::Bulk(Bytes::from_static(text.as_bytes()))
}

fn load(r: &mut R<'_, '_>, key: &[u8]) -> CmdResult<Stream> {
    checked(Stream::load(r.keys(), key))?.ok_or_else(|| Reply::error("ERR no such key"))
}

fn entries_read(n: i64) -> Reply {
    if n == -1 {
        Reply::Null
    } else {
        Reply::Integer(n)
    }
}

fn lag(m: &StreamMeta, g: &rialto_keyspace::StreamGroup) -> Reply {
    m.lag(g).map_or(Reply::Null, Reply::Integer)
}

fn consumers(r: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let st = load(r, &args[2])?;
    let g = st.meta.group(&args[3]).ok_or_else(|| {
        reply::stream_error(&StreamError::NoGroup {
            key: args[2].clone(),
            group: args[3].clone(),
            form: NoGroupForm::ForKey,
        })
    })?;
    let now = r.now_ms();
    Ok(Reply::Array(
        g.consumers
            .iter()
            .map(|c| {
                Reply::Map(vec![
                    (s("name"), Reply::Bulk(c.name.clone())),
                    (s("pending"), Reply::Integer(c.pending as i64)),
                    (
                        s("idle"),
                        Reply::Integer(now.wrapping_sub(c.seen_ms).max(0)),
                    ),
                ])
            })
            .collect(),
    ))
}

fn groups(r: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let st = load(r, &args[2])?;
    let m = &st.meta;
    Ok(Reply::Array(
        m.groups
            .iter()
            .map(|g| {
                Reply::Map(vec![
                    (s("name"), Reply::Bulk(g.name.clone())),
                    (s("consumers"), Reply::Integer(g.consumers.len() as i64)),
                    (s("pending"), Reply::Integer(g.pending as i64)),
                    (s("last-delivered-id"), id_reply(g.last)),
                    (s("entries-read"), entries_read(g.entries_read)),
                    (s("lag"), lag(m, g)),
                ])
            })
            .collect(),
    ))
}

fn stream(r: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let st = load(r, &args[2])?;
    let opts = &args[3..];
    let full = !opts.is_empty();
    let mut count = 10;
    if full {
        if (opts.len() != 1 && opts.len() != 3) || !is(&opts[0], "full") {
            return Err(subcommand_syntax(args));
        }
        if opts.len() == 3 {
            if !is(&opts[1], "count") {
                return Err(subcommand_syntax(args));
            }
            count = reply::int_arg(&opts[2])?;
            if count < 0 {
                count = 10;
            }
        }
    }
    let m = &st.meta;
    let nodes = checked(st.nodes(r.keys()))?;
    let mut out = vec![
        (s("length"), Reply::Integer(m.length as i64)),
        (s("radix-tree-keys"), Reply::Integer(nodes as i64)),
        // Redis's radix tree has inner nodes Rialto does not keep: one more than the keys
        // is what a tree of one key (or none) has.
        (s("radix-tree-nodes"), Reply::Integer(nodes as i64 + 1)),
        (s("last-generated-id"), id_reply(m.last)),
        (s("max-deleted-entry-id"), id_reply(m.max_deleted)),
        (s("entries-added"), Reply::Integer(m.entries_added as i64)),
        (s("recorded-first-entry-id"), id_reply(m.first)),
    ];
    if !full {
        let first = checked(st.range(r.keys(), StreamId::MIN, StreamId::MAX, 1, false))?;
        let last = checked(st.range(r.keys(), StreamId::MIN, StreamId::MAX, 1, true))?;
        out.push((s("groups"), Reply::Integer(m.groups.len() as i64)));
        out.push((
            s("first-entry"),
            first.into_iter().next().map_or(Reply::Null, entry_reply),
        ));
        out.push((
            s("last-entry"),
            last.into_iter().next().map_or(Reply::Null, entry_reply),
        ));
        return Ok(Reply::Map(out));
    }
    let count = count as u64;
    let entries = checked(st.range(r.keys(), StreamId::MIN, StreamId::MAX, count, false))?;
    out.push((
        s("entries"),
        Reply::Array(entries.into_iter().map(entry_reply).collect()),
    ));
    let mut groups = Vec::with_capacity(m.groups.len());
    for g in &m.groups {
        let pel = checked(st.pending(r.keys(), g.gid, None, StreamId::MIN, StreamId::MAX, count))?;
        let pending = pel
            .iter()
            .map(|p| {
                Reply::Array(vec![
                    id_reply(p.id),
                    Reply::Bulk(g.name_of(p.cid).cloned().unwrap_or_default()),
                    Reply::Integer(p.delivered_ms),
                    Reply::Integer(p.deliveries as i64),
                ])
            })
            .collect();
        let mut consumers = Vec::with_capacity(g.consumers.len());
        for c in &g.consumers {
            let own = checked(st.pending(
                r.keys(),
                g.gid,
                Some(c.cid),
                StreamId::MIN,
                StreamId::MAX,
                count,
            ))?;
            consumers.push(Reply::Map(vec![
                (s("name"), Reply::Bulk(c.name.clone())),
                (s("seen-time"), Reply::Integer(c.seen_ms)),
                (s("pel-count"), Reply::Integer(c.pending as i64)),
                (
                    s("pending"),
                    Reply::Array(
                        own.iter()
                            .map(|p| {
                                Reply::Array(vec![
                                    id_reply(p.id),
                                    Reply::Integer(p.delivered_ms),
                                    Reply::Integer(p.deliveries as i64),
                                ])
                            })
                            .collect(),
                    ),
                ),
            ]));
        }
        groups.push(Reply::Map(vec![
            (s("name"), Reply::Bulk(g.name.clone())),
            (s("last-delivered-id"), id_reply(g.last)),
            (s("entries-read"), entries_read(g.entries_read)),
            (s("lag"), lag(m, g)),
            (s("pel-count"), Reply::Integer(g.pending as i64)),
            (s("pending"), Reply::Array(pending)),
            (s("consumers"), Reply::Array(consumers)),
        ]));
    }
    out.push((s("groups"), Reply::Array(groups)));
    Ok(Reply::Map(out))
}
