//! SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE, SUNSUBSCRIBE, PUBLISH,
//! SPUBLISH and PUBSUB CHANNELS | NUMSUB | NUMPAT | SHARDCHANNELS | SHARDNUMSUB | HELP, on the
//! hub of [`crate::pubsub`]. On a single node the shard commands are the plain ones with
//! tables of their own, as in Redis.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::help;
use crate::command_table::ArgType::{Block, Pattern, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::pubsub::Kind;

const SUB_FLAGS: &[&str] = &["pubsub", "noscript", "loading", "stale"];
const SUB_CATS: &[&str] = &["@pubsub", "@slow"];

pub const SUBSCRIBE: CommandSpec = cmd("subscribe", -2, SUB_FLAGS, SUB_CATS)
    .docs(
        doc(
            "pubsub",
            "2.0.0",
            "Starts receiving the messages published to the channels given.",
            "O(N), N being the number of channels given.",
        )
        .args(&[arg("channel", Str).multi()]),
    )
    .handler(Handler::Conn(subscribe));

pub const UNSUBSCRIBE: CommandSpec = cmd("unsubscribe", -1, SUB_FLAGS, SUB_CATS)
    .docs(
        doc(
            "pubsub",
            "2.0.0",
            "Stops receiving the messages of the channels given, or of every channel.",
            "O(N), N being the number of clients subscribed to the channels.",
        )
        .args(&[arg("channel", Str).opt().multi()]),
    )
    .handler(Handler::Conn(unsubscribe));

pub const PSUBSCRIBE: CommandSpec = cmd("psubscribe", -2, SUB_FLAGS, SUB_CATS)
    .docs(
        doc(
            "pubsub",
            "2.0.0",
            "Starts receiving the messages published to channels matching the glob patterns given.",
            "O(N), N being the number of patterns the client subscribes to.",
        )
        .args(&[arg("pattern", Block)
            .multi()
            .sub(&[arg("pattern", Pattern)])]),
    )
    .handler(Handler::Conn(psubscribe));

pub const PUNSUBSCRIBE: CommandSpec = cmd("punsubscribe", -1, SUB_FLAGS, SUB_CATS)
    .docs(
        doc(
            "pubsub",
            "2.0.0",
            "Stops receiving the messages of the patterns given, or of every pattern.",
            "O(N+M), N the patterns of this client, M the patterns subscribed by all clients.",
        )
        .args(&[arg("pattern", Pattern).opt().multi()]),
    )
    .handler(Handler::Conn(punsubscribe));

pub const SSUBSCRIBE: CommandSpec = cmd("ssubscribe", -2, SUB_FLAGS, SUB_CATS)
    .keys(1, -1, 1)
    .key_specs(&[KeySpec::range(1, -1, 1, 0, &["not_key"])])
    .docs(
        doc(
            "pubsub",
            "7.0.0",
            "Starts receiving the messages published to the shard channels given.",
            "O(N), N being the number of shard channels given.",
        )
        .args(&[arg("shardchannel", Str).multi()]),
    )
    .handler(Handler::Conn(ssubscribe));

pub const SUNSUBSCRIBE: CommandSpec = cmd("sunsubscribe", -1, SUB_FLAGS, SUB_CATS)
    .keys(1, -1, 1)
    .key_specs(&[KeySpec::range(1, -1, 1, 0, &["not_key"])])
    .docs(
        doc(
            "pubsub",
            "7.0.0",
            "Stops receiving the messages of the shard channels given, or of every one.",
            "O(N), N being the number of clients subscribed to the shard channels.",
        )
        .args(&[arg("shardchannel", Str).opt().multi()]),
    )
    .handler(Handler::Conn(sunsubscribe));

pub const PUBLISH: CommandSpec = cmd(
    "publish",
    3,
    &["pubsub", "loading", "stale", "fast"],
    &["@pubsub", "@fast"],
)
.docs(
    doc(
        "pubsub",
        "2.0.0",
        "Sends a message to the subscribers of a channel and of the patterns matching it.",
        "O(N+M), N the subscribers of the channel, M the patterns subscribed by all clients.",
    )
    .args(&[arg("channel", Str), arg("message", Str)]),
)
.handler(Handler::Conn(publish));

pub const SPUBLISH: CommandSpec = cmd(
    "spublish",
    3,
    &["pubsub", "loading", "stale", "fast"],
    &["@pubsub", "@fast"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["not_key"])])
