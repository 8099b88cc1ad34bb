//! Hashes against an in-memory model: random hash writes (packed ones growing large past
//! small thresholds), deletions, expiry, renames, copies and overwrites by strings, with reopens and
//! reclaim passes between them, and memtables small enough that the data is flushed and
//! compacted as it goes. After every step each key reads as the model says (HLEN, every
//! field, WRONGTYPE for a string); at the end, with every key deleted and the reclaim pass
//! run to its end, the engine holds no member key and no released record.

mod common;

use std::collections::BTreeMap;

use bytes::Bytes;
use common::options;
use proptest::prelude::*;
use rialto_io::MemFs;
use rialto_keyspace::{ExpireCond, Hash, HashOp, Keyspace, Op, OpKind, Set, Value};

const KEYS: &[&str] = &["a", "b", "c"];
const FIELDS: &[&str] = &["f", "g", "h", "i", "j", "k"];

fn open(fs: &MemFs) -> Keyspace {
    let ks = Keyspace::open(std::path::Path::new("/ks/db"), options(fs)).unwrap();
    ks.encodings().set_hash_max_entries(3);
    ks.encodings().set_hash_max_value(40);
    ks
}

#[derive(Debug, Clone)]
enum Step {
    Op(OpKind),
    Reopen,
    Reclaim(usize),
}

#[derive(Debug, Clone, PartialEq)]
enum Model {
    Str,
    Hash(BTreeMap<Bytes, Bytes>),
}

fn key() -> impl Strategy<Value = Bytes> {
    prop::sample::select(KEYS).prop_map(|k| Bytes::from_static(k.as_bytes()))
}

fn field() -> impl Strategy<Value = Bytes> {
    prop::sample::select(FIELDS).prop_map(|f| Bytes::from_static(f.as_bytes()))
}

fn value() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        Just(Bytes::from_static(b"1")),
        "[a-z]{0,8}".prop_map(Bytes::from),
        // Longer than the packed value threshold: the hash becomes large.
        "[a-z]{41,300}".prop_map(Bytes::from),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (key(), prop::collection::vec((field(), value()), 1..4))
            .prop_map(|(key, pairs)| Step::Op(OpKind::Hash(HashOp::Set { key, pairs, ok: false }))),
        1 => (key(), field(), value())
            .prop_map(|(key, field, value)| Step::Op(OpKind::Hash(HashOp::SetNx { key, field, value }))),
        3 => (key(), prop::collection::vec(field(), 1..4))
            .prop_map(|(key, fields)| Step::Op(OpKind::Hash(HashOp::Del { key, fields }))),
        1 => (key(), field(), -3i64..3)
            .prop_map(|(key, field, delta)| Step::Op(OpKind::Hash(HashOp::IncrBy { key, field, delta }))),
        1 => key().prop_map(|key| Step::Op(OpKind::Del { keys: vec![key] })),
        1 => key().prop_map(|key| Step::Op(OpKind::Expire { key, at_ms: 1, cond: ExpireCond::default() })),
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
        1 => Just(Step::Reopen),
        1 => (1usize..20).prop_map(Step::Reclaim),
    ]
}

