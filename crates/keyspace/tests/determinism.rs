//! `apply` is deterministic: random sequences of ops — strings, expiry (with the clock moving
//! past expiry times), the expiry pass's deletions, stores, streamed writes landing on a
//! store's versions and real-time log during a push, the push's swap and abort, rollbacks,
//! FLUSHDB and FLUSHALL steps, function library changes, hash, set, sorted-set, list and stream
//! writes (packed, made large past small thresholds, deleted, expired, renamed, overwritten;
//! streams with `*` ids, small nodes, groups, pending entries and claims), and ops
//! that fail — applied to
//! two fresh keyspaces give the same replies and the same content digest, also after the
//! reclaim pass; and each op, encoded to bytes and decoded, applies as the original did.
//! After every step the maintained key counts equal a walk's, and a reopen reads them back.

mod common;

use bytes::Bytes;
use proptest::prelude::*;
use rialto_io::MemFs;
use rialto_keyspace::bits::{BitOp, FieldType, Overflow};
use rialto_keyspace::{encode_dump, DumpValue, RestoreOp, SortBy, SortSpec, SortStore};
use rialto_keyspace::{
    Aggregate, Combine, LexBound, LexRange, Score, ScoreRange, ZAddFlags, ZRange, ZSetOp,
};
use rialto_keyspace::{
    Compression, Cond, ExpireCond, FieldSub, HashOp, Keyspace, LibraryOp, LibrarySource, ListOp,
    Op, OpKind, RestorePolicy, Set, SetAlgebra, SetOp, StoreOp, StoreSettings, TtlChange, Value,
    VersionInfo,
};
use rialto_keyspace::{HllDebug, HllOp};

const KEYS: &[&str] = &["a", "b", "c", "n", "s:x", "s:y", "t:z"];

fn open(fs: &MemFs) -> Keyspace {
    let mut o = common::options(fs);
    o.engine.write_buffer_size = 64 << 10;
    Keyspace::open(std::path::Path::new("/ks/db"), o)
        .inspect(|ks| {
            // Small thresholds, so that hashes and sets become large within a few writes.
            ks.encodings().set_hash_max_entries(3);
            ks.encodings().set_hash_max_value(8);
            ks.encodings().set_set_max_intset_entries(4);
            ks.encodings().set_set_max_listpack_entries(3);
            ks.encodings().set_set_max_listpack_value(8);
            ks.encodings().set_zset_max_entries(3);
            ks.encodings().set_zset_max_value(8);
            ks.encodings().set_list_max_size(3);
        })
        .unwrap()
}

/// One step: an op kind, and how far the clock moves before it (ms).
#[derive(Debug, Clone)]
struct Step {
    advance_ms: i64,
    db: u8,
    kind: OpKind,
}

/// DUMP payloads of every kind, a few large enough for the small thresholds, and a damaged one.
fn restore_payload() -> impl Strategy<Value = Bytes> {
    let items = prop::collection::vec(prop_oneof![value(), field()], 1..12);
    prop_oneof![
        value().prop_map(DumpValue::String),
        items.clone().prop_map(DumpValue::List),
        items.clone().prop_map(|mut v| {
            v.sort();
            v.dedup();
            DumpValue::Set(v)
        }),
        items.clone().prop_map(|mut v| {
            v.sort();
            v.dedup();
            DumpValue::Hash(v.iter().map(|f| (f.clone(), f.clone())).collect())
        }),
        items.prop_map(|mut v| {
            v.sort();
            v.dedup();
            DumpValue::ZSet(
                v.iter()
                    .enumerate()
                    .map(|(i, m)| (m.clone(), i as f64 * 0.5))
                    .collect(),
            )
        }),
    ]
    .prop_flat_map(|v| {
        let good = Bytes::from(encode_dump(&v));
        let mut bad = good.to_vec();
        bad[0] ^= 0x40;
        prop_oneof![4 => Just(good), 1 => Just(Bytes::from(bad))]
    })
}

