//! ZUNION, ZINTER, ZDIFF numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX]
//! [WITHSCORES], and ZINTERCARD numkeys key [key ...] [LIMIT limit]
//!
//! Redis's `zunionInterDiffGenericCommand`: the key count is checked first, then every input
//! key (WRONGTYPE), then the options. Sets are not yet accepted as inputs.

use bytes::Bytes;
use rialto_keyspace::{Aggregate, Combine, LateError, Score};
use rialto_resp::Reply;

use super::util::{checked, is};
use super::zset_util::{members_reply, parse_score};
use super::{Handler, R};
use crate::command_table::ArgType::{Integer, Key, OneOf, PureToken};
use crate::command_table::{arg, cmd, doc, BeginSearch, CommandSpec, FindKeys, KeySpec};
use crate::reply::{self, CmdResult};

pub const ZUNION: CommandSpec = cmd(
    "zunion",
    -3,
    &["readonly", "movablekeys"],
    &["@read", "@sortedset", "@slow"],
)
.keys(0, 0, 0)
.key_specs(&[KeySpec {
    notes: None,
    flags: &["RO", "access"],
    begin_search: BeginSearch::Index(1),
    find_keys: FindKeys::Keynum {
        keynumidx: 0,
        firstkey: 1,
        keystep: 1,
    },
}])
.docs(
    doc(
        "sorted-set",
        "6.2.0",
        "Combines sorted sets into their union.",
        "O(N) reads for N members of the inputs, plus O(M log(M)) to order the M members returned.",
    )
    .args(&[
        arg("numkeys", Integer),
        arg("key", Key).key(0).multi(),
        arg("weight", Integer).token("WEIGHTS").opt().multi(),
        arg("aggregate", OneOf).token("AGGREGATE").opt().sub(&[
            arg("sum", PureToken).token("SUM"),
            arg("min", PureToken).token("MIN"),
            arg("max", PureToken).token("MAX"),
        ]),
        arg("withscores", PureToken).token("WITHSCORES").opt(),
    ]),
)
.handler(Handler::Read(run_union));

pub const ZINTER: CommandSpec = cmd(
    "zinter",
    -3,
    &["readonly", "movablekeys"],
    &["@read", "@sortedset", "@slow"],
)
.keys(0, 0, 0)
.key_specs(&[KeySpec {
    notes: None,
    flags: &["RO", "access"],
    begin_search: BeginSearch::Index(1),
    find_keys: FindKeys::Keynum {
        keynumidx: 0,
        firstkey: 1,
        keystep: 1,
    },
}])
.docs(
    doc(
        "sorted-set",
        "6.2.0",
        "Combines sorted sets into their intersection.",
        "O(N) reads for N members of the inputs, plus O(M log(M)) to order the M members returned.",
    )
    .args(&[
        arg("numkeys", Integer),
        arg("key", Key).key(0).multi(),
        arg("weight", Integer).token("WEIGHTS").opt().multi(),
        arg("aggregate", OneOf).token("AGGREGATE").opt().sub(&[
            arg("sum", PureToken).token("SUM"),
            arg("min", PureToken).token("MIN"),
            arg("max", PureToken).token("MAX"),
        ]),
        arg("withscores", PureToken).token("WITHSCORES").opt(),
    ]),
)
.handler(Handler::Read(run_inter));

pub const ZDIFF: CommandSpec = cmd(
    "zdiff",
    -3,
    &["readonly", "movablekeys"],
    &["@read", "@sortedset", "@slow"],
)
.keys(0, 0, 0)
.key_specs(&[KeySpec {
    notes: None,
    flags: &["RO", "access"],
    begin_search: BeginSearch::Index(1),
    find_keys: FindKeys::Keynum {
        keynumidx: 0,
        firstkey: 1,
        keystep: 1,
    },
}])
.docs(
    doc(
        "sorted-set",
        "6.2.0",
        "The members of the first sorted set that no other one has.",
        "O(N) reads for N members of the inputs, plus O(M log(M)) to order the M members returned.",
    )
    .args(&[
        arg("numkeys", Integer),
        arg("key", Key).key(0).multi(),
        arg("withscores", PureToken).token("WITHSCORES").opt(),
    ]),
)
.handler(Handler::Read(run_diff));

pub const ZINTERCARD: CommandSpec = cmd(
    "zintercard",
    -3,
    &["readonly", "movablekeys"],
    &["@read", "@sortedset", "@slow"],
)
.keys(0, 0, 0)
.key_specs(&[KeySpec {
    notes: None,
    flags: &["RO", "access"],
    begin_search: BeginSearch::Index(1),
    find_keys: FindKeys::Keynum {
        keynumidx: 0,
        firstkey: 1,
        keystep: 1,
    },
}])
.docs(
    doc(
        "sorted-set",
        "7.0.0",
        "Counts the members every given sorted set has.",
        "O(N) reads for N members of the inputs.",
    )
    .args(&[
        arg("numkeys", Integer),
        arg("key", Key).key(0).multi(),
        arg("limit", Integer).token("LIMIT").opt(),
    ]),
)
.handler(Handler::Read(run_card));

