//! Hashes: reads over either encoding, and the writes of HSET, HSETNX, HDEL and the
//! increments, which keep a hash packed while it is small and make it large once it is not.

use bytes::Bytes;

use super::{
    field_key, field_of, hash_page, member_key, member_range, next_version, packed, Encodings,
    Header, SCAN_CHUNK,
};
use crate::error::{Error, Result};
use crate::keys::{check_key, check_value_len, Keys, RawRead, RawWrite};
use crate::layout::{CorruptRecord, Kind, Record};

/// A hash's fields as its record holds them.
#[derive(Debug)]
enum Fields {
    /// In the record, in insertion order.
    Packed(Vec<(Bytes, Bytes)>),
    /// Members of a collection version.
    Large(Header),
}

/// A live hash, as one state holds it.
#[derive(Debug)]
pub struct Hash {
    rec: Record,
    fields: Fields,
}

fn pairs(items: Vec<Bytes>) -> Result<Vec<(Bytes, Bytes)>> {
    if !items.len().is_multiple_of(2) {
        return Err(CorruptRecord("packed hash").into());
    }
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(f), Some(v)) = (it.next(), it.next()) {
        out.push((f, v));
    }
    Ok(out)
}

fn encode_pairs(fields: &[(Bytes, Bytes)]) -> Vec<u8> {
    packed::encode(fields.iter().flat_map(|(f, v)| [&f[..], &v[..]]))
}

impl Hash {
    /// The hash at `key`; `None` if there is no key, [`Error::WrongType`] if it holds
    /// something else. A large hash pins the reads that follow to one state.
    pub fn load<T: RawRead + ?Sized>(k: &mut Keys<'_, T>, key: &[u8]) -> Result<Option<Hash>> {
        let Some(rec) = k.get_kind(key, Kind::Hash)? else {
            return Ok(None);
        };
        if !rec.large {
            return Self::from_record(rec).map(Some);
        }
        k.io.pin();
        match k.get_kind(key, Kind::Hash)? {
            Some(rec) => Self::from_record(rec).map(Some),
            None => Ok(None),
        }
    }

    fn from_record(rec: Record) -> Result<Hash> {
        let fields = if rec.large {
            Fields::Large(Header::decode(&rec.value)?)
        } else {
            Fields::Packed(pairs(packed::decode(&rec.value)?)?)
        };
        Ok(Hash { rec, fields })
    }

    /// Whether it has no field: never, for a hash that exists (the last field's removal
    /// deletes the key).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many fields it has.
    pub fn len(&self) -> u64 {
        match &self.fields {
            Fields::Packed(p) => p.len() as u64,
            Fields::Large(h) => h.count,
        }
    }

    /// Whether its fields are separate keys.
    pub fn is_large(&self) -> bool {
        self.rec.large
    }

    /// The value of `field`.
    pub fn get<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        field: &[u8],
    ) -> Result<Option<Bytes>> {
        match &self.fields {
            Fields::Packed(p) => Ok(p.iter().find(|(f, _)| f == field).map(|(_, v)| v.clone())),
            Fields::Large(h) => Ok(k.io.get_raw(&field_key(h.version, field))?),
        }
    }

    /// Every field and its value: a packed hash's in insertion order, a large one's in the
    /// order of their hashes.
    pub fn entries<T: RawRead + ?Sized>(&self, k: &mut Keys<'_, T>) -> Result<Vec<(Bytes, Bytes)>> {
        let mut out = Vec::with_capacity(self.len().min(1 << 20) as usize);
        let mut cursor = 0;
        loop {
            let (page, next) = self.page(k, cursor, SCAN_CHUNK)?;
            out.extend(page);
            if next == 0 {
                return Ok(out);
            }
            cursor = next;
        }
    }

    /// About `count` fields from `cursor` on (0: the start), and the cursor of the next page
    /// (0: none). A packed hash gives all its fields at once. Cursors are field hashes, so a
    /// field present from the first page to the last is returned exactly once whatever
    /// changes meanwhile; a page never splits fields of one hash.
    pub fn page<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        cursor: u64,
        count: usize,
    ) -> Result<(Vec<(Bytes, Bytes)>, u64)> {
        let h = match &self.fields {
            Fields::Packed(p) => return Ok((p.clone(), 0)),
            Fields::Large(h) => h,
        };
        let v = h.version;
        hash_page(
            k,
            |c| member_key(v, &c.to_be_bytes()),
            &member_range(v).1,
            |key| field_of(v, key),
            cursor,
            count,
        )
    }
}

