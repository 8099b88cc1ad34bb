//! The byte format of an [`Op`] (design §11.7):
//!
//! ```text
//! op     := version: u8 (1) | db: u8 | now_ms: i64 LE | kind: u8 | body
//! bytes  := len: varint64 | data            string := bytes (UTF-8)
//! i64    := 8 bytes LE                      u64    := varint64 (LEB128)
//! body by kind:
//!   1 Set          key | value | flags: u8 | [expire_at_ms: i64 if flags & 1]
//!                  flags: 1 expiry, 2 KEEPTTL, 4 GET, 8 NX, 16 XX
//!   2 SetNx        key | value
//!   3 MSet         n: u64 | (key | value)*n
//!   4 MSetNx       n: u64 | (key | value)*n
//!   5 GetDel       key
//!   6 GetEx        key | ttl: u8 (0 keep, 1 persist, 2 at, 3 out of range, 4 not an
//!                  integer) | [at: i64 if 2]
//!   7 Append       key | value
//!   8 SetRange     key | offset: u64 | patch
//!   9 IncrBy       key | delta: i64
//!  10 IncrByFloat  key | incr
//!  11 Del          n: u64 | key*n
//!  12 Expire       key | at_ms: i64 | cond: u8 (bits: 1 NX, 2 XX, 4 GT, 8 LT)
//!  13 Persist      key
//!  14 Rename       src | dst | nx: u8
//!  15 ExpireDue    n: u64 | (db: u8 | at_ms: i64 | key)*n
//!  16 StoreCreate  name: string | prefix | rewind_ms: u64
//!  17 StoreDelete  name: string
//!  18 StoreRollback name: string
//!  26 StoreRollbackTo name: string | version: u32 LE
//!  27 StoreRetireLeft name: string | version: u32 LE
//!  19 PushBegin    store: string
//!  20 PushEnd      store: string | swap: u8 | [number: u32 LE | records: u64 | bytes: u64
//!                  | created_ms: i64 | from: u64 if swap]
//!  21 FlushStep    all: u8 | limit: u64
//!  22 LibraryPut   library | replace: u8
//!  23 LibraryDelete name: string
//!  24 LibraryFlush
//!  25 LibraryRestore policy: u8 (0 append, 1 replace, 2 flush) | n: u64 | library*n
//!  28 FlushSlots   first: u16 LE | last: u16 LE | from | limit: u64
//!  29 PartitionLibrary partition: u32 LE | a library change (kind 22 to 25 and its body)
//!  30 PartitionStore partition: u32 LE | at: u64 | change: u8 | name: string | id: u32 LE | body
//!       1 create    prefix | created_ms: i64 | [settings, when any is set]
//!       2 delete
//!       3 push-begin version: u32 LE | started_ms: i64
//!       4 push-end  version: u32 LE | swap: u8 (0 | 1 records: u64 | bytes: u64 | created_ms: i64)
//!       5 rollback  to: u32 LE
//!       6 configure settings
//!  31 StoreCreateWith name: string | prefix | rewind_ms: u64 | settings
//!  32 StoreConfigure name: string | settings
//!  36 Copy         src | dst | dst_db: u8 | replace: u8
//!  37 Move         key | dst_db: u8
//!  43 SwapDb       a: u8 | b: u8
//!  38 SetBit       key | offset: u64 | on: u8
//!  39 BitOp        op: u8 (0 AND, 1 OR, 2 XOR, 3 NOT) | dst | n: u64 | key*n
//!  40 BitField     key | n: u64 | sub*n
//!       sub := what: u8 (0 GET, 1 SET, 2 INCRBY) | signed: u8 | bits: u8 | offset: u64
//!              | [value: i64 | overflow: u8 (0 WRAP, 1 SAT, 2 FAIL) if SET or INCRBY]
//!  42 Sort         dst | key | flags: u8 (1 DESC, 2 ALPHA) | by: u8 (0 the elements,
//!                  1 pattern, 2 nosort) | [pattern if 1] | offset: i64 | count: i64
//!                  | n: u64 | pattern*n (GET)   (SORT ... STORE)
//!  33 Hash         write: u8 | body
//!       1 set       key | ok: u8 | n: u64 | (field | value)*n
//!       2 setnx     key | field | value
//!       3 del       key | n: u64 | field*n
//!       4 incrby    key | field | delta: i64
//!       5 incrbyfloat key | field | incr
//!  34 Set          write: u8 | body
//!       1 sadd      key | n: u64 | member*n
//!       2 srem      key | n: u64 | member*n
//!       3 spop      key | seed: u64 | has_count: u8 | [count: u64]
//!       4 smove     src | dst | member
//!       5 store     algebra: u8 (1 inter | 2 union | 3 diff) | dst | n: u64 | key*n
//!  35 ZSet         write: u8 | body
//!       1 add       key | flags: u8 (bits: 1 NX, 2 XX, 4 GT, 8 LT, 16 CH, 32 INCR) | n: u64
//!                   | (score | member)*n
//!       2 rem       key | n: u64 | member*n
//!       3 remrange  key | zrange
//!       4 pop       key | max: u8 | counted: u8 | [count: u64 if counted]
//!       5 rangestore dst | src | zrange | rev: u8 | limited: u8 | [offset: i64 | count: i64]
//!       6 store     dst | op: u8 (0 union, 1 inter, 2 diff) | n: u64 | key*n | m: u64 | score*m
//!                   | aggregate: u8 (0 sum, 1 min, 2 max) | late: u8 (0 none, 1 syntax,
//!                   2 weight not a float)
//!       7 mpop      max: u8 | counted: u8 | [count: u64 if counted] | n: u64 | key*n
//!       8 geostore  form: u8 (1 GEORADIUS, 2 GEORADIUSBYMEMBER, 3 GEOSEARCHSTORE) | n: u64
//!                   | arg*n (the request as sent, its name first)
//!  41 List         write: u8 | body
//!       1 push      key | left: u8 | existing: u8 | n: u64 | element*n
//!       2 pop       key | left: u8 | counted: u8 | [count: u64 if counted]
//!       3 set       key | index | value
//!       4 insert    key | before: u8 | pivot | value
//!       5 rem       key | count: i64 | value
//!       6 trim      key | start: i64 | stop: i64
//!       7 move      src | dst | from_left: u8 | to_left: u8
//!       8 mpop      left: u8 | counted: u8 | [count: u64 if counted] | n: u64 | key*n
//!  46 Hll          write: u8 | body
//!       1 add       key | sparse_max: u64 | n: u64 | element*n
//!       2 count     key
//!       3 merge     dst | sparse_max: u64 | n: u64 | key*n
//!       4 debug     key | sub: u8 (1 GETREG, 2 DECODE, 3 ENCODING, 4 TODENSE, 5 other)
//!                   | [name if 5]
//!  score := f64 LE (never NaN)
//!  zrange := 1 start: i64 | stop: i64  (rank)
//!          | 2 min: score | max: score | ex: u8 (bits: 1 min, 2 max)
//!          | 3 lexbound | lexbound (min, max)
//!  lexbound := 0 (`-`) | 1 (`+`) | 2 member (`[`) | 3 member (`(`)
//!  library := name: string | n: u64 | function: string * n | code
//!  settings := n: u8 | (tag: u8 | value) * n   (`stores::StoreSettings`: 1 compression: u8,
//!              2 keep: u32 LE)
//! ```
//!
//! Decoding is strict: an unknown version or kind, a truncated field, bytes left over or a
//! count larger than the bytes that could hold it fail with [`Error::BadOp`]; nothing is
//! allocated beyond what the input's length allows.

use bytes::Bytes;

use super::{
    AddId, BadStreamId, GroupStart, NodeLimits, ReadFrom, StreamId, StreamOp, Trim, TrimBy,
};
use super::{
    Aggregate, BadTime, Combine, Cond, ExpireCond, FieldSub, HashOp, HllDebug, HllOp, LateError,
    LexBound, LexRange, LibraryOp, LibrarySource, ListOp, Op, OpKind, PartStoreOp, RestoreOp,
    RestorePolicy, Score, ScoreRange, Set, SetAlgebra, SetOp, SortBy, SortSpec, SortStore, StoreOp,
    TtlChange, ZAddFlags, ZRange, ZSetOp,
};
use crate::bits::{BitOp, FieldType, Overflow};
use crate::collections::geo;
use crate::error::{Error, Result};
use crate::stores::{StoreSettings, VersionInfo};

/// The version tag of the format [`Op::encode`] writes.
pub const FORMAT_VERSION: u8 = 1;

const SET_EXPIRY: u8 = 1;
const SET_KEEPTTL: u8 = 2;
const SET_GET: u8 = 4;
const SET_NX: u8 = 8;
const SET_XX: u8 = 16;

