//! Sizes at and beyond the limits, and statistics.

use std::path::Path;

use super::{
    assert_get, assert_view, compact, delete, flush, get, iter, open, pattern, put, reopen, write,
    EngineFactory, Expected,
};
use crate::{
    EngineIterator, Error, KvEngine, WriteBatch, WriteOptions, MAX_KEY_LEN, MAX_VALUE_LEN,
};

/// Value size of [`check_large_value`]: 8 MiB, larger than any memtable or block of a test
/// configuration, small enough to run on every `cargo test`.
pub const LARGE_VALUE_LEN: usize = 8 * 1024 * 1024;

/// Panics unless `got` is exactly `want`, describing the first difference rather than printing
/// megabytes.
#[track_caller]
fn assert_big_eq(got: Option<&[u8]>, want: &[u8], ctx: &str) {
    let Some(got) = got else {
        panic!("{ctx}: value of {} bytes is missing", want.len());
    };
    if got != want {
        let at = got
            .iter()
            .zip(want)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        panic!(
            "{ctx}: got {} bytes, expected {}; first difference at offset {at}",
            got.len(),
            want.len()
        );
    }
}

/// A [`LARGE_VALUE_LEN`] value (8 MiB) round-trips: see [`check_large_value_with`].
pub fn check_large_value<F: EngineFactory>(f: &F, dir: &Path) {
    check_large_value_with(f, dir, LARGE_VALUE_LEN);
}

/// A value of `len` bytes round-trips through put, batch, iteration, flush, compaction and
/// reopen, next to small neighbours, and can be overwritten by a small value and deleted.
pub fn check_large_value_with<F: EngineFactory>(f: &F, dir: &Path, len: usize) {
    let big = pattern(0xb16, len);
    let e = open(f, dir);
    put(&e, b"a", b"small");
    put(&e, b"big", &big);
    put(&e, b"c", b"small");
    let check = |e: &F::Engine, ctx: &str| {
        assert_big_eq(get(e, b"big").as_deref(), &big, &format!("{ctx}: get"));
        assert_get(
            e,
            b"a",
            Some(&b"small"[..]),
            format_args!("{ctx}: neighbour"),
        );
        assert_get(
            e,
            b"c",
            Some(&b"small"[..]),
            format_args!("{ctx}: neighbour"),
        );
        let mut it = iter(e, None, None, None);
        it.seek(b"b");
        assert!(
            it.valid() && it.key() == b"big",
            "{ctx}: seek(\"b\") must land on the large value"
        );
        assert_big_eq(Some(it.value()), &big, &format!("{ctx}: iterator value"));
        it.next();
        assert!(
            it.valid() && it.key() == b"c",
            "{ctx}: next after the large value"
        );
        it.prev();
        assert!(
            it.valid() && it.key() == b"big",
            "{ctx}: prev back onto the large value"
        );
        assert_big_eq(
            Some(it.value()),
            &big,
            &format!("{ctx}: iterator value after prev"),
        );
    };
    check(&e, "memtable");
    let e = reopen(f, dir, e);
    check(&e, "after reopen without flush");
    flush(&e);
    check(&e, "after flush");
    compact(&e, None, None);
    let e = reopen(f, dir, e);
    check(&e, "after compaction and reopen");

    put(&e, b"big", b"now small");
    assert_get(
        &e,
        b"big",
        Some(&b"now small"[..]),
        "overwrite of a large value",
    );
    let mut b = WriteBatch::new();
    b.put(b"big2", &big);
    b.put(b"d", b"small");
    write(&e, b);
    let e = reopen(f, dir, e);
    assert_big_eq(
        get(&e, b"big2").as_deref(),
        &big,
        "large value written in a batch, after reopen",
    );
    assert_get(
        &e,
        b"big",
        Some(&b"now small"[..]),
        "overwrite, after reopen",
    );
    delete(&e, b"big2");
    flush(&e);
    compact(&e, None, None);
    assert_get(&e, b"big2", None, "deleted large value");
}

