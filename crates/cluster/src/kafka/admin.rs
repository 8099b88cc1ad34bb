use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;

use super::block_on::block_on;
use super::{ClientOptions, Error};

/// Cluster administration: what setting up Rialto's log needs.
pub struct Admin {
    inner: AdminClient<DefaultClientContext>,
}

impl Admin {
    pub fn new(client: &ClientOptions) -> Result<Self, Error> {
        let inner = client.to_config()?.create().map_err(Error::from_kafka)?;
        Ok(Admin { inner })
    }

    /// Creates `topic` with `partitions` partitions of `replication_factor` replicas each,
    /// waiting at most `timeout` for the controller to confirm. [`Error::TopicAlreadyExists`]
    /// if it exists (with whatever layout it has).
    pub fn create_topic(
        &self,
        topic: &str,
        partitions: u32,
        replication_factor: u32,
        timeout: Duration,
    ) -> Result<(), Error> {
        self.create_topic_with(topic, partitions, replication_factor, &[], timeout)
    }

    /// [`Admin::create_topic`] with topic configurations (`cleanup.policy`...).
    pub fn create_topic_with(
        &self,
        topic: &str,
        partitions: u32,
        replication_factor: u32,
        configs: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<(), Error> {
        let partitions = i32::try_from(partitions)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or(Error::InvalidArgument("partition count (1 to i32::MAX)"))?;
        let replication = i32::try_from(replication_factor)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or(Error::InvalidArgument("replication factor (1 to i32::MAX)"))?;
        let new_topic = configs.iter().fold(
            NewTopic::new(topic, partitions, TopicReplication::Fixed(replication)),
            |t, (k, v)| t.set(k, v),
        );
        let options = AdminOptions::new()
            .request_timeout(Some(timeout))
            .operation_timeout(Some(timeout));
        let results = block_on(self.inner.create_topics([&new_topic], &options))
            .map_err(Error::from_kafka)?;
        match results.into_iter().next() {
            Some(Ok(_)) => Ok(()),
            Some(Err((_, code))) => Err(Error::from_code(code)),
            // One topic asked for, one result promised.
            None => Err(Error::Kafka(rdkafka::types::RDKafkaErrorCode::Fail)),
        }
    }

    /// Deletes `topic`; a topic that does not exist is not an error.
    pub fn delete_topic(&self, topic: &str, timeout: Duration) -> Result<(), Error> {
        let options = AdminOptions::new()
            .request_timeout(Some(timeout))
            .operation_timeout(Some(timeout));
        let results =
            block_on(self.inner.delete_topics(&[topic], &options)).map_err(Error::from_kafka)?;
        match results.into_iter().next() {
            Some(Ok(_)) => Ok(()),
            Some(Err((_, code))) => match Error::from_code(code) {
                Error::UnknownTopicOrPartition => Ok(()),
                e => Err(e),
            },
            None => Err(Error::Kafka(rdkafka::types::RDKafkaErrorCode::Fail)),
        }
    }

    /// How many partitions `topic` has; [`Error::UnknownTopicOrPartition`] if it does not
    /// exist.
    pub fn partition_count(&self, topic: &str, timeout: Duration) -> Result<u32, Error> {
        let metadata = self
            .inner
            .inner()
            .fetch_metadata(Some(topic), timeout)
            .map_err(Error::from_kafka)?;
        let t = metadata
            .topics()
            .iter()
            .find(|t| t.name() == topic)
            .ok_or(Error::UnknownTopicOrPartition)?;
        if let Some(code) = t.error() {
            return Err(Error::from_code(code.into()));
        }
        u32::try_from(t.partitions().len()).map_err(|_| Error::UnknownTopicOrPartition)
    }
}
