//! MEMORY DOCTOR | MALLOC-STATS | PURGE | STATS | USAGE | HELP, with Redis 7.0's replies over
//! Rialto's figures: the allocator's bytes in use and their peak, the resident set
//! (`crate::process`). Rialto's data lives in its tables, not in memory, so the per-key and
//! per-database overheads Redis reports from its hash tables are 0, and USAGE estimates what
//! Redis would allocate for the key and its value.

use std::sync::Arc;

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome, R};
use crate::command_table::help;
use crate::command_table::ArgType::{Integer, Key};
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};
use crate::reply::{self, CmdResult};
use crate::server::Shared;

const TIPS: &[&str] = &[
    "nondeterministic_output",
    "request_policy:all_shards",
    "response_policy:special",
];

const MEMORY_DOCTOR: CommandSpec = cmd("memory|doctor", 2, &[], &["@slow"])
    .tips(TIPS)
    .docs(doc(
        "server",
        "4.0.0",
        "Describes the memory problems it finds, in words.",
        "O(1)",
    ))
    .handler(Handler::Conn(doctor));

const MEMORY_MALLOC_STATS: CommandSpec = cmd("memory|malloc-stats", 2, &[], &["@slow"])
    .tips(TIPS)
    .docs(doc(
        "server",
        "4.0.0",
        "Returns the allocator's own statistics, where it has them.",
        "Depends on how much memory is allocated, could be slow",
    ))
    .handler(Handler::Conn(malloc_stats));

const MEMORY_PURGE: CommandSpec = cmd("memory|purge", 2, &[], &["@slow"])
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .docs(doc(
        "server",
        "4.0.0",
        "Asks the allocator to give free memory back to the system.",
        "Depends on how much memory is allocated, could be slow",
    ))
    .handler(Handler::Conn(purge));

const MEMORY_STATS: CommandSpec = cmd("memory|stats", 2, &[], &["@slow"])
    .tips(TIPS)
    .docs(doc(
        "server",
        "4.0.0",
        "Returns the server's memory figures.",
        "O(1)",
    ))
    .handler(Handler::Conn(stats));

const MEMORY_USAGE: CommandSpec = cmd("memory|usage", -3, &["readonly"], &["@read", "@slow"])
    .keys(2, 2, 1)
    .key_specs(&[KeySpec::single(2, &["RO"])])
    .docs(
        doc(
            "server",
            "4.0.0",
            "Estimates the bytes a key and its value take.",
            "O(N) where N is the number of samples.",
        )
        .args(&[
            arg("key", Key).key(0),
            arg("count", Integer).token("SAMPLES").opt(),
        ]),
    )
    .handler(Handler::Read(usage));

const MEMORY_HELP: CommandSpec = cmd("memory|help", 2, &["loading", "stale"], &["@slow"])
    .docs(doc(
        "server",
        "4.0.0",
        "Lists the MEMORY subcommands with a short description of each.",
        "O(1)",
    ))
    .handler(Handler::Conn(help));

pub const MEMORY: CommandSpec = cmd("memory", -2, &[], &["@slow"])
    .docs(doc(
        "server",
        "4.0.0",
        "Groups the memory diagnostics subcommands.",
        "Depends on subcommand.",
    ))
    .subs(&[
        MEMORY_DOCTOR,
        MEMORY_MALLOC_STATS,
        MEMORY_PURGE,
        MEMORY_STATS,
        MEMORY_USAGE,
        MEMORY_HELP,
    ]);

fn help(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(help::reply(&MEMORY))
}

/// The figures MEMORY STATS and DOCTOR report, bytes.
struct Overhead {
    peak: u64,
    total: u64,
    startup: u64,
    /// What the allocator took from the system (glibc: its arenas and mapped blocks).
    active: u64,
    rss: u64,
    /// Keys per database that has any.
    keys: Vec<(usize, u64)>,
}

impl Overhead {
    fn keys_total(&self) -> u64 {
        self.keys.iter().map(|(_, n)| n).sum()
    }
    /// The bytes beyond those in use at start (Redis's `net_usage`, at least 1).
    fn net(&self) -> u64 {
        self.total.saturating_sub(self.startup).max(1)
    }
    fn dataset(&self) -> u64 {
        self.total.saturating_sub(self.startup)
    }
    fn ratio(a: u64, b: u64) -> f64 {
        if b == 0 {
            0.0
        } else {
            a as f64 / b as f64
        }
    }
    fn allocator_frag(&self) -> f64 {
        Self::ratio(self.active, self.total)
    }
    fn allocator_frag_bytes(&self) -> u64 {
        self.active.saturating_sub(self.total)
    }
    fn allocator_rss(&self) -> f64 {
        Self::ratio(self.rss, self.active)
    }
    fn allocator_rss_bytes(&self) -> u64 {
        self.rss.saturating_sub(self.active)
    }
    fn total_frag(&self) -> f64 {
        Self::ratio(self.rss, self.total)
    }
    fn total_frag_bytes(&self) -> u64 {
        self.rss.saturating_sub(self.total)
    }
}

