//! Redis's DUMP payload: one value in its RDB encoding, as DUMP returns it and RESTORE and
//! MIGRATE take it, so that values move between Rialto and redis-server 7.0 either way.
//!
//! ```text
//! payload  type (u8) | value (RDB encoding of that type) | rdb version (u16 LE) | crc (u64 LE)
//!          crc: Redis's CRC-64 (Jones) of every byte before it
//! length   00xxxxxx (6 bits) | 01xxxxxx +1 byte (14 bits, BE) | 0x80 + u32 BE | 0x81 + u64 BE
//!          11xxxxxx: a string in a special encoding: 0 i8, 1 i16, 2 i32 (LE), 3 LZF
//! string   length | bytes,  or 0xC0-0xC2 | integer,  or 0xC3 | clen | len | LZF data
//! ```
//!
//! [`decode`] reads every type and encoding Redis 7.0 (RDB version 10) writes for strings,
//! lists, sets, sorted sets and hashes, and the older ziplist-based ones: see [`DumpType`].
//! Every length is checked against the bytes left before anything is allocated (an LZF
//! string's declared size against what its compressed bytes can expand to), so a malicious
//! payload fails with [`PayloadError::BadData`], never a panic or a huge allocation.
//! Streams are read in Redis 7.0's and 6's encodings and written in 7.0's (see [`stream`]);
//! modules and zipmap hashes are refused as data this keyspace cannot hold.
//!
//! [`encode`] writes the simplest types Redis 7.0 loads into its own compact encodings, as
//! it does when it reads an RDB file: a string as an RDB string (integers of up to 32 bits in
//! the integer encoding, nothing LZF-compressed), a list as `LIST` (1), a set as `SET` (2), a
//! sorted set as `ZSET_2` (5, binary doubles) and a hash as `HASH` (4) — each a length and its
//! items. Redis's loader converts a small one to a listpack or intset by its own thresholds,
//! so a value keeps its encoding there; no listpack writer is needed here.

mod crc64;
mod lzf;
mod packed;
pub mod stream;

use std::collections::HashSet;

use bytes::Bytes;

pub use crc64::crc64;

/// The RDB version Redis 7.0 writes, and the newest a payload may carry.
pub const RDB_VERSION: u16 = 10;

/// Why a payload was refused (the server words them as Redis does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    /// Too short, from a newer RDB version, or its checksum does not match.
    #[error("DUMP payload version or checksum are wrong")]
    VersionOrChecksum,
    /// The value does not decode, is empty, has duplicate members, or is of a type this
    /// keyspace does not hold.
    #[error("bad data format")]
    BadData,
}

/// A value as a payload carries it.
#[derive(Debug, Clone, PartialEq)]
pub enum DumpValue {
    /// A string.
    String(Bytes),
    /// A list's elements, head first.
    List(Vec<Bytes>),
    /// A set's members.
    Set(Vec<Bytes>),
    /// A sorted set's members and scores (never NaN).
    ZSet(Vec<(Bytes, f64)>),
    /// A hash's fields and values.
    Hash(Vec<(Bytes, Bytes)>),
    /// A stream: its nodes, entries, counters and consumer groups.
    Stream(Box<stream::StreamDump>),
}

/// The RDB object types (`rdb.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum DumpType {
    String = 0,
    List = 1,
    Set = 2,
    /// Scores as strings.
    ZSet = 3,
    Hash = 4,
    /// Scores as binary doubles.
    ZSet2 = 5,
    ListZiplist = 10,
    SetIntset = 11,
    ZSetZiplist = 12,
    HashZiplist = 13,
    /// Nodes of ziplists.
    ListQuicklist = 14,
    HashListpack = 16,
    ZSetListpack = 17,
    /// Redis 6's streams (no first id, deletion or entries-read counters).
    StreamListpacks = 15,
    /// Nodes of listpacks or single plain elements.
    ListQuicklist2 = 18,
    /// Redis 7.0's streams.
    StreamListpacks2 = 19,
    /// Redis 7.2's; its payloads carry RDB version 11, which the version check refuses first.
    SetListpack = 20,
}

