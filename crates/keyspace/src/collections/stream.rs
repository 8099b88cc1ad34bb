//! Streams: entries ordered by a 128-bit id, consumer groups with their pending entries.
//!
//! A stream is always large: its record holds a header, every entry and every pending entry is
//! a key of its own under the stream's collection version (so DEL, expiry and overwrite are
//! O(1) and reclaimed in the background like any large collection's):
//!
//! ```text
//! header      version (u64) | length (u64) | dead (u64) | entries added (u64) | next sub id (u64)
//!             | last id | first id | max deleted id | groups (u64) | group * groups
//! group       name (u32 len | bytes) | gid (u64) | last delivered id | entries read (i64, -1
//!             unknown) | pending (u64) | consumers (u64) | consumer * consumers
//! consumer    name (u32 len | bytes) | cid (u64) | seen time (i64 ms) | pending (u64)
//! id          ms (u64) | seq (u64)                                  (every integer LE)
//! entry key   0x0D | version | 0x00 | ms (u64 BE) | seq (u64 BE)    -> packed field, value, ...
//! node key    0x0D | version | 0x01 | master ms | master seq        -> node (below)
//! pending key 0x0D | version | 0x02 | gid (u64 BE) | ms | seq       -> delivery time (i64 LE)
//!                                                                  | deliveries (u64 LE) | cid (u64 LE)
//! owned key   0x0D | version | 0x03 | gid | cid (u64 BE) | ms | seq -> empty
//! node        live (u64) | deleted (u64) | body bytes (u64) | last id | master fields (packed)
//! ```
//!
//! Groups and consumers are few and small, so they live in the header, in name order (Redis's
//! radix-tree order, which XINFO lists them in); the pending entries can be many, so they are
//! keys: each group's in id order, and each consumer's again as `owned` keys, so a consumer's
//! history and XPENDING for one consumer are range reads.
//!
//! *Nodes* model Redis's listpack nodes: which entries share a node decides what an
//! approximate trim (`MAXLEN ~`, `MINID ~`) may remove, since Redis removes whole nodes only.
//! A node is opened at an entry and takes the next ones while it has fewer than
//! `stream-node-max-entries` entries (live and deleted) and the listpack bytes Redis would hold,
//! computed exactly from the entries ([`NodeSize`]), plus the new entry's field and value bytes
//! stay below `stream-node-max-bytes`. The limits are carried by each op, not read from the
//! configuration where it is applied, so replicas replaying the log build the same nodes.
//!
//! Invariants (every write of one op is one merger transaction, so none is ever half done):
//! - `length` counts the entry keys; each lies within exactly one node, the one with the
//!   greatest master id not above it, and that node's `live` counts it; a node with no live
//!   entry is deleted, except one emptied by a trim inside it (Redis keeps it too).
//! - `first` is the smallest entry id (0-0 when empty); every entry id is at most `last`.
//! - Each group's `pending` counts its pending keys, each consumer's `pending` its owned keys,
//!   and a pending key names a consumer of its group that has the matching owned key.
//! - `dead` counts member keys deleted under the version; a write that leaves more dead than
//!   live keys (and at least 8) moves the stream to a new version, as hashes do.

use bytes::Bytes;

use super::{member_key, member_of, next_version, packed, SCAN_CHUNK};
use crate::error::{Error, Result, StreamError};
use crate::keys::{check_key, check_value_len, Keys, RawRead, RawWrite};
use crate::layout::{CorruptRecord, Kind, Record};
use crate::rdb::stream::{DumpGroup, DumpNode, StreamDump};

const ENTRY: u8 = 0x00;
const NODE: u8 = 0x01;
const PENDING: u8 = 0x02;
const OWNED: u8 = 0x03;

/// A stream entry's id: milliseconds and a sequence number, ordered as one 128-bit number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The id right after this one, if any.
    pub fn next(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (u64::MAX, u64::MAX) => None,
            (ms, u64::MAX) => Some(StreamId::new(ms + 1, 0)),
            (ms, seq) => Some(StreamId::new(ms, seq + 1)),
        }
    }

    /// The id right before this one, if any.
    pub fn prev(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (0, 0) => None,
            (ms, 0) => Some(StreamId::new(ms - 1, u64::MAX)),
            (ms, seq) => Some(StreamId::new(ms, seq - 1)),
        }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// Big-endian bytes: their order is the ids' order.
    pub fn be(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    fn from_be(b: &[u8]) -> Option<StreamId> {
        Some(StreamId::new(
            u64::from_be_bytes(b.get(..8)?.try_into().ok()?),
            u64::from_be_bytes(b.get(8..16)?.try_into().ok()?),
        ))
    }

    /// `ms-seq`, as replies carry it.
    pub fn to_bytes(self) -> Bytes {
        Bytes::from(format!("{}-{}", self.ms, self.seq))
    }

    /// Parses `ms[-seq]` (a missing sequence is `missing_seq`); with `seq_star`, `ms-*` is
    /// accepted and reported as `(id with seq 0, false)`. `-` and `+` are the smallest and
    /// greatest ids unless `strict`. The bool is whether a sequence was given.
    pub fn parse(
        s: &[u8],
        missing_seq: u64,
        strict: bool,
        seq_star: bool,
    ) -> Option<(StreamId, bool)> {
        if s.len() > 127 {
            return None;
        }
        // Redis reads the argument as a C string: it ends at a NUL.
        let s = s.split(|&c| c == 0).next().unwrap_or_default();
        match s {
            b"-" if !strict => return Some((StreamId::MIN, true)),
            b"+" if !strict => return Some((StreamId::MAX, true)),
            _ => {}
        }
        let (ms, seq) = match s.iter().position(|&c| c == b'-') {
            Some(dash) => (&s[..dash], Some(&s[dash + 1..])),
            None => (s, None),
        };
        let ms = parse_u64(ms)?;
        match seq {
            None => Some((StreamId::new(ms, missing_seq), true)),
            Some(b"*") if seq_star => Some((StreamId::new(ms, 0), false)),
            Some(seq) => Some((StreamId::new(ms, parse_u64(seq)?), true)),
        }
    }
}

/// Redis's `string2ull`: a canonical integer that is not negative, or else what C's `strtoull`
/// reads when it reads the whole text (leading spaces, a sign, leading zeros; a `-` negates
/// modulo 2^64), within 64 bits.
fn parse_u64(s: &[u8]) -> Option<u64> {
    if let Some(v) = rialto_resp::parse_redis_int(s) {
        return u64::try_from(v).ok();
    }
    // C's isspace: the ASCII whitespace and the vertical tab.
    let skip = s
        .iter()
        .take_while(|c| c.is_ascii_whitespace() || **c == 0x0b)
        .count();
    let rest = &s[skip..];
    let (negative, digits) = match rest.split_first() {
        Some((b'-', d)) => (true, d),
        Some((b'+', d)) => (false, d),
        _ => (false, rest),
    };
    if s.is_empty() || digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v = 0u64;
    for d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if negative { v.wrapping_neg() } else { v })
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// `stream-node-max-bytes` and `stream-node-max-entries` as an op carries them (0: no limit;
/// bytes above 1 GiB are 1 GiB, as Redis caps a listpack).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLimits {
    pub max_bytes: u64,
    pub max_entries: u64,
}

