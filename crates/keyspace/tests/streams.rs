//! Streams against an in-memory model: random XADD (explicit and `ms-*` ids, exact MAXLEN and
//! MINID trims), XDEL, XTRIM, consumer groups (create, read new entries and history, ack,
//! delete a consumer, destroy), overwrites by strings and deletions, with reopens and reclaim
//! passes between them and nodes of three entries. After every step each key reads as the
//! model says: every entry in order both ways, the length, the last id, and every group's last
//! id, pending entries (with their consumers and delivery counts) and each consumer's own. At
//! the end, with every key deleted and the reclaim pass run to its end, the engine holds no
//! member key and no released record.

mod common;

use std::collections::BTreeMap;

use bytes::Bytes;
use common::options;
use proptest::prelude::*;
use rialto_io::MemFs;
use rialto_keyspace::{
    AddId, Error, GroupStart, Keyspace, NoGroupForm, NodeLimits, Op, OpKind, Set, Stream,
    StreamError, StreamId, StreamOp, Trim, TrimBy, Value,
};

const KEYS: &[&str] = &["a", "b"];
const GROUPS: &[&str] = &["g", "h"];
const CONSUMERS: &[&str] = &["x", "y"];
const NODE: NodeLimits = NodeLimits {
    max_bytes: 4096,
    max_entries: 3,
};

