//! SORT and SORT_RO as Redis 7.0's `sortCommandGeneric` computes them: which elements are
//! read, how they are weighed (the element, or a string or hash field a pattern names), the
//! comparison, the sorting algorithm (which decides the order of equal weights), and LIMIT.
//!
//! The same function serves the read (SORT, SORT_RO: on the connection or in a transaction)
//! and the write (SORT ... STORE, inside its op), so both see one computation.
//!
//! Redis's choices kept here, each visible to a client:
//! - A number is read by C's `strtod` over the text up to its first NUL byte (hex, `inf`,
//!   leading blanks and an empty text, 0, accepted); trailing bytes, NaN or an overflow fail
//!   the whole sort. A missing weight is 0 (numeric) or sorts first (ALPHA).
//! - Equal numbers fall back to the elements' bytes; equal ALPHA weights from a pattern do
//!   not. Without a partial LIMIT the sort is stable (glibc's `qsort` is a merge sort);
//!   with a BY pattern and a LIMIT short of the whole, Redis runs its partial quicksort
//!   (`pqsort`, Bentley and McIlroy's), reproduced step for step so that ties come out
//!   in the same order.
//! - ALPHA compares as `strcoll` in the C locale (bytes up to the first NUL) for a reply, and
//!   the whole bytes for STORE.
//! - `BY` without `*` keeps the stored order: a list's or a sorted set's (by rank, DESC from
//!   the other end, LIMIT over that order), a set's as it iterates (DESC ignored) — except
//!   with STORE or in a script, where a set is sorted ALPHA so the result does not depend on
//!   its layout.

use std::cmp::Ordering;

use bytes::Bytes;

use crate::collections::hash::Hash;
use crate::collections::list::List;
use crate::collections::set::SetValue;
use crate::collections::zset::ZSet;
use crate::error::{Error, Result};
use crate::keys::{Keys, RawRead};
use crate::layout::{CorruptRecord, Kind};
use crate::op::{SortBy, SortSpec};

/// Where the sort runs, which changes how Redis compares and whether a set keeps its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SortMode {
    /// For STORE: ALPHA compares whole bytes, and a set is sorted even under `BY nosort`.
    pub store: bool,
    /// Called from a script: a set is sorted even under `BY nosort`.
    pub script: bool,
}

/// One element being sorted and its weight.
struct Item {
    elem: Bytes,
    score: f64,
    /// ALPHA's weight from a BY pattern (`None`: the key or field is missing).
    cmp: Option<Bytes>,
}

/// SORT's result, flat: per selected element, the element itself (no GET) or one value per
/// GET pattern (`None`: missing).
pub fn sort<T: RawRead + ?Sized>(
    k: &mut Keys<'_, T>,
    spec: &SortSpec,
    mode: SortMode,
) -> Result<Vec<Option<Bytes>>> {
    // Every read of the command sees one state.
    k.io.pin();
    let src = match k.get(&spec.key)? {
        None => Source::Missing,
        Some(r) => match r.kind {
            Kind::List => List::load(k, &spec.key)?.map_or(Source::Missing, Source::List),
            Kind::Set => SetValue::load(k, &spec.key)?.map_or(Source::Missing, Source::Set),
            Kind::ZSet => ZSet::load(k, &spec.key)?.map_or(Source::Missing, Source::ZSet),
            Kind::String | Kind::Hash | Kind::Stream => return Err(Error::WrongType),
        },
    };
    let mut alpha = spec.alpha;
    let mut by = spec.by.clone();
    if by == SortBy::NoSort && matches!(src, Source::Set(_)) && (mode.store || mode.script) {
        alpha = true;
        by = SortBy::Element;
    }
    let dontsort = by == SortBy::NoSort;
    let len = i64::try_from(src.len()).map_err(|_| Error::Overflow)?;
    let (mut start, mut end) = limits(len, spec.offset, spec.count);

    let mut items: Vec<Item> = Vec::new();
    if dontsort && !matches!(src, Source::Set(_)) {
        // Only the span asked for, in stored order from the end DESC names.
        if end >= start {
            let (from, to) = if spec.desc {
                (len - 1 - end, len - 1 - start)
            } else {
                (start, end)
            };
            let mut elems = src.span(k, from as u64, to as u64)?;
            if spec.desc {
                elems.reverse();
            }
            items = elems.into_iter().map(item).collect();
            end -= start;
            start = 0;
        }
    } else {
        let elems = match &src {
            Source::Set(s) => s.members(k)?,
            _ if len == 0 => Vec::new(),
            _ => src.span(k, 0, len as u64 - 1)?,
        };
        items = elems.into_iter().map(item).collect();
    }

    if !dontsort {
        weigh(k, &mut items, &by, alpha)?;
        let cmp = |a: &Item, b: &Item| compare(a, b, alpha, &by, mode.store, spec.desc);
        let n = items.len() as i64;
        if matches!(by, SortBy::Pattern(_)) && (start != 0 || end != n - 1) {
            pqsort(&mut items, &cmp, start as isize, end as isize);
        } else {
            items.sort_by(cmp);
        }
    }

    let mut out = Vec::new();
    if end < start {
        return Ok(out);
    }
    // The collection holds as many elements as its header says (else it is corrupt).
    let selected = items
        .get(start as usize..=end as usize)
        .ok_or(Error::Corrupt(CorruptRecord("collection length")))?;
    for it in selected {
        if spec.gets.is_empty() {
            out.push(Some(it.elem.clone()));
        }
        for g in &spec.gets {
            out.push(lookup(k, g, &it.elem)?);
        }
    }
    Ok(out)
}

