//! RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
//!
//! The options are checked here, as Redis checks them before it looks at the key; the rest
//! (BUSYKEY, the TTL, the payload) in the op, in Redis's order. IDLETIME and FREQ are
//! checked and then ignored: Rialto keeps no access time or frequency.

use bytes::Bytes;
use rialto_keyspace::{Op, OpKind, RestoreOp};
use rialto_resp::Reply;

use super::util::is;
use super::{At, Handler};
use crate::command_table::ArgType::{Integer, Key, PureToken, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const RESTORE: CommandSpec = cmd(
    "restore",
    -4,
    &["write", "denyoom"],
    &["@keyspace", "@write", "@slow", "@dangerous"],
)
.keys(1, 1, 1)
.key_specs(&[KeySpec::single(1, &["OW", "update"])])
.docs(
    doc(
        "generic",
        "2.6.0",
        "Creates a key from the serialized representation of a value.",
        "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size.",
    )
    .history(&[
        ("3.0.0", "Added the `REPLACE` modifier."),
        ("5.0.0", "Added the `ABSTTL` modifier."),
        ("5.0.0", "Added the `IDLETIME` and `FREQ` options."),
    ])
    .args(&[
        arg("key", Key).key(0),
        arg("ttl", Integer),
        arg("serialized-value", Str),
        arg("replace", PureToken).token("REPLACE").opt().since("3.0.0"),
        arg("absttl", PureToken).token("ABSTTL").opt().since("5.0.0"),
        arg("seconds", Integer).token("IDLETIME").opt().since("5.0.0"),
        arg("frequency", Integer).token("FREQ").opt().since("5.0.0"),
    ]),
)
.handler(Handler::Write(run));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let (mut replace, mut absolute) = (false, false);
    let (mut idle, mut freq) = (false, false);
    let mut j = 4;
    while j < args.len() {
        let more = j + 1 < args.len();
        if is(&args[j], "replace") {
            replace = true;
        } else if is(&args[j], "absttl") {
            absolute = true;
        } else if is(&args[j], "idletime") && more && !freq {
            if reply::int_arg(&args[j + 1])? < 0 {
                return Err(Reply::error("ERR Invalid IDLETIME value, must be >= 0"));
            }
            idle = true;
            j += 1;
        } else if is(&args[j], "freq") && more && !idle {
            if !(0..=255).contains(&reply::int_arg(&args[j + 1])?) {
                return Err(Reply::error(
                    "ERR Invalid FREQ value, must be >= 0 and <= 255",
                ));
            }
            freq = true;
            j += 1;
        } else {
            return Err(reply::syntax());
        }
        j += 1;
    }
    Ok(at.op(OpKind::Restore(RestoreOp {
        key: args[1].clone(),
        ttl_ms: reply::int_arg(&args[2]).ok(),
        absolute,
        replace,
        payload: args[3].clone(),
    })))
}
