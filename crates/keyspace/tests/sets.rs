//! Sets against an in-memory model: random set writes (packed ones leaving intset mode and
//! growing large past small thresholds), pops, moves, the STORE forms, deletions, expiry,
//! renames and overwrites by strings, with reopens and reclaim passes between them. After
//! every step each key reads as the model says (SCARD, every member, a paged scan, WRONGTYPE
//! for a string); at the end, with every key deleted and the reclaim pass run to its end, the
//! engine holds no member key and no released record.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use common::options;
use proptest::prelude::*;
use rialto_io::MemFs;
use rialto_keyspace::{ExpireCond, Keyspace, Op, OpKind, Set, SetAlgebra, SetOp, SetValue, Value};

const KEYS: &[&str] = &["a", "b", "c"];
const MEMBERS: &[&str] = &["1", "2", "3", "-7", "10", "x", "y", "long-member"];

fn open(fs: &MemFs) -> Keyspace {
    let ks = Keyspace::open(std::path::Path::new("/ks/db"), options(fs)).unwrap();
    let e = ks.encodings();
    e.set_set_max_intset_entries(4);
    e.set_set_max_listpack_entries(3);
    e.set_set_max_listpack_value(5);
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
    Set(BTreeSet<Bytes>),
}

fn key() -> impl Strategy<Value = Bytes> {
    prop::sample::select(KEYS).prop_map(|k| Bytes::from_static(k.as_bytes()))
}

fn member() -> impl Strategy<Value = Bytes> {
    prop::sample::select(MEMBERS).prop_map(|m| Bytes::from_static(m.as_bytes()))
}

fn members() -> impl Strategy<Value = Vec<Bytes>> {
    prop::collection::vec(member(), 1..5)
}