fn item(elem: Bytes) -> Item {
    Item {
        elem,
        score: 0.0,
        cmp: None,
    }
}

/// The first and last positions output, Redis 7.0.15's clamping of LIMIT: an empty span is
/// `end == start - 1`.
fn limits(len: i64, offset: i64, count: i64) -> (i64, i64) {
    let mut start = offset.max(0).min(len);
    let count = count.max(-1).min(len);
    let mut end = if count < 0 {
        len - 1
    } else {
        start + count - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    (start, end)
}

/// The collection sorted.
enum Source {
    Missing,
    List(List),
    Set(SetValue),
    ZSet(ZSet),
}

impl Source {
    fn len(&self) -> u64 {
        match self {
            Source::Missing => 0,
            Source::List(l) => l.len(),
            Source::Set(s) => s.len(),
            Source::ZSet(z) => z.len(),
        }
    }

    /// Elements `from..=to` (in range) of a list, or of a sorted set by rank, in stored order.
    fn span<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        from: u64,
        to: u64,
    ) -> Result<Vec<Bytes>> {
        match self {
            Source::List(l) => l.range(k, from, to),
            Source::ZSet(z) => {
                let (Ok(a), Ok(b)) = (i64::try_from(from), i64::try_from(to)) else {
                    return Err(Error::Overflow);
                };
                Ok(z.range_by_rank(k, a, b, false)?
                    .into_iter()
                    .map(|(m, _)| m)
                    .collect())
            }
            Source::Missing | Source::Set(_) => Ok(Vec::new()),
        }
    }
}

/// Loads each item's weight: a score, or ALPHA's compared bytes from a pattern.
fn weigh<T: RawRead + ?Sized>(
    k: &mut Keys<'_, T>,
    items: &mut [Item],
    by: &SortBy,
    alpha: bool,
) -> Result<()> {
    if alpha && !matches!(by, SortBy::Pattern(_)) {
        // ALPHA by the elements compares them directly.
        return Ok(());
    }
    for it in items.iter_mut() {
        let weight = match by {
            SortBy::Pattern(p) => match lookup(k, p, &it.elem)? {
                Some(v) => v,
                None => continue,
            },
            _ => it.elem.clone(),
        };
        if alpha {
            if matches!(by, SortBy::Pattern(_)) {
                it.cmp = Some(weight);
            }
        } else {
            it.score = parse_weight(&weight).ok_or(Error::SortWeightNotDouble)?;
        }
    }
    Ok(())
}

/// `sortCompare`: numbers, equal ones by the elements' bytes; ALPHA by a pattern's values (a
/// missing one first, equal ones tied) or by the elements.
fn compare(a: &Item, b: &Item, alpha: bool, by: &SortBy, store: bool, desc: bool) -> Ordering {
    let o = if !alpha {
        match a.score.partial_cmp(&b.score) {
            Some(Ordering::Equal) | None => a.elem.cmp(&b.elem),
            Some(o) => o,
        }
    } else if matches!(by, SortBy::Pattern(_)) {
        match (&a.cmp, &b.cmp) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) if store => x.cmp(y),
            (Some(x), Some(y)) => c_str(x).cmp(c_str(y)),
        }
    } else if store {
        a.elem.cmp(&b.elem)
    } else {
        c_str(&a.elem).cmp(c_str(&b.elem))
    };
    if desc {
        o.reverse()
    } else {
        o
    }
}

