//! The conformance suite run against the reference `ModelEngine`: proves that the suite asks
//! only for what the contract promises (and that the model keeps it).

use rialto_engine::conformance::{
    self, check_large_value_with, check_max_size_values, proptest_ops_against_model,
    random_ops_against_model, run_ops_against_model, EngineFactory, KeySpec, Move, Op, ValueSpec,
};
use rialto_engine::model::ModelFactory;
use rialto_engine::{KvEngine, MAX_VALUE_LEN};

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("create a temporary directory")
}

#[test]
fn run_all_passes_on_the_model() {
    conformance::run_all(&ModelFactory::new());
}

#[test]
fn random_ops_pass_on_the_model_for_many_seeds() {
    let f = ModelFactory::new();
    let tmp = tempdir();
    for seed in 100..112 {
        random_ops_against_model(&f, &tmp.path().join(seed.to_string()), seed, 600);
    }
}

#[test]
fn proptest_ops_pass_on_the_model() {
    let tmp = tempdir();
    proptest_ops_against_model(&ModelFactory::new(), tmp.path(), 32, 150);
}

#[test]
fn hand_written_sequence_replays() {
    let k = |id| KeySpec { id, pad: 0 };
    let v = |tag| ValueSpec { len: 3, tag };
    let ops = vec![
        Op::Put {
            key: k(4),
            value: v(1),
        },
        Op::TakeSnapshot,
        Op::Delete { key: k(4) },
        Op::Get {
            key: k(4),
            snapshot: Some(0),
        },
        Op::OpenIter {
            lower: Some(k(0)),
            upper: None,
            snapshot: None,
        },
        Op::Put {
            key: k(5),
            value: v(2),
        },
        Op::MoveIter {
            iter: 0,
            moves: vec![Move::SeekToLast, Move::Prev, Move::Next],
        },
        Op::Reopen,
    ];
    let tmp = tempdir();
    run_ops_against_model(&ModelFactory::new(), &tmp.path().join("db"), &ops)
        .expect("a valid sequence must pass on the model");
}

#[test]
fn max_size_values_at_one_mebibyte() {
    let tmp = tempdir();
    check_max_size_values(&ModelFactory::new(), &tmp.path().join("db"), 1 << 20);
}

#[test]
fn large_value_of_another_size() {
    let tmp = tempdir();
    check_large_value_with(
        &ModelFactory::new(),
        &tmp.path().join("db"),
        3 * 1024 * 1024 + 7,
    );
}

/// The real limit: needs about 1.5 GiB of memory, so not run by default.
#[test]
#[ignore = "allocates MAX_VALUE_LEN (512 MiB) several times"]
fn max_size_values_at_the_real_limit() {
    let tmp = tempdir();
    check_max_size_values(&ModelFactory::new(), &tmp.path().join("db"), MAX_VALUE_LEN);
}

#[test]
fn a_fresh_directory_is_a_fresh_model_and_reopen_keeps_the_state() {
    let f = ModelFactory::new();
    let tmp = tempdir();
    let dir = tmp.path().join("db");
    let e = f.open(&dir).expect("open");
    e.put(b"k", b"v", Default::default()).expect("put");
    drop(e);
    let e = f.open(&dir).expect("reopen");
    assert_eq!(e.get(b"k").expect("get").as_deref(), Some(&b"v"[..]));
    let other = f.open(&tmp.path().join("other")).expect("open another dir");
    assert_eq!(other.get(b"k").expect("get"), None);
}