/// A key of exactly [`MAX_KEY_LEN`] bytes, with a small value and with a value of `value_len`
/// bytes, round-trips through put, get, seek, flush, reopen and delete.
///
/// Not run by [`run_all`](super::run_all): engines call it with the size they can afford,
/// up to [`MAX_VALUE_LEN`] (which needs about three times that much memory: the caller's
/// value, the batch copy and the value read back).
pub fn check_max_size_values<F: EngineFactory>(f: &F, dir: &Path, value_len: usize) {
    assert!(
        value_len <= MAX_VALUE_LEN,
        "value_len {value_len} is over MAX_VALUE_LEN"
    );
    let mut k1 = pattern(1, MAX_KEY_LEN);
    k1[0] = b'm';
    let mut k2 = k1.clone();
    k2[MAX_KEY_LEN - 1] ^= 0xff;
    let (k1, k2) = if k1 < k2 { (k1, k2) } else { (k2, k1) };
    let big = pattern(2, value_len);
    let e = open(f, dir);
    put(&e, &k1, b"small");
    e.put(&k2, &big, WriteOptions::default())
        .unwrap_or_else(|err| {
            panic!("put of a {value_len} byte value under a MAX_KEY_LEN key failed: {err}")
        });
    let check = |e: &F::Engine, ctx: &str| {
        assert_get(
            e,
            &k1,
            Some(&b"small"[..]),
            format_args!("{ctx}: MAX_KEY_LEN key"),
        );
        let got = e
            .get(&k2)
            .unwrap_or_else(|err| panic!("{ctx}: get of the maximal entry failed: {err}"));
        assert_big_eq(
            got.as_deref(),
            &big,
            &format!("{ctx}: get of the maximal entry"),
        );
        drop(got);
        let mut it = iter(e, None, None, None);
        it.seek(&k1);
        assert!(
            it.valid() && it.key() == k1.as_slice(),
            "{ctx}: seek to the MAX_KEY_LEN key"
        );
        it.next();
        assert!(
            it.valid() && it.key() == k2.as_slice(),
            "{ctx}: next onto the maximal entry"
        );
        assert_big_eq(
            Some(it.value()),
            &big,
            &format!("{ctx}: iterator value of the maximal entry"),
        );
    };
    check(&e, "memtable");
    flush(&e);
    check(&e, "after flush");
    let e = reopen(f, dir, e);
    check(&e, "after reopen");
    delete(&e, &k2);
    delete(&e, &k1);
    let e = reopen(f, dir, e);
    assert_get(&e, &k1, None, "deleted MAX_KEY_LEN key");
    assert_get(&e, &k2, None, "deleted maximal entry");
}

#[track_caller]
fn assert_invalid_argument(r: crate::Result<()>, what: &str) {
    match r {
        Err(Error::InvalidArgument(_)) => {}
        Err(other) => panic!("{what} must fail with Error::InvalidArgument, got: {other}"),
        Ok(()) => panic!("{what} must fail with Error::InvalidArgument, but it succeeded"),
    }
}

