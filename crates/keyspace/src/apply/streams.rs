//! Stream commands, as Redis 7.0's `t_stream.c` behaves: the order of checks, the ids made,
//! the group and pending-entry bookkeeping. Time is the op's (`now_ms`): ids from `*`,
//! delivery and seen times, idle times.

use bytes::Bytes;

use super::W;
use crate::collections::stream::{Entry, Pending, Stream, StreamId, Writer};
use crate::error::{Error, NoGroupForm, Result, StreamError};
use crate::keys::RawRead;
use crate::op::{AddId, BadStreamId, GroupStart, ReadFrom, StreamOp, Trim, TrimBy};
use crate::value::Value;

/// An entry as replies carry it: `[id, [field, value, ...]]`.
pub fn entry_value(e: Entry) -> Value {
    Value::Array(vec![
        Value::Bulk(e.id.to_bytes()),
        Value::Array(e.fields.into_iter().map(Value::Bulk).collect()),
    ])
}

fn id_value(id: StreamId) -> Value {
    Value::Bulk(id.to_bytes())
}

fn no_group(key: &Bytes, group: &Bytes, form: NoGroupForm) -> Error {
    StreamError::NoGroup {
        key: key.clone(),
        group: group.clone(),
        form,
    }
    .into()
}

fn bad_id(why: BadStreamId) -> Error {
    match why {
        BadStreamId::Invalid => StreamError::InvalidId,
        BadStreamId::Dollar => StreamError::DollarInReadGroup,
        BadStreamId::Greater => StreamError::GreaterInRead,
    }
    .into()
}

fn trim(w: &mut Writer, k: &mut W<'_, '_, '_>, t: &Trim) -> Result<u64> {
    let (maxlen, minid) = match t.by {
        TrimBy::MaxLen(n) => (Some(n), None),
        TrimBy::MinId(id) => (None, Some(id)),
    };
    w.trim(k, maxlen, minid, t.approx, t.limit)
}

