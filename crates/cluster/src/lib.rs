//! Rialto's cluster mode: the replicated log on Apache Kafka.
//!
//! - [`slot`]: Redis Cluster's hash slots and the slot range of each log partition.
//! - [`record`]: the bytes of the log's records and of a replica's stored position.
//! - [`node`]: a node of the cluster: it applies every partition in offset order, competes for
//!   mastership through a Kafka consumer group, and produces its writes under the epoch of
//!   its claim.
//! - [`catalog`]: the cluster's store catalog, a deterministic state over the records of its
//!   own topic, which every partition's master makes its partition follow.
//! - [`versions`]: the topic a pushed version's records travel in, to every node.
//! - [`kafka`]: a thin wrapper over the `rdkafka` crate with what the log needs.

pub mod catalog;
pub mod kafka;
pub mod node;
pub mod record;
pub mod slot;
pub mod versions;

pub use node::{
    key_hash, Member, Node, NodeOptions, StateMachine, Submitted, Touches, Unsent, View, WriteError,
};
pub use record::Master;
