//! Mastership through a Kafka consumer group: the group coordinator gives each partition of
//! `<topic>.masters` to one live member, which claims the log partition of the same number.
//!
//! The rule is level-triggered: a node that holds a partition in the group and does not write
//! under a claim of its own claims it (at most once per pause). A node stops writing a
//! partition only when its applier meets a later claim by another. Two nodes may claim around a
//! rebalance; the later claim in the log is in force everywhere, the applier of the other
//! one stops its writing under the earlier claim, and if that node is the one the group now
//! names, it claims once more.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::{ClientConfig, ClientContext};
use tracing::{info, warn};

use super::{client_options, Error, Inner, Member, NodeOptions, StateMachine};
use crate::kafka::{self, Delivery};
use crate::record::{self, Master};

/// The least time between two claims of one partition by one node.
const RECLAIM_AFTER: Duration = Duration::from_secs(2);
/// How often the group's members are listed.
const MEMBERS_EVERY: Duration = Duration::from_millis(1000);

#[derive(Default)]
struct Events {
    assigned: Vec<u32>,
    revoked: Vec<u32>,
}

struct GroupContext {
    events: Mutex<Events>,
}

impl ClientContext for GroupContext {}

impl ConsumerContext for GroupContext {
    fn post_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let mut ev = self.events.lock();
        match rebalance {
            Rebalance::Assign(tpl) => ev.assigned.extend(partitions(tpl)),
            Rebalance::Revoke(tpl) => ev.revoked.extend(partitions(tpl)),
            Rebalance::Error(e) => warn!(error = %e, "mastership group rebalance"),
        }
    }
}

fn partitions(tpl: &rdkafka::TopicPartitionList) -> Vec<u32> {
    tpl.elements()
        .iter()
        .filter_map(|e| u32::try_from(e.partition()).ok())
        .collect()
}

pub(super) struct Group {
    consumer: BaseConsumer<GroupContext>,
    group_id: String,
}

