//! Function libraries in the engine's keyspace, and the changes to them.
//!
//! ```text
//! library key            0x07 | name                    -> 1 (format) | n: varint | (len: varint | function name) * n | code
//! partition library key  0x09 | partition: u32 BE | name  -> the same
//! ```
//! One key per library: a FUNCTION LOAD writes one key, a restart reads them all back. A
//! cluster partition's libraries (changed through its log) have a set of their own.

use bytes::Bytes;
use rialto_engine::{EngineIterator, KvEngine};
use rialto_lsm::Db;
use rialto_txn::TxnContext;

use crate::error::{Error, LibraryError, Result};
use crate::op::{LibraryOp, LibrarySource, RestorePolicy};
use crate::value::Value;

/// Prefix of library keys.
pub const LIBRARY: u8 = 0x07;
/// Prefix of a cluster partition's library keys.
pub const PARTITION_LIBRARY: u8 = 0x09;
const FORMAT: u8 = 1;

/// The key prefix of a set of libraries: the server's, or a cluster partition's.
pub(crate) fn scope(partition: Option<u32>) -> Vec<u8> {
    match partition {
        None => vec![LIBRARY],
        Some(p) => {
            let mut s = vec![PARTITION_LIBRARY];
            s.extend_from_slice(&p.to_be_bytes());
            s
        }
    }
}

fn key(scope: &[u8], name: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(scope.len() + name.len());
    k.extend_from_slice(scope);
    k.extend_from_slice(name.as_bytes());
    k
}

fn range(scope: &[u8]) -> (Vec<u8>, Vec<u8>) {
    (scope.to_vec(), crate::layout::next_prefix(scope))
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn read_varint(b: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&x, rest) = b.split_first()?;
        *b = rest;
        v |= u64::from(x & 0x7f) << shift;
        if x & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn encode(lib: &LibrarySource) -> Vec<u8> {
    let mut v = vec![FORMAT];
    varint(&mut v, lib.functions.len() as u64);
    for f in &lib.functions {
        varint(&mut v, f.len() as u64);
        v.extend_from_slice(f.as_bytes());
    }
    v.extend_from_slice(&lib.code);
    v
}

fn decode(scope: &[u8], engine_key: &[u8], value: &[u8]) -> Result<LibrarySource> {
    let bad = || Error::BadOp("a stored library does not decode");
    let name = std::str::from_utf8(engine_key.get(scope.len()..).ok_or_else(bad)?)
        .map_err(|_| bad())?
        .to_string();
    let (&format, mut b) = value.split_first().ok_or_else(bad)?;
    if format != FORMAT {
        return Err(bad());
    }
    let n = read_varint(&mut b).ok_or_else(bad)?;
    let mut functions = Vec::new();
    for _ in 0..n {
        let len = read_varint(&mut b).ok_or_else(bad)? as usize;
        let f = b.get(..len).ok_or_else(bad)?;
        functions.push(std::str::from_utf8(f).map_err(|_| bad())?.to_string());
        b = &b[len..];
    }
    Ok(LibrarySource {
        name,
        functions,
        code: Bytes::copy_from_slice(b),
    })
}

/// Every library of `scope` the published state holds, in name order.
pub(crate) fn load_all(db: &Db, scope: &[u8]) -> Result<Vec<LibrarySource>> {
    let (lo, hi) = range(scope);
    let mut it = db.iter(rialto_engine::IterOptions {
        lower: Some(lo),
        upper: Some(hi),
        snapshot: None,
    })?;
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push(decode(scope, it.key(), it.value())?);
        it.next();
    }
    it.status()?;
    Ok(out)
}

/// Every library of `scope` as transaction `tx` sees it.
fn in_txn(tx: &mut TxnContext<'_, Db>, scope: &[u8]) -> Result<Vec<LibrarySource>> {
    let (lo, hi) = range(scope);
    let mut out = Vec::new();
    for k in tx.first_keys(&lo, &hi, usize::MAX)? {
        if let Some(v) = tx.get(&k)? {
            out.push(decode(scope, &k, &v)?);
        }
    }
    Ok(out)
}

/// Applies a library change to the set of `scope`: a function of the set after it is
/// registered by one library only.
pub(crate) fn apply(tx: &mut TxnContext<'_, Db>, scope: &[u8], op: &LibraryOp) -> Result<Value> {
    let stored = in_txn(tx, scope)?;
    let (remove, add): (Vec<String>, Vec<&LibrarySource>) = match op {
        LibraryOp::Put { lib, replace } => {
            let exists = stored.iter().any(|l| l.name == lib.name);
            if exists && !replace {
                return Err(LibraryError::Exists(lib.name.clone()).into());
            }
            (
                exists.then(|| lib.name.clone()).into_iter().collect(),
                vec![lib],
            )
        }
        LibraryOp::Delete { name } => {
            if !stored.iter().any(|l| &l.name == name) {
                return Err(LibraryError::NotFound.into());
            }
            (vec![name.clone()], Vec::new())
        }
        LibraryOp::Flush => (stored.iter().map(|l| l.name.clone()).collect(), Vec::new()),
        LibraryOp::Restore { libs, policy } => {
            let removed: Vec<String> = match policy {
                RestorePolicy::Flush => stored.iter().map(|l| l.name.clone()).collect(),
                RestorePolicy::Replace => stored
                    .iter()
                    .filter(|l| libs.iter().any(|n| n.name == l.name))
                    .map(|l| l.name.clone())
                    .collect(),
                RestorePolicy::Append => {
                    if let Some(l) = stored
                        .iter()
                        .find(|l| libs.iter().any(|n| n.name == l.name))
                    {
                        return Err(LibraryError::RestoredExists(l.name.clone()).into());
                    }
                    Vec::new()
                }
            };
            (removed, libs.iter().collect())
        }
    };
    // Every function of what stays and what comes, once. Function names are
    // case-insensitive across libraries (FCALL finds them whatever the case), not within
    // one, as in Redis.
    let mut seen = std::collections::HashSet::new();
    let kept = stored.iter().filter(|l| !remove.contains(&l.name));
    for f in kept.flat_map(|l| &l.functions) {
        seen.insert(f.to_ascii_lowercase());
    }
    for lib in &add {
        if let Some(f) = lib
            .functions
            .iter()
            .find(|f| seen.contains(&f.to_ascii_lowercase()))
        {
            return Err(LibraryError::FunctionExists(f.clone()).into());
        }
        seen.extend(lib.functions.iter().map(|f| f.to_ascii_lowercase()));
    }
    for name in &remove {
        tx.delete(&key(scope, name));
    }
    for lib in add {
        tx.put(&key(scope, &lib.name), &encode(lib));
    }
    Ok(Value::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_round_trips_through_its_key_and_value() {
        let lib = LibrarySource {
            name: "mylib".into(),
            functions: vec!["f1".into(), "other_fn".into()],
            code: Bytes::from_static(b"#!lua name=mylib\nredis.register_function('f1', ...)"),
        };
        for s in [scope(None), scope(Some(7))] {
            let k = key(&s, &lib.name);
            assert_eq!(decode(&s, &k, &encode(&lib)).unwrap(), lib);
            assert!(decode(&s, &k, b"\x09").is_err());
            assert!(decode(&s, &k, &[FORMAT, 5, 1]).is_err());
        }
        // The server's set and a partition's do not overlap.
        let (lo, hi) = range(&scope(None));
        let p = key(&scope(Some(0)), "x");
        assert!(!(lo..hi).contains(&p));
    }
}
