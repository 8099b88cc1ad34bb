use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_channel::oneshot;
use rdkafka::bindings::{rd_kafka_message_status, rd_kafka_msg_status_t};
use rdkafka::message::{BorrowedMessage, DeliveryResult};
use rdkafka::producer::{BaseRecord, Producer as _, ProducerContext, ThreadedProducer};
use rdkafka::{ClientContext, Message};

use super::block_on::block_on;
use super::{millis, partition_index, ClientOptions, DeliveryError, Error, ErrorCode, Written};

/// How the producer writes.
#[derive(Clone, Debug)]
pub struct ProducerOptions {
    pub client: ClientOptions,
    /// Longest time from [`Producer::send`] to the record's acknowledgement, retries included
    /// (`message.timeout.ms`); past it the delivery fails with [`Error::TimedOut`]. Default 30 s.
    pub delivery_timeout: Duration,
    /// How long one produce request may wait for the in-sync replicas before it is sent again
    /// (`request.timeout.ms`). Default 5 s, below Kafka's 30 s: a request caught while a
    /// follower dies waits for it until the request times out, since Kafka 4 leaves such a
    /// record uncommitted rather than refuse it once the in-sync replicas drop below
    /// `min.insync.replicas`; sent again after the controller has shrunk them, it gets a
    /// definite "not enough replicas" within the delivery timeout.
    pub request_timeout: Duration,
    /// How many times a produce request that failed with a retriable error (not enough
    /// in-sync replicas, a request timeout, a lost connection) is sent again before the record
    /// fails with that error (`retries`). Sends after a leader change are not counted. With
    /// backoff from 100 ms doubling to 1 s, the default 10 gives up after about 8 s of
    /// refusals, so a write that cannot be replicated fails with its cause instead of waiting
    /// out the delivery timeout.
    pub max_retries: u32,
    /// How long a record waits for others to share its produce request (`linger.ms`): the
    /// latency a write pays for batching. Default 1 ms.
    pub linger: Duration,
}

impl ProducerOptions {
    pub fn new(client: ClientOptions) -> Self {
        ProducerOptions {
            client,
            delivery_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(5),
            max_retries: 10,
            linger: Duration::from_millis(1),
        }
    }
}

type Reply = oneshot::Sender<Result<u64, DeliveryError>>;

/// Hands each delivery report to the [`Delivery`] that waits for it.
struct Reporter;

impl ClientContext for Reporter {}

impl ProducerContext for Reporter {
    type DeliveryOpaque = Box<Reply>;

    fn delivery(&self, result: &DeliveryResult<'_>, reply: Box<Reply>) {
        // The receiver may have been dropped: nobody waits for this record any more.
        let _ = reply.send(outcome(result));
    }
}

fn outcome(result: &DeliveryResult<'_>) -> Result<u64, DeliveryError> {
    match result {
        Ok(message) => u64::try_from(message.offset())
            // acks=all always returns an offset; a negative one would be a broker's fault.
            .map_err(|_| Error::Kafka(ErrorCode::InvalidMessage).into()),
        Err((error, message)) => {
            let error = Error::from_kafka(error.clone());
            Err(DeliveryError {
                error,
                written: written(message),
            })
        }
    }
}

fn written(message: &BorrowedMessage<'_>) -> Written {
    // SAFETY: the message is librdkafka's, valid for the duration of the delivery callback
    // that lent it to us; reading its status does not retain it.
    let status = unsafe { rd_kafka_message_status(message.ptr()) };
    match status {
        rd_kafka_msg_status_t::RD_KAFKA_MSG_STATUS_NOT_PERSISTED => Written::No,
        _ => Written::Maybe,
    }
}

/// An idempotent Kafka producer: each record goes to the partition given, in send order per
/// partition, exactly once, and is acknowledged when all in-sync replicas have it.
///
/// Dropping the producer abandons the records not yet acknowledged: their deliveries fail
/// with [`Error::Closed`] ([`Written::Maybe`] for those already sent). Call
/// [`Producer::flush`] first to wait for them.
pub struct Producer {
    inner: ThreadedProducer<Reporter>,
}