pub(super) fn apply(k: &mut W<'_, '_, '_>, op: &StreamOp) -> Result<Value> {
    let now = k.now_ms;
    match op {
        StreamOp::Add {
            key,
            nomkstream,
            id,
            fields,
            trim: t,
            node,
        } => {
            let mut w = match Writer::open(k, key)? {
                Some(w) => w,
                None if *nomkstream => return Ok(Value::Null),
                None => Writer::create(k, key)?,
            };
            let last = w.meta.last;
            if last == StreamId::MAX {
                return Err(StreamError::Exhausted.into());
            }
            let new = match *id {
                AddId::Auto => {
                    let ms = now.max(0) as u64;
                    if ms > last.ms {
                        StreamId::new(ms, 0)
                    } else {
                        last.next().ok_or(StreamError::Exhausted)?
                    }
                }
                AddId::Ms(ms) if ms == last.ms => StreamId::new(
                    ms,
                    last.seq.checked_add(1).ok_or(StreamError::IdNotGreater)?,
                ),
                AddId::Ms(ms) => StreamId::new(ms, 0),
                AddId::Exact(id) => id,
            };
            if new <= last {
                return Err(StreamError::IdNotGreater.into());
            }
            w.append(k, new, fields, *node)?;
            if let Some(t) = t {
                trim(&mut w, k, t)?;
            }
            w.finish(k, key)?;
            Ok(id_value(new))
        }
        StreamOp::Trim { key, trim: t, .. } => {
            let Some(mut w) = Writer::open(k, key)? else {
                return Ok(Value::Int(0));
            };
            let n = trim(&mut w, k, t)?;
            if n > 0 {
                w.finish(k, key)?;
            }
            Ok(Value::Int(n as i64))
        }
        StreamOp::Del { key, ids, bad } => {
            let Some(mut w) = Writer::open(k, key)? else {
                return Ok(Value::Int(0));
            };
            if *bad {
                return Err(StreamError::InvalidId.into());
            }
            let first = w.meta.first;
            let (mut deleted, mut first_gone) = (0, false);
            for &id in ids {
                if w.delete(k, id)? {
                    first_gone |= id == first;
                    if id > w.meta.max_deleted {
                        w.meta.max_deleted = id;
                    }
                    deleted += 1;
                }
            }
            if deleted > 0 {
                if w.meta.length == 0 {
                    w.meta.first = StreamId::MIN;
                } else if first_gone {
                    w.refresh_first(k)?;
                }
                w.finish(k, key)?;
            }
            Ok(Value::Int(deleted))
        }
        StreamOp::SetId {
            key,
            last,
            entries_added,
            max_deleted,
        } => {
            let mut w = Writer::open(k, key)?.ok_or(Error::NoSuchKey)?;
            if w.meta.length > 0 {
                if let Some(top) = w.last_valid(k)? {
                    if *last < top {
                        return Err(StreamError::SetIdBelowTop.into());
                    }
                }
                if entries_added.is_some_and(|n| w.meta.length > n) {
                    return Err(StreamError::EntriesAddedBelowLength.into());
                }
            }
            w.meta.last = *last;
            if let Some(n) = entries_added {
                w.meta.entries_added = *n;
            }
            if let Some(m) = max_deleted.filter(|m| !m.is_zero()) {
                w.meta.max_deleted = m;
            }
            w.finish(k, key)?;
            Ok(Value::Ok)
        }
        StreamOp::Read {
            streams,
            count,
            bad,
        } => read(k, streams, *count, *bad),
        StreamOp::ReadGroup {
            group,
            consumer,
            streams,
            count,
            noack,
            served,
            bad,
        } => read_group(k, group, consumer, streams, *count, *noack, *served, *bad),
        StreamOp::GroupCreate {
            key,
            group,
            start,
            mkstream,
            entries_read,
        } => {
            let existing = Writer::open(k, key)?;
            if existing.is_none() && !mkstream {
                return Err(StreamError::GroupNeedsKey.into());
            }
            let id = match start {
                GroupStart::Last => existing.as_ref().map_or(StreamId::MIN, |w| w.meta.last),
                GroupStart::Id(id) => *id,
                GroupStart::Bad => return Err(StreamError::InvalidId.into()),
            };
            let mut w = match existing {
                Some(w) => w,
                None => Writer::create(k, key)?,
            };
            if !w.add_group(group, id, *entries_read) {
                return Err(StreamError::GroupExists.into());
            }
            w.finish(k, key)?;
            Ok(Value::Ok)
        }
        StreamOp::GroupSetId {
            key,
            group,
            start,
            entries_read,
        } => {
            let mut w = Writer::open(k, key)?.ok_or(StreamError::GroupNeedsKey)?;
            let last = w.meta.last;
            let g = w
                .meta
                .group_mut(group)
                .ok_or_else(|| no_group(key, group, NoGroupForm::ForKey))?;
            g.last = match start {
                GroupStart::Last => last,
                GroupStart::Id(id) => *id,
                GroupStart::Bad => return Err(StreamError::InvalidId.into()),
            };
            g.entries_read = *entries_read;
            w.finish(k, key)?;
            Ok(Value::Ok)
        }
        StreamOp::GroupDestroy { key, group } => {
            let mut w = Writer::open(k, key)?.ok_or(StreamError::GroupNeedsKey)?;
            if !w.destroy_group(k, group)? {
                return Ok(Value::Int(0));
            }
            w.finish(k, key)?;
            Ok(Value::Int(1))
        }
        StreamOp::CreateConsumer {
            key,
            group,
            consumer,
        } => {
            let mut w = Writer::open(k, key)?.ok_or(StreamError::GroupNeedsKey)?;
            let (_, created) = w
                .consumer(group, consumer, now, false)
                .ok_or_else(|| no_group(key, group, NoGroupForm::ForKey))?;
            if created {
                w.finish(k, key)?;
            }
            Ok(Value::Int(i64::from(created)))
        }
        StreamOp::DelConsumer {
            key,
            group,
            consumer,
        } => {
            let mut w = Writer::open(k, key)?.ok_or(StreamError::GroupNeedsKey)?;
            let g = w
                .meta
                .group(group)
                .ok_or_else(|| no_group(key, group, NoGroupForm::ForKey))?;
            if g.consumer(consumer).is_none() {
                return Ok(Value::Int(0));
            }
            let pending = w.delete_consumer(k, group, consumer)?;
            w.finish(k, key)?;
            Ok(Value::Int(pending as i64))
        }
        StreamOp::Ack {
            key,
            group,
            ids,
            bad,
        } => {
            let Some(mut w) = Writer::open(k, key)? else {
                return Ok(Value::Int(0));
            };
            let Some(gid) = w.meta.group(group).map(|g| g.gid) else {
                return Ok(Value::Int(0));
            };
            if *bad {
                return Err(StreamError::InvalidId.into());
            }
            let mut acked = 0;
            for &id in ids {
                if let Some(p) = w.pending_entry(k, gid, id)? {
                    w.remove_pending(k, group, p)?;
                    acked += 1;
                }
            }
            if acked > 0 {
                w.finish(k, key)?;
            }
            Ok(Value::Int(acked))
        }
        StreamOp::Claim {
            key,
            group,
            consumer,
            args,
        } => claim(k, key, group, consumer, args),
        StreamOp::AutoClaim {
            key,
            group,
            consumer,
            min_idle,
            start,
            count,
            justid,
        } => auto_claim(k, key, group, consumer, *min_idle, *start, *count, *justid),
    }
}