impl DumpType {
    fn of(b: u8) -> Option<DumpType> {
        use DumpType as T;
        Some(match b {
            0 => T::String,
            1 => T::List,
            2 => T::Set,
            3 => T::ZSet,
            4 => T::Hash,
            5 => T::ZSet2,
            10 => T::ListZiplist,
            11 => T::SetIntset,
            12 => T::ZSetZiplist,
            13 => T::HashZiplist,
            14 => T::ListQuicklist,
            15 => T::StreamListpacks,
            16 => T::HashListpack,
            17 => T::ZSetListpack,
            18 => T::ListQuicklist2,
            19 => T::StreamListpacks2,
            20 => T::SetListpack,
            _ => return None,
        })
    }
}

type R<T> = Result<T, PayloadError>;

/// Checks the payload's footer, as Redis's `verifyDumpPayload`: at least the 10 footer bytes,
/// an RDB version no newer than [`RDB_VERSION`], and the checksum.
pub fn verify(payload: &[u8]) -> R<&[u8]> {
    let Some(body_len) = payload.len().checked_sub(10) else {
        return Err(PayloadError::VersionOrChecksum);
    };
    let (body, footer) = payload.split_at(body_len);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    if version > RDB_VERSION || crc64(&payload[..body_len + 2]) != u64::from_le_bytes(crc) {
        return Err(PayloadError::VersionOrChecksum);
    }
    Ok(body)
}

/// The value `payload` carries.
pub fn decode(payload: &[u8]) -> R<DumpValue> {
    let body = verify(payload)?;
    let mut r = Reader { b: body, at: 0 };
    let t = DumpType::of(r.byte()?).ok_or(PayloadError::BadData)?;
    r.object(t)
}

