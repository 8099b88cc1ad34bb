//! `apply`: an [`Op`] applied to the database inside one merger transaction.
//!
//! Determinism: the result depends on the database's state and the op only. Time is the op's
//! `now_ms`; nothing reads a clock or a random source; the in-memory state consulted (the
//! store catalog in execution order, the real-time log counters, the next store id) is a
//! function of the database's contents and the ops applied since it was loaded. An op that
//! fails writes nothing, even if it staged writes first.

mod bitmaps;
mod catalog;
mod hashes;
mod hll;
mod keys;
mod lists;
mod restore;
mod sets;
mod sort_store;
pub(crate) mod streams;
mod strings;
mod zsets;

use rialto_lsm::Db;
use rialto_txn::TxnContext;

use crate::error::Result;
use crate::keys::{Keys, Txn};
use crate::op::{Op, OpKind};
use crate::stores::Stores;
use crate::value::Value;

/// The view data ops work through.
type W<'a, 'b, 'c> = Keys<'a, Txn<'b, 'c, Db>>;

/// Applies `op` in transaction `tx`, whose execution order is the merger's.
pub(crate) fn apply(tx: &mut TxnContext<'_, Db>, stores: &Stores, op: &Op) -> Result<Value> {
    // Where this op's writes begin: the start of the transaction, or the end of the commands
    // before it in an EXEC, whose writes a failure here must keep.
    let start = tx.savepoint();
    let r = match &op.kind {
        OpKind::Store(s) => catalog::apply(tx, stores, op.now_ms, s),
        OpKind::PartitionStore { partition, at, op } => {
            catalog::apply_part(tx, stores, *partition, *at, op)
        }
        OpKind::FlushStep { all, limit } => {
            keys::flush_step(tx, stores, stores.dbs.physical(op.db), *all, *limit)
        }
        OpKind::SwapDb { a, b } => keys::swap_db(tx, stores, op.now_ms, *a, *b),
        OpKind::FlushSlots {
            first,
            last,
            from,
            limit,
        } => keys::flush_slots(tx, stores, (*first, *last), from, *limit),
        OpKind::Library(l) => crate::library::apply(tx, &crate::library::scope(None), l),
        OpKind::PartitionLibrary { partition, op } => {
            crate::library::apply(tx, &crate::library::scope(Some(*partition)), op)
        }
        kind => {
            let catalog = stores.exec_catalog();
            let mut io = Txn(&mut *tx);
            let mut k = Keys {
                io: &mut io,
                db: stores.dbs.physical(op.db),
                now_ms: op.now_ms,
                stores: &catalog,
                rt: Some(&stores.rt),
                watches: Some(&stores.watches),
            };
            match kind {
                OpKind::Copy {
                    src,
                    dst,
                    dst_db,
                    replace,
                } => keys::copy(&mut k, src, dst, stores.dbs.physical(*dst_db), *replace),
                OpKind::Move { key, dst_db } => {
                    keys::move_to(&mut k, key, stores.dbs.physical(*dst_db))
                }
                OpKind::Hash(h) => hashes::apply(&mut k, &stores.encodings, h),
                OpKind::Sets(o) => sets::apply(&mut k, &stores.encodings, o),
                OpKind::ZSet(z) => zsets::apply(&mut k, &stores.encodings, z),
                OpKind::List(l) => lists::apply(&mut k, &stores.encodings, l),
                OpKind::Stream(x) => streams::apply(&mut k, x),
                OpKind::Sort(s) => sort_store::apply(&mut k, &stores.encodings, s),
                OpKind::Restore(r) => restore::apply(&mut k, &stores.encodings, r),
                OpKind::Hll(h) => hll::apply(&mut k, h),
                kind => data(&mut k, kind),
            }
        }
    };
    if r.is_err() {
        tx.rollback_to(start);
    }
    r
}

fn data(k: &mut W<'_, '_, '_>, kind: &OpKind) -> Result<Value> {
    match kind {
        OpKind::Set(s) => strings::set(k, s),
        OpKind::SetNx { key, value } => strings::setnx(k, key, value),
        OpKind::MSet { pairs } => strings::mset(k, pairs),
        OpKind::MSetNx { pairs } => strings::msetnx(k, pairs),
        OpKind::GetDel { key } => strings::getdel(k, key),
        OpKind::GetEx { key, ttl } => strings::getex(k, key, *ttl),
        OpKind::Append { key, value } => strings::append(k, key, value),
        OpKind::SetRange { key, offset, patch } => strings::setrange(k, key, *offset, patch),
        OpKind::IncrBy { key, delta } => strings::incrby(k, key, *delta),
        OpKind::IncrByFloat { key, incr } => strings::incrbyfloat(k, key, incr),
        OpKind::Del { keys } => keys::del(k, keys),
        OpKind::Expire { key, at_ms, cond } => keys::expire(k, key, *at_ms, *cond),
        OpKind::Persist { key } => keys::persist(k, key),
        OpKind::Rename { src, dst, nx } => keys::rename(k, src, dst, *nx),
        OpKind::SetBit { key, offset, on } => bitmaps::setbit(k, key, *offset, *on),
        OpKind::BitOp { op, dst, keys } => bitmaps::bitop(k, *op, dst, keys),
        OpKind::BitField { key, subs } => bitmaps::bitfield(k, key, subs),
        OpKind::ExpireDue { entries } => keys::expire_due(k, entries),
        OpKind::Store(_)
        | OpKind::FlushStep { .. }
        | OpKind::FlushSlots { .. }
        | OpKind::PartitionLibrary { .. }
        | OpKind::PartitionStore { .. }
        | OpKind::Hash(_)
        | OpKind::Sets(_)
        | OpKind::ZSet(_)
        | OpKind::List(_)
        | OpKind::Stream(_)
        | OpKind::Copy { .. }
        | OpKind::Move { .. }
        | OpKind::SwapDb { .. }
        | OpKind::Sort(_)
        | OpKind::Restore(_)
        | OpKind::Hll(_)
        | OpKind::Library(_) => Err(crate::error::Error::BadOp("not a key-level op")),
    }
}
