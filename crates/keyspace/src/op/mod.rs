//! Write operations: every write command, normalised into data that carries all it needs.
//!
//! A command is turned into an [`Op`] once, where it arrives: relative times become absolute
//! ones against the instant the op carries (`now_ms`), options become fields (`SET ... NX GET`
//! is a [`Set`] with `cond: Some(Cond::Nx)` and `get: true`), arguments are parsed and
//! checked where Redis checks them before looking at any key. [`crate::apply`] then applies
//! it to the database, as a function of the database's state and the op alone: no clock, no
//! randomness, no state outside the database (the store catalog and the real-time log
//! counters it keeps in memory are derived from the database). Two databases that apply the
//! same ops in the same order hold the same contents and give the same replies; an op
//! decoded from its bytes ([`Op::encode`], [`Op::decode`]) applies as the original does.
//!
//! The database an op touches is in the op; the store a key belongs to is decided at apply
//! time by the catalog in the state, not recorded in the op: a catalog change (a push's swap)
//! ordered before the op must route it to the versions that are live when it executes.

mod codec;

use bytes::Bytes;

pub use codec::FORMAT_VERSION;

use crate::stores::{StoreSettings, VersionInfo};
pub use crate::value::Score;

/// One write operation: where and when it runs, and what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    /// The database (SELECT index) its keys are in.
    pub db: u8,
    /// The instant expiry is judged against and entries are stamped with, Unix milliseconds.
    pub now_ms: i64,
    /// What it does.
    pub kind: OpKind,
}

/// A condition on the key's existence (SET's NX and XX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cond {
    /// Only if the key does not exist.
    Nx,
    /// Only if the key exists.
    Xx,
}

/// EXPIRE's conditions on the current expiry (NX, XX, GT, LT), as Redis combines them: NX
/// excludes the others, GT excludes LT, XX goes with either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExpireCond {
    /// Only if the key has no expiry.
    pub nx: bool,
    /// Only if the key has an expiry.
    pub xx: bool,
    /// Only if the new time is later (no expiry counts as infinite).
    pub gt: bool,
    /// Only if the new time is earlier.
    pub lt: bool,
}

/// What GETEX does to the key's expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtlChange {
    /// Nothing.
    Keep,
    /// Removes it.
    Persist,
    /// Sets it (a time already past deletes the key).
    At(i64),
    /// The time given was bad: an error once the key is found to exist.
    Bad(BadTime),
}

/// Why an expiry argument was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadTime {
    /// Not an integer.
    NotInteger,
    /// Not positive, or out of range once made absolute.
    OutOfRange,
}

/// SET and the commands that are SET with fixed options (SETEX, PSETEX, GETSET).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Set {
    /// The key.
    pub key: Bytes,
    /// The value.
    pub value: Bytes,
    /// The absolute expiry, if any.
    pub expire_at_ms: Option<i64>,
    /// Keep the key's current expiry (KEEPTTL); `expire_at_ms` is then `None`.
    pub keep_ttl: bool,
    /// NX or XX.
    pub cond: Option<Cond>,
    /// Reply with the old value (GET).
    pub get: bool,
}