/// Writes of one hash inside a merger transaction.
struct Writer<'e> {
    old: Option<Record>,
    fields: Fields,
    enc: &'e Encodings,
    /// Whether the hash may become large (outside every store).
    may_grow: bool,
    /// An argument was past `hash-max-listpack-value`: large even if a later pair of the same
    /// write overwrote it, as Redis converts before it writes.
    long_argument: bool,
}

impl<'e> Writer<'e> {
    fn open<T: RawWrite + ?Sized>(
        k: &mut Keys<'_, T>,
        enc: &'e Encodings,
        key: &[u8],
    ) -> Result<Writer<'e>> {
        let may_grow = k.in_default_store(key);
        Ok(match Hash::load(k, key)? {
            Some(h) => Writer {
                old: Some(h.rec),
                fields: h.fields,
                enc,
                may_grow,
                long_argument: false,
            },
            None => Writer {
                old: None,
                fields: Fields::Packed(Vec::new()),
                enc,
                may_grow,
                long_argument: false,
            },
        })
    }

    fn get<T: RawWrite + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        field: &[u8],
    ) -> Result<Option<Bytes>> {
        match &self.fields {
            Fields::Packed(p) => Ok(p.iter().find(|(f, _)| f == field).map(|(_, v)| v.clone())),
            Fields::Large(h) => Ok(k.io.get_raw(&field_key(h.version, field))?),
        }
    }

    /// Sets `field`; whether it is new.
    fn put<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        field: &Bytes,
        value: &Bytes,
    ) -> Result<bool> {
        match &mut self.fields {
            Fields::Packed(p) => {
                if let Some(slot) = p.iter_mut().find(|(f, _)| f == field) {
                    slot.1 = value.clone();
                    return Ok(false);
                }
                p.push((field.clone(), value.clone()));
                Ok(true)
            }
            Fields::Large(h) => {
                let mk = field_key(h.version, field);
                let new = k.io.get_raw(&mk)?.is_none();
                k.io.put_raw(&mk, value);
                h.count += u64::from(new);
                Ok(new)
            }
        }
    }

    /// Removes `field`; whether it was there.
    fn remove<T: RawWrite + ?Sized>(&mut self, k: &mut Keys<'_, T>, field: &[u8]) -> Result<bool> {
        match &mut self.fields {
            Fields::Packed(p) => {
                let before = p.len();
                p.retain(|(f, _)| f != field);
                Ok(p.len() != before)
            }
            Fields::Large(h) => {
                let mk = field_key(h.version, field);
                if k.io.get_raw(&mk)?.is_none() {
                    return Ok(false);
                }
                k.io.delete_raw(&mk);
                h.count -= 1;
                h.note_deleted();
                Ok(true)
            }
        }
    }

    /// Whether a packed hash is past the thresholds (and may become large).
    fn outgrown(&self) -> bool {
        let Fields::Packed(p) = &self.fields else {
            return false;
        };
        let max = self.enc.hash_max_value();
        self.may_grow
            && (self.long_argument
                || p.len() > self.enc.hash_max_entries()
                || p.iter().any(|(f, v)| f.len() > max || v.len() > max))
    }

    /// Writes the hash's record (and, when it becomes large, its members); deletes the key
    /// if no field is left.
    fn finish<T: RawWrite + ?Sized>(mut self, k: &mut Keys<'_, T>, key: &[u8]) -> Result<()> {
        if self.outgrown() {
            if let Fields::Packed(p) = &self.fields {
                let version = next_version(k.io)?;
                for (f, v) in p {
                    k.io.put_raw(&field_key(version, f), v);
                }
                self.fields = Fields::Large(Header::new(version, p.len() as u64));
            }
        }
        let empty = match &self.fields {
            Fields::Packed(p) => p.is_empty(),
            Fields::Large(h) => h.count == 0,
        };
        let at = self.old.as_ref().and_then(|r| r.expire_at_ms);
        if empty {
            if self.old.is_some() {
                k.remove(key)?;
            }
            return Ok(());
        }
        if let Fields::Large(h) = &mut self.fields {
            if h.reversion_due() {
                super::reversion(k.io, h)?;
            }
        }
        match &self.fields {
            Fields::Packed(p) => {
                let payload = encode_pairs(p);
                check_value_len(payload.len())?;
                k.put_record(key, self.old.as_ref(), Kind::Hash, false, &payload, at);
            }
            Fields::Large(h) => {
                k.put_record(key, self.old.as_ref(), Kind::Hash, true, &h.encode(), at);
            }
        }
        Ok(())
    }
}