fn key() -> impl Strategy<Value = Bytes> {
    prop::sample::select(KEYS).prop_map(|k| Bytes::from_static(k.as_bytes()))
}

fn value() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        Just(Bytes::from_static(b"1")),
        Just(Bytes::from_static(b"-7")),
        Just(Bytes::from_static(b"2.5")),
        Just(Bytes::from_static(b"not a number")),
        "[a-z]{0,12}".prop_map(Bytes::from),
    ]
}

fn field() -> impl Strategy<Value = Bytes> {
    prop::sample::select(&["f", "g", "h", "i", "j", "long field name"][..])
        .prop_map(|f| Bytes::from_static(f.as_bytes()))
}

fn hash_op() -> impl Strategy<Value = OpKind> {
    prop_oneof![
        3 => (key(), prop::collection::vec((field(), value()), 1..5), any::<bool>())
            .prop_map(|(key, pairs, ok)| OpKind::Hash(HashOp::Set { key, pairs, ok })),
        1 => (key(), field(), value())
            .prop_map(|(key, field, value)| OpKind::Hash(HashOp::SetNx { key, field, value })),
        2 => (key(), prop::collection::vec(field(), 1..4))
            .prop_map(|(key, fields)| OpKind::Hash(HashOp::Del { key, fields })),
        1 => (key(), field(), prop_oneof![Just(1i64), Just(-5), Just(i64::MAX)])
            .prop_map(|(key, field, delta)| OpKind::Hash(HashOp::IncrBy { key, field, delta })),
        1 => (key(), field(), prop_oneof![Just("1.5"), Just("-0.25"), Just("1e400")])
            .prop_map(|(key, field, i)| OpKind::Hash(HashOp::IncrByFloat {
                key,
                field,
                incr: Bytes::from_static(i.as_bytes()),
            })),
    ]
}

fn zset_op() -> impl Strategy<Value = OpKind> {
    let score = || {
        prop::sample::select(&[f64::NEG_INFINITY, -0.0, 0.5, 1.0, 3.0, f64::INFINITY][..])
            .prop_map(Score)
    };
    let member = || {
        prop::sample::select(&["m", "n", "o", "p", "a long member"][..])
            .prop_map(|m| Bytes::from_static(m.as_bytes()))
    };
    let range = prop_oneof![
        (-3i64..3, -3i64..3).prop_map(|(a, b)| ZRange::Rank(a, b)),
        (score(), score(), any::<bool>()).prop_map(|(min, max, ex)| ZRange::Score(ScoreRange {
            min,
            max,
            min_ex: ex,
            max_ex: false,
        })),
        prop::sample::select(&["-", "[m", "(n", "+"][..]).prop_map(|b| ZRange::Lex(LexRange {
            min: match b {
                "-" => LexBound::Min,
                "+" => LexBound::Max,
                b if b.starts_with('[') =>
                    LexBound::Incl(Bytes::copy_from_slice(&b.as_bytes()[1..])),
                b => LexBound::Excl(Bytes::copy_from_slice(&b.as_bytes()[1..])),
            },
            max: LexBound::Max,
        })),
    ];
    prop_oneof![
        3 => (key(), 0u8..64, prop::collection::vec((score(), member()), 1..4)).prop_map(
            |(key, b, mut items)| {
                let flags = ZAddFlags {
                    nx: b & 1 != 0,
                    xx: b & 2 != 0 && b & 1 == 0,
                    gt: b & 4 != 0 && b & 1 == 0,
                    lt: b & 8 != 0 && b & 4 == 0 && b & 1 == 0,
                    ch: b & 16 != 0,
                    incr: b & 32 != 0,
                };
                if flags.incr {
                    items.truncate(1);
                }
                OpKind::ZSet(ZSetOp::Add { key, flags, items })
            }
        ),
        1 => (key(), prop::collection::vec(member(), 1..3))
            .prop_map(|(key, members)| OpKind::ZSet(ZSetOp::Rem { key, members })),
        1 => (key(), range).prop_map(|(key, range)| OpKind::ZSet(ZSetOp::RemRange { key, range })),
        1 => (key(), any::<bool>(), prop::option::of(0u64..4))
            .prop_map(|(key, max, count)| OpKind::ZSet(ZSetOp::Pop { key, max, count })),
        1 => (prop::collection::vec(key(), 1..3), any::<bool>(), prop::option::of(1u64..4))
            .prop_map(|(keys, max, count)| OpKind::ZSet(ZSetOp::MPop { keys, max, count })),
        1 => (key(), key(), -2i64..3, any::<bool>()).prop_map(|(dst, src, start, rev)| {
            OpKind::ZSet(ZSetOp::RangeStore {
                dst,
                src,
                range: ZRange::Rank(start, -1),
                rev,
                limit: None,
            })
        }),
        1 => (key(), prop::collection::vec(key(), 1..4), 0u8..3, any::<bool>()).prop_map(
            |(dst, keys, op, weighted)| {
                let weights = if weighted {
                    keys.iter().map(|_| Score(-1.5)).collect()
                } else {
                    Vec::new()
                };
                OpKind::ZSet(ZSetOp::Store {
                    dst,
                    op: [Combine::Union, Combine::Inter, Combine::Diff][op as usize],
                    keys,
                    weights,
                    aggregate: Aggregate::Sum,
                    late: None,
                })
            }
        ),
    ]
}