/// What an op does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpKind {
    /// SET key value [NX|XX] [GET] [expiry|KEEPTTL]; also SETEX, PSETEX, GETSET.
    Set(Set),
    /// SETNX key value: 1 if set, 0 if the key existed.
    SetNx {
        /// The key.
        key: Bytes,
        /// The value.
        value: Bytes,
    },
    /// MSET: blind writes, a later pair for the same key wins.
    MSet {
        /// Keys and values.
        pairs: Vec<(Bytes, Bytes)>,
    },
    /// MSETNX: all or nothing, only if none of the keys exists.
    MSetNx {
        /// Keys and values.
        pairs: Vec<(Bytes, Bytes)>,
    },
    /// GETDEL key.
    GetDel {
        /// The key.
        key: Bytes,
    },
    /// GETEX key [expiry|PERSIST].
    GetEx {
        /// The key.
        key: Bytes,
        /// What happens to its expiry.
        ttl: TtlChange,
    },
    /// APPEND key value (keeps the expiry).
    Append {
        /// The key.
        key: Bytes,
        /// What is appended.
        value: Bytes,
    },
    /// SETRANGE key offset value (zero-pads, keeps the expiry).
    SetRange {
        /// The key.
        key: Bytes,
        /// Where the patch goes.
        offset: u64,
        /// The bytes written there.
        patch: Bytes,
    },
    /// INCR, DECR, INCRBY, DECRBY (keep the expiry).
    IncrBy {
        /// The key.
        key: Bytes,
        /// What is added.
        delta: i64,
    },
    /// INCRBYFLOAT key increment, in C `long double` as Redis computes it (keeps the expiry).
    IncrByFloat {
        /// The key.
        key: Bytes,
        /// The increment as given (parsed at apply, as Redis parses it after the value).
        incr: Bytes,
    },
    /// DEL and UNLINK: how many of the keys existed.
    Del {
        /// The keys.
        keys: Vec<Bytes>,
    },
    /// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT: 1 if the expiry was set (a time already past
    /// deletes the key), 0 if the key is missing or the condition refused it.
    Expire {
        /// The key.
        key: Bytes,
        /// The new expiry, absolute.
        at_ms: i64,
        /// How it must compare with the current one.
        cond: ExpireCond,
    },
    /// PERSIST key.
    Persist {
        /// The key.
        key: Bytes,
    },
    /// RENAME and RENAMENX: the value moves with its expiry.
    Rename {
        /// The key renamed.
        src: Bytes,
        /// Its new name.
        dst: Bytes,
        /// RENAMENX: only if `dst` does not exist.
        nx: bool,
    },
    /// The expiry pass's deletions: each key whose record still expires at the entry's time
    /// and has expired by `now_ms` is deleted, and every entry is removed from the expiry
    /// index (stale ones too). Replies how many keys it deleted.
    ExpireDue {
        /// Expiry-index entries: database, time, key.
        entries: Vec<(u8, i64, Bytes)>,
    },
    /// FLUSHDB (the op's database) or FLUSHALL (`all`), in steps: deletes up to `limit` keys
    /// of what the flush covers (data and expiry keys; in database 0 the live versions of every
    /// store), in key order, and replies how many it deleted; the flush is done when a step
    /// deletes fewer than `limit`.
    FlushStep {
        /// Every database, not only the op's.
        all: bool,
        /// Most keys this step deletes.
        limit: u64,
    },
    /// A cluster partition's FLUSHDB, in steps: examines up to `limit` keys of database 0's
    /// data and expiry index, in key order after the engine key `from` (empty: from the
    /// start), and deletes those whose key's hash slot is in `first..=last`. Replies the last
    /// engine key examined, where the next step starts, or null once the ranges are done.
    FlushSlots {
        /// The first slot flushed.
        first: u16,
        /// The last slot flushed.
        last: u16,
        /// The engine key the previous step ended at.
        from: Bytes,
        /// Most keys this step examines.
        limit: u64,
    },
    /// A change to the function libraries of a cluster partition: each partition keeps its
    /// own set, changed through its own log, as each Redis Cluster shard keeps its functions.
    PartitionLibrary {
        /// The partition.
        partition: u32,
        /// The change.
        op: LibraryOp,
    },
    /// A change of the store catalog.
    Store(StoreOp),
    /// A change of one cluster partition's stores: each partition creates, swaps and rolls
    /// back its stores at its own offsets; store ids and version numbers come from the
    /// cluster's catalog, so every partition names a store and a version alike.
    PartitionStore {
        /// The partition.
        partition: u32,
        /// The offset of the cluster catalog's state the change was derived from: a
        /// partition ignores a change derived from an older state than one it applied (a new
        /// master whose catalog lags must not undo what the previous master did).
        at: u64,
        /// The change.
        op: PartStoreOp,
    },
    /// A change to the stored function libraries (FUNCTION LOAD, DELETE, FLUSH, RESTORE).
    Library(LibraryOp),
    /// A write to a hash.
    Hash(HashOp),
    /// COPY source destination [DB db] [REPLACE]: 1 if copied, 0 if the source is missing or
    /// the destination exists without `replace`.
    Copy {
        /// The key copied (in the op's database).
        src: Bytes,
        /// The new key.
        dst: Bytes,
        /// The destination's database.
        dst_db: u8,
        /// REPLACE: an existing destination is overwritten.
        replace: bool,
    },
    /// SETBIT key offset value: the bit's old value (the string grows with zero bytes).
    SetBit {
        /// The key.
        key: Bytes,
        /// The bit, from the first byte's most significant.
        offset: u64,
        /// Set or clear.
        on: bool,
    },
    /// BITOP op destkey key...: the destination's new length (0: deleted).
    BitOp {
        /// The operation.
        op: crate::bits::BitOp,
        /// Where the result goes.
        dst: Bytes,
        /// The sources (one for NOT).
        keys: Vec<Bytes>,
    },
    /// BITFIELD key with at least one SET or INCRBY: a reply per GET, SET and INCRBY.
    BitField {
        /// The key.
        key: Bytes,
        /// What to do, in order.
        subs: Vec<FieldSub>,
    },
    /// SWAPDB a b: the two databases exchange their contents (OK).
    SwapDb {
        /// One database.
        a: u8,
        /// The other.
        b: u8,
    },
    /// SORT ... STORE destination: `dst` becomes the sorted elements as a list (deleted when
    /// there are none); replies how many.
    Sort(SortStore),
    /// MOVE key db: 1 if moved, 0 if missing here or present there.
    Move {
        /// The key.
        key: Bytes,
        /// The database it moves to.
        dst_db: u8,
    },
    /// A write to a set (`Set` is SET's).
    Sets(SetOp),
    /// A write to a sorted set.
    ZSet(ZSetOp),
    /// A write to a list.
    List(ListOp),
    /// A stream command (its reads too, when they run as ops: XREAD, which may wait).
    Stream(StreamOp),
    /// RESTORE: a DUMP payload becomes the key's value.
    Restore(RestoreOp),
    /// A write to a HyperLogLog (a string holding Redis's representation).
    Hll(HllOp),
}

