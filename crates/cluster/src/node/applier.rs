//! Applies the log: every partition in offset order, a batch of records per merger
//! transaction, each partition's state stored by the transaction that applies its records.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{error, info, warn};

use super::{Inner, StateMachine, WriteError};
use crate::kafka::{PartitionConsumer, Record};
use crate::record::{self, DecodeError, PartitionState};

/// Records applied by one transaction at most.
const BATCH: usize = 1024;
/// How often the partitions' ends are asked for (lag, readiness).
const WATERMARKS_EVERY: Duration = Duration::from_millis(100);

/// A write of this node's, by sequence number: its output and its record's offset, or why it
/// was not applied.
type Outcome<O> = (u64, Result<(O, u64), WriteError>);

/// What applying a batch found, besides the new states.
struct Applied<O> {
    states: Vec<PartitionState>,
    /// This node's writes: their sequence numbers and outcomes (with the record's offset).
    outcomes: Vec<Outcome<O>>,
    /// Partitions whose master this node was, until a claim by another in this batch.
    deposed: Vec<u32>,
    /// A record no replica of this version may apply: the applier stops before it.
    halt: Option<(u32, u64, DecodeError)>,
}

pub(super) fn run<M: StateMachine>(
    inner: Arc<Inner<M>>,
    consumer: PartitionConsumer,
    mut states: Vec<PartitionState>,
) {
    let mut watermarks_at = Instant::now() - WATERMARKS_EVERY;
    while !inner.stop.load(Ordering::Acquire) {
        let mut batch: Vec<Record> = Vec::new();
        match consumer.poll(Duration::from_millis(50)) {
            Ok(Some(r)) => batch.push(r),
            Ok(None) => {}
            Err(e) => {
                warn!(error = %e, "reading the log");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        while !batch.is_empty() && batch.len() < BATCH {
            match consumer.poll(Duration::ZERO) {
                Ok(Some(r)) => batch.push(r),
                _ => break,
            }
        }
        if !batch.is_empty() {
            let swaps = batch
                .iter()
                .filter_map(|r| match record::decode(&r.payload) {
                    Ok(record::Record::Write { payload, .. }) => Some(payload),
                    _ => None,
                });
            if !super::stores::wait_for_versions(&inner, swaps) {
                return;
            }
            match apply(&inner, &states, batch) {
                Ok(a) => {
                    states = a.states;
                    publish(&inner, &states, a.outcomes, &a.deposed);
                    if let Some((p, offset, e)) = a.halt {
                        stopped(
                            &inner,
                            format!("partition {p} offset {offset}: {e}; upgrade this node"),
                        );
                        return;
                    }
                }
                Err(e) => {
                    stopped(&inner, format!("applying the log failed: {e}"));
                    return;
                }
            }
        }
        if watermarks_at.elapsed() >= WATERMARKS_EVERY {
            watermarks_at = Instant::now();
            refresh_watermarks(&inner, &consumer, &states);
            inner.give_up_stale();
        }
    }
}

fn stopped<M: StateMachine>(inner: &Inner<M>, why: String) {
    error!("{why}; this node no longer applies the log");
    inner.view.write().failed = Some(why.clone());
    for c in &inner.claimed {
        c.store(u64::MAX, Ordering::Release);
    }
    for (_, w) in inner.pending.lock().drain() {
        if let Some(reply) = w.reply {
            let _ = reply.send(Err(WriteError::Stopped(why.clone())));
        }
    }
}

fn apply<M: StateMachine>(
    inner: &Arc<Inner<M>>,
    states: &[PartitionState],
    batch: Vec<Record>,
) -> Result<Applied<M::Output>, rialto_engine::Error> {
    let me = inner.incarnation;
    let states = states.to_vec();
    let i = Arc::clone(inner);
    let now = inner.keyspace.now_ms();
    let handle = inner.keyspace.transaction(None, now, move |t| {
        let mut a = Applied {
            states,
            outcomes: Vec::new(),
            deposed: Vec::new(),
            halt: None,
        };
        // Without a watch the transaction always runs.
        let Some(t) = t else { return a };
        let mut touched = vec![false; a.states.len()];
        for rec in &batch {
            let p = rec.partition as usize;
            let Some(st) = a.states.get_mut(p) else {
                continue;
            };
            if rec.offset < st.next {
                // Delivered again after a reconnect: applied already.
                continue;
            }
            match record::decode(&rec.payload) {
                Ok(record::Record::Claim(m)) => {
                    let was_me = st.master.as_ref().is_some_and(|x| x.incarnation == me);
                    if was_me && m.incarnation != me {
                        a.deposed.push(rec.partition);
                    }
                    st.epoch = rec.offset;
                    st.last_seq = 0;
                    st.master = Some(m);
                }
                Ok(record::Record::Write {
                    epoch,
                    incarnation,
                    seq,
                    payload,
                }) => {
                    let in_force = epoch == st.epoch
                        && st
                            .master
                            .as_ref()
                            .is_some_and(|m| m.incarnation == incarnation)
                        && seq > st.last_seq;
                    if in_force {
                        let out = i.machine.apply(t, payload, incarnation == me);
                        st.last_seq = seq;
                        if incarnation == me {
                            a.outcomes.push((seq, Ok((out, rec.offset))));
                        }
                    } else if incarnation == me {
                        a.outcomes.push((seq, Err(WriteError::Fenced)));
                    }
                }
                Err(e @ DecodeError::Version(_)) => {
                    a.halt = Some((rec.partition, rec.offset, e));
                    break;
                }
                Err(e) => {
                    // Every replica reads the same bytes and skips them alike.
                    warn!(partition = p, offset = rec.offset, error = %e, "skipping a record");
                }
            }
            st.next = rec.offset + 1;
            touched[p] = true;
        }
        for (p, st) in a.states.iter().enumerate() {
            if touched[p] {
                t.set_log_state(p as u32, &st.encode());
            }
        }
        a
    });
    // With inline execution the merger runs groups on the threads that ask it to.
    inner.keyspace.run_queued();
    let applied = handle.wait();
    // Store changes applied by the batch reach reads now, before any writer hears of a
    // write applied after them.
    inner.keyspace.publish_catalog();
    applied
}

/// Hands the outcomes to their writers and the new positions to the view.
fn publish<M: StateMachine>(
    inner: &Inner<M>,
    states: &[PartitionState],
    outcomes: Vec<Outcome<M::Output>>,
    deposed: &[u32],
) {
    {
        let mut pending = inner.pending.lock();
        for (seq, out) in outcomes {
            if let Some(w) = pending.remove(&seq) {
                if out.is_ok() {
                    inner.settled(w.partition, seq);
                }
                if let Some(reply) = w.reply {
                    let _ = reply.send(out);
                }
            }
        }
    }
    let me = inner.incarnation;
    for (p, st) in states.iter().enumerate() {
        // A claim in force that is not ours, later than the epoch we write under, ends our
        // mastership: nothing we send under the old epoch can be applied any more.
        let claimed = &inner.claimed[p];
        let mine = st.master.as_ref().is_some_and(|m| m.incarnation == me);
        let c = claimed.load(Ordering::Acquire);
        if !mine && c != u64::MAX && st.epoch != u64::MAX && st.epoch > c {
            let _ = claimed.compare_exchange(c, u64::MAX, Ordering::AcqRel, Ordering::Acquire);
        }
    }
    for &p in deposed {
        info!(
            partition = p,
            "another node's claim is in force: no longer master"
        );
        inner.fail_pending(p);
    }
    let mut v = inner.view.write();
    for (p, st) in states.iter().enumerate() {
        v.masters[p] = st.master.clone();
        v.applied[p] = st.next;
    }
}

fn refresh_watermarks<M: StateMachine>(
    inner: &Inner<M>,
    consumer: &PartitionConsumer,
    states: &[PartitionState],
) {
    let now = Instant::now();
    let mut v = inner.view.write();
    for (p, st) in states.iter().enumerate() {
        // The end the last fetch reported: asking the brokers here would hold the applier.
        let high = consumer
            .cached_high_watermark(&inner.opts.topic, p as u32)
            .unwrap_or(0);
        v.high[p] = high.max(st.next);
        if st.next >= high {
            v.caught_up_at[p] = Some(now);
        }
    }
}