impl Op {
    /// The op's bytes (see the module docs).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(32));
        w.u8(FORMAT_VERSION);
        w.u8(self.db);
        w.i64(self.now_ms);
        match &self.kind {
            OpKind::Set(s) => {
                w.u8(1);
                w.bytes(&s.key);
                w.bytes(&s.value);
                let mut flags = 0;
                if s.expire_at_ms.is_some() {
                    flags |= SET_EXPIRY;
                }
                if s.keep_ttl {
                    flags |= SET_KEEPTTL;
                }
                if s.get {
                    flags |= SET_GET;
                }
                match s.cond {
                    Some(Cond::Nx) => flags |= SET_NX,
                    Some(Cond::Xx) => flags |= SET_XX,
                    None => {}
                }
                w.u8(flags);
                if let Some(at) = s.expire_at_ms {
                    w.i64(at);
                }
            }
            OpKind::SetNx { key, value } => {
                w.u8(2);
                w.bytes(key);
                w.bytes(value);
            }
            OpKind::MSet { pairs } | OpKind::MSetNx { pairs } => {
                w.u8(if matches!(self.kind, OpKind::MSet { .. }) {
                    3
                } else {
                    4
                });
                w.u64(pairs.len() as u64);
                for (k, v) in pairs {
                    w.bytes(k);
                    w.bytes(v);
                }
            }
            OpKind::GetDel { key } => {
                w.u8(5);
                w.bytes(key);
            }
            OpKind::GetEx { key, ttl } => {
                w.u8(6);
                w.bytes(key);
                match ttl {
                    TtlChange::Keep => w.u8(0),
                    TtlChange::Persist => w.u8(1),
                    TtlChange::At(at) => {
                        w.u8(2);
                        w.i64(*at);
                    }
                    TtlChange::Bad(BadTime::OutOfRange) => w.u8(3),
                    TtlChange::Bad(BadTime::NotInteger) => w.u8(4),
                }
            }
            OpKind::Append { key, value } => {
                w.u8(7);
                w.bytes(key);
                w.bytes(value);
            }
            OpKind::SetRange { key, offset, patch } => {
                w.u8(8);
                w.bytes(key);
                w.u64(*offset);
                w.bytes(patch);
            }
            OpKind::IncrBy { key, delta } => {
                w.u8(9);
                w.bytes(key);
                w.i64(*delta);
            }
            OpKind::IncrByFloat { key, incr } => {
                w.u8(10);
                w.bytes(key);
                w.bytes(incr);
            }
            OpKind::Del { keys } => {
                w.u8(11);
                w.u64(keys.len() as u64);
                for k in keys {
                    w.bytes(k);
                }
            }
            OpKind::Expire { key, at_ms, cond } => {
                w.u8(12);
                w.bytes(key);
                w.i64(*at_ms);
                w.u8(u8::from(cond.nx)
                    | u8::from(cond.xx) << 1
                    | u8::from(cond.gt) << 2
                    | u8::from(cond.lt) << 3);
            }
            OpKind::Persist { key } => {
                w.u8(13);
                w.bytes(key);
            }
            OpKind::Rename { src, dst, nx } => {
                w.u8(14);
                w.bytes(src);
                w.bytes(dst);
                w.u8(u8::from(*nx));
            }
            OpKind::ExpireDue { entries } => {
                w.u8(15);
                w.u64(entries.len() as u64);
                for (db, at, key) in entries {
                    w.u8(*db);
                    w.i64(*at);
                    w.bytes(key);
                }
            }
            OpKind::FlushStep { all, limit } => {
                w.u8(21);
                w.u8(u8::from(*all));
                w.u64(*limit);
            }
            OpKind::FlushSlots {
                first,
                last,
                from,
                limit,
            } => {
                w.u8(28);
                w.u16(*first);
                w.u16(*last);
                w.bytes(from);
                w.u64(*limit);
            }
            OpKind::Library(l) => w.library_op(l),
            OpKind::PartitionLibrary { partition, op } => {
                w.u8(29);
                w.0.extend_from_slice(&partition.to_le_bytes());
                w.library_op(op);
            }
            OpKind::PartitionStore { partition, at, op } => {
                w.u8(30);
                w.0.extend_from_slice(&partition.to_le_bytes());
                w.u64(*at);
                let (change, name, id) = match op {
                    PartStoreOp::Create { name, id, .. } => (1, name, id),
                    PartStoreOp::Delete { name, id } => (2, name, id),
                    PartStoreOp::PushBegin { name, id, .. } => (3, name, id),
                    PartStoreOp::PushEnd { name, id, .. } => (4, name, id),
                    PartStoreOp::Rollback { name, id, .. } => (5, name, id),
                    PartStoreOp::Configure { name, id, .. } => (6, name, id),
                };
                w.u8(change);
                w.bytes(name.as_bytes());
                w.0.extend_from_slice(&id.to_le_bytes());
                match op {
                    PartStoreOp::Create {
                        prefix,
                        created_ms,
                        settings,
                        ..
                    } => {
                        w.bytes(prefix);
                        w.i64(*created_ms);
                        // Left out when empty: the record reads as it did before settings.
                        if !settings.is_empty() {
                            settings.encode_into(&mut w.0);
                        }
                    }
                    PartStoreOp::Configure { settings, .. } => settings.encode_into(&mut w.0),
                    PartStoreOp::Delete { .. } => {}
                    PartStoreOp::PushBegin {
                        version,
                        started_ms,
                        ..
                    } => {
                        w.0.extend_from_slice(&version.to_le_bytes());
                        w.i64(*started_ms);
                    }
                    PartStoreOp::PushEnd { version, swap, .. } => {
                        w.0.extend_from_slice(&version.to_le_bytes());
                        match swap {
                            None => w.u8(0),
                            Some(info) => {
                                w.u8(1);
                                w.u64(info.records);
                                w.u64(info.bytes);
                                w.i64(info.created_ms);
                            }
                        }
                    }
                    PartStoreOp::Rollback { to, .. } => w.0.extend_from_slice(&to.to_le_bytes()),
                }
            }
            OpKind::Store(StoreOp::Create {
                name,
                prefix,
                rewind_ms,
                settings,
            }) => {
                w.u8(31);
                w.bytes(name.as_bytes());
                w.bytes(prefix);
                w.u64(*rewind_ms);
                settings.encode_into(&mut w.0);
            }
            OpKind::Store(StoreOp::Configure { name, settings }) => {
                w.u8(32);
                w.bytes(name.as_bytes());
                settings.encode_into(&mut w.0);
            }
            OpKind::Store(StoreOp::Delete { name }) => {
                w.u8(17);
                w.bytes(name.as_bytes());
            }
            OpKind::Store(StoreOp::Rollback { name, to: None }) => {
                w.u8(18);
                w.bytes(name.as_bytes());
            }
            OpKind::Store(StoreOp::Rollback { name, to: Some(v) }) => {
                w.u8(26);
                w.bytes(name.as_bytes());
                w.0.extend_from_slice(&v.to_le_bytes());
            }
            OpKind::Store(StoreOp::RetireLeft { name, version }) => {
                w.u8(27);
                w.bytes(name.as_bytes());
                w.0.extend_from_slice(&version.to_le_bytes());
            }
            OpKind::Store(StoreOp::PushBegin { store }) => {
                w.u8(19);
                w.bytes(store.as_bytes());
            }
            OpKind::Store(StoreOp::PushEnd { store, swap }) => {
                w.u8(20);
                w.bytes(store.as_bytes());
                match swap {
                    None => w.u8(0),
                    Some((info, from)) => {
                        w.u8(1);
                        w.0.extend_from_slice(&info.number.to_le_bytes());
                        w.u64(info.records);
                        w.u64(info.bytes);
                        w.i64(info.created_ms);
                        w.u64(*from);
                    }
                }
            }
            OpKind::Copy {
                src,
                dst,
                dst_db,
                replace,
            } => {
                w.u8(36);
                w.bytes(src);
                w.bytes(dst);
                w.u8(*dst_db);
                w.u8(u8::from(*replace));
            }
            OpKind::Move { key, dst_db } => {
                w.u8(37);
                w.bytes(key);
                w.u8(*dst_db);
            }
            OpKind::SetBit { key, offset, on } => {
                w.u8(38);
                w.bytes(key);
                w.u64(*offset);
                w.u8(u8::from(*on));
            }
            OpKind::BitOp { op, dst, keys } => {
                w.u8(39);
                w.u8(match op {
                    BitOp::And => 0,
                    BitOp::Or => 1,
                    BitOp::Xor => 2,
                    BitOp::Not => 3,
                });
                w.bytes(dst);
                w.u64(keys.len() as u64);
                for k in keys {
                    w.bytes(k);
                }
            }
            OpKind::BitField { key, subs } => {
                w.u8(40);
                w.bytes(key);
                w.u64(subs.len() as u64);
                for s in subs {
                    let (what, ty, offset, rest) = match *s {
                        FieldSub::Get { ty, offset } => (0, ty, offset, None),
                        FieldSub::Set {
                            ty,
                            offset,
                            value,
                            overflow,
                        } => (1, ty, offset, Some((value, overflow))),
                        FieldSub::IncrBy {
                            ty,
                            offset,
                            incr,
                            overflow,
                        } => (2, ty, offset, Some((incr, overflow))),
                    };
                    w.u8(what);
                    w.u8(u8::from(ty.signed));
                    w.u8(ty.bits);
                    w.u64(offset);
                    if let Some((v, o)) = rest {
                        w.i64(v);
                        w.u8(match o {
                            Overflow::Wrap => 0,
                            Overflow::Sat => 1,
                            Overflow::Fail => 2,
                        });
                    }
                }
            }
            OpKind::Restore(r) => {
                w.u8(44);
                w.bytes(&r.key);
                let flags = u8::from(r.replace)
                    | u8::from(r.absolute) << 1
                    | u8::from(r.ttl_ms.is_none()) << 2;
                w.u8(flags);
                if let Some(ttl) = r.ttl_ms {
                    w.i64(ttl);
                }
                w.bytes(&r.payload);
            }
            OpKind::Sort(st) => {
                w.u8(42);
                w.bytes(&st.dst);
                w.sort(&st.sort);
            }
            OpKind::Hash(h) => {
                w.u8(33);
                match h {
                    HashOp::Set { key, pairs, ok } => {
                        w.u8(1);
                        w.bytes(key);
                        w.u8(u8::from(*ok));
                        w.u64(pairs.len() as u64);
                        for (f, v) in pairs {
                            w.bytes(f);
                            w.bytes(v);
                        }
                    }
                    HashOp::SetNx { key, field, value } => {
                        w.u8(2);
                        w.bytes(key);
                        w.bytes(field);
                        w.bytes(value);
                    }
                    HashOp::Del { key, fields } => {
                        w.u8(3);
                        w.bytes(key);
                        w.u64(fields.len() as u64);
                        for f in fields {
                            w.bytes(f);
                        }
                    }
                    HashOp::IncrBy { key, field, delta } => {
                        w.u8(4);
                        w.bytes(key);
                        w.bytes(field);
                        w.i64(*delta);
                    }
                    HashOp::IncrByFloat { key, field, incr } => {
                        w.u8(5);
                        w.bytes(key);
                        w.bytes(field);
                        w.bytes(incr);
                    }
                }
            }
            OpKind::ZSet(z) => {
                w.u8(35);
                match z {
                    ZSetOp::Add { key, flags, items } => {
                        w.u8(1);
                        w.bytes(key);
                        let bits = [flags.nx, flags.xx, flags.gt, flags.lt, flags.ch, flags.incr];
                        w.u8(bits
                            .iter()
                            .enumerate()
                            .fold(0, |acc, (i, b)| acc | (u8::from(*b) << i)));
                        w.u64(items.len() as u64);
                        for (score, member) in items {
                            w.score(*score);
                            w.bytes(member);
                        }
                    }
                    ZSetOp::Rem { key, members } => {
                        w.u8(2);
                        w.bytes(key);
                        w.u64(members.len() as u64);
                        for m in members {
                            w.bytes(m);
                        }
                    }
                    ZSetOp::RemRange { key, range } => {
                        w.u8(3);
                        w.bytes(key);
                        w.zrange(range);
                    }
                    ZSetOp::Pop { key, max, count } => {
                        w.u8(4);
                        w.bytes(key);
                        w.u8(u8::from(*max));
                        w.u8(u8::from(count.is_some()));
                        if let Some(n) = count {
                            w.u64(*n);
                        }
                    }
                    ZSetOp::MPop { keys, max, count } => {
                        w.u8(7);
                        w.u8(u8::from(*max));
                        w.u8(u8::from(count.is_some()));
                        if let Some(n) = count {
                            w.u64(*n);
                        }
                        w.u64(keys.len() as u64);
                        for k in keys {
                            w.bytes(k);
                        }
                    }
                    ZSetOp::GeoStore { form, args } => {
                        w.u8(8);
                        w.u8(match form {
                            geo::Form::Radius { .. } => 1,
                            geo::Form::ByMember { .. } => 2,
                            geo::Form::Search | geo::Form::SearchStore => 3,
                        });
                        w.u64(args.len() as u64);
                        for a in args {
                            w.bytes(a);
                        }
                    }
                    ZSetOp::RangeStore {
                        dst,
                        src,
                        range,
                        rev,
                        limit,
                    } => {
                        w.u8(5);
                        w.bytes(dst);
                        w.bytes(src);
                        w.zrange(range);
                        w.u8(u8::from(*rev));
                        w.u8(u8::from(limit.is_some()));
                        if let Some((o, c)) = limit {
                            w.i64(*o);
                            w.i64(*c);
                        }
                    }
                    ZSetOp::Store {
                        dst,
                        op,
                        keys,
                        weights,
                        aggregate,
                        late,
                    } => {
                        w.u8(6);
                        w.bytes(dst);
                        w.u8(match op {
                            Combine::Union => 0,
                            Combine::Inter => 1,
                            Combine::Diff => 2,
                        });
                        w.u64(keys.len() as u64);
                        for k in keys {
                            w.bytes(k);
                        }
                        w.u64(weights.len() as u64);
                        for s in weights {
                            w.score(*s);
                        }
                        w.u8(match aggregate {
                            Aggregate::Sum => 0,
                            Aggregate::Min => 1,
                            Aggregate::Max => 2,
                        });
                        w.u8(match late {
                            None => 0,
                            Some(LateError::Syntax) => 1,
                            Some(LateError::WeightNotFloat) => 2,
                        });
                    }
                }
            }
            OpKind::SwapDb { a, b } => {
                w.u8(43);
                w.u8(*a);
                w.u8(*b);
            }
            OpKind::Stream(x) => {
                w.u8(45);
                encode_stream(&mut w, x);
            }
            OpKind::List(l) => {
                w.u8(41);
                match l {
                    ListOp::Push {
                        key,
                        left,
                        existing,
                        items,
                    } => {
                        w.u8(1);
                        w.bytes(key);
                        w.u8(u8::from(*left));
                        w.u8(u8::from(*existing));
                        w.u64(items.len() as u64);
                        for i in items {
                            w.bytes(i);
                        }
                    }
                    ListOp::Pop { key, left, count } => {
                        w.u8(2);
                        w.bytes(key);
                        w.u8(u8::from(*left));
                        w.u8(u8::from(count.is_some()));
                        if let Some(n) = count {
                            w.u64(*n);
                        }
                    }
                    ListOp::Set { key, index, value } => {
                        w.u8(3);
                        w.bytes(key);
                        w.bytes(index);
                        w.bytes(value);
                    }
                    ListOp::Insert {
                        key,
                        before,
                        pivot,
                        value,
                    } => {
                        w.u8(4);
                        w.bytes(key);
                        w.u8(u8::from(*before));
                        w.bytes(pivot);
                        w.bytes(value);
                    }
                    ListOp::Rem { key, count, value } => {
                        w.u8(5);
                        w.bytes(key);
                        w.i64(*count);
                        w.bytes(value);
                    }
                    ListOp::Trim { key, start, stop } => {
                        w.u8(6);
                        w.bytes(key);
                        w.i64(*start);
                        w.i64(*stop);
                    }
                    ListOp::Move {
                        src,
                        dst,
                        from_left,
                        to_left,
                    } => {
                        w.u8(7);
                        w.bytes(src);
                        w.bytes(dst);
                        w.u8(u8::from(*from_left));
                        w.u8(u8::from(*to_left));
                    }
                    ListOp::MPop { keys, left, count } => {
                        w.u8(8);
                        w.u8(u8::from(*left));
                        w.u8(u8::from(count.is_some()));
                        if let Some(n) = count {
                            w.u64(*n);
                        }
                        w.u64(keys.len() as u64);
                        for k in keys {
                            w.bytes(k);
                        }
                    }
                }
            }
            OpKind::Hll(h) => {
                w.u8(46);
                let list = |w: &mut Writer, items: &[Bytes]| {
                    w.u64(items.len() as u64);
                    for i in items {
                        w.bytes(i);
                    }
                };
                match h {
                    HllOp::Add {
                        key,
                        elements,
                        sparse_max,
                    } => {
                        w.u8(1);
                        w.bytes(key);
                        w.u64(*sparse_max);
                        list(&mut w, elements);
                    }
                    HllOp::Count { key } => {
                        w.u8(2);
                        w.bytes(key);
                    }
                    HllOp::Merge {
                        dst,
                        keys,
                        sparse_max,
                    } => {
                        w.u8(3);
                        w.bytes(dst);
                        w.u64(*sparse_max);
                        list(&mut w, keys);
                    }
                    HllOp::Debug { key, sub } => {
                        w.u8(4);
                        w.bytes(key);
                        match sub {
                            HllDebug::GetReg => w.u8(1),
                            HllDebug::Decode => w.u8(2),
                            HllDebug::Encoding => w.u8(3),
                            HllDebug::ToDense => w.u8(4),
                            HllDebug::Unknown(name) => {
                                w.u8(5);
                                w.bytes(name);
                            }
                        }
                    }
                }
            }
            OpKind::Sets(o) => {
                w.u8(34);
                let list = |w: &mut Writer, items: &[Bytes]| {
                    w.u64(items.len() as u64);
                    for i in items {
                        w.bytes(i);
                    }
                };
                match o {
                    SetOp::Add { key, members } => {
                        w.u8(1);
                        w.bytes(key);
                        list(&mut w, members);
                    }
                    SetOp::Rem { key, members } => {
                        w.u8(2);
                        w.bytes(key);
                        list(&mut w, members);
                    }
                    SetOp::Pop { key, count, seed } => {
                        w.u8(3);
                        w.bytes(key);
                        w.u64(*seed);
                        w.u8(u8::from(count.is_some()));
                        if let Some(n) = count {
                            w.u64(*n);
                        }
                    }
                    SetOp::Move { src, dst, member } => {
                        w.u8(4);
                        w.bytes(src);
                        w.bytes(dst);
                        w.bytes(member);
                    }
                    SetOp::Store { algebra, dst, keys } => {
                        w.u8(5);
                        w.u8(match algebra {
                            SetAlgebra::Inter => 1,
                            SetAlgebra::Union => 2,
                            SetAlgebra::Diff => 3,
                        });
                        w.bytes(dst);
                        list(&mut w, keys);
                    }
                }
            }
        }
        w.0
    }

    /// Decodes an op's bytes (see the module docs).
    pub fn decode(bytes: &[u8]) -> Result<Op> {
        let mut r = Reader(bytes);
        if r.u8()? != FORMAT_VERSION {
            return Err(Error::BadOp("unsupported format version"));
        }
        let db = r.u8()?;
        let now_ms = r.i64()?;
        let kind = match r.u8()? {
            1 => {
                let key = r.bytes()?;
                let value = r.bytes()?;
                let flags = r.u8()?;
                if flags & !(SET_EXPIRY | SET_KEEPTTL | SET_GET | SET_NX | SET_XX) != 0
                    || flags & (SET_NX | SET_XX) == SET_NX | SET_XX
                    || flags & (SET_EXPIRY | SET_KEEPTTL) == SET_EXPIRY | SET_KEEPTTL
                {
                    return Err(Error::BadOp("bad SET flags"));
                }
                let expire_at_ms = if flags & SET_EXPIRY != 0 {
                    Some(r.i64()?)
                } else {
                    None
                };
                let cond = if flags & SET_NX != 0 {
                    Some(Cond::Nx)
                } else if flags & SET_XX != 0 {
                    Some(Cond::Xx)
                } else {
                    None
                };
                OpKind::Set(Set {
                    key,
                    value,
                    expire_at_ms,
                    keep_ttl: flags & SET_KEEPTTL != 0,
                    cond,
                    get: flags & SET_GET != 0,
                })
            }
            2 => OpKind::SetNx {
                key: r.bytes()?,
                value: r.bytes()?,
            },
            k @ (3 | 4) => {
                // Each pair takes at least two length bytes.
                let n = r.count(2)?;
                let mut pairs = Vec::with_capacity(n);
                for _ in 0..n {
                    pairs.push((r.bytes()?, r.bytes()?));
                }
                if k == 3 {
                    OpKind::MSet { pairs }
                } else {
                    OpKind::MSetNx { pairs }
                }
            }
            5 => OpKind::GetDel { key: r.bytes()? },
            6 => {
                let key = r.bytes()?;
                let ttl = match r.u8()? {
                    0 => TtlChange::Keep,
                    1 => TtlChange::Persist,
                    2 => TtlChange::At(r.i64()?),
                    3 => TtlChange::Bad(BadTime::OutOfRange),
                    4 => TtlChange::Bad(BadTime::NotInteger),
                    _ => return Err(Error::BadOp("bad GETEX expiry")),
                };
                OpKind::GetEx { key, ttl }
            }
            7 => OpKind::Append {
                key: r.bytes()?,
                value: r.bytes()?,
            },
            8 => OpKind::SetRange {
                key: r.bytes()?,
                offset: r.u64()?,
                patch: r.bytes()?,
            },
            9 => OpKind::IncrBy {
                key: r.bytes()?,
                delta: r.i64()?,
            },
            10 => OpKind::IncrByFloat {
                key: r.bytes()?,
                incr: r.bytes()?,
            },
            11 => {
                let n = r.count(1)?;
                let mut keys = Vec::with_capacity(n);
                for _ in 0..n {
                    keys.push(r.bytes()?);
                }
                OpKind::Del { keys }
            }
            12 => OpKind::Expire {
                key: r.bytes()?,
                at_ms: r.i64()?,
                cond: {
                    let f = r.u8()?;
                    let c = ExpireCond {
                        nx: f & 1 != 0,
                        xx: f & 2 != 0,
                        gt: f & 4 != 0,
                        lt: f & 8 != 0,
                    };
                    if f & !0x0f != 0 || (c.nx && (c.xx || c.gt || c.lt)) || (c.gt && c.lt) {
                        return Err(Error::BadOp("bad EXPIRE conditions"));
                    }
                    c
                },
            },
            13 => OpKind::Persist { key: r.bytes()? },
            14 => OpKind::Rename {
                src: r.bytes()?,
                dst: r.bytes()?,
                nx: r.bool()?,
            },
            15 => {
                // db, time and a length byte at least.
                let n = r.count(10)?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    entries.push((r.u8()?, r.i64()?, r.bytes()?));
                }
                OpKind::ExpireDue { entries }
            }
            16 => OpKind::Store(StoreOp::Create {
                name: r.string()?,
                prefix: r.bytes()?,
                rewind_ms: r.u64()?,
                settings: StoreSettings::default(),
            }),
            31 => OpKind::Store(StoreOp::Create {
                name: r.string()?,
                prefix: r.bytes()?,
                rewind_ms: r.u64()?,
                settings: r.settings()?,
            }),
            32 => OpKind::Store(StoreOp::Configure {
                name: r.string()?,
                settings: r.settings()?,
            }),
            17 => OpKind::Store(StoreOp::Delete { name: r.string()? }),
            18 => OpKind::Store(StoreOp::Rollback {
                name: r.string()?,
                to: None,
            }),
            26 => OpKind::Store(StoreOp::Rollback {
                name: r.string()?,
                to: Some(r.u32()?),
            }),
            27 => OpKind::Store(StoreOp::RetireLeft {
                name: r.string()?,
                version: r.u32()?,
            }),
            19 => OpKind::Store(StoreOp::PushBegin { store: r.string()? }),
            20 => {
                let store = r.string()?;
                let swap = if r.bool()? {
                    let number = r.u32()?;
                    let info = VersionInfo {
                        number,
                        records: r.u64()?,
                        bytes: r.u64()?,
                        created_ms: r.i64()?,
                    };
                    Some((info, r.u64()?))
                } else {
                    None
                };
                OpKind::Store(StoreOp::PushEnd { store, swap })
            }
            21 => OpKind::FlushStep {
                all: r.bool()?,
                limit: r.u64()?,
            },
            28 => OpKind::FlushSlots {
                first: r.u16()?,
                last: r.u16()?,
                from: r.bytes()?,
                limit: r.u64()?,
            },
            k @ 22..=25 => OpKind::Library(r.library_op(k)?),
            29 => {
                let b: [u8; 4] = r
                    .take(4)?
                    .try_into()
                    .map_err(|_| Error::BadOp("truncated"))?;
                let k = r.u8()?;
                if !(22..=25).contains(&k) {
                    return Err(Error::BadOp("not a library change"));
                }
                OpKind::PartitionLibrary {
                    partition: u32::from_le_bytes(b),
                    op: r.library_op(k)?,
                }
            }
            30 => {
                let partition = r.u32()?;
                let at = r.u64()?;
                let change = r.u8()?;
                let name = r.string()?;
                let id = r.u32()?;
                let op = match change {
                    1 => PartStoreOp::Create {
                        name,
                        id,
                        prefix: r.bytes()?,
                        created_ms: r.i64()?,
                        // Present only when some setting is (one layout per op).
                        settings: if r.0.is_empty() {
                            StoreSettings::default()
                        } else {
                            Some(r.settings()?)
                                .filter(|s| !s.is_empty())
                                .ok_or(Error::BadOp("empty store settings"))?
                        },
                    },
                    2 => PartStoreOp::Delete { name, id },
                    3 => PartStoreOp::PushBegin {
                        name,
                        id,
                        version: r.u32()?,
                        started_ms: r.i64()?,
                    },
                    4 => {
                        let version = r.u32()?;
                        let swap = if r.bool()? {
                            Some(VersionInfo {
                                number: version,
                                records: r.u64()?,
                                bytes: r.u64()?,
                                created_ms: r.i64()?,
                            })
                        } else {
                            None
                        };
                        PartStoreOp::PushEnd {
                            name,
                            id,
                            version,
                            swap,
                        }
                    }
                    5 => PartStoreOp::Rollback {
                        name,
                        id,
                        to: r.u32()?,
                    },
                    6 => PartStoreOp::Configure {
                        name,
                        id,
                        settings: r.settings()?,
                    },
                    _ => return Err(Error::BadOp("unknown store change")),
                };
                OpKind::PartitionStore { partition, at, op }
            }
            36 => OpKind::Copy {
                src: r.bytes()?,
                dst: r.bytes()?,
                dst_db: r.u8()?,
                replace: r.bool()?,
            },
            37 => OpKind::Move {
                key: r.bytes()?,
                dst_db: r.u8()?,
            },
            38 => OpKind::SetBit {
                key: r.bytes()?,
                offset: r.u64()?,
                on: r.bool()?,
            },
            39 => {
                let op = match r.u8()? {
                    0 => BitOp::And,
                    1 => BitOp::Or,
                    2 => BitOp::Xor,
                    3 => BitOp::Not,
                    _ => return Err(Error::BadOp("unknown BITOP operation")),
                };
                let dst = r.bytes()?;
                let n = r.count(1)?;
                let mut keys = Vec::with_capacity(n);
                for _ in 0..n {
                    keys.push(r.bytes()?);
                }
                OpKind::BitOp { op, dst, keys }
            }
            40 => {
                let key = r.bytes()?;
                // Each takes at least 4 bytes (a GET at a small offset).
                let n = r.count(4)?;
                let mut subs = Vec::with_capacity(n);
                for _ in 0..n {
                    let what = r.u8()?;
                    let signed = r.bool()?;
                    let bits = r.u8()?;
                    let ty = FieldType { signed, bits };
                    if FieldType::parse(
                        format!("{}{bits}", if signed { 'i' } else { 'u' }).as_bytes(),
                    ) != Some(ty)
                    {
                        return Err(Error::BadOp("bad BITFIELD type"));
                    }
                    let offset = r.u64()?;
                    let mut rest = || -> Result<(i64, Overflow)> {
                        let v = r.i64()?;
                        let o = match r.u8()? {
                            0 => Overflow::Wrap,
                            1 => Overflow::Sat,
                            2 => Overflow::Fail,
                            _ => return Err(Error::BadOp("bad BITFIELD overflow")),
                        };
                        Ok((v, o))
                    };
                    subs.push(match what {
                        0 => FieldSub::Get { ty, offset },
                        1 => {
                            let (value, overflow) = rest()?;
                            FieldSub::Set {
                                ty,
                                offset,
                                value,
                                overflow,
                            }
                        }
                        2 => {
                            let (incr, overflow) = rest()?;
                            FieldSub::IncrBy {
                                ty,
                                offset,
                                incr,
                                overflow,
                            }
                        }
                        _ => return Err(Error::BadOp("bad BITFIELD operation")),
                    });
                }
                OpKind::BitField { key, subs }
            }
            44 => {
                let key = r.bytes()?;
                let flags = r.u8()?;
                if flags & !7 != 0 {
                    return Err(Error::BadOp("unknown RESTORE flags"));
                }
                let ttl_ms = if flags & 4 == 0 { Some(r.i64()?) } else { None };
                OpKind::Restore(RestoreOp {
                    key,
                    ttl_ms,
                    absolute: flags & 2 != 0,
                    replace: flags & 1 != 0,
                    payload: r.bytes()?,
                })
            }
            42 => OpKind::Sort(SortStore {
                dst: r.bytes()?,
                sort: r.sort()?,
            }),
            33 => OpKind::Hash(match r.u8()? {
                1 => {
                    let key = r.bytes()?;
                    let ok = r.bool()?;
                    let n = r.count(2)?;
                    let mut pairs = Vec::with_capacity(n);
                    for _ in 0..n {
                        pairs.push((r.bytes()?, r.bytes()?));
                    }
                    HashOp::Set { key, pairs, ok }
                }
                2 => HashOp::SetNx {
                    key: r.bytes()?,
                    field: r.bytes()?,
                    value: r.bytes()?,
                },
                3 => {
                    let key = r.bytes()?;
                    let n = r.count(1)?;
                    let mut fields = Vec::with_capacity(n);
                    for _ in 0..n {
                        fields.push(r.bytes()?);
                    }
                    HashOp::Del { key, fields }
                }
                4 => HashOp::IncrBy {
                    key: r.bytes()?,
                    field: r.bytes()?,
                    delta: r.i64()?,
                },
                5 => HashOp::IncrByFloat {
                    key: r.bytes()?,
                    field: r.bytes()?,
                    incr: r.bytes()?,
                },
                _ => return Err(Error::BadOp("unknown hash write")),
            }),
            35 => OpKind::ZSet(match r.u8()? {
                1 => {
                    let key = r.bytes()?;
                    let f = r.u8()?;
                    if f >= 64 {
                        return Err(Error::BadOp("bad flag"));
                    }
                    let bit = |i: u8| f & (1 << i) != 0;
                    let flags = ZAddFlags {
                        nx: bit(0),
                        xx: bit(1),
                        gt: bit(2),
                        lt: bit(3),
                        ch: bit(4),
                        incr: bit(5),
                    };
                    let n = r.count(9)?;
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push((r.score()?, r.bytes()?));
                    }
                    ZSetOp::Add { key, flags, items }
                }
                2 => {
                    let key = r.bytes()?;
                    let n = r.count(1)?;
                    let mut members = Vec::with_capacity(n);
                    for _ in 0..n {
                        members.push(r.bytes()?);
                    }
                    ZSetOp::Rem { key, members }
                }
                3 => ZSetOp::RemRange {
                    key: r.bytes()?,
                    range: r.zrange()?,
                },
                4 => {
                    let key = r.bytes()?;
                    let max = r.bool()?;
                    let count = if r.bool()? { Some(r.u64()?) } else { None };
                    ZSetOp::Pop { key, max, count }
                }
                5 => {
                    let dst = r.bytes()?;
                    let src = r.bytes()?;
                    let range = r.zrange()?;
                    let rev = r.bool()?;
                    let limit = if r.bool()? {
                        Some((r.i64()?, r.i64()?))
                    } else {
                        None
                    };
                    ZSetOp::RangeStore {
                        dst,
                        src,
                        range,
                        rev,
                        limit,
                    }
                }
                6 => {
                    let dst = r.bytes()?;
                    let op = match r.u8()? {
                        0 => Combine::Union,
                        1 => Combine::Inter,
                        2 => Combine::Diff,
                        _ => return Err(Error::BadOp("bad combination")),
                    };
                    let n = r.count(1)?;
                    let mut keys = Vec::with_capacity(n);
                    for _ in 0..n {
                        keys.push(r.bytes()?);
                    }
                    let m = r.count(8)?;
                    let mut weights = Vec::with_capacity(m);
                    for _ in 0..m {
                        weights.push(r.score()?);
                    }
                    let aggregate = match r.u8()? {
                        0 => Aggregate::Sum,
                        1 => Aggregate::Min,
                        2 => Aggregate::Max,
                        _ => return Err(Error::BadOp("bad aggregate")),
                    };
                    let late = match r.u8()? {
                        0 => None,
                        1 => Some(LateError::Syntax),
                        2 => Some(LateError::WeightNotFloat),
                        _ => return Err(Error::BadOp("bad flag")),
                    };
                    ZSetOp::Store {
                        dst,
                        op,
                        keys,
                        weights,
                        aggregate,
                        late,
                    }
                }
                7 => {
                    let max = r.bool()?;
                    let count = if r.bool()? { Some(r.u64()?) } else { None };
                    let n = r.count(1)?;
                    let mut keys = Vec::with_capacity(n);
                    for _ in 0..n {
                        keys.push(r.bytes()?);
                    }
                    ZSetOp::MPop { keys, max, count }
                }
                8 => {
                    let form = match r.u8()? {
                        1 => geo::Form::Radius { ro: false },
                        2 => geo::Form::ByMember { ro: false },
                        3 => geo::Form::SearchStore,
                        _ => return Err(Error::BadOp("bad geospatial form")),
                    };
                    let n = r.count(1)?;
                    let mut args = Vec::with_capacity(n);
                    for _ in 0..n {
                        args.push(r.bytes()?);
                    }
                    ZSetOp::GeoStore { form, args }
                }
                _ => return Err(Error::BadOp("unknown sorted set write")),
            }),
            43 => OpKind::SwapDb {
                a: r.u8()?,
                b: r.u8()?,
            },
            45 => OpKind::Stream(decode_stream(&mut r)?),
            41 => OpKind::List(match r.u8()? {
                1 => {
                    let key = r.bytes()?;
                    let left = r.bool()?;
                    let existing = r.bool()?;
                    let n = r.count(1)?;
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push(r.bytes()?);
                    }
                    ListOp::Push {
                        key,
                        left,
                        existing,
                        items,
                    }
                }
                2 => {
                    let key = r.bytes()?;
                    let left = r.bool()?;
                    let count = if r.bool()? { Some(r.u64()?) } else { None };
                    ListOp::Pop { key, left, count }
                }
                3 => ListOp::Set {
                    key: r.bytes()?,
                    index: r.bytes()?,
                    value: r.bytes()?,
                },
                4 => ListOp::Insert {
                    key: r.bytes()?,
                    before: r.bool()?,
                    pivot: r.bytes()?,
                    value: r.bytes()?,
                },
                5 => ListOp::Rem {
                    key: r.bytes()?,
                    count: r.i64()?,
                    value: r.bytes()?,
                },
                6 => ListOp::Trim {
                    key: r.bytes()?,
                    start: r.i64()?,
                    stop: r.i64()?,
                },
                7 => ListOp::Move {
                    src: r.bytes()?,
                    dst: r.bytes()?,
                    from_left: r.bool()?,
                    to_left: r.bool()?,
                },
                8 => {
                    let left = r.bool()?;
                    let count = if r.bool()? { Some(r.u64()?) } else { None };
                    let n = r.count(1)?;
                    let mut keys = Vec::with_capacity(n);
                    for _ in 0..n {
                        keys.push(r.bytes()?);
                    }
                    ListOp::MPop { keys, left, count }
                }
                _ => return Err(Error::BadOp("unknown list write")),
            }),
            34 => OpKind::Sets(match r.u8()? {
                1 => SetOp::Add {
                    key: r.bytes()?,
                    members: r.byte_list()?,
                },
                2 => SetOp::Rem {
                    key: r.bytes()?,
                    members: r.byte_list()?,
                },
                3 => {
                    let key = r.bytes()?;
                    let seed = r.u64()?;
                    let count = if r.bool()? { Some(r.u64()?) } else { None };
                    SetOp::Pop { key, count, seed }
                }
                4 => SetOp::Move {
                    src: r.bytes()?,
                    dst: r.bytes()?,
                    member: r.bytes()?,
                },
                5 => {
                    let algebra = match r.u8()? {
                        1 => SetAlgebra::Inter,
                        2 => SetAlgebra::Union,
                        3 => SetAlgebra::Diff,
                        _ => return Err(Error::BadOp("unknown set algebra")),
                    };
                    SetOp::Store {
                        algebra,
                        dst: r.bytes()?,
                        keys: r.byte_list()?,
                    }
                }
                _ => return Err(Error::BadOp("unknown set write")),
            }),
            46 => OpKind::Hll(match r.u8()? {
                1 => HllOp::Add {
                    key: r.bytes()?,
                    sparse_max: r.u64()?,
                    elements: r.byte_list()?,
                },
                2 => HllOp::Count { key: r.bytes()? },
                3 => HllOp::Merge {
                    dst: r.bytes()?,
                    sparse_max: r.u64()?,
                    keys: r.byte_list()?,
                },
                4 => HllOp::Debug {
                    key: r.bytes()?,
                    sub: match r.u8()? {
                        1 => HllDebug::GetReg,
                        2 => HllDebug::Decode,
                        3 => HllDebug::Encoding,
                        4 => HllDebug::ToDense,
                        5 => HllDebug::Unknown(r.bytes()?),
                        _ => return Err(Error::BadOp("unknown PFDEBUG subcommand")),
                    },
                },
                _ => return Err(Error::BadOp("unknown HyperLogLog write")),
            }),
            _ => return Err(Error::BadOp("unknown kind")),
        };
        if !r.0.is_empty() {
            return Err(Error::BadOp("bytes after the op"));
        }
        Ok(Op { db, now_ms, kind })
    }
}