/// A key of `MAX_KEY_LEN + 1` bytes and a value of `MAX_VALUE_LEN + 1` bytes are refused with
/// [`Error::InvalidArgument`] through `put`, `delete` and `write`, and a refused batch writes
/// none of its operations, not even after reopen (the log must not have kept it). A key of
/// exactly `MAX_KEY_LEN` bytes is accepted.
///
/// The oversized value is a 512 MiB zeroed allocation (untouched pages); building the batch
/// copies it, which makes this check take about a second.
pub fn check_oversized_rejected<F: EngineFactory>(f: &F, dir: &Path) {
    let e = open(f, dir);
    let mut x = Expected::default();
    put(&e, b"keep", b"1");
    x.put(b"keep", b"1");
    let long_key = vec![b'k'; MAX_KEY_LEN + 1];
    let opts = WriteOptions::default();

    assert_invalid_argument(
        e.put(&long_key, b"v", opts),
        "put with a MAX_KEY_LEN+1 byte key",
    );
    assert_invalid_argument(
        e.delete(&long_key, opts),
        "delete with a MAX_KEY_LEN+1 byte key",
    );
    let mut b = WriteBatch::new();
    b.put(b"a", b"1");
    b.put(&long_key, b"v");
    b.put(b"b", b"1");
    assert_invalid_argument(e.write(b, opts), "a batch holding a MAX_KEY_LEN+1 byte key");
    let mut b = WriteBatch::new();
    b.delete(b"keep");
    b.delete(&long_key);
    assert_invalid_argument(
        e.write(b, opts),
        "a batch deleting a MAX_KEY_LEN+1 byte key",
    );
    x.touched.extend([b"a".to_vec(), b"b".to_vec()]);
    assert_view(&e, None, &x, "after refused oversized keys");

    let max_key = vec![b'k'; MAX_KEY_LEN];
    put(&e, &max_key, b"fits");
    x.put(&max_key, b"fits");

    {
        // One attempt only: building the batch copies the 512 MiB (over a second of page
        // faults), and the batch form also shows that nothing of a refused batch is written.
        let huge = vec![0u8; MAX_VALUE_LEN + 1];
        let mut b = WriteBatch::new();
        b.put(b"c", b"1");
        b.put(b"v", &huge);
        drop(huge);
        assert_invalid_argument(
            e.write(b, opts),
            "a batch holding a MAX_VALUE_LEN+1 byte value",
        );
    }
    x.touched.extend([b"c".to_vec(), b"v".to_vec()]);
    assert_view(&e, None, &x, "after refused oversized values");
    let e = reopen(f, dir, e);
    assert_view(&e, None, &x, "refused writes after reopen");
}

/// Statistics are sane: after writes `user_bytes_written > 0` and never decreases while the
/// engine is open; the amplification ratios are finite and `>= 0`; the hit rate is within
/// `[0, 1]`; a healthy engine has no `read_only_reason`; the report prints.
pub fn check_stats_sanity<F: EngineFactory>(f: &F, dir: &Path) {
    let e = open(f, dir);
    #[track_caller]
    fn sane(s: &crate::EngineStats, ctx: &str) {
        let wa = s.write_amplification();
        assert!(
            wa.is_finite() && wa >= 0.0,
            "{ctx}: write_amplification() = {wa}"
        );
        let sa = s.space_amplification();
        assert!(
            sa.is_finite() && sa >= 0.0,
            "{ctx}: space_amplification() = {sa}"
        );
        let hr = s.block_cache_hit_rate();
        assert!(
            (0.0..=1.0).contains(&hr),
            "{ctx}: block_cache_hit_rate() = {hr}"
        );
        assert_eq!(
            s.read_only_reason, None,
            "{ctx}: a healthy engine reports read-only"
        );
        assert!(!s.to_string().is_empty(), "{ctx}: empty stats report");
    }
    sane(&e.stats(), "fresh engine");
    for i in 0..200u32 {
        put(
            &e,
            format!("stats{i:04}").as_bytes(),
            &pattern(u64::from(i), 1024),
        );
    }
    let s1 = e.stats();
    sane(&s1, "after writes");
    assert!(
        s1.user_bytes_written > 0,
        "user_bytes_written is 0 after 200 KiB of puts"
    );
    flush(&e);
    compact(&e, None, None);
    for i in 0..10u32 {
        let _ = get(&e, format!("stats{i:04}").as_bytes());
    }
    let s2 = e.stats();
    sane(&s2, "after flush, compaction and reads");
    assert!(
        s2.user_bytes_written >= s1.user_bytes_written,
        "user_bytes_written went down from {} to {}",
        s1.user_bytes_written,
        s2.user_bytes_written
    );
}
