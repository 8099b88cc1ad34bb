//! MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
//! [AUTH2 username password] [KEYS key ...]
//!
//! Moves keys to another Redis-protocol server: their values are read here as DUMP payloads,
//! sent to the target as `RESTORE key ttl payload [REPLACE]` (after AUTH and SELECT), and
//! every key the target accepted is then deleted here, unless COPY, by one DEL op.
//!
//! Differences from Redis, which blocks the whole server for the transfer:
//! - Nothing waits on the network inside the merger: the keys are watched (in the merger's
//!   order), their values read from the published state, the target talked to off the merger,
//!   and only the final DEL is a write, run as a transaction that checks the watch. Other
//!   clients go on meanwhile. A write another client makes to a migrated key while MIGRATE
//!   runs is never lost: the DEL then does not run, every key stays here as well as on the
//!   target (which got the values as they were read), and MIGRATE replies an error saying
//!   so. Redis's clients (cluster resharding) already expect a key in flight to be
//!   unavailable; a caller that wants the move to succeed keeps writers off the keys meanwhile.
//! - Each call opens its own connection and closes it (Redis caches one per target for 10
//!   seconds, and retries once on a cached connection that broke).
//! - The TTL sent is the time left as of the read (Redis: as of the call).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind};
use rialto_resp::Reply;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::util::is;
use super::{Ctx, Handler, Outcome};
use crate::command_table::ArgType::{Block, Integer, Key, OneOf, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, BeginSearch, CommandSpec, FindKeys, KeyRef, KeySpec};
use crate::reply::{self, CmdResult};
use crate::server::Shared;

const KEY_FLAGS: &[&str] = &["RW", "access", "delete"];

pub const MIGRATE: CommandSpec = cmd(
    "migrate",
    -6,
    &["write", "movablekeys"],
    &["@keyspace", "@write", "@slow", "@dangerous"],
)
.keys(3, 3, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[
    KeySpec::single(3, KEY_FLAGS),
    KeySpec {
        notes: None,
        flags: &["RW", "access", "delete", "incomplete"],
        begin_search: BeginSearch::Keyword {
            keyword: "KEYS",
            startfrom: -2,
        },
        find_keys: FindKeys::Range {
            lastkey: -1,
            keystep: 1,
            limit: 0,
        },
    },
])
.docs(
    doc(
        "generic",
        "2.6.0",
        "Atomically transfers a key from one Redis instance to another.",
        "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
    )
    .history(&[
        ("3.0.0", "Added the `COPY` and `REPLACE` options."),
        ("3.0.6", "Added the `KEYS` option."),
        ("4.0.7", "Added the `AUTH` option."),
        ("6.0.0", "Added the `AUTH2` option."),
    ])
    .args(&[
        arg("host", Str),
        arg("port", Integer),
        arg("key_or_empty_string", OneOf).sub(&[
            arg("key", Key).key(0),
            arg("empty_string", PureToken).token(""),
        ]),
        arg("destination-db", Integer),
        arg("timeout", Integer),
        arg("copy", PureToken).token("COPY").opt().since("3.0.0"),
        arg("replace", PureToken).token("REPLACE").opt().since("3.0.0"),
        arg("authentication", OneOf).opt().sub(&[
            arg("password", Str).token("AUTH").opt().since("4.0.7"),
            arg("username_password", Block)
                .token("AUTH2")
                .opt()
                .since("6.0.0")
                .sub(&[arg("username", Str), arg("password", Str)]),
        ]),
        arg("key", Key)
            .key(1)
            .token("KEYS")
            .opt()
            .multi()
            .since("3.0.6"),
    ]),
)
.getkeys(keys)
.handler(Handler::Conn(run));