/// The bytes C string functions see: up to the first NUL.
fn c_str(b: &[u8]) -> &[u8] {
    b.split(|&c| c == 0).next().unwrap_or_default()
}

/// A weight as SORT reads it: `strtod` over the text up to the first NUL, which must take all
/// of it, without NaN or a range error.
fn parse_weight(text: &[u8]) -> Option<f64> {
    let text = c_str(text);
    let (v, used, range) = crate::num::strtod_prefix(text);
    (used == text.len() && !range && !v.is_nan()).then_some(v)
}

/// What a pattern names for an element: the element itself (`#`), or a key and, after
/// `->`, a hash field; `None` without a `*`.
#[derive(Debug, PartialEq, Eq)]
enum Named<'p> {
    Element,
    Key(Vec<u8>, Option<&'p [u8]>),
}

/// `lookupKeyByPattern`'s reading of a pattern: `#` alone is the element; otherwise the first
/// `*` is replaced by the element, and a `->` after it followed by at least one byte splits
/// off a hash field. The tests for `#`, `*` and `->` read the pattern as a C string (up to
/// its first NUL), the key and the field take the bytes after it too.
fn named<'p>(pattern: &'p [u8], elem: &[u8]) -> Option<Named<'p>> {
    let c = c_str(pattern);
    if c == b"#" {
        return Some(Named::Element);
    }
    let star = c.iter().position(|&b| b == b'*')?;
    let arrow = c[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|i| star + 1 + i)
        .filter(|&f| f + 2 < c.len());
    let (postfix_end, field) = match arrow {
        Some(f) => (f, Some(&pattern[f + 2..])),
        None => (pattern.len(), None),
    };
    let mut key = Vec::with_capacity(pattern.len() + elem.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(elem);
    key.extend_from_slice(&pattern[star + 1..postfix_end]);
    Some(Named::Key(key, field))
}

/// `lookupKeyByPattern`: the value a pattern names for an element (see [`named`]): the key
/// read as a string, or the field of the key read as a hash. A missing key or field, a key
/// of another kind, or a pattern without `*`: `None`.
fn lookup<T: RawRead + ?Sized>(
    k: &mut Keys<'_, T>,
    pattern: &[u8],
    elem: &Bytes,
) -> Result<Option<Bytes>> {
    let (key, field) = match named(pattern, elem) {
        None => return Ok(None),
        Some(Named::Element) => return Ok(Some(elem.clone())),
        Some(Named::Key(key, field)) => (key, field),
    };
    let Some(rec) = k.get(&key)? else {
        return Ok(None);
    };
    match field {
        None if rec.kind == Kind::String => Ok(Some(rec.value)),
        Some(f) if rec.kind == Kind::Hash => match Hash::load(k, &key)? {
            Some(h) => h.get(k, f),
            None => Ok(None),
        },
        _ => Ok(None),
    }
}

