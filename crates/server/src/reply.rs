//! Reply helpers: Redis 7's exact error texts, in one place.

use bytes::Bytes;
use rialto_resp::Reply;

/// A command's outcome: `Err` carries an error reply (and drops a transaction's writes).
pub type CmdResult<T = Reply> = Result<T, Reply>;

/// `+OK`.
pub fn ok() -> Reply {
    Reply::simple("OK")
}

/// An error reply from an owned string (the code, e.g. `ERR`, included).
pub fn err_string(text: String) -> Reply {
    Reply::Error(Bytes::from(text))
}

/// `ERR syntax error`.
pub fn syntax() -> Reply {
    Reply::error("ERR syntax error")
}

/// `ERR value is not an integer or out of range`.
pub fn not_integer() -> Reply {
    Reply::error("ERR value is not an integer or out of range")
}

/// `ERR value is not a valid float`.
pub fn not_float() -> Reply {
    Reply::error("ERR value is not a valid float")
}

/// `ERR wrong number of arguments for 'name' command` (name as Redis prints it: lowercase,
/// `parent|sub` for subcommands).
pub fn wrong_arity(name: &str) -> Reply {
    err_string(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// `ERR invalid expire time in 'cmd' command`.
pub fn invalid_expire(cmd: &str) -> Reply {
    err_string(format!("ERR invalid expire time in '{cmd}' command"))
}

/// An engine failure as the client sees it. A write refused because an earlier sync or write
/// failed gets Redis's `MISCONF` class (what Redis answers when it cannot persist), so
/// clients treat it as a server-side persistence problem rather than a bad command.
pub fn engine_error(e: &rialto_engine::Error) -> Reply {
    use rialto_engine::Error as E;
    let text = match e {
        E::ReadOnly(_) | E::Io { .. } => {
            format!("MISCONF Rialto cannot persist writes and refuses them: {e}")
        }
        _ => format!("ERR {e}"),
    };
    // Error lines cannot hold CR or LF.
    err_string(text.replace(['\r', '\n'], " "))
}

/// Parses a Redis integer argument (`string2ll`: optional `-`, no `+`, no spaces, no leading
/// zeros, within i64), as the codec parses lengths.
pub fn parse_i64(arg: &[u8]) -> Option<i64> {
    rialto_resp::parse_redis_int(arg)
}

/// An integer argument or `ERR value is not an integer or out of range`.
pub fn int_arg(arg: &[u8]) -> CmdResult<i64> {
    parse_i64(arg).ok_or_else(not_integer)
}

/// A keyspace failure as the client sees it, in Redis 7's texts.
pub fn keyspace_error(e: &rialto_keyspace::Error) -> Reply {
    use rialto_keyspace::Error as E;
    match e {
        E::NotInteger => not_integer(),
        E::NotFloat => not_float(),
        E::Overflow => Reply::error("ERR increment or decrement would overflow"),
        E::NanOrInfinity => Reply::error("ERR increment would produce NaN or Infinity"),
        E::FloatTooLong => Reply::error("ERR value is too long to format"),
        E::KeyTooLong { len, max } => err_string(format!(
            "ERR key is {len} bytes, longer than Rialto's limit of {max} bytes"
        )),
        E::ValueTooLong => {
            Reply::error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
        }
        E::NoSuchKey => Reply::error("ERR no such key"),
        E::IndexOutOfRange => Reply::error("ERR index out of range"),
        E::StoresPinDatabaseZero => Reply::error(
            "ERR database 0 holds stores: SWAPDB cannot move it, nor can a store be created while it is swapped",
        ),
        E::WrongType => wrong_type(),
        E::HashNotInteger => Reply::error("ERR hash value is not an integer"),
        E::HashNotFloat => Reply::error("ERR hash value is not a float"),
        E::ScoreNaN => Reply::error("ERR resulting score is not a number (NaN)"),
        E::Syntax => syntax(),
        E::WeightNotFloat => Reply::error("ERR weight value is not a float"),
        // Their texts are Redis's, with the values they name.
        E::Geo(g) => clean(format!("ERR {g}")),
        E::SortWeightNotDouble => {
            Reply::error("ERR One or more scores can't be converted into double")
        }
        E::InvalidExpire { command } => invalid_expire(command),
        E::BusyKey => Reply::error("BUSYKEY Target key name already exists."),
        E::NegativeTtl => Reply::error("ERR Invalid TTL value, must be >= 0"),
        E::Payload(rialto_keyspace::PayloadError::VersionOrChecksum) => {
            Reply::error("ERR DUMP payload version or checksum are wrong")
        }
        E::Payload(rialto_keyspace::PayloadError::BadData) => Reply::error("ERR Bad data format"),
        E::Stream(x) => stream_error(x),
        E::Store(s) => store_error(s),
        E::Library(l) => library_error(l),
        E::Engine(e) => engine_error(e),
        E::Hll(h) => hll_error(h),
        E::Corrupt(_) | E::BadOp(_) | E::CorruptLogState => clean(format!("ERR {e}")),
    }
}

/// A refused HyperLogLog, in Redis's words.
pub fn hll_error(e: &rialto_keyspace::hll::HllError) -> Reply {
    use rialto_keyspace::hll::HllError as H;
    match e {
        H::NotHll => Reply::error("WRONGTYPE Key is not a valid HyperLogLog string value."),
        H::Corrupt => Reply::error("INVALIDOBJ Corrupted HLL object detected"),
        H::NoKey => Reply::error("ERR The specified key does not exist"),
        H::NotSparse => Reply::error("ERR HLL encoding is not sparse"),
        H::UnknownSubcommand(name) => clean(format!("ERR Unknown PFDEBUG subcommand '{name}'")),
    }
}

/// A command on a key holding another kind of value.
pub fn wrong_type() -> Reply {
    Reply::error("WRONGTYPE Operation against a key holding the wrong kind of value")
}

/// The invalid stream id error.
pub fn invalid_stream_id() -> Reply {
    Reply::error("ERR Invalid stream ID specified as stream command argument")
}

/// A refused stream command, in Redis's words.
pub fn stream_error(e: &rialto_keyspace::StreamError) -> Reply {
    use rialto_keyspace::{NoGroupForm, StreamError as S};
    match e {
        S::InvalidId => invalid_stream_id(),
        S::IdNotGreater => Reply::error(
            "ERR The ID specified in XADD is equal or smaller than the target stream top item",
        ),
        S::IdZero => Reply::error("ERR The ID specified in XADD must be greater than 0-0"),
        S::Exhausted => Reply::error(
            "ERR The stream has exhausted the last possible ID, unable to add more items",
        ),
        S::TooLarge => Reply::error("ERR Elements are too large to be stored"),
        S::NoGroup { key, group, form } => match form {
            NoGroupForm::ReadGroup => c_format(&[
                b"NOGROUP No such key '",
                key,
                b"' or consumer group '",
                group,
                b"' in XREADGROUP with GROUP option",
            ]),
            NoGroupForm::KeyOrGroup => c_format(&[
                b"NOGROUP No such key '",
                key,
                b"' or consumer group '",
                group,
                b"'",
            ]),
            NoGroupForm::ForKey => c_format(&[
                b"NOGROUP No such consumer group '",
                group,
                b"' for key name '",
                key,
                b"'",
            ]),
        },
        S::GroupExists => Reply::error("BUSYGROUP Consumer Group name already exists"),
        S::GroupNeedsKey => Reply::error(
            "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
        ),
        S::SetIdBelowTop => Reply::error(
            "ERR The ID specified in XSETID is smaller than the target stream top item",
        ),
        S::EntriesAddedBelowLength => Reply::error(
            "ERR The entries_added specified in XSETID is smaller than the target stream length",
        ),
        S::DollarInReadGroup => Reply::error(
            "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
        ),
        S::GreaterInRead => Reply::error(
            "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
        ),
        S::GroupGone => Reply::error(
            "NOGROUP the consumer group this client was blocked on no longer exists",
        ),
        S::KeyGone => Reply::error("UNBLOCKED the stream key no longer exists"),
        S::UnderStore => Reply::error("ERR streams cannot be kept under a store's prefix"),
        S::ClaimInteger(what) => clean(format!("ERR Invalid {what} argument for XCLAIM")),
        S::ClaimOption(opt) => c_format(&[b"ERR Unrecognized XCLAIM option '", opt, b"'"]),
    }
}

/// An error reply made as Redis's `addReplyErrorFormat` makes one from `%s` arguments: each part
/// a C string (it ends at a NUL), the bytes as they are, CR and LF as spaces.
fn c_format(parts: &[&[u8]]) -> Reply {
    let mut out = Vec::new();
    for p in parts {
        let end = p.iter().position(|&c| c == 0).unwrap_or(p.len());
        out.extend(
            p[..end]
                .iter()
                .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
        );
    }
    Reply::Error(bytes::Bytes::from(out))
}

/// A refused function library change, in Redis's words.
pub fn library_error(e: &rialto_keyspace::LibraryError) -> Reply {
    use rialto_keyspace::LibraryError as L;
    match e {
        L::Exists(name) => clean(format!("ERR Library '{name}' already exists")),
        // Redis words it without quotes when a restore finds it.
        L::RestoredExists(name) => clean(format!("ERR Library {name} already exists")),
        L::NotFound => Reply::error("ERR Library not found"),
        L::FunctionExists(f) => clean(format!("ERR Function {f} already exists")),
    }
}

/// A store failure as the client sees it.
pub fn store_error(e: &rialto_keyspace::StoreError) -> Reply {
    match e {
        rialto_keyspace::StoreError::Engine(e) => engine_error(e),
        other => clean(format!("ERR {other}")),
    }
}

/// An error reply from text that may hold CR or LF (error lines cannot).
fn clean(text: String) -> Reply {
    err_string(text.replace(['\r', '\n'], " "))
}

/// The reply of an op's result.
pub fn value(v: rialto_keyspace::Value) -> Reply {
    use rialto_keyspace::Value as V;
    match v {
        V::Ok => ok(),
        V::Null => Reply::Null,
        V::NullArray => Reply::NullArray,
        V::Int(n) => Reply::Integer(n),
        V::Bulk(b) => Reply::Bulk(b),
        V::Members(ms) => Reply::Set(ms.into_iter().map(Reply::Bulk).collect()),
        V::Store(m) => crate::commands::store::describe(&m),
        V::Array(items) => Reply::Array(items.into_iter().map(value).collect()),
        V::Map(pairs) => Reply::Keyed(
            pairs
                .into_iter()
                .map(|(k, v)| (value(k), value(v)))
                .collect(),
        ),
        V::Score(s) => Reply::Double(s.0),
        V::Status(s) => Reply::simple(s),
        V::ScoredPairs(items) => Reply::Array(
            items
                .into_iter()
                .map(|(m, s)| Reply::Array(vec![Reply::Bulk(m), Reply::Double(s.0)]))
                .collect(),
        ),
        V::Scored { items, nested } => {
            if nested {
                Reply::Pairs(
                    items
                        .into_iter()
                        .map(|(m, s)| (Reply::Bulk(m), Reply::Double(s.0)))
                        .collect(),
                )
            } else {
                Reply::Array(
                    items
                        .into_iter()
                        .flat_map(|(m, s)| [Reply::Bulk(m), Reply::Double(s.0)])
                        .collect(),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_as_redis_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b" 1",
            b"1 ",
            b"01",
            b"-0",
            b"9223372036854775808",
            b"1.0",
            b"0x10",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn engine_errors_never_carry_line_breaks() {
        let e = rialto_engine::Error::ReadOnly("sync failed:\r\nEIO".into());
        let Reply::Error(text) = engine_error(&e) else {
            panic!("not an error")
        };
        assert!(text.starts_with(b"MISCONF "));
        assert!(!text.contains(&b'\n') && !text.contains(&b'\r'));
    }
}