fn open(fs: &MemFs) -> Keyspace {
    Keyspace::open(std::path::Path::new("/ks/db"), options(fs)).unwrap()
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

#[derive(Debug, Clone)]
enum Step {
    Op(OpKind),
    Reopen,
    Reclaim(usize),
}

#[derive(Debug, Clone, Default, PartialEq)]
struct MGroup {
    last: StreamId,
    /// id -> (consumer, deliveries)
    pel: BTreeMap<StreamId, (Bytes, u64)>,
    consumers: Vec<Bytes>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct MStream {
    entries: BTreeMap<StreamId, Vec<Bytes>>,
    last: StreamId,
    groups: BTreeMap<Bytes, MGroup>,
}

#[derive(Debug, Clone, PartialEq)]
enum Model {
    Str,
    Stream(MStream),
}

fn id() -> impl Strategy<Value = StreamId> {
    (0u64..12, 0u64..3).prop_map(|(ms, seq)| StreamId::new(ms, seq))
}

fn pick(names: &'static [&'static str]) -> impl Strategy<Value = Bytes> {
    prop::sample::select(names).prop_map(b)
}

fn trim() -> impl Strategy<Value = Trim> {
    prop_oneof![
        (0u64..5).prop_map(TrimBy::MaxLen),
        id().prop_map(TrimBy::MinId),
    ]
    .prop_map(|by| Trim {
        by,
        approx: false,
        limit: 0,
    })
}

fn op() -> impl Strategy<Value = OpKind> {
    let key = || pick(KEYS);
    prop_oneof![
        6 => (key(), prop_oneof![id().prop_map(AddId::Exact), (0u64..12).prop_map(AddId::Ms)],
              prop::collection::vec(pick(&["f", "v", "w"]), 1..3), prop::option::weighted(0.2, trim()), any::<bool>())
            .prop_map(|(key, id, mut fields, trim, nomk)| {
                if fields.len() % 2 == 1 {
                    fields.push(b("v"));
                }
                OpKind::Stream(StreamOp::Add { key, nomkstream: nomk && trim.is_none(), id, fields, trim, node: NODE })
            }),
        2 => (key(), prop::collection::vec(id(), 1..3))
            .prop_map(|(key, ids)| OpKind::Stream(StreamOp::Del { key, ids, bad: false })),
        1 => (key(), trim()).prop_map(|(key, trim)| OpKind::Stream(StreamOp::Trim { key, trim, node: NODE })),
        2 => (key(), pick(GROUPS), prop::option::of(id()), any::<bool>())
            .prop_map(|(key, group, start, mkstream)| OpKind::Stream(StreamOp::GroupCreate {
                key, group, start: start.map_or(GroupStart::Last, GroupStart::Id), mkstream, entries_read: -1,
            })),
        4 => (key(), pick(GROUPS), pick(CONSUMERS), 0u64..3, any::<bool>(), prop::option::weighted(0.3, id()))
            .prop_map(|(key, group, consumer, count, noack, from)| OpKind::Stream(StreamOp::ReadGroup {
                group, consumer, streams: vec![(key, from)], count, noack: noack && from.is_none(), served: false, bad: None,
            })),
        3 => (key(), pick(GROUPS), prop::collection::vec(id(), 1..3))
            .prop_map(|(key, group, ids)| OpKind::Stream(StreamOp::Ack { key, group, ids, bad: false })),
        1 => (key(), pick(GROUPS), pick(CONSUMERS))
            .prop_map(|(key, group, consumer)| OpKind::Stream(StreamOp::DelConsumer { key, group, consumer })),
        1 => (key(), pick(GROUPS)).prop_map(|(key, group)| OpKind::Stream(StreamOp::GroupDestroy { key, group })),
        1 => key().prop_map(|key| OpKind::Set(Set {
            key, value: b("s"), expire_at_ms: None, keep_ttl: false, cond: None, get: false,
        })),
        1 => key().prop_map(|k| OpKind::Del { keys: vec![k] }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        20 => op().prop_map(Step::Op),
        1 => Just(Step::Reopen),
        1 => (1usize..50).prop_map(Step::Reclaim),
    ]
}

fn err(e: StreamError) -> String {
    format!("error: {}", Error::Stream(e))
}

fn shown(r: rialto_keyspace::Result<Value>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("error: {e}"),
    }
}

fn entry(id: StreamId, fields: &[Bytes]) -> Value {
    Value::Array(vec![
        Value::Bulk(id.to_bytes()),
        Value::Array(fields.iter().cloned().map(Value::Bulk).collect()),
    ])
}

fn trim_model(s: &mut MStream, t: &Trim) -> usize {
    let before = s.entries.len();
    match t.by {
        TrimBy::MaxLen(n) => {
            while s.entries.len() as u64 > n {
                s.entries.pop_first();
            }
        }
        TrimBy::MinId(min) => s.entries.retain(|id, _| *id >= min),
    }
    before - s.entries.len()
}

/// The model's reply to `kind`, applied to it.
fn model_apply(m: &mut BTreeMap<Bytes, Model>, kind: &OpKind) -> String {
    let wrong = || "error: the key holds the wrong kind of value".to_string();
    match kind {
        OpKind::Set(s) => {
            m.insert(s.key.clone(), Model::Str);
            format!("{:?}", Value::Ok)
        }
        OpKind::Del { keys } => {
            let n = keys.iter().filter(|k| m.remove(*k).is_some()).count();
            format!("{:?}", Value::Int(n as i64))
        }
        OpKind::Stream(op) => {
            let key = op.keys()[0].clone();
            let slot = m.get_mut(&key);
            if matches!(slot, Some(Model::Str)) {
                return wrong();
            }
            let exists = slot.is_some();
            let mut st = match slot {
                Some(Model::Stream(s)) => s.clone(),
                _ => MStream::default(),
            };
            let (reply, keep) = stream_apply(&mut st, exists, op);
            if keep {
                m.insert(key, Model::Stream(st));
            }
            reply
        }
        other => panic!("not generated: {other:?}"),
    }
}

/// The reply, and whether the stream exists afterwards.
fn stream_apply(s: &mut MStream, exists: bool, op: &StreamOp) -> (String, bool) {
    let v = |v: Value| format!("{v:?}");
    match op {
        StreamOp::Add {
            nomkstream,
            id,
            fields,
            trim,
            ..
        } => {
            if !exists && *nomkstream {
                return (v(Value::Null), false);
            }
            let new = match *id {
                AddId::Exact(id) => id,
                AddId::Ms(ms) if ms == s.last.ms => StreamId::new(ms, s.last.seq + 1),
                AddId::Ms(ms) => StreamId::new(ms, 0),
                AddId::Auto => unreachable!(),
            };
            if new <= s.last {
                return (err(StreamError::IdNotGreater), exists);
            }
            s.entries.insert(new, fields.clone());
            s.last = new;
            if let Some(t) = trim {
                trim_model(s, t);
            }
            (v(Value::Bulk(new.to_bytes())), true)
        }
        StreamOp::Del { ids, .. } => {
            if !exists {
                return (v(Value::Int(0)), false);
            }
            let mut n = 0;
            for id in ids {
                n += i64::from(s.entries.remove(id).is_some());
            }
            (v(Value::Int(n)), true)
        }
        StreamOp::Trim { trim, .. } => {
            if !exists {
                return (v(Value::Int(0)), false);
            }
            (v(Value::Int(trim_model(s, trim) as i64)), true)
        }
        StreamOp::GroupCreate {
            key,
            group,
            start,
            mkstream,
            ..
        } => {
            let _ = key;
            if !exists && !mkstream {
                return (err(StreamError::GroupNeedsKey), false);
            }
            if s.groups.contains_key(group) {
                return (err(StreamError::GroupExists), exists);
            }
            let last = match start {
                GroupStart::Id(id) => *id,
                _ => s.last,
            };
            s.groups.insert(
                group.clone(),
                MGroup {
                    last,
                    ..MGroup::default()
                },
            );
            (v(Value::Ok), true)
        }
        StreamOp::ReadGroup {
            group,
            consumer,
            streams,
            count,
            noack,
            ..
        } => {
            let (key, from) = &streams[0];
            let no_group = || {
                format!(
                    "error: {}",
                    Error::Stream(StreamError::NoGroup {
                        key: key.clone(),
                        group: group.clone(),
                        form: NoGroupForm::ReadGroup,
                    })
                )
            };
            if !exists {
                return (no_group(), false);
            }
            let last_live = s.entries.keys().next_back().copied();
            let Some(g) = s.groups.get_mut(group) else {
                return (no_group(), true);
            };
            let serve = from.is_some() || last_live.is_some_and(|top| top > g.last);
            if !serve {
                return (v(Value::NullArray), true);
            }
            if !g.consumers.contains(consumer) {
                g.consumers.push(consumer.clone());
                g.consumers.sort();
            }
            let limit = if *count == 0 {
                usize::MAX
            } else {
                *count as usize
            };
            let mut out = Vec::new();
            match from {
                Some(after) => {
                    let start = after.next().unwrap_or(StreamId::MAX);
                    let mine: Vec<StreamId> = g
                        .pel
                        .iter()
                        .filter(|(id, (c, _))| **id >= start && c == consumer)
                        .map(|(id, _)| *id)
                        .take(limit)
                        .collect();
                    for id in mine {
                        match s.entries.get(&id) {
                            None => out.push(Value::Array(vec![
                                Value::Bulk(id.to_bytes()),
                                Value::NullArray,
                            ])),
                            Some(f) => {
                                if let Some(p) = g.pel.get_mut(&id) {
                                    p.1 += 1;
                                }
                                out.push(entry(id, f));
                            }
                        }
                    }
                }
                None => {
                    let new: Vec<(StreamId, Vec<Bytes>)> = s
                        .entries
                        .range(g.last.next().unwrap_or(StreamId::MAX)..)
                        .take(limit)
                        .map(|(id, f)| (*id, f.clone()))
                        .collect();
                    for (id, f) in new {
                        g.last = g.last.max(id);
                        if !noack {
                            g.pel.insert(id, (consumer.clone(), 1));
                        }
                        out.push(entry(id, &f));
                    }
                }
            }
            (
                v(Value::Map(vec![(
                    Value::Bulk(key.clone()),
                    Value::Array(out),
                )])),
                true,
            )
        }
        StreamOp::Ack { group, ids, .. } => {
            if !exists {
                return (v(Value::Int(0)), false);
            }
            let Some(g) = s.groups.get_mut(group) else {
                return (v(Value::Int(0)), true);
            };
            let mut n = 0;
            for id in ids {
                n += i64::from(g.pel.remove(id).is_some());
            }
            (v(Value::Int(n)), true)
        }
        StreamOp::DelConsumer {
            key,
            group,
            consumer,
        } => {
            if !exists {
                return (err(StreamError::GroupNeedsKey), false);
            }
            let Some(g) = s.groups.get_mut(group) else {
                let e = StreamError::NoGroup {
                    key: key.clone(),
                    group: group.clone(),
                    form: NoGroupForm::ForKey,
                };
                return (err(e), true);
            };
            if !g.consumers.contains(consumer) {
                return (v(Value::Int(0)), true);
            }
            g.consumers.retain(|c| c != consumer);
            let before = g.pel.len();
            g.pel.retain(|_, (c, _)| c != consumer);
            (v(Value::Int((before - g.pel.len()) as i64)), true)
        }
        StreamOp::GroupDestroy { group, .. } => {
            if !exists {
                return (err(StreamError::GroupNeedsKey), false);
            }
            (
                v(Value::Int(i64::from(s.groups.remove(group).is_some()))),
                true,
            )
        }
        other => panic!("not generated: {other:?}"),
    }
}

/// What the keyspace holds at `key`, read as a client reads it, with its invariants checked.
fn read(ks: &Keyspace, key: &[u8]) -> Option<Model> {
    ks.read(0, ks.now_ms(), |k| match Stream::load(k, key) {
        Err(Error::WrongType) => Some(Model::Str),
        Err(e) => panic!("read failed: {e}"),
        Ok(None) => None,
        Ok(Some(s)) => {
            let all = s.range(k, StreamId::MIN, StreamId::MAX, 0, false).unwrap();
            assert_eq!(s.len(), all.len() as u64, "XLEN against the entries");
            let mut rev = s.range(k, StreamId::MIN, StreamId::MAX, 0, true).unwrap();
            rev.reverse();
            assert_eq!(rev, all, "both directions");
            if let Some(first) = all.first() {
                assert_eq!(s.meta.first, first.id, "first id");
                let one = s.range(k, first.id, first.id, 0, false).unwrap();
                assert_eq!(one.len(), 1);
            }
            let mut groups = BTreeMap::new();
            for g in &s.meta.groups {
                let pel = s
                    .pending(k, g.gid, None, StreamId::MIN, StreamId::MAX, 0)
                    .unwrap();
                assert_eq!(g.pending, pel.len() as u64, "group pending count");
                let mut mpel = BTreeMap::new();
                for p in &pel {
                    let name = g.name_of(p.cid).expect("pending entry's consumer").clone();
                    mpel.insert(p.id, (name, p.deliveries));
                }
                for c in &g.consumers {
                    let own = s
                        .pending(k, g.gid, Some(c.cid), StreamId::MIN, StreamId::MAX, 0)
                        .unwrap();
                    assert_eq!(c.pending, own.len() as u64, "consumer pending count");
                    for p in own {
                        assert_eq!(mpel.get(&p.id).map(|x| &x.0), Some(&c.name));
                    }
                }
                groups.insert(
                    g.name.clone(),
                    MGroup {
                        last: g.last,
                        pel: mpel,
                        consumers: g.consumers.iter().map(|c| c.name.clone()).collect(),
                    },
                );
            }
            Some(Model::Stream(MStream {
                entries: all.into_iter().map(|e| (e.id, e.fields)).collect(),
                last: s.meta.last,
                groups,
            }))
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn streams_match_a_model(steps in prop::collection::vec(step(), 1..100)) {
        let fs = MemFs::new();
        let mut ks = open(&fs);
        let mut model = BTreeMap::new();
        for (i, step) in steps.iter().enumerate() {
            match step {
                Step::Op(kind) => {
                    let want = model_apply(&mut model, kind);
                    let got = shown(ks.execute(Op::new(0, ks.now_ms(), kind.clone())));
                    prop_assert_eq!(got, want, "step {}: {:?}", i, kind);
                }
                Step::Reopen => {
                    ks.close().unwrap();
                    drop(ks);
                    ks = open(&fs);
                }
                Step::Reclaim(budget) => {
                    ks.reclaim_pass(*budget).unwrap();
                }
            }
            for k in KEYS {
                prop_assert_eq!(read(&ks, k.as_bytes()), model.get(k.as_bytes()).cloned(), "step {}, key {}", i, k);
            }
        }
        let keys = KEYS.iter().map(|k| b(k)).collect();
        ks.execute(Op::new(0, ks.now_ms(), OpKind::Del { keys })).unwrap();
        while ks.reclaim_pass(7).unwrap() > 0 {}
        prop_assert_eq!(ks.reclaim_pass(7).unwrap(), 0);
        ks.close().unwrap();
        drop(ks);
        prop_assert_eq!(common::keys_under(&fs, &[0x0D]), 0, "member keys left");
        prop_assert_eq!(common::keys_under(&fs, &[0x0E, 0x01]), 0, "released records left");
    }
}

/// A stream drained by XDEL in scattered order moves to a new version once its deletions
/// outnumber its keys, and reads stay within a bounded number of engine entries.
#[test]
fn deletions_move_a_stream_to_a_new_version() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let key = b("big");
    for i in 1..=2000u64 {
        let op = OpKind::Stream(StreamOp::Add {
            key: key.clone(),
            nomkstream: false,
            id: AddId::Exact(StreamId::new(i, 0)),
            fields: vec![b("f"), b("v")],
            trim: None,
            node: NodeLimits::default(),
        });
        ks.execute(Op::new(0, ks.now_ms(), op)).unwrap();
    }
    let version = |ks: &Keyspace| {
        ks.read(0, ks.now_ms(), |k| {
            Stream::load(k, b"big").unwrap().unwrap().meta.version
        })
    };
    let v0 = version(&ks);
    let ids: Vec<StreamId> = (1..=2000u64)
        .filter(|i| i % 7 != 0)
        .map(|i| StreamId::new((i * 13) % 2000 + 1, 0))
        .collect();
    for chunk in ids.chunks(100) {
        let op = OpKind::Stream(StreamOp::Del {
            key: key.clone(),
            ids: chunk.to_vec(),
            bad: false,
        });
        ks.execute(Op::new(0, ks.now_ms(), op)).unwrap();
    }
    let (len, entries) = ks.read(0, ks.now_ms(), |k| {
        let s = Stream::load(k, b"big").unwrap().unwrap();
        (
            s.len(),
            s.range(k, StreamId::MIN, StreamId::MAX, 0, false)
                .unwrap()
                .len() as u64,
        )
    });
    assert_eq!(len, entries);
    assert!(version(&ks) != v0, "the stream moved to a new version");
}