/// Applies `kind` to the model; the reply the keyspace must give.
fn model_apply(m: &mut BTreeMap<Bytes, Model>, kind: &OpKind) -> String {
    let wrong = || "error: the key holds the wrong kind of value".to_string();
    match kind {
        OpKind::Hash(HashOp::Set { key, pairs, .. }) => {
            let h = match m
                .entry(key.clone())
                .or_insert_with(|| Model::Hash(BTreeMap::new()))
            {
                Model::Hash(h) => h,
                Model::Str => return wrong(),
            };
            let mut added = 0;
            for (f, v) in pairs {
                added += i64::from(h.insert(f.clone(), v.clone()).is_none());
            }
            format!("{:?}", Value::Int(added))
        }
        OpKind::Hash(HashOp::SetNx { key, field, value }) => {
            let h = match m
                .entry(key.clone())
                .or_insert_with(|| Model::Hash(BTreeMap::new()))
            {
                Model::Hash(h) => h,
                Model::Str => return wrong(),
            };
            let new = !h.contains_key(field);
            if new {
                h.insert(field.clone(), value.clone());
            }
            format!("{:?}", Value::Int(i64::from(new)))
        }
        OpKind::Hash(HashOp::Del { key, fields }) => {
            let n = match m.get_mut(key) {
                None => 0,
                Some(Model::Str) => return wrong(),
                Some(Model::Hash(h)) => fields.iter().filter(|f| h.remove(*f).is_some()).count(),
            };
            if matches!(m.get(key), Some(Model::Hash(h)) if h.is_empty()) {
                m.remove(key);
            }
            format!("{:?}", Value::Int(n as i64))
        }
        OpKind::Hash(HashOp::IncrBy { key, field, delta }) => {
            let h = match m
                .entry(key.clone())
                .or_insert_with(|| Model::Hash(BTreeMap::new()))
            {
                Model::Hash(h) => h,
                Model::Str => return wrong(),
            };
            let cur = match h.get(field) {
                None => 0,
                Some(v) => match std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                {
                    Some(n) if n.to_string().as_bytes() == &v[..] => n,
                    _ => {
                        if h.is_empty() {
                            m.remove(key);
                        }
                        return "error: hash value is not an integer".into();
                    }
                },
            };
            let new = cur + delta;
            h.insert(field.clone(), Bytes::from(new.to_string()));
            format!("{:?}", Value::Int(new))
        }
        OpKind::Del { keys } => {
            let n = keys.iter().filter(|k| m.remove(*k).is_some()).count();
            format!("{:?}", Value::Int(n as i64))
        }
        OpKind::Expire { key, .. } => {
            format!("{:?}", Value::Int(i64::from(m.remove(key).is_some())))
        }
        OpKind::Rename { src, dst, .. } => match m.remove(src) {
            None => "error: no such key".into(),
            Some(v) => {
                m.insert(dst.clone(), v);
                format!("{:?}", Value::Ok)
            }
        },
        OpKind::Copy {
            src, dst, replace, ..
        } => {
            let Some(v) = m.get(src).cloned() else {
                return format!("{:?}", Value::Int(0));
            };
            if m.contains_key(dst) && !replace {
                return format!("{:?}", Value::Int(0));
            }
            m.insert(dst.clone(), v);
            format!("{:?}", Value::Int(1))
        }
        OpKind::Set(s) => {
            m.insert(s.key.clone(), Model::Str);
            format!("{:?}", Value::Ok)
        }
        other => unreachable!("not generated: {other:?}"),
    }
}

fn shown(r: rialto_keyspace::Result<Value>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("error: {e}"),
    }
}