/// A HyperLogLog command that may write (`crate::hll`): each reads the string, refuses one
/// that is not a HyperLogLog, and writes the bytes Redis would hold after the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HllOp {
    /// PFADD key element...: 1 if a register changed or the key was made, else 0.
    Add {
        /// The key.
        key: Bytes,
        /// The elements.
        elements: Vec<Bytes>,
        /// `hll-sparse-max-bytes` where the command arrived: the bytes written depend on it.
        sparse_max: u64,
    },
    /// PFCOUNT key (one key): the estimate. A stale cached cardinality is computed and
    /// written back into the value, as Redis does; a valid one is replied without a write.
    Count {
        /// The key.
        key: Bytes,
    },
    /// PFMERGE dst src...: the destination (created if missing) takes the largest value of
    /// each register among itself and the sources; OK.
    Merge {
        /// The destination, also merged.
        dst: Bytes,
        /// The sources.
        keys: Vec<Bytes>,
        /// As for `Add`.
        sparse_max: u64,
    },
    /// PFDEBUG subcommand key.
    Debug {
        /// The key.
        key: Bytes,
        /// What to do.
        sub: HllDebug,
    },
}

/// PFDEBUG's subcommands. Redis looks the key up before the subcommand, so an unknown one is
/// carried (and refused once the key is found to be a HyperLogLog).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HllDebug {
    /// Every register's value (a sparse value is made dense first).
    GetReg,
    /// The sparse opcodes as text.
    Decode,
    /// `dense` or `sparse`.
    Encoding,
    /// Makes a sparse value dense: 1 if converted.
    ToDense,
    /// Anything else, as sent.
    Unknown(Bytes),
}

impl HllOp {
    /// Every key it reads or writes.
    pub fn keys(&self) -> Vec<&Bytes> {
        match self {
            HllOp::Add { key, .. } | HllOp::Count { key } | HllOp::Debug { key, .. } => {
                vec![key]
            }
            HllOp::Merge { dst, keys, .. } => std::iter::once(dst).chain(keys).collect(),
        }
    }
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL]. IDLETIME and FREQ are checked where the
/// command arrived and not kept: Rialto keeps no access time or frequency per key. Everything
/// Redis checks after looking at the key (the TTL, then the payload) is checked by `apply`, in
/// Redis's order: BUSYKEY first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreOp {
    /// The key written.
    pub key: Bytes,
    /// The TTL argument in milliseconds (0: none), `None` when it is not an integer.
    pub ttl_ms: Option<i64>,
    /// ABSTTL: `ttl_ms` is a Unix time in milliseconds rather than a time to live.
    pub absolute: bool,
    /// REPLACE: an existing key is overwritten.
    pub replace: bool,
    /// The DUMP payload, as given (checked and decoded when applied).
    pub payload: Bytes,
}

/// A write to a list: each creates the list if needed (pushes) and deletes it with its last
/// element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListOp {
    /// LPUSH, RPUSH (`left` false), LPUSHX and RPUSHX (`existing`): the new length (0 when
    /// `existing` and there is no list).
    Push {
        /// The key.
        key: Bytes,
        /// At the head.
        left: bool,
        /// Only onto a list that exists.
        existing: bool,
        /// The elements, pushed one by one.
        items: Vec<Bytes>,
    },
    /// LPOP, RPOP: one element (no count), or up to `count` (null array when there is no
    /// list).
    Pop {
        /// The key.
        key: Bytes,
        /// From the head.
        left: bool,
        /// How many; `None`: one, replied as a string.
        count: Option<u64>,
    },
    /// LSET: OK, or no such key, or index out of range.
    Set {
        /// The key.
        key: Bytes,
        /// The element's index (negative: from the tail), as given: it is parsed once the key
        /// is found to hold a list, as Redis does.
        index: Bytes,
        /// Its new value.
        value: Bytes,
    },
    /// LINSERT: the new length, -1 without the pivot, 0 without the list.
    Insert {
        /// The key.
        key: Bytes,
        /// Before the pivot (else after).
        before: bool,
        /// The element to insert next to (its first occurrence from the head).
        pivot: Bytes,
        /// The element inserted.
        value: Bytes,
    },
    /// LREM: how many elements equal to `value` were removed: `count` of them from the head
    /// (negative: from the tail; 0: all).
    Rem {
        /// The key.
        key: Bytes,
        /// How many and from which end.
        count: i64,
        /// The element removed.
        value: Bytes,
    },
    /// LTRIM: keeps elements `start..=stop` (Redis's index rules).
    Trim {
        /// The key.
        key: Bytes,
        /// First kept.
        start: i64,
        /// Last kept.
        stop: i64,
    },
    /// LMOVE and RPOPLPUSH: pops from `src` and pushes onto `dst`; the element, or null.
    Move {
        /// The list popped.
        src: Bytes,
        /// The list pushed.
        dst: Bytes,
        /// Pop at the head of `src`.
        from_left: bool,
        /// Push at the head of `dst`.
        to_left: bool,
    },
    /// LMPOP: up to `count` elements of the first of `keys` that is a non-empty list, as its
    /// name and an array of them; without a count (BLPOP, BRPOP), one element, as the name
    /// and the element. A null array when no list has any.
    MPop {
        /// The lists, in order.
        keys: Vec<Bytes>,
        /// From the head.
        left: bool,
        /// How many; `None`: one, replied flat.
        count: Option<u64>,
    },
}