/// Redis's `migrateGetKeys`: the key argument, or with KEYS (looked for past the options,
/// skipping AUTH's and AUTH2's arguments) every argument after it, or none when KEYS comes
/// with a non-empty key argument.
fn keys(args: &[Bytes]) -> Vec<KeyRef> {
    let (mut first, mut num) = (3, 1);
    let mut i = 6;
    while i < args.len() {
        let a = &args[i];
        if is(a, "keys") {
            if !args[3].is_empty() {
                return Vec::new();
            }
            first = i + 1;
            num = args.len() - first;
            break;
        }
        if is(a, "auth") {
            i += 1;
        } else if is(a, "auth2") {
            i += 2;
        }
        i += 1;
    }
    (first..first + num)
        .map(|pos| KeyRef {
            pos,
            flags: KEY_FLAGS,
        })
        .collect()
}

/// A request, parsed as Redis parses it.
struct Request {
    host: String,
    port: Option<u16>,
    db: i64,
    timeout: Duration,
    copy: bool,
    replace: bool,
    /// AUTH's or AUTH2's arguments (user, password).
    auth: Option<(Option<Bytes>, Bytes)>,
    keys: Vec<Bytes>,
}

fn parse(args: &[Bytes]) -> CmdResult<Request> {
    let (mut copy, mut replace, mut auth) = (false, false, None);
    let mut keys = vec![args[3].clone()];
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let a = &args[j];
        if is(a, "copy") {
            copy = true;
        } else if is(a, "replace") {
            replace = true;
        } else if is(a, "auth") && more >= 1 {
            auth = Some((None, args[j + 1].clone()));
            j += 1;
        } else if is(a, "auth2") && more >= 2 {
            auth = Some((Some(args[j + 1].clone()), args[j + 2].clone()));
            j += 2;
        } else if is(a, "keys") {
            if !args[3].is_empty() {
                return Err(Reply::error(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            keys = args[j + 1..].to_vec();
            break;
        } else {
            return Err(reply::syntax());
        }
        j += 1;
    }
    let timeout = reply::int_arg(&args[5])?;
    let db = reply::int_arg(&args[4])?;
    let timeout_ms = if timeout <= 0 { 1000 } else { timeout as u64 };
    Ok(Request {
        host: String::from_utf8_lossy(&args[1]).into_owned(),
        port: std::str::from_utf8(&args[2])
            .ok()
            .and_then(|p| p.parse().ok()),
        db,
        timeout: Duration::from_millis(timeout_ms),
        copy,
        replace,
        auth,
        keys,
    })
}

/// One key to send: its name, payload and expiry.
struct Item {
    key: Bytes,
    payload: Bytes,
    expire_at_ms: Option<i64>,
}

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let req = match parse(args) {
        Ok(r) => r,
        Err(e) => return Outcome::Reply(e),
    };
    let shared = Arc::clone(ctx.shared);
    let db = ctx.client.db;
    let port = ctx.client.handle.laddr.port();
    // Watched before they are read, in the merger's order: a write to one after the read
    // keeps the keys here (`delete`).
    let watch = shared.keyspace.new_watch();
    let watched = shared.keyspace.watch(&watch, db, req.keys.clone());
    Outcome::Later(Box::pin(async move {
        if let Err(e) = crate::conn::settle(&shared.keyspace, watched).await {
            return reply::engine_error(&e);
        }
        let now = shared.now_ms();
        let items = match read(&shared, db, now, &req.keys) {
            Ok(items) => items,
            Err(e) => return reply::keyspace_error(&e),
        };
        if items.is_empty() {
            return Reply::Simple(Bytes::from_static(b"NOKEY"));
        }
        let (moved, reply) = transfer(&req, &items, now).await;
        if req.copy || moved.is_empty() {
            return reply;
        }
        match delete(&shared, db, port, moved, watch).await {
            Ok(true) => reply,
            Ok(false) => Reply::error(
                "ERR a key changed while MIGRATE ran: every key was copied to the target and \
                 none deleted here",
            ),
            Err(e) => e,
        }
    }))
}

/// The DUMP payloads and expiries of the keys that exist, read in one state.
fn read(shared: &Shared, db: u8, now: i64, keys: &[Bytes]) -> rialto_keyspace::Result<Vec<Item>> {
    shared.keyspace.read(db, now, |k| {
        let mut items = Vec::new();
        for key in keys {
            if let Some(d) = rialto_keyspace::dump(k, key)? {
                items.push(Item {
                    key: key.clone(),
                    payload: Bytes::from(d.payload),
                    expire_at_ms: d.expire_at_ms,
                });
            }
        }
        Ok(items)
    })
}

/// Why the conversation with the target failed, worded as Redis words it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Io {
    Connecting,
    Writing,
    Reading,
}

