//! HELLO [protover [AUTH username password] [SETNAME name]]

use bytes::Bytes;
use rialto_resp::{Protocol, Reply};

use super::client::set_name;
use super::util::is;
use super::{Ctx, Handler, Outcome};
use crate::command_table::ArgType::{Block, Integer, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply;

pub const HELLO: CommandSpec = cmd(
    "hello",
    -1,
    &[
        "noscript",
        "loading",
        "stale",
        "fast",
        "no_auth",
        "allow_busy",
    ],
    &["@fast", "@connection"],
)
.docs(
    doc(
        "connection",
        "6.0.0",
        "Picks the protocol version; can also authenticate and name the connection.",
        "O(1)",
    )
    .history(&[(
        "6.2.0",
        "`protover` is optional; without it the reply describes the connection.",
    )])
    .args(&[arg("arguments", Block).opt().sub(&[
        arg("protover", Integer),
        arg("username_password", Block)
            .token("AUTH")
            .opt()
            .sub(&[arg("username", Str), arg("password", Str)]),
        arg("clientname", Str).token("SETNAME").opt(),
    ])]),
)
.handler(Handler::Conn(run));

/// The Redis version Rialto's protocol behaviour follows (clients gate features on it).
pub const REDIS_COMPAT_VERSION: &str = "7.0.15";

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let mut proto = None;
    let mut next = 1;
    if let Some(v) = args.get(1) {
        let Some(v) = reply::parse_i64(v) else {
            return Outcome::Reply(Reply::error(
                "ERR Protocol version is not an integer or out of range",
            ));
        };
        match Protocol::from_version(v) {
            Some(p) => proto = Some(p),
            None => return Outcome::Reply(Reply::error("NOPROTO unsupported protocol version")),
        }
        next = 2;
    }
    // Options take effect left to right, as in Redis 7.0: an AUTH or SETNAME before a bad
    // option still applies.
    let mut j = next;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if is(&args[j], "auth") && more >= 2 {
            let (handle, user) = (&ctx.client.handle, Some(&args[j + 1][..]));
            match crate::auth::authenticate(ctx.shared, handle, &args[0], user, &args[j + 2]) {
                Ok(u) => crate::auth::login(ctx.client, u),
                Err(r) => return Outcome::Reply(r),
            }
            j += 2;
        } else if is(&args[j], "setname") && more >= 1 {
            if let Err(r) = set_name(ctx.client, &args[j + 1]) {
                return Outcome::Reply(r);
            }
            j += 1;
        } else {
            return Outcome::Reply(reply::err_string(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&args[j])
            )));
        }
        j += 1;
    }
    if ctx.client.user.is_none() {
        return Outcome::Reply(Reply::error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"));
    }
    if let Some(p) = proto {
        ctx.client.set_protocol(p);
    }
    let (mode, role) = match &ctx.shared.cluster {
        None => ("standalone", "master"),
        Some(c) if c.serves_as_master(ctx.client.handle.laddr.port()) => ("cluster", "master"),
        Some(_) => ("cluster", "replica"),
    };
    Outcome::Reply(Reply::Map(vec![
        (Reply::bulk("server"), Reply::bulk("redis")),
        (Reply::bulk("version"), Reply::bulk(REDIS_COMPAT_VERSION)),
        (
            Reply::bulk("proto"),
            Reply::Integer(i64::from(ctx.client.protocol.version())),
        ),
        (
            Reply::bulk("id"),
            Reply::Integer(ctx.client.handle.id as i64),
        ),
        (Reply::bulk("mode"), Reply::bulk(mode)),
        (Reply::bulk("role"), Reply::bulk(role)),
        (Reply::bulk("modules"), Reply::Array(Vec::new())),
    ]))
}
