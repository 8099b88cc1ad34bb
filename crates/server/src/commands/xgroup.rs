//! XGROUP CREATE | SETID | DESTROY | CREATECONSUMER | DELCONSUMER | HELP

use bytes::Bytes;
use rialto_keyspace::{GroupStart, OpKind, StreamId, StreamOp};
use rialto_resp::Reply;

use super::stream_util::subcommand_syntax;
use super::util::is;
use super::{At, Ctx, Handler, Outcome};
use crate::command_table::help;
use crate::command_table::ArgType::{Integer, Key, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

const XGROUP_CREATE: CommandSpec = cmd(
    "xgroup|create",
    -5,
    &["write", "denyoom"],
    &["@write", "@stream", "@slow"],
)
.keys(2, 2, 1)
.key_specs(&[KeySpec::single(2, &["RW", "insert"])])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Creates a consumer group of a stream, reading from an id or from the end (`$`).",
        "O(1)",
    )
    .history(&[("7.0.0", "The `entries_read` argument.")])
    .args(&[
        arg("key", Key).key(0),
        arg("groupname", Str),
        arg("id", OneOf).sub(&[arg("id", Str), arg("new_id", PureToken).token("$")]),
        arg("mkstream", PureToken).token("MKSTREAM").opt(),
        arg("entries_read", Integer).token("ENTRIESREAD").opt(),
    ]),
)
.handler(Handler::Write(create));

const XGROUP_CREATECONSUMER: CommandSpec = cmd(
    "xgroup|createconsumer",
    5,
    &["write", "denyoom"],
    &["@write", "@stream", "@slow"],
)
.keys(2, 2, 1)
.key_specs(&[KeySpec::single(2, &["RW", "insert"])])
.docs(
    doc(
        "stream",
        "6.2.0",
        "Adds a consumer to a consumer group.",
        "O(1)",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("groupname", Str),
        arg("consumername", Str),
    ]),
)
.handler(Handler::Write(create_consumer));

const XGROUP_DELCONSUMER: CommandSpec = cmd(
    "xgroup|delconsumer",
    5,
    &["write"],
    &["@write", "@stream", "@slow"],
)
.keys(2, 2, 1)
.key_specs(&[KeySpec::single(2, &["RW", "delete"])])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Removes a consumer from a consumer group, with its pending entries.",
        "O(N) for N entries pending for the consumer.",
    )
    .args(&[
        arg("key", Key).key(0),
        arg("groupname", Str),
        arg("consumername", Str),
    ]),
)
.handler(Handler::Write(del_consumer));

const XGROUP_DESTROY: CommandSpec = cmd(
    "xgroup|destroy",
    4,
    &["write"],
    &["@write", "@stream", "@slow"],
)
.keys(2, 2, 1)
.key_specs(&[KeySpec::single(2, &["RW", "delete"])])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Removes a consumer group, its consumers and its pending entries.",
        "O(N) for N entries pending in the group.",
    )
    .args(&[arg("key", Key).key(0), arg("groupname", Str)]),
)
.handler(Handler::Write(destroy));

const XGROUP_HELP: CommandSpec = cmd(
    "xgroup|help",
    2,
    &["loading", "stale"],
    &["@stream", "@slow"],
)
.docs(doc(
    "stream",
    "5.0.0",
    "Lists the XGROUP subcommands with a short description of each.",
    "O(1)",
))
.handler(Handler::Conn(help));

const XGROUP_SETID: CommandSpec = cmd(
    "xgroup|setid",
    -5,
    &["write"],
    &["@write", "@stream", "@slow"],
)
.keys(2, 2, 1)
.key_specs(&[KeySpec::single(2, &["RW", "update"])])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Sets the last id a consumer group delivered, and optionally how many entries it read.",
        "O(1)",
    )
    .history(&[("7.0.0", "The optional `entries_read` argument.")])
    .args(&[
        arg("key", Key).key(0),
        arg("groupname", Str),
        arg("id", OneOf).sub(&[arg("id", Str), arg("new_id", PureToken).token("$")]),
        arg("entries_read", Integer).token("ENTRIESREAD").opt(),
    ]),
)
.handler(Handler::Write(setid));