impl Io {
    fn reply(self) -> Reply {
        Reply::error(match self {
            Io::Connecting => "IOERR error or timeout connecting to the client",
            Io::Writing => "IOERR error or timeout writing to target instance",
            Io::Reading => "IOERR error or timeout reading to target instance",
        })
    }
}

fn command(out: &mut Vec<u8>, parts: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", parts.len()).as_bytes());
    for p in parts {
        out.extend_from_slice(format!("${}\r\n", p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
}

/// Sends the keys and reads the target's replies: the keys it accepted, and MIGRATE's reply.
async fn transfer(req: &Request, items: &[Item], now: i64) -> (Vec<Bytes>, Reply) {
    let mut out = Vec::new();
    if let Some((user, password)) = &req.auth {
        match user {
            Some(u) => command(&mut out, &[b"AUTH", u, password]),
            None => command(&mut out, &[b"AUTH", password]),
        }
    }
    command(&mut out, &[b"SELECT", req.db.to_string().as_bytes()]);
    let mut sent = Vec::new();
    for it in items {
        let ttl = match it.expire_at_ms {
            None => 0,
            Some(at) if at - now < 0 => continue,
            Some(at) => (at - now).max(1),
        };
        let ttl = ttl.to_string();
        let mut parts: Vec<&[u8]> = vec![b"RESTORE", &it.key, ttl.as_bytes(), &it.payload];
        if req.replace {
            parts.push(b"REPLACE");
        }
        command(&mut out, &parts);
        sent.push(it.key.clone());
    }
    let t = req.timeout;
    let Some(port) = req.port else {
        return (Vec::new(), Io::Connecting.reply());
    };
    // Redis connects without blocking and finds a refused connection only when it writes.
    let stream = match tokio::time::timeout(t, TcpStream::connect((req.host.as_str(), port))).await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return (Vec::new(), Io::Writing.reply())
        }
        _ => return (Vec::new(), Io::Connecting.reply()),
    };
    let mut stream = BufReader::new(stream);
    match tokio::time::timeout(t, stream.get_mut().write_all(&out)).await {
        Ok(Ok(())) => {}
        _ => return (Vec::new(), Io::Writing.reply()),
    }
    let mut line = Vec::new();
    let mut read_line = async |line: &mut Vec<u8>| -> Result<(), Io> {
        line.clear();
        match tokio::time::timeout(t, stream.read_until(b'\n', line)).await {
            Ok(Ok(n)) if n > 0 => {
                while line.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
                    line.pop();
                }
                Ok(())
            }
            _ => Err(Io::Reading),
        }
    };
    // The first error the target replied (AUTH's, then SELECT's, then a RESTORE's) is
    // MIGRATE's reply; a RESTORE it accepted moves its key all the same, as in Redis.
    let mut failed: Option<Vec<u8>> = None;
    let mut setup_failed = false;
    for _ in 0..1 + usize::from(req.auth.is_some()) {
        if let Err(e) = read_line(&mut line).await {
            return (Vec::new(), e.reply());
        }
        if line.first() == Some(&b'-') && failed.is_none() {
            failed = Some(line[1..].to_vec());
            setup_failed = true;
        }
    }
    let mut moved = Vec::new();
    for key in sent {
        if let Err(e) = read_line(&mut line).await {
            return (moved, failed.map_or(e.reply(), target_error));
        }
        if line.first() == Some(&b'-') {
            if failed.is_none() {
                failed = Some(line[1..].to_vec());
            }
        } else if !setup_failed {
            moved.push(key);
        }
    }
    (moved, failed.map_or_else(reply::ok, target_error))
}