/// The payload of `v` (see the module's docs for the types chosen).
pub fn encode(v: &DumpValue) -> Vec<u8> {
    let mut out = Vec::new();
    match v {
        DumpValue::String(s) => {
            out.push(DumpType::String as u8);
            put_string(&mut out, s);
        }
        DumpValue::List(items) | DumpValue::Set(items) => {
            let t = if matches!(v, DumpValue::List(_)) {
                DumpType::List
            } else {
                DumpType::Set
            };
            out.push(t as u8);
            put_len(&mut out, items.len() as u64);
            for i in items {
                put_string(&mut out, i);
            }
        }
        DumpValue::ZSet(items) => {
            out.push(DumpType::ZSet2 as u8);
            put_len(&mut out, items.len() as u64);
            for (m, s) in items {
                put_string(&mut out, m);
                out.extend_from_slice(&s.to_le_bytes());
            }
        }
        DumpValue::Stream(st) => {
            out.push(DumpType::StreamListpacks2 as u8);
            stream::encode(&mut out, st);
        }
        DumpValue::Hash(items) => {
            out.push(DumpType::Hash as u8);
            put_len(&mut out, items.len() as u64);
            for (f, v) in items {
                put_string(&mut out, f);
                put_string(&mut out, v);
            }
        }
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 64 {
        out.push(n as u8);
    } else if n < 16_384 {
        out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
    } else if let Ok(n) = u32::try_from(n) {
        out.push(0x80);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// A string as Redis's `rdbSaveRawString` writes one of up to 11 bytes that reads as an
/// integer of at most 32 bits (its canonical form), else length and bytes.
fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= 11 {
        if let Some(n) = rialto_resp::parse_redis_int(s).filter(|n| n.to_string().as_bytes() == s) {
            if let Ok(v) = i8::try_from(n) {
                out.push(0xc0);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
            if let Ok(v) = i16::try_from(n) {
                out.push(0xc1);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
            if let Ok(v) = i32::try_from(n) {
                out.push(0xc2);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
        }
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// A length as the RDB format encodes it: a plain length, or the code of a special string
/// encoding.
enum Len {
    Plain(u64),
    Special(u8),
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn left(&self) -> usize {
        self.b.len() - self.at
    }

    fn take(&mut self, n: u64) -> R<&'a [u8]> {
        let n = usize::try_from(n).map_err(|_| PayloadError::BadData)?;
        if n > self.left() {
            return Err(PayloadError::BadData);
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn byte(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }

    fn len_or_special(&mut self) -> R<Len> {
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3f)),
            1 => Len::Plain((u64::from(b & 0x3f) << 8) | u64::from(self.byte()?)),
            3 => Len::Special(b & 0x3f),
            _ => match b {
                0x80 => Len::Plain(u64::from(u32::from_be_bytes(self.array()?))),
                0x81 => Len::Plain(u64::from_be_bytes(self.array()?)),
                _ => return Err(PayloadError::BadData),
            },
        })
    }

    fn array<const N: usize>(&mut self) -> R<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N as u64)?);
        Ok(a)
    }

    fn len(&mut self) -> R<u64> {
        match self.len_or_special()? {
            Len::Plain(n) => Ok(n),
            Len::Special(_) => Err(PayloadError::BadData),
        }
    }

    /// A count of items, each taking at least `min` bytes: more than the bytes left could
    /// hold is damage, refused before anything is allocated for them.
    fn count(&mut self, min: u64) -> R<usize> {
        let n = self.len()?;
        if n == 0 || n.saturating_mul(min) > self.left() as u64 {
            return Err(PayloadError::BadData);
        }
        Ok(n as usize)
    }

    fn string(&mut self) -> R<Bytes> {
        match self.len_or_special()? {
            Len::Plain(n) => Ok(Bytes::copy_from_slice(self.take(n)?)),
            Len::Special(0) => Ok(Bytes::from((self.byte()? as i8).to_string())),
            Len::Special(1) => Ok(Bytes::from(i16::from_le_bytes(self.array()?).to_string())),
            Len::Special(2) => Ok(Bytes::from(i32::from_le_bytes(self.array()?).to_string())),
            Len::Special(3) => {
                let clen = self.len()?;
                let len = self.len()?;
                let data = self.take(clen)?;
                // What `clen` bytes can expand to bounds the allocation.
                let max = (data.len() as u64).saturating_mul(lzf::MAX_RATIO as u64);
                if len == 0 || len > max || len > crate::MAX_USER_VALUE_LEN as u64 {
                    return Err(PayloadError::BadData);
                }
                lzf::decompress(data, len as usize)
                    .map(Bytes::from)
                    .ok_or(PayloadError::BadData)
            }
            Len::Special(_) => Err(PayloadError::BadData),
        }
    }

    /// A double as `ZSET` (type 3) writes it: a length byte (253 NaN, 254 +inf, 255 -inf)
    /// and that many characters.
    fn text_double(&mut self) -> R<f64> {
        match self.byte()? {
            253 => Err(PayloadError::BadData),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => score(self.take(u64::from(n))?),
        }
    }

    fn object(&mut self, t: DumpType) -> R<DumpValue> {
        use DumpType as T;
        Ok(match t {
            T::String => DumpValue::String(self.string()?),
            T::List => {
                let n = self.count(1)?;
                DumpValue::List((0..n).map(|_| self.string()).collect::<R<_>>()?)
            }
            T::Set => {
                let n = self.count(1)?;
                set((0..n).map(|_| self.string()).collect::<R<_>>()?)?
            }
            T::ZSet | T::ZSet2 => {
                let n = self.count(2)?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    let m = self.string()?;
                    let s = if t == T::ZSet2 {
                        let s = f64::from_le_bytes(self.array()?);
                        if s.is_nan() {
                            return Err(PayloadError::BadData);
                        }
                        s
                    } else {
                        self.text_double()?
                    };
                    items.push((m, s));
                }
                zset(items)?
            }
            T::Hash => {
                let n = self.count(2)?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push((self.string()?, self.string()?));
                }
                hash(items)?
            }
            T::StreamListpacks | T::StreamListpacks2 => {
                DumpValue::Stream(Box::new(self.stream(t == T::StreamListpacks2)?))
            }
            T::ListZiplist => list(packed::ziplist(&self.string()?)?)?,
            T::SetIntset => set(packed::intset(&self.string()?)?)?,
            T::SetListpack => set(packed::listpack(&self.string()?)?)?,
            T::ZSetZiplist | T::ZSetListpack => {
                let blob = self.string()?;
                let items = if t == T::ZSetZiplist {
                    packed::ziplist(&blob)?
                } else {
                    packed::listpack(&blob)?
                };
                zset(
                    pairs(items)?
                        .into_iter()
                        .map(|(m, s)| Ok((m, score(&s)?)))
                        .collect::<R<_>>()?,
                )?
            }
            T::HashZiplist | T::HashListpack => {
                let blob = self.string()?;
                let items = if t == T::HashZiplist {
                    packed::ziplist(&blob)?
                } else {
                    packed::listpack(&blob)?
                };
                hash(pairs(items)?)?
            }
            T::ListQuicklist | T::ListQuicklist2 => {
                let nodes = self.count(2)?;
                let mut items = Vec::new();
                for _ in 0..nodes {
                    if t == T::ListQuicklist {
                        items.extend(packed::ziplist(&self.string()?)?);
                        continue;
                    }
                    // The node's container: 1 a single plain element, 2 a listpack.
                    match self.len()? {
                        1 => items.push(self.string()?),
                        2 => items.extend(packed::listpack(&self.string()?)?),
                        _ => return Err(PayloadError::BadData),
                    }
                }
                list(items)?
            }
        })
    }
}