impl Producer {
    pub fn new(options: &ProducerOptions) -> Result<Self, Error> {
        let mut config = options.client.to_config()?;
        let delivery_ms = millis(
            options.delivery_timeout,
            "delivery timeout (1 ms to i32::MAX ms)",
        )?;
        let request_ms = millis(
            options.request_timeout,
            "request timeout (1 ms to i32::MAX ms)",
        )?;
        if options.max_retries == 0 {
            // librdkafka refuses an idempotent producer without retries.
            return Err(Error::InvalidArgument(
                "max retries (0; idempotence needs at least 1)",
            ));
        }
        config
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("retries", options.max_retries.to_string())
            .set("message.timeout.ms", &delivery_ms)
            .set(
                "linger.ms",
                options.linger.as_millis().min(900_000).to_string(),
            )
            .set("request.timeout.ms", &request_ms);
        let inner = config
            .create_with_context(Reporter)
            .map_err(Error::from_kafka)?;
        Ok(Producer { inner })
    }

    /// Queues `payload` (with `key`, if any) for `partition` of `topic`. The returned
    /// [`Delivery`] resolves to the record's offset once it is acknowledged.
    pub fn send(
        &self,
        topic: &str,
        partition: u32,
        key: Option<&[u8]>,
        payload: &[u8],
    ) -> Result<Delivery, Error> {
        let (tx, rx) = oneshot::channel();
        let mut record: BaseRecord<'_, [u8], [u8], Box<Reply>> =
            BaseRecord::with_opaque_to(topic, Box::new(tx))
                .partition(partition_index(partition)?)
                .payload(payload);
        if let Some(key) = key {
            record = record.key(key);
        }
        self.inner
            .send(record)
            .map_err(|(e, _)| Error::from_kafka(e))?;
        Ok(Delivery { rx })
    }

    /// [`Producer::send`] and [`Delivery::wait`]: blocks until the record is acknowledged.
    pub fn produce(
        &self,
        topic: &str,
        partition: u32,
        key: Option<&[u8]>,
        payload: &[u8],
    ) -> Result<u64, DeliveryError> {
        self.send(topic, partition, key, payload)?.wait()
    }

    /// Waits until every record sent so far is acknowledged or has failed, at most `timeout`.
    pub fn flush(&self, timeout: Duration) -> Result<(), Error> {
        self.inner.flush(timeout).map_err(Error::from_kafka)
    }

    /// The error that stopped the producer for good, if one did ([`Error::Fatal`]).
    pub fn fatal_error(&self) -> Option<ErrorCode> {
        self.inner.client().fatal_error().map(|(code, _)| code)
    }
}

/// A record on its way: resolves to its offset once acknowledged, or to why it was not.
/// Every delivery resolves, at the latest after the producer's delivery timeout.
#[must_use = "a delivery says whether the record was written"]
pub struct Delivery {
    rx: oneshot::Receiver<Result<u64, DeliveryError>>,
}

impl Delivery {
    /// Blocks the calling thread until the record is acknowledged or has failed.
    pub fn wait(self) -> Result<u64, DeliveryError> {
        block_on(self)
    }
}

impl Delivery {
    /// The outcome if it is known already, without waiting.
    pub fn try_take(&mut self) -> Option<Result<u64, DeliveryError>> {
        match self.rx.try_recv() {
            Ok(Some(r)) => Some(r),
            Ok(None) => None,
            Err(_) => Some(Err(DeliveryError {
                error: Error::Closed,
                written: Written::Maybe,
            })),
        }
    }
}

impl Future for Delivery {
    type Output = Result<u64, DeliveryError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx).poll(cx).map(|r| {
            // A dropped sender means librdkafka let go of the record without a report.
            r.unwrap_or(Err(DeliveryError {
                error: Error::Closed,
                written: Written::Maybe,
            }))
        })
    }
}