fn algebra() -> impl Strategy<Value = SetAlgebra> {
    prop::sample::select(&[SetAlgebra::Inter, SetAlgebra::Union, SetAlgebra::Diff][..])
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (key(), members()).prop_map(|(key, members)| Step::Op(OpKind::Sets(SetOp::Add { key, members }))),
        3 => (key(), members()).prop_map(|(key, members)| Step::Op(OpKind::Sets(SetOp::Rem { key, members }))),
        2 => (key(), prop::option::of(0u64..5), any::<u64>())
            .prop_map(|(key, count, seed)| Step::Op(OpKind::Sets(SetOp::Pop { key, count, seed }))),
        2 => (key(), key(), member())
            .prop_map(|(src, dst, member)| Step::Op(OpKind::Sets(SetOp::Move { src, dst, member }))),
        2 => (algebra(), key(), prop::collection::vec(key(), 1..4))
            .prop_map(|(algebra, dst, keys)| Step::Op(OpKind::Sets(SetOp::Store { algebra, dst, keys }))),
        1 => key().prop_map(|key| Step::Op(OpKind::Del { keys: vec![key] })),
        1 => key().prop_map(|key| Step::Op(OpKind::Expire { key, at_ms: 1, cond: ExpireCond::default() })),
        1 => (key(), key()).prop_map(|(src, dst)| Step::Op(OpKind::Rename { src, dst, nx: false })),
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

const WRONG: &str = "error: the key holds the wrong kind of value";

/// The set at `key` in the model: `Err` for a string.
fn set_of(m: &BTreeMap<Bytes, Model>, key: &Bytes) -> Result<Option<BTreeSet<Bytes>>, ()> {
    match m.get(key) {
        None => Ok(None),
        Some(Model::Str) => Err(()),
        Some(Model::Set(s)) => Ok(Some(s.clone())),
    }
}

fn put(m: &mut BTreeMap<Bytes, Model>, key: &Bytes, s: BTreeSet<Bytes>) {
    if s.is_empty() {
        m.remove(key);
    } else {
        m.insert(key.clone(), Model::Set(s));
    }
}

/// Applies `kind` to the model given the keyspace's reply `got` (for SPOP, whose members the
/// seed picks); the reply the keyspace must give.
fn model_apply(
    m: &mut BTreeMap<Bytes, Model>,
    kind: &OpKind,
    got: &Result<Value, String>,
) -> String {
    let int = |n: usize| format!("{:?}", Value::Int(n as i64));
    match kind {
        OpKind::Sets(SetOp::Add { key, members }) => {
            let Ok(s) = set_of(m, key) else {
                return WRONG.into();
            };
            let mut s = s.unwrap_or_default();
            let n = members.iter().filter(|x| s.insert((*x).clone())).count();
            put(m, key, s);
            int(n)
        }
        OpKind::Sets(SetOp::Rem { key, members }) => {
            let Ok(s) = set_of(m, key) else {
                return WRONG.into();
            };
            let mut s = s.unwrap_or_default();
            let n = members.iter().filter(|x| s.remove(*x)).count();
            put(m, key, s);
            int(n)
        }
        OpKind::Sets(SetOp::Pop { key, count, .. }) => {
            let Ok(s) = set_of(m, key) else {
                return WRONG.into();
            };
            let mut s = s.unwrap_or_default();
            let popped: Vec<Bytes> = match got {
                Ok(Value::Bulk(b)) => vec![b.clone()],
                Ok(Value::Members(ms)) => ms.clone(),
                _ => Vec::new(),
            };
            let want_n = match count {
                None => s.len().min(1),
                Some(n) => s.len().min(*n as usize),
            };
            assert_eq!(popped.len(), want_n, "SPOP's count");
            for p in &popped {
                assert!(s.remove(p), "SPOP gave {p:?}, not a member");
            }
            put(m, key, s);
            match (count, popped.first()) {
                (None, None) => format!("{:?}", Value::Null),
                (None, Some(b)) => format!("{:?}", Value::Bulk(b.clone())),
                (Some(_), _) => format!("{:?}", Value::Members(popped)),
            }
        }
        OpKind::Sets(SetOp::Move { src, dst, member }) => {
            let Ok(from) = set_of(m, src) else {
                return WRONG.into();
            };
            let Some(mut from) = from else { return int(0) };
            let Ok(to) = set_of(m, dst) else {
                return WRONG.into();
            };
            if src == dst {
                return int(usize::from(from.contains(member)));
            }
            if !from.remove(member) {
                return int(0);
            }
            let mut to = to.unwrap_or_default();
            to.insert(member.clone());
            put(m, src, from);
            put(m, dst, to);
            int(1)
        }
        OpKind::Sets(SetOp::Store { algebra, dst, keys }) => {
            let mut sets = Vec::new();
            for k in keys {
                match set_of(m, k) {
                    Err(()) => return WRONG.into(),
                    Ok(s) => sets.push(s),
                }
            }
            let result: BTreeSet<Bytes> = match algebra {
                SetAlgebra::Inter => {
                    if sets.iter().any(|s| s.is_none()) {
                        BTreeSet::new()
                    } else {
                        let mut it = sets.into_iter().flatten();
                        let first = it.next().unwrap_or_default();
                        it.fold(first, |acc, s| acc.intersection(&s).cloned().collect())
                    }
                }
                SetAlgebra::Union => sets.into_iter().flatten().flatten().collect(),
                SetAlgebra::Diff => {
                    let mut it = sets.into_iter();
                    let first = it.next().flatten().unwrap_or_default();
                    it.flatten()
                        .fold(first, |acc, s| acc.difference(&s).cloned().collect())
                }
            };
            let n = result.len();
            m.remove(dst);
            put(m, dst, result);
            int(n)
        }
        OpKind::Del { keys } => int(keys.iter().filter(|k| m.remove(*k).is_some()).count()),
        OpKind::Expire { key, .. } => int(usize::from(m.remove(key).is_some())),
        OpKind::Rename { src, dst, .. } => match m.remove(src) {
            None => "error: no such key".into(),
            Some(v) => {
                m.insert(dst.clone(), v);
                format!("{:?}", Value::Ok)
            }
        },
        OpKind::Set(s) => {
            m.insert(s.key.clone(), Model::Str);
            format!("{:?}", Value::Ok)
        }
        other => unreachable!("not generated: {other:?}"),
    }
}

fn shown(r: &Result<Value, String>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("error: {e}"),
    }
}