/// XREAD: every key's type first, then the entries after each id.
fn read(
    k: &mut W<'_, '_, '_>,
    streams: &[(Bytes, ReadFrom)],
    count: u64,
    bad: Option<(u64, BadStreamId)>,
) -> Result<Value> {
    let mut loaded = Vec::with_capacity(streams.len());
    for (i, (key, _)) in streams.iter().enumerate() {
        loaded.push(Stream::load(k, key)?);
        if let Some((_, why)) = bad.filter(|b| b.0 == i as u64) {
            return Err(bad_id(why));
        }
    }
    let mut out = Vec::new();
    for ((key, from), s) in streams.iter().zip(loaded) {
        let Some(s) = s else { continue };
        let after = match from {
            ReadFrom::After(id) => *id,
            ReadFrom::Last => s.meta.last,
        };
        if s.is_empty() || s.last_valid(k)?.is_none_or(|top| top <= after) {
            continue;
        }
        let Some(start) = after.next() else { continue };
        let entries = s.range(k, start, StreamId::MAX, count, false)?;
        out.push((
            Value::Bulk(key.clone()),
            Value::Array(entries.into_iter().map(entry_value).collect()),
        ));
    }
    Ok(if out.is_empty() {
        Value::NullArray
    } else {
        Value::Map(out)
    })
}

#[allow(clippy::too_many_arguments)]
fn read_group(
    k: &mut W<'_, '_, '_>,
    group: &Bytes,
    consumer: &Bytes,
    streams: &[(Bytes, Option<StreamId>)],
    count: u64,
    noack: bool,
    served: bool,
    bad: Option<(u64, BadStreamId)>,
) -> Result<Value> {
    // Checks first, in Redis's order: each key's type, its group, its id.
    for (i, (key, _)) in streams.iter().enumerate() {
        let s = match Stream::load(k, key) {
            Err(Error::WrongType) if served => return Err(StreamError::KeyGone.into()),
            r => r?,
        };
        match s {
            None if served => return Err(StreamError::KeyGone.into()),
            Some(s) if served && s.meta.group(group).is_none() => {
                return Err(StreamError::GroupGone.into())
            }
            Some(s) if s.meta.group(group).is_some() => {}
            _ => return Err(no_group(key, group, NoGroupForm::ReadGroup)),
        }
        if let Some((_, why)) = bad.filter(|b| b.0 == i as u64) {
            return Err(bad_id(why));
        }
    }
    let now = k.now_ms;
    let mut out = Vec::new();
    for (key, from) in streams {
        let mut w = Writer::open(k, key)?.ok_or(StreamError::KeyGone)?;
        let g = w.meta.group(group).ok_or(StreamError::GroupGone)?;
        let (gid, glast) = (g.gid, g.last);
        let serve = match from {
            Some(_) => true,
            None if served => w.meta.last > glast,
            None => w.meta.length > 0 && w.last_valid(k)?.is_some_and(|top| top > glast),
        };
        if !serve {
            continue;
        }
        let (cid, _) = w
            .consumer(group, consumer, now, true)
            .ok_or(StreamError::GroupGone)?;
        let mut entries = Vec::new();
        match from {
            Some(after) => {
                let Some(start) = after.next() else {
                    out.push((Value::Bulk(key.clone()), Value::Array(Vec::new())));
                    continue;
                };
                for p in w.pending_from(k, gid, Some(cid), start, count)? {
                    match w.entry(k, p.id)? {
                        None => entries.push(Value::Array(vec![id_value(p.id), Value::NullArray])),
                        Some(e) => {
                            let again = Pending {
                                delivered_ms: now,
                                deliveries: p.deliveries.saturating_add(1),
                                ..p
                            };
                            w.put_pending(k, group, Some(p), again)?;
                            entries.push(entry_value(e));
                        }
                    }
                }
            }
            None => {
                let start = glast.next().unwrap_or(StreamId::MAX);
                for e in w.range(k, start, StreamId::MAX, count)? {
                    let id = e.id;
                    let (tombstones, estimate) =
                        (w.meta.tombstones_after(id), w.meta.entries_before(id));
                    let added = w.meta.entries_added;
                    let g = w.meta.group_mut(group).ok_or(StreamError::GroupGone)?;
                    if id > g.last {
                        if g.entries_read != -1 && !tombstones {
                            g.entries_read += 1;
                        } else if added > 0 {
                            g.entries_read = estimate;
                        }
                        g.last = id;
                    }
                    if !noack {
                        let old = w.pending_entry(k, gid, id)?;
                        let p = Pending {
                            id,
                            delivered_ms: now,
                            deliveries: 1,
                            cid,
                        };
                        w.put_pending(k, group, old, p)?;
                    }
                    entries.push(entry_value(e));
                }
            }
        }
        w.finish(k, key)?;
        out.push((Value::Bulk(key.clone()), Value::Array(entries)));
    }
    Ok(if out.is_empty() {
        Value::NullArray
    } else {
        Value::Map(out)
    })
}

