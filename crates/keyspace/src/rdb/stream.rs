//! Streams in the DUMP payload: Redis 7.0's `STREAM_LISTPACKS_2` (19), written and read, and
//! the older `STREAM_LISTPACKS` (15) read.
//!
//! ```text
//! stream   nodes (len) | (master id (string of 16 bytes, BE) | listpack (string)) * nodes
//!          | length (len) | last id | [first id | max deleted id | entries added (len), 19 only]
//!          | groups (len) | group * groups
//! id       ms (len) | seq (len)
//! group    name (string) | last id | [entries read (len; -1 as 2^64 - 1), 19 only]
//!          | pending (len) | (id (16 bytes BE) | delivery ms (8 bytes LE) | deliveries (len)) *
//!          | consumers (len) | (name (string) | seen ms (8 bytes LE) | n (len) | id (16 bytes) * n) *
//! listpack count | deleted | master fields n | field * n | 0 | entry *
//! entry    flags (1 deleted, 2 same fields) | ms - master ms | seq - master seq
//!          | [fields n | (field | value) * n] or, with same fields, value * master n | lp-count
//! ```
//!
//! A node's listpack is written with its live entries only (deleted 0): Rialto keeps no
//! deleted entry's content, and Redis loads such a node alike.

use bytes::Bytes;

use super::{packed, put_len, put_string, PayloadError, Reader, R};
use crate::collections::stream::StreamId;

/// A stream as a payload carries it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamDump {
    pub nodes: Vec<DumpNode>,
    pub length: u64,
    pub last: StreamId,
    pub first: StreamId,
    pub max_deleted: StreamId,
    pub entries_added: u64,
    pub groups: Vec<DumpGroup>,
}

/// A node: its master id and fields, its live entries, and how many were deleted in it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DumpNode {
    pub master: StreamId,
    pub master_fields: Vec<Bytes>,
    /// Live entries: id and fields and values alternating.
    pub entries: Vec<(StreamId, Vec<Bytes>)>,
    pub deleted: u64,
    /// The last id the node holds, deleted or not.
    pub last: StreamId,
}

/// A consumer group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DumpGroup {
    pub name: Bytes,
    pub last: StreamId,
    pub entries_read: i64,
    /// Pending entries: id, delivery time, deliveries.
    pub pending: Vec<(StreamId, i64, u64)>,
    /// Consumers: name, seen time, the ids pending for it.
    pub consumers: Vec<(Bytes, i64, Vec<StreamId>)>,
}

const SAME_FIELDS: i64 = 2;
const DELETED: i64 = 1;

/// A listpack of `items`, each an integer when it reads as one (as `lpAppend` decides).
pub(super) fn listpack(items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = vec![0u8; 6];
    for it in items {
        let start = out.len();
        match rialto_resp::parse_redis_int(it) {
            Some(v) => put_lp_int(&mut out, v),
            None => {
                let n = it.len();
                if n < 64 {
                    out.push(0x80 | n as u8);
                } else if n < 4096 {
                    out.push(0xe0 | (n >> 8) as u8);
                    out.push(n as u8);
                } else {
                    out.push(0xf0);
                    out.extend_from_slice(&(n as u32).to_le_bytes());
                }
                out.extend_from_slice(it);
            }
        }
        let l = (out.len() - start) as u64;
        put_backlen(&mut out, l);
    }
    out.push(0xff);
    let total = out.len() as u32;
    out[..4].copy_from_slice(&total.to_le_bytes());
    let n = u16::try_from(items.len()).unwrap_or(u16::MAX);
    out[4..6].copy_from_slice(&n.to_le_bytes());
    out
}