/// Walks every database for its key count (O(keys)); off the connection threads.
fn overhead(sh: &Shared) -> Overhead {
    let m = crate::process::memory();
    let databases = sh.config.read().databases.min(256);
    let now = sh.now_ms();
    let mut keys = Vec::new();
    for db in 0..databases {
        let mut n = 0u64;
        let walked = sh.keyspace.walk_keys(db as u8, None, now, |_, _| {
            n += 1;
            true
        });
        if walked.is_ok() && n > 0 {
            keys.push((db, n));
        }
    }
    Overhead {
        peak: m.peak,
        total: m.used,
        startup: crate::process::startup_allocated().min(m.used),
        active: crate::process::allocator_active().max(m.used),
        rss: m.rss,
        keys,
    }
}

/// Runs `f` over the figures off the connection thread.
fn later(ctx: &Ctx<'_>, f: fn(&Overhead) -> Reply) -> Outcome {
    let shared = Arc::clone(ctx.shared);
    Outcome::Later(Box::pin(async move {
        tokio::task::spawn_blocking(move || f(&overhead(&shared)))
            .await
            .unwrap_or_else(|_| Reply::error("ERR memory figures unavailable"))
    }))
}

fn stats(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    later(ctx, stats_reply)
}

fn stats_reply(o: &Overhead) -> Reply {
    let int = |n: u64| Reply::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    let field = |name: &str, v: Reply| (Reply::bulk(name), v);
    let keys = o.keys_total();
    let mut m = vec![
        field("peak.allocated", int(o.peak)),
        field("total.allocated", int(o.total)),
        field("startup.allocated", int(o.startup)),
        field("replication.backlog", int(0)),
        field("clients.slaves", int(0)),
        field("clients.normal", int(0)),
        field("cluster.links", int(0)),
        field("aof.buffer", int(0)),
        field("lua.caches", int(0)),
        field("functions.caches", int(0)),
    ];
    for (db, _) in &o.keys {
        m.push(field(
            &format!("db.{db}"),
            Reply::Map(vec![
                field("overhead.hashtable.main", int(0)),
                field("overhead.hashtable.expires", int(0)),
                field("overhead.hashtable.slot-to-keys", int(0)),
            ]),
        ));
    }
    m.extend([
        field("overhead.total", int(o.startup)),
        field("keys.count", int(keys)),
        field(
            "keys.bytes-per-key",
            int(o.net().checked_div(keys).unwrap_or(0)),
        ),
        field("dataset.bytes", int(o.dataset())),
        field(
            "dataset.percentage",
            Reply::Double(o.dataset() as f64 * 100.0 / o.net() as f64),
        ),
        field(
            "peak.percentage",
            Reply::Double(Overhead::ratio(o.total * 100, o.peak)),
        ),
        field("allocator.allocated", int(o.total)),
        field("allocator.active", int(o.active)),
        field("allocator.resident", int(o.rss)),
        field(
            "allocator-fragmentation.ratio",
            Reply::Double(o.allocator_frag()),
        ),
        field(
            "allocator-fragmentation.bytes",
            int(o.allocator_frag_bytes()),
        ),
        field("allocator-rss.ratio", Reply::Double(o.allocator_rss())),
        field("allocator-rss.bytes", int(o.allocator_rss_bytes())),
        field("rss-overhead.ratio", Reply::Double(1.0)),
        field("rss-overhead.bytes", int(0)),
        field("fragmentation", Reply::Double(o.total_frag())),
        field("fragmentation.bytes", int(o.total_frag_bytes())),
    ]);
    Reply::Map(m)
}

fn doctor(ctx: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    later(ctx, |o| Reply::Verbatim {
        format: *b"txt",
        text: doctor_report(o).into(),
    })
}

