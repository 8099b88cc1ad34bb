//! SORT against the keyspace: the read (`rialto_keyspace::sort`) and the STORE op, over lists,
//! sets and sorted sets in both encodings, with weights from strings and hash fields.

mod common;

use bytes::Bytes;
use common::options;
use rialto_io::MemFs;
use rialto_keyspace::{
    Error, HashOp, Keyspace, List, ListOp, Op, OpKind, Score, Set, SetOp, SortBy, SortMode,
    SortSpec, SortStore, Value, ZAddFlags, ZSetOp,
};

const NOW: i64 = 1_000_000;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn open(fs: &MemFs) -> Keyspace {
    let ks = Keyspace::open(std::path::Path::new("/ks/db"), options(fs)).unwrap();
    // Small thresholds: collections of a few members are large (members as keys of their own).
    ks.encodings().set_list_max_size(3);
    ks.encodings().set_zset_max_entries(3);
    ks.encodings().set_set_max_intset_entries(3);
    ks.encodings().set_set_max_listpack_entries(3);
    ks
}

fn exec(ks: &Keyspace, kind: OpKind) -> Result<Value, Error> {
    ks.execute(Op::new(0, NOW, kind))
}

fn push(ks: &Keyspace, key: &str, items: &[&str]) {
    let items = items.iter().map(|s| b(s)).collect();
    exec(
        ks,
        OpKind::List(ListOp::Push {
            key: b(key),
            left: false,
            existing: false,
            items,
        }),
    )
    .unwrap();
}

fn set(ks: &Keyspace, key: &str, value: &str, expire_at_ms: Option<i64>) {
    let s = Set {
        key: b(key),
        value: b(value),
        expire_at_ms,
        keep_ttl: false,
        cond: None,
        get: false,
    };
    exec(ks, OpKind::Set(s)).unwrap();
}

fn spec(key: &str) -> SortSpec {
    SortSpec {
        key: b(key),
        by: SortBy::Element,
        offset: 0,
        count: -1,
        gets: Vec::new(),
        desc: false,
        alpha: false,
    }
}

fn sort(ks: &Keyspace, s: &SortSpec, mode: SortMode) -> Result<Vec<Option<String>>, Error> {
    let items = ks.read(0, NOW, |k| rialto_keyspace::sort(k, s, mode))?;
    Ok(items
        .into_iter()
        .map(|v| v.map(|x| String::from_utf8_lossy(&x).into_owned()))
        .collect())
}

fn strs(items: &[&str]) -> Vec<Option<String>> {
    items.iter().map(|s| Some(s.to_string())).collect()
}

fn list(ks: &Keyspace, key: &str) -> Option<Vec<String>> {
    ks.read(0, NOW, |k| {
        let l = List::load(k, key.as_bytes()).unwrap()?;
        Some(
            l.all(k)
                .unwrap()
                .iter()
                .map(|e| String::from_utf8_lossy(e).into_owned())
                .collect(),
        )
    })
}

#[test]
fn lists_sort_by_number_alpha_and_weights() {
    let fs = MemFs::new();
    let ks = open(&fs);
    push(&ks, "l", &["3", "10", "1", "2.5", "-1"]);
    let plain = spec("l");
    assert_eq!(
        sort(&ks, &plain, SortMode::default()).unwrap(),
        strs(&["-1", "1", "2.5", "3", "10"])
    );
    let alpha = SortSpec {
        alpha: true,
        desc: true,
        ..spec("l")
    };
    assert_eq!(
        sort(&ks, &alpha, SortMode::default()).unwrap(),
        strs(&["3", "2.5", "10", "1", "-1"])
    );
    // Weights: strings, and hash fields; a missing one weighs 0.
    set(&ks, "w_3", "-5", None);
    set(&ks, "w_10", "7", None);
    let pairs = vec![(b("f"), b("100"))];
    exec(
        &ks,
        OpKind::Hash(HashOp::Set {
            key: b("h_1"),
            pairs,
            ok: false,
        }),
    )
    .unwrap();
    let by = SortSpec {
        by: SortBy::Pattern(b("w_*")),
        ..spec("l")
    };
    assert_eq!(
        sort(&ks, &by, SortMode::default()).unwrap(),
        strs(&["3", "-1", "1", "2.5", "10"])
    );
    let get = SortSpec {
        by: SortBy::Pattern(b("h_*->f")),
        gets: vec![b("#"), b("h_*->f")],
        offset: 3,
        count: 5,
        ..spec("l")
    };
    assert_eq!(
        sort(&ks, &get, SortMode::default()).unwrap(),
        [Some("3".into()), None, Some("1".into()), Some("100".into())]
    );
    // A weight that is no number fails the whole sort.
    set(&ks, "w_1", "x", None);
    assert!(matches!(
        sort(&ks, &by, SortMode::default()),
        Err(Error::SortWeightNotDouble)
    ));
    // Nosort keeps the list's order, DESC from the tail, LIMIT over that order.
    let nosort = SortSpec {
        by: SortBy::NoSort,
        desc: true,
        offset: 1,
        count: 2,
        ..spec("l")
    };
    assert_eq!(
        sort(&ks, &nosort, SortMode::default()).unwrap(),
        strs(&["2.5", "1"])
    );
}