impl Default for NodeLimits {
    fn default() -> NodeLimits {
        NodeLimits {
            max_bytes: 4096,
            max_entries: 100,
        }
    }
}

/// Redis's cap on a stream listpack's size.
const LISTPACK_MAX: u64 = 1 << 30;

/// A consumer of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consumer {
    pub name: Bytes,
    pub cid: u64,
    /// When it last read or claimed (op time, ms).
    pub seen_ms: i64,
    /// Its pending entries.
    pub pending: u64,
}

/// A consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: Bytes,
    pub gid: u64,
    pub last: StreamId,
    /// Entries read by the group, -1 when unknown.
    pub entries_read: i64,
    pub pending: u64,
    /// In name order.
    pub consumers: Vec<Consumer>,
}

impl Group {
    pub fn consumer(&self, name: &[u8]) -> Option<&Consumer> {
        self.consumers
            .binary_search_by(|c| c.name[..].cmp(name))
            .ok()
            .map(|i| &self.consumers[i])
    }

    fn consumer_mut(&mut self, name: &[u8]) -> Option<&mut Consumer> {
        self.consumers
            .binary_search_by(|c| c.name[..].cmp(name))
            .ok()
            .map(|i| &mut self.consumers[i])
    }

    fn by_cid(&mut self, cid: u64) -> Option<&mut Consumer> {
        self.consumers.iter_mut().find(|c| c.cid == cid)
    }

    /// The name of consumer `cid`.
    pub fn name_of(&self, cid: u64) -> Option<&Bytes> {
        self.consumers
            .iter()
            .find(|c| c.cid == cid)
            .map(|c| &c.name)
    }
}

/// A stream's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub version: u64,
    pub length: u64,
    pub dead: u64,
    pub entries_added: u64,
    next_sub: u64,
    pub last: StreamId,
    pub first: StreamId,
    pub max_deleted: StreamId,
    /// In name order.
    pub groups: Vec<Group>,
}

struct Rd<'a> {
    b: &'a [u8],
    at: usize,
}

impl Rd<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], CorruptRecord> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or(CorruptRecord("stream header"))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u64(&mut self) -> Result<u64, CorruptRecord> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or_default()))
    }
    fn i64(&mut self) -> Result<i64, CorruptRecord> {
        Ok(self.u64()? as i64)
    }
    fn id(&mut self) -> Result<StreamId, CorruptRecord> {
        Ok(StreamId::new(self.u64()?, self.u64()?))
    }
    fn name(&mut self) -> Result<Bytes, CorruptRecord> {
        let b = self.take(4)?;
        let n = u32::from_le_bytes(b.try_into().unwrap_or_default()) as usize;
        Ok(Bytes::copy_from_slice(self.take(n)?))
    }
    /// A count of items each at least `min` bytes: more than the rest could hold is damage.
    fn count(&mut self, min: usize) -> Result<usize, CorruptRecord> {
        let n = self.u64()?;
        if n > ((self.b.len() - self.at) / min) as u64 {
            return Err(CorruptRecord("stream header"));
        }
        Ok(n as usize)
    }
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    out.extend_from_slice(&id.ms.to_le_bytes());
    out.extend_from_slice(&id.seq.to_le_bytes());
}

fn put_name(out: &mut Vec<u8>, name: &[u8]) {
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(name);
}

impl Meta {
    fn new(version: u64) -> Meta {
        Meta {
            version,
            length: 0,
            dead: 0,
            entries_added: 0,
            next_sub: 1,
            last: StreamId::MIN,
            first: StreamId::MIN,
            max_deleted: StreamId::MIN,
            groups: Vec::new(),
        }
    }

    pub fn decode(b: &[u8]) -> Result<Meta, CorruptRecord> {
        let mut r = Rd { b, at: 0 };
        let mut m = Meta {
            version: r.u64()?,
            length: r.u64()?,
            dead: r.u64()?,
            entries_added: r.u64()?,
            next_sub: r.u64()?,
            last: r.id()?,
            first: r.id()?,
            max_deleted: r.id()?,
            groups: Vec::new(),
        };
        let n = r.count(52)?;
        for _ in 0..n {
            let mut g = Group {
                name: r.name()?,
                gid: r.u64()?,
                last: r.id()?,
                entries_read: r.i64()?,
                pending: r.u64()?,
                consumers: Vec::new(),
            };
            let c = r.count(28)?;
            for _ in 0..c {
                g.consumers.push(Consumer {
                    name: r.name()?,
                    cid: r.u64()?,
                    seen_ms: r.i64()?,
                    pending: r.u64()?,
                });
            }
            m.groups.push(g);
        }
        if r.at != b.len() {
            return Err(CorruptRecord("stream header"));
        }
        Ok(m)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(104 + self.groups.len() * 96);
        for v in [
            self.version,
            self.length,
            self.dead,
            self.entries_added,
            self.next_sub,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        put_id(&mut out, self.last);
        put_id(&mut out, self.first);
        put_id(&mut out, self.max_deleted);
        out.extend_from_slice(&(self.groups.len() as u64).to_le_bytes());
        for g in &self.groups {
            put_name(&mut out, &g.name);
            out.extend_from_slice(&g.gid.to_le_bytes());
            put_id(&mut out, g.last);
            out.extend_from_slice(&g.entries_read.to_le_bytes());
            out.extend_from_slice(&g.pending.to_le_bytes());
            out.extend_from_slice(&(g.consumers.len() as u64).to_le_bytes());
            for c in &g.consumers {
                put_name(&mut out, &c.name);
                out.extend_from_slice(&c.cid.to_le_bytes());
                out.extend_from_slice(&c.seen_ms.to_le_bytes());
                out.extend_from_slice(&c.pending.to_le_bytes());
            }
        }
        out
    }

    pub fn group(&self, name: &[u8]) -> Option<&Group> {
        self.groups
            .binary_search_by(|g| g.name[..].cmp(name))
            .ok()
            .map(|i| &self.groups[i])
    }

    pub fn group_mut(&mut self, name: &[u8]) -> Option<&mut Group> {
        self.groups
            .binary_search_by(|g| g.name[..].cmp(name))
            .ok()
            .map(|i| &mut self.groups[i])
    }

    fn total_pending(&self) -> u64 {
        self.groups.iter().map(|g| g.pending).sum()
    }

    /// Whether the tombstones under the version outnumber its live keys (see the module docs).
    fn reversion_due(&self, nodes: u64) -> bool {
        let live = self.length + nodes + 2 * self.total_pending();
        self.dead >= super::REVERSION_MIN_DEAD && self.dead > live
    }

    /// Whether the stream may hold deleted entries between `from` and the end (Redis's
    /// `streamRangeHasTombstones` with an open end).
    pub fn tombstones_after(&self, from: StreamId) -> bool {
        if self.length == 0 || self.max_deleted.is_zero() || self.first > self.max_deleted {
            return false;
        }
        from <= self.max_deleted
    }

    /// How many entries were added up to `id`, if that can be told (Redis's
    /// `streamEstimateDistanceFromFirstEverEntry`): -1 when not.
    pub fn entries_before(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        if self.length == 0 && id <= self.last {
            return self.entries_added as i64;
        }
        if id == self.last {
            return self.entries_added as i64;
        }
        if id > self.last {
            return -1;
        }
        if self.max_deleted.is_zero() || self.max_deleted < self.first {
            if id < self.first {
                return (self.entries_added - self.length) as i64;
            }
            if id == self.first {
                return (self.entries_added - self.length + 1) as i64;
            }
        }
        -1
    }

    /// A group's lag, `None` when it cannot be told.
    pub fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != -1 && !self.tombstones_after(g.last) {
            return Some(self.entries_added as i64 - g.entries_read);
        }
        match self.entries_before(g.last) {
            -1 => None,
            read => Some(self.entries_added as i64 - read),
        }
    }
}

