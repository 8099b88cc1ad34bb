//! LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::{checked, is};
use super::{Handler, R};
use crate::command_table::ArgType::{Integer, Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const LPOS: CommandSpec = cmd("lpos", -3, &["readonly"], &["@read", "@list", "@slow"])
    .keys(1, 1, 1)
    .key_specs(&[KeySpec::single(1, &["RO", "access"])])
    .docs(
        doc(
            "list",
            "6.0.6",
            "Finds the indexes of elements of a list equal to a value.",
            "O(N) for N elements compared.",
        )
        .args(&[
            arg("key", Key).key(0),
            arg("element", Str),
            arg("rank", Integer).token("RANK").opt(),
            arg("num-matches", Integer).token("COUNT").opt(),
            arg("len", Integer).token("MAXLEN").opt(),
        ]),
    )
    .handler(Handler::Read(run));

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0u64);
    let mut i = 3;
    while i < args.len() {
        let Some(v) = args.get(i + 1) else {
            return Err(reply::syntax());
        };
        let n = reply::parse_i64(v);
        if is(&args[i], "rank") {
            rank = match n {
                None => return Err(reply::not_integer()),
                Some(i64::MIN) => return Err(Reply::error(
                    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
                )),
                Some(0) => return Err(Reply::error(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                )),
                Some(r) => r,
            };
        } else if is(&args[i], "count") {
            count = Some(
                n.filter(|&c| c >= 0)
                    .ok_or_else(|| Reply::error("ERR COUNT can't be negative"))?
                    as u64,
            );
        } else if is(&args[i], "maxlen") {
            maxlen = n
                .filter(|&m| m >= 0)
                .ok_or_else(|| Reply::error("ERR MAXLEN can't be negative"))?
                as u64;
        } else {
            return Err(reply::syntax());
        }
        i += 2;
    }
    let Some(l) = k.list(&args[1])? else {
        return Ok(match count {
            Some(_) => Reply::Array(Vec::new()),
            None => Reply::Null,
        });
    };
    let found = checked(l.positions(k.keys(), &args[2], rank, count.unwrap_or(1), maxlen))?;
    Ok(match count {
        Some(_) => Reply::Array(
            found
                .into_iter()
                .map(|p| Reply::Integer(p as i64))
                .collect(),
        ),
        None => found
            .first()
            .map_or(Reply::Null, |&p| Reply::Integer(p as i64)),
    })
}