impl ListOp {
    /// The keys it reads or writes.
    pub fn keys(&self) -> Vec<&Bytes> {
        match self {
            ListOp::Push { key, .. }
            | ListOp::Pop { key, .. }
            | ListOp::Set { key, .. }
            | ListOp::Insert { key, .. }
            | ListOp::Rem { key, .. }
            | ListOp::Trim { key, .. } => vec![key],
            ListOp::Move { src, dst, .. } => vec![src, dst],
            ListOp::MPop { keys, .. } => keys.iter().collect(),
        }
    }
}

/// One operation of BITFIELD, with the overflow policy in force where it appears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldSub {
    /// GET type offset.
    Get {
        ty: crate::bits::FieldType,
        offset: u64,
    },
    /// SET type offset value: replies the old value.
    Set {
        ty: crate::bits::FieldType,
        offset: u64,
        value: i64,
        overflow: crate::bits::Overflow,
    },
    /// INCRBY type offset increment: replies the new value.
    IncrBy {
        ty: crate::bits::FieldType,
        offset: u64,
        incr: i64,
        overflow: crate::bits::Overflow,
    },
}

pub use crate::collections::stream::{NodeLimits, StreamId};

/// XADD's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddId {
    /// `*`: from the op's time.
    Auto,
    /// `ms-*`: the next sequence in that millisecond.
    Ms(u64),
    /// An explicit id.
    Exact(StreamId),
}

/// A trim (XTRIM, XADD's MAXLEN and MINID).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trim {
    /// MAXLEN's length, or MINID's id.
    pub by: TrimBy,
    /// `~`: whole nodes only.
    pub approx: bool,
    /// At most this many entries (0: no limit).
    pub limit: u64,
}

/// What a trim keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrimBy {
    MaxLen(u64),
    MinId(StreamId),
}

/// Where XREAD reads a stream from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFrom {
    /// Entries after this id.
    After(StreamId),
    /// `$`: entries added after the read (resolved when a waiter registers).
    Last,
}

/// Why an XREAD or XREADGROUP id argument was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadStreamId {
    /// It does not parse.
    Invalid,
    /// `$` given to XREADGROUP.
    Dollar,
    /// `>` given to XREAD.
    Greater,
}

/// An id argument of XGROUP CREATE and SETID, kept as given until the key is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupStart {
    /// `$`: the stream's last id.
    Last,
    Id(StreamId),
    /// Did not parse (reported after the key's checks, as Redis does).
    Bad,
}