fn list_op() -> impl Strategy<Value = OpKind> {
    let items = || prop::collection::vec(prop_oneof![value(), field()], 1..5);
    let index = prop_oneof![
        (-4i64..4).prop_map(|i| Bytes::from(i.to_string())),
        Just(Bytes::from_static(b"x")),
    ];
    let list = prop_oneof![
        3 => (key(), any::<bool>(), any::<bool>(), items())
            .prop_map(|(key, left, existing, items)| ListOp::Push { key, left, existing, items }),
        2 => (key(), any::<bool>(), prop::option::of(0u64..4))
            .prop_map(|(key, left, count)| ListOp::Pop { key, left, count }),
        1 => (key(), index, value()).prop_map(|(key, index, value)| ListOp::Set { key, index, value }),
        1 => (key(), any::<bool>(), value(), value())
            .prop_map(|(key, before, pivot, value)| ListOp::Insert { key, before, pivot, value }),
        1 => (key(), -2i64..3, value()).prop_map(|(key, count, value)| ListOp::Rem { key, count, value }),
        1 => (key(), -4i64..4, -4i64..4).prop_map(|(key, start, stop)| ListOp::Trim { key, start, stop }),
        1 => (key(), key(), any::<bool>(), any::<bool>())
            .prop_map(|(src, dst, from_left, to_left)| ListOp::Move { src, dst, from_left, to_left }),
        1 => (prop::collection::vec(key(), 1..3), any::<bool>(), prop::option::of(1u64..4))
            .prop_map(|(keys, left, count)| ListOp::MPop { keys, left, count }),
    ];
    list.prop_map(OpKind::List)
}

