//! The codec against payloads a real redis-server 7.0.15 produced with DUMP (default
//! configuration; `list_compressed` with `list-compress-depth 1`, `list_plain` with
//! `DEBUG QUICKLIST-PACKED-THRESHOLD 100`), and against damage.

use bytes::Bytes;
use proptest::prelude::*;

use super::*;

/// `name hex` per line.
const FIXTURES: &str = include_str!("redis-7.0.15-dumps.txt");

fn fixture(name: &str) -> Vec<u8> {
    let line = FIXTURES
        .lines()
        .find(|l| l.split(' ').next() == Some(name))
        .expect("fixture");
    let hex = line.split(' ').nth(1).expect("hex");
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn b(s: impl AsRef<[u8]>) -> Bytes {
    Bytes::copy_from_slice(s.as_ref())
}

fn strings<S: AsRef<[u8]>>(v: impl IntoIterator<Item = S>) -> Vec<Bytes> {
    v.into_iter().map(b).collect()
}

/// What each fixture holds, as the script that made them wrote it.
fn expected(name: &str) -> DumpValue {
    let elements = || strings((0..2000).map(|i| format!("element-{i}")));
    match name {
        "string_raw" => DumpValue::String(b("hello")),
        "string_int8" => DumpValue::String(b("-5")),
        "string_int16" => DumpValue::String(b("12345")),
        "string_int32" => DumpValue::String(b("-1000000")),
        "string_int64" => DumpValue::String(b("12345678901234")),
        "string_lzf" => DumpValue::String(b("abc".repeat(40))),
        "string_binary" => DumpValue::String(b((0..=255u8).collect::<Vec<_>>())),
        "list_listpack" => {
            let mut v = strings([
                "a",
                "b",
                "0",
                "127",
                "-1",
                "4095",
                "-4096",
                "32767",
                "-32768",
                "8388607",
                "-8388608",
                "2147483647",
                "-2147483648",
                "9223372036854775807",
                "-9223372036854775808",
            ]);
            v.push(b("x".repeat(100)));
            v.push(b("y".repeat(5000)));
            DumpValue::List(v)
        }
        "list_multi_node" | "list_compressed" => DumpValue::List(elements()),
        "list_plain" => DumpValue::List(strings([
            "small".to_string(),
            "p".repeat(150),
            "tiny".to_string(),
            "q".repeat(300),
        ])),
        "set_intset16" => DumpValue::Set(strings(["-3", "1", "2", "300"])),
        "set_intset32" => DumpValue::Set(strings(["-70000", "1", "70000"])),
        "set_intset64" => DumpValue::Set(strings(["-9223372036854775808", "1", "7000000000"])),
        "set_hashtable" => DumpValue::Set(strings(["a", "b", "c", "1"])),
        "set_large" => DumpValue::Set(strings((0..600).map(|i| format!("m{i}")))),
        "zset_listpack" => DumpValue::ZSet(vec![
            (b("f"), f64::NEG_INFINITY),
            (b("c"), -3.0),
            (b("a"), 1.0),
            (b("b"), 2.5),
            (b("g"), 123456789012.0),
            (b("d"), 1e300),
            (b("e"), f64::INFINITY),
        ]),
        "zset_skiplist" => DumpValue::ZSet(
            (0..200)
                .map(|i| (b(format!("member-{i}")), f64::from(i) * 1.5))
                .collect(),
        ),
        "zset_skiplist_long" => DumpValue::ZSet(vec![(b("z".repeat(100)), 1.0), (b("w"), 2.0)]),
        "hash_listpack" => DumpValue::Hash(vec![
            (b("f1"), b("v1")),
            (b("f2"), b("2")),
            (b("n"), b("-77777")),
        ]),
        "hash_hashtable" => DumpValue::Hash(
            (0..600)
                .map(|i| (b(format!("field-{i}")), b(format!("value-{i}"))))
                .collect(),
        ),
        "hash_long_value" => DumpValue::Hash(vec![(b("f"), b("v".repeat(100)))]),
        other => panic!("no expectation for {other}"),
    }
}

/// Order-free form of a value, for sets and hashes (whose order a hash table decides).
fn canonical(v: DumpValue) -> DumpValue {
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

/// The fixtures of plain values (the streams' have a test of their own).
fn names() -> Vec<&'static str> {
    FIXTURES
        .lines()
        .filter_map(|l| l.split(' ').next())
        .filter(|n| !n.starts_with("stream_"))
        .collect()
}

#[test]
fn every_redis_fixture_decodes_to_what_was_written() {
    assert_eq!(names().len(), 22);
    for name in names() {
        let got = decode(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(canonical(got), canonical(expected(name)), "{name}");
    }
}

#[test]
fn fixtures_use_the_encodings_they_are_named_for() {
    let ty = |n: &str| fixture(n)[0];
    assert_eq!(ty("list_listpack"), DumpType::ListQuicklist2 as u8);
    assert_eq!(ty("set_intset64"), DumpType::SetIntset as u8);
    assert_eq!(ty("zset_listpack"), DumpType::ZSetListpack as u8);
    assert_eq!(ty("zset_skiplist"), DumpType::ZSet2 as u8);
    assert_eq!(ty("hash_listpack"), DumpType::HashListpack as u8);
    assert_eq!(ty("hash_hashtable"), DumpType::Hash as u8);
    // LZF: the special-encoding byte 0xC3 right after the type.
    assert_eq!(fixture("string_lzf")[1], 0xc3);
}

#[test]
fn encode_round_trips_and_matches_redis_for_plain_strings() {
    for name in names() {
        let v = decode(&fixture(name)).expect("decodes");
        assert_eq!(decode(&encode(&v)).expect("round trip"), v, "{name}");
    }
    // Redis writes short strings and small integers as Rialto does.
    for name in [
        "string_raw",
        "string_int8",
        "string_int16",
        "string_int32",
        "string_int64",
    ] {
        let v = decode(&fixture(name)).expect("decodes");
        assert_eq!(encode(&v), fixture(name), "{name}");
    }
    // Non-canonical integers stay strings.
    for s in ["007", "+1", "-0", " 1"] {
        let p = encode(&DumpValue::String(b(s)));
        assert_eq!(p[1] as usize, s.len());
        assert_eq!(decode(&p).expect("decodes"), DumpValue::String(b(s)));
    }
}

#[test]
fn footer_errors() {
    let p = fixture("string_raw");
    assert_eq!(decode(&p[..9]), Err(PayloadError::VersionOrChecksum));
    let mut bad_crc = p.clone();
    *bad_crc.last_mut().expect("byte") ^= 1;
    assert_eq!(decode(&bad_crc), Err(PayloadError::VersionOrChecksum));
    // Version 11 (Redis 7.2) is refused, even with a matching checksum.
    let mut newer = p[..p.len() - 10].to_vec();
    newer.extend(11u16.to_le_bytes());
    let crc = crc64(&newer);
    newer.extend(crc.to_le_bytes());
    assert_eq!(decode(&newer), Err(PayloadError::VersionOrChecksum));
}

/// `body` with a valid footer.
fn sealed(body: &[u8]) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend(RDB_VERSION.to_le_bytes());
    let crc = crc64(&p);
    p.extend(crc.to_le_bytes());
    p
}

#[test]
fn bad_data() {
    let bad = |body: &[u8]| {
        assert_eq!(
            decode(&sealed(body)),
            Err(PayloadError::BadData),
            "{body:?}"
        )
    };
    bad(&[]); // no type
    bad(&[15, 0]); // a stream
    bad(&[6, 0]); // a module
    bad(&[9, 0]); // a zipmap
    bad(&[2, 0]); // an empty set
    bad(&[2, 2, 1, b'a', 1, b'a']); // a duplicate member
    bad(&[4, 2, 1, b'f', 1, b'v', 1, b'f', 1, b'w']); // a duplicate field
    bad(&[5, 1, 1, b'm', 0, 0, 0, 0, 0, 0, 0xf8, 0x7f]); // a NaN score
    bad(&[3, 1, 1, b'm', 253]); // a NaN score as text
    bad(&[1, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]); // a huge count
    bad(&[0, 0xc3, 2, 0x80, 0x40, 0, 0, 0, 0, 0]); // LZF claiming 2^30 bytes from 2
    bad(&[18, 1, 3, 1, b'a']); // an unknown quicklist container
                               // A string of type 3 scores reads its text.
    assert_eq!(
        decode(&sealed(&[3, 1, 1, b'm', 3, b'1', b'.', b'5'])),
        Ok(DumpValue::ZSet(vec![(b("m"), 1.5)]))
    );
}

#[test]
fn every_truncation_and_bit_flip_of_the_fixtures_is_refused_or_decodes() {
    for name in names() {
        let p = fixture(name);
        let body = &p[..p.len() - 10];
        // Cut anywhere (resealed so that the checksum passes and the value is parsed).
        for cut in (0..body.len()).step_by(1 + body.len() / 200) {
            let _ = decode(&sealed(&body[..cut]));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bodies_never_panic(ty in 0u8..22, body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut b = vec![ty];
        b.extend(body);
        let _ = decode(&sealed(&b));
    }

    #[test]
    fn damaged_fixtures_never_panic(which in 0usize..22, at in any::<usize>(), byte in any::<u8>(), cut in any::<usize>()) {
        let names = names();
        let p = fixture(names[which % names.len()]);
        let mut body = p[..p.len() - 10].to_vec();
        let i = at % body.len();
        body[i] = byte;
        body.truncate(1 + cut % body.len());
        let _ = decode(&sealed(&body));
    }

    #[test]
    fn values_round_trip(items in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..30)) {
        let v = DumpValue::List(items.iter().map(b).collect());
        prop_assert_eq!(decode(&encode(&v)).expect("decodes"), v);
        let s = DumpValue::String(b(items.concat()));
        prop_assert_eq!(decode(&encode(&s)).expect("decodes"), s);
    }
}

#[test]
fn streams_read_as_redis_wrote_them_and_round_trip() {
    use crate::collections::stream::StreamId;
    let Ok(DumpValue::Stream(s)) = decode(&fixture("stream_groups")) else {
        panic!("a stream");
    };
    // Ten entries in nodes of three, 2-1 and 5-1 deleted; groups g (3-1 acked) and h.
    assert_eq!(s.length, 8);
    assert_eq!(s.entries_added, 10);
    assert_eq!(s.last, StreamId::new(10, 1));
    assert_eq!(s.first, StreamId::new(1, 1));
    assert_eq!(s.max_deleted, StreamId::new(5, 1));
    assert_eq!(s.nodes.len(), 4);
    assert_eq!(s.nodes[0].deleted, 1);
    let ids: Vec<u64> = s
        .nodes
        .iter()
        .flat_map(|n| n.entries.iter().map(|e| e.0.ms))
        .collect();
    assert_eq!(ids, vec![1, 3, 4, 6, 7, 8, 9, 10]);
    assert_eq!(
        s.nodes[0].entries[1].1,
        vec![b("f"), b("v3"), b("g"), b("3000")]
    );
    let g = &s.groups[0];
    assert_eq!(
        (g.name.clone(), g.last, g.entries_read),
        (b("g"), StreamId::new(7, 1), -1)
    );
    assert_eq!(g.pending.len(), 4);
    let names: Vec<Bytes> = g.consumers.iter().map(|c| c.0.clone()).collect();
    assert_eq!(names, vec![b("alice"), b("bob"), b("carol")]);
    assert_eq!(s.groups[1].entries_read, 10);
    // Written again and read back: the same stream, but for the counts of deleted entries,
    // whose content is not kept (a node is written with its live entries).
    let again = encode(&DumpValue::Stream(s.clone()));
    let mut live = s.clone();
    live.nodes.iter_mut().for_each(|n| n.deleted = 0);
    assert_eq!(decode(&again), Ok(DumpValue::Stream(live)));
    let Ok(DumpValue::Stream(e)) = decode(&fixture("stream_empty")) else {
        panic!("a stream");
    };
    assert_eq!(
        (e.length, e.nodes.len(), e.last),
        (0, 0, StreamId::new(5, 5))
    );
}

#[test]
fn damaged_stream_payloads_are_refused() {
    let p = fixture("stream_groups");
    for cut in 1..p.len() - 10 {
        let mut body = p[..cut].to_vec();
        body.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        assert!(decode(&body).is_err(), "{cut}");
    }
}