/// A stream command as an op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamOp {
    /// XADD: the new id, or null with NOMKSTREAM on a missing key.
    Add {
        key: Bytes,
        nomkstream: bool,
        id: AddId,
        /// Fields and values, alternating.
        fields: Vec<Bytes>,
        trim: Option<Trim>,
        node: NodeLimits,
    },
    /// XTRIM: how many entries it deleted.
    Trim {
        key: Bytes,
        trim: Trim,
        node: NodeLimits,
    },
    /// XDEL: how many entries existed. `bad`: an id did not parse (an error once the key is
    /// found to be a stream).
    Del {
        key: Bytes,
        ids: Vec<StreamId>,
        bad: bool,
    },
    /// XSETID.
    SetId {
        key: Bytes,
        last: StreamId,
        entries_added: Option<u64>,
        max_deleted: Option<StreamId>,
    },
    /// XREAD: entries after each stream's id, at most `count` per stream (0: all). A read
    /// that runs as an op so that it can wait (BLOCK) in the merger's order.
    Read {
        streams: Vec<(Bytes, ReadFrom)>,
        count: u64,
        /// The first id argument that was refused, reported once the keys before it and its
        /// own were checked, as Redis does.
        bad: Option<(u64, BadStreamId)>,
    },
    /// XREADGROUP: `from` `None` is `>` (new entries), else the consumer's history after
    /// it. `served`: run for a waiter woken by a write (a missing key or group is an error
    /// then, and new entries are served even when none is live, as Redis does).
    ReadGroup {
        group: Bytes,
        consumer: Bytes,
        streams: Vec<(Bytes, Option<StreamId>)>,
        count: u64,
        noack: bool,
        served: bool,
        /// As [`StreamOp::Read`]'s.
        bad: Option<(u64, BadStreamId)>,
    },
    /// XGROUP CREATE.
    GroupCreate {
        key: Bytes,
        group: Bytes,
        start: GroupStart,
        mkstream: bool,
        entries_read: i64,
    },
    /// XGROUP SETID.
    GroupSetId {
        key: Bytes,
        group: Bytes,
        start: GroupStart,
        entries_read: i64,
    },
    /// XGROUP DESTROY.
    GroupDestroy { key: Bytes, group: Bytes },
    /// XGROUP CREATECONSUMER.
    CreateConsumer {
        key: Bytes,
        group: Bytes,
        consumer: Bytes,
    },
    /// XGROUP DELCONSUMER.
    DelConsumer {
        key: Bytes,
        group: Bytes,
        consumer: Bytes,
    },
    /// XACK (`bad` as for XDEL).
    Ack {
        key: Bytes,
        group: Bytes,
        ids: Vec<StreamId>,
        bad: bool,
    },
    /// XCLAIM: the arguments from min-idle-time on, as sent (parsed where applied, after the
    /// key and group are found, as Redis parses them).
    Claim {
        key: Bytes,
        group: Bytes,
        consumer: Bytes,
        args: Vec<Bytes>,
    },
    /// XAUTOCLAIM.
    AutoClaim {
        key: Bytes,
        group: Bytes,
        consumer: Bytes,
        min_idle: u64,
        start: StreamId,
        count: u64,
        justid: bool,
    },
}

impl StreamOp {
    /// The keys it reads or writes.
    pub fn keys(&self) -> Vec<&Bytes> {
        match self {
            StreamOp::Read { streams, .. } => streams.iter().map(|(k, _)| k).collect(),
            StreamOp::ReadGroup { streams, .. } => streams.iter().map(|(k, _)| k).collect(),
            StreamOp::Add { key, .. }
            | StreamOp::Trim { key, .. }
            | StreamOp::Del { key, .. }
            | StreamOp::SetId { key, .. }
            | StreamOp::GroupCreate { key, .. }
            | StreamOp::GroupSetId { key, .. }
            | StreamOp::GroupDestroy { key, .. }
            | StreamOp::CreateConsumer { key, .. }
            | StreamOp::DelConsumer { key, .. }
            | StreamOp::Ack { key, .. }
            | StreamOp::Claim { key, .. }
            | StreamOp::AutoClaim { key, .. } => vec![key],
        }
    }
}

impl ZSetOp {
    /// The keys it reads or writes.
    pub fn keys(&self) -> Vec<&Bytes> {
        match self {
            ZSetOp::Add { key, .. }
            | ZSetOp::Rem { key, .. }
            | ZSetOp::RemRange { key, .. }
            | ZSetOp::Pop { key, .. } => vec![key],
            ZSetOp::RangeStore { dst, src, .. } => vec![dst, src],
            ZSetOp::GeoStore { form, args } => {
                use crate::collections::geo::{radius_store_key, Form};
                let at: &[usize] = match form {
                    Form::SearchStore => &[1, 2],
                    _ => &[1],
                };
                let dst = match form {
                    Form::SearchStore => None,
                    _ => radius_store_key(args),
                };
                at.iter()
                    .copied()
                    .chain(dst)
                    .filter_map(|i| args.get(i))
                    .collect()
            }
            ZSetOp::MPop { keys, .. } => keys.iter().collect(),
            ZSetOp::Store { dst, keys, .. } => std::iter::once(dst).chain(keys).collect(),
        }
    }
}

/// ZADD's options, checked for compatibility where the command arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ZAddFlags {
    /// Only add new members.
    pub nx: bool,
    /// Only update existing members.
    pub xx: bool,
    /// Only update when the new score is greater.
    pub gt: bool,
    /// Only update when the new score is less.
    pub lt: bool,
    /// Count changed members too in the reply.
    pub ch: bool,
    /// Add the score to the current one and reply the result (one pair only).
    pub incr: bool,
}

/// A score interval of ZRANGEBYSCORE and its kin (`(` makes a bound exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScoreRange {
    pub min: Score,
    pub max: Score,
    pub min_ex: bool,
    pub max_ex: bool,
}