fn family_key(version: u64, tag: u8, rest: &[&[u8]]) -> Vec<u8> {
    let mut sub = Vec::with_capacity(33);
    sub.push(tag);
    for r in rest {
        sub.extend_from_slice(r);
    }
    member_key(version, &sub)
}

fn entry_key(version: u64, id: StreamId) -> Vec<u8> {
    family_key(version, ENTRY, &[&id.be()])
}

fn node_key(version: u64, id: StreamId) -> Vec<u8> {
    family_key(version, NODE, &[&id.be()])
}

fn pending_key(version: u64, gid: u64, id: StreamId) -> Vec<u8> {
    family_key(version, PENDING, &[&gid.to_be_bytes(), &id.be()])
}

fn owned_key(version: u64, gid: u64, cid: u64, id: StreamId) -> Vec<u8> {
    family_key(
        version,
        OWNED,
        &[&gid.to_be_bytes(), &cid.to_be_bytes(), &id.be()],
    )
}

/// The smallest key after every key starting with `k`'s bytes (`k` plus 0x00 is the key right
/// after `k`; for a fixed-length family, bounds come from ids).
fn after(mut k: Vec<u8>) -> Vec<u8> {
    k.push(0);
    k
}

/// `[lower, upper)` of the keys of family `prefix` (a tag and its fixed parts) whose last 16
/// bytes are ids within `from..=to`.
fn id_bounds(
    version: u64,
    tag: u8,
    prefix: &[&[u8]],
    from: StreamId,
    to: StreamId,
) -> (Vec<u8>, Vec<u8>) {
    let mut lo_parts: Vec<&[u8]> = prefix.to_vec();
    let fb = from.be();
    lo_parts.push(&fb);
    let lower = family_key(version, tag, &lo_parts);
    let mut hi_parts: Vec<&[u8]> = prefix.to_vec();
    let tb = to.be();
    hi_parts.push(&tb);
    let upper = after(family_key(version, tag, &hi_parts));
    (lower, upper)
}

/// The id in the last 16 bytes of a member key of `version`.
fn id_of_key(version: u64, key: &[u8]) -> Result<StreamId> {
    let sub = member_of(version, key).ok_or(CorruptRecord("stream member key"))?;
    sub.len()
        .checked_sub(16)
        .and_then(|at| StreamId::from_be(&sub[at..]))
        .ok_or(Error::Corrupt(CorruptRecord("stream member key")))
}

/// One entry: its id and its fields and values, alternating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: StreamId,
    pub fields: Vec<Bytes>,
}

/// A pending entry of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    pub id: StreamId,
    /// When it was last delivered (ms).
    pub delivered_ms: i64,
    pub deliveries: u64,
    pub cid: u64,
}

impl Pending {
    fn encode(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        b[..8].copy_from_slice(&self.delivered_ms.to_le_bytes());
        b[8..16].copy_from_slice(&self.deliveries.to_le_bytes());
        b[16..].copy_from_slice(&self.cid.to_le_bytes());
        b
    }

    fn decode(id: StreamId, b: &[u8]) -> Result<Pending, CorruptRecord> {
        if b.len() != 24 {
            return Err(CorruptRecord("stream pending entry"));
        }
        let le =
            |r: std::ops::Range<usize>| u64::from_le_bytes(b[r].try_into().unwrap_or_default());
        Ok(Pending {
            id,
            delivered_ms: le(0..8) as i64,
            deliveries: le(8..16),
            cid: le(16..24),
        })
    }
}

/// Sizes of listpack elements as Redis encodes them.
struct NodeSize;

impl NodeSize {
    fn int(v: i64) -> u64 {
        let enc = match v {
            0..=127 => 1,
            -4096..=4095 => 2,
            -32768..=32767 => 3,
            -8_388_608..=8_388_607 => 4,
            -2_147_483_648..=2_147_483_647 => 5,
            _ => 9,
        };
        enc + 1
    }

    fn backlen(l: u64) -> u64 {
        match l {
            0..=127 => 1,
            128..=16382 => 2,
            16383..=2_097_150 => 3,
            2_097_151..=268_435_454 => 4,
            _ => 5,
        }
    }

    fn string(s: &[u8]) -> u64 {
        if let Some(v) = rialto_resp::parse_redis_int(s) {
            return Self::int(v);
        }
        let n = s.len() as u64;
        let enc = if n < 64 {
            1 + n
        } else if n < 4096 {
            2 + n
        } else {
            5 + n
        };
        enc + Self::backlen(enc)
    }
}

/// A node (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    live: u64,
    deleted: u64,
    body: u64,
    last: StreamId,
    master: Vec<Bytes>,
}

