//! The ranges of Redis Cluster's hash slots each partition of the log owns (see
//! [`rialto_keyspace::slot`]). A key's slot is [`key_slot`].

pub use rialto_keyspace::slot::{
    crc16, first_slot, hash_tag, key_partition, key_slot, partition_of, slot_range, SLOTS,
};
