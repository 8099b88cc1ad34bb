use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::{Message, Offset, TopicPartitionList};

use super::{partition_index, ClientOptions, Error};

/// Where reading a partition starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartOffset {
    /// The oldest record the partition still holds.
    Earliest,
    /// The next record written after the assignment.
    Latest,
    /// The record at this offset: the one after the last one the reader applied.
    At(u64),
}

/// A record read from a partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub partition: u32,
    pub offset: u64,
    pub key: Option<Vec<u8>>,
    /// Empty for a record written without a payload.
    pub payload: Vec<u8>,
}

/// A consumer of given partitions of one topic, each from a given offset. It joins no
/// consumer group and commits no offsets: its reader stores the offsets it has applied and
/// starts from them, so Kafka's view of progress can never disagree with the reader's.
pub struct PartitionConsumer {
    inner: BaseConsumer,
}

impl PartitionConsumer {
    pub fn new(
        client: &ClientOptions,
        topic: &str,
        partitions: &[(u32, StartOffset)],
    ) -> Result<Self, Error> {
        let mut config = client.to_config()?;
        config
            // librdkafka's assign() needs a group id; no group is joined (that takes
            // subscribe()) and nothing is committed under it.
            .set("group.id", &client.client_id)
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            // A start offset that is gone (retention) or beyond the end is an error to report,
            // not a reason to skip records silently.
            .set("auto.offset.reset", "error");
        let inner: BaseConsumer = config.create().map_err(Error::from_kafka)?;
        let mut assignment = TopicPartitionList::new();
        for &(partition, start) in partitions {
            let offset = match start {
                StartOffset::Earliest => Offset::Beginning,
                StartOffset::Latest => Offset::End,
                StartOffset::At(n) => Offset::Offset(
                    i64::try_from(n)
                        .map_err(|_| Error::InvalidArgument("offset (above i64::MAX)"))?,
                ),
            };
            assignment
                .add_partition_offset(topic, partition_index(partition)?, offset)
                .map_err(Error::from_kafka)?;
        }
        inner.assign(&assignment).map_err(Error::from_kafka)?;
        Ok(PartitionConsumer { inner })
    }

    /// The next record of any assigned partition, waiting at most `timeout`; `None` if none
    /// came. Records of one partition come in offset order.
    pub fn poll(&self, timeout: Duration) -> Result<Option<Record>, Error> {
        let message = match self.inner.poll(timeout) {
            None => return Ok(None),
            Some(result) => result.map_err(Error::from_kafka)?,
        };
        let partition = u32::try_from(message.partition())
            .map_err(|_| Error::InvalidArgument("partition reported by librdkafka"))?;
        let offset = u64::try_from(message.offset())
            .map_err(|_| Error::InvalidArgument("offset reported by librdkafka"))?;
        Ok(Some(Record {
            partition,
            offset,
            key: message.key().map(<[u8]>::to_vec),
            payload: message.payload().map(<[u8]>::to_vec).unwrap_or_default(),
        }))
    }

    /// The partition's low and high watermarks: its oldest offset still held and the offset
    /// the next record written will get.
    pub fn watermarks(
        &self,
        topic: &str,
        partition: u32,
        timeout: Duration,
    ) -> Result<(u64, u64), Error> {
        let (low, high) = self
            .inner
            .fetch_watermarks(topic, partition_index(partition)?, timeout)
            .map_err(Error::from_kafka)?;
        let low = u64::try_from(low)
            .map_err(|_| Error::InvalidArgument("low watermark reported by Kafka"))?;
        let high = u64::try_from(high)
            .map_err(|_| Error::InvalidArgument("high watermark reported by Kafka"))?;
        Ok((low, high))
    }

    /// The partition's end (high watermark) as of the last records fetched from it, without
    /// asking the broker; `None` before the first fetch.
    pub fn cached_high_watermark(&self, topic: &str, partition: u32) -> Option<u64> {
        let topic = std::ffi::CString::new(topic).ok()?;
        let partition = partition_index(partition).ok()?;
        let (mut low, mut high) = (-1i64, -1i64);
        // SAFETY: the client pointer is valid while `self.inner` lives; librdkafka only
        // reads the topic name and writes the two integers we own.
        let err = unsafe {
            rdkafka::bindings::rd_kafka_get_watermark_offsets(
                self.inner.client().native_ptr(),
                topic.as_ptr(),
                partition,
                &mut low,
                &mut high,
            )
        };
        if err != rdkafka::bindings::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
            return None;
        }
        u64::try_from(high).ok()
    }
}

/// Every partition of one topic from its start, each read on its own: a reader that merges
/// the partitions' sorted streams asks for the next record of the partition whose turn it is.
/// It commits nothing and joins no group, as [`PartitionConsumer`].
pub struct SplitConsumer {
    consumer: std::sync::Arc<BaseConsumer>,
    queues: Vec<
        rdkafka::consumer::base_consumer::PartitionQueue<rdkafka::consumer::DefaultConsumerContext>,
    >,
}

impl SplitConsumer {
    /// Reads partitions `0..partitions` of `topic` from their start, prefetching at most
    /// `prefetch_kib` per partition.
    pub fn new(
        client: &ClientOptions,
        topic: &str,
        partitions: u32,
        prefetch_kib: u32,
    ) -> Result<Self, Error> {
        let mut config = client.to_config()?;
        config
            .set("group.id", &client.client_id)
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "error")
            .set(
                "queued.max.messages.kbytes",
                prefetch_kib.max(1024).to_string(),
            );
        let consumer: std::sync::Arc<BaseConsumer> =
            std::sync::Arc::new(config.create().map_err(Error::from_kafka)?);
        let mut assignment = TopicPartitionList::new();
        let mut queues = Vec::with_capacity(partitions as usize);
        for p in 0..partitions {
            let index = partition_index(p)?;
            assignment
                .add_partition_offset(topic, index, Offset::Beginning)
                .map_err(Error::from_kafka)?;
            queues.push(
                consumer
                    .split_partition_queue(topic, index)
                    .ok_or(Error::InvalidArgument("topic name"))?,
            );
        }
        consumer.assign(&assignment).map_err(Error::from_kafka)?;
        Ok(SplitConsumer { consumer, queues })
    }

    /// The next record of partition `p`, waiting at most `timeout`; `None` if none came.
    pub fn poll(&self, p: u32, timeout: Duration) -> Result<Option<Record>, Error> {
        // Events (errors, rebalances, statistics) arrive on the main queue, which must be
        // served for the partitions' queues to be fed.
        if let Some(Err(e)) = self.consumer.poll(Duration::ZERO) {
            return Err(Error::from_kafka(e));
        }
        let queue = self
            .queues
            .get(p as usize)
            .ok_or(Error::InvalidArgument("partition"))?;
        let message = match queue.poll(timeout) {
            None => return Ok(None),
            Some(result) => result.map_err(Error::from_kafka)?,
        };
        let offset = u64::try_from(message.offset())
            .map_err(|_| Error::InvalidArgument("offset reported by librdkafka"))?;
        Ok(Some(Record {
            partition: p,
            offset,
            key: message.key().map(<[u8]>::to_vec),
            payload: message.payload().map(<[u8]>::to_vec).unwrap_or_default(),
        }))
    }
}