impl Node {
    fn encode(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(40 + self.master.iter().map(|f| f.len() + 2).sum::<usize>());
        for v in [self.live, self.deleted, self.body] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.last.be());
        out.extend_from_slice(&packed::encode(self.master.iter().map(|f| &f[..])));
        out
    }

    fn decode(b: &Bytes) -> Result<Node, CorruptRecord> {
        let bad = || CorruptRecord("stream node");
        if b.len() < 40 {
            return Err(bad());
        }
        let le =
            |r: std::ops::Range<usize>| u64::from_le_bytes(b[r].try_into().unwrap_or_default());
        Ok(Node {
            live: le(0..8),
            deleted: le(8..16),
            body: le(16..24),
            last: StreamId::from_be(&b[24..40]).ok_or_else(bad)?,
            master: packed::decode(&b.slice(40..))?,
        })
    }

    /// The bytes of Redis's listpack for this node.
    fn listpack_bytes(&self) -> u64 {
        let master: u64 = self.master.iter().map(|f| NodeSize::string(f)).sum();
        6 + 1
            + NodeSize::int(self.live as i64)
            + NodeSize::int(self.deleted as i64)
            + NodeSize::int(self.master.len() as i64)
            + master
            + NodeSize::int(0)
            + self.body
    }

    /// The listpack bytes of an entry `id` with `fields` in a node whose master id is
    /// `master_id`; `same`: its field names are the master's.
    fn entry_bytes(master_id: StreamId, id: StreamId, fields: &[Bytes], same: bool) -> u64 {
        let n = (fields.len() / 2) as i64;
        let mut b = NodeSize::int(if same { 2 } else { 0 })
            + NodeSize::int(id.ms.wrapping_sub(master_id.ms) as i64)
            + NodeSize::int(id.seq.wrapping_sub(master_id.seq) as i64);
        if !same {
            b += NodeSize::int(n);
        }
        for pair in fields.chunks(2) {
            if !same {
                b += NodeSize::string(&pair[0]);
            }
            b += pair.get(1).map_or(0, |v| NodeSize::string(v));
        }
        let lp_count = n + 3 + if same { 0 } else { n + 1 };
        b + NodeSize::int(lp_count)
    }
}

/// A live stream, as one state holds it.
#[derive(Debug, Clone)]
pub struct Stream {
    rec: Record,
    pub meta: Meta,
}

impl Stream {
    /// The stream at `key`; `None` if there is no key, [`Error::WrongType`] if it holds
    /// something else. Pins the reads that follow to one state.
    pub fn load<T: RawRead + ?Sized>(k: &mut Keys<'_, T>, key: &[u8]) -> Result<Option<Stream>> {
        if k.get_kind(key, Kind::Stream)?.is_none() {
            return Ok(None);
        }
        k.io.pin();
        match k.get_kind(key, Kind::Stream)? {
            Some(rec) => Self::from_record(rec).map(Some),
            None => Ok(None),
        }
    }

    fn from_record(rec: Record) -> Result<Stream> {
        if !rec.large {
            return Err(Error::Corrupt(CorruptRecord("stream record")));
        }
        let meta = Meta::decode(&rec.value)?;
        Ok(Stream { rec, meta })
    }

    pub fn len(&self) -> u64 {
        self.meta.length
    }

    pub fn is_empty(&self) -> bool {
        self.meta.length == 0
    }

    /// Entries with ids in `from..=to`, at most `count` (0: all), from the end when `rev`.
    pub fn range<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        from: StreamId,
        to: StreamId,
        count: u64,
        rev: bool,
    ) -> Result<Vec<Entry>> {
        range(k.io, &self.meta, from, to, count, rev)
    }

    /// The entry `id`, if it exists.
    pub fn entry<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        id: StreamId,
    ) -> Result<Option<Entry>> {
        entry(k.io, self.meta.version, id)
    }

    /// The greatest id of a live entry.
    pub fn last_valid<T: RawRead + ?Sized>(&self, k: &mut Keys<'_, T>) -> Result<Option<StreamId>> {
        Ok(
            range(k.io, &self.meta, StreamId::MIN, StreamId::MAX, 1, true)?
                .first()
                .map(|e| e.id),
        )
    }

    /// Pending entries of group `gid` (of consumer `cid` only, if given) with ids in
    /// `from..=to`, at most `count` (0: all).
    pub fn pending<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        gid: u64,
        cid: Option<u64>,
        from: StreamId,
        to: StreamId,
        count: u64,
    ) -> Result<Vec<Pending>> {
        pending_range(k.io, self.meta.version, gid, cid, from, to, count, false)
    }

    /// The last pending entry of group `gid`.
    pub fn last_pending<T: RawRead + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        gid: u64,
    ) -> Result<Option<Pending>> {
        Ok(pending_range(
            k.io,
            self.meta.version,
            gid,
            None,
            StreamId::MIN,
            StreamId::MAX,
            1,
            true,
        )?
        .pop())
    }

    /// How many nodes hold the entries (XINFO's `radix-tree-keys`). O(nodes).
    pub fn nodes<T: RawRead + ?Sized>(&self, k: &mut Keys<'_, T>) -> Result<u64> {
        count_nodes(k.io, self.meta.version)
    }
}

fn count_nodes<T: RawRead + ?Sized>(io: &mut T, version: u64) -> Result<u64> {
    let (mut lower, upper) = id_bounds(version, NODE, &[], StreamId::MIN, StreamId::MAX);
    let mut n = 0;
    loop {
        let chunk = io.scan_raw(&lower, &upper, SCAN_CHUNK)?;
        n += chunk.len() as u64;
        match chunk.last() {
            Some((key, _)) if chunk.len() == SCAN_CHUNK => lower = after(key.clone()),
            _ => return Ok(n),
        }
    }
}

fn decode_entry(version: u64, key: &[u8], value: &Bytes) -> Result<Entry> {
    let id = id_of_key(version, key)?;
    let fields = packed::decode(value)?;
    if fields.is_empty() || fields.len() % 2 != 0 {
        return Err(Error::Corrupt(CorruptRecord("stream entry")));
    }
    Ok(Entry { id, fields })
}

fn entry<T: RawRead + ?Sized>(io: &mut T, version: u64, id: StreamId) -> Result<Option<Entry>> {
    let key = entry_key(version, id);
    match io.get_raw(&key)? {
        Some(v) => decode_entry(version, &key, &v).map(Some),
        None => Ok(None),
    }
}