/// One end of a ZRANGEBYLEX interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexBound {
    /// `-`: before every member.
    Min,
    /// `+`: after every member.
    Max,
    /// `[member`.
    Incl(Bytes),
    /// `(member`.
    Excl(Bytes),
}

/// A member interval of ZRANGEBYLEX and its kin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexRange {
    pub min: LexBound,
    pub max: LexBound,
}

/// Which members a range removal covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZRange {
    /// By rank, as given (negative counts from the end).
    Rank(i64, i64),
    /// By score.
    Score(ScoreRange),
    /// By member, for members of equal scores.
    Lex(LexRange),
}

/// How ZUNION, ZINTER and ZDIFF combine their inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    Union,
    Inter,
    Diff,
}

/// How ZUNION and ZINTER merge one member's weighted scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Aggregate {
    #[default]
    Sum,
    Min,
    Max,
}

/// An option of ZUNIONSTORE and its kin that Redis refuses only after it has looked the input
/// keys up (so a WRONGTYPE comes first, as there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LateError {
    /// An unknown or misplaced option.
    Syntax,
    /// A weight that is not a float.
    WeightNotFloat,
}

/// A write to a sorted set: each creates the set if needed and deletes it with its last
/// member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZSetOp {
    /// ZADD and ZINCRBY (`flags.incr`): scores and members in order, a later pair for the same
    /// member winning. Replies how many were added (changed too, with CH), or with INCR the
    /// new score (null if a condition refused it).
    Add {
        /// The key.
        key: Bytes,
        /// The options.
        flags: ZAddFlags,
        /// Scores and members.
        items: Vec<(Score, Bytes)>,
    },
    /// ZREM: how many of the members were removed.
    Rem {
        /// The key.
        key: Bytes,
        /// The members.
        members: Vec<Bytes>,
    },
    /// ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX: how many members were removed.
    RemRange {
        /// The key.
        key: Bytes,
        /// Which members.
        range: ZRange,
    },
    /// ZPOPMIN (`max` false) and ZPOPMAX: removes and replies the lowest (highest) members.
    Pop {
        /// The key.
        key: Bytes,
        /// From the highest scores.
        max: bool,
        /// How many; `None`: one, replied flat.
        count: Option<u64>,
    },
    /// ZMPOP: up to `count` of the lowest (highest) members of the first of `keys` that is a
    /// non-empty sorted set, as its name and [member, score] pairs; without a count (BZPOPMIN,
    /// BZPOPMAX), one, as the name, the member and the score. A null array when none has any.
    MPop {
        /// The sorted sets, in order.
        keys: Vec<Bytes>,
        /// From the highest scores.
        max: bool,
        /// How many; `None`: one, replied flat.
        count: Option<u64>,
    },
    /// ZRANGESTORE: `dst` becomes the selected members of `src` (deleted when none); replies
    /// how many.
    RangeStore {
        /// Where the result goes.
        dst: Bytes,
        /// The sorted set read.
        src: Bytes,
        /// Which members (a rank range counted from the highest with `rev`).
        range: ZRange,
        /// From the highest scores (a score or lex range's bounds are then max, min).
        rev: bool,
        /// LIMIT offset count of a score or lex range (a negative count: no limit).
        limit: Option<(i64, i64)>,
    },
    /// ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE: `dst` becomes the combination of `keys` (deleted
    /// when empty); replies its size.
    Store {
        /// Where the result goes.
        dst: Bytes,
        /// How the inputs combine.
        op: Combine,
        /// The inputs.
        keys: Vec<Bytes>,
        /// One per input (empty: all 1).
        weights: Vec<Score>,
        /// How scores merge.
        aggregate: Aggregate,
        /// An option error to reply once the inputs are checked.
        late: Option<LateError>,
    },
    /// GEORADIUS and GEORADIUSBYMEMBER with STORE or STOREDIST, GEOSEARCHSTORE: the request
    /// as sent, parsed where it is applied (its errors depend on the searched set, and come
    /// in Redis's order); the destination becomes the members found, scored by position or
    /// by distance (deleted when none). Replies how many.
    GeoStore {
        /// Which command: `Radius`, `ByMember` (not read-only) or `SearchStore`.
        form: crate::collections::geo::Form,
        /// The request, its name first.
        args: Vec<Bytes>,
    },
}

impl HashOp {
    /// The hash it writes.
    pub fn key(&self) -> &Bytes {
        match self {
            HashOp::Set { key, .. }
            | HashOp::SetNx { key, .. }
            | HashOp::Del { key, .. }
            | HashOp::IncrBy { key, .. }
            | HashOp::IncrByFloat { key, .. } => key,
        }
    }
}