fn put_lp_int(out: &mut Vec<u8>, v: i64) {
    match v {
        0..=127 => out.push(v as u8),
        -4096..=4095 => {
            let u = (v as u16) & 0x1fff;
            out.push(0xc0 | (u >> 8) as u8);
            out.push(u as u8);
        }
        -32768..=32767 => {
            out.push(0xf1);
            out.extend_from_slice(&(v as i16).to_le_bytes());
        }
        -8_388_608..=8_388_607 => {
            out.push(0xf2);
            out.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
        }
        -2_147_483_648..=2_147_483_647 => {
            out.push(0xf3);
            out.extend_from_slice(&(v as i32).to_le_bytes());
        }
        _ => {
            out.push(0xf4);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// An element's length written after it, as `lpEncodeBacklen` does: 7 bits a byte, the
/// most significant first, every byte but the first with its high bit set.
fn put_backlen(out: &mut Vec<u8>, l: u64) {
    let n = match l {
        0..=127 => 1,
        128..=16_382 => 2,
        16_383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    };
    for i in (0..n).rev() {
        let b = ((l >> (7 * i)) & 127) as u8;
        out.push(if i == n - 1 { b } else { b | 128 });
    }
}

fn int(n: i64) -> Vec<u8> {
    n.to_string().into_bytes()
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_len(out, id.ms);
    put_len(out, id.seq);
}

/// The body of a `STREAM_LISTPACKS_2` value.
pub(super) fn encode(out: &mut Vec<u8>, s: &StreamDump) {
    let nodes: Vec<&DumpNode> = s.nodes.iter().filter(|n| !n.entries.is_empty()).collect();
    put_len(out, nodes.len() as u64);
    for n in nodes {
        put_string(out, &n.master.be());
        let mut items: Vec<Vec<u8>> = vec![
            int(n.entries.len() as i64),
            int(0),
            int(n.master_fields.len() as i64),
        ];
        items.extend(n.master_fields.iter().map(|f| f.to_vec()));
        items.push(int(0));
        for (id, fields) in &n.entries {
            let names: Vec<&Bytes> = fields.iter().step_by(2).collect();
            let same = names.len() == n.master_fields.len()
                && names.iter().zip(&n.master_fields).all(|(a, b)| *a == b);
            let nf = (fields.len() / 2) as i64;
            items.push(int(if same { SAME_FIELDS } else { 0 }));
            items.push(int(id.ms.wrapping_sub(n.master.ms) as i64));
            items.push(int(id.seq.wrapping_sub(n.master.seq) as i64));
            if same {
                items.extend(fields.iter().skip(1).step_by(2).map(|v| v.to_vec()));
                items.push(int(nf + 3));
            } else {
                items.push(int(nf));
                items.extend(fields.iter().map(|f| f.to_vec()));
                items.push(int(nf * 2 + 4));
            }
        }
        put_string(out, &listpack(&items));
    }
    put_len(out, s.length);
    put_id(out, s.last);
    put_id(out, s.first);
    put_id(out, s.max_deleted);
    put_len(out, s.entries_added);
    put_len(out, s.groups.len() as u64);
    for g in &s.groups {
        put_string(out, &g.name);
        put_id(out, g.last);
        put_len(out, g.entries_read as u64);
        put_len(out, g.pending.len() as u64);
        for (id, at, n) in &g.pending {
            out.extend_from_slice(&id.be());
            out.extend_from_slice(&at.to_le_bytes());
            put_len(out, *n);
        }
        put_len(out, g.consumers.len() as u64);
        for (name, seen, ids) in &g.consumers {
            put_string(out, name);
            out.extend_from_slice(&seen.to_le_bytes());
            put_len(out, ids.len() as u64);
            for id in ids {
                out.extend_from_slice(&id.be());
            }
        }
    }
}

fn num(b: &Bytes) -> R<i64> {
    rialto_resp::parse_redis_int(b).ok_or(PayloadError::BadData)
}

/// One node's listpack, as Redis's stream iterator reads it.
fn node(master: StreamId, items: &[Bytes]) -> R<DumpNode> {
    let mut it = items.iter();
    let mut next = || it.next().ok_or(PayloadError::BadData);
    let count = num(next()?)?;
    let deleted = num(next()?)?;
    let nmaster = num(next()?)?;
    if count < 0 || deleted < 0 || nmaster < 1 || nmaster as usize > items.len() {
        return Err(PayloadError::BadData);
    }
    let mut master_fields = Vec::with_capacity(nmaster as usize);
    for _ in 0..nmaster {
        master_fields.push(next()?.clone());
    }
    if num(next()?)? != 0 {
        return Err(PayloadError::BadData);
    }
    let mut n = DumpNode {
        master,
        master_fields,
        deleted: deleted as u64,
        last: master,
        ..DumpNode::default()
    };
    let mut seen = 0i64;
    while let Some(flags) = it.next() {
        let flags = num(flags)?;
        let ms = master
            .ms
            .wrapping_add(num(it.next().ok_or(PayloadError::BadData)?)? as u64);
        let seq = master
            .seq
            .wrapping_add(num(it.next().ok_or(PayloadError::BadData)?)? as u64);
        let id = StreamId::new(ms, seq);
        let mut fields = Vec::new();
        if flags & SAME_FIELDS != 0 {
            for f in &n.master_fields {
                fields.push(f.clone());
                fields.push(it.next().ok_or(PayloadError::BadData)?.clone());
            }
        } else {
            let nf = num(it.next().ok_or(PayloadError::BadData)?)?;
            if nf < 1 || nf as usize > items.len() {
                return Err(PayloadError::BadData);
            }
            for _ in 0..nf * 2 {
                fields.push(it.next().ok_or(PayloadError::BadData)?.clone());
            }
        }
        it.next().ok_or(PayloadError::BadData)?; // lp-count
        if id < n.last && seen > 0 {
            return Err(PayloadError::BadData);
        }
        n.last = id;
        seen += 1;
        if flags & DELETED == 0 {
            n.entries.push((id, fields));
        }
    }
    if n.entries.len() as i64 != count || seen != count + deleted || seen == 0 {
        return Err(PayloadError::BadData);
    }
    Ok(n)
}

impl<'a> Reader<'a> {
    fn id(&mut self) -> R<StreamId> {
        Ok(StreamId::new(self.len()?, self.len()?))
    }

    fn raw_id(&mut self) -> R<StreamId> {
        let b = self.take(16)?;
        Ok(StreamId::new(
            u64::from_be_bytes(b[..8].try_into().map_err(|_| PayloadError::BadData)?),
            u64::from_be_bytes(b[8..].try_into().map_err(|_| PayloadError::BadData)?),
        ))
    }

    /// A count that may be 0, each item at least `min` bytes.
    fn count0(&mut self, min: u64) -> R<usize> {
        let n = self.len()?;
        if n.saturating_mul(min) > self.left() as u64 {
            return Err(PayloadError::BadData);
        }
        Ok(n as usize)
    }

    /// A stream value; `v2`: `STREAM_LISTPACKS_2`.
    pub(super) fn stream(&mut self, v2: bool) -> R<StreamDump> {
        let mut s = StreamDump::default();
        let nodes = self.count0(2)?;
        for _ in 0..nodes {
            let key = self.string()?;
            if key.len() != 16 {
                return Err(PayloadError::BadData);
            }
            let master = StreamId::new(
                u64::from_be_bytes(key[..8].try_into().map_err(|_| PayloadError::BadData)?),
                u64::from_be_bytes(key[8..].try_into().map_err(|_| PayloadError::BadData)?),
            );
            let items = packed::listpack(&self.string()?)?;
            let n = node(master, &items)?;
            if s.nodes
                .last()
                .is_some_and(|p: &DumpNode| p.last >= n.master)
            {
                return Err(PayloadError::BadData);
            }
            s.nodes.push(n);
        }
        s.length = self.len()?;
        s.last = self.id()?;
        let live: u64 = s.nodes.iter().map(|n| n.entries.len() as u64).sum();
        if live != s.length || s.nodes.last().is_some_and(|n| n.last > s.last) {
            return Err(PayloadError::BadData);
        }
        let first_live = s
            .nodes
            .iter()
            .flat_map(|n| n.entries.first())
            .map(|e| e.0)
            .next();
        if v2 {
            s.first = self.id()?;
            s.max_deleted = self.id()?;
            s.entries_added = self.len()?;
        } else {
            s.first = first_live.unwrap_or_default();
            s.entries_added = s.length;
        }
        let groups = self.count0(3)?;
        for _ in 0..groups {
            let mut g = DumpGroup {
                name: self.string()?,
                last: self.id()?,
                ..DumpGroup::default()
            };
            g.entries_read = if v2 {
                self.len()? as i64
            } else {
                estimate(&s, g.last)
            };
            let pending = self.count0(25)?;
            for _ in 0..pending {
                let id = self.raw_id()?;
                let at = i64::from_le_bytes(self.array()?);
                g.pending.push((id, at, self.len()?));
            }
            let consumers = self.count0(10)?;
            for _ in 0..consumers {
                let name = self.string()?;
                let seen = i64::from_le_bytes(self.array()?);
                let n = self.count0(16)?;
                let ids = (0..n).map(|_| self.raw_id()).collect::<R<Vec<_>>>()?;
                g.consumers.push((name, seen, ids));
            }
            if s.groups.iter().any(|x| x.name == g.name) {
                return Err(PayloadError::BadData);
            }
            s.groups.push(g);
        }
        Ok(s)
    }
}

/// What Redis's loader sets an older payload's group's entries-read to: how many entries were
/// added up to `id`, if that can be told (no deletion is known), else -1.
fn estimate(s: &StreamDump, id: StreamId) -> i64 {
    let (added, len) = (s.entries_added as i64, s.length as i64);
    if added == 0 {
        0
    } else if (len == 0 && id <= s.last) || id == s.last {
        added
    } else if id > s.last {
        -1
    } else if id < s.first {
        added - len
    } else if id == s.first {
        added - len + 1
    } else {
        -1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpacks_read_back_as_written() {
        let items: Vec<Vec<u8>> = vec![
            b"0".to_vec(),
            b"127".to_vec(),
            b"128".to_vec(),
            b"-1".to_vec(),
            b"-4096".to_vec(),
            b"40000".to_vec(),
            b"9000000".to_vec(),
            b"3000000000".to_vec(),
            b"abc".to_vec(),
            vec![b'x'; 100],
            vec![b'y'; 5000],
            b"".to_vec(),
        ];
        let lp = listpack(&items);
        let back = packed::listpack(&lp).unwrap();
        assert_eq!(back.iter().map(|b| b.to_vec()).collect::<Vec<_>>(), items);
    }
}