fn range<T: RawRead + ?Sized>(
    io: &mut T,
    m: &Meta,
    from: StreamId,
    to: StreamId,
    count: u64,
    rev: bool,
) -> Result<Vec<Entry>> {
    // Entries lie within first..=last: the bounds skip the deletions a trim left before them.
    let from = from.max(m.first);
    let to = to.min(m.last);
    if m.length == 0 || from > to {
        return Ok(Vec::new());
    }
    let (mut lower, mut upper) = id_bounds(m.version, ENTRY, &[], from, to);
    let want_all = if count == 0 { u64::MAX } else { count };
    let mut out = Vec::new();
    while (out.len() as u64) < want_all {
        let want = (want_all - out.len() as u64).min(SCAN_CHUNK as u64) as usize;
        let chunk = if rev {
            io.scan_raw_rev(&lower, &upper, want)?
        } else {
            io.scan_raw(&lower, &upper, want)?
        };
        let n = chunk.len();
        for (key, value) in &chunk {
            out.push(decode_entry(m.version, key, value)?);
        }
        match chunk.last() {
            Some((key, _)) if n == want => {
                if rev {
                    upper = key.clone();
                } else {
                    lower = after(key.clone());
                }
            }
            _ => break,
        }
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn pending_range<T: RawRead + ?Sized>(
    io: &mut T,
    version: u64,
    gid: u64,
    cid: Option<u64>,
    from: StreamId,
    to: StreamId,
    count: u64,
    rev: bool,
) -> Result<Vec<Pending>> {
    let g = gid.to_be_bytes();
    let (mut lower, mut upper) = match cid {
        None => id_bounds(version, PENDING, &[&g], from, to),
        Some(c) => id_bounds(version, OWNED, &[&g, &c.to_be_bytes()], from, to),
    };
    let want_all = if count == 0 { u64::MAX } else { count };
    let mut out = Vec::new();
    while (out.len() as u64) < want_all {
        let want = (want_all - out.len() as u64).min(SCAN_CHUNK as u64) as usize;
        let chunk = if rev {
            io.scan_raw_rev(&lower, &upper, want)?
        } else {
            io.scan_raw(&lower, &upper, want)?
        };
        let n = chunk.len();
        for (key, value) in &chunk {
            let id = id_of_key(version, key)?;
            let p = match cid {
                None => Pending::decode(id, value)?,
                Some(_) => {
                    let raw = io
                        .get_raw(&pending_key(version, gid, id))?
                        .ok_or(CorruptRecord("stream owned entry"))?;
                    Pending::decode(id, &raw)?
                }
            };
            out.push(p);
        }
        match chunk.last() {
            Some((key, _)) if n == want => {
                if rev {
                    upper = key.clone();
                } else {
                    lower = after(key.clone());
                }
            }
            _ => break,
        }
    }
    Ok(out)
}

/// Writes of one stream inside a merger transaction: the header is changed in memory and
/// written by [`Writer::finish`]; member keys are written as the changes are made.
pub(crate) struct Writer {
    old: Option<Record>,
    pub(crate) meta: Meta,
}

impl Writer {
    /// The stream at `key` (`None` if it does not exist).
    pub(crate) fn open<T: RawWrite + ?Sized>(
        k: &mut Keys<'_, T>,
        key: &[u8],
    ) -> Result<Option<Writer>> {
        Ok(Stream::load(k, key)?.map(|s| Writer {
            old: Some(s.rec),
            meta: s.meta,
        }))
    }

    /// A new empty stream for `key` (which holds nothing).
    pub(crate) fn create<T: RawWrite + ?Sized>(k: &mut Keys<'_, T>, key: &[u8]) -> Result<Writer> {
        check_key(key)?;
        if !k.in_default_store(key) {
            return Err(StreamError::UnderStore.into());
        }
        Ok(Writer {
            old: None,
            meta: Meta::new(next_version(k.io)?),
        })
    }

    fn v(&self) -> u64 {
        self.meta.version
    }

    pub(crate) fn range<T: RawWrite + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        from: StreamId,
        to: StreamId,
        count: u64,
    ) -> Result<Vec<Entry>> {
        range(k.io, &self.meta, from, to, count, false)
    }

    pub(crate) fn entry<T: RawWrite + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        id: StreamId,
    ) -> Result<Option<Entry>> {
        entry(k.io, self.v(), id)
    }

    pub(crate) fn last_valid<T: RawWrite + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
    ) -> Result<Option<StreamId>> {
        Ok(
            range(k.io, &self.meta, StreamId::MIN, StreamId::MAX, 1, true)?
                .first()
                .map(|e| e.id),
        )
    }

    fn last_node<T: RawWrite + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        at_most: StreamId,
    ) -> Result<Option<(StreamId, Node)>> {
        let (lower, upper) = id_bounds(self.v(), NODE, &[], StreamId::MIN, at_most);
        match k.io.scan_raw_rev(&lower, &upper, 1)?.pop() {
            Some((key, value)) => Ok(Some((id_of_key(self.v(), &key)?, Node::decode(&value)?))),
            None => Ok(None),
        }
    }

    /// Appends entry `id` (greater than every id so far) with `fields`.
    pub(crate) fn append<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        id: StreamId,
        fields: &[Bytes],
        lim: NodeLimits,
    ) -> Result<()> {
        let total: u64 = fields.iter().map(|f| f.len() as u64).sum();
        if total > LISTPACK_MAX {
            return Err(StreamError::TooLarge.into());
        }
        let payload = packed::encode(fields.iter().map(|f| &f[..]));
        check_value_len(payload.len())?;
        let max_bytes = if lim.max_bytes == 0 || lim.max_bytes > LISTPACK_MAX {
            LISTPACK_MAX
        } else {
            lim.max_bytes
        };
        let tail = self.last_node(k, StreamId::MAX)?;
        let reuse = tail.filter(|(_, n)| {
            n.listpack_bytes() + total < max_bytes
                && (lim.max_entries == 0 || n.live + n.deleted < lim.max_entries)
        });
        let names: Vec<Bytes> = fields.iter().step_by(2).cloned().collect();
        let (master_id, node) = match reuse {
            Some((master_id, mut n)) => {
                let same = n.master == names;
                n.live += 1;
                n.last = id;
                n.body += Node::entry_bytes(master_id, id, fields, same);
                (master_id, n)
            }
            None => (
                id,
                Node {
                    live: 1,
                    deleted: 0,
                    body: Node::entry_bytes(id, id, fields, true),
                    last: id,
                    master: names,
                },
            ),
        };
        k.io.put_raw(&node_key(self.v(), master_id), &node.encode());
        k.io.put_raw(&entry_key(self.v(), id), &payload);
        self.meta.length += 1;
        self.meta.entries_added += 1;
        self.meta.last = id;
        if self.meta.length == 1 {
            self.meta.first = id;
        }
        Ok(())
    }

    /// Deletes entry `id` (XDEL): whether it existed. Does not move `first`.
    pub(crate) fn delete<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        id: StreamId,
    ) -> Result<bool> {
        if self.meta.length == 0 || id < self.meta.first || id > self.meta.last {
            return Ok(false);
        }
        let key = entry_key(self.v(), id);
        if k.io.get_raw(&key)?.is_none() {
            return Ok(false);
        }
        let (master_id, mut node) = self
            .last_node(k, id)?
            .ok_or(CorruptRecord("stream entry without node"))?;
        k.io.delete_raw(&key);
        self.meta.dead += 1;
        self.meta.length -= 1;
        if node.live <= 1 {
            k.io.delete_raw(&node_key(self.v(), master_id));
            self.meta.dead += 1;
        } else {
            node.live -= 1;
            node.deleted += 1;
            k.io.put_raw(&node_key(self.v(), master_id), &node.encode());
        }
        Ok(true)
    }

    /// Sets `first` to the smallest live id (0-0 when empty).
    pub(crate) fn refresh_first<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
    ) -> Result<()> {
        self.meta.first = if self.meta.length == 0 {
            StreamId::MIN
        } else {
            range(k.io, &self.meta, StreamId::MIN, StreamId::MAX, 1, false)?
                .first()
                .map(|e| e.id)
                .ok_or(CorruptRecord("stream length"))?
        };
        Ok(())
    }

    /// Trims as Redis's `streamTrim`: whole nodes from the start while the strategy allows,
    /// then (unless `approx`) entries of the next node; at most `limit` entries (0: no limit).
    /// Returns how many entries it deleted.
    pub(crate) fn trim<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        maxlen: Option<u64>,
        minid: Option<StreamId>,
        approx: bool,
        limit: u64,
    ) -> Result<u64> {
        let v = self.v();
        let mut deleted = 0u64;
        let (mut lower, upper) = id_bounds(v, NODE, &[], StreamId::MIN, StreamId::MAX);
        loop {
            if maxlen.is_some_and(|m| self.meta.length <= m) {
                break;
            }
            let Some((key, value)) = k.io.scan_raw(&lower, &upper, 1)?.pop() else {
                break;
            };
            let master_id = id_of_key(v, &key)?;
            let mut node = Node::decode(&value)?;
            let entries = node.live;
            if limit > 0 && deleted + entries > limit {
                break;
            }
            let remove = match (maxlen, minid) {
                (Some(m), _) => self.meta.length - entries >= m,
                (None, Some(min)) => node.last < min,
                (None, None) => false,
            };
            let (elo, ehi) = id_bounds(v, ENTRY, &[], master_id, node.last);
            if remove {
                let mut from = elo;
                loop {
                    let chunk = k.io.scan_raw(&from, &ehi, SCAN_CHUNK)?;
                    let n = chunk.len();
                    for (ek, _) in &chunk {
                        k.io.delete_raw(ek);
                    }
                    match chunk.last() {
                        Some((ek, _)) if n == SCAN_CHUNK => from = after(ek.clone()),
                        _ => break,
                    }
                }
                k.io.delete_raw(&key);
                self.meta.length -= entries;
                self.meta.dead += entries + 1;
                deleted += entries;
                lower = after(key);
                continue;
            }
            if approx {
                break;
            }
            let mut from = elo;
            'node: loop {
                let chunk = k.io.scan_raw(&from, &ehi, SCAN_CHUNK)?;
                let n = chunk.len();
                for (ek, _) in &chunk {
                    let id = id_of_key(v, ek)?;
                    let stop = match (maxlen, minid) {
                        (Some(m), _) => self.meta.length <= m,
                        (None, Some(min)) => id >= min,
                        (None, None) => true,
                    };
                    if stop {
                        break 'node;
                    }
                    k.io.delete_raw(ek);
                    node.live -= 1;
                    node.deleted += 1;
                    self.meta.length -= 1;
                    self.meta.dead += 1;
                    deleted += 1;
                }
                match chunk.last() {
                    Some((ek, _)) if n == SCAN_CHUNK => from = after(ek.clone()),
                    _ => break,
                }
            }
            k.io.put_raw(&key, &node.encode());
            break;
        }
        if self.meta.length == 0 {
            self.meta.first = StreamId::MIN;
        } else if deleted > 0 {
            self.refresh_first(k)?;
        }
        Ok(deleted)
    }

    /// Adds a group (false if one has the name).
    pub(crate) fn add_group(&mut self, name: &Bytes, last: StreamId, entries_read: i64) -> bool {
        match self.meta.groups.binary_search_by(|g| g.name[..].cmp(name)) {
            Ok(_) => false,
            Err(at) => {
                let gid = self.meta.next_sub;
                self.meta.next_sub += 1;
                self.meta.groups.insert(
                    at,
                    Group {
                        name: name.clone(),
                        gid,
                        last,
                        entries_read,
                        pending: 0,
                        consumers: Vec::new(),
                    },
                );
                true
            }
        }
    }

    /// Removes a group and its pending entries (O(pending)); whether it existed.
    pub(crate) fn destroy_group<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        name: &[u8],
    ) -> Result<bool> {
        let Ok(at) = self.meta.groups.binary_search_by(|g| g.name[..].cmp(name)) else {
            return Ok(false);
        };
        let g = self.meta.groups.remove(at);
        let gb = g.gid.to_be_bytes();
        for (tag, n) in [(PENDING, g.pending), (OWNED, g.pending)] {
            let (mut lower, upper) = (
                family_key(self.v(), tag, &[&gb]),
                crate::layout::next_prefix(&family_key(self.v(), tag, &[&gb])),
            );
            let mut left = n;
            while left > 0 {
                let chunk = k.io.scan_raw(&lower, &upper, SCAN_CHUNK)?;
                if chunk.is_empty() {
                    break;
                }
                for (key, _) in &chunk {
                    k.io.delete_raw(key);
                    left = left.saturating_sub(1);
                }
                lower = after(chunk[chunk.len() - 1].0.clone());
            }
            self.meta.dead += n;
        }
        Ok(true)
    }

    /// The consumer `name` of group `group` (made if missing, with `created` set), its seen
    /// time set to `now_ms` when `touch`.
    pub(crate) fn consumer(
        &mut self,
        group: &[u8],
        name: &Bytes,
        now_ms: i64,
        touch: bool,
    ) -> Option<(u64, bool)> {
        let next = self.meta.next_sub;
        let g = self.meta.group_mut(group)?;
        if let Some(c) = g.consumer_mut(name) {
            if touch {
                c.seen_ms = now_ms;
            }
            return Some((c.cid, false));
        }
        let at = g
            .consumers
            .binary_search_by(|c| c.name[..].cmp(name))
            .err()?;
        g.consumers.insert(
            at,
            Consumer {
                name: name.clone(),
                cid: next,
                seen_ms: now_ms,
                pending: 0,
            },
        );
        self.meta.next_sub += 1;
        Some((next, true))
    }

    /// Removes consumer `name` of group `group` and its pending entries: how many it had.
    pub(crate) fn delete_consumer<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        group: &[u8],
        name: &[u8],
    ) -> Result<u64> {
        let v = self.v();
        let Some(g) = self.meta.group_mut(group) else {
            return Ok(0);
        };
        let Ok(at) = g.consumers.binary_search_by(|c| c.name[..].cmp(name)) else {
            return Ok(0);
        };
        let c = g.consumers.remove(at);
        let gid = g.gid;
        let owned = pending_range(
            k.io,
            v,
            gid,
            Some(c.cid),
            StreamId::MIN,
            StreamId::MAX,
            0,
            false,
        )?;
        for p in &owned {
            k.io.delete_raw(&pending_key(v, gid, p.id));
            k.io.delete_raw(&owned_key(v, gid, c.cid, p.id));
        }
        let g = self
            .meta
            .group_mut(group)
            .ok_or(CorruptRecord("stream group"))?;
        g.pending -= owned.len() as u64;
        self.meta.dead += 2 * owned.len() as u64;
        Ok(c.pending)
    }

    /// The pending entry `id` of group `gid`.
    pub(crate) fn pending_entry<T: RawWrite + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        gid: u64,
        id: StreamId,
    ) -> Result<Option<Pending>> {
        match k.io.get_raw(&pending_key(self.v(), gid, id))? {
            Some(raw) => Ok(Some(Pending::decode(id, &raw)?)),
            None => Ok(None),
        }
    }

    pub(crate) fn pending_from<T: RawWrite + ?Sized>(
        &self,
        k: &mut Keys<'_, T>,
        gid: u64,
        cid: Option<u64>,
        from: StreamId,
        count: u64,
    ) -> Result<Vec<Pending>> {
        pending_range(k.io, self.v(), gid, cid, from, StreamId::MAX, count, false)
    }

    /// Writes pending entry `p` of group `group`, replacing `old` (the entry as it was, if
    /// any): moves it between consumers' owned keys and pending counts.
    pub(crate) fn put_pending<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        group: &[u8],
        old: Option<Pending>,
        p: Pending,
    ) -> Result<()> {
        let v = self.v();
        let g = self
            .meta
            .group_mut(group)
            .ok_or(CorruptRecord("stream group"))?;
        let gid = g.gid;
        match old {
            None => {
                g.pending += 1;
                k.io.put_raw(&owned_key(v, gid, p.cid, p.id), b"");
                g.by_cid(p.cid)
                    .ok_or(CorruptRecord("stream consumer"))?
                    .pending += 1;
            }
            Some(o) if o.cid != p.cid => {
                k.io.delete_raw(&owned_key(v, gid, o.cid, o.id));
                self.meta.dead += 1;
                let g = self
                    .meta
                    .group_mut(group)
                    .ok_or(CorruptRecord("stream group"))?;
                if let Some(c) = g.by_cid(o.cid) {
                    c.pending = c.pending.saturating_sub(1);
                }
                k.io.put_raw(&owned_key(v, gid, p.cid, p.id), b"");
                g.by_cid(p.cid)
                    .ok_or(CorruptRecord("stream consumer"))?
                    .pending += 1;
            }
            Some(_) => {}
        }
        k.io.put_raw(&pending_key(v, gid, p.id), &p.encode());
        Ok(())
    }

    /// Removes pending entry `p` of group `group`.
    pub(crate) fn remove_pending<T: RawWrite + ?Sized>(
        &mut self,
        k: &mut Keys<'_, T>,
        group: &[u8],
        p: Pending,
    ) -> Result<()> {
        let v = self.v();
        let g = self
            .meta
            .group_mut(group)
            .ok_or(CorruptRecord("stream group"))?;
        let gid = g.gid;
        k.io.delete_raw(&pending_key(v, gid, p.id));
        k.io.delete_raw(&owned_key(v, gid, p.cid, p.id));
        g.pending = g.pending.saturating_sub(1);
        if let Some(c) = g.by_cid(p.cid) {
            c.pending = c.pending.saturating_sub(1);
        }
        self.meta.dead += 2;
        Ok(())
    }

    /// Writes the stream's header (keeping its expiry), moving it to a new version first if
    /// its tombstones outnumber its live keys.
    pub(crate) fn finish<T: RawWrite + ?Sized>(
        mut self,
        k: &mut Keys<'_, T>,
        key: &[u8],
    ) -> Result<()> {
        if self.meta.dead >= super::REVERSION_MIN_DEAD {
            let nodes = count_nodes(k.io, self.v())?;
            if self.meta.reversion_due(nodes) {
                let mut h = super::Header::new(self.meta.version, 0);
                super::reversion(k.io, &mut h)?;
                self.meta.version = h.version;
                self.meta.dead = 0;
            }
        }
        let payload = self.meta.encode();
        check_value_len(payload.len())?;
        let at = self.old.as_ref().and_then(|r| r.expire_at_ms);
        k.put_record(key, self.old.as_ref(), Kind::Stream, true, &payload, at);
        Ok(())
    }
}