/// A write to a hash: each creates the hash if needed and deletes it with its last field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashOp {
    /// HSET (replies how many fields are new) and HMSET (`ok`: replies OK); a later pair for
    /// the same field wins.
    Set {
        /// The key.
        key: Bytes,
        /// Fields and values.
        pairs: Vec<(Bytes, Bytes)>,
        /// HMSET's reply.
        ok: bool,
    },
    /// HSETNX: 1 if the field was set, 0 if it had a value.
    SetNx {
        /// The key.
        key: Bytes,
        /// The field.
        field: Bytes,
        /// Its value.
        value: Bytes,
    },
    /// HDEL: how many of the fields were removed.
    Del {
        /// The key.
        key: Bytes,
        /// The fields.
        fields: Vec<Bytes>,
    },
    /// HINCRBY: the field's new value.
    IncrBy {
        /// The key.
        key: Bytes,
        /// The field.
        field: Bytes,
        /// What is added.
        delta: i64,
    },
    /// HINCRBYFLOAT: the field's new value, in C `long double` as Redis computes it.
    IncrByFloat {
        /// The key.
        key: Bytes,
        /// The field.
        field: Bytes,
        /// The increment as given (checked where the command arrived).
        incr: Bytes,
    },
}

/// A write to sets: each creates a set if needed and deletes it with its last member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetOp {
    /// SADD: how many members are new.
    Add {
        /// The key.
        key: Bytes,
        /// The members.
        members: Vec<Bytes>,
    },
    /// SREM: how many members were removed.
    Rem {
        /// The key.
        key: Bytes,
        /// The members.
        members: Vec<Bytes>,
    },
    /// SPOP: one member (no count) or up to `count`, picked by `seed` so that every node
    /// applying the op pops the same ones.
    Pop {
        /// The key.
        key: Bytes,
        /// SPOP's count, if given.
        count: Option<u64>,
        /// Chosen where the command arrived.
        seed: u64,
    },
    /// SMOVE: 1 if the member moved (or is in `src` when `src` is `dst`).
    Move {
        /// The source set.
        src: Bytes,
        /// The destination set.
        dst: Bytes,
        /// The member.
        member: Bytes,
    },
    /// SINTERSTORE, SUNIONSTORE, SDIFFSTORE: the result's size; the result replaces `dst`.
    Store {
        /// Which algebra.
        algebra: SetAlgebra,
        /// The destination.
        dst: Bytes,
        /// The sets read.
        keys: Vec<Bytes>,
    },
}

/// Which set algebra a STORE form computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetAlgebra {
    /// SINTERSTORE: the members every set has.
    Inter,
    /// SUNIONSTORE: the members of any set.
    Union,
    /// SDIFFSTORE: the members of the first set no other has.
    Diff,
}

impl SetOp {
    /// Every key it reads or writes.
    pub fn keys(&self) -> Vec<&Bytes> {
        match self {
            SetOp::Add { key, .. } | SetOp::Rem { key, .. } | SetOp::Pop { key, .. } => vec![key],
            SetOp::Move { src, dst, .. } => vec![src, dst],
            SetOp::Store { dst, keys, .. } => std::iter::once(dst).chain(keys).collect(),
        }
    }
}

/// A change of the store catalog: it runs alone, and reads of the published state see the new
/// catalog once it is durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreOp {
    /// Creates a store whose version 1 is empty.
    Create {
        /// Its name.
        name: String,
        /// The key prefix it owns.
        prefix: Bytes,
        /// How far back streamed writes are replayed onto a push, ms.
        rewind_ms: u64,
        /// Its settings; one left out takes its default.
        settings: StoreSettings,
    },
    /// Changes the settings `settings` sets; the others are kept.
    Configure {
        /// Its name.
        name: String,
        /// The settings changed.
        settings: StoreSettings,
    },
    /// Deletes a store (its keys return to the default store, its data is removed later).
    Delete {
        /// Its name.
        name: String,
    },
    /// Makes a kept older version current again: `to`, or without it the newest older one
    /// (the versions left stay kept, newer than the current one, until
    /// [`StoreOp::RetireLeft`] retires them); `to` naming the current version changes nothing.
    Rollback {
        /// Its name.
        name: String,
        /// The version to go back to, if the caller names it.
        to: Option<u32>,
    },
    /// Retires the versions a rollback left (kept, newer than the current one) up to
    /// `version`, once reads route to the version rolled back to; nothing if none is kept.
    RetireLeft {
        /// The store.
        name: String,
        /// The version that was current before the rollback.
        version: u32,
    },
    /// Records the start of a push: the store's next version number is taken.
    PushBegin {
        /// The store.
        store: String,
    },
    /// Ends a push: with `swap`, the streamed writes from real-time log entry `from` on are
    /// replayed onto the new version, which becomes current; without, the pushed version is
    /// retired.
    PushEnd {
        /// The store.
        store: String,
        /// The new version and the first real-time log entry still to replay.
        swap: Option<(VersionInfo, u64)>,
    },
}

