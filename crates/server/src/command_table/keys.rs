//! Finding a request's keys from its command's key specs, as Redis 7.0 does.

use bytes::Bytes;

use super::{BeginSearch, CommandSpec, FindKeys, KeyRef};

/// The indexes into `args` (`args[0]` being the command name) of every key of the request, in
/// key-spec order, as Redis 7.0 finds them for ACL checks, `COMMAND GETKEYS` and cluster
/// routing. Arguments that do not fit a key spec yield no keys at all, as in Redis.
#[cfg(test)]
pub fn key_positions(spec: &CommandSpec, args: &[Bytes]) -> Vec<usize> {
    keys_with_flags(spec, args).iter().map(|k| k.pos).collect()
}

/// The keys of a request with each key's flags, as `COMMAND GETKEYSANDFLAGS` reports them: from the
/// command's own key finder if it has one, else from its key specs.
pub fn keys_with_flags(spec: &CommandSpec, args: &[Bytes]) -> Vec<KeyRef> {
    match spec.getkeys {
        Some(getkeys) => getkeys(args),
        None => spec_keys(spec, args),
    }
}

/// The keys the key specs alone locate, with the specs' flags.
pub fn spec_keys(spec: &CommandSpec, args: &[Bytes]) -> Vec<KeyRef> {
    let mut out = Vec::new();
    if !find_keys(spec, args, |pos, flags| out.push(KeyRef { pos, flags })) {
        out.clear();
    }
    out
}

/// Calls `found` for every key the specs locate; false if a spec does not fit the arguments,
/// in which case Redis reports no keys.
fn find_keys(
    spec: &CommandSpec,
    args: &[Bytes],
    mut found: impl FnMut(usize, &'static [&'static str]),
) -> bool {
    // Signed arithmetic as in Redis: relative positions may be negative.
    let argc = i64::try_from(args.len()).unwrap_or(i64::MAX);
    for ks in spec.key_specs {
        let first = match ks.begin_search {
            BeginSearch::Index(i) => i64::from(i),
            BeginSearch::Keyword { keyword, startfrom } => {
                match keyword_start(args, argc, keyword, i64::from(startfrom)) {
                    Some(first) => first,
                    // An absent keyword means no keys from this spec, not an error.
                    None => continue,
                }
            }
            BeginSearch::Unknown => return false,
        };
        let (first, last, step) = match ks.find_keys {
            FindKeys::Range {
                lastkey,
                keystep,
                limit,
            } => {
                let (lastkey, limit) = (i64::from(lastkey), i64::from(limit));
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (first, last, i64::from(keystep))
            }
            FindKeys::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                let Some(numkeys) = usize::try_from(first + i64::from(keynumidx))
                    .ok()
                    .and_then(|i| args.get(i))
                    .and_then(|a| parse_count(a))
                else {
                    return false;
                };
                if numkeys == 0 {
                    continue;
                }
                let (first, step) = (first + i64::from(firstkey), i64::from(keystep));
                // Saturating: a huge count from the client must fail the bounds check below,
                // not overflow.
                let last = (numkeys - 1).saturating_mul(step).saturating_add(first);
                (first, last, step)
            }
            FindKeys::Unknown => return false,
        };
        if step <= 0 || first < 1 || first >= argc || last >= argc || last < first {
            return false;
        }
        let mut i = first;
        while i <= last {
            // In range by the check above.
            found(i as usize, ks.flags);
            i += step;
        }
    }
    true
}

/// The index just after the first `keyword` found searching from `startfrom`.
fn keyword_start(args: &[Bytes], argc: i64, keyword: &str, startfrom: i64) -> Option<i64> {
    // Forwards up to the second-to-last argument, or backwards down to index 2, as Redis does
    // (the end index itself is never examined).
    let (start, end) = if startfrom > 0 {
        (startfrom, argc - 1)
    } else {
        (argc + startfrom, 1)
    };
    let dir = if start <= end { 1 } else { -1 };
    let mut i = start;
    while i != end {
        let arg = usize::try_from(i)
            .ok()
            .filter(|&i| i >= 1)
            .and_then(|i| args.get(i))?;
        if arg.eq_ignore_ascii_case(keyword.as_bytes()) {
            return Some(i + 1);
        }
        i += dir;
    }
    None
}

/// A non-negative decimal count, as a keynum argument must be.
fn parse_count(arg: &[u8]) -> Option<i64> {
    if arg.first() == Some(&b'+') {
        return None;
    }
    std::str::from_utf8(arg)
        .ok()?
        .parse::<i64>()
        .ok()
        .filter(|&n| n >= 0)
}
