//! DUMP and RESTORE against the keyspace: every kind in both encodings restored and dumped
//! back, RESTORE's checks in Redis's order, its TTL forms, and failures that write nothing.

mod common;

use bytes::Bytes;
use common::options;
use rialto_io::MemFs;
use rialto_keyspace::{
    decode_dump, dump, encode_dump, DumpValue, Error, Keyspace, Op, OpKind, PayloadError,
    RestoreOp, Value,
};

const NOW: i64 = 1_000_000;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn open(fs: &MemFs) -> Keyspace {
    let ks = Keyspace::open(std::path::Path::new("/ks/db"), options(fs)).unwrap();
    // Small thresholds: a collection of more than 3 members is large.
    let e = ks.encodings();
    e.set_list_max_size(3);
    e.set_zset_max_entries(3);
    e.set_set_max_intset_entries(3);
    e.set_set_max_listpack_entries(3);
    e.set_hash_max_entries(3);
    ks
}

fn restore(
    ks: &Keyspace,
    key: &str,
    ttl_ms: Option<i64>,
    absolute: bool,
    replace: bool,
    payload: Vec<u8>,
) -> Result<Value, Error> {
    ks.execute(Op::new(
        0,
        NOW,
        OpKind::Restore(RestoreOp {
            key: b(key),
            ttl_ms,
            absolute,
            replace,
            payload: Bytes::from(payload),
        }),
    ))
}

fn dumped(ks: &Keyspace, key: &str) -> Option<DumpValue> {
    ks.read(0, NOW, |k| dump(k, key.as_bytes()))
        .unwrap()
        .map(|d| decode_dump(&d.payload).unwrap())
}

fn sorted(v: DumpValue) -> DumpValue {
    match v {
        DumpValue::Set(mut s) => {
            s.sort();
            DumpValue::Set(s)
        }
        DumpValue::Hash(mut h) => {
            h.sort();
            DumpValue::Hash(h)
        }
        DumpValue::ZSet(mut z) => {
            z.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
            DumpValue::ZSet(z)
        }
        v => v,
    }
}

fn values(n: usize) -> Vec<DumpValue> {
    let items: Vec<Bytes> = (0..n).map(|i| b(&format!("m{i}"))).collect();
    let ints: Vec<Bytes> = (0..n).map(|i| b(&(i as i64 * 7 - 3).to_string())).collect();
    vec![
        DumpValue::String(b(&"x".repeat(n))),
        DumpValue::List(items.clone()),
        DumpValue::Set(items.clone()),
        DumpValue::Set(ints),
        DumpValue::ZSet(
            items
                .iter()
                .enumerate()
                .map(|(i, m)| (m.clone(), i as f64 - 1.5))
                .collect(),
        ),
        DumpValue::Hash(items.iter().map(|m| (m.clone(), b("v"))).collect()),
    ]
}

#[test]
fn every_kind_round_trips_packed_and_large() {
    let fs = MemFs::new();
    let ks = open(&fs);
    for n in [1, 3, 50] {
        for (i, v) in values(n).into_iter().enumerate() {
            let key = format!("k{n}-{i}");
            assert_eq!(
                restore(&ks, &key, Some(0), false, false, encode_dump(&v)).unwrap(),
                Value::Ok
            );
            assert_eq!(dumped(&ks, &key).map(sorted), Some(sorted(v)), "{key}");
        }
    }
    assert_eq!(dumped(&ks, "missing"), None);
}

#[test]
fn busykey_comes_first_then_ttl_then_payload() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let good = encode_dump(&DumpValue::String(b("v")));
    restore(&ks, "k", Some(0), false, false, good.clone()).unwrap();
    // The key exists: BUSYKEY, whatever else is wrong.
    assert!(matches!(
        restore(&ks, "k", Some(-1), false, false, vec![1]),
        Err(Error::BusyKey)
    ));
    assert!(matches!(
        restore(&ks, "k", None, false, true, good.clone()),
        Err(Error::NotInteger)
    ));
    assert!(matches!(
        restore(&ks, "k", Some(-1), false, true, good.clone()),
        Err(Error::NegativeTtl)
    ));
    assert!(matches!(
        restore(&ks, "k", Some(0), false, true, vec![0; 9]),
        Err(Error::Payload(PayloadError::VersionOrChecksum))
    ));
    let mut stream = good.clone();
    stream[0] = 15;
    let body = stream.len() - 10;
    let crc = rialto_keyspace::crc64(&stream[..body + 2]);
    stream[body + 2..].copy_from_slice(&crc.to_le_bytes());
    assert!(matches!(
        restore(&ks, "k", Some(0), false, true, stream),
        Err(Error::Payload(PayloadError::BadData))
    ));
    // Nothing of the failures was written.
    assert_eq!(dumped(&ks, "k"), Some(DumpValue::String(b("v"))));
}

#[test]
fn ttls_relative_absolute_and_past() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let list = encode_dump(&DumpValue::List(vec![b("a"), b("b"), b("c"), b("d")]));
    restore(&ks, "rel", Some(5000), false, false, list.clone()).unwrap();
    restore(&ks, "abs", Some(NOW + 9000), true, false, list.clone()).unwrap();
    let at = |key: &str| {
        ks.read(0, NOW, |k| k.get(key.as_bytes()))
            .unwrap()
            .and_then(|r| r.expire_at_ms)
    };
    assert_eq!(at("rel"), Some(NOW + 5000));
    assert_eq!(at("abs"), Some(NOW + 9000));
    // A time already past writes nothing; with REPLACE it deletes what was there.
    restore(&ks, "gone", Some(NOW - 1), true, false, list.clone()).unwrap();
    assert_eq!(dumped(&ks, "gone"), None);
    restore(&ks, "rel", Some(NOW), true, true, list).unwrap();
    assert_eq!(dumped(&ks, "rel"), None);
    // The value expires when its time comes.
    assert!(ks.read(0, NOW + 9001, |k| k.get(b"abs")).unwrap().is_none());
}