/// The stream `s` as a DUMP payload carries it (every node, entry, group and pending entry,
/// read in the state `s` was loaded in).
pub(crate) fn export<T: RawRead + ?Sized>(k: &mut Keys<'_, T>, s: &Stream) -> Result<StreamDump> {
    let v = s.meta.version;
    let mut d = StreamDump {
        length: s.meta.length,
        last: s.meta.last,
        first: s.meta.first,
        max_deleted: s.meta.max_deleted,
        entries_added: s.meta.entries_added,
        ..StreamDump::default()
    };
    let (mut lower, upper) = id_bounds(v, NODE, &[], StreamId::MIN, StreamId::MAX);
    loop {
        let chunk = k.io.scan_raw(&lower, &upper, SCAN_CHUNK)?;
        let n = chunk.len();
        for (key, value) in &chunk {
            let master = id_of_key(v, key)?;
            let node = Node::decode(value)?;
            let entries = s.range(k, master, node.last, 0, false)?;
            d.nodes.push(DumpNode {
                master,
                master_fields: node.master,
                entries: entries.into_iter().map(|e| (e.id, e.fields)).collect(),
                deleted: node.deleted,
                last: node.last,
            });
        }
        match chunk.last() {
            Some((key, _)) if n == SCAN_CHUNK => lower = after(key.clone()),
            _ => break,
        }
    }
    for g in &s.meta.groups {
        let pending = s.pending(k, g.gid, None, StreamId::MIN, StreamId::MAX, 0)?;
        let mut consumers = Vec::with_capacity(g.consumers.len());
        for c in &g.consumers {
            let own = s.pending(k, g.gid, Some(c.cid), StreamId::MIN, StreamId::MAX, 0)?;
            consumers.push((
                c.name.clone(),
                c.seen_ms,
                own.iter().map(|p| p.id).collect(),
            ));
        }
        d.groups.push(DumpGroup {
            name: g.name.clone(),
            last: g.last,
            entries_read: g.entries_read,
            pending: pending
                .iter()
                .map(|p| (p.id, p.delivered_ms, p.deliveries))
                .collect(),
            consumers,
        });
    }
    Ok(d)
}

