use std::fmt;

use rdkafka::error::KafkaError;

/// Kafka's and librdkafka's error codes, as the `rdkafka` crate names them.
pub use rdkafka::types::RDKafkaErrorCode as ErrorCode;

/// What went wrong talking to Kafka. The variants a caller acts on are named; the rest keep
/// their code in [`Error::Kafka`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument or option out of range; the text names it.
    #[error("invalid {0}")]
    InvalidArgument(&'static str),
    /// librdkafka refused to create or configure the client.
    #[error("could not create the Kafka client")]
    ClientCreation(#[source] Detail),
    /// The partition has fewer in-sync replicas than its `min.insync.replicas`, so an
    /// `acks=all` write is refused (or was appended by the leader but not replicated enough).
    #[error("not enough in-sync replicas")]
    NotEnoughReplicas,
    /// No answer within the time allowed (a record's delivery timeout, an operation's timeout).
    #[error("timed out")]
    TimedOut,
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    #[error("topic already exists")]
    TopicAlreadyExists,
    #[error("record too large")]
    RecordTooLarge,
    /// The producer's local queue is full: wait for earlier deliveries, then send again.
    #[error("producer queue full")]
    QueueFull,
    /// The offset asked for is not in the partition: removed by retention, or past its end.
    #[error("offset out of range")]
    OffsetOutOfRange,
    /// Brokers cannot be reached at the moment; the client reconnects by itself, so polling
    /// again goes on where it was.
    #[error("brokers unavailable: {0}")]
    BrokerUnavailable(ErrorCode),
    /// The producer can no longer keep its idempotence guarantee and must be replaced.
    #[error("fatal producer error: {0}")]
    Fatal(ErrorCode),
    /// The producer was closed before the record was acknowledged.
    #[error("producer closed before the record was acknowledged")]
    Closed,
    /// Any other error, by its code.
    #[error("Kafka error: {0}")]
    Kafka(ErrorCode),
    /// Any other error that librdkafka reports without a code.
    #[error("Kafka client error")]
    Other(#[source] Detail),
}

/// librdkafka's own account of a failure, kept for logs: its text is not part of the API.
#[derive(Debug)]
pub struct Detail(KafkaError);

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Detail {}

impl Error {
    pub(crate) fn from_code(code: ErrorCode) -> Error {
        use ErrorCode as C;
        match code {
            C::NotEnoughReplicas | C::NotEnoughReplicasAfterAppend => Error::NotEnoughReplicas,
            C::MessageTimedOut | C::RequestTimedOut | C::OperationTimedOut | C::TimedOutQueue => {
                Error::TimedOut
            }
            C::UnknownTopicOrPartition | C::UnknownTopic | C::UnknownPartition => {
                Error::UnknownTopicOrPartition
            }
            C::TopicAlreadyExists => Error::TopicAlreadyExists,
            C::MessageSizeTooLarge => Error::RecordTooLarge,
            C::QueueFull => Error::QueueFull,
            C::OffsetOutOfRange | C::AutoOffsetReset => Error::OffsetOutOfRange,
            C::BrokerTransportFailure | C::AllBrokersDown | C::Resolve => {
                Error::BrokerUnavailable(code)
            }
            C::PurgeQueue | C::PurgeInflight | C::BrokerDestroy => Error::Closed,
            C::Fatal | C::GaplessGuarantee | C::Fenced => Error::Fatal(code),
            other => Error::Kafka(other),
        }
    }

    pub(crate) fn from_kafka(error: KafkaError) -> Error {
        match error {
            KafkaError::ClientConfig(..) | KafkaError::ClientCreation(_) => {
                Error::ClientCreation(Detail(error))
            }
            KafkaError::Canceled => Error::Closed,
            KafkaError::Nul(_) => Error::InvalidArgument("string with a NUL byte"),
            KafkaError::MessageConsumptionFatal(code) => Error::Fatal(code),
            other => match other.rdkafka_error_code() {
                Some(code) => Error::from_code(code),
                None => Error::Other(Detail(other)),
            },
        }
    }
}

/// Whether a record whose delivery failed may be in the log all the same — and so be read by
/// consumers. After a timeout, or a refusal that followed an append, the producer cannot know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// The record was not written.
    No,
    /// The record may have been written.
    Maybe,
}

/// A failed delivery: the error, and whether the record may have been written anyway.
#[derive(Debug, thiserror::Error)]
#[error("{error} ({})", match written { Written::No => "not written", Written::Maybe => "may have been written" })]
pub struct DeliveryError {
    pub error: Error,
    pub written: Written,
}

impl From<Error> for DeliveryError {
    /// An error before the record was handed to the producer: it was not written.
    fn from(error: Error) -> Self {
        DeliveryError {
            error,
            written: Written::No,
        }
    }
}

impl From<DeliveryError> for Error {
    fn from(e: DeliveryError) -> Self {
        e.error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replication_codes_map_to_not_enough_replicas() {
        for code in [
            ErrorCode::NotEnoughReplicas,
            ErrorCode::NotEnoughReplicasAfterAppend,
        ] {
            assert!(matches!(Error::from_code(code), Error::NotEnoughReplicas));
        }
        assert!(matches!(
            Error::from_kafka(KafkaError::MessageProduction(ErrorCode::NotEnoughReplicas)),
            Error::NotEnoughReplicas
        ));
    }

    #[test]
    fn offset_reset_is_out_of_range() {
        // auto.offset.reset=error reports a missing offset as this local code.
        assert!(matches!(
            Error::from_kafka(KafkaError::MessageConsumption(ErrorCode::AutoOffsetReset)),
            Error::OffsetOutOfRange
        ));
    }

    #[test]
    fn unnamed_codes_are_kept() {
        assert!(matches!(
            Error::from_code(ErrorCode::InvalidReplicationFactor),
            Error::Kafka(ErrorCode::InvalidReplicationFactor)
        ));
    }

    #[test]
    fn delivery_error_says_whether_written() {
        let e = DeliveryError {
            error: Error::TimedOut,
            written: Written::Maybe,
        };
        assert_eq!(e.to_string(), "timed out (may have been written)");
        let e: DeliveryError = Error::QueueFull.into();
        assert_eq!(e.written, Written::No);
    }
}
