//! Talking to Kafka through librdkafka (the `rdkafka` crate).
//!
//! - [`Producer`]: idempotent (`enable.idempotence=true`, `acks=all`); [`Producer::send`] puts a
//!   record on one partition and returns a [`Delivery`] that resolves to the record's offset
//!   once the partition's in-sync replicas all have it (`.wait()` blocks, `.await` does not).
//! - [`PartitionConsumer`]: assigned to given partitions from given offsets; it never commits
//!   offsets to Kafka, since the reader stores its own.
//! - [`Admin`]: topic creation.
//!
//! Errors are [`Error`]; a failed delivery is a [`DeliveryError`], which also says whether the
//! record may have been written all the same ([`Written`]).

mod admin;
pub(crate) mod block_on;
mod consumer;
mod error;
mod producer;

use std::time::Duration;

use rdkafka::ClientConfig;

pub use admin::Admin;
pub use consumer::{PartitionConsumer, Record, SplitConsumer, StartOffset};
pub use error::{DeliveryError, Detail, Error, ErrorCode, Written};
pub use producer::{Delivery, Producer, ProducerOptions};

/// Where the cluster is and who is asking; shared by every client.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// `host:port` pairs, comma-separated: any of the brokers, which tell the client the rest.
    pub bootstrap_servers: String,
    /// Shown in the brokers' logs and metrics.
    pub client_id: String,
}

impl ClientOptions {
    pub fn new(bootstrap_servers: impl Into<String>) -> Self {
        ClientOptions {
            bootstrap_servers: bootstrap_servers.into(),
            client_id: "rialto".into(),
        }
    }

    fn to_config(&self) -> Result<ClientConfig, Error> {
        if self.bootstrap_servers.trim().is_empty() {
            return Err(Error::InvalidArgument("bootstrap servers (empty)"));
        }
        if self.client_id.is_empty() {
            return Err(Error::InvalidArgument("client id (empty)"));
        }
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &self.bootstrap_servers)
            .set("client.id", &self.client_id);
        Ok(config)
    }
}

/// A partition index as Kafka's protocol carries it (a non-negative `i32`).
fn partition_index(partition: u32) -> Result<i32, Error> {
    i32::try_from(partition).map_err(|_| Error::InvalidArgument("partition (above i32::MAX)"))
}

/// Milliseconds for a librdkafka setting, which are `i32` and must be at least 1.
fn millis(d: Duration, what: &'static str) -> Result<String, Error> {
    match i32::try_from(d.as_millis()) {
        Ok(ms) if ms >= 1 => Ok(ms.to_string()),
        _ => Err(Error::InvalidArgument(what)),
    }
}
