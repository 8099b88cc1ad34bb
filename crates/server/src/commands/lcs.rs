//! LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN] — the longest common
//! subsequence of two strings, by Redis's dynamic programming (its table, `(n+1) × (m+1)`
//! 32-bit cells, is bounded by `MAX_TABLE_BYTES`), with Redis's walk back through it so that
//! the string and the match ranges come out as Redis gives them.

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::is;
use super::{Handler, R};
use crate::command_table::ArgType::{Integer, Key, PureToken};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};

pub const LCS: CommandSpec = cmd("lcs", -3, &["readonly"], &["@read", "@string", "@slow"])
    .keys(1, 2, 1)
    .key_specs(&[KeySpec::range(1, 1, 1, 0, &["RO", "access"])])
    .docs(
        doc(
            "string",
            "7.0.0",
            "Finds the longest common subsequence of two strings, or its length, or where it matches.",
            "O(N*M), N and M being the lengths of the two strings.",
        )
        .args(&[
            arg("key1", Key).key(0),
            arg("key2", Key).key(0),
            arg("len", PureToken).token("LEN").opt(),
            arg("idx", PureToken).token("IDX").opt(),
            arg("len", Integer).token("MINMATCHLEN").opt(),
            arg("withmatchlen", PureToken).token("WITHMATCHLEN").opt(),
        ]),
    )
    .handler(Handler::Read(run));

/// Largest table LCS builds: Redis's default `proto-max-bulk-len`.
const MAX_TABLE_BYTES: u64 = 512 * 1024 * 1024;

pub fn run(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let mut strings = Vec::with_capacity(2);
    for key in &args[1..3] {
        match k.get(key)? {
            Some(r) if !r.is_string() => {
                return Err(Reply::error(
                    "ERR The specified keys must contain string values",
                ))
            }
            r => strings.push(r.map(|r| r.value).unwrap_or_default()),
        }
    }
    let (mut get_len, mut get_idx, mut with_len, mut min_len) = (false, false, false, 0i64);
    let mut j = 3;
    while j < args.len() {
        let more = j + 1 < args.len();
        if is(&args[j], "idx") {
            get_idx = true;
        } else if is(&args[j], "len") {
            get_len = true;
        } else if is(&args[j], "withmatchlen") {
            with_len = true;
        } else if is(&args[j], "minmatchlen") && more {
            min_len = reply::int_arg(&args[j + 1])?.max(0);
            j += 1;
        } else {
            return Err(reply::syntax());
        }
        j += 1;
    }
    if get_idx && get_len {
        return Err(Reply::error(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    let (a, b) = (&strings[0][..], &strings[1][..]);
    let (n, m) = (a.len(), b.len());
    let cells = (n as u64 + 1) * (m as u64 + 1);
    if cells.saturating_mul(4) > MAX_TABLE_BYTES {
        return Err(Reply::error(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let w = m + 1;
    let mut dp = vec![0u32; cells as usize];
    for i in 1..=n {
        for j in 1..=m {
            dp[i * w + j] = if a[i - 1] == b[j - 1] {
                dp[(i - 1) * w + j - 1] + 1
            } else {
                dp[(i - 1) * w + j].max(dp[i * w + j - 1])
            };
        }
    }
    let total = dp[n * w + m];
    if get_len {
        return Ok(Reply::Integer(i64::from(total)));
    }
    // Back from the end, as Redis walks: the string right to left, and each run of
    // consecutive matches as a range once it ends.
    let mut result = vec![0u8; total as usize];
    let mut idx = total as usize;
    let mut matches = Vec::new();
    let (mut i, mut j) = (n, m);
    let unset = n;
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (unset, 0, 0, 0);
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            if a_start == unset {
                (a_start, a_end, b_start, b_end) = (i - 1, i - 1, j - 1, j - 1);
            } else if a_start == i && b_start == j {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if dp[(i - 1) * w + j] > dp[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if a_start != unset {
                emit = true;
            }
        }
        if emit {
            let len = (a_end - a_start + 1) as i64;
            if min_len == 0 || len >= min_len {
                let mut entry = vec![
                    Reply::Array(vec![
                        Reply::Integer(a_start as i64),
                        Reply::Integer(a_end as i64),
                    ]),
                    Reply::Array(vec![
                        Reply::Integer(b_start as i64),
                        Reply::Integer(b_end as i64),
                    ]),
                ];
                if with_len {
                    entry.push(Reply::Integer(len));
                }
                matches.push(Reply::Array(entry));
            }
            a_start = unset;
        }
    }
    if get_idx {
        return Ok(Reply::Map(vec![
            (Reply::bulk("matches"), Reply::Array(matches)),
            (Reply::bulk("len"), Reply::Integer(i64::from(total))),
        ]));
    }
    Ok(Reply::Bulk(Bytes::from(result)))
}
