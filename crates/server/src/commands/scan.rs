//! SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
//!
//! Keys are ordered here, so a cursor is a position in key order: the server keeps the key to
//! resume from under a numeric id (clients treat cursors as integers). Guarantees as Redis's:
//! a key present for the whole scan is returned at least once (exactly once here); keys added
//! or removed meanwhile may or may not be. Cursor ids are kept for the newest
//! `MAX_CURSORS` scans; an older id is answered with `ERR invalid cursor`.

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::is;
use super::{Ctx, Handler, Outcome};
use crate::command_table::ArgType::{Integer, Pattern, String as Str};
use crate::command_table::{arg, cmd, doc, CommandSpec};
use crate::reply;

pub const SCAN: CommandSpec = cmd("scan", -2, &["readonly"], &["@keyspace", "@read", "@slow"])
    .tips(&["nondeterministic_output", "request_policy:special"])
    .docs(
        doc(
            "generic",
            "2.8.0",
            "Walks the keyspace a batch at a time with a cursor.",
            "O(1) per call; O(N) over a whole iteration back to cursor 0, for N keys.",
        )
        .history(&[("6.0.0", "Option `TYPE`.")])
        .args(&[
            arg("cursor", Integer),
            arg("pattern", Pattern).token("MATCH").opt(),
            arg("count", Integer).token("COUNT").opt(),
            arg("type", Str).token("TYPE").since("6.0.0").opt(),
        ]),
    )
    .handler(Handler::Conn(run));

/// Live cursor ids kept.
const MAX_CURSORS: usize = 65_536;

/// Where unfinished scans resume.
#[derive(Default)]
pub struct Cursors {
    next: u64,
    map: HashMap<u64, (u8, Vec<u8>)>,
    order: VecDeque<u64>,
}

impl Cursors {
    fn take(&mut self, id: u64) -> Option<(u8, Vec<u8>)> {
        self.map.remove(&id)
    }

    fn put(&mut self, db: u8, key: Vec<u8>) -> u64 {
        // Ids never repeat and are never 0 (which means "start" and "done").
        self.next += 1;
        let id = self.next;
        self.map.insert(id, (db, key));
        self.order.push_back(id);
        while self.map.len() > MAX_CURSORS {
            match self.order.pop_front() {
                Some(old) => {
                    self.map.remove(&old);
                }
                None => break,
            }
        }
        if self.order.len() > 2 * MAX_CURSORS {
            let map = &self.map;
            self.order.retain(|id| map.contains_key(id));
        }
        id
    }
}

/// A cursor as Redis parses it (`strtoull`): empty is 0, a leading `-` wraps around.
pub(crate) fn parse_cursor(arg: &[u8]) -> Option<u64> {
    let (neg, digits) = match arg {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, arg),
    };
    if digits.is_empty() {
        return (!neg && arg.is_empty()).then_some(0);
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// The options of the SCAN family, as Redis parses them: MATCH, COUNT (default 10, at least
/// 1) and, for SCAN, TYPE.
pub(crate) struct ScanOptions<'a> {
    pub pattern: Option<&'a Bytes>,
    pub count: usize,
    pub kind: Option<&'a Bytes>,
}

impl ScanOptions<'_> {
    /// Parses `args[from..]`; TYPE only `with_type`.
    pub(crate) fn parse(
        args: &[Bytes],
        from: usize,
        with_type: bool,
    ) -> reply::CmdResult<ScanOptions<'_>> {
        let mut o = ScanOptions {
            pattern: None,
            count: 10,
            kind: None,
        };
        let mut i = from;
        while i < args.len() {
            let Some(v) = args.get(i + 1) else {
                return Err(reply::syntax());
            };
            if is(&args[i], "count") {
                let n = reply::int_arg(v)?;
                if n < 1 {
                    return Err(reply::syntax());
                }
                o.count = n as usize;
            } else if is(&args[i], "match") {
                o.pattern = Some(v);
            } else if with_type && is(&args[i], "type") {
                o.kind = Some(v);
            } else {
                return Err(reply::syntax());
            }
            i += 2;
        }
        Ok(o)
    }

    /// Whether `item` passes MATCH.
    pub(crate) fn matches(&self, item: &[u8]) -> bool {
        match self.pattern {
            None => true,
            Some(p) => &p[..] == b"*" || crate::glob::glob_match(p, item, false),
        }
    }
}

/// The reply of a scan of a missing key: cursor 0, nothing.
pub(crate) fn empty_page() -> Reply {
    Reply::Array(vec![Reply::bulk("0"), Reply::Array(Vec::new())])
}

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::from(scan(ctx, args))
}

fn scan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> reply::CmdResult {
    let cursor = parse_cursor(&args[1]).ok_or_else(|| Reply::error("ERR invalid cursor"))?;
    let o = ScanOptions::parse(args, 2, true)?;
    let (count, kind) = (o.count, o.kind);
    let db = ctx.client.db;
    let from = if cursor == 0 {
        None
    } else {
        match ctx.shared.scan_cursors.lock().take(cursor) {
            Some((d, k)) if d == db => Some(k),
            _ => return Err(Reply::error("ERR invalid cursor")),
        }
    };
    // Bounds the work of one call even with a huge COUNT.
    let budget = count.min(1_000_000);
    let mut seen = 0usize;
    let mut keys = Vec::new();
    let scope = crate::cluster::KeyScope::of(ctx.shared, ctx.client);
    let resume = ctx
        .shared
        .keyspace
        .walk_keys_in(
            scope.partition(),
            db,
            from.as_deref(),
            ctx.shared.now_ms(),
            |k, rec| {
                if kind.is_none_or(|t| is(t, rec.kind.name())) && scope.covers(k) && o.matches(k) {
                    keys.push(Reply::bulk(k));
                }
                seen += 1;
                seen < budget
            },
        )
        .map_err(|e| reply::keyspace_error(&e))?;
    let next = match resume {
        Some(k) => ctx.shared.scan_cursors.lock().put(db, k),
        None => 0,
    };
    Ok(Reply::Array(vec![
        Reply::bulk(next.to_string()),
        Reply::Array(keys),
    ]))
}
