//! DEBUG — Redis 7.0's subcommands that mean something for Rialto: HELP, SLEEP,
//! SET-ACTIVE-EXPIRE, OBJECT, PROTOCOL, LOG, CHANGE-REPL-ID, DIGEST, DIGEST-VALUE,
//! STRINGMATCH-TEST, REPLYBUFFER, QUICKLIST-PACKED-THRESHOLD (accepted; it changes nothing).
//! Every other one (RELOAD, JMAP, POPULATE, SEGFAULT...) gets
//! Redis's unknown-subcommand error. Who may run DEBUG at all is `enable-debug-command`,
//! checked by the connection before admission, where Redis checks it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use rialto_resp::{Protocol, Reply};

use super::util::is;
use super::{Ctx, Handler, Outcome, R};
use crate::command_table::{cmd, doc, CommandSpec};
use crate::reply;

pub const DEBUG: CommandSpec = cmd(
    "debug",
    -2,
    &["admin", "noscript", "loading", "stale"],
    &["@admin", "@slow", "@dangerous"],
)
.docs(
    doc(
        "server",
        "1.0.0",
        "Groups the commands that inspect and test the server.",
        "Depends on subcommand.",
    )
    .syscmd(),
)
// No subcommands in the table, as in Redis: the handler reads `args[1]`.
.handler(Handler::Conn(run));

/// DEBUG HELP: Redis's texts, for the subcommands Rialto has.
const HELP: &[&str] = &[
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the stringmatchlen() function.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    "    In case NEVER is provided the last observed peak will never be reset",
    "    In case RESET is provided the peak reset time will be restored to the default value",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the reply buffer resize cron job",
    "HELP",
    "    Prints this help.",
];

/// The longest DEBUG SLEEP honoured (a larger one sleeps this long): a year.
const MAX_SLEEP: Duration = Duration::from_secs(365 * 24 * 3600);

fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    let n = args.len();
    if is(sub, "help") && n == 2 {
        return Outcome::Reply(Reply::Array(
            HELP.iter().map(|l| Reply::simple(l)).collect(),
        ));
    }
    if is(sub, "sleep") && n == 3 {
        // Only this connection waits: other clients and the engine go on.
        let pause = sleep_time(&args[2]);
        return Outcome::Later(Box::pin(async move {
            tokio::time::sleep(pause).await;
            reply::ok()
        }));
    }
    if is(sub, "set-disable-deny-scripts") && n == 3 {
        // Scripts may call commands flagged `noscript` (what Rialto can run inside one).
        let on = atoi(&args[2]) != 0;
        ctx.shared
            .deny_scripts_disabled
            .store(on, Ordering::Relaxed);
        return Outcome::Reply(reply::ok());
    }
    if is(sub, "set-active-expire") && n == 3 {
        let on = atoi(&args[2]) != 0;
        ctx.shared.active_expire.store(on, Ordering::Relaxed);
        return Outcome::Reply(reply::ok());
    }
    if is(sub, "object") && n == 3 {
        return Outcome::Reply(object(ctx, &args[2]));
    }
    if is(sub, "protocol") && n == 3 {
        return protocol(ctx.client.protocol, &args[2]);
    }
    if is(sub, "log") && n == 3 {
        // Line breaks escaped: a client must not be able to forge log lines.
        let text = String::from_utf8_lossy(&args[2])
            .replace('\r', "\\r")
            .replace('\n', "\\n");
        tracing::warn!("DEBUG LOG: {text}");
        return Outcome::Reply(reply::ok());
    }
    if is(sub, "change-repl-id") && n == 2 {
        // No replica follows the id; INFO replication shows the new one.
        *ctx.shared.repl_id.lock() = crate::server::random_id();
        return Outcome::Reply(reply::ok());
    }
    if is(sub, "digest") && n == 2 {
        return digest(ctx);
    }
    if is(sub, "digest-value") {
        return Outcome::Reply(digest_value(ctx, &args[2..]));
    }
    if is(sub, "stringmatch-test") && n == 2 {
        return stringmatch_test();
    }
    if is(sub, "quicklist-packed-threshold") && n == 3 {
        // Redis's size above which a list element gets a quicklist node of its own. Rialto's
        // lists have no such nodes (an element is a key of a large list whatever its size):
        // the value is checked as Redis checks it and changes nothing.
        let ok = std::str::from_utf8(&args[2])
            .ok()
            .and_then(|v| crate::config::parse_size(v).ok())
            .is_some_and(|b| b <= u32::MAX as usize);
        return Outcome::Reply(if ok {
            reply::ok()
        } else {
            Reply::error("ERR argument must be a memory value bigger than 1 and smaller than 4gb")
        });
    }
    if is(sub, "replybuffer") && n == 4 {
        if let Some(r) = replybuffer(&args[2], &args[3]) {
            return Outcome::Reply(r);
        }
    }
    Outcome::Reply(unknown(sub))
}