/// Writes the stream `d` (a RESTOREd payload) at `key`, which holds nothing: its nodes as they
/// were, its counters, groups, consumers and pending entries.
pub(crate) fn import<T: RawWrite + ?Sized>(
    k: &mut Keys<'_, T>,
    key: &[u8],
    d: &StreamDump,
) -> Result<()> {
    let bad = || Error::Payload(crate::rdb::PayloadError::BadData);
    let mut w = Writer::create(k, key)?;
    let v = w.v();
    for n in d.nodes.iter().filter(|n| !n.entries.is_empty()) {
        let mut body = 0;
        for (id, fields) in &n.entries {
            let names: Vec<Bytes> = fields.iter().step_by(2).cloned().collect();
            body += Node::entry_bytes(n.master, *id, fields, names == n.master_fields);
            let payload = packed::encode(fields.iter().map(|f| &f[..]));
            check_value_len(payload.len())?;
            k.io.put_raw(&entry_key(v, *id), &payload);
        }
        let node = Node {
            live: n.entries.len() as u64,
            deleted: n.deleted,
            body,
            last: n.last,
            master: n.master_fields.clone(),
        };
        k.io.put_raw(&node_key(v, n.master), &node.encode());
    }
    w.meta.length = d.length;
    w.meta.last = d.last;
    w.meta.first = d.first;
    w.meta.max_deleted = d.max_deleted;
    w.meta.entries_added = d.entries_added;
    for g in &d.groups {
        if !w.add_group(&g.name, g.last, g.entries_read) {
            return Err(bad());
        }
        let mut owner = std::collections::HashMap::new();
        for (name, seen, ids) in &g.consumers {
            let (cid, created) = w.consumer(&g.name, name, *seen, true).ok_or_else(bad)?;
            if !created {
                return Err(bad());
            }
            for id in ids {
                if owner.insert(*id, cid).is_some() {
                    return Err(bad());
                }
            }
        }
        for (id, at, n) in &g.pending {
            // A pending entry no consumer holds is dropped (Redis's loader leaves it ownerless).
            let Some(cid) = owner.remove(id) else {
                continue;
            };
            let p = Pending {
                id: *id,
                delivered_ms: *at,
                deliveries: *n,
                cid,
            };
            w.put_pending(k, &g.name, None, p)?;
        }
        if !owner.is_empty() {
            return Err(bad());
        }
    }
    w.finish(k, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_redis_reads_them() {
        let p = |s: &str| StreamId::parse(s.as_bytes(), 0, true, false).map(|x| x.0);
        assert_eq!(p("5"), Some(StreamId::new(5, 0)));
        assert_eq!(p("5-3"), Some(StreamId::new(5, 3)));
        assert_eq!(p("05-03"), Some(StreamId::new(5, 3)));
        assert_eq!(p("-"), None);
        assert_eq!(p("5-"), None);
        assert_eq!(p("-5"), None);
        assert_eq!(p(" 7"), Some(StreamId::new(7, 0)));
        assert_eq!(p("+7-+1"), Some(StreamId::new(7, 1)));
        assert_eq!(p("7- 1"), Some(StreamId::new(7, 1)));
        assert_eq!(p("7 "), None);
        assert_eq!(p("1-"), None);
        assert_eq!(p("18446744073709551616"), None);
        assert_eq!(
            StreamId::parse(b"+", 0, false, false),
            Some((StreamId::MAX, true))
        );
        assert_eq!(
            StreamId::parse(b"7-*", 0, true, true),
            Some((StreamId::new(7, 0), false))
        );
        assert_eq!(StreamId::parse(b"7-*", 0, true, false), None);
        assert_eq!(
            StreamId::parse(b"9", u64::MAX, false, false),
            Some((StreamId::new(9, u64::MAX), true))
        );
    }

    #[test]
    fn ids_step_across_millisecond_edges() {
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::MIN.prev(), None);
        assert!(StreamId::new(1, 9) < StreamId::new(2, 0));
        assert!(StreamId::new(1, 9).be() < StreamId::new(2, 0).be());
    }

    #[test]
    fn headers_round_trip_and_refuse_damage() {
        let mut m = Meta::new(9);
        m.length = 3;
        m.last = StreamId::new(5, 1);
        m.groups.push(Group {
            name: Bytes::from_static(b"g"),
            gid: 1,
            last: StreamId::new(4, 0),
            entries_read: -1,
            pending: 2,
            consumers: vec![Consumer {
                name: Bytes::from_static(b"alice"),
                cid: 2,
                seen_ms: 77,
                pending: 2,
            }],
        });
        let b = m.encode();
        assert_eq!(Meta::decode(&b), Ok(m));
        for cut in 0..b.len() {
            assert!(Meta::decode(&b[..cut]).is_err(), "{cut}");
        }
        assert!(Meta::decode(&[b.clone(), vec![0]].concat()).is_err());
    }

    #[test]
    fn listpack_sizes_follow_redis() {
        assert_eq!(NodeSize::int(0), 2);
        assert_eq!(NodeSize::int(127), 2);
        assert_eq!(NodeSize::int(128), 3);
        assert_eq!(NodeSize::int(-1), 3);
        assert_eq!(NodeSize::int(1 << 40), 10);
        assert_eq!(NodeSize::string(b"abc"), 5);
        assert_eq!(NodeSize::string(b"12"), 2);
        assert_eq!(NodeSize::string(&[b'x'; 100]), 103);
        assert_eq!(NodeSize::string(&[b'x'; 200]), 204);
        // A new node with one entry `a 1`: header, end, counts, master field, terminator, and
        // the entry (flags, two deltas, value, lp-count) as Redis lays it out.
        let n = Node {
            live: 1,
            deleted: 0,
            body: Node::entry_bytes(
                StreamId::new(1, 0),
                StreamId::new(1, 0),
                &[Bytes::from("a"), Bytes::from("1")],
                true,
            ),
            last: StreamId::new(1, 0),
            master: vec![Bytes::from("a")],
        };
        assert_eq!(
            n.listpack_bytes(),
            7 + 2 + 2 + 2 + 3 + 2 + (2 + 2 + 2 + 2 + 2)
        );
    }

    #[test]
    fn member_keys_sort_by_family_then_id() {
        let a = entry_key(3, StreamId::new(1, 2));
        let b = entry_key(3, StreamId::new(2, 0));
        let n = node_key(3, StreamId::new(0, 0));
        let p = pending_key(3, 1, StreamId::MIN);
        let o = owned_key(3, 1, 2, StreamId::MIN);
        assert!(a < b && b < n && n < p && p < o);
        let (lo, hi) = super::super::member_range(3);
        for k in [&a, &b, &n, &p, &o] {
            assert!(*k >= lo && *k < hi);
        }
        assert_eq!(id_of_key(3, &o).unwrap(), StreamId::MIN);
    }
}