/// Stream writes with the `*` ids of the op's clock, small nodes, approximate trims, groups,
/// pending entries and claims (whose times are the op's), and reads that run as ops.
fn stream_op() -> impl Strategy<Value = OpKind> {
    use rialto_keyspace::{
        AddId, GroupStart, NodeLimits, ReadFrom, StreamId, StreamOp, Trim, TrimBy,
    };
    let id = || (0u64..6, 0u64..3).prop_map(|(ms, seq)| StreamId::new(ms, seq));
    let node = NodeLimits {
        max_bytes: 60,
        max_entries: 2,
    };
    let trim = prop_oneof![
        (0u64..4).prop_map(TrimBy::MaxLen),
        id().prop_map(TrimBy::MinId),
    ];
    let trim = (trim, any::<bool>(), 0u64..3).prop_map(|(by, approx, limit)| Trim {
        by,
        approx,
        limit: if approx { limit } else { 0 },
    });
    let group =
        || prop::sample::select(vec!["g", "h"]).prop_map(|g| Bytes::from_static(g.as_bytes()));
    let consumer =
        || prop::sample::select(vec!["x", "y"]).prop_map(|c| Bytes::from_static(c.as_bytes()));
    let stream = prop_oneof![
        4 => (key(), prop_oneof![Just(AddId::Auto), id().prop_map(AddId::Exact), (0u64..6).prop_map(AddId::Ms)],
              prop::collection::vec(prop_oneof![value(), field()], 1..3), prop::option::weighted(0.3, trim.clone()))
            .prop_map(move |(key, id, mut fields, trim)| {
                if fields.len() % 2 == 1 {
                    fields.push(Bytes::from_static(b"v"));
                }
                StreamOp::Add { key, nomkstream: false, id, fields, trim, node }
            }),
        1 => (key(), trim).prop_map(move |(key, trim)| StreamOp::Trim { key, trim, node }),
        1 => (key(), prop::collection::vec(id(), 1..3)).prop_map(|(key, ids)| StreamOp::Del { key, ids, bad: false }),
        1 => (key(), group(), any::<bool>())
            .prop_map(|(key, group, mkstream)| StreamOp::GroupCreate { key, group, start: GroupStart::Id(StreamId::MIN), mkstream, entries_read: -1 }),
        2 => (key(), group(), consumer(), prop::option::weighted(0.3, id()), 0u64..3)
            .prop_map(|(key, group, consumer, from, count)| StreamOp::ReadGroup {
                group, consumer, streams: vec![(key, from)], count, noack: false, served: false, bad: None,
            }),
        1 => (key(), group(), prop::collection::vec(id(), 1..3)).prop_map(|(key, group, ids)| StreamOp::Ack { key, group, ids, bad: false }),
        1 => (key(), group(), consumer(), prop_oneof![Just("0"), Just("50")], id(), any::<bool>())
            .prop_map(|(key, group, consumer, idle, id, force)| {
                let mut args = vec![Bytes::from_static(idle.as_bytes()), id.to_bytes()];
                if force {
                    args.push(Bytes::from_static(b"FORCE"));
                }
                StreamOp::Claim { key, group, consumer, args }
            }),
        1 => (key(), group(), consumer(), 0u64..100)
            .prop_map(|(key, group, consumer, min_idle)| StreamOp::AutoClaim { key, group, consumer, min_idle, start: StreamId::MIN, count: 2, justid: false }),
        1 => (key(), group(), consumer()).prop_map(|(key, group, consumer)| StreamOp::DelConsumer { key, group, consumer }),
        1 => (key(), group()).prop_map(|(key, group)| StreamOp::GroupDestroy { key, group }),
        1 => (key(), prop::option::of(id())).prop_map(|(key, from)| StreamOp::Read {
            streams: vec![(key, from.map_or(ReadFrom::Last, ReadFrom::After))], count: 0, bad: None,
        }),
    ];
    stream.prop_map(OpKind::Stream)
}

fn set_op() -> impl Strategy<Value = OpKind> {
    let members = || prop::collection::vec(prop_oneof![value(), field()], 1..5);
    let algebra =
        prop::sample::select(&[SetAlgebra::Inter, SetAlgebra::Union, SetAlgebra::Diff][..]);
    prop_oneof![
        3 => (key(), members()).prop_map(|(key, members)| OpKind::Sets(SetOp::Add { key, members })),
        2 => (key(), members()).prop_map(|(key, members)| OpKind::Sets(SetOp::Rem { key, members })),
        2 => (key(), prop::option::of(0u64..4), any::<u64>())
            .prop_map(|(key, count, seed)| OpKind::Sets(SetOp::Pop { key, count, seed })),
        1 => (key(), key(), value())
            .prop_map(|(src, dst, member)| OpKind::Sets(SetOp::Move { src, dst, member })),
        1 => (algebra, key(), prop::collection::vec(key(), 1..4))
            .prop_map(|(algebra, dst, keys)| OpKind::Sets(SetOp::Store { algebra, dst, keys })),
    ]
}