/// An XCLAIM integer argument, `what` naming it in the error.
fn claim_int(arg: &[u8], what: &'static str) -> Result<i64> {
    rialto_resp::parse_redis_int(arg).ok_or_else(|| StreamError::ClaimInteger(what).into())
}

fn claim(
    k: &mut W<'_, '_, '_>,
    key: &Bytes,
    group: &Bytes,
    consumer: &Bytes,
    args: &[Bytes],
) -> Result<Value> {
    let now = k.now_ms;
    let missing = || no_group(key, group, NoGroupForm::KeyOrGroup);
    let mut w = Writer::open(k, key)?.ok_or_else(missing)?;
    let gid = w.meta.group(group).ok_or_else(missing)?.gid;
    let min_idle = claim_int(args.first().map_or(&b""[..], |a| &a[..]), "min-idle-time")?.max(0);
    let mut ids = Vec::new();
    let mut j = 1;
    while let Some(a) = args.get(j) {
        match StreamId::parse(a, 0, true, false) {
            Some((id, _)) => ids.push(id),
            None => break,
        }
        j += 1;
    }
    let (mut force, mut justid) = (false, false);
    let mut delivery: Option<i64> = None;
    let mut retry: Option<i64> = None;
    let mut last_id = StreamId::MIN;
    while let Some(opt) = args.get(j) {
        let more = j + 1 < args.len();
        let is = |name: &str| opt.eq_ignore_ascii_case(name.as_bytes());
        if is("FORCE") {
            force = true;
        } else if is("JUSTID") {
            justid = true;
        } else if is("IDLE") && more {
            j += 1;
            delivery = Some(now.wrapping_sub(claim_int(&args[j], "IDLE option")?));
        } else if is("TIME") && more {
            j += 1;
            delivery = Some(claim_int(&args[j], "TIME option")?);
        } else if is("RETRYCOUNT") && more {
            j += 1;
            retry = Some(claim_int(&args[j], "RETRYCOUNT option")?);
        } else if is("LASTID") && more {
            j += 1;
            last_id = StreamId::parse(&args[j], 0, true, false)
                .ok_or(StreamError::InvalidId)?
                .0;
        } else {
            return Err(StreamError::ClaimOption(opt.clone()).into());
        }
        j += 1;
    }
    {
        let g = w.meta.group_mut(group).ok_or_else(missing)?;
        if last_id > g.last {
            g.last = last_id;
        }
    }
    let delivery = match delivery {
        Some(t) if t < 0 || t > now => now,
        Some(t) => t,
        None => now,
    };
    let mut out = Vec::new();
    let mut cid = None;
    for id in ids {
        let old = w.pending_entry(k, gid, id)?;
        let Some(e) = w.entry(k, id)? else {
            if let Some(p) = old {
                w.remove_pending(k, group, p)?;
            }
            continue;
        };
        // FORCE makes a pending entry for nobody yet, delivered now once.
        let (base, owned) = match old {
            Some(p) => (p, true),
            None if force => (
                Pending {
                    id,
                    delivered_ms: now,
                    deliveries: 1,
                    cid: 0,
                },
                false,
            ),
            None => continue,
        };
        if owned && min_idle > 0 && now.wrapping_sub(base.delivered_ms) < min_idle {
            continue;
        }
        let c = match cid {
            Some(c) => c,
            None => {
                let (c, _) = w.consumer(group, consumer, now, true).ok_or_else(missing)?;
                cid = Some(c);
                c
            }
        };
        let deliveries = match retry {
            Some(n) if n >= 0 => n as u64,
            _ if !justid => base.deliveries.saturating_add(1),
            _ => base.deliveries,
        };
        let p = Pending {
            id,
            delivered_ms: delivery,
            deliveries,
            cid: c,
        };
        w.put_pending(k, group, old, p)?;
        out.push(if justid { id_value(id) } else { entry_value(e) });
    }
    w.finish(k, key)?;
    Ok(Value::Array(out))
}

