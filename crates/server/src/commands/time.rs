//! TIME — Unix seconds and microseconds, as two bulk strings.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Outcome};

pub fn run(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Outcome::Reply(Reply::Array(vec![
        Reply::bulk(now.as_secs().to_string()),
        Reply::bulk(now.subsec_micros().to_string()),
    ]))
}
