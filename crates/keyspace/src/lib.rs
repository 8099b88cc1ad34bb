//! Rialto's keyspace: the Redis data model on the engine, and the write operations that
//! change it.
//!
//! - [`Keyspace`] owns the database: the LSM engine, the transaction merger, its file system
//!   and clock, and the [stores](Stores) (Venice's model: named key prefixes loaded whole by
//!   batch pushes, each push a new version swapped in atomically, with streamed writes on
//!   top).
//! - Keys, values and expiry are laid out in the engine's one ordered keyspace as
//!   [`layout`](crate::layout) documents; [`Keys`] is the record-level view reads use.
//! - Every write is an [`Op`]: a command normalised into data (absolute times, options as
//!   fields) with a byte encoding, applied to the database by a deterministic function in the
//!   merger's execution order, which returns the reply's content ([`Value`]) or a typed
//!   [`Error`]. Two databases that apply the same ops hold the same contents.

mod apply;
pub mod bits;
mod blocking;
mod chunked;
mod collections;
mod counts;
mod dbmap;
mod dump;
mod error;
mod float;
pub mod hll;
mod keys;
mod keyspace;
mod layout;
mod library;
mod log_state;
mod num;
mod op;
mod rdb;
pub mod slot;
mod sort;
mod stores;
mod value;
mod walk;
mod watch;

pub use blocking::{Served, WaiterId};
pub use collections::geo;
pub use collections::hash::Hash;
pub use collections::list::{position as list_position, span as list_span, List};
pub use collections::set::{
    inter as set_inter, is_intset_record, union_or_diff as set_union_or_diff, SetValue,
};
pub use collections::stream::{
    Consumer as StreamConsumer, Entry as StreamEntry, Group as StreamGroup, Meta as StreamMeta,
    NodeLimits, Pending as StreamPending, Stream, StreamId,
};
pub use collections::zset::{combine as zset_combine, select as zset_select, ZSet};
pub use collections::Encodings;
pub use dump::{dump, Dumped};
pub use error::{Error, GeoError, LibraryError, NoGroupForm, Result, StreamError};
pub use float::add as float_add;
pub use keys::{check_key, check_value_len, Keys, RawRead, Reader};
pub use keyspace::{KeyCount, Keyspace, KeyspaceOptions, OpenError, Transaction, FLUSH_STEP_KEYS};
pub use layout::{CorruptRecord, Kind, Record, MAX_USER_KEY_LEN, MAX_USER_VALUE_LEN};
pub use num::{parse_double, strtod_prefix};
pub use op::{
    AddId, Aggregate, BadStreamId, BadTime, Combine, Cond, ExpireCond, FieldSub, GroupStart,
    HashOp, HllDebug, HllOp, LateError, LexBound, LexRange, LibraryOp, LibrarySource, ListOp, Op,
    OpKind, PartStoreOp, ReadFrom, RestoreOp, RestorePolicy, ScoreRange, Set, SetAlgebra, SetOp,
    StoreOp, StreamOp, Trim, TrimBy, TtlChange, ZAddFlags, ZRange, ZSetOp, FORMAT_VERSION,
};
pub use op::{SortBy, SortSpec, SortStore};
pub use rdb::{
    crc64, decode as decode_dump, encode as encode_dump, DumpValue, PayloadError, RDB_VERSION,
};
pub use rialto_lsm::Compression;
pub use rialto_sort::{DuplicatePolicy, FinishProgress};
pub use sort::{sort, SortMode};
pub use stores::settings::DEFAULT_KEEP as DEFAULT_STORE_KEEP;
pub use stores::MAX_PREFIX_LEN as MAX_STORE_PREFIX_LEN;
pub use stores::{
    check_hash_payload, encode_hash_payload, lower_thread_priority, valid_name as valid_store_name,
    Catalog, HashPayloadError, PassReport, PushCounts, PushGuard, PushLayout, PushOptions,
    PushPageCache, PushPhase, PushRefusal, PushReport, PushStatus, Pushing, SortedRecords, Staged,
    StoreError, StoreMeta, StoreOptions, StoreResult, StoreSettings, VersionInfo,
};
pub use value::{Score, Value};
pub use walk::RandomKey;
pub use watch::{KeyEvents, Watch};