/// SORT ... STORE over the keys, weighed by the keys its elements name (single letters are
/// keys here) or their hash fields.
/// HyperLogLog writes, with small sparse limits so that promotions to dense happen; over
/// keys that other ops make strings of any bytes, so refusals are exercised too.
fn hll_op() -> impl Strategy<Value = OpKind> {
    let elements = || prop::collection::vec(prop_oneof![value(), field()], 0..40);
    let sparse_max = || prop_oneof![Just(0u64), Just(40), Just(3000)];
    let sub = prop_oneof![
        Just(HllDebug::GetReg),
        Just(HllDebug::Decode),
        Just(HllDebug::Encoding),
        Just(HllDebug::ToDense),
        Just(HllDebug::Unknown(Bytes::from_static(b"nope"))),
    ];
    prop_oneof![
        4 => (key(), elements(), sparse_max())
            .prop_map(|(key, elements, sparse_max)| OpKind::Hll(HllOp::Add { key, elements, sparse_max })),
        2 => key().prop_map(|key| OpKind::Hll(HllOp::Count { key })),
        2 => (key(), prop::collection::vec(key(), 0..3), sparse_max())
            .prop_map(|(dst, keys, sparse_max)| OpKind::Hll(HllOp::Merge { dst, keys, sparse_max })),
        1 => (key(), sub).prop_map(|(key, sub)| OpKind::Hll(HllOp::Debug { key, sub })),
    ]
}

fn sort_op() -> impl Strategy<Value = OpKind> {
    let pattern = || {
        prop::sample::select(&["*", "s:*", "*->f", "s:*->g", "#", "nosort"][..])
            .prop_map(|p| Bytes::from_static(p.as_bytes()))
    };
    let by = prop_oneof![
        Just(SortBy::Element),
        pattern().prop_map(SortBy::Pattern),
        Just(SortBy::NoSort),
    ];
    let spec = (
        key(),
        by,
        -2i64..4,
        -2i64..4,
        prop::collection::vec(pattern(), 0..3),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(key, by, offset, count, gets, desc, alpha)| SortSpec {
            key,
            by,
            offset,
            count,
            gets,
            desc,
            alpha,
        });
    (key(), spec).prop_map(|(dst, sort)| OpKind::Sort(SortStore { dst, sort }))
}

fn store() -> impl Strategy<Value = String> {
    prop::sample::select(&["s", "t", "u"][..]).prop_map(str::to_string)
}