#[test]
fn sets_and_sorted_sets_keep_or_lose_their_order_as_redis() {
    let fs = MemFs::new();
    let ks = open(&fs);
    let items = ["b", "a", "c", "ab", "B"]
        .iter()
        .map(|m| (Score(1.0), b(m)))
        .collect();
    exec(
        &ks,
        OpKind::ZSet(ZSetOp::Add {
            key: b("z"),
            flags: ZAddFlags::default(),
            items,
        }),
    )
    .unwrap();
    // By rank, DESC from the highest, LIMIT over ranks.
    let nosort = SortSpec {
        by: SortBy::NoSort,
        desc: true,
        offset: 1,
        count: 3,
        ..spec("z")
    };
    assert_eq!(
        sort(&ks, &nosort, SortMode::default()).unwrap(),
        strs(&["b", "ab", "a"])
    );
    let alpha = SortSpec {
        alpha: true,
        ..spec("z")
    };
    assert_eq!(
        sort(&ks, &alpha, SortMode::default()).unwrap(),
        strs(&["B", "a", "ab", "b", "c"])
    );
    let members = ["10", "2", "1"].iter().map(|m| b(m)).collect();
    exec(
        &ks,
        OpKind::Sets(SetOp::Add {
            key: b("s"),
            members,
        }),
    )
    .unwrap();
    // A set of integers iterates in order; under nosort a script or STORE sorts it ALPHA.
    let nosort = SortSpec {
        by: SortBy::NoSort,
        desc: true,
        ..spec("s")
    };
    assert_eq!(
        sort(&ks, &nosort, SortMode::default()).unwrap(),
        strs(&["1", "2", "10"])
    );
    let script = SortMode {
        script: true,
        store: false,
    };
    assert_eq!(sort(&ks, &nosort, script).unwrap(), strs(&["2", "10", "1"]));
    // Another kind is refused; a missing key is empty.
    set(&ks, "str", "1", None);
    assert!(matches!(
        sort(&ks, &spec("str"), SortMode::default()),
        Err(Error::WrongType)
    ));
    assert_eq!(
        sort(&ks, &spec("nokey"), SortMode::default()).unwrap(),
        Vec::<Option<String>>::new()
    );
}

#[test]
fn store_replaces_the_destination_with_a_list_or_deletes_it() {
    let fs = MemFs::new();
    let ks = open(&fs);
    push(&ks, "l", &["b", "a", "d", "c"]);
    set(&ks, "w_a", "1", None);
    set(&ks, "dst", "old", Some(NOW + 10_000));
    let store = |sort: SortSpec, dst: &str| {
        exec(&ks, OpKind::Sort(SortStore { dst: b(dst), sort })).unwrap()
    };
    // A missing GET value is stored as an empty string; the string and its TTL are gone.
    let s = SortSpec {
        alpha: true,
        gets: vec![b("#"), b("w_*")],
        ..spec("l")
    };
    assert_eq!(store(s, "dst"), Value::Int(8));
    assert_eq!(
        list(&ks, "dst").unwrap(),
        ["a", "1", "b", "", "c", "", "d", ""]
    );
    assert!(ks.read(0, NOW, |k| k
        .get(b"dst")
        .unwrap()
        .unwrap()
        .expire_at_ms
        .is_none()));
    // Sorting the destination onto itself.
    let s = SortSpec {
        alpha: true,
        desc: true,
        offset: 1,
        count: 2,
        ..spec("dst")
    };
    assert_eq!(store(s, "dst"), Value::Int(2));
    assert_eq!(list(&ks, "dst").unwrap(), ["c", "b"]);
    // An empty result deletes it.
    assert_eq!(
        store(
            SortSpec {
                offset: 10,
                alpha: true,
                ..spec("l")
            },
            "dst"
        ),
        Value::Int(0)
    );
    assert!(!ks.read(0, NOW, |k| k.exists(b"dst").unwrap()));
    // A failed sort writes nothing.
    set(&ks, "dst", "kept", None);
    let e = exec(
        &ks,
        OpKind::Sort(SortStore {
            dst: b("dst"),
            sort: spec("l"),
        }),
    );
    assert!(matches!(e, Err(Error::SortWeightNotDouble)));
    assert_eq!(
        ks.read(0, NOW, |k| k.get(b"dst").unwrap().unwrap().value),
        b("kept")
    );
}
