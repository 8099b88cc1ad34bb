//! Lists against an in-memory model of Redis 7.0's: random pushes (LPUSHX, RPUSHX on missing
//! keys too), pops (count 0, counts past the length), LSET (indexes out of range and not
//! integers), LINSERT, LREM (either sign, 0), LTRIM, LMOVE (onto itself too), LMPOP (over
//! missing and wrong-typed keys), with `list-max-listpack-size` small positive counts or size
//! classes changed at run time, so that lists are packed, large and made large in every op;
//! and deletions, expiry (now, or later: list writes keep it), renames, copies and overwrites
//! by other kinds, with reopens and reclaim passes between them, memtables small enough that
//! the data is flushed and compacted as it goes. After every step each key reads as the model
//! says: its expiry time, every element (LRANGE 0 -1), LLEN, LINDEX at every index from past
//! the head to past the tail, LRANGE spans and LPOS probes; at the end, with every key deleted
//! and the reclaim pass run to its end, the engine holds no element key and no released
//! record.

mod common;

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;
use common::options;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use rialto_io::MemFs;
use rialto_keyspace::{
    list_position, list_span, ExpireCond, Keyspace, List, ListOp, Op, OpKind, Set, SetOp, StoreOp,
    StoreSettings, Value,
};

/// `s:x` is under a store's prefix, where lists stay packed: a large one renamed, copied or
/// moved there is repacked.
const KEYS: &[&str] = &["a", "b", "c", "s:x"];
/// Few distinct elements, so that LINSERT, LREM and LPOS find matches.
const SHORT: &[&str] = &["x", "y", "z", "", "an element of some length"];
/// An expiry time no test reaches (ms).
const FAR: i64 = 4_000_000_000_000;

fn open(fs: &MemFs, max_size: i64) -> Keyspace {
    let ks = Keyspace::open(std::path::Path::new("/ks/db"), options(fs)).unwrap();
    ks.encodings().set_list_max_size(max_size);
    ks
}

#[derive(Debug, Clone)]
enum Step {
    Op(OpKind),
    Reopen,
    Reclaim(usize),
    /// CONFIG SET list-max-listpack-size.
    MaxSize(i64),
}

#[derive(Debug, Clone, PartialEq)]
enum Model {
    Str,
    /// A set (only ever of one member): another collection kind.
    Set,
    List(VecDeque<Bytes>),
}

/// An LPOS probe: element, RANK, COUNT (0: all), MAXLEN (0: all).
type Probe = (Bytes, i64, u64, u64);

fn key() -> impl Strategy<Value = Bytes> {
    prop::sample::select(KEYS).prop_map(|k| Bytes::from_static(k.as_bytes()))
}

fn short() -> impl Strategy<Value = Bytes> {
    prop::sample::select(SHORT).prop_map(|e| Bytes::from_static(e.as_bytes()))
}

/// Mostly short elements; some long enough that two or three pass the smallest size classes
/// (4 KiB, 8 KiB), equal to one another often enough to be found.
fn element() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        8 => short(),
        1 => (prop::sample::select(&[b'x', b'y'][..]), prop::sample::select(&[1500usize, 3000][..]))
            .prop_map(|(c, n)| Bytes::from(vec![c; n])),
    ]
}

/// `list-max-listpack-size`: a small count, or a size class (-5, 64 KiB, keeps these lists
/// packed).
fn max_size() -> impl Strategy<Value = i64> {
    prop_oneof![3 => 1i64..7, 2 => -2i64..=-1, 1 => Just(-5)]
}

/// Indexes Redis's string2ll refuses, and the ends of its range.
const ODD_INDEXES: &[&str] = &[
    "x",
    "",
    "1.0",
    "-0",
    "01",
    "+1",
    " 1",
    "9223372036854775808",
    "-9223372036854775808",
    "9223372036854775807",
];

/// An index as LSET gets it: mostly integers near the ends, some not integers to Redis.
fn index() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        6 => (-7i64..7).prop_map(|i| Bytes::from(i.to_string())),
        1 => prop::sample::select(ODD_INDEXES).prop_map(|s| Bytes::from_static(s.as_bytes())),
    ]
}

/// An LRANGE or LTRIM bound.
fn bound() -> impl Strategy<Value = i64> {
    prop_oneof![8 => -8i64..8, 1 => Just(i64::MIN), 1 => Just(i64::MAX)]
}