/// A change of one partition's stores (cluster mode). Each is idempotent — applied again, or
/// after the partition already moved past it, it changes nothing — because a partition's
/// master drives its partition towards the cluster's catalog and may send a change twice
/// across a failover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartStoreOp {
    /// Creates the store in the partition, its version 1 empty.
    Create {
        /// Its name.
        name: String,
        /// Its id, the same in every partition.
        id: u32,
        /// The key prefix it owns.
        prefix: Bytes,
        /// When the cluster's catalog created it, Unix ms.
        created_ms: i64,
        /// Its settings; one left out takes its default.
        settings: StoreSettings,
    },
    /// Changes the settings `settings` sets in the partition; the others are kept.
    Configure {
        /// Its name.
        name: String,
        /// Its id.
        id: u32,
        /// The settings changed.
        settings: StoreSettings,
    },
    /// Deletes the store from the partition (its keys there return to the default store).
    Delete {
        /// Its name.
        name: String,
        /// Its id: a later store of the same name is not deleted.
        id: u32,
    },
    /// Begins the partition's part of a push: its streamed writes to the store are kept for
    /// replay onto `version` from here on.
    PushBegin {
        /// The store.
        name: String,
        /// Its id.
        id: u32,
        /// The version being pushed.
        version: u32,
        /// When the push began, Unix ms.
        started_ms: i64,
    },
    /// Ends the partition's part of a push: with `swap`, the streamed writes kept since its
    /// begin are replayed onto `version`, which becomes current (every replica of the
    /// partition switches at this record's offset); without, the version is retired.
    PushEnd {
        /// The store.
        name: String,
        /// Its id.
        id: u32,
        /// The version pushed.
        version: u32,
        /// The version's figures when it is swapped in.
        swap: Option<VersionInfo>,
    },
    /// Makes `to`, a kept older version of the partition's, current again and retires the
    /// versions left (the current one and the kept ones newer than `to`).
    Rollback {
        /// The store.
        name: String,
        /// Its id.
        id: u32,
        /// The version to go back to.
        to: u32,
    },
}

/// A function library as stored: its name, the names of the functions it registers (checked
/// against the other libraries' at apply), and its code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibrarySource {
    /// The library's name.
    pub name: String,
    /// The functions it registers.
    pub functions: Vec<String>,
    /// Its code, metadata line included.
    pub code: Bytes,
}

/// What FUNCTION RESTORE does with the libraries already stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestorePolicy {
    /// Keep them; a library of the same name is an error.
    Append,
    /// Replace those of the same names.
    Replace,
    /// Delete them all first.
    Flush,
}

/// A change to the stored function libraries. Libraries live with the data (they survive a
/// restart, unlike the script cache) and are not touched by FLUSHALL, as in Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LibraryOp {
    /// Stores a library: refused if one of that name exists (unless `replace`) or if another
    /// library registers one of its functions.
    Put {
        /// The library.
        lib: LibrarySource,
        /// REPLACE: a library of that name is replaced.
        replace: bool,
    },
    /// Deletes a library.
    Delete {
        /// Its name.
        name: String,
    },
    /// Deletes every library.
    Flush,
    /// Stores several libraries at once, as `policy` says.
    Restore {
        /// The libraries.
        libs: Vec<LibrarySource>,
        /// What happens to those already stored.
        policy: RestorePolicy,
    },
}

impl Op {
    /// An op on database `db` at `now_ms`.
    pub fn new(db: u8, now_ms: i64, kind: OpKind) -> Op {
        Op { db, now_ms, kind }
    }

    /// Whether the op changes the store catalog.
    pub fn changes_catalog(&self) -> bool {
        matches!(self.kind, OpKind::Store(_))
    }
}

/// What SORT and SORT_RO compute: the options of Redis's `sortCommandGeneric`, parsed and
/// checked where the command arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortSpec {
    /// The list, set or sorted set sorted.
    pub key: Bytes,
    /// What the elements are ordered by.
    pub by: SortBy,
    /// LIMIT's offset and count as given (no LIMIT: 0 and -1); clamped at run time as Redis
    /// clamps them.
    pub offset: i64,
    pub count: i64,
    /// GET patterns, in order (none: the elements themselves).
    pub gets: Vec<Bytes>,
    /// DESC.
    pub desc: bool,
    /// ALPHA: byte order instead of numbers.
    pub alpha: bool,
}

/// What SORT orders by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SortBy {
    /// The elements themselves (no BY).
    Element,
    /// The values a BY pattern with a `*` names (the last BY given).
    Pattern(Bytes),
    /// Nothing: a BY pattern without `*` was given, so the stored order is kept.
    NoSort,
}

/// SORT with STORE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortStore {
    /// The list written.
    pub dst: Bytes,
    /// The sort.
    pub sort: SortSpec,
}