/// Redis's error for a subcommand it does not have, or with the wrong number of arguments.
fn unknown(sub: &[u8]) -> Reply {
    let shown = &sub[..sub.len().min(128)];
    reply::err_string(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
        String::from_utf8_lossy(shown)
    ))
}

/// The seconds of DEBUG SLEEP read as C's `strtod` reads them: the longest number at the
/// start, 0 when there is none; negative or not a number sleeps nothing.
pub(crate) fn sleep_time(arg: &[u8]) -> Duration {
    // A number is short: look at the first bytes only, so a huge argument costs nothing.
    let head = arg.trim_ascii_start();
    let head = &head[..head.len().min(64)];
    let text = String::from_utf8_lossy(head);
    let secs = (1..=text.len())
        .rev()
        .filter(|&i| text.is_char_boundary(i))
        .find_map(|i| text[..i].parse::<f64>().ok())
        .unwrap_or(0.0);
    if !secs.is_finite() || secs <= 0.0 {
        return if secs.is_infinite() && secs > 0.0 {
            MAX_SLEEP
        } else {
            Duration::ZERO
        };
    }
    Duration::try_from_secs_f64(secs).map_or(MAX_SLEEP, |d| d.min(MAX_SLEEP))
}

/// C's `atoi`: optional sign and the digits at the start, 0 without any.
fn atoi(arg: &[u8]) -> i64 {
    let s = arg.trim_ascii_start();
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: i64 = 0;
    for &c in digits.iter().take_while(|c| c.is_ascii_digit()) {
        v = v.saturating_mul(10).saturating_add(i64::from(c - b'0'));
    }
    if neg {
        -v
    } else {
        v
    }
}

/// DEBUG REPLYBUFFER: accepted as Redis accepts it; Rialto's reply buffers have no peak
/// tracking or resizing job, so nothing changes. `None`: an unknown form.
fn replybuffer(what: &[u8], value: &[u8]) -> Option<Reply> {
    if is(what, "peak-reset-time") {
        if is(value, "never") || is(value, "reset") || reply::parse_i64(value).is_some() {
            return Some(reply::ok());
        }
        return Some(reply::not_integer());
    }
    if is(what, "resizing") {
        return Some(reply::ok());
    }
    None
}

/// DEBUG OBJECT: Redis's line for a value, a string's encoding chosen by Redis's rules for a
/// value as SET stores it (Rialto keeps no encoding: a value APPEND grew is `raw` in Redis);
/// a collection's serialized length is its record's payload.
fn object(ctx: &Ctx<'_>, key: &Bytes) -> Reply {
    let now = ctx.shared.now_ms();
    // As Redis's raw lookup: a key that expired but is still stored is found.
    let found = ctx.shared.keyspace.read(ctx.client.db, now, |k| {
        R::new(k)
            .keys()
            .get_including_expired(key)
            .map_err(|e| reply::keyspace_error(&e))
    });
    let record = match found {
        Ok(Some(r)) => r,
        Ok(None) => return Reply::error("ERR no such key"),
        Err(e) => return e,
    };
    let lru = (now / 1000) & ((1 << 24) - 1);
    let line =
        format!(
        "Value at:{:#x} refcount:{} encoding:{} serializedlength:{} lru:{lru} lru_seconds_idle:0",
        address(key),
        if record.is_string() { refcount(&record.value) } else { 1 },
        super::object::encoding_of(&record),
        serialized_len(&record.value),
    );
    Reply::Simple(line.into())
}

/// A stable stand-in for the value's address, as a pointer prints.
fn address(key: &[u8]) -> u64 {
    // FNV-1a, kept in a user-space-looking range.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    0x7f00_0000_0000 | (h & 0x00ff_ffff_fff0)
}