/// A score written as text (`%.17g`, or an integer in a listpack), never NaN.
fn score(text: &[u8]) -> R<f64> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| !s.is_nan())
        .ok_or(PayloadError::BadData)
}

fn pairs(items: Vec<Bytes>) -> R<Vec<(Bytes, Bytes)>> {
    if !items.len().is_multiple_of(2) {
        return Err(PayloadError::BadData);
    }
    let mut it = items.into_iter();
    let mut out = Vec::with_capacity(it.len() / 2);
    while let (Some(a), Some(b)) = (it.next(), it.next()) {
        out.push((a, b));
    }
    Ok(out)
}

fn distinct<'a>(keys: impl Iterator<Item = &'a Bytes>) -> R<()> {
    let mut seen = HashSet::new();
    for k in keys {
        if !seen.insert(k) {
            return Err(PayloadError::BadData);
        }
    }
    Ok(())
}

// A collection is never empty and never holds a member twice: Redis's loader refuses both.

fn list(items: Vec<Bytes>) -> R<DumpValue> {
    if items.is_empty() {
        return Err(PayloadError::BadData);
    }
    Ok(DumpValue::List(items))
}

fn set(items: Vec<Bytes>) -> R<DumpValue> {
    if items.is_empty() {
        return Err(PayloadError::BadData);
    }
    distinct(items.iter())?;
    Ok(DumpValue::Set(items))
}

fn zset(items: Vec<(Bytes, f64)>) -> R<DumpValue> {
    if items.is_empty() {
        return Err(PayloadError::BadData);
    }
    distinct(items.iter().map(|(m, _)| m))?;
    Ok(DumpValue::ZSet(items))
}

fn hash(items: Vec<(Bytes, Bytes)>) -> R<DumpValue> {
    if items.is_empty() {
        return Err(PayloadError::BadData);
    }
    distinct(items.iter().map(|(f, _)| f))?;
    Ok(DumpValue::Hash(items))
}

#[cfg(test)]
mod tests;