fn check_pairs(pairs: &[(Bytes, Bytes)]) -> Result<()> {
    for (f, v) in pairs {
        check_value_len(f.len())?;
        check_value_len(v.len())?;
    }
    Ok(())
}

/// HSET (HMSET): sets each pair, a later pair for the same field winning; how many fields
/// are new.
pub(crate) fn set<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    key: &[u8],
    pairs: &[(Bytes, Bytes)],
) -> Result<i64> {
    check_key(key)?;
    check_pairs(pairs)?;
    let mut w = Writer::open(k, enc, key)?;
    let max = enc.hash_max_value();
    w.long_argument = pairs.iter().any(|(f, v)| f.len() > max || v.len() > max);
    let mut added = 0;
    for (f, v) in pairs {
        added += i64::from(w.put(k, f, v)?);
    }
    w.finish(k, key)?;
    Ok(added)
}

/// HSETNX: sets `field` only if it has no value; whether it did.
pub(crate) fn set_nx<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    key: &[u8],
    field: &Bytes,
    value: &Bytes,
) -> Result<bool> {
    check_key(key)?;
    check_pairs(&[(field.clone(), value.clone())])?;
    let mut w = Writer::open(k, enc, key)?;
    if w.get(k, field)?.is_some() {
        return Ok(false);
    }
    w.put(k, field, value)?;
    w.finish(k, key)?;
    Ok(true)
}

/// HDEL: how many of `fields` it removed; the key goes with the last field.
pub(crate) fn del<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    key: &[u8],
    fields: &[Bytes],
) -> Result<i64> {
    let mut w = Writer::open(k, enc, key)?;
    if w.old.is_none() {
        return Ok(0);
    }
    let mut removed = 0;
    for f in fields {
        removed += i64::from(w.remove(k, f)?);
    }
    if removed > 0 {
        w.finish(k, key)?;
    }
    Ok(removed)
}

/// HINCRBY: the field's new value.
pub(crate) fn incr_by<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    key: &[u8],
    field: &Bytes,
    delta: i64,
) -> Result<i64> {
    check_key(key)?;
    let mut w = Writer::open(k, enc, key)?;
    let cur = match w.get(k, field)? {
        Some(v) => rialto_resp::parse_redis_int(&v).ok_or(Error::HashNotInteger)?,
        None => 0,
    };
    let new = cur.checked_add(delta).ok_or(Error::Overflow)?;
    w.put(k, field, &Bytes::from(new.to_string()))?;
    w.finish(k, key)?;
    Ok(new)
}

/// HINCRBYFLOAT (the increment was checked where the command arrived): the new value.
pub(crate) fn incr_by_float<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    enc: &Encodings,
    key: &[u8],
    field: &Bytes,
    incr: &[u8],
) -> Result<Bytes> {
    check_key(key)?;
    let mut w = Writer::open(k, enc, key)?;
    let cur = w.get(k, field)?;
    let new = match crate::float::add(cur.as_deref().unwrap_or(b"0"), incr) {
        Err(Error::NotFloat) if cur.is_some() => return Err(Error::HashNotFloat),
        r => Bytes::from(r?),
    };
    w.put(k, field, &new)?;
    w.finish(k, key)?;
    Ok(new)
}

/// The packed payload of a large hash's fields (for a move under a store's prefix).
pub(crate) fn repack<T: RawRead + ?Sized>(k: &mut Keys<'_, T>, rec: &Record) -> Result<Vec<u8>> {
    let h = Hash::from_record(rec.clone())?;
    Ok(encode_pairs(&h.entries(k)?))
}
