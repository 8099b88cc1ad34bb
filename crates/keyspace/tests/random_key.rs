//! Random keys (RANDOMKEY): every live key of the database equally likely, however the keys
//! are spread over the key space, the memtable and the tables, with a store's keys in their
//! place and nothing else drawn (expired keys, other databases, collection members).

mod common;

use std::collections::BTreeSet;

use bytes::Bytes;
use common::options;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rialto_io::MemFs;
use rialto_keyspace::{DuplicatePolicy, Keyspace, Op, OpKind, RandomKey, Set, SetOp};

fn open(fs: &MemFs) -> Keyspace {
    let mut o = options(fs);
    // Earlier writes flushed to tables, the last ones left in the memtable.
    o.engine.write_buffer_size = 512 << 10;
    // Inline flushes and compactions: the tree's shape, and so every draw, is a function of
    // the writes and the seed.
    o.engine.max_background_jobs = 0;
    Keyspace::open(std::path::Path::new("/ks/db"), o).unwrap()
}

fn b(s: &str) -> Bytes {
    Bytes::from(s.to_string())
}

fn mset(ks: &Keyspace, db: u8, keys: &[String]) {
    for chunk in keys.chunks(1000) {
        let pairs = chunk.iter().map(|k| (b(k), b("v"))).collect();
        ks.execute(Op::new(db, ks.now_ms(), OpKind::MSet { pairs }))
            .unwrap();
    }
}

fn set_ex(ks: &Keyspace, key: &str, at: i64) {
    let op = OpKind::Set(Set {
        key: b(key),
        value: b("soon gone"),
        expire_at_ms: Some(at),
        keep_ttl: false,
        cond: None,
        get: false,
    });
    ks.execute(Op::new(0, ks.now_ms(), op)).unwrap();
}

fn draw(ks: &Keyspace, rng: &mut StdRng, now: i64, accept: fn(&[u8]) -> bool) -> RandomKey {
    ks.random_key_in(0, 0, now, rng, accept).unwrap()
}

/// Pearson's statistic of `buckets` against equal expectations.
fn chi_square(buckets: &[u64]) -> f64 {
    let total: u64 = buckets.iter().sum();
    let e = total as f64 / buckets.len() as f64;
    buckets.iter().map(|&o| (o as f64 - e).powi(2) / e).sum()
}

#[test]
fn random_keys_are_uniform_over_a_database_spread_unevenly() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let now = ks.now_ms();
    let mut live = BTreeSet::new();
    // A dense run, flushed and compacted as it is written.
    let dense: Vec<String> = (0..25_000).map(|i| format!("a:{i:06}")).collect();
    mset(&ks, 0, &dense);
    live.extend(dense);
    // A store's keys, loaded by a push.
    ks.create_store("s", b"s:", 0).unwrap();
    let id = ks
        .push_begin("s", DuplicatePolicy::Error, None, None)
        .unwrap();
    let pushed: Vec<(Vec<u8>, Vec<u8>)> = (0..5_000)
        .map(|i| (format!("{i:05}").into_bytes(), b"pushed".to_vec()))
        .collect();
    ks.push_add(id, None, pushed.iter().map(|(k, v)| (&k[..], &v[..])))
        .unwrap();
    ks.push_commit(id, None).unwrap();
    live.extend((0..5_000).map(|i| format!("s:{i:05}")));
    // A sparse run across wide gaps of the key space, and keys that expire.
    let sparse: Vec<String> = (0..10_000u64)
        .map(|i| format!("m:{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
        .collect();
    mset(&ks, 0, &sparse);
    live.extend(sparse);
    for i in 0..2_000 {
        set_ex(&ks, &format!("e:{i}"), now + 60_000);
    }
    // Another database, and a large set, whose members are keys of their own.
    mset(
        &ks,
        1,
        &(0..5_000).map(|i| format!("a:{i:06}")).collect::<Vec<_>>(),
    );
    let members: Vec<Bytes> = (0..5_000).map(|i| b(&format!("member-{i}"))).collect();
    let sadd = OpKind::Sets(SetOp::Add {
        key: b("big"),
        members,
    });
    ks.execute(Op::new(0, now, sadd)).unwrap();
    live.insert("big".into());
    // A last run in the memtable.
    let last: Vec<String> = (0..8_000).map(|i| format!("z:{i:05}")).collect();
    mset(&ks, 0, &last);
    live.extend(last);

    let stats = ks.engine_stats();
    let files: u64 = stats.levels.iter().map(|l| l.files).sum();
    assert!(files >= 4, "{:?}", stats.levels);
    let keys: Vec<&String> = live.iter().collect();
    let later = now + 120_000;
    let mut rng = StdRng::seed_from_u64(11);
    let mut buckets = vec![0u64; 100];
    let mut stores = 0u64;
    for _ in 0..100_000 {
        let RandomKey::Found(k) = draw(&ks, &mut rng, later, |_| true) else {
            panic!("no key drawn");
        };
        let k = String::from_utf8(k).unwrap();
        let rank = keys.partition_point(|x| x.as_str() < k.as_str());
        assert_eq!(keys.get(rank), Some(&&k), "{k} is not live");
        buckets[rank * 100 / keys.len()] += 1;
        stores += u64::from(k.starts_with("s:"));
    }
    // 99 degrees of freedom: mean 99, standard deviation 14.
    let chi = chi_square(&buckets);
    assert!(chi < 180.0, "chi-square {chi}: {buckets:?}");
    // 5,000 of 48,001 keys are the store's.
    assert!(stores.abs_diff(10_416) < 600, "{stores}");

    // Only the keys the caller takes, each as likely.
    let mut half = [0u64; 2];
    for _ in 0..20_000 {
        let RandomKey::Found(k) = draw(&ks, &mut rng, later, |k| k.starts_with(b"m:")) else {
            panic!("no key drawn");
        };
        assert!(k.starts_with(b"m:"));
        half[usize::from(k.as_slice() >= b"m:8".as_slice())] += 1;
    }
    assert!(half[0].abs_diff(half[1]) < 800, "{half:?}");
}

#[test]
fn expired_keys_are_never_drawn_and_an_empty_database_has_none() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let now = ks.now_ms();
    let mut rng = StdRng::seed_from_u64(3);
    assert_eq!(draw(&ks, &mut rng, now, |_| true), RandomKey::Empty);
    for i in 0..20 {
        set_ex(&ks, &format!("e:{i}"), now + 1_000);
    }
    let kept: Vec<String> = (0..50).map(|i| format!("k:{i}")).collect();
    mset(&ks, 0, &kept);
    let mut seen = BTreeSet::new();
    for _ in 0..2_000 {
        match draw(&ks, &mut rng, now + 2_000, |_| true) {
            RandomKey::Found(k) => {
                assert!(k.starts_with(b"k:"), "{k:?}");
                seen.insert(k);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen.len(), kept.len());
    // Nothing live: the bounded draws give up, and the caller decides.
    let keys = kept.iter().map(|k| b(k)).collect();
    ks.execute(Op::new(0, now, OpKind::Del { keys })).unwrap();
    assert_eq!(
        draw(&ks, &mut rng, now + 2_000, |_| true),
        RandomKey::Undecided
    );
}
