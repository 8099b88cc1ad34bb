//! DUMP key — the value in Redis's DUMP payload format (RDB version 10, as Redis 7.0), which
//! RESTORE here or on a redis-server takes back. The encodings written are the keyspace's
//! (`rialto_keyspace::dump`): plain RDB types that Redis loads into its compact encodings.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Handler, R};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const DUMP: CommandSpec = cmd(
    "dump",
    2,
    &["readonly"],
    &["@keyspace", "@read", "@slow"],
)
.keys(1, 1, 1)
.tips(&["nondeterministic_output"])
.key_specs(&[KeySpec::single(1, &["RO", "access"])])
.docs(
    doc(
        "generic",
        "2.6.0",
        "Returns a serialized representation of the value stored at a key.",
        "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size.",
    )
    .args(&[arg("key", Key).key(0)]),
)
.handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    match rialto_keyspace::dump(k.keys(), &args[1]) {
        Ok(Some(d)) => Ok(Reply::Bulk(Bytes::from(d.payload))),
        Ok(None) => Ok(Reply::Null),
        Err(e) => Err(reply::keyspace_error(&e)),
    }
}