/// The integer a value is stored as by Redis (`string2l`, at most 20 bytes), if any.
fn as_int(v: &[u8]) -> Option<i64> {
    if v.is_empty() || v.len() > 20 {
        return None;
    }
    let digits = v.strip_prefix(b"-").unwrap_or(v);
    let canonical = !digits.is_empty()
        && digits.iter().all(u8::is_ascii_digit)
        && (digits == b"0" || digits[0] != b'0')
        && v != b"-0";
    if !canonical {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// Redis's encoding of a string value: `int`, `embstr` up to 44 bytes, `raw` beyond.
pub(super) fn encoding(v: &[u8]) -> &'static str {
    if as_int(v).is_some() {
        "int"
    } else if v.len() <= 44 {
        "embstr"
    } else {
        "raw"
    }
}

/// Redis shares the integers 0 to 9999 (refcount `INT_MAX`).
pub(super) fn refcount(v: &[u8]) -> i64 {
    match as_int(v) {
        Some(n) if (0..10_000).contains(&n) => i64::from(i32::MAX),
        _ => 1,
    }
}

/// The value's size in an RDB file without compression: an integer that fits 32 bits as 2, 3
/// or 5 bytes, anything else as its length's encoding and its bytes. (Redis compresses
/// strings over 20 bytes with LZF, which Rialto does not emulate.)
fn serialized_len(v: &[u8]) -> usize {
    if v.len() <= 11 {
        if let Some(n) = as_int(v) {
            if i8::try_from(n).is_ok() {
                return 2;
            }
            if i16::try_from(n).is_ok() {
                return 3;
            }
            if i32::try_from(n).is_ok() {
                return 5;
            }
        }
    }
    let len = v.len();
    let header = if len < 64 {
        1
    } else if len < 16_384 {
        2
    } else if u32::try_from(len).is_ok() {
        5
    } else {
        9
    };
    header + len
}

/// DEBUG PROTOCOL: Redis's test values, in the connection's protocol.
pub(crate) fn protocol(proto: Protocol, kind: &[u8]) -> Outcome {
    let ints = || (0..3).map(Reply::Integer).collect::<Vec<_>>();
    let r = if is(kind, "string") {
        Reply::bulk("Hello World")
    } else if is(kind, "integer") {
        Reply::Integer(12345)
    } else if is(kind, "double") {
        // Redis's test value, not π.
        #[allow(clippy::approx_constant)]
        Reply::Double(3.141)
    } else if is(kind, "bignum") {
        Reply::BigNumber(Bytes::from_static(b"1234567999999999999999999999999999999"))
    } else if is(kind, "null") {
        Reply::Null
    } else if is(kind, "array") {
        Reply::Array(ints())
    } else if is(kind, "set") {
        Reply::Set(ints())
    } else if is(kind, "map") {
        Reply::Map(
            (0..3)
                .map(|i| (Reply::Integer(i), Reply::Boolean(i == 1)))
                .collect(),
        )
    } else if is(kind, "attrib") {
        Reply::Attribute {
            attrs: vec![(
                Reply::bulk("key-popularity"),
                Reply::Array(vec![Reply::bulk("key:123"), Reply::Integer(90)]),
            )],
            reply: Box::new(Reply::bulk("Some real reply following the attribute")),
        }
    } else if is(kind, "push") {
        if proto == Protocol::Resp2 {
            return Outcome::Reply(Reply::error("ERR RESP2 is not supported by this command"));
        }
        return Outcome::Many(vec![
            Reply::Push(vec![Reply::bulk("server-cpu-usage"), Reply::Integer(42)]),
            Reply::bulk("Some real reply following the push reply"),
        ]);
    } else if is(kind, "verbatim") {
        Reply::Verbatim {
            format: *b"txt",
            text: Bytes::from_static(b"This is a verbatim\nstring"),
        }
    } else if is(kind, "true") {
        Reply::Boolean(true)
    } else if is(kind, "false") {
        Reply::Boolean(false)
    } else {
        Reply::error("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
    };
    Outcome::Reply(r)
}

/// Redis's digest helpers (`debug.c`): `xor` folds SHA-1 of the bytes into `digest`; `mix`
/// does that and then replaces `digest` by its own SHA-1, so order matters.
fn xor_digest(digest: &mut [u8; 20], bytes: &[u8]) {
    let hash = sha1_smol::Sha1::from(bytes).digest().bytes();
    for (d, h) in digest.iter_mut().zip(hash) {
        *d ^= h;
    }
}

fn mix_digest(digest: &mut [u8; 20], bytes: &[u8]) {
    xor_digest(digest, bytes);
    *digest = sha1_smol::Sha1::from(&digest[..]).digest().bytes();
}

/// Redis's digest of a string value (`xorObjectDigest`): its type (0, string), its bytes, and
/// whether it expires (not when).
/// Redis's digest of a value: its type's number, then a string's bytes, or each hash
/// field's (sorted-set member's) digest of the field and its value (score) xored in (order
/// does not matter); an expiry marks it. `fields` are the collection's (empty for a string).
fn value_digest(
    digest: &mut [u8; 20],
    record: &rialto_keyspace::Record,
    fields: &[(Bytes, Bytes)],
) {
    use rialto_keyspace::Kind;
    // Redis's type numbers (OBJ_STRING, OBJ_LIST, OBJ_SET, OBJ_ZSET, OBJ_HASH).
    let type_number: u32 = match record.kind {
        Kind::String => 0,
        Kind::List => 1,
        Kind::Set => 2,
        Kind::ZSet => 3,
        Kind::Hash => 4,
        Kind::Stream => 6,
    };
    mix_digest(digest, &type_number.to_be_bytes());
    if record.kind == Kind::String {
        mix_digest(digest, &record.value);
    }
    if record.kind == Kind::Stream {
        // Each entry's `ms.seq`, then its fields and values, in order (groups are not mixed).
        for (e, _) in fields {
            mix_digest(digest, e);
        }
        return;
    }
    if record.kind == Kind::List {
        // A list's elements, in order, each mixed into the value's digest itself.
        for (e, _) in fields {
            mix_digest(digest, e);
        }
        if record.expire_at_ms.is_some() {
            xor_digest(digest, b"!!expire!!");
        }
        return;
    }
    if record.kind == Kind::Set {
        // A set's members (paired with nothing): each one's digest xored in.
        for (m, _) in fields {
            xor_digest(digest, m);
        }
        if record.expire_at_ms.is_some() {
            xor_digest(digest, b"!!expire!!");
        }
        return;
    }
    for (f, v) in fields {
        let mut ele = [0u8; 20];
        mix_digest(&mut ele, f);
        mix_digest(&mut ele, v);
        xor_digest(digest, &ele);
    }
    if record.expire_at_ms.is_some() {
        xor_digest(digest, b"!!expire!!");
    }
}

/// What a collection's digest mixes in for each member: a hash's fields and values, a set's
/// members (paired with nothing), a sorted set's members and their scores as Redis prints
/// them (`%.17g`); none for a string.
fn members_of(
    shared: &crate::server::Shared,
    db: u8,
    now: i64,
    key: &[u8],
    record: &rialto_keyspace::Record,
) -> Result<Vec<(Bytes, Bytes)>, Reply> {
    use rialto_keyspace::Kind;
    if record.kind == Kind::Set {
        return shared.keyspace.read(db, now, |k| {
            let mut r = R::new(k);
            match r.set(key)? {
                Some(s) => crate::commands::util::checked(s.members(r.keys()))
                    .map(|ms| ms.into_iter().map(|m| (m, Bytes::new())).collect()),
                None => Ok(Vec::new()),
            }
        });
    }
    if record.kind == Kind::List {
        return shared.keyspace.read(db, now, |k| {
            let mut r = R::new(k);
            match r.list(key)? {
                Some(l) => crate::commands::util::checked(l.all(r.keys()))
                    .map(|es| es.into_iter().map(|e| (e, Bytes::new())).collect()),
                None => Ok(Vec::new()),
            }
        });
    }
    if record.kind == Kind::Stream {
        return shared.keyspace.read(db, now, |k| {
            let Some(s) = crate::commands::util::checked(rialto_keyspace::Stream::load(k, key))?
            else {
                return Ok(Vec::new());
            };
            let entries = crate::commands::util::checked(s.range(
                k,
                rialto_keyspace::StreamId::MIN,
                rialto_keyspace::StreamId::MAX,
                0,
                false,
            ))?;
            let mut out = Vec::new();
            for e in entries {
                out.push((
                    Bytes::from(format!("{}.{}", e.id.ms, e.id.seq)),
                    Bytes::new(),
                ));
                out.extend(e.fields.into_iter().map(|f| (f, Bytes::new())));
            }
            Ok(out)
        });
    }
    if !matches!(record.kind, Kind::Hash | Kind::ZSet) {
        return Ok(Vec::new());
    }
    shared.keyspace.read(db, now, |k| {
        let mut r = R::new(k);
        if record.kind == Kind::ZSet {
            return match r.zset(key)? {
                Some(z) => Ok(crate::commands::util::checked(z.entries(r.keys()))?
                    .into_iter()
                    .map(|(m, s)| (m, super::zset_util::score_text(s)))
                    .collect()),
                None => Ok(Vec::new()),
            };
        }
        match r.hash(key)? {
            Some(h) => crate::commands::util::checked(h.entries(r.keys())),
            None => Ok(Vec::new()),
        }
    })
}

fn hex(digest: &[u8; 20]) -> Reply {
    let mut s = String::with_capacity(40);
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    Reply::Simple(s.into())
}

/// DEBUG DIGEST: Redis's algorithm over every database (for strings, the only type, the same
/// value Redis computes for the same data). Walks everything, off the connection thread.
fn digest(ctx: &Ctx<'_>) -> Outcome {
    let shared = std::sync::Arc::clone(ctx.shared);
    Outcome::Later(Box::pin(async move {
        let job = tokio::task::spawn_blocking(move || {
            let now = shared.now_ms();
            let dbs = shared.config.read().databases.min(256);
            let mut total = [0u8; 20];
            for db in 0..dbs {
                let mut first = true;
                let mut failed = None;
                let walked = shared.keyspace.walk_keys(db as u8, None, now, |k, rec| {
                    let fields = match members_of(&shared, db as u8, now, k, rec) {
                        Ok(f) => f,
                        Err(e) => {
                            failed = Some(e);
                            return false;
                        }
                    };
                    if first {
                        // The database's number, so the same data elsewhere differs.
                        mix_digest(&mut total, &(db as u32).to_be_bytes());
                        first = false;
                    }
                    let mut d = [0u8; 20];
                    mix_digest(&mut d, k);
                    value_digest(&mut d, rec, &fields);
                    xor_digest(&mut total, &d);
                    true
                });
                if let Err(e) = walked {
                    return reply::keyspace_error(&e);
                }
                if let Some(e) = failed {
                    return e;
                }
            }
            hex(&total)
        });
        job.await
            .unwrap_or_else(|e| reply::err_string(format!("ERR DEBUG DIGEST failed: {e}")))
    }))
}

/// DEBUG DIGEST-VALUE key...: each key's value digest, zeros for a missing key.
fn digest_value(ctx: &Ctx<'_>, keys: &[Bytes]) -> Reply {
    let now = ctx.shared.now_ms();
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let found = ctx
            .shared
            .keyspace
            .read(ctx.client.db, now, |k| R::new(k).get(key));
        let mut d = [0u8; 20];
        match found {
            Ok(Some(rec)) => {
                let fields = match members_of(ctx.shared, ctx.client.db, now, key, &rec) {
                    Ok(f) => f,
                    Err(e) => return e,
                };
                value_digest(&mut d, &rec, &fields);
            }
            Ok(None) => {}
            Err(e) => return e,
        }
        out.push(hex(&d));
    }
    Reply::Array(out)
}

/// DEBUG STRINGMATCH-TEST: random patterns against random strings through the glob matcher
/// (bounded work; a panic would be a bug the reply reports).
fn stringmatch_test() -> Outcome {
    Outcome::Later(Box::pin(async move {
        let job = tokio::task::spawn_blocking(|| {
            use rand::Rng;
            let mut rng = rand::thread_rng();
            let alphabet = b"ab*?[]\\^-";
            for _ in 0..100_000 {
                let plen = rng.gen_range(0..32);
                let slen = rng.gen_range(0..32);
                let p: Vec<u8> = (0..plen)
                    .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                    .collect();
                let s: Vec<u8> = (0..slen).map(|_| rng.gen_range(0..=255u8)).collect();
                let _ = crate::glob::glob_match(&p, &s, rng.gen_bool(0.5));
            }
        });
        match job.await {
            Ok(()) => Reply::simple("Apparently Redis did not crash: test passed"),
            Err(_) => Reply::error("ERR the pattern matcher failed the fuzz test"),
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_follow_redis_rules() {
        assert_eq!(encoding(b"12"), "int");
        assert_eq!(encoding(b"-12345678901234"), "int");
        assert_eq!(encoding(b"012"), "embstr");
        assert_eq!(encoding(b"-0"), "embstr");
        assert_eq!(encoding(b"+1"), "embstr");
        assert_eq!(encoding(b"hello"), "embstr");
        assert_eq!(encoding(&[b'a'; 44]), "embstr");
        assert_eq!(encoding(&[b'a'; 45]), "raw");
        assert_eq!(encoding(b"123456789012345678901"), "embstr");
        assert_eq!(refcount(b"9999"), i64::from(i32::MAX));
        assert_eq!(refcount(b"10000"), 1);
        assert_eq!(refcount(b"-1"), 1);
    }

    #[test]
    fn serialized_lengths_match_redis_for_uncompressed_values() {
        assert_eq!(serialized_len(b"12"), 2);
        assert_eq!(serialized_len(b"12345"), 3);
        assert_eq!(serialized_len(b"10001"), 3);
        assert_eq!(serialized_len(b"-12345678901234"), 16);
        assert_eq!(serialized_len(b"hello"), 6);
        assert_eq!(serialized_len(&[b'x'; 100]), 102);
    }

    #[test]
    fn sleep_reads_like_strtod() {
        assert_eq!(sleep_time(b"0.5"), Duration::from_millis(500));
        assert_eq!(sleep_time(b"0.01x"), Duration::from_millis(10));
        assert_eq!(sleep_time(b"abc"), Duration::ZERO);
        assert_eq!(sleep_time(b"-3"), Duration::ZERO);
        assert_eq!(sleep_time(b"nan"), Duration::ZERO);
        assert_eq!(sleep_time(b"1e300"), MAX_SLEEP);
        assert_eq!(sleep_time(b"inf"), MAX_SLEEP);
        assert_eq!(sleep_time(&vec![b'9'; 1 << 20]), MAX_SLEEP);
    }

    #[test]
    fn atoi_is_c_s() {
        assert_eq!(atoi(b"1"), 1);
        assert_eq!(atoi(b"0"), 0);
        assert_eq!(atoi(b"2x"), 2);
        assert_eq!(atoi(b"x"), 0);
        assert_eq!(atoi(b" -7"), -7);
    }

    /// Values redis-server 7.0.15 printed for the same data.
    #[test]
    fn digests_are_redis_s() {
        let rec = |v: &'static [u8], ttl: bool| rialto_keyspace::Record {
            expire_at_ms: ttl.then_some(1),
            ..rialto_keyspace::Record::new(Bytes::from_static(v))
        };
        let one = |key: &[u8], r: &rialto_keyspace::Record| {
            let mut d = [0u8; 20];
            mix_digest(&mut d, key);
            value_digest(&mut d, r, &[]);
            d
        };
        let show = |d: &[u8; 20]| match hex(d) {
            Reply::Simple(s) => String::from_utf8_lossy(&s).into_owned(),
            _ => String::new(),
        };
        // {db0: a=1}
        let mut total = [0u8; 20];
        mix_digest(&mut total, &0u32.to_be_bytes());
        let a = one(b"a", &rec(b"1", false));
        xor_digest(&mut total, &a);
        assert_eq!(show(&total), "943d800368fb9c0e951138f1bc0e313ac769d91f");
        // DIGEST-VALUE a, and c=x with a TTL.
        let mut d = [0u8; 20];
        value_digest(&mut d, &rec(b"1", false), &[]);
        assert_eq!(show(&d), "b4fc66738120fba0b5aa500ab5c2bf89cea1c5da");
        let mut d = [0u8; 20];
        value_digest(&mut d, &rec(b"x", true), &[]);
        assert_eq!(show(&d), "0745672cb1bf060476eedeb8a28f5ffe1ff5a2be");
        // DIGEST-VALUE of the hash {a: 1, b: 2, c: 3}, its fields in any order.
        let hash = rialto_keyspace::Record {
            kind: rialto_keyspace::Kind::Hash,
            ..rec(b"", false)
        };
        let b = |x: &'static [u8]| Bytes::from_static(x);
        for fields in [
            [(b(b"a"), b(b"1")), (b(b"b"), b(b"2")), (b(b"c"), b(b"3"))],
            [(b(b"c"), b(b"3")), (b(b"a"), b(b"1")), (b(b"b"), b(b"2"))],
        ] {
            let mut d = [0u8; 20];
            value_digest(&mut d, &hash, &fields);
            assert_eq!(show(&d), "b60c36e529712296d694f27b5914cbe84950995e");
        }
    }
}