pub const XGROUP: CommandSpec = cmd("xgroup", -2, &[], &["@slow"])
    .docs(doc(
        "stream",
        "5.0.0",
        "A container for the consumer group commands.",
        "Depends on the subcommand.",
    ))
    .subs(&[
        XGROUP_CREATE,
        XGROUP_CREATECONSUMER,
        XGROUP_DELCONSUMER,
        XGROUP_DESTROY,
        XGROUP_SETID,
        XGROUP_HELP,
    ]);

fn help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&XGROUP))
}

/// MKSTREAM (CREATE only) and ENTRIESREAD (CREATE and SETID) after the id, as Redis reads them.
fn options(args: &[Bytes], create: bool, setid: bool) -> CmdResult<(bool, i64)> {
    let (mut mkstream, mut entries_read) = (false, -1);
    let mut i = 5;
    while i < args.len() {
        if create && is(&args[i], "mkstream") {
            mkstream = true;
            i += 1;
        } else if (create || setid) && is(&args[i], "entriesread") && i + 1 < args.len() {
            entries_read = reply::int_arg(&args[i + 1])?;
            if entries_read < 0 && entries_read != -1 {
                return Err(Reply::error(
                    "ERR value for ENTRIESREAD must be positive or -1",
                ));
            }
            i += 2;
        } else {
            return Err(subcommand_syntax(args));
        }
    }
    Ok((mkstream, entries_read))
}

fn create(at: At, args: &[Bytes]) -> CmdResult<rialto_keyspace::Op> {
    let (mkstream, entries_read) = options(args, true, false)?;
    if args.len() > 8 {
        return Err(subcommand_syntax(args));
    }
    let start = match &args[4][..] {
        b"$" => GroupStart::Last,
        id => StreamId::parse(id, 0, true, false)
            .map_or(GroupStart::Bad, |(id, _)| GroupStart::Id(id)),
    };
    super::util::checked(rialto_keyspace::check_key(&args[2]))?;
    Ok(at.op(OpKind::Stream(StreamOp::GroupCreate {
        key: args[2].clone(),
        group: args[3].clone(),
        start,
        mkstream,
        entries_read,
    })))
}

fn setid(at: At, args: &[Bytes]) -> CmdResult<rialto_keyspace::Op> {
    let (_, entries_read) = options(args, false, true)?;
    if args.len() != 5 && args.len() != 7 {
        return Err(subcommand_syntax(args));
    }
    let start = match &args[4][..] {
        b"$" => GroupStart::Last,
        id => StreamId::parse(id, 0, false, false)
            .map_or(GroupStart::Bad, |(id, _)| GroupStart::Id(id)),
    };
    Ok(at.op(OpKind::Stream(StreamOp::GroupSetId {
        key: args[2].clone(),
        group: args[3].clone(),
        start,
        entries_read,
    })))
}

fn destroy(at: At, args: &[Bytes]) -> CmdResult<rialto_keyspace::Op> {
    Ok(at.op(OpKind::Stream(StreamOp::GroupDestroy {
        key: args[2].clone(),
        group: args[3].clone(),
    })))
}

fn create_consumer(at: At, args: &[Bytes]) -> CmdResult<rialto_keyspace::Op> {
    Ok(at.op(OpKind::Stream(StreamOp::CreateConsumer {
        key: args[2].clone(),
        group: args[3].clone(),
        consumer: args[4].clone(),
    })))
}

fn del_consumer(at: At, args: &[Bytes]) -> CmdResult<rialto_keyspace::Op> {
    Ok(at.op(OpKind::Stream(StreamOp::DelConsumer {
        key: args[2].clone(),
        group: args[3].clone(),
        consumer: args[4].clone(),
    })))
}