fn list_op() -> impl Strategy<Value = ListOp> {
    prop_oneof![
        8 => (key(), any::<bool>(), prop::bool::weighted(0.2), prop::collection::vec(element(), 1..5))
            .prop_map(|(key, left, existing, items)| ListOp::Push { key, left, existing, items }),
        3 => (key(), any::<bool>(), prop::option::of(0u64..6))
            .prop_map(|(key, left, count)| ListOp::Pop { key, left, count }),
        2 => (key(), index(), element()).prop_map(|(key, index, value)| ListOp::Set { key, index, value }),
        2 => (key(), any::<bool>(), short(), element())
            .prop_map(|(key, before, pivot, value)| ListOp::Insert { key, before, pivot, value }),
        3 => (key(), -3i64..=3, prop_oneof![4 => short(), 1 => element()])
            .prop_map(|(key, count, value)| ListOp::Rem { key, count, value }),
        1 => (key(), bound(), bound()).prop_map(|(key, start, stop)| ListOp::Trim { key, start, stop }),
        2 => (key(), key(), any::<bool>(), any::<bool>())
            .prop_map(|(src, dst, from_left, to_left)| ListOp::Move { src, dst, from_left, to_left }),
        2 => (prop::collection::vec(key(), 1..4), any::<bool>(), prop::option::of(1u64..6))
            .prop_map(|(keys, left, count)| ListOp::MPop { keys, left, count }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        40 => list_op().prop_map(|l| Step::Op(OpKind::List(l))),
        1 => key().prop_map(|key| Step::Op(OpKind::Del { keys: vec![key] })),
        1 => (key(), prop::sample::select(&[1, FAR, FAR + 1000][..]))
            .prop_map(|(key, at_ms)| Step::Op(OpKind::Expire { key, at_ms, cond: ExpireCond::default() })),
        1 => (key(), key()).prop_map(|(src, dst)| Step::Op(OpKind::Rename { src, dst, nx: false })),
        1 => (key(), key(), any::<bool>()).prop_filter("COPY to itself is refused before the op", |(s, d, _)| s != d)
            .prop_map(|(src, dst, replace)| Step::Op(OpKind::Copy { src, dst, dst_db: 0, replace })),
        1 => key().prop_map(|key| Step::Op(OpKind::Set(Set {
            key,
            value: Bytes::from_static(b"str"),
            expire_at_ms: None,
            keep_ttl: false,
            cond: None,
            get: false,
        }))),
        1 => key().prop_map(|key| Step::Op(OpKind::Sets(SetOp::Add {
            key,
            members: vec![Bytes::from_static(b"m")],
        }))),
        1 => Just(Step::Reopen),
        1 => (1usize..20).prop_map(Step::Reclaim),
        1 => max_size().prop_map(Step::MaxSize),
    ]
}

/// LPOS probes and LRANGE spans read after a step.
fn probes() -> impl Strategy<Value = (Vec<Probe>, Vec<(i64, i64)>)> {
    let rank = prop_oneof![6 => 1i64..4, 6 => -3i64..0, 1 => Just(i64::MAX), 1 => Just(-i64::MAX)];
    let probe = (
        element(),
        rank,
        0u64..4,
        prop_oneof![2 => Just(0u64), 2 => 1u64..5, 1 => Just(u64::MAX)],
    );
    (
        prop::collection::vec(probe, 3),
        prop::collection::vec((bound(), bound()), 2),
    )
}

fn show(v: Value) -> String {
    format!("{v:?}")
}

fn bulks(items: impl IntoIterator<Item = Bytes>) -> Value {
    Value::Array(items.into_iter().map(Value::Bulk).collect())
}

/// Redis's LRANGE (and LTRIM's kept span): elements `start..=stop` of a list of `len`.
fn redis_span(len: usize, start: i64, stop: i64) -> std::ops::Range<usize> {
    let len = len as i128;
    let (mut start, mut stop) = (i128::from(start), i128::from(stop));
    if start < 0 {
        start += len;
    }
    if stop < 0 {
        stop += len;
    }
    start = start.max(0);
    if start > stop || start >= len {
        return 0..0;
    }
    start as usize..(stop.min(len - 1) + 1) as usize
}

/// Redis's LPOS: the first `count` (0: all) matches from the `rank`th on, scanning from the
/// tail for a negative rank, at most `maxlen` (0: all) elements.
fn redis_lpos(l: &VecDeque<Bytes>, element: &[u8], rank: i64, count: u64, maxlen: u64) -> Vec<u64> {
    let n = l.len();
    let mut matches = 0u64;
    let mut out = Vec::new();
    for scanned in 0..n {
        if maxlen != 0 && scanned as u64 >= maxlen {
            break;
        }
        let at = if rank > 0 { scanned } else { n - 1 - scanned };
        if l[at] != element {
            continue;
        }
        matches += 1;
        if matches >= rank.unsigned_abs() {
            out.push(at as u64);
            if count != 0 && out.len() as u64 >= count {
                break;
            }
        }
    }
    out
}

/// Pops up to `n` from one end of `l`, in the order popped.
fn pop_n(l: &mut VecDeque<Bytes>, left: bool, n: u64) -> Vec<Bytes> {
    let mut out = Vec::new();
    while (out.len() as u64) < n {
        match if left { l.pop_front() } else { l.pop_back() } {
            Some(e) => out.push(e),
            None => break,
        }
    }
    out
}

/// Applies `op` to the model; the reply the keyspace must give.
fn model_list(m: &mut BTreeMap<Bytes, Model>, op: &ListOp) -> String {
    let wrong = || "error: the key holds the wrong kind of value".to_string();
    match op {
        ListOp::Push {
            key,
            left,
            existing,
            items,
        } => {
            if *existing && !m.contains_key(key) {
                return show(Value::Int(0));
            }
            let Model::List(l) = m
                .entry(key.clone())
                .or_insert_with(|| Model::List(VecDeque::new()))
            else {
                return wrong();
            };
            for i in items {
                if *left {
                    l.push_front(i.clone());
                } else {
                    l.push_back(i.clone());
                }
            }
            show(Value::Int(l.len() as i64))
        }
        ListOp::Pop { key, left, count } => match m.get_mut(key) {
            None if count.is_some() => show(Value::NullArray),
            None => show(Value::Null),
            Some(Model::List(l)) => {
                let popped = pop_n(l, *left, count.unwrap_or(1));
                match count {
                    Some(_) => show(bulks(popped)),
                    None => show(Value::Bulk(popped[0].clone())),
                }
            }
            Some(_) => wrong(),
        },
        ListOp::Set { key, index, value } => match m.get_mut(key) {
            None => "error: no such key".into(),
            Some(Model::List(l)) => {
                // Redis's string2ll: canonical decimal integers only.
                let parsed = std::str::from_utf8(index)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .filter(|n| n.to_string().as_bytes() == &index[..]);
                let Some(i) = parsed else {
                    return "error: value is not an integer or out of range".into();
                };
                let len = l.len() as i128;
                let at = if i < 0 {
                    len + i128::from(i)
                } else {
                    i128::from(i)
                };
                if !(0..len).contains(&at) {
                    return "error: index out of range".into();
                }
                l[at as usize] = value.clone();
                show(Value::Ok)
            }
            Some(_) => wrong(),
        },
        ListOp::Insert {
            key,
            before,
            pivot,
            value,
        } => match m.get_mut(key) {
            None => show(Value::Int(0)),
            Some(Model::List(l)) => match l.iter().position(|e| e == pivot) {
                None => show(Value::Int(-1)),
                Some(at) => {
                    l.insert(if *before { at } else { at + 1 }, value.clone());
                    show(Value::Int(l.len() as i64))
                }
            },
            Some(_) => wrong(),
        },
        ListOp::Rem { key, count, value } => match m.get_mut(key) {
            None => show(Value::Int(0)),
            Some(Model::List(l)) => {
                let n = l.len();
                let limit = if *count == 0 {
                    usize::MAX
                } else {
                    count.unsigned_abs() as usize
                };
                let order: Vec<usize> = if *count < 0 {
                    (0..n).rev().collect()
                } else {
                    (0..n).collect()
                };
                let gone: Vec<usize> = order
                    .into_iter()
                    .filter(|&i| l[i] == value)
                    .take(limit)
                    .collect();
                let mut i = 0;
                l.retain(|_| {
                    i += 1;
                    !gone.contains(&(i - 1))
                });
                show(Value::Int(gone.len() as i64))
            }
            Some(_) => wrong(),
        },
        ListOp::Trim { key, start, stop } => match m.get_mut(key) {
            None => show(Value::Ok),
            Some(Model::List(l)) => {
                let keep = redis_span(l.len(), *start, *stop);
                *l = l.range(keep).cloned().collect();
                show(Value::Ok)
            }
            Some(_) => wrong(),
        },
        ListOp::Move {
            src,
            dst,
            from_left,
            to_left,
        } => {
            match m.get(src) {
                None => return show(Value::Null),
                Some(Model::List(_)) => {}
                Some(_) => return wrong(),
            }
            if matches!(m.get(dst), Some(Model::Str | Model::Set)) {
                return wrong();
            }
            let Some(Model::List(l)) = m.get_mut(src) else {
                unreachable!("checked")
            };
            let e = pop_n(l, *from_left, 1).remove(0);
            if l.is_empty() {
                m.remove(src);
            }
            let Model::List(l) = m
                .entry(dst.clone())
                .or_insert_with(|| Model::List(VecDeque::new()))
            else {
                unreachable!("checked")
            };
            if *to_left {
                l.push_front(e.clone());
            } else {
                l.push_back(e.clone());
            }
            show(Value::Bulk(e))
        }
        ListOp::MPop { keys, left, count } => {
            for key in keys {
                match m.get_mut(key) {
                    None => continue,
                    Some(Model::List(l)) => {
                        let popped = pop_n(l, *left, count.unwrap_or(1));
                        // Without a count (BLPOP, BRPOP): the key and the element, flat.
                        let mut out = vec![Value::Bulk(key.clone())];
                        match count {
                            Some(_) => out.push(bulks(popped)),
                            None => out.extend(popped.into_iter().map(Value::Bulk)),
                        }
                        return show(Value::Array(out));
                    }
                    Some(_) => return wrong(),
                }
            }
            show(Value::NullArray)
        }
    }
}

/// The model: each key's value, and the expiry times of those that have one.
#[derive(Debug, Default)]
struct Db {
    keys: BTreeMap<Bytes, Model>,
    ttls: BTreeMap<Bytes, i64>,
}

/// Applies `kind` to the model; the reply the keyspace must give.
fn model_apply(db: &mut Db, kind: &OpKind) -> String {
    let Db { keys: m, ttls } = db;
    let reply = match kind {
        OpKind::List(op) => model_list(m, op),
        OpKind::Del { keys } => {
            let n = keys.iter().filter(|k| m.remove(*k).is_some()).count();
            show(Value::Int(n as i64))
        }
        OpKind::Expire { key, at_ms, .. } => {
            let found = m.contains_key(key);
            if *at_ms < FAR {
                m.remove(key);
            } else if found {
                ttls.insert(key.clone(), *at_ms);
            }
            show(Value::Int(i64::from(found)))
        }
        OpKind::Rename { src, dst, .. } => match m.remove(src) {
            None => "error: no such key".into(),
            Some(v) => {
                m.insert(dst.clone(), v);
                let ttl = ttls.remove(src);
                ttls.remove(dst);
                ttls.extend(ttl.map(|t| (dst.clone(), t)));
                show(Value::Ok)
            }
        },
        OpKind::Copy {
            src, dst, replace, ..
        } => match m.get(src).cloned() {
            Some(v) if *replace || !m.contains_key(dst) => {
                m.insert(dst.clone(), v);
                let ttl = ttls.get(src).copied();
                ttls.remove(dst);
                ttls.extend(ttl.map(|t| (dst.clone(), t)));
                show(Value::Int(1))
            }
            _ => show(Value::Int(0)),
        },
        OpKind::Set(s) => {
            m.insert(s.key.clone(), Model::Str);
            ttls.remove(&s.key);
            show(Value::Ok)
        }
        OpKind::Sets(SetOp::Add { key, .. }) => match m.get(key) {
            None => {
                m.insert(key.clone(), Model::Set);
                show(Value::Int(1))
            }
            Some(Model::Set) => show(Value::Int(0)),
            Some(_) => "error: the key holds the wrong kind of value".into(),
        },
        other => unreachable!("not generated: {other:?}"),
    };
    // A list is deleted with its last element (and a key made again has no expiry).
    m.retain(|_, v| !matches!(v, Model::List(l) if l.is_empty()));
    ttls.retain(|k, _| m.contains_key(k));
    reply
}

fn shown(r: rialto_keyspace::Result<Value>) -> String {
    match r {
        Ok(v) => show(v),
        Err(e) => format!("error: {e}"),
    }
}

/// Reads `key` as a client does and checks it against the model: its expiry time and, for a
/// list, every element, the length,
/// LINDEX at every index (and past both ends), the LRANGE `spans`, the LPOS `probes`.
fn check(
    ks: &Keyspace,
    key: &[u8],
    db: &Db,
    probes: &[Probe],
    spans: &[(i64, i64)],
) -> Result<(), TestCaseError> {
    let want = db.keys.get(key);
    ks.read(0, ks.now_ms(), |k| {
        let at = k.get(key).expect("get").and_then(|r| r.expire_at_ms);
        prop_assert_eq!(at, db.ttls.get(key).copied(), "expiry time");
        let (l, want) = match (List::load(k, key), want) {
            (Err(rialto_keyspace::Error::WrongType), Some(Model::Str | Model::Set)) => {
                return Ok(())
            }
            (Ok(None), None) => return Ok(()),
            (Ok(Some(l)), Some(Model::List(want))) => (l, want),
            (got, want) => {
                return Err(TestCaseError::fail(format!(
                    "read {:?}, the model has {want:?}",
                    got.map(|l| l.map(|l| l.len()))
                )))
            }
        };
        let all = l.all(k).expect("all");
        prop_assert_eq!(&all, &want.iter().cloned().collect::<Vec<_>>());
        prop_assert_eq!(l.len(), want.len() as u64, "LLEN");
        prop_assert!(!l.is_empty());
        let n = want.len() as i64;
        for index in (-n - 2..n + 2).chain([i64::MIN, i64::MAX]) {
            let at = if index < 0 { n + index } else { index };
            let expected = (0..n).contains(&at).then(|| want[at as usize].clone());
            let got = match list_position(l.len(), index) {
                Some(i) => l.get(k, i).expect("get"),
                None => None,
            };
            prop_assert_eq!(got, expected, "LINDEX {}", index);
        }
        for &(start, stop) in spans {
            let expected: Vec<Bytes> = want
                .range(redis_span(want.len(), start, stop))
                .cloned()
                .collect();
            let got = match list_span(l.len(), start, stop) {
                Some((from, to)) => l.range(k, from, to).expect("range"),
                None => Vec::new(),
            };
            prop_assert_eq!(got, expected, "LRANGE {} {}", start, stop);
        }
        for (element, rank, count, maxlen) in probes {
            for e in [element, &want[0]] {
                let got = l
                    .positions(k, e, *rank, *count, *maxlen)
                    .expect("positions");
                let expected = redis_lpos(want, e, *rank, *count, *maxlen);
                prop_assert_eq!(
                    got,
                    expected,
                    "LPOS {:?} RANK {} COUNT {} MAXLEN {}",
                    e,
                    rank,
                    count,
                    maxlen
                );
            }
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn lists_match_a_model(
        first_max in max_size(),
        steps in prop::collection::vec((step(), probes()), 1..150),
    ) {
        let fs = MemFs::new();
        let mut max = first_max;
        let mut ks = open(&fs, max);
        let store = OpKind::Store(StoreOp::Create {
            name: "s".into(),
            prefix: Bytes::from_static(b"s:"),
            rewind_ms: 0,
            settings: StoreSettings::default(),
        });
        ks.execute(Op::new(0, ks.now_ms(), store)).unwrap();
        let mut model = Db::default();
        for (i, (step, (probes, spans))) in steps.iter().enumerate() {
            match step {
                Step::Op(kind) => {
                    let want = model_apply(&mut model, kind);
                    let got = shown(ks.execute(Op::new(0, ks.now_ms(), kind.clone())));
                    prop_assert_eq!(got, want, "step {}: {:?}", i, kind);
                }
                Step::Reopen => {
                    ks.close().unwrap();
                    drop(ks);
                    ks = open(&fs, max);
                }
                Step::Reclaim(budget) => {
                    ks.reclaim_pass(*budget).unwrap();
                }
                Step::MaxSize(m) => {
                    max = *m;
                    ks.encodings().set_list_max_size(max);
                }
            }
            for k in KEYS {
                check(&ks, k.as_bytes(), &model, probes, spans)
                    .map_err(|e| TestCaseError::fail(format!("step {i}, key {k}: {e}")))?;
            }
        }
        // Everything goes; the reclaim pass then leaves no element and no released record.
        let keys = KEYS.iter().map(|k| Bytes::from_static(k.as_bytes())).collect();
        ks.execute(Op::new(0, ks.now_ms(), OpKind::Del { keys })).unwrap();
        while ks.reclaim_pass(7).unwrap() > 0 {}
        prop_assert_eq!(ks.reclaim_pass(7).unwrap(), 0);
        ks.close().unwrap();
        drop(ks);
        prop_assert_eq!(common::keys_under(&fs, &[0x0D]), 0, "element keys left");
        prop_assert_eq!(common::keys_under(&fs, &[0x0E, 0x01]), 0, "released records left");
    }
}

fn exec(ks: &Keyspace, op: ListOp) -> Value {
    ks.execute(Op::new(0, ks.now_ms(), OpKind::List(op)))
        .unwrap()
}

fn elements(ks: &Keyspace, key: &[u8]) -> (Vec<Bytes>, bool) {
    ks.read(0, ks.now_ms(), |k| {
        let l = List::load(k, key).unwrap().expect("a list");
        (l.all(k).unwrap(), l.is_large())
    })
}

fn b(items: &[&str]) -> Vec<Bytes> {
    items.iter().map(|s| Bytes::from(s.to_string())).collect()
}

/// A packed list becomes large at the write that takes it past the count, keeps its order,
/// and LINSERT shifts the shorter side of the large one (near the head and near the tail).
#[test]
fn a_list_grows_large_past_the_count_and_inserts_on_both_sides() {
    let fs = MemFs::new();
    let ks = open(&fs, 3);
    let key = Bytes::from_static(b"l");
    let push = |items: &[&str]| {
        exec(
            &ks,
            ListOp::Push {
                key: key.clone(),
                left: false,
                existing: false,
                items: b(items),
            },
        )
    };
    assert_eq!(push(&["a", "b", "c"]), Value::Int(3));
    assert!(!elements(&ks, b"l").1);
    assert_eq!(push(&["d", "e", "f"]), Value::Int(6));
    assert_eq!(
        elements(&ks, b"l"),
        (b(&["a", "b", "c", "d", "e", "f"]), true)
    );
    let insert = |before: bool, pivot: &str, value: &str| {
        exec(
            &ks,
            ListOp::Insert {
                key: key.clone(),
                before,
                pivot: Bytes::from(pivot.to_string()),
                value: Bytes::from(value.to_string()),
            },
        )
    };
    assert_eq!(insert(false, "a", "1"), Value::Int(7));
    assert_eq!(insert(true, "f", "2"), Value::Int(8));
    assert_eq!(insert(true, "a", "0"), Value::Int(9));
    assert_eq!(insert(false, "f", "3"), Value::Int(10));
    assert_eq!(insert(true, "nope", "4"), Value::Int(-1));
    assert_eq!(
        elements(&ks, b"l").0,
        b(&["0", "a", "1", "b", "c", "d", "e", "2", "f", "3"])
    );
}

/// A large list deleted whole goes at once for the client; its elements are reclaimed after.
#[test]
fn a_deleted_large_list_is_reclaimed_whole() {
    let fs = MemFs::new();
    let ks = open(&fs, 4);
    let key = Bytes::from_static(b"big");
    let items: Vec<_> = (0..300).map(|i| Bytes::from(format!("e{i}"))).collect();
    let pushed = exec(
        &ks,
        ListOp::Push {
            key: key.clone(),
            left: true,
            existing: false,
            items,
        },
    );
    assert_eq!(pushed, Value::Int(300));
    ks.execute(Op::new(0, ks.now_ms(), OpKind::Del { keys: vec![key] }))
        .unwrap();
    let gone = ks.read(0, ks.now_ms(), |k| List::load(k, b"big").unwrap().is_none());
    assert!(gone);
    let mut total = 0;
    loop {
        let n = ks.reclaim_pass(100).unwrap();
        total += n;
        if n == 0 {
            break;
        }
    }
    assert_eq!(total, 300);
}

/// A large list renamed under a store's prefix is repacked there, in order; a write there
/// keeps it packed.
#[test]
fn a_large_list_renamed_under_a_store_prefix_is_repacked() {
    let fs = MemFs::new();
    let ks = open(&fs, 2);
    let store = OpKind::Store(StoreOp::Create {
        name: "s".into(),
        prefix: Bytes::from_static(b"s:"),
        rewind_ms: 0,
        settings: StoreSettings::default(),
    });
    ks.execute(Op::new(0, ks.now_ms(), store)).unwrap();
    let push = |key: &'static [u8], items: &[&str]| {
        exec(
            &ks,
            ListOp::Push {
                key: Bytes::from_static(key),
                left: false,
                existing: false,
                items: b(items),
            },
        )
    };
    push(b"l", &["a", "b", "c", "d"]);
    assert!(elements(&ks, b"l").1);
    let rename = OpKind::Rename {
        src: Bytes::from_static(b"l"),
        dst: Bytes::from_static(b"s:l"),
        nx: false,
    };
    ks.execute(Op::new(0, ks.now_ms(), rename)).unwrap();
    assert_eq!(elements(&ks, b"s:l"), (b(&["a", "b", "c", "d"]), false));
    assert_eq!(push(b"s:l", &["e"]), Value::Int(5));
    assert_eq!(
        elements(&ks, b"s:l"),
        (b(&["a", "b", "c", "d", "e"]), false)
    );
}

/// Lists longer than one engine scan (1024 keys) read, search and change as the model says:
/// LRANGE, LPOS from either end with MAXLEN across scans, LINSERT, LREM, LTRIM, COPY.
#[test]
fn lists_longer_than_a_scan_match_the_model() {
    let fs = MemFs::new();
    let ks = open(&fs, 8);
    let mut model = Db::default();
    let key = || Bytes::from_static(b"a");
    let e = |i: usize| Bytes::from_static([&b"x"[..], b"y", b"z"][i % 3]);
    let mut ops: Vec<OpKind> = (0..5)
        .map(|round| {
            OpKind::List(ListOp::Push {
                key: key(),
                left: round % 2 == 0,
                existing: false,
                items: (0..500).map(|i| e(i + round)).collect(),
            })
        })
        .collect();
    ops.extend([
        OpKind::List(ListOp::Insert {
            key: key(),
            before: true,
            pivot: Bytes::from_static(b"z"),
            value: Bytes::from_static(b"near the head"),
        }),
        OpKind::List(ListOp::Set {
            key: key(),
            index: Bytes::from_static(b"-3"),
            value: Bytes::from_static(b"near the tail"),
        }),
        OpKind::List(ListOp::Insert {
            key: key(),
            before: false,
            pivot: Bytes::from_static(b"near the tail"),
            value: Bytes::from_static(b"y"),
        }),
        OpKind::Copy {
            src: key(),
            dst: Bytes::from_static(b"b"),
            dst_db: 0,
            replace: false,
        },
        OpKind::List(ListOp::Rem {
            key: key(),
            count: -700,
            value: Bytes::from_static(b"y"),
        }),
        OpKind::List(ListOp::Trim {
            key: key(),
            start: 3,
            stop: -1030,
        }),
        OpKind::List(ListOp::Rem {
            key: Bytes::from_static(b"b"),
            count: 0,
            value: Bytes::from_static(b"x"),
        }),
        OpKind::List(ListOp::MPop {
            keys: vec![Bytes::from_static(b"c"), key()],
            left: false,
            count: Some(1100),
        }),
    ]);
    let probes: Vec<Probe> = [
        (1, 0, 0),
        (-1, 0, 0),
        (700, 3, 0),
        (-700, 0, 1500),
        (2, 0, 1100),
        (-2, 5, 2000),
    ]
    .into_iter()
    .map(|(rank, count, maxlen)| (Bytes::from_static(b"x"), rank, count, maxlen))
    .collect();
    let spans = [(0, -1), (1020, 1030), (-1100, -1000)];
    for (i, op) in ops.iter().enumerate() {
        let want = model_apply(&mut model, op);
        assert_eq!(
            shown(ks.execute(Op::new(0, ks.now_ms(), op.clone()))),
            want,
            "op {i}"
        );
        for k in ["a", "b"] {
            check(&ks, k.as_bytes(), &model, &probes, &spans)
                .unwrap_or_else(|e| panic!("op {i}, key {k}: {e}"));
        }
    }
}
