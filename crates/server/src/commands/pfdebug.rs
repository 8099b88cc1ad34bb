//! PFDEBUG GETREG|DECODE|ENCODING|TODENSE key, and PFSELFTEST.

use bytes::Bytes;
use rialto_keyspace::hll::{self, SelfTestFailure};
use rialto_keyspace::{HllDebug, HllOp, Op, OpKind};
use rialto_resp::Reply;

use super::util::is;
use super::{At, Ctx, Handler, Outcome};
use crate::command_table::ArgType::{Key, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const PFDEBUG: CommandSpec = cmd(
    "pfdebug",
    3,
    &["write", "denyoom", "admin"],
    &["@write", "@hyperloglog", "@admin", "@slow", "@dangerous"],
)
.keys(2, 2, 1)
.key_specs(&[KeySpec::single(2, &["RW", "access"])])
.docs(
    doc(
        "hyperloglog",
        "2.8.9",
        "Shows a HyperLogLog's registers, opcodes or encoding, or makes it dense (for tests).",
        "N/A",
    )
    .syscmd()
    .args(&[arg("subcommand", Str), arg("key", Key).key(0)]),
)
.handler(Handler::Write(run));

pub const PFSELFTEST: CommandSpec = cmd(
    "pfselftest",
    1,
    &["admin"],
    &["@hyperloglog", "@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "hyperloglog",
        "2.8.9",
        "Checks the HyperLogLog registers and estimator on random data (for tests).",
        "N/A",
    )
    .syscmd(),
)
.handler(Handler::Conn(self_test));

pub fn run(at: At, args: &[Bytes]) -> CmdResult<Op> {
    let name = &args[1];
    // Redis looks the key up before it reads the subcommand: an unknown one is refused by
    // the op, after the key's checks.
    let sub = if is(name, "getreg") {
        HllDebug::GetReg
    } else if is(name, "decode") {
        HllDebug::Decode
    } else if is(name, "encoding") {
        HllDebug::Encoding
    } else if is(name, "todense") {
        HllDebug::ToDense
    } else {
        HllDebug::Unknown(name.clone())
    };
    Ok(at.op(OpKind::Hll(HllOp::Debug {
        key: args[2].clone(),
        sub,
    })))
}

/// Runs off the connection's thread: ten million additions take a while.
fn self_test(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    let sparse_max = ctx.shared.config.read().hll_sparse_max_bytes;
    Outcome::Later(Box::pin(async move {
        let job = tokio::task::spawn_blocking(move || self_test_reply(sparse_max));
        job.await
            .unwrap_or_else(|e| reply::err_string(format!("ERR PFSELFTEST failed: {e}")))
    }))
}

/// PFSELFTEST's reply, with `hll-sparse-max-bytes` at `sparse_max` (a script calls it here:
/// the script waits, as in Redis).
pub(crate) fn self_test_reply(sparse_max: usize) -> Reply {
    match hll::self_test(rand::random::<u64>(), sparse_max) {
        Ok(()) => reply::ok(),
        Err(f) => failure(&f),
    }
}

fn failure(f: &SelfTestFailure) -> Reply {
    let text = match f {
        SelfTestFailure::Register {
            index,
            expected,
            got,
        } => format!("TESTFAILED Register {index} should be {expected} but is {got}"),
        SelfTestFailure::NotSparse => "TESTFAILED sparse encoding not used".into(),
        SelfTestFailure::Disagree => "TESTFAILED dense/sparse disagree".into(),
        SelfTestFailure::TooBigError { card, abserr } => {
            format!("TESTFAILED Too big error. card:{card} abserr:{abserr}")
        }
    };
    reply::err_string(format!("ERR {text}"))
}