/// Redis's `getMemoryDoctorReport` over the figures Rialto has (no replicas, and client
/// buffers and scripts are not measured).
fn doctor_report(o: &Overhead) -> String {
    const MB_10: u64 = 10 << 20;
    if o.total < 5 << 20 {
        return "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n".into();
    }
    let big_peak = Overhead::ratio(o.peak, o.total) > 1.5;
    let high_frag = o.total_frag() > 1.4 && o.total_frag_bytes() > MB_10;
    let high_alloc_frag = o.allocator_frag() > 1.1 && o.allocator_frag_bytes() > MB_10;
    let high_alloc_rss = o.allocator_rss() > 1.1 && o.allocator_rss_bytes() > MB_10;
    if !(big_peak || high_frag || high_alloc_frag || high_alloc_rss) {
        return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n".into();
    }
    let mut s =
        String::from("Sam, I detected a few issues in this Redis instance memory implants:\n\n");
    if big_peak {
        s.push_str(" * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n");
    }
    if high_frag {
        s.push_str(" * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"libc\".\n\n");
    }
    if high_alloc_frag {
        s.push_str(" * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n");
    }
    if high_alloc_rss {
        s.push_str(" * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n");
    }
    s.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
    s
}

fn malloc_stats(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    // What Redis answers when it is built with libc's allocator, as Rialto is.
    Outcome::Reply(Reply::bulk("Stats not supported for the current allocator"))
}

fn purge(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    crate::process::release_free_memory();
    Outcome::Reply(reply::ok())
}

/// MEMORY USAGE key [SAMPLES count]: what Redis would allocate for the key, its value and its
/// hash table entry (a string has nothing to sample; the count is checked as Redis checks it).
fn usage(k: &mut R<'_, '_>, args: &[Bytes]) -> CmdResult {
    let mut j = 3;
    while j < args.len() {
        if !args[j].eq_ignore_ascii_case(b"samples") || j + 1 >= args.len() {
            return Ok(reply::syntax());
        }
        match reply::parse_i64(&args[j + 1]) {
            None => return Ok(reply::not_integer()),
            Some(n) if n < 0 => return Ok(reply::syntax()),
            Some(_) => {}
        }
        j += 2;
    }
    Ok(match k.get(&args[2])? {
        Some(r) if r.is_string() => Reply::Integer(string_usage(&args[2], &r.value) as i64),
        Some(r) => Reply::Integer(collection_usage(k, &args[2], &r)? as i64),
        None => Reply::Null,
    })
}

/// MEMORY USAGE of a collection: the key's share as for a string, plus its members' bytes —
/// the packed record's payload, or for a large hash its field and value bytes with a
/// `dictEntry` and two `sds` headers each, as Redis's hash table holds them (for a large
/// sorted set, each member's `sds`, `dictEntry` and skiplist node). A set is sized as Redis
/// 7.0 holds it whatever its encoding here: an intset, or a hash table.
fn collection_usage(
    k: &mut R<'_, '_>,
    key: &[u8],
    rec: &rialto_keyspace::Record,
) -> CmdResult<usize> {
    const ROBJ: usize = 16;
    const DICT_ENTRY: usize = 24;
    let key_bytes = size_class(sds_header(key.len(), true) + key.len() + 1) + DICT_ENTRY + ROBJ;
    let sds = |b: &Bytes| size_class(sds_header(b.len(), false) + b.len() + 1);
    if rec.kind == rialto_keyspace::Kind::Set {
        let Some(s) = k.set(key)? else {
            return Ok(key_bytes);
        };
        let members = super::util::checked(s.members(k.keys()))?;
        if s.is_intset() {
            // An intset: an 8-byte header and 2, 4 or 8 bytes a member, as its widest needs.
            let width = members
                .iter()
                .filter_map(|m| rialto_resp::parse_redis_int(m))
                .map(|n| {
                    if i16::try_from(n).is_ok() {
                        2
                    } else if i32::try_from(n).is_ok() {
                        4
                    } else {
                        8
                    }
                })
                .max()
                .unwrap_or(2);
            return Ok(key_bytes + size_class(8 + width * members.len()));
        }
        // Redis 7.0's hash table: the dict, a slot per power of two of members (4 at least),
        // and a `dictEntry` and `sds` a member.
        const DICT: usize = 56;
        let slots = members.len().next_power_of_two().max(4);
        let entries: usize = members.iter().map(|m| DICT_ENTRY + sds(m)).sum();
        return Ok(key_bytes + DICT + 8 * slots + entries);
    }
    if !rec.large {
        return Ok(key_bytes + size_class(rec.value.len()));
    }
    if rec.kind == rialto_keyspace::Kind::List {
        // Redis's quicklist: listpacks of up to 8 KiB (an entry's bytes and two of framing
        // each), a 32-byte node per listpack and the quicklist itself.
        let Some(l) = k.list(key)? else {
            return Ok(key_bytes);
        };
        let items = super::util::checked(l.all(k.keys()))?;
        let bytes: usize = items.iter().map(|e| e.len() + 2).sum();
        let nodes = bytes.div_ceil(8192).max(1);
        return Ok(key_bytes + 40 + nodes * 32 + size_class(bytes.div_ceil(nodes) + 7) * nodes);
    }
    if rec.kind == rialto_keyspace::Kind::ZSet {
        // Redis's skiplist encoding: per member a dictEntry, the member's sds and a skiplist
        // node (score, backward link, and on average 4/3 levels of link and span).
        const NODE: usize = 8 + 8 + 8 + 16 * 4 / 3;
        let Some(z) = k.zset(key)? else {
            return Ok(key_bytes);
        };
        let members = super::util::checked(z.entries(k.keys()))?;
        let total: usize = members
            .iter()
            .map(|(m, _)| {
                DICT_ENTRY + size_class(sds_header(m.len(), false) + m.len() + 1) + size_class(NODE)
            })
            .sum();
        return Ok(key_bytes + total);
    }
    let Some(h) = k.hash(key)? else {
        return Ok(key_bytes);
    };
    let fields = super::util::checked(h.entries(k.keys()))?;
    let members: usize = fields
        .iter()
        .map(|(f, v)| {
            DICT_ENTRY
                + size_class(sds_header(f.len(), false) + f.len() + 1)
                + size_class(sds_header(v.len(), false) + v.len() + 1)
        })
        .sum();
    Ok(key_bytes + members)
}