impl Group {
    pub(super) fn new(opts: &NodeOptions) -> Result<Self, Error> {
        let client = client_options(opts, "");
        let group_id = opts.masters_topic();
        let session = opts.node_timeout.as_millis().max(1) as u64;
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &client.bootstrap_servers)
            .set("client.id", &client.client_id)
            .set("group.id", &group_id)
            .set("session.timeout.ms", session.to_string())
            .set("heartbeat.interval.ms", (session / 4).max(100).to_string())
            .set("partition.assignment.strategy", "cooperative-sticky")
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "latest");
        let consumer: BaseConsumer<GroupContext> = config
            .create_with_context(GroupContext {
                events: Mutex::new(Events::default()),
            })
            .map_err(|e| Error::Kafka(kafka::Error::from_kafka(e)))?;
        consumer
            .subscribe(&[&opts.masters_topic()])
            .map_err(|e| Error::Kafka(kafka::Error::from_kafka(e)))?;
        Ok(Group { consumer, group_id })
    }

    pub(super) fn run<M: StateMachine>(self, inner: Arc<Inner<M>>) {
        let me = Master {
            node: inner.opts.node_id,
            incarnation: inner.incarnation,
            host: inner.opts.host.clone(),
            port: 0,
        };
        let mut claims: HashMap<u32, Delivery> = HashMap::new();
        let mut last_claim: HashMap<u32, Instant> = HashMap::new();
        let mut members_at = Instant::now() - MEMBERS_EVERY;
        while !inner.stop.load(Ordering::Acquire) {
            // Messages of the masters topic mean nothing: it exists for its assignment.
            if let Some(Err(e)) = self.consumer.poll(Duration::from_millis(50)) {
                warn!(error = %e, "mastership group");
            }
            let ev = std::mem::take(&mut *self.consumer.context().events.lock());
            // A revocation does not stop this node's writing: its claim stays in force until a
            // later one lands in the log, which the applier sees. Stopping here would only
            // open a gap when the group merely re-forms (its coordinator's broker died) and
            // hands the partition back.
            for p in ev.revoked {
                if let Some(a) = inner.assigned.get(p as usize) {
                    info!(partition = p, "mastership revoked by the group");
                    a.store(false, Ordering::Release);
                }
            }
            for p in ev.assigned {
                if let Some(a) = inner.assigned.get(p as usize) {
                    info!(partition = p, "mastership assigned by the group");
                    a.store(true, Ordering::Release);
                    last_claim.remove(&p);
                }
            }
            // Claims delivered: write under them, while the partition is still ours.
            claims.retain(|&p, d| match d.try_take() {
                None => true,
                Some(Ok(offset)) => {
                    if inner.assigned[p as usize].load(Ordering::Acquire) {
                        info!(partition = p, epoch = offset, "claimed");
                        inner.claimed[p as usize].store(offset, Ordering::Release);
                    }
                    false
                }
                Some(Err(e)) => {
                    warn!(partition = p, error = %e.error, "claim not written");
                    false
                }
            });
            for p in 0..inner.opts.partitions {
                let i = p as usize;
                // Ours in the group, not written under a claim of ours (none yet, or the
                // applier saw a later one by another), none in flight: claim.
                if !inner.assigned[i].load(Ordering::Acquire)
                    || inner.claimed[i].load(Ordering::Acquire) != u64::MAX
                    || claims.contains_key(&p)
                    || last_claim
                        .get(&p)
                        .is_some_and(|t| t.elapsed() < RECLAIM_AFTER)
                {
                    continue;
                }
                let m = Master {
                    port: inner.opts.base_port + p as u16,
                    ..me.clone()
                };
                match inner
                    .producer
                    .send(&inner.opts.topic, p, None, &record::claim(&m))
                {
                    Ok(d) => {
                        claims.insert(p, d);
                        last_claim.insert(p, Instant::now());
                    }
                    Err(e) => warn!(partition = p, error = %e, "claim not sent"),
                }
            }
            if members_at.elapsed() >= MEMBERS_EVERY {
                members_at = Instant::now();
                match self.members() {
                    Ok(m) => inner.view.write().members = m,
                    Err(e) => warn!(error = %e, "listing the cluster's members"),
                }
            }
        }
        // Leaving the group hands the partitions over without waiting for the session to
        // time out.
        self.consumer.unsubscribe();
        let _ = self.consumer.poll(Duration::from_millis(100));
    }

    fn members(&self) -> Result<Vec<Member>, kafka::Error> {
        let list = self
            .consumer
            .fetch_group_list(Some(&self.group_id), Duration::from_secs(3))
            .map_err(kafka::Error::from_kafka)?;
        let mut out: Vec<Member> = list
            .groups()
            .iter()
            .flat_map(|g| g.members())
            .filter_map(|m| parse_client_id(m.client_id()))
            .collect();
        out.sort_by_key(|m| m.node);
        out.dedup_by_key(|m| m.node);
        Ok(out)
    }
}

/// `rialto-node/<id>/<host>/<base port>`, as `client_options` names a node's clients.
fn parse_client_id(id: &str) -> Option<Member> {
    let mut it = id.strip_prefix("rialto-node/")?.split('/');
    let node = it.next()?.parse().ok()?;
    let host = it.next()?.to_owned();
    let base_port = it.next()?.parse().ok()?;
    if it.next().is_some() {
        return None;
    }
    Some(Member {
        node,
        host,
        base_port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_ids_name_members() {
        assert_eq!(
            parse_client_id("rialto-node/3/10.0.0.3/7000"),
            Some(Member {
                node: 3,
                host: "10.0.0.3".into(),
                base_port: 7000
            })
        );
        assert_eq!(parse_client_id("rialto-node/3/h/7000/producer"), None);
        assert_eq!(parse_client_id("other"), None);
    }
}
