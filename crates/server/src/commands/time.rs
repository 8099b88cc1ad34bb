//! TIME — Unix seconds and microseconds, as two bulk strings.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::{cmd, doc, CommandSpec};

pub const TIME: CommandSpec = cmd("time", 1, &["loading", "stale", "fast"], &["@fast"])
    .tips(&["nondeterministic_output"])
    .docs(doc(
        "server",
        "2.6.0",
        "Returns the server clock as Unix seconds and microseconds.",
        "O(1)",
    ))
    .handler(Handler::Conn(run));

pub fn run(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Outcome::Reply(Reply::Array(vec![
        Reply::bulk(now.as_secs().to_string()),
        Reply::bulk(now.subsec_micros().to_string()),
    ]))
}