fn kind() -> impl Strategy<Value = OpKind> {
    let set = (
        key(),
        value(),
        prop::option::of(0i64..3000),
        any::<bool>(),
        prop::option::of(prop_oneof![Just(Cond::Nx), Just(Cond::Xx)]),
        any::<bool>(),
    )
        .prop_map(|(key, value, ttl, keep_ttl, cond, get)| {
            OpKind::Set(Set {
                key,
                value,
                // Made absolute when the step runs (see `absolute`).
                expire_at_ms: if keep_ttl { None } else { ttl },
                keep_ttl,
                cond,
                get,
            })
        });
    let pairs = || prop::collection::vec((key(), value()), 1..4);
    prop_oneof![
        4 => set,
        4 => hash_op(),
        4 => set_op(),
        4 => zset_op(),
        4 => list_op(),
        4 => stream_op(),
        2 => sort_op(),
        3 => hll_op(),
        1 => (key(), value()).prop_map(|(key, value)| OpKind::SetNx { key, value }),
        1 => pairs().prop_map(|pairs| OpKind::MSet { pairs }),
        1 => pairs().prop_map(|pairs| OpKind::MSetNx { pairs }),
        1 => key().prop_map(|key| OpKind::GetDel { key }),
        1 => (key(), prop_oneof![
                Just(TtlChange::Keep),
                Just(TtlChange::Persist),
                (0i64..3000).prop_map(TtlChange::At),
                Just(TtlChange::Bad(rialto_keyspace::BadTime::OutOfRange)),
                Just(TtlChange::Bad(rialto_keyspace::BadTime::NotInteger)),
            ]).prop_map(|(key, ttl)| OpKind::GetEx { key, ttl }),
        1 => (key(), value()).prop_map(|(key, value)| OpKind::Append { key, value }),
        1 => (key(), 0u64..20, value()).prop_map(|(key, offset, patch)| OpKind::SetRange { key, offset, patch }),
        2 => (key(), prop_oneof![Just(1i64), Just(-3), Just(i64::MAX), Just(i64::MIN)])
            .prop_map(|(key, delta)| OpKind::IncrBy { key, delta }),
        1 => (key(), prop_oneof![Just("1.5"), Just("-0.25"), Just("x"), Just("1e400")])
            .prop_map(|(key, i)| OpKind::IncrByFloat { key, incr: Bytes::from_static(i.as_bytes()) }),
        2 => prop::collection::vec(key(), 1..4).prop_map(|keys| OpKind::Del { keys }),
        2 => (key(), 0i64..3000, 0u8..16).prop_filter_map("Redis refuses the combination", |(key, t, f)| {
                let cond = ExpireCond { nx: f & 1 != 0, xx: f & 2 != 0, gt: f & 4 != 0, lt: f & 8 != 0 };
                let ok = !(cond.nx && (cond.xx || cond.gt || cond.lt)) && !(cond.gt && cond.lt);
                ok.then_some(OpKind::Expire { key, at_ms: t, cond })
            }),
        1 => key().prop_map(|key| OpKind::Persist { key }),
        1 => (key(), key(), any::<bool>()).prop_map(|(src, dst, nx)| OpKind::Rename { src, dst, nx }),
        1 => (key(), key(), 0u8..2, any::<bool>())
            .prop_map(|(src, dst, dst_db, replace)| OpKind::Copy { src, dst, dst_db, replace }),
        1 => (key(), 0u8..2).prop_map(|(key, dst_db)| OpKind::Move { key, dst_db }),
        2 => (key(), restore_payload(), prop_oneof![Just(Some(0i64)), Just(Some(500)), Just(Some(-1)), Just(None)], any::<bool>(), any::<bool>())
            .prop_map(|(key, payload, ttl_ms, absolute, replace)| OpKind::Restore(RestoreOp { key, ttl_ms, absolute, replace, payload })),
        1 => (key(), 0u64..40, any::<bool>()).prop_map(|(key, offset, on)| OpKind::SetBit { key, offset, on }),
        1 => (prop::sample::select(&[BitOp::And, BitOp::Or, BitOp::Xor, BitOp::Not][..]), key(), prop::collection::vec(key(), 1..3))
            .prop_map(|(op, dst, mut keys)| {
                if op == BitOp::Not {
                    keys.truncate(1);
                }
                OpKind::BitOp { op, dst, keys }
            }),
        1 => (key(), 0u64..30, -300i64..300, prop::sample::select(&[Overflow::Wrap, Overflow::Sat, Overflow::Fail][..]))
            .prop_map(|(key, offset, incr, overflow)| OpKind::BitField {
                key,
                subs: vec![
                    FieldSub::IncrBy { ty: FieldType { signed: true, bits: 8 }, offset, incr, overflow },
                    FieldSub::Get { ty: FieldType { signed: false, bits: 5 }, offset },
                ],
            }),
        1 => Just(OpKind::ExpireDue { entries: Vec::new() }),
        1 => (any::<bool>(), 1u64..4).prop_map(|(all, limit)| OpKind::FlushStep { all, limit }),
        1 => (0u16..16384, 0u16..8192, prop::option::of(key()), 1u64..4).prop_map(|(first, span, from, limit)| {
                // A cursor inside the data range (0x01, db 0, key) or none.
                let from = from.map_or(Bytes::new(), |k| Bytes::from([&[1u8, 0][..], &k[..]].concat()));
                OpKind::FlushSlots { first, last: first.saturating_add(span).min(16383), from, limit }
            }),
        1 => (store(), 0u64..2, codec(), keep()).prop_map(|(name, rewind, compression, keep)| OpKind::Store(StoreOp::Create {
                prefix: Bytes::from(format!("{name}:")),
                name,
                rewind_ms: rewind * 10_000,
                settings: StoreSettings { compression, keep },
            })),
        1 => (store(), codec(), keep()).prop_map(|(name, compression, keep)| OpKind::Store(StoreOp::Configure {
                name,
                settings: StoreSettings { compression, keep },
            })),
        2 => (store(), prop::option::of(0u32..8))
            .prop_map(|(name, to)| OpKind::Store(StoreOp::Rollback { name, to })),
        1 => (store(), 0u32..8)
            .prop_map(|(name, version)| OpKind::Store(StoreOp::RetireLeft { name, version })),
        1 => store().prop_map(|name| OpKind::Store(StoreOp::Delete { name })),
        1 => store().prop_map(|store| OpKind::Store(StoreOp::PushBegin { store })),
        1 => (store(), any::<bool>()).prop_map(|(store, swap)| OpKind::Store(StoreOp::PushEnd {
                store,
                // Swapping in an empty version onto which the streamed writes are replayed.
                swap: swap.then_some((VersionInfo { number: 0, records: 0, bytes: 0, created_ms: 0 }, 0)),
            })),
        1 => (library(), any::<bool>()).prop_map(|(lib, replace)| OpKind::Library(LibraryOp::Put { lib, replace })),
        1 => prop::sample::select(&["la", "lb"][..]).prop_map(|n| OpKind::Library(LibraryOp::Delete { name: n.to_string() })),
        1 => Just(OpKind::Library(LibraryOp::Flush)),
        1 => (0u32..3, library(), any::<bool>()).prop_map(|(partition, lib, replace)| OpKind::PartitionLibrary { partition, op: LibraryOp::Put { lib, replace } }),
        1 => (0u32..3).prop_map(|partition| OpKind::PartitionLibrary { partition, op: LibraryOp::Flush }),
        1 => (prop::collection::vec(library(), 0..3), prop_oneof![
                Just(RestorePolicy::Append), Just(RestorePolicy::Replace), Just(RestorePolicy::Flush)
            ]).prop_map(|(libs, policy)| OpKind::Library(LibraryOp::Restore { libs, policy })),
    ]
}