.docs(
    doc(
        "pubsub",
        "7.0.0",
        "Sends a message to the subscribers of a shard channel.",
        "O(N), N being the subscribers of the shard channel.",
    )
    .args(&[arg("shardchannel", Str), arg("message", Str)]),
)
.handler(Handler::Conn(spublish));

const INTROSPECT_FLAGS: &[&str] = &["pubsub", "loading", "stale"];

const PUBSUB_CHANNELS: CommandSpec = cmd("pubsub|channels", -2, INTROSPECT_FLAGS, SUB_CATS)
    .docs(
        doc(
            "pubsub",
            "2.8.0",
            "Lists the channels with at least one subscriber, those matching a pattern if given.",
            "O(N), N being the number of active channels.",
        )
        .args(&[arg("pattern", Pattern).opt()]),
    )
    .handler(Handler::Conn(channels));

const PUBSUB_NUMSUB: CommandSpec = cmd("pubsub|numsub", -2, INTROSPECT_FLAGS, SUB_CATS)
    .docs(
        doc(
            "pubsub",
            "2.8.0",
            "Counts the subscribers of each channel given (patterns not included).",
            "O(N), N being the number of channels given.",
        )
        .args(&[arg("channel", Str).opt().multi()]),
    )
    .handler(Handler::Conn(numsub));

const PUBSUB_NUMPAT: CommandSpec = cmd("pubsub|numpat", 2, INTROSPECT_FLAGS, SUB_CATS)
    .docs(doc(
        "pubsub",
        "2.8.0",
        "Counts the distinct patterns subscribed by all clients.",
        "O(1)",
    ))
    .handler(Handler::Conn(numpat));

const PUBSUB_SHARDCHANNELS: CommandSpec = cmd(
    "pubsub|shardchannels",
    -2,
    INTROSPECT_FLAGS,
    SUB_CATS,
)
.docs(
    doc(
        "pubsub",
        "7.0.0",
        "Lists the shard channels with at least one subscriber, those matching a pattern if given.",
        "O(N), N being the number of active shard channels.",
    )
    .args(&[arg("pattern", Pattern).opt()]),
)
.handler(Handler::Conn(shardchannels));

const PUBSUB_SHARDNUMSUB: CommandSpec = cmd("pubsub|shardnumsub", -2, INTROSPECT_FLAGS, SUB_CATS)
    .docs(
        doc(
            "pubsub",
            "7.0.0",
            "Counts the subscribers of each shard channel given.",
            "O(N), N being the number of shard channels given.",
        )
        .args(&[arg("shardchannel", Str).opt().multi()]),
    )
    .handler(Handler::Conn(shardnumsub));

const PUBSUB_HELP: CommandSpec = cmd("pubsub|help", 2, &["loading", "stale"], &["@slow"])
    .docs(doc(
        "pubsub",
        "6.2.0",
        "Lists the PUBSUB subcommands with a short description of each.",
        "O(1)",
    ))
    .handler(Handler::Conn(pubsub_help));

pub const PUBSUB: CommandSpec = cmd("pubsub", -2, &[], &["@slow"])
    .docs(doc(
        "pubsub",
        "2.8.0",
        "Groups the subcommands that inspect the state of pub/sub.",
        "Varies by subcommand.",
    ))
    .subs(&[
        PUBSUB_CHANNELS,
        PUBSUB_NUMSUB,
        PUBSUB_NUMPAT,
        PUBSUB_SHARDCHANNELS,
        PUBSUB_SHARDNUMSUB,
        PUBSUB_HELP,
    ]);

