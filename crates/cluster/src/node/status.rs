//! Every node's progress, shared through Kafka: each node writes its position in every
//! partition to the compacted single-partition topic `<topic>.status`, keyed by its node id,
//! and reads everyone's from it. Any node can then tell how far each replica is (INFO, ROLE,
//! CLUSTER SHARDS) and leave the replicas that lag out of the slot map, as a client asking
//! any node should see them. Nothing here decides anything: a status is a report, and a
//! stale one (its node silent) counts as lagging.
//!
//! ```text
//! status := version: u8 (1) | node: u32 LE | sent_at_ms: i64 LE | n: u32 LE
//!           | (applied: u64 LE | caught_up_at_ms: i64 LE) * n
//! ```
//! `applied` is the offset of the next record the node will apply in that partition;
//! `caught_up_at_ms` the wall-clock time it last had applied all the log held (0: never).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tracing::warn;

use super::{client_options, Inner, StateMachine};
use crate::kafka::{PartitionConsumer, StartOffset};

/// How often a node writes its status.
const EVERY: Duration = Duration::from_millis(500);
const VERSION: u8 = 1;

/// A node's progress as it last reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerStatus {
    pub node: u32,
    /// When it wrote this, wall-clock Unix milliseconds.
    pub sent_at_ms: i64,
    /// Per partition: the offset of the next record it applies.
    pub applied: Vec<u64>,
    /// Per partition: when it last had applied everything, Unix ms (0: never).
    pub caught_up_at_ms: Vec<i64>,
}

impl PeerStatus {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(17 + 16 * self.applied.len());
        v.push(VERSION);
        v.extend_from_slice(&self.node.to_le_bytes());
        v.extend_from_slice(&self.sent_at_ms.to_le_bytes());
        v.extend_from_slice(&(self.applied.len() as u32).to_le_bytes());
        for (a, c) in self.applied.iter().zip(&self.caught_up_at_ms) {
            v.extend_from_slice(&a.to_le_bytes());
            v.extend_from_slice(&c.to_le_bytes());
        }
        v
    }

    /// Decodes strictly; `None` for anything damaged, of another version, or left over.
    pub fn decode(b: &[u8]) -> Option<PeerStatus> {
        let (&version, rest) = b.split_first()?;
        if version != VERSION || rest.len() < 16 {
            return None;
        }
        let node = u32::from_le_bytes(rest[0..4].try_into().ok()?);
        let sent_at_ms = i64::from_le_bytes(rest[4..12].try_into().ok()?);
        let n = u32::from_le_bytes(rest[12..16].try_into().ok()?) as usize;
        let body = &rest[16..];
        if body.len() != n.checked_mul(16)? {
            return None;
        }
        let (mut applied, mut caught) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for c in body.chunks_exact(16) {
            applied.push(u64::from_le_bytes(c[0..8].try_into().ok()?));
            caught.push(i64::from_le_bytes(c[8..16].try_into().ok()?));
        }
        Some(PeerStatus {
            node,
            sent_at_ms,
            applied,
            caught_up_at_ms: caught,
        })
    }

    /// Whether it had caught up with partition `p` within `max_lag` of `now_ms`, by a report
    /// itself no older than `max_lag` plus two reporting periods.
    pub fn caught_up_within(&self, p: u32, max_lag: Duration, now_ms: i64) -> bool {
        let lag = i64::try_from(max_lag.as_millis()).unwrap_or(i64::MAX);
        let fresh = now_ms.saturating_sub(self.sent_at_ms)
            <= lag.saturating_add(2 * EVERY.as_millis() as i64);
        fresh
            && self
                .caught_up_at_ms
                .get(p as usize)
                .is_some_and(|&t| t != 0 && now_ms.saturating_sub(t) <= lag)
    }
}

/// Wall-clock Unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

pub(super) fn run<M: StateMachine>(inner: Arc<Inner<M>>) {
    let topic = inner.opts.status_topic();
    let consumer = match PartitionConsumer::new(
        &client_options(&inner.opts, "/status"),
        &topic,
        &[(0, StartOffset::Earliest)],
    ) {
        Ok(c) => c,
        Err(e) => {
            warn!(error = %e, "cannot read the nodes' status; replicas' lag stays unknown");
            return;
        }
    };
    let mut sent_at = Instant::now() - EVERY;
    while !inner.stop.load(Ordering::Acquire) {
        match consumer.poll(Duration::from_millis(50)) {
            Ok(Some(r)) => {
                if let Some(st) = PeerStatus::decode(&r.payload) {
                    inner.view.write().peers.insert(st.node, st);
                }
            }
            Ok(None) => {}
            Err(e) => {
                warn!(error = %e, "reading the nodes' status");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        if sent_at.elapsed() >= EVERY {
            sent_at = Instant::now();
            let st = own(&inner);
            let key = inner.opts.node_id.to_be_bytes();
            // A lost report is replaced by the next one.
            if let Err(e) = inner.producer.send(&topic, 0, Some(&key), &st.encode()) {
                warn!(error = %e, "writing this node's status");
            }
        }
    }
}

fn own<M: StateMachine>(inner: &Inner<M>) -> PeerStatus {
    let now = now_ms();
    let v = inner.view.read();
    PeerStatus {
        node: inner.opts.node_id,
        sent_at_ms: now,
        applied: v.applied.clone(),
        caught_up_at_ms: v
            .caught_up_at
            .iter()
            .map(|t| t.map_or(0, |t| now - t.elapsed().as_millis() as i64))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_round_trips_and_damage_is_refused() {
        let st = PeerStatus {
            node: 7,
            sent_at_ms: 1_700_000_000_000,
            applied: vec![0, 5, u64::MAX],
            caught_up_at_ms: vec![0, 1_700_000_000_000, -1],
        };
        let b = st.encode();
        assert_eq!(PeerStatus::decode(&b), Some(st));
        for n in 0..b.len() {
            assert_eq!(PeerStatus::decode(&b[..n]), None, "prefix {n}");
        }
        let mut long = b.clone();
        long.push(0);
        assert_eq!(PeerStatus::decode(&long), None);
        let mut other = b;
        other[0] = 2;
        assert_eq!(PeerStatus::decode(&other), None);
    }

    #[test]
    fn a_replica_counts_as_caught_up_only_by_a_recent_report_of_a_recent_catch_up() {
        let now = 1_000_000;
        let st = |sent, caught| PeerStatus {
            node: 1,
            sent_at_ms: sent,
            applied: vec![10],
            caught_up_at_ms: vec![caught],
        };
        let lag = Duration::from_millis(1000);
        assert!(st(now, now - 500).caught_up_within(0, lag, now));
        assert!(!st(now, now - 1500).caught_up_within(0, lag, now), "lags");
        assert!(!st(now, 0).caught_up_within(0, lag, now), "never caught up");
        assert!(
            !st(now - 5000, now - 5000).caught_up_within(0, lag, now),
            "silent"
        );
        assert!(
            !st(now, now).caught_up_within(1, lag, now),
            "no such partition"
        );
    }
}