/// What the keyspace holds at `key`, read as a client reads it.
fn read(ks: &Keyspace, key: &[u8]) -> Option<Model> {
    ks.read(0, ks.now_ms(), |k| match Hash::load(k, key) {
        Err(rialto_keyspace::Error::WrongType) => Some(Model::Str),
        Err(e) => panic!("read failed: {e}"),
        Ok(None) => None,
        Ok(Some(h)) => {
            let entries = h.entries(k).expect("entries");
            assert_eq!(h.len(), entries.len() as u64, "HLEN against the fields");
            for (f, v) in &entries {
                assert_eq!(h.get(k, f).expect("get").as_ref(), Some(v));
            }
            assert_eq!(h.get(k, b"absent").expect("get"), None);
            Some(Model::Hash(entries.into_iter().collect()))
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn hashes_match_a_model(steps in prop::collection::vec(step(), 1..80)) {
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
        // Everything goes; the reclaim pass then leaves no member and no released record.
        let keys = KEYS.iter().map(|k| Bytes::from_static(k.as_bytes())).collect();
        ks.execute(Op::new(0, ks.now_ms(), OpKind::Del { keys })).unwrap();
        while ks.reclaim_pass(7).unwrap() > 0 {}
        prop_assert_eq!(ks.reclaim_pass(7).unwrap(), 0);
        ks.close().unwrap();
        drop(ks);
        prop_assert_eq!(common::keys_under(&fs, &[0x0D]), 0, "member keys left");
        prop_assert_eq!(common::keys_under(&fs, &[0x0E, 0x01]), 0, "released records left");
    }
}

/// A large hash deleted whole goes at once for the client; its members stay until the
/// reclaim pass, which takes them in bounded steps, and a new hash at the same key never sees
/// them.
#[test]
fn a_deleted_large_hash_is_gone_at_once_and_reclaimed_in_steps() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let key = Bytes::from_static(b"big");
    let pairs: Vec<_> = (0..500)
        .map(|i| {
            (
                Bytes::from(format!("field{i}")),
                Bytes::from(format!("value{i}")),
            )
        })
        .collect();
    let set = |pairs: Vec<(Bytes, Bytes)>| {
        ks.execute(Op::new(
            0,
            ks.now_ms(),
            OpKind::Hash(HashOp::Set {
                key: key.clone(),
                pairs,
                ok: false,
            }),
        ))
        .unwrap()
    };
    assert_eq!(set(pairs), Value::Int(500));
    assert_eq!(
        ks.execute(Op::new(
            0,
            ks.now_ms(),
            OpKind::Del {
                keys: vec![key.clone()]
            }
        ))
        .unwrap(),
        Value::Int(1)
    );
    assert_eq!(read(&ks, b"big"), None);
    // A new hash at the key starts empty.
    set(vec![(
        Bytes::from_static(b"field1"),
        Bytes::from_static(b"new"),
    )]);
    let Some(Model::Hash(h)) = read(&ks, b"big") else {
        panic!("a hash")
    };
    assert_eq!(h.len(), 1);
    let mut steps = 0;
    let mut total = 0;
    loop {
        let n = ks.reclaim_pass(100).unwrap();
        assert!(n <= 100);
        total += n;
        if n == 0 {
            break;
        }
        steps += 1;
    }
    assert_eq!(total, 500);
    assert_eq!(steps, 5);
    let Some(Model::Hash(h)) = read(&ks, b"big") else {
        panic!("a hash")
    };
    assert_eq!(h.get(&b"field1"[..]).map(|v| &v[..]), Some(&b"new"[..]));
}

/// As Redis converts before it writes: a value past hash-max-listpack-value makes the hash
/// large even when a later pair of the same HSET overwrites it.
#[test]
fn a_long_value_overwritten_in_the_same_hset_still_makes_the_hash_large() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let f = Bytes::from_static(b"f");
    ks.execute(Op::new(
        0,
        ks.now_ms(),
        OpKind::Hash(HashOp::Set {
            key: Bytes::from_static(b"h"),
            pairs: vec![
                (f.clone(), Bytes::from(vec![b'x'; 100])),
                (f, Bytes::from_static(b"short")),
            ],
            ok: false,
        }),
    ))
    .unwrap();
    let large = ks.read(0, ks.now_ms(), |k| {
        Hash::load(k, b"h").unwrap().unwrap().is_large()
    });
    assert!(large);
}

/// Regression: a large hash's deleted fields stayed as tombstones among its keys, which
/// every read of the whole hash (HGETALL, HRANDFIELD, HSCAN) stepped over until a
/// compaction dropped them, so reading a hash emptied by HDEL cost its past size. Now a
/// hash whose deletions outnumber its fields moves to a new version, and a whole read
/// examines at most about three entries per field left (and a page reads one key past its
/// end, not a whole chunk).
#[test]
fn reading_a_hash_emptied_by_hdel_examines_entries_in_proportion_to_its_fields() {
    const N: usize = 20_000;
    let fs = MemFs::new();
    let mut o = options(&fs);
    o.engine.write_buffer_size = 64 << 20;
    o.engine.max_background_jobs = 0;
    let ks = Keyspace::open(std::path::Path::new("/ks/db"), o).unwrap();
    let key = Bytes::from_static(b"h");
    let field = |i: usize| Bytes::from(format!("field-{i}"));
    for start in (0..N).step_by(1000) {
        let pairs = (start..start + 1000)
            .map(|i| (field(i), field(i)))
            .collect();
        let op = OpKind::Hash(HashOp::Set {
            key: key.clone(),
            pairs,
            ok: false,
        });
        ks.execute(Op::new(0, ks.now_ms(), op)).unwrap();
    }
    // Deleted in a scattered order, 200 at a time.
    let order: Vec<usize> = (0..N).map(|i| i * 7_919 % N).collect();
    for (round, doomed) in order.chunks(200).enumerate() {
        let fields = doomed.iter().map(|&i| field(i)).collect();
        let op = OpKind::Hash(HashOp::Del {
            key: key.clone(),
            fields,
        });
        ks.execute(Op::new(0, ks.now_ms(), op)).unwrap();
        let left = N - 200 * (round + 1);
        let before = ks.engine_stats().iter_entries_examined;
        let n = ks.read(0, ks.now_ms(), |k| match Hash::load(k, b"h").unwrap() {
            Some(h) => h.entries(k).unwrap().len(),
            None => 0,
        });
        let work = ks.engine_stats().iter_entries_examined - before;
        assert_eq!(n, left);
        // Each field left, each deleted one's tombstone and hidden put (no more deleted than
        // left), and one key more per page.
        let bound = 3 * left as u64 + left as u64 / 256 + 64;
        assert!(work <= bound, "{work} entries for {left} fields");
    }
}

/// Regression: a page of a large collection read a whole chunk (1,024 keys) past its end to
/// find where it ends, so reading a hash whole read every field about twice.
#[test]
fn a_whole_read_of_a_hash_examines_each_field_once() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let pairs = (0..10_000)
        .map(|i| (Bytes::from(format!("f{i}")), Bytes::from_static(b"v")))
        .collect();
    let op = OpKind::Hash(HashOp::Set {
        key: Bytes::from_static(b"h"),
        pairs,
        ok: false,
    });
    ks.execute(Op::new(0, ks.now_ms(), op)).unwrap();
    let before = ks.engine_stats().iter_entries_examined;
    let n = ks.read(0, ks.now_ms(), |k| {
        Hash::load(k, b"h")
            .unwrap()
            .unwrap()
            .entries(k)
            .unwrap()
            .len()
    });
    let work = ks.engine_stats().iter_entries_examined - before;
    assert_eq!(n, 10_000);
    assert!(
        work <= 10_000 + 10_000 / 512 + 16,
        "{work} entries for 10,000 fields"
    );
}