fn sub(ctx: &mut Ctx<'_>, kind: Kind, names: &[Bytes]) -> Outcome {
    let mb = match &ctx.client.mailbox {
        Some(m) => std::sync::Arc::clone(m),
        None => {
            let m = ctx.shared.hub.mailbox(&ctx.client.handle);
            ctx.client.mailbox = Some(std::sync::Arc::clone(&m));
            m
        }
    };
    Outcome::Many(ctx.shared.hub.subscribe(&mb, kind, names))
}

fn unsub(ctx: &mut Ctx<'_>, kind: Kind, names: &[Bytes]) -> Outcome {
    match &ctx.client.mailbox {
        Some(mb) => Outcome::Many(ctx.shared.hub.unsubscribe(mb, kind, names)),
        // Nothing subscribed: one confirmation per channel named, or one with a nil channel.
        None => {
            let kind_name: &'static [u8] = match kind {
                Kind::Channel => b"unsubscribe",
                Kind::Pattern => b"punsubscribe",
                Kind::Shard => b"sunsubscribe",
            };
            let one = |c: Option<Bytes>| {
                Reply::Push(vec![
                    Reply::Bulk(Bytes::from_static(kind_name)),
                    c.map_or(Reply::Null, Reply::Bulk),
                    Reply::Integer(0),
                ])
            };
            Outcome::Many(if names.is_empty() {
                vec![one(None)]
            } else {
                names.iter().cloned().map(|c| one(Some(c))).collect()
            })
        }
    }
}

fn subscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    sub(ctx, Kind::Channel, &args[1..])
}

fn unsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    unsub(ctx, Kind::Channel, &args[1..])
}

fn psubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    sub(ctx, Kind::Pattern, &args[1..])
}

fn punsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    unsub(ctx, Kind::Pattern, &args[1..])
}

fn ssubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    sub(ctx, Kind::Shard, &args[1..])
}

fn sunsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    unsub(ctx, Kind::Shard, &args[1..])
}

fn publish(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let limit = ctx.shared.config.read().pubsub_limit;
    let n = ctx.shared.hub.publish(&args[1], &args[2], limit);
    Outcome::Reply(Reply::Integer(n as i64))
}

fn spublish(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let limit = ctx.shared.config.read().pubsub_limit;
    let n = ctx.shared.hub.publish_shard(&args[1], &args[2], limit);
    Outcome::Reply(Reply::Integer(n as i64))
}

/// Redis's reply to a subcommand given arguments it does not take (named as the client
/// wrote it).
fn syntax_error(sub: &[u8]) -> Reply {
    crate::reply::err_string(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
        String::from_utf8_lossy(sub)
    ))
}

fn list(names: Vec<Bytes>) -> Reply {
    Reply::Array(names.into_iter().map(Reply::Bulk).collect())
}

fn channels(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if args.len() > 3 {
        return Outcome::Reply(syntax_error(&args[1]));
    }
    Outcome::Reply(list(
        ctx.shared.hub.channels(false, args.get(2).map(|p| &p[..])),
    ))
}

fn shardchannels(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if args.len() > 3 {
        return Outcome::Reply(syntax_error(&args[1]));
    }
    Outcome::Reply(list(
        ctx.shared.hub.channels(true, args.get(2).map(|p| &p[..])),
    ))
}

fn counts(ctx: &Ctx<'_>, shard: bool, names: &[Bytes]) -> Reply {
    let mut out = Vec::with_capacity(names.len() * 2);
    for c in names {
        out.push(Reply::Bulk(c.clone()));
        out.push(Reply::Integer(ctx.shared.hub.numsub(shard, c) as i64));
    }
    Reply::Array(out)
}

fn numsub(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(counts(ctx, false, &args[2..]))
}

fn shardnumsub(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(counts(ctx, true, &args[2..]))
}

fn numpat(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(Reply::Integer(ctx.shared.hub.numpat() as i64))
}

fn pubsub_help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&PUBSUB))
}