/// What the keyspace holds at `key`, read as a client reads it.
fn read(ks: &Keyspace, key: &[u8]) -> Option<Model> {
    ks.read(0, ks.now_ms(), |k| match SetValue::load(k, key) {
        Err(rialto_keyspace::Error::WrongType) => Some(Model::Str),
        Err(e) => panic!("read failed: {e}"),
        Ok(None) => None,
        Ok(Some(s)) => {
            let members = s.members(k).expect("members");
            assert_eq!(s.len(), members.len() as u64, "SCARD against the members");
            for m in &members {
                assert!(s.contains(k, m).expect("contains"));
            }
            assert!(!s.contains(k, b"absent").expect("contains"));
            if s.is_intset() {
                let ints: Vec<i64> = members
                    .iter()
                    .map(|m| std::str::from_utf8(m).unwrap().parse().unwrap())
                    .collect();
                assert!(ints.windows(2).all(|w| w[0] < w[1]), "an intset is sorted");
            }
            // A scan a page at a time gives every member once.
            let (mut paged, mut cursor) = (Vec::new(), 0);
            loop {
                let (page, next) = s.page(k, cursor, 2).expect("page");
                paged.extend(page);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
            paged.sort();
            let mut sorted = members.clone();
            sorted.sort();
            assert_eq!(paged, sorted, "SSCAN's pages");
            Some(Model::Set(members.into_iter().collect()))
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn sets_match_a_model(steps in prop::collection::vec(step(), 1..80)) {
        let fs = MemFs::new();
        let mut ks = open(&fs);
        let mut model = BTreeMap::new();
        for (i, step) in steps.iter().enumerate() {
            match step {
                Step::Op(kind) => {
                    let got = ks
                        .execute(Op::new(0, ks.now_ms(), kind.clone()))
                        .map_err(|e| e.to_string());
                    let want = model_apply(&mut model, kind, &got);
                    prop_assert_eq!(shown(&got), want, "step {}: {:?}", i, kind);
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
        let keys = KEYS.iter().map(|k| Bytes::from_static(k.as_bytes())).collect();
        ks.execute(Op::new(0, ks.now_ms(), OpKind::Del { keys })).unwrap();
        while ks.reclaim_pass(7).unwrap() > 0 {}
        ks.close().unwrap();
        drop(ks);
        prop_assert_eq!(common::keys_under(&fs, &[0x0D]), 0, "member keys left");
        prop_assert_eq!(common::keys_under(&fs, &[0x0E, 0x01]), 0, "released records left");
    }
}

fn exec(ks: &Keyspace, kind: OpKind) -> Value {
    ks.execute(Op::new(0, ks.now_ms(), kind)).unwrap()
}

/// The same op with the same seed pops the same members from the same set: every node
/// applying it agrees.
#[test]
fn spop_is_a_function_of_its_seed() {
    let popped = |seed| {
        let fs = MemFs::new();
        let ks = open(&fs);
        let members = (0..50).map(|i| Bytes::from(format!("m{i}"))).collect();
        let key = Bytes::from_static(b"s");
        exec(
            &ks,
            OpKind::Sets(SetOp::Add {
                key: key.clone(),
                members,
            }),
        );
        exec(
            &ks,
            OpKind::Sets(SetOp::Pop {
                key,
                count: Some(10),
                seed,
            }),
        )
    };
    assert_eq!(popped(7), popped(7));
    assert_ne!(popped(7), popped(8));
}

/// A set's encoding follows Redis 7.0's: intset while every member is an integer and there
/// are few, never intset again once left.
#[test]
fn intset_mode_is_left_for_good() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let key = Bytes::from_static(b"s");
    let load = |f: &dyn Fn(&SetValue)| {
        ks.read(0, ks.now_ms(), |k| {
            f(&SetValue::load(k, b"s").unwrap().unwrap())
        })
    };
    let add = |m: &[&'static str]| {
        exec(
            &ks,
            OpKind::Sets(SetOp::Add {
                key: key.clone(),
                members: m.iter().map(|m| Bytes::from_static(m.as_bytes())).collect(),
            }),
        )
    };
    add(&["3", "1", "2", "-1"]);
    load(&|s| assert!(s.is_intset() && !s.is_large()));
    exec(
        &ks,
        OpKind::Sets(SetOp::Rem {
            key: key.clone(),
            members: vec![Bytes::from_static(b"-1"), Bytes::from_static(b"3")],
        }),
    );
    load(&|s| assert!(s.is_intset() && s.len() == 2));
    add(&["x"]);
    load(&|s| assert!(!s.is_intset() && !s.is_large()));
    exec(
        &ks,
        OpKind::Sets(SetOp::Rem {
            key: key.clone(),
            members: vec![Bytes::from_static(b"x")],
        }),
    );
    load(&|s| assert!(!s.is_intset()));
    // Past set-max-listpack-entries (3): large.
    add(&["4"]);
    load(&|s| assert!(!s.is_intset() && !s.is_large()));
    add(&["5"]);
    load(&|s| assert!(s.is_large() && s.len() == 4));
}

/// Entries the engine's iterators have examined so far (every tombstone and hidden version
/// stepped over counts).
fn examined(ks: &Keyspace) -> u64 {
    ks.engine_stats().iter_entries_examined
}

/// Regression: SPOP took the first member from a random hash on, stepping over the deletions
/// every earlier pop had left in that stretch of the hash space, so the work per pop grew as
/// a set drained (the last pops of 100,000 stepped over tens of thousands of entries); and
/// since that pick favours members after wide gaps, the members left bunched up, and the
/// deletions with them. Now a set whose deletions outnumber its members moves to a new
/// version, a pick is uniform over the members, and every tenth of a drain costs about the
/// same number of entries per pop, the moves included.
#[test]
fn draining_a_large_set_examines_a_bounded_number_of_entries_per_pop() {
    const N: usize = 100_000;
    let fs = MemFs::new();
    let mut o = options(&fs);
    // Every pop's deletion stays in the memtable, where no compaction drops it.
    o.engine.write_buffer_size = 256 << 20;
    o.engine.max_background_jobs = 0;
    let ks = Keyspace::open(std::path::Path::new("/ks/db"), o).unwrap();
    let key = Bytes::from_static(b"s");
    let mut model = BTreeSet::new();
    for start in (0..N).step_by(1000) {
        let members: Vec<Bytes> = (start..start + 1000)
            .map(|i| Bytes::from(format!("member-{i}")))
            .collect();
        model.extend(members.iter().cloned());
        let key = key.clone();
        exec(&ks, OpKind::Sets(SetOp::Add { key, members }));
    }
    let mut tenths = Vec::new();
    let mut work = 0u64;
    for i in 0..N {
        let before = examined(&ks);
        let got = exec(
            &ks,
            OpKind::Sets(SetOp::Pop {
                key: key.clone(),
                count: None,
                seed: i as u64,
            }),
        );
        work += examined(&ks) - before;
        let Value::Bulk(m) = got else {
            panic!("pop {i}: {got:?}");
        };
        assert!(model.remove(&m), "pop {i}: {m:?} popped twice");
        if (i + 1) % (N / 10) == 0 {
            tenths.push(work as f64 / (N / 10) as f64);
            work = 0;
            if !model.is_empty() {
                assert_eq!(
                    read(&ks, b"s"),
                    Some(Model::Set(model.clone())),
                    "after {i}"
                );
            }
        }
    }
    assert_eq!(read(&ks, b"s"), None);
    // With the moves but the old pick, the tenths grew from 2 to 57 entries per pop.
    assert!(tenths.iter().all(|&t| t < 48.0), "{tenths:?}");
    assert!(tenths[9] < 2.5 * tenths[0], "{tenths:?}");
    while ks.reclaim_pass(10_000).unwrap() > 0 {}
    ks.close().unwrap();
    drop(ks);
    assert_eq!(common::keys_under(&fs, &[0x0D]), 0, "member keys left");
    assert_eq!(
        common::keys_under(&fs, &[0x0E, 0x01]),
        0,
        "released records left"
    );
}

/// SPOP with a count moves the set as it goes: one op popping most of a large set examines
/// a bounded number of entries per member popped.
#[test]
fn one_large_spop_examines_a_bounded_number_of_entries_per_member() {
    let fs = MemFs::new();
    let mut o = options(&fs);
    o.engine.write_buffer_size = 64 << 20;
    o.engine.max_background_jobs = 0;
    let ks = Keyspace::open(std::path::Path::new("/ks/db"), o).unwrap();
    let key = Bytes::from_static(b"s");
    let members: Vec<Bytes> = (0..20_000).map(|i| Bytes::from(format!("m{i}"))).collect();
    exec(
        &ks,
        OpKind::Sets(SetOp::Add {
            key: key.clone(),
            members,
        }),
    );
    let before = examined(&ks);
    let Value::Members(popped) = exec(
        &ks,
        OpKind::Sets(SetOp::Pop {
            key: key.clone(),
            count: Some(19_990),
            seed: 5,
        }),
    ) else {
        panic!("a count pops members");
    };
    let per = (examined(&ks) - before) as f64 / popped.len() as f64;
    assert_eq!(popped.iter().collect::<BTreeSet<_>>().len(), 19_990);
    assert!(per < 24.0, "{per} entries per member popped");
    let Some(Model::Set(left)) = read(&ks, b"s") else {
        panic!("10 members are left");
    };
    assert_eq!(left.len(), 10);
    assert!(left.iter().all(|m| !popped.contains(m)));
}

/// Regression: every reclaim pass scanned a released version from its first key, stepping
/// over the members earlier passes had deleted, so reclaiming a large set in passes of a
/// fixed budget cost work quadratic in its size. A pass now resumes past the last member
/// the previous one deleted.
#[test]
fn reclaim_passes_resume_where_the_last_one_stopped() {
    let fs = MemFs::new();
    let mut o = options(&fs);
    o.engine.write_buffer_size = 64 << 20;
    o.engine.max_background_jobs = 0;
    let ks = Keyspace::open(std::path::Path::new("/ks/db"), o).unwrap();
    let key = Bytes::from_static(b"s");
    let members: Vec<Bytes> = (0..20_000).map(|i| Bytes::from(format!("m{i}"))).collect();
    exec(
        &ks,
        OpKind::Sets(SetOp::Add {
            key: key.clone(),
            members,
        }),
    );
    exec(&ks, OpKind::Del { keys: vec![key] });
    let mut passes = 0;
    loop {
        let before = examined(&ks);
        let n = ks.reclaim_pass(500).unwrap();
        let work = examined(&ks) - before;
        assert!(work <= 600, "pass {passes}: {work} entries examined");
        if n == 0 {
            break;
        }
        passes += 1;
    }
    assert_eq!(passes, 40);
    ks.close().unwrap();
    drop(ks);
    assert_eq!(common::keys_under(&fs, &[0x0D]), 0, "member keys left");
    assert_eq!(
        common::keys_under(&fs, &[0x0E, 0x01]),
        0,
        "released records left"
    );
}

/// A large set's pick is uniform over its members: 20,000 pops from a set of 200 (each put
/// back), with fixed seeds, pop each member about 100 times. A pick of the first member after
/// a random hash pops a member in proportion to the gap of hashes before it (χ² about
/// 20,000).
#[test]
fn spop_draws_every_member_alike() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let key = Bytes::from_static(b"s");
    let members: Vec<Bytes> = (0..200)
        .map(|i| Bytes::from(format!("member-{i}")))
        .collect();
    exec(
        &ks,
        OpKind::Sets(SetOp::Add {
            key: key.clone(),
            members: members.clone(),
        }),
    );
    ks.read(0, ks.now_ms(), |k| {
        assert!(SetValue::load(k, b"s").unwrap().unwrap().is_large())
    });
    let mut counts: BTreeMap<Bytes, u64> = BTreeMap::new();
    let n = 20_000;
    for seed in 0..n {
        let Value::Bulk(m) = exec(
            &ks,
            OpKind::Sets(SetOp::Pop {
                key: key.clone(),
                count: None,
                seed,
            }),
        ) else {
            panic!("a set of 200 members pops one");
        };
        *counts.entry(m.clone()).or_default() += 1;
        exec(
            &ks,
            OpKind::Sets(SetOp::Add {
                key: key.clone(),
                members: vec![m],
            }),
        );
    }
    assert_eq!(counts.len(), members.len());
    let e = n as f64 / members.len() as f64;
    let chi: f64 = counts.values().map(|&o| (o as f64 - e).powi(2) / e).sum();
    // 199 degrees of freedom: mean 199, standard deviation 20.
    assert!(chi < 340.0, "chi-square {chi}");
}
