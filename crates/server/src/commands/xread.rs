//! XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
//!
//! A read that may wait: it runs as an op in the merger's order (see [`super::BlockingPop`]),
//! and with BLOCK the transaction that found nothing registers the client, with `$` resolved
//! to the stream's last id then, so that no entry added after it is missed.

use bytes::Bytes;
use rialto_keyspace::{BadStreamId, OpKind, ReadFrom, StreamId, StreamOp};
use rialto_resp::Reply;

use super::stream_util::block_ms;
use super::util::is;
use super::{At, BlockingPop, Handler};
use crate::command_table::ArgType::{Block, Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, BeginSearch, CommandSpec, FindKeys, KeySpec};
use crate::reply::{self, CmdResult};

/// The keys after STREAMS, looked for from `from`: the first half of what follows.
pub const fn streams_keys(from: i32) -> KeySpec {
    KeySpec {
        notes: None,
        flags: &["RO", "access"],
        begin_search: BeginSearch::Keyword {
            keyword: "STREAMS",
            startfrom: from,
        },
        find_keys: FindKeys::Range {
            lastkey: -1,
            keystep: 1,
            limit: 2,
        },
    }
}

pub const XREAD: CommandSpec = cmd(
    "xread",
    -4,
    &["readonly", "blocking", "movablekeys"],
    &["@read", "@stream", "@slow", "@blocking"],
)
.key_specs(&[streams_keys(1)])
.docs(
    doc(
        "stream",
        "5.0.0",
        "Reads entries after given ids from one or more streams, waiting for new ones if asked.",
        "O(N) for N entries returned; a wait costs nothing until a write to a key waited on.",
    )
    .args(&[
        arg("count", Integer).token("COUNT").opt(),
        arg("milliseconds", Integer).token("BLOCK").opt(),
        arg("streams", Block)
            .token("STREAMS")
            .sub(&[arg("key", Key).key(0).multi(), arg("id", Str).multi()]),
    ]),
)
.handler(Handler::Block(run));

/// XREAD's and XREADGROUP's options: count, BLOCK, GROUP, NOACK, and where STREAMS' keys
/// begin, checked as Redis's `xreadCommand` checks them.
pub struct ReadArgs {
    pub count: u64,
    pub block: Option<Option<u64>>,
    pub group: Option<(Bytes, Bytes)>,
    pub noack: bool,
    pub keys: Vec<Bytes>,
    pub ids: Vec<Bytes>,
}

pub fn read_args(args: &[Bytes], group_form: bool) -> CmdResult<ReadArgs> {
    let mut r = ReadArgs {
        count: 0,
        block: None,
        group: None,
        noack: false,
        keys: Vec::new(),
        ids: Vec::new(),
    };
    let mut streams_at = None;
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        let o = &args[i];
        if is(o, "block") && more > 0 {
            i += 1;
            r.block = Some(block_ms(&args[i])?);
        } else if is(o, "count") && more > 0 {
            i += 1;
            r.count = reply::int_arg(&args[i])?.max(0) as u64;
        } else if is(o, "streams") && more > 0 {
            let n = args.len() - (i + 1);
            if !n.is_multiple_of(2) {
                return Err(Reply::error(
                    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                ));
            }
            streams_at = Some(i + 1);
            break;
        } else if is(o, "group") && more >= 2 {
            if !group_form {
                return Err(Reply::error(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.group = Some((args[i + 1].clone(), args[i + 2].clone()));
            i += 2;
        } else if is(o, "noack") {
            if !group_form {
                return Err(Reply::error(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.noack = true;
        } else {
            return Err(reply::syntax());
        }
        i += 1;
    }
    let Some(at) = streams_at else {
        return Err(reply::syntax());
    };
    if group_form && r.group.is_none() {
        return Err(Reply::error("ERR Missing GROUP option for XREADGROUP"));
    }
    let n = (args.len() - at) / 2;
    r.keys = args[at..at + n].to_vec();
    r.ids = args[at + n..].to_vec();
    Ok(r)
}

/// The reply a script gets for BLOCK (the command's name as sent).
pub fn no_block_in_scripts(args: &[Bytes]) -> Reply {
    reply::err_string(format!(
        "ERR {} command is not allowed with BLOCK option from scripts",
        String::from_utf8_lossy(&args[0])
    ))
}

pub fn run(at: At, args: &[Bytes]) -> CmdResult<BlockingPop> {
    let r = read_args(args, false)?;
    let mut streams = Vec::with_capacity(r.keys.len());
    let mut bad = None;
    for (i, (key, id)) in r.keys.iter().zip(&r.ids).enumerate() {
        let from = match &id[..] {
            b"$" => ReadFrom::Last,
            b">" => {
                bad.get_or_insert((i as u64, BadStreamId::Greater));
                ReadFrom::After(StreamId::MIN)
            }
            other => match StreamId::parse(other, 0, true, false) {
                Some((id, _)) => ReadFrom::After(id),
                None => {
                    bad.get_or_insert((i as u64, BadStreamId::Invalid));
                    ReadFrom::After(StreamId::MIN)
                }
            },
        };
        streams.push((key.clone(), from));
    }
    Ok(BlockingPop {
        op: at.op(OpKind::Stream(StreamOp::Read {
            streams,
            count: r.count,
            bad,
        })),
        keys: r.keys,
        timeout_ms: r.block.flatten(),
        timed_out: Reply::NullArray,
        may_wait: r.block.is_some(),
        in_script: r.block.is_some().then(|| no_block_in_scripts(args)),
    })
}