fn encode_stream(w: &mut Writer, x: &StreamOp) {
    let id = |w: &mut Writer, id: &StreamId| {
        w.u64(id.ms);
        w.u64(id.seq);
    };
    let ids = |w: &mut Writer, ids: &[StreamId]| {
        w.u64(ids.len() as u64);
        for i in ids {
            id(w, i);
        }
    };
    let trim = |w: &mut Writer, t: &Option<Trim>| match t {
        None => w.u8(0),
        Some(t) => {
            w.u8(1);
            match t.by {
                TrimBy::MaxLen(n) => {
                    w.u8(1);
                    w.u64(n);
                }
                TrimBy::MinId(m) => {
                    w.u8(2);
                    id(w, &m);
                }
            }
            w.u8(u8::from(t.approx));
            w.u64(t.limit);
        }
    };
    let node = |w: &mut Writer, n: &NodeLimits| {
        w.u64(n.max_bytes);
        w.u64(n.max_entries);
    };
    let bad_id = |w: &mut Writer, b: &Option<(u64, BadStreamId)>| match b {
        None => w.u8(0),
        Some((at, why)) => {
            w.u8(match why {
                BadStreamId::Invalid => 1,
                BadStreamId::Dollar => 2,
                BadStreamId::Greater => 3,
            });
            w.u64(*at);
        }
    };
    let start = |w: &mut Writer, s: &GroupStart| match s {
        GroupStart::Last => w.u8(0),
        GroupStart::Id(i) => {
            w.u8(1);
            id(w, i);
        }
        GroupStart::Bad => w.u8(2),
    };
    match x {
        StreamOp::Add {
            key,
            nomkstream,
            id: add,
            fields,
            trim: t,
            node: n,
        } => {
            w.u8(1);
            w.bytes(key);
            w.u8(u8::from(*nomkstream));
            match add {
                AddId::Auto => w.u8(0),
                AddId::Ms(ms) => {
                    w.u8(1);
                    w.u64(*ms);
                }
                AddId::Exact(i) => {
                    w.u8(2);
                    id(w, i);
                }
            }
            w.u64(fields.len() as u64);
            for f in fields {
                w.bytes(f);
            }
            trim(w, t);
            node(w, n);
        }
        StreamOp::Trim {
            key,
            trim: t,
            node: n,
        } => {
            w.u8(2);
            w.bytes(key);
            trim(w, &Some(*t));
            node(w, n);
        }
        StreamOp::Del { key, ids: i, bad } => {
            w.u8(3);
            w.bytes(key);
            w.u8(u8::from(*bad));
            ids(w, i);
        }
        StreamOp::SetId {
            key,
            last,
            entries_added,
            max_deleted,
        } => {
            w.u8(4);
            w.bytes(key);
            id(w, last);
            w.u8(u8::from(entries_added.is_some()));
            if let Some(n) = entries_added {
                w.u64(*n);
            }
            w.u8(u8::from(max_deleted.is_some()));
            if let Some(m) = max_deleted {
                id(w, m);
            }
        }
        StreamOp::Read {
            streams,
            count,
            bad,
        } => {
            w.u8(5);
            bad_id(w, bad);
            w.u64(streams.len() as u64);
            for (k, from) in streams {
                w.bytes(k);
                match from {
                    ReadFrom::After(i) => {
                        w.u8(0);
                        id(w, i);
                    }
                    ReadFrom::Last => w.u8(1),
                }
            }
            w.u64(*count);
        }
        StreamOp::ReadGroup {
            group,
            consumer,
            streams,
            count,
            noack,
            served,
            bad,
        } => {
            w.u8(6);
            bad_id(w, bad);
            w.bytes(group);
            w.bytes(consumer);
            w.u64(streams.len() as u64);
            for (k, from) in streams {
                w.bytes(k);
                w.u8(u8::from(from.is_some()));
                if let Some(i) = from {
                    id(w, i);
                }
            }
            w.u64(*count);
            w.u8(u8::from(*noack));
            w.u8(u8::from(*served));
        }
        StreamOp::GroupCreate {
            key,
            group,
            start: s,
            mkstream,
            entries_read,
        } => {
            w.u8(7);
            w.bytes(key);
            w.bytes(group);
            start(w, s);
            w.u8(u8::from(*mkstream));
            w.i64(*entries_read);
        }
        StreamOp::GroupSetId {
            key,
            group,
            start: s,
            entries_read,
        } => {
            w.u8(8);
            w.bytes(key);
            w.bytes(group);
            start(w, s);
            w.i64(*entries_read);
        }
        StreamOp::GroupDestroy { key, group } => {
            w.u8(9);
            w.bytes(key);
            w.bytes(group);
        }
        StreamOp::CreateConsumer {
            key,
            group,
            consumer,
        } => {
            w.u8(10);
            w.bytes(key);
            w.bytes(group);
            w.bytes(consumer);
        }
        StreamOp::DelConsumer {
            key,
            group,
            consumer,
        } => {
            w.u8(11);
            w.bytes(key);
            w.bytes(group);
            w.bytes(consumer);
        }
        StreamOp::Ack {
            key,
            group,
            ids: i,
            bad,
        } => {
            w.u8(12);
            w.bytes(key);
            w.bytes(group);
            w.u8(u8::from(*bad));
            ids(w, i);
        }
        StreamOp::Claim {
            key,
            group,
            consumer,
            args,
        } => {
            w.u8(13);
            w.bytes(key);
            w.bytes(group);
            w.bytes(consumer);
            w.u64(args.len() as u64);
            for a in args {
                w.bytes(a);
            }
        }
        StreamOp::AutoClaim {
            key,
            group,
            consumer,
            min_idle,
            start: s,
            count,
            justid,
        } => {
            w.u8(14);
            w.bytes(key);
            w.bytes(group);
            w.bytes(consumer);
            w.u64(*min_idle);
            id(w, s);
            w.u64(*count);
            w.u8(u8::from(*justid));
        }
    }
}