/// A store's compression setting, or none given.
fn codec() -> impl Strategy<Value = Option<Compression>> {
    prop::option::of(prop_oneof![
        Just(Compression::None),
        Just(Compression::Lz4),
        Just(Compression::Zstd),
    ])
}

/// A store's keep setting, or none given.
fn keep() -> impl Strategy<Value = Option<u32>> {
    prop::option::of(1u32..5)
}

/// A library: two names and three functions, so that names and functions collide.
fn library() -> impl Strategy<Value = LibrarySource> {
    (
        prop::sample::select(&["la", "lb"][..]),
        prop::collection::vec(prop::sample::select(&["f", "g", "h"][..]), 1..3),
    )
        .prop_map(|(name, fs)| LibrarySource {
            name: name.to_string(),
            functions: fs.iter().map(|f| f.to_string()).collect(),
            code: Bytes::from(format!("#!lua name={name}\n-- {}", fs.join(" "))),
        })
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (
            prop_oneof![3 => Just(0i64), 2 => 1i64..400, 1 => 1000i64..4000],
            0u8..2,
            kind(),
        )
            .prop_map(|(advance_ms, db, kind)| Step {
                advance_ms,
                db,
                kind,
            }),
        1..60,
    )
}

/// The step's op at `now`: relative times made absolute; the expiry pass's entries are what
/// the first keyspace's index holds due then (the same entries go to both).
fn absolute(step: &Step, now: i64, a: &Keyspace) -> Op {
    let mut kind = step.kind.clone();
    match &mut kind {
        OpKind::Set(s) => s.expire_at_ms = s.expire_at_ms.map(|t| now + 1 + t),
        OpKind::GetEx {
            ttl: TtlChange::At(t),
            ..
        } => *t += now - 1000,
        OpKind::Expire { at_ms, .. } => *at_ms += now - 1000,
        OpKind::ExpireDue { entries } => {
            *entries = a
                .due_expiries(step.db, now, 100)
                .expect("read the expiry index");
        }
        _ => {}
    }
    Op::new(step.db, now, kind)
}