/// jemalloc's size class of an allocation of `n` bytes: 8, 16, then steps of 16 up to 128,
/// then four classes per doubling.
fn size_class(n: usize) -> usize {
    if n <= 8 {
        return 8;
    }
    if n <= 128 {
        return n.div_ceil(16) * 16;
    }
    let group = usize::BITS - (n - 1).leading_zeros() - 1;
    let step = 1usize << (group - 2);
    n.div_ceil(step) * step
}

/// The header of Redis's `sds` string of `len` bytes (`sdsReqType`; `type5` for short keys).
fn sds_header(len: usize, short_type: bool) -> usize {
    match len {
        n if n < 32 && short_type => 1,
        n if n < 1 << 8 => 3,
        n if n < 1 << 16 => 5,
        n if n < 1 << 32 => 9,
        _ => 17,
    }
}

/// Redis's MEMORY USAGE of a string key: the key's `sds`, a `dictEntry` (24 bytes), and the
/// value's object: a bare `robj` (16 bytes) for an integer, one allocation of object and
/// `sds` for an `embstr`, two for a `raw` string.
fn string_usage(key: &[u8], value: &[u8]) -> usize {
    const ROBJ: usize = 16;
    const DICT_ENTRY: usize = 24;
    let key_bytes = size_class(sds_header(key.len(), true) + key.len() + 1);
    let value_bytes = match super::debug::encoding(value) {
        "int" => ROBJ,
        "embstr" => size_class(ROBJ + 3 + value.len() + 1),
        _ => ROBJ + size_class(sds_header(value.len(), false) + value.len() + 1),
    };
    key_bytes + DICT_ENTRY + value_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What redis-server 7.0.15 answers for the same keys and values.
    #[test]
    fn usage_matches_redis_for_strings() {
        let x = |n: usize| vec![b'x'; n];
        for (value, want) in [
            (b"1".to_vec(), 48),
            (b"12345".to_vec(), 48),
            (b"abc".to_vec(), 64),
            (x(44), 96),
            (x(45), 112),
            (x(100), 160),
            (x(1000), 1072),
        ] {
            assert_eq!(string_usage(b"k", &value), want, "{} bytes", value.len());
        }
        assert_eq!(string_usage(&[b'k'; 40], b"v"), 104);
    }

    #[test]
    fn size_classes_are_jemallocs() {
        let classes: Vec<usize> = [1, 8, 9, 17, 49, 104, 129, 161, 257, 1006, 1025, 5000]
            .into_iter()
            .map(size_class)
            .collect();
        assert_eq!(
            classes,
            [8, 8, 16, 32, 64, 112, 160, 192, 320, 1024, 1280, 5120]
        );
    }

    #[test]
    fn the_doctor_reads_the_figures_as_redis_does() {
        let mut o = Overhead {
            peak: 1 << 20,
            total: 1 << 20,
            startup: 1 << 20,
            active: 1 << 20,
            rss: 2 << 20,
            keys: Vec::new(),
        };
        assert!(doctor_report(&o).starts_with("Hi Sam, this instance is empty"));
        o.total = 50 << 20;
        o.active = 50 << 20;
        o.peak = 60 << 20;
        o.rss = 55 << 20;
        assert!(doctor_report(&o).starts_with("Hi Sam, I can't find any memory issue"));
        o.peak = 100 << 20;
        let r = doctor_report(&o);
        assert!(r.contains(" * Peak memory:") && r.ends_with("I want to help you.\n"));
        assert!(!r.contains("High total RSS"));
    }
}