/// An option error Redis reports only after the input keys are looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Late {
    Syntax,
    Weight,
    Limit,
}

impl Late {
    fn reply(self) -> Reply {
        match self {
            Late::Syntax => reply::syntax(),
            Late::Weight => Reply::error("ERR weight value is not a float"),
            Late::Limit => Reply::error("ERR LIMIT can't be negative"),
        }
    }

    /// As a store op carries it (a store has no LIMIT).
    pub fn for_op(self) -> LateError {
        match self {
            Late::Weight => LateError::WeightNotFloat,
            Late::Syntax | Late::Limit => LateError::Syntax,
        }
    }
}

/// A parsed request.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub keys: Vec<Bytes>,
    pub weights: Vec<Score>,
    pub aggregate: Aggregate,
    pub with_scores: bool,
    /// ZINTERCARD's LIMIT (0: none).
    pub limit: u64,
    pub late: Option<Late>,
}

/// Parses from `args[at]` (numkeys) on: `store` refuses WITHSCORES, `card` takes LIMIT and
/// refuses WEIGHTS and AGGREGATE; ZDIFF takes neither of those. `name` is the command's, for
/// the key-count error.
pub fn parse(
    args: &[Bytes],
    at: usize,
    op: Combine,
    store: bool,
    card: bool,
    name: &str,
) -> CmdResult<Request> {
    let n = reply::int_arg(&args[at])?;
    if n < 1 {
        return Err(reply::err_string(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    let first = at + 1;
    if n as u64 > (args.len() - first) as u64 {
        return Err(reply::syntax());
    }
    let n = n as usize;
    let mut req = Request {
        keys: args[first..first + n].to_vec(),
        ..Request::default()
    };
    let mut j = first + n;
    while j < args.len() {
        let left = args.len() - j;
        let a = &args[j];
        if op != Combine::Diff && !card && left > n && is(a, "weights") {
            for w in &args[j + 1..j + 1 + n] {
                match parse_score(w) {
                    Some(v) => req.weights.push(Score(v)),
                    None => {
                        req.late = Some(Late::Weight);
                        return Ok(req);
                    }
                }
            }
            j += 1 + n;
        } else if op != Combine::Diff && !card && left >= 2 && is(a, "aggregate") {
            let v = &args[j + 1];
            req.aggregate = if is(v, "sum") {
                Aggregate::Sum
            } else if is(v, "min") {
                Aggregate::Min
            } else if is(v, "max") {
                Aggregate::Max
            } else {
                req.late = Some(Late::Syntax);
                return Ok(req);
            };
            j += 2;
        } else if !store && !card && is(a, "withscores") {
            req.with_scores = true;
            j += 1;
        } else if card && left >= 2 && is(a, "limit") {
            match reply::parse_i64(&args[j + 1]) {
                Some(l) if l >= 0 => req.limit = l as u64,
                _ => {
                    req.late = Some(Late::Limit);
                    return Ok(req);
                }
            }
            j += 2;
        } else {
            req.late = Some(Late::Syntax);
            return Ok(req);
        }
    }
    Ok(req)
}

fn read(k: &mut R<'_, '_>, args: &[Bytes], op: Combine, card: bool, name: &str) -> CmdResult {
    let req = parse(args, 1, op, false, card, name)?;
    // The option error goes after the inputs' type checks, as in Redis.
    let result = checked(rialto_keyspace::zset_combine(
        k.keys(),
        op,
        &req.keys,
        &req.weights,
        req.aggregate,
        None,
    ));
    let items = match (result, req.late) {
        (Err(e), _) => return Err(e),
        (Ok(_), Some(late)) => return Err(late.reply()),
        (Ok(items), None) => items,
    };
    if card {
        let n = items.len() as u64;
        return Ok(Reply::Integer(
            if req.limit > 0 { n.min(req.limit) } else { n } as i64,
        ));
    }
    Ok(members_reply(items, req.with_scores))
}

pub fn run_union(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    read(k, args, Combine::Union, false, "zunion")
}

pub fn run_inter(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    read(k, args, Combine::Inter, false, "zinter")
}

pub fn run_diff(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    read(k, args, Combine::Diff, false, "zdiff")
}

pub fn run_card(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    read(k, args, Combine::Inter, true, "zintercard")
}
