//! Rialto's cluster mode: the replicated log on Apache Kafka.
//!
//! For now this holds only [`kafka`], a thin wrapper over the `rdkafka` crate with what the
//! log needs: an idempotent producer that writes a record to a chosen partition and returns
//! its offset once every in-sync replica has it, a consumer that reads chosen partitions from
//! offsets its caller stores (no consumer groups), topic creation, and typed errors.

pub mod kafka;