fn decode_stream(r: &mut Reader<'_>) -> Result<StreamOp> {
    fn id(r: &mut Reader<'_>) -> Result<StreamId> {
        Ok(StreamId::new(r.u64()?, r.u64()?))
    }
    fn ids(r: &mut Reader<'_>) -> Result<Vec<StreamId>> {
        let n = r.count(2)?;
        (0..n).map(|_| id(r)).collect()
    }
    fn trim(r: &mut Reader<'_>) -> Result<Option<Trim>> {
        if !r.bool()? {
            return Ok(None);
        }
        let by = match r.u8()? {
            1 => TrimBy::MaxLen(r.u64()?),
            2 => TrimBy::MinId(id(r)?),
            _ => return Err(Error::BadOp("bad trim")),
        };
        Ok(Some(Trim {
            by,
            approx: r.bool()?,
            limit: r.u64()?,
        }))
    }
    fn node(r: &mut Reader<'_>) -> Result<NodeLimits> {
        Ok(NodeLimits {
            max_bytes: r.u64()?,
            max_entries: r.u64()?,
        })
    }
    fn start(r: &mut Reader<'_>) -> Result<GroupStart> {
        Ok(match r.u8()? {
            0 => GroupStart::Last,
            1 => GroupStart::Id(id(r)?),
            2 => GroupStart::Bad,
            _ => return Err(Error::BadOp("bad group start")),
        })
    }
    fn bad_id(r: &mut Reader<'_>) -> Result<Option<(u64, BadStreamId)>> {
        let why = match r.u8()? {
            0 => return Ok(None),
            1 => BadStreamId::Invalid,
            2 => BadStreamId::Dollar,
            3 => BadStreamId::Greater,
            _ => return Err(Error::BadOp("bad id flag")),
        };
        Ok(Some((r.u64()?, why)))
    }
    fn list(r: &mut Reader<'_>) -> Result<Vec<Bytes>> {
        let n = r.count(1)?;
        (0..n).map(|_| r.bytes()).collect()
    }
    Ok(match r.u8()? {
        1 => {
            let key = r.bytes()?;
            let nomkstream = r.bool()?;
            let add = match r.u8()? {
                0 => AddId::Auto,
                1 => AddId::Ms(r.u64()?),
                2 => AddId::Exact(id(r)?),
                _ => return Err(Error::BadOp("bad stream id form")),
            };
            let fields = list(r)?;
            if fields.is_empty() || fields.len() % 2 != 0 {
                return Err(Error::BadOp("fields and values are not pairs"));
            }
            StreamOp::Add {
                key,
                nomkstream,
                id: add,
                fields,
                trim: trim(r)?,
                node: node(r)?,
            }
        }
        2 => {
            let key = r.bytes()?;
            let t = trim(r)?.ok_or(Error::BadOp("XTRIM without a trim"))?;
            StreamOp::Trim {
                key,
                trim: t,
                node: node(r)?,
            }
        }
        3 => StreamOp::Del {
            key: r.bytes()?,
            bad: r.bool()?,
            ids: ids(r)?,
        },
        4 => StreamOp::SetId {
            key: r.bytes()?,
            last: id(r)?,
            entries_added: if r.bool()? { Some(r.u64()?) } else { None },
            max_deleted: if r.bool()? { Some(id(r)?) } else { None },
        },
        5 => {
            let bad = bad_id(r)?;
            let n = r.count(2)?;
            let mut streams = Vec::with_capacity(n);
            for _ in 0..n {
                let k = r.bytes()?;
                let from = match r.u8()? {
                    0 => ReadFrom::After(id(r)?),
                    1 => ReadFrom::Last,
                    _ => return Err(Error::BadOp("bad read start")),
                };
                streams.push((k, from));
            }
            StreamOp::Read {
                streams,
                count: r.u64()?,
                bad,
            }
        }
        6 => {
            let bad = bad_id(r)?;
            let group = r.bytes()?;
            let consumer = r.bytes()?;
            let n = r.count(2)?;
            let mut streams = Vec::with_capacity(n);
            for _ in 0..n {
                let k = r.bytes()?;
                let from = if r.bool()? { Some(id(r)?) } else { None };
                streams.push((k, from));
            }
            StreamOp::ReadGroup {
                group,
                consumer,
                streams,
                count: r.u64()?,
                noack: r.bool()?,
                served: r.bool()?,
                bad,
            }
        }
        7 => StreamOp::GroupCreate {
            key: r.bytes()?,
            group: r.bytes()?,
            start: start(r)?,
            mkstream: r.bool()?,
            entries_read: r.i64()?,
        },
        8 => StreamOp::GroupSetId {
            key: r.bytes()?,
            group: r.bytes()?,
            start: start(r)?,
            entries_read: r.i64()?,
        },
        9 => StreamOp::GroupDestroy {
            key: r.bytes()?,
            group: r.bytes()?,
        },
        10 => StreamOp::CreateConsumer {
            key: r.bytes()?,
            group: r.bytes()?,
            consumer: r.bytes()?,
        },
        11 => StreamOp::DelConsumer {
            key: r.bytes()?,
            group: r.bytes()?,
            consumer: r.bytes()?,
        },
        12 => StreamOp::Ack {
            key: r.bytes()?,
            group: r.bytes()?,
            bad: r.bool()?,
            ids: ids(r)?,
        },
        13 => StreamOp::Claim {
            key: r.bytes()?,
            group: r.bytes()?,
            consumer: r.bytes()?,
            args: list(r)?,
        },
        14 => StreamOp::AutoClaim {
            key: r.bytes()?,
            group: r.bytes()?,
            consumer: r.bytes()?,
            min_idle: r.u64()?,
            start: id(r)?,
            count: r.u64()?,
            justid: r.bool()?,
        },
        _ => return Err(Error::BadOp("unknown stream write")),
    })
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }

    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn u64(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn score(&mut self, s: Score) {
        self.0.extend_from_slice(&s.0.to_le_bytes());
    }

    fn lex_bound(&mut self, b: &LexBound) {
        match b {
            LexBound::Min => self.u8(0),
            LexBound::Max => self.u8(1),
            LexBound::Incl(m) => {
                self.u8(2);
                self.bytes(m);
            }
            LexBound::Excl(m) => {
                self.u8(3);
                self.bytes(m);
            }
        }
    }

    fn zrange(&mut self, r: &ZRange) {
        match r {
            ZRange::Rank(start, stop) => {
                self.u8(1);
                self.i64(*start);
                self.i64(*stop);
            }
            ZRange::Score(r) => {
                self.u8(2);
                self.score(r.min);
                self.score(r.max);
                self.u8(u8::from(r.min_ex) | (u8::from(r.max_ex) << 1));
            }
            ZRange::Lex(r) => {
                self.u8(3);
                self.lex_bound(&r.min);
                self.lex_bound(&r.max);
            }
        }
    }

    fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn sort(&mut self, s: &SortSpec) {
        self.bytes(&s.key);
        self.u8(u8::from(s.desc) | (u8::from(s.alpha) << 1));
        match &s.by {
            SortBy::Element => self.u8(0),
            SortBy::Pattern(p) => {
                self.u8(1);
                self.bytes(p);
            }
            SortBy::NoSort => self.u8(2),
        }
        self.i64(s.offset);
        self.i64(s.count);
        self.u64(s.gets.len() as u64);
        for g in &s.gets {
            self.bytes(g);
        }
    }

    /// A library change as its kind (22 to 25) and body.
    fn library_op(&mut self, op: &LibraryOp) {
        match op {
            LibraryOp::Put { lib, replace } => {
                self.u8(22);
                self.library(lib);
                self.u8(u8::from(*replace));
            }
            LibraryOp::Delete { name } => {
                self.u8(23);
                self.bytes(name.as_bytes());
            }
            LibraryOp::Flush => self.u8(24),
            LibraryOp::Restore { libs, policy } => {
                self.u8(25);
                self.u8(match policy {
                    RestorePolicy::Append => 0,
                    RestorePolicy::Replace => 1,
                    RestorePolicy::Flush => 2,
                });
                self.u64(libs.len() as u64);
                for lib in libs {
                    self.library(lib);
                }
            }
        }
    }

    fn library(&mut self, lib: &LibrarySource) {
        self.bytes(lib.name.as_bytes());
        self.u64(lib.functions.len() as u64);
        for f in &lib.functions {
            self.bytes(f.as_bytes());
        }
        self.bytes(&lib.code);
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.0.len() < n {
            return Err(Error::BadOp("truncated"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32> {
        let b: [u8; 4] = self
            .take(4)?
            .try_into()
            .map_err(|_| Error::BadOp("truncated"))?;
        Ok(u32::from_le_bytes(b))
    }

    fn bool(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Error::BadOp("bad flag")),
        }
    }

    fn u16(&mut self) -> Result<u16> {
        let b: [u8; 2] = self
            .take(2)?
            .try_into()
            .map_err(|_| Error::BadOp("truncated"))?;
        Ok(u16::from_le_bytes(b))
    }

    fn i64(&mut self) -> Result<i64> {
        let b: [u8; 8] = self
            .take(8)?
            .try_into()
            .map_err(|_| Error::BadOp("truncated"))?;
        Ok(i64::from_le_bytes(b))
    }

    fn u64(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                // The tenth byte may carry only the top bit.
                if shift == 63 && b > 1 {
                    return Err(Error::BadOp("varint overflows 64 bits"));
                }
                return Ok(v);
            }
        }
        Err(Error::BadOp("varint overflows 64 bits"))
    }

    /// A count of items each taking at least `min_bytes`, bounded by what is left.
    fn count(&mut self, min_bytes: usize) -> Result<usize> {
        let n = self.u64()?;
        if n > (self.0.len() / min_bytes) as u64 {
            return Err(Error::BadOp("count larger than the op"));
        }
        Ok(n as usize)
    }

    fn score(&mut self) -> Result<Score> {
        let s = f64::from_bits(self.i64()? as u64);
        if s.is_nan() {
            return Err(Error::BadOp("score is NaN"));
        }
        Ok(Score(s))
    }

    fn lex_bound(&mut self) -> Result<LexBound> {
        Ok(match self.u8()? {
            0 => LexBound::Min,
            1 => LexBound::Max,
            2 => LexBound::Incl(self.bytes()?),
            3 => LexBound::Excl(self.bytes()?),
            _ => return Err(Error::BadOp("bad lex bound")),
        })
    }

    fn zrange(&mut self) -> Result<ZRange> {
        Ok(match self.u8()? {
            1 => ZRange::Rank(self.i64()?, self.i64()?),
            2 => {
                let (min, max) = (self.score()?, self.score()?);
                let ex = self.u8()?;
                if ex > 3 {
                    return Err(Error::BadOp("bad flag"));
                }
                ZRange::Score(ScoreRange {
                    min,
                    max,
                    min_ex: ex & 1 != 0,
                    max_ex: ex & 2 != 0,
                })
            }
            3 => ZRange::Lex(LexRange {
                min: self.lex_bound()?,
                max: self.lex_bound()?,
            }),
            _ => return Err(Error::BadOp("bad range")),
        })
    }

    /// A count, then that many byte strings.
    fn byte_list(&mut self) -> Result<Vec<Bytes>> {
        let n = self.count(1)?;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(self.bytes()?);
        }
        Ok(items)
    }

    fn bytes(&mut self) -> Result<Bytes> {
        let n = usize::try_from(self.u64()?).map_err(|_| Error::BadOp("length overflows"))?;
        Ok(Bytes::copy_from_slice(self.take(n)?))
    }

    fn string(&mut self) -> Result<String> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| Error::BadOp("name is not UTF-8"))
    }

    fn settings(&mut self) -> Result<StoreSettings> {
        StoreSettings::decode_from(&mut self.0).map_err(|e| Error::BadOp(e.0))
    }

    fn sort(&mut self) -> Result<SortSpec> {
        let key = self.bytes()?;
        let flags = self.u8()?;
        if flags > 3 {
            return Err(Error::BadOp("bad flag"));
        }
        let by = match self.u8()? {
            0 => SortBy::Element,
            1 => SortBy::Pattern(self.bytes()?),
            2 => SortBy::NoSort,
            _ => return Err(Error::BadOp("bad SORT order")),
        };
        let (offset, count) = (self.i64()?, self.i64()?);
        let n = self.count(1)?;
        let mut gets = Vec::with_capacity(n);
        for _ in 0..n {
            gets.push(self.bytes()?);
        }
        Ok(SortSpec {
            key,
            by,
            offset,
            count,
            gets,
            desc: flags & 1 != 0,
            alpha: flags & 2 != 0,
        })
    }

    /// The body of a library change of kind `kind` (22 to 25).
    fn library_op(&mut self, kind: u8) -> Result<LibraryOp> {
        Ok(match kind {
            22 => LibraryOp::Put {
                lib: self.library()?,
                replace: self.bool()?,
            },
            23 => LibraryOp::Delete {
                name: self.string()?,
            },
            24 => LibraryOp::Flush,
            25 => {
                let policy = match self.u8()? {
                    0 => RestorePolicy::Append,
                    1 => RestorePolicy::Replace,
                    2 => RestorePolicy::Flush,
                    _ => return Err(Error::BadOp("bad restore policy")),
                };
                // A name, a count and a code length at least.
                let n = self.count(3)?;
                let mut libs = Vec::with_capacity(n);
                for _ in 0..n {
                    libs.push(self.library()?);
                }
                LibraryOp::Restore { libs, policy }
            }
            _ => return Err(Error::BadOp("not a library change")),
        })
    }

    fn library(&mut self) -> Result<LibrarySource> {
        let name = self.string()?;
        let n = self.count(1)?;
        let mut functions = Vec::with_capacity(n);
        for _ in 0..n {
            functions.push(self.string()?);
        }
        Ok(LibrarySource {
            name,
            functions,
            code: self.bytes()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_writes_round_trip_and_spop_is_laid_out_as_documented() {
        let b = |s: &'static str| Bytes::from_static(s.as_bytes());
        for op in [
            SetOp::Add {
                key: b("k"),
                members: vec![b("1"), b("a")],
            },
            SetOp::Rem {
                key: b("k"),
                members: vec![b("")],
            },
            SetOp::Pop {
                key: b("k"),
                count: None,
                seed: u64::MAX,
            },
            SetOp::Pop {
                key: b("k"),
                count: Some(3),
                seed: 0,
            },
            SetOp::Move {
                src: b("a"),
                dst: b("b"),
                member: b("m"),
            },
            SetOp::Store {
                algebra: SetAlgebra::Diff,
                dst: b("d"),
                keys: vec![b("a"), b("b")],
            },
        ] {
            let op = Op::new(1, 2, OpKind::Sets(op));
            assert_eq!(Op::decode(&op.encode()).unwrap(), op);
        }
        let op = Op::new(
            0,
            0,
            OpKind::Sets(SetOp::Pop {
                key: b("k"),
                count: Some(5),
                seed: 1,
            }),
        );
        let enc = op.encode();
        // kind 34, write 3, key, seed (varint), has_count, count (varint).
        assert!(enc.ends_with(&[34, 3, 1, b'k', 1, 1, 5]), "{enc:?}");
    }

    #[test]
    fn hll_writes_round_trip() {
        let b = |s: &'static str| Bytes::from_static(s.as_bytes());
        for op in [
            HllOp::Add {
                key: b("k"),
                elements: vec![b("a"), b("")],
                sparse_max: 3000,
            },
            HllOp::Add {
                key: b("k"),
                elements: vec![],
                sparse_max: 0,
            },
            HllOp::Count { key: b("k") },
            HllOp::Merge {
                dst: b("d"),
                keys: vec![b("a"), b("b")],
                sparse_max: 12,
            },
            HllOp::Debug {
                key: b("k"),
                sub: HllDebug::GetReg,
            },
            HllOp::Debug {
                key: b("k"),
                sub: HllDebug::Decode,
            },
            HllOp::Debug {
                key: b("k"),
                sub: HllDebug::Encoding,
            },
            HllOp::Debug {
                key: b("k"),
                sub: HllDebug::ToDense,
            },
            HllOp::Debug {
                key: b("k"),
                sub: HllDebug::Unknown(b("what")),
            },
        ] {
            let op = Op::new(3, 9, OpKind::Hll(op));
            let enc = op.encode();
            assert_eq!(Op::decode(&enc).unwrap(), op);
            assert!(Op::decode(&enc[..enc.len() - 1]).is_err());
        }
        let op = Op::new(0, 0, OpKind::Hll(HllOp::Count { key: b("k") }));
        assert!(op.encode().ends_with(&[46, 2, 1, b'k']));
    }

    #[test]
    fn list_writes_and_zmpop_round_trip() {
        let b = |s: &'static str| Bytes::from_static(s.as_bytes());
        let lists = [
            ListOp::Push {
                key: b("k"),
                left: true,
                existing: false,
                items: vec![b("a"), b("")],
            },
            ListOp::Pop {
                key: b("k"),
                left: false,
                count: Some(0),
            },
            ListOp::Pop {
                key: b("k"),
                left: true,
                count: None,
            },
            ListOp::Set {
                key: b("k"),
                index: b("-1"),
                value: b("v"),
            },
            ListOp::Insert {
                key: b("k"),
                before: true,
                pivot: b("p"),
                value: b("v"),
            },
            ListOp::Rem {
                key: b("k"),
                count: i64::MIN,
                value: b("v"),
            },
            ListOp::Trim {
                key: b("k"),
                start: 1,
                stop: -2,
            },
            ListOp::Move {
                src: b("a"),
                dst: b("b"),
                from_left: false,
                to_left: true,
            },
            ListOp::MPop {
                keys: vec![b("a"), b("b")],
                left: true,
                count: Some(10),
            },
            ListOp::MPop {
                keys: vec![b("a")],
                left: false,
                count: None,
            },
        ];
        for op in lists {
            let op = Op::new(1, 2, OpKind::List(op));
            assert_eq!(Op::decode(&op.encode()).unwrap(), op);
        }
        let op = Op::new(1, 2, OpKind::SwapDb { a: 0, b: 15 });
        assert_eq!(Op::decode(&op.encode()).unwrap(), op);
        let op = Op::new(
            1,
            2,
            OpKind::ZSet(ZSetOp::MPop {
                keys: vec![b("z")],
                max: true,
                count: None,
            }),
        );
        assert_eq!(Op::decode(&op.encode()).unwrap(), op);
    }

    #[test]
    fn restores_round_trip_and_are_laid_out_as_documented() {
        let b = |s: &'static str| Bytes::from_static(s.as_bytes());
        for (ttl_ms, absolute, replace) in [
            (Some(0), false, false),
            (Some(-5), true, true),
            (None, false, true),
        ] {
            let op = Op::new(
                3,
                4,
                OpKind::Restore(RestoreOp {
                    key: b("k"),
                    ttl_ms,
                    absolute,
                    replace,
                    payload: b("payload"),
                }),
            );
            let bytes = op.encode();
            assert_eq!(Op::decode(&bytes).unwrap(), op);
            for cut in 0..bytes.len() {
                assert!(Op::decode(&bytes[..cut]).is_err());
            }
        }
        let op = Op::new(
            0,
            0,
            OpKind::Restore(RestoreOp {
                key: b("k"),
                ttl_ms: Some(7),
                absolute: true,
                replace: true,
                payload: b("p"),
            }),
        );
        let enc = op.encode();
        let body = [&[44, 1, b'k', 3][..], &7i64.to_le_bytes(), &[1, b'p']].concat();
        assert!(enc.ends_with(&body), "{enc:?}");
        let mut bad = enc;
        bad[10 + 3] = 8;
        assert!(Op::decode(&bad).is_err());
    }

    #[test]
    fn sort_stores_round_trip_and_are_laid_out_as_documented() {
        let b = |s: &'static str| Bytes::from_static(s.as_bytes());
        let spec = |by, gets| SortSpec {
            key: b("k"),
            by,
            offset: -1,
            count: i64::MAX,
            gets,
            desc: true,
            alpha: false,
        };
        for by in [SortBy::Element, SortBy::Pattern(b("w_*")), SortBy::NoSort] {
            let op = Op::new(
                1,
                2,
                OpKind::Sort(SortStore {
                    dst: b("d"),
                    sort: spec(by, vec![b("#"), b("h_*->f")]),
                }),
            );
            let bytes = op.encode();
            assert_eq!(Op::decode(&bytes).unwrap(), op);
            for cut in 0..bytes.len() {
                assert!(Op::decode(&bytes[..cut]).is_err());
            }
        }
        let op = Op::new(
            0,
            0,
            OpKind::Sort(SortStore {
                dst: b("d"),
                sort: SortSpec {
                    alpha: true,
                    ..spec(SortBy::Pattern(b("p*")), vec![b("#")])
                },
            }),
        );
        let enc = op.encode();
        let body = [
            &[42, 1, b'd', 1, b'k', 3, 1, 2, b'p', b'*'][..],
            &(-1i64).to_le_bytes(),
            &i64::MAX.to_le_bytes(),
            &[1, 1, b'#'],
        ]
        .concat();
        assert!(enc.ends_with(&body), "{enc:?}");
        // Unknown flags and orders are refused.
        let mut bad = enc.clone();
        bad[10 + 5] = 4;
        assert!(Op::decode(&bad).is_err());
        let mut bad = enc;
        bad[10 + 6] = 3;
        assert!(Op::decode(&bad).is_err());
    }

    #[test]
    fn a_set_is_laid_out_as_documented() {
        let op = Op::new(
            3,
            0x0102,
            OpKind::Set(Set {
                key: Bytes::from_static(b"k"),
                value: Bytes::from_static(b"vv"),
                expire_at_ms: Some(7),
                keep_ttl: false,
                cond: Some(Cond::Nx),
                get: true,
            }),
        );
        let b = op.encode();
        assert_eq!(
            b,
            [
                &[1u8, 3][..],
                &0x0102i64.to_le_bytes(),
                &[1, 1, b'k', 2, b'v', b'v', SET_EXPIRY | SET_GET | SET_NX],
                &7i64.to_le_bytes(),
            ]
            .concat()
        );
        assert_eq!(Op::decode(&b).unwrap(), op);
    }

    /// Store creations as written before stores had settings still decode (compression none),
    /// and a partition's create without settings is still written that way.
    #[test]
    fn store_creations_without_settings_keep_their_old_layouts() {
        let mut old = vec![1u8, 0];
        old.extend_from_slice(&5i64.to_le_bytes());
        old.extend_from_slice(&[16, 1, b'f', 2, b'f', b':', 7]);
        let op = Op::decode(&old).unwrap();
        assert_eq!(
            op.kind,
            OpKind::Store(StoreOp::Create {
                name: "f".into(),
                prefix: Bytes::from_static(b"f:"),
                rewind_ms: 7,
                settings: StoreSettings::default(),
            })
        );
        let part = |settings| {
            Op::new(
                0,
                5,
                OpKind::PartitionStore {
                    partition: 2,
                    at: 9,
                    op: PartStoreOp::Create {
                        name: "f".into(),
                        id: 3,
                        prefix: Bytes::from_static(b"f:"),
                        created_ms: 4,
                        settings,
                    },
                },
            )
        };
        let mut old = vec![1u8, 0];
        old.extend_from_slice(&5i64.to_le_bytes());
        old.push(30);
        old.extend_from_slice(&2u32.to_le_bytes());
        old.extend_from_slice(&[9, 1, 1, b'f']);
        old.extend_from_slice(&3u32.to_le_bytes());
        old.extend_from_slice(&[2, b'f', b':']);
        old.extend_from_slice(&4i64.to_le_bytes());
        let plain = part(StoreSettings::default());
        assert_eq!(plain.encode(), old);
        assert_eq!(Op::decode(&old).unwrap(), plain);
        let zstd = part(StoreSettings {
            compression: Some(rialto_lsm::Compression::Zstd),
            keep: None,
        });
        let b = zstd.encode();
        assert_eq!(Op::decode(&b).unwrap(), zstd);
        for cut in old.len() + 1..b.len() {
            assert!(Op::decode(&b[..cut]).is_err(), "cut at {cut}");
        }
        // Empty settings are left out, never written: a second layout is refused.
        let mut empty = old.clone();
        empty.push(0);
        assert!(Op::decode(&empty).is_err());
    }

    #[test]
    fn sorted_set_writes_round_trip_and_refuse_nan() {
        let b = |s: &str| Bytes::copy_from_slice(s.as_bytes());
        let ops = [
            ZSetOp::Add {
                key: b("z"),
                flags: ZAddFlags {
                    xx: true,
                    gt: true,
                    ch: true,
                    incr: true,
                    ..ZAddFlags::default()
                },
                items: vec![(Score(-0.0), b("a")), (Score(f64::INFINITY), b(""))],
            },
            ZSetOp::Rem {
                key: b("z"),
                members: vec![b("a"), b("b")],
            },
            ZSetOp::RemRange {
                key: b("z"),
                range: ZRange::Rank(-3, i64::MAX),
            },
            ZSetOp::RemRange {
                key: b("z"),
                range: ZRange::Score(ScoreRange {
                    min: Score(f64::NEG_INFINITY),
                    max: Score(2.5),
                    min_ex: false,
                    max_ex: true,
                }),
            },
            ZSetOp::RemRange {
                key: b("z"),
                range: ZRange::Lex(LexRange {
                    min: LexBound::Excl(b("a")),
                    max: LexBound::Max,
                }),
            },
            ZSetOp::Pop {
                key: b("z"),
                max: true,
                count: Some(3),
            },
            ZSetOp::Pop {
                key: b("z"),
                max: false,
                count: None,
            },
            ZSetOp::RangeStore {
                dst: b("d"),
                src: b("z"),
                range: ZRange::Rank(0, -1),
                rev: true,
                limit: Some((1, -1)),
            },
            ZSetOp::GeoStore {
                form: geo::Form::ByMember { ro: false },
                args: vec![
                    b("GEORADIUSBYMEMBER"),
                    b("g"),
                    b("m"),
                    b("1"),
                    b("km"),
                    b("STORE"),
                    b("d"),
                ],
            },
            ZSetOp::GeoStore {
                form: geo::Form::SearchStore,
                args: vec![b("geosearchstore"), b("d"), b("g")],
            },
            ZSetOp::Store {
                dst: b("d"),
                op: Combine::Inter,
                keys: vec![b("z"), b("y")],
                weights: vec![Score(2.0), Score(-0.5)],
                aggregate: Aggregate::Max,
                late: Some(LateError::WeightNotFloat),
            },
        ];
        for op in ops {
            let op = Op::new(1, 2, OpKind::ZSet(op));
            let bytes = op.encode();
            assert_eq!(Op::decode(&bytes).unwrap(), op);
            for cut in 0..bytes.len() {
                assert!(Op::decode(&bytes[..cut]).is_err());
            }
        }
        let nan = Op::new(
            0,
            0,
            OpKind::ZSet(ZSetOp::Add {
                key: b("z"),
                flags: ZAddFlags::default(),
                items: vec![(Score(1.0), b("a"))],
            }),
        )
        .encode();
        let mut bad = nan.clone();
        let at = bad.len() - 10;
        bad[at..at + 8].copy_from_slice(&f64::NAN.to_le_bytes());
        assert!(Op::decode(&bad).is_err());
        assert!(Op::decode(&nan).is_ok());
    }

    #[test]
    fn bad_bytes_are_errors_not_panics() {
        let good = Op::new(
            0,
            1,
            OpKind::Del {
                keys: vec![Bytes::from_static(b"a")],
            },
        )
        .encode();
        for cut in 0..good.len() {
            assert!(Op::decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = good.clone();
        extra.push(0);
        assert!(Op::decode(&extra).is_err());
        let mut version = good.clone();
        version[0] = 2;
        assert!(matches!(
            Op::decode(&version),
            Err(Error::BadOp("unsupported format version"))
        ));
        // A count claiming more items than bytes.
        let mut huge = good[..10].to_vec();
        huge.push(11);
        huge.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(Op::decode(&huge).is_err());
        // A varint past 64 bits.
        let mut long = good[..10].to_vec();
        long.push(13);
        long.extend_from_slice(&[0xff; 10]);
        long.push(0x01);
        assert!(Op::decode(&long).is_err());
    }

    #[test]
    fn stream_ops_round_trip_and_refuse_damage() {
        use crate::op::{
            AddId, BadStreamId, GroupStart, NodeLimits, ReadFrom, StreamId, StreamOp, Trim, TrimBy,
        };
        let b = |s: &str| Bytes::copy_from_slice(s.as_bytes());
        let id = StreamId::new(7, u64::MAX);
        let trim = Trim {
            by: TrimBy::MinId(id),
            approx: true,
            limit: 30,
        };
        let ops = vec![
            StreamOp::Add {
                key: b("s"),
                nomkstream: true,
                id: AddId::Ms(5),
                fields: vec![b("f"), b("")],
                trim: Some(trim),
                node: NodeLimits::default(),
            },
            StreamOp::Add {
                key: b("s"),
                nomkstream: false,
                id: AddId::Exact(id),
                fields: vec![b("f"), b("v")],
                trim: Some(Trim {
                    by: TrimBy::MaxLen(0),
                    approx: false,
                    limit: 0,
                }),
                node: NodeLimits {
                    max_bytes: 0,
                    max_entries: 1,
                },
            },
            StreamOp::Trim {
                key: b("s"),
                trim,
                node: NodeLimits::default(),
            },
            StreamOp::Del {
                key: b("s"),
                ids: vec![id, StreamId::MIN],
                bad: true,
            },
            StreamOp::SetId {
                key: b("s"),
                last: id,
                entries_added: Some(3),
                max_deleted: None,
            },
            StreamOp::Read {
                streams: vec![(b("a"), ReadFrom::Last), (b("b"), ReadFrom::After(id))],
                count: 9,
                bad: Some((1, BadStreamId::Greater)),
            },
            StreamOp::ReadGroup {
                group: b("g"),
                consumer: b("c"),
                streams: vec![(b("a"), None), (b("b"), Some(id))],
                count: 0,
                noack: true,
                served: true,
                bad: Some((0, BadStreamId::Dollar)),
            },
            StreamOp::GroupCreate {
                key: b("s"),
                group: b("g"),
                start: GroupStart::Bad,
                mkstream: true,
                entries_read: -1,
            },
            StreamOp::GroupSetId {
                key: b("s"),
                group: b("g"),
                start: GroupStart::Id(id),
                entries_read: 4,
            },
            StreamOp::GroupDestroy {
                key: b("s"),
                group: b("g"),
            },
            StreamOp::CreateConsumer {
                key: b("s"),
                group: b("g"),
                consumer: b("c"),
            },
            StreamOp::DelConsumer {
                key: b("s"),
                group: b("g"),
                consumer: b("c"),
            },
            StreamOp::Ack {
                key: b("s"),
                group: b("g"),
                ids: vec![id],
                bad: false,
            },
            StreamOp::Claim {
                key: b("s"),
                group: b("g"),
                consumer: b("c"),
                args: vec![b("0"), b("1-1"), b("FORCE")],
            },
            StreamOp::AutoClaim {
                key: b("s"),
                group: b("g"),
                consumer: b("c"),
                min_idle: 10,
                start: id,
                count: 100,
                justid: true,
            },
        ];
        for op in ops {
            let op = Op::new(3, 77, OpKind::Stream(op));
            let bytes = op.encode();
            assert_eq!(Op::decode(&bytes).unwrap(), op);
            for cut in 0..bytes.len() {
                assert!(Op::decode(&bytes[..cut]).is_err(), "{cut}");
            }
        }
        // Fields that are not pairs are refused.
        let odd = Op::new(
            0,
            0,
            OpKind::Stream(StreamOp::Add {
                key: b("s"),
                nomkstream: false,
                id: AddId::Auto,
                fields: vec![b("f")],
                trim: None,
                node: NodeLimits::default(),
            }),
        );
        assert!(Op::decode(&odd.encode()).is_err());
    }
}