#[allow(clippy::too_many_arguments)]
fn auto_claim(
    k: &mut W<'_, '_, '_>,
    key: &Bytes,
    group: &Bytes,
    consumer: &Bytes,
    min_idle: u64,
    start: StreamId,
    count: u64,
    justid: bool,
) -> Result<Value> {
    let now = k.now_ms;
    let missing = || no_group(key, group, NoGroupForm::KeyOrGroup);
    let mut w = Writer::open(k, key)?.ok_or_else(missing)?;
    let gid = w.meta.group(group).ok_or_else(missing)?.gid;
    let mut attempts = count.saturating_mul(10);
    let mut left = count;
    let (mut claimed, mut deleted) = (Vec::new(), Vec::new());
    let mut from = start;
    let mut cid = None;
    let mut end = StreamId::MIN;
    'scan: loop {
        let page = w.pending_from(k, gid, None, from, crate::collections::SCAN_CHUNK as u64)?;
        let full = page.len() == crate::collections::SCAN_CHUNK;
        for p in &page {
            if attempts == 0 || left == 0 {
                end = p.id;
                break 'scan;
            }
            attempts -= 1;
            let Some(e) = w.entry(k, p.id)? else {
                w.remove_pending(k, group, *p)?;
                deleted.push(id_value(p.id));
                left -= 1;
                continue;
            };
            if min_idle > 0 && (now.wrapping_sub(p.delivered_ms)) < min_idle as i64 {
                continue;
            }
            let c = match cid {
                Some(c) => c,
                None => {
                    let (c, _) = w.consumer(group, consumer, now, true).ok_or_else(missing)?;
                    cid = Some(c);
                    c
                }
            };
            let again = Pending {
                delivered_ms: now,
                deliveries: if justid {
                    p.deliveries
                } else {
                    p.deliveries.saturating_add(1)
                },
                cid: c,
                ..*p
            };
            w.put_pending(k, group, Some(*p), again)?;
            claimed.push(if justid {
                id_value(p.id)
            } else {
                entry_value(e)
            });
            left -= 1;
        }
        match page.last() {
            Some(p) if full => match p.id.next() {
                Some(n) => from = n,
                None => break,
            },
            _ => break,
        }
    }
    w.finish(k, key)?;
    Ok(Value::Array(vec![
        id_value(end),
        Value::Array(claimed),
        Value::Array(deleted),
    ]))
}

/// The form of `op` a waiter keeps: XREAD's `$` becomes the stream's last id now (0-0 when
/// there is none), and a count left at 0 is 1000, as Redis bounds what a woken reader gets.
pub(crate) fn waiting_form<T: RawRead + ?Sized>(
    k: &mut crate::keys::Keys<'_, T>,
    op: &StreamOp,
) -> Result<StreamOp> {
    Ok(match op {
        StreamOp::Read { streams, count, .. } => {
            let mut resolved = Vec::with_capacity(streams.len());
            for (key, from) in streams {
                let id = match from {
                    ReadFrom::After(id) => *id,
                    ReadFrom::Last => match Stream::load(k, key) {
                        Ok(Some(s)) => s.meta.last,
                        _ => StreamId::MIN,
                    },
                };
                resolved.push((key.clone(), ReadFrom::After(id)));
            }
            StreamOp::Read {
                streams: resolved,
                count: if *count == 0 { 1000 } else { *count },
                bad: None,
            }
        }
        StreamOp::ReadGroup {
            group,
            consumer,
            streams,
            count,
            noack,
            ..
        } => StreamOp::ReadGroup {
            group: group.clone(),
            consumer: consumer.clone(),
            streams: streams.clone(),
            count: if *count == 0 { 1000 } else { *count },
            noack: *noack,
            served: true,
            bad: None,
        },
        other => other.clone(),
    })
}