/// Redis's `pqsort` (`pqsort.c`, Bentley and McIlroy's quicksort that leaves unsorted the
/// parts wholly outside positions `lrange..=rrange`), step for step, so that elements the
/// comparison ties come out where Redis puts them.
fn pqsort<T>(v: &mut [T], cmp: &impl Fn(&T, &T) -> Ordering, lrange: isize, rrange: isize) {
    let mut a: isize = 0;
    let mut n: isize = v.len() as isize;
    // Every index below stays within `v` by construction, as the C code's pointers do.
    let c = |v: &[T], x: isize, y: isize| cmp(&v[x as usize], &v[y as usize]);
    let sw = |v: &mut [T], x: isize, y: isize| v.swap(x as usize, y as usize);
    // Skip a part lying wholly before or after the range.
    let outside = |lo: isize, len: isize| {
        let hi = lo + len - 1;
        (lrange < lo && rrange < lo) || (lrange > hi && rrange > hi)
    };
    loop {
        if n < 7 {
            for pm in a + 1..a + n {
                let mut pl = pm;
                while pl > a && c(v, pl - 1, pl) == Ordering::Greater {
                    sw(v, pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, &c, pl, pl + d, pl + 2 * d);
                pm = med3(v, &c, pm - d, pm, pm + d);
                pn = med3(v, &c, pn - 2 * d, pn - d, pn);
            }
            pm = med3(v, &c, pl, pm, pn);
        }
        sw(v, a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                let r = c(v, pb, a);
                if r == Ordering::Greater {
                    break;
                }
                if r == Ordering::Equal {
                    sw(v, pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let r = c(v, pc, a);
                if r == Ordering::Less {
                    break;
                }
                if r == Ordering::Equal {
                    sw(v, pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            sw(v, pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let r = (pa - a).min(pb - pa);
        for i in 0..r {
            sw(v, a + i, pb - r + i);
        }
        let r = (pd - pc).min(pn - pd - 1);
        for i in 0..r {
            sw(v, pb + i, pn - r + i);
        }
        let r = pb - pa;
        if r > 1 && !outside(a, r) {
            pqsort_from(v, cmp, a, r, lrange, rrange);
        }
        let r = pd - pc;
        if r <= 1 {
            return;
        }
        a = pn - r;
        n = r;
        if outside(a, n) {
            return;
        }
    }
}

/// [`pqsort`]'s recursion on `v[a..a + n]`.
fn pqsort_from<T>(
    v: &mut [T],
    cmp: &impl Fn(&T, &T) -> Ordering,
    a: isize,
    n: isize,
    lrange: isize,
    rrange: isize,
) {
    let part = &mut v[a as usize..(a + n) as usize];
    pqsort(part, cmp, lrange - a, rrange - a);
}

/// The median of three positions, as `pqsort.c`'s `med3` picks it.
fn med3<T>(
    v: &[T],
    c: &impl Fn(&[T], isize, isize) -> Ordering,
    a: isize,
    b: isize,
    d: isize,
) -> isize {
    use Ordering::{Greater, Less};
    if c(v, a, b) == Less {
        if c(v, b, d) == Less {
            b
        } else if c(v, a, d) == Less {
            d
        } else {
            a
        }
    } else if c(v, b, d) == Greater {
        b
    } else if c(v, a, d) == Less {
        a
    } else {
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_clamp_as_redis_7_0_15() {
        // (len, offset, count) -> (start, end); an empty span ends before it starts.
        assert_eq!(limits(5, 0, -1), (0, 4));
        assert_eq!(limits(5, 1, 2), (1, 2));
        assert_eq!(limits(5, -3, 2), (0, 1));
        assert_eq!(limits(5, 2, 100), (2, 4));
        assert_eq!(limits(5, 5, 1), (4, 3));
        assert_eq!(limits(5, 2, 0), (2, 1));
        assert_eq!(limits(5, 2, -7), (2, 4));
        assert_eq!(limits(5, i64::MAX, i64::MAX), (4, 3));
        assert_eq!(limits(5, 2, i64::MAX), (2, 4));
        assert_eq!(limits(0, 0, -1), (-1, -2));
        assert_eq!(limits(0, i64::MIN, i64::MIN), (-1, -2));
    }

    #[test]
    fn patterns_name_keys_and_fields_as_redis_reads_them() {
        let key = |k: &[u8], f: Option<&'static [u8]>| Some(Named::Key(k.to_vec(), f));
        assert_eq!(named(b"#", b"e"), Some(Named::Element));
        assert_eq!(named(b"#\0x", b"e"), Some(Named::Element));
        assert_eq!(named(b"##", b"e"), None);
        assert_eq!(named(b"nosort", b"e"), None);
        assert_eq!(named(b"w_*", b"e"), key(b"w_e", None));
        assert_eq!(named(b"*", b""), key(b"", None));
        // Only the first `*` is replaced.
        assert_eq!(named(b"a*b*", b"e"), key(b"aeb*", None));
        assert_eq!(named(b"h_*->f", b"e"), key(b"h_e", Some(b"f")));
        assert_eq!(named(b"h_*x->fg->h", b"e"), key(b"h_ex", Some(b"fg->h")));
        // A `->` ending the pattern, or before the `*`, is part of the key.
        assert_eq!(named(b"x:*->", b"a"), key(b"x:a->", None));
        assert_eq!(named(b"a->*", b"e"), key(b"a->e", None));
        // C-string tests: a `*` or a field after a NUL is not seen, yet the bytes after the
        // NUL belong to the key (or to the field).
        assert_eq!(named(b"w_\0*", b"e"), None);
        assert_eq!(named(b"w_*\0x", b"e"), key(b"w_e\0x", None));
        assert_eq!(named(b"h_*->\0f", b"e"), key(b"h_e->\0f", None));
        assert_eq!(named(b"h_*->f\0g", b"e"), key(b"h_e", Some(b"f\0g")));
    }

    #[test]
    fn weights_read_as_strtod_reads_them() {
        assert_eq!(parse_weight(b"1.5"), Some(1.5));
        assert_eq!(parse_weight(b""), Some(0.0));
        assert_eq!(parse_weight(b" 7"), Some(7.0));
        assert_eq!(parse_weight(b"0x10"), Some(16.0));
        assert_eq!(parse_weight(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_weight(b"5\0junk"), Some(5.0));
        for bad in [
            &b"7 "[..],
            b"x",
            b"nan",
            b"1e400",
            b"-1e400",
            b"1e-400",
            b"1,5",
        ] {
            assert_eq!(parse_weight(bad), None, "{bad:?}");
        }
    }

    fn item(elem: &str, score: f64, cmp: Option<&str>) -> Item {
        Item {
            elem: Bytes::copy_from_slice(elem.as_bytes()),
            score,
            cmp: cmp.map(|c| Bytes::copy_from_slice(c.as_bytes())),
        }
    }

    #[test]
    fn comparisons_follow_sort_compare() {
        use Ordering::*;
        let pat = SortBy::Pattern(Bytes::from_static(b"w_*"));
        let el = SortBy::Element;
        // Equal numbers fall back to the elements' bytes, reversed by DESC.
        let (a, b) = (item("b", 1.0, None), item("a", 1.0, None));
        assert_eq!(compare(&a, &b, false, &el, false, false), Greater);
        assert_eq!(compare(&a, &b, false, &el, false, true), Less);
        // ALPHA by a pattern: a missing weight first, two missing ones tied, no fallback.
        let (x, y) = (item("a", 0.0, None), item("b", 0.0, Some("")));
        assert_eq!(compare(&x, &y, true, &pat, false, false), Less);
        assert_eq!(compare(&x, &x, true, &pat, false, false), Equal);
        let (x, y) = (item("a", 0.0, Some("k")), item("b", 0.0, Some("k")));
        assert_eq!(compare(&x, &y, true, &pat, false, false), Equal);
        // C strings for a reply, whole bytes for STORE.
        let (x, y) = (item("a\0z", 0.0, None), item("a\0b", 0.0, None));
        assert_eq!(compare(&x, &y, true, &el, false, false), Equal);
        assert_eq!(compare(&x, &y, true, &el, true, false), Greater);
    }

    #[test]
    fn pqsort_sorts_the_range_asked_for() {
        // Weights with many ties under a total order of (weight, index): every span is
        // sorted as a full sort sorts it.
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for n in [0usize, 1, 6, 7, 8, 40, 41, 100, 333] {
            for _ in 0..20 {
                let v: Vec<(usize, usize)> = (0..n).map(|i| (next() % 10, i)).collect();
                let mut full = v.clone();
                full.sort();
                let (l, r) = if n == 0 {
                    (0, -1)
                } else {
                    ((next() % n) as isize, (next() % n) as isize)
                };
                let (l, r) = (l.min(r), l.max(r));
                let mut part = v.clone();
                pqsort(
                    &mut part,
                    &|a: &(usize, usize), b: &(usize, usize)| a.cmp(b),
                    l,
                    r,
                );
                if n > 0 {
                    assert_eq!(part[l as usize..=r as usize], full[l as usize..=r as usize]);
                }
                let mut sorted = part.clone();
                sorted.sort();
                assert_eq!(sorted, full, "a permutation");
            }
        }
    }

    /// Ties keep Redis's `pqsort` order: the permutation below is what `pqsort.c` leaves for
    /// these keys when only their first element is compared (worked through by hand on its
    /// insertion sort, n < 7).
    #[test]
    fn pqsort_ties_follow_insertion_order_below_seven() {
        let mut v = vec![(1, 'a'), (0, 'b'), (1, 'c'), (0, 'd'), (1, 'e')];
        pqsort(
            &mut v,
            &|a: &(i32, char), b: &(i32, char)| a.0.cmp(&b.0),
            0,
            1,
        );
        assert_eq!(v, [(0, 'b'), (0, 'd'), (1, 'a'), (1, 'c'), (1, 'e')]);
    }
}
