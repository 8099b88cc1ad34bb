//! LASTWRITE and WAITAPPLIED — read-your-writes on cluster replicas. LASTWRITE, on the master
//! after a write, gives the connection's last acknowledged write as a token
//! (`partition:offset`, the record's place in the log); WAITAPPLIED on a replica waits until
//! the node has applied that record, so a read sent after it sees the write.

use std::time::{Duration, Instant};

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::ArgType::{Integer, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec};

pub const LASTWRITE: CommandSpec = cmd(
    "lastwrite",
    1,
    &["loading", "stale", "fast"],
    &["@fast", "@connection"],
)
.docs(doc(
    "rialto",
    "0.1.0",
    "Returns a token for this connection's last acknowledged write in cluster mode (its partition and log offset), or null.",
    "O(1)",
))
.handler(Handler::Conn(lastwrite));

pub const WAITAPPLIED: CommandSpec = cmd(
    "waitapplied",
    3,
    &["loading", "stale"],
    &["@slow", "@connection"],
)
.docs(
    doc(
        "rialto",
        "0.1.0",
        "Waits until this node has applied the write a LASTWRITE token names: 1 once it has, 0 if the timeout (milliseconds, 0: do not wait) passed first.",
        "O(1)",
    )
    .args(&[arg("token", Str), arg("timeout", Integer)]),
)
.handler(Handler::Conn(waitapplied));

/// Longest wait WAITAPPLIED accepts: a client that asks for more is told so.
const MAX_WAIT_MS: u64 = 60_000;

fn lastwrite(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if ctx.shared.cluster.is_none() {
        return super::cluster::disabled(ctx, args);
    }
    Outcome::Reply(match ctx.client.last_write {
        Some((p, offset)) => Reply::bulk(format!("{p}:{offset}")),
        None => Reply::Null,
    })
}

fn parse_token(t: &[u8]) -> Option<(u32, u64)> {
    let (p, o) = std::str::from_utf8(t).ok()?.split_once(':')?;
    Some((p.parse().ok()?, o.parse().ok()?))
}

fn waitapplied(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(c) = ctx.shared.cluster.clone() else {
        return super::cluster::disabled(ctx, args);
    };
    let Some((p, offset)) = parse_token(&args[1]).filter(|(p, _)| *p < c.partitions) else {
        return Outcome::Reply(Reply::error("ERR invalid LASTWRITE token"));
    };
    let timeout = match std::str::from_utf8(&args[2])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        Some(ms) if ms <= MAX_WAIT_MS => Duration::from_millis(ms),
        Some(_) => {
            return Outcome::Reply(crate::reply::err_string(format!(
                "ERR timeout is above the limit of {MAX_WAIT_MS} ms"
            )))
        }
        None => {
            return Outcome::Reply(Reply::error(
                "ERR timeout is not an integer or out of range",
            ))
        }
    };
    if c.node.applied_past(p, offset) {
        return Outcome::Reply(Reply::Integer(1));
    }
    Outcome::Later(Box::pin(async move {
        let deadline = Instant::now() + timeout;
        loop {
            if c.node.applied_past(p, offset) {
                return Reply::Integer(1);
            }
            if Instant::now() >= deadline {
                return Reply::Integer(0);
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::parse_token;

    #[test]
    fn tokens_parse_strictly() {
        assert_eq!(parse_token(b"2:1234"), Some((2, 1234)));
        assert_eq!(parse_token(b"2:"), None);
        assert_eq!(parse_token(b"x:1"), None);
        assert_eq!(parse_token(b"1234"), None);
        assert_eq!(parse_token(b"-1:5"), None);
    }
}
