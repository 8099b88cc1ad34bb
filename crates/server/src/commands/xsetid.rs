//! XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]

use bytes::Bytes;
use rialto_keyspace::{OpKind, StreamOp};
use rialto_resp::Reply;

use super::stream_util::strict_id;
use super::util::is;
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const XSETID: CommandSpec = cmd(
    "xsetid",
    -3,
    &["write", "denyoom", "fast"],
    &["@write", "@stream", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["RW", "update"])])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Sets a stream's last id and, optionally, its counters of entries added and deleted.",
        "O(1)",
    )
    .history(&[(
        "7.0.0",
        "The `entries_added` and `max_deleted_entry_id` arguments.",
    )])
    .args(&[
        arg("key", Key).key(0),
        arg("last-id", Str),
        arg("entries_added", Integer)
            .token("ENTRIESADDED")
            .since("7.0.0")
            .opt(),
        arg("max_deleted_entry_id", Str)
            .token("MAXDELETEDID")
            .since("7.0.0")
            .opt(),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<rialto_keyspace::Op> {
    let last = strict_id(&args[2])?;
    let mut entries_added = None;
    let mut max_deleted = None;
    let mut i = 3;
    while i < args.len() {
        let more = i + 1 < args.len();
        if is(&args[i], "entriesadded") && more {
            let n = reply::int_arg(&args[i + 1])?;
            if n < 0 {
                return Err(Reply::error("ERR entries_added must be positive"));
            }
            entries_added = Some(n as u64);
        } else if is(&args[i], "maxdeletedid") && more {
            let m = strict_id(&args[i + 1])?;
            if last < m {
                return Err(Reply::error(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
            max_deleted = Some(m);
        } else {
            return Err(reply::syntax());
        }
        i += 2;
    }
    Ok(at.op(OpKind::Stream(StreamOp::SetId {
        key: args[1].clone(),
        last,
        entries_added,
        max_deleted,
    })))
}