/// The keys of `db` and those with a TTL, by a walk that counts keys whose time has passed
/// too (as the maintained counts do).
fn walked_count(ks: &Keyspace, db: u8) -> rialto_keyspace::KeyCount {
    let mut c = rialto_keyspace::KeyCount::default();
    ks.walk_keys(db, None, i64::MIN, |_, r| {
        c.keys += 1;
        c.expires += u64::from(r.expire_at_ms.is_some());
        true
    })
    .expect("walk");
    c
}

/// A reply as comparable text: the value, or the error's message.
fn shown(r: rialto_keyspace::Result<Value>) -> String {
    match r {
        Ok(Value::Store(m)) => format!(
            "store {} {:?} {:?} {} {:?} {:?}",
            m.name, m.current, m.kept, m.keep, m.pushing, m.compression
        ),
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("error: {e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_same_ops_give_the_same_replies_and_contents(steps in steps()) {
        let (fa, fb) = (MemFs::new(), MemFs::new());
        let (a, b) = (open(&fa), open(&fb));
        let mut now = 1_700_000_000_000i64;
        for (i, step) in steps.iter().enumerate() {
            now += step.advance_ms;
            let op = absolute(step, now, &a);
            let decoded = Op::decode(&op.encode()).expect("an encoded op decodes");
            prop_assert_eq!(&decoded, &op);
            let (ra, rb) = (shown(a.execute(op.clone())), shown(b.execute(decoded)));
            prop_assert_eq!(ra, rb, "step {}: {:?}", i, op);
            for db in 0..2u8 {
                prop_assert_eq!(a.key_count(db, None), walked_count(&a, db), "step {}: {:?}", i, op);
            }
        }
        // A last expiry pass over each database, later than every expiry.
        for db in 0..2u8 {
            let later = now + 10_000;
            let entries = a.due_expiries(db, later, 1000).unwrap();
            prop_assert_eq!(&entries, &b.due_expiries(db, later, 1000).unwrap());
            let op = Op::new(db, later, OpKind::ExpireDue { entries });
            prop_assert_eq!(shown(a.execute(op.clone())), shown(b.execute(op)));
        }
        prop_assert_eq!(a.digest().unwrap(), b.digest().unwrap());
        // Reclaiming released hashes' fields changes nothing either reads.
        while a.reclaim_pass(3).unwrap() > 0 {}
        while b.reclaim_pass(1000).unwrap() > 0 {}
        prop_assert_eq!(a.digest().unwrap(), b.digest().unwrap());
        let counts: Vec<_> = (0..2u8).map(|db| a.key_count(db, None)).collect();
        a.close().unwrap();
        b.close().unwrap();
        drop(a);
        // The counts are logged with the data: a reopen reads them back, no walk.
        let a = open(&fa);
        for db in 0..2u8 {
            prop_assert_eq!(a.key_count(db, None), counts[db as usize]);
            prop_assert_eq!(a.key_count(db, None), walked_count(&a, db));
        }
        a.close().unwrap();
    }
}