fn target_error(text: Vec<u8>) -> Reply {
    reply::err_string(format!(
        "ERR Target instance replied with error: {}",
        String::from_utf8_lossy(&text)
    ))
}

/// Deletes the keys the target accepted, as one op through the write path (the log in
/// cluster mode), unless a watched key changed since it was watched: then nothing is deleted
/// (`false`).
async fn delete(
    shared: &Arc<Shared>,
    db: u8,
    port: u16,
    keys: Vec<Bytes>,
    watch: rialto_keyspace::Watch,
) -> Result<bool, Reply> {
    let op = Op::new(db, shared.now_ms(), OpKind::Del { keys });
    if let Some(c) = shared.cluster.clone() {
        let p = c.partition_of_port(port);
        let payload = crate::cluster::Payload::One(op);
        let submitted = crate::conn::submit_watched(shared, &c, p, &payload, &watch)
            .await
            .map_err(|e| crate::cluster::write_error(&c, &e, None))?;
        let Some(submitted) = submitted else {
            return Ok(false);
        };
        return match c.outcome(submitted).await {
            Ok(((crate::cluster::Applied::One(Err(e)), _), _)) => Err(reply::keyspace_error(&e)),
            Ok(_) => Ok(true),
            Err(e) => Err(crate::cluster::write_error(&c, &e, None)),
        };
    }
    let h = shared
        .keyspace
        .transaction(Some(watch), op.now_ms, move |tx| match tx {
            Some(tx) => tx.apply(&op).map(|_| true),
            None => Ok(false),
        });
    match crate::conn::settle(&shared.keyspace, h).await {
        Ok(Ok(deleted)) => Ok(deleted),
        Ok(Err(e)) => Err(reply::keyspace_error(&e)),
        Err(e) => Err(reply::engine_error(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<Bytes> {
        s.split(' ')
            .map(|a| Bytes::copy_from_slice(if a == "\"\"" { b"" } else { a.as_bytes() }))
            .collect()
    }

    fn positions(s: &str) -> Vec<usize> {
        keys(&args(s)).iter().map(|k| k.pos).collect()
    }

    #[test]
    fn keys_follow_redis_rules() {
        assert_eq!(positions("migrate h 1 k 0 10"), vec![3]);
        assert_eq!(positions("migrate h 1 \"\" 0 10 copy keys a b"), vec![8, 9]);
        // AUTH's password is skipped, even when it reads "keys".
        assert_eq!(positions("migrate h 1 \"\" 0 10 auth keys keys a"), vec![9]);
        assert_eq!(
            positions("migrate h 1 \"\" 0 10 auth2 u keys keys a b"),
            vec![10, 11]
        );
        // KEYS with a key argument: no keys.
        assert_eq!(positions("migrate h 1 k 0 10 keys a"), Vec::<usize>::new());
    }

    #[test]
    fn parse_checks_as_redis() {
        let err = |s: &str| match parse(&args(s)) {
            Err(Reply::Error(e)) => String::from_utf8_lossy(&e).into_owned(),
            _ => String::new(),
        };
        assert_eq!(err("migrate h 1 k 0 10 bogus"), "ERR syntax error");
        assert_eq!(err("migrate h 1 k 0 10 auth"), "ERR syntax error");
        assert!(err("migrate h 1 k 0 10 keys a").starts_with("ERR When using MIGRATE KEYS"));
        assert_eq!(
            err("migrate h 1 k 0 x"),
            "ERR value is not an integer or out of range"
        );
        let r = parse(&args(
            "migrate h 1 \"\" 3 0 copy replace auth2 u p keys a b",
        ))
        .ok()
        .unwrap();
        assert_eq!(
            (r.db, r.timeout, r.copy, r.replace),
            (3, Duration::from_millis(1000), true, true)
        );
        assert_eq!(r.keys.len(), 2);
        assert_eq!(
            r.auth,
            Some((Some(Bytes::from_static(b"u")), Bytes::from_static(b"p")))
        );
    }
}
