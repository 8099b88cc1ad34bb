//! What keyspace operations fail with. No wire text here: the server turns each variant into
//! Redis's error reply, the command-line tools into one readable line.

use crate::layout::CorruptRecord;
use crate::stores::StoreError;

/// Why a command's read or write failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The key holds another kind of value than the command works on.
    #[error("the key holds the wrong kind of value")]
    WrongType,
    /// A hash field's value is not an integer (HINCRBY).
    #[error("hash value is not an integer")]
    HashNotInteger,
    /// A hash field's value is not a float (HINCRBYFLOAT).
    #[error("hash value is not a float")]
    HashNotFloat,
    /// A sorted-set increment made a score NaN (`inf` plus `-inf`).
    #[error("resulting score is not a number")]
    ScoreNaN,
    /// An option of the command is unknown or misplaced (found only after the keys were
    /// checked, as Redis finds it).
    #[error("syntax error")]
    Syntax,
    /// A weight of ZUNIONSTORE or ZINTERSTORE is not a float.
    #[error("weight value is not a float")]
    WeightNotFloat,
    /// A weight SORT reads (an element, or the value a BY pattern names) is not a number.
    #[error("one or more scores can't be converted into double")]
    SortWeightNotDouble,
    /// A stored value is not an integer (or an argument is out of range).
    #[error("value is not an integer or out of range")]
    NotInteger,
    /// A stored value or an increment is not a float.
    #[error("value is not a valid float")]
    NotFloat,
    /// An integer increment would overflow.
    #[error("increment or decrement would overflow")]
    Overflow,
    /// A float increment would produce NaN or an infinity.
    #[error("increment would produce NaN or Infinity")]
    NanOrInfinity,
    /// A float result too long to format.
    #[error("value is too long to format")]
    FloatTooLong,
    /// A key longer than [`crate::MAX_USER_KEY_LEN`].
    #[error("key is {len} bytes, longer than the limit of {max} bytes")]
    KeyTooLong {
        /// The key's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A value (or the result of APPEND, SETRANGE) longer than [`crate::MAX_USER_VALUE_LEN`].
    #[error("string exceeds the maximum allowed size")]
    ValueTooLong,
    /// The key a command needs does not exist (RENAME).
    #[error("no such key")]
    NoSuchKey,
    /// SWAPDB of database 0 while it holds stores (they stay with database 0's number), or a
    /// store created while database 0 is swapped.
    #[error("database 0 holds stores: it cannot be swapped, nor stores created while it is")]
    StoresPinDatabaseZero,
    /// A geospatial request was refused.
    #[error(transparent)]
    Geo(#[from] GeoError),
    /// A stream command was refused.
    #[error(transparent)]
    Stream(#[from] StreamError),
    /// An element index past either end of a list (LSET).
    #[error("index out of range")]
    IndexOutOfRange,
    /// An expiry time given to `command` is out of range (checked only once the key exists,
    /// as Redis does for GETEX).
    #[error("invalid expire time in '{command}' command")]
    InvalidExpire {
        /// The command, lowercase.
        command: &'static str,
    },
    /// A stored record does not decode: the database holds something this version did not
    /// write. Never returned as a value.
    #[error(transparent)]
    Corrupt(#[from] CorruptRecord),
    /// A store operation failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The engine failed (I/O, read-only after a failed sync, closed).
    #[error(transparent)]
    Engine(#[from] rialto_engine::Error),
    /// A function library change was refused.
    #[error(transparent)]
    Library(#[from] LibraryError),
    /// An operation's bytes do not decode (see [`crate::Op::decode`]).
    #[error("operation does not decode: {0}")]
    BadOp(&'static str),
    /// RESTORE without REPLACE onto a key that exists.
    #[error("target key name already exists")]
    BusyKey,
    /// RESTORE's TTL is negative.
    #[error("invalid TTL value, must be >= 0")]
    NegativeTtl,
    /// RESTORE's payload was refused.
    #[error(transparent)]
    Payload(#[from] crate::rdb::PayloadError),
    /// A HyperLogLog command refused the value or the request.
    #[error(transparent)]
    Hll(#[from] crate::hll::HllError),
    /// A replicated log's stored position does not decode.
    #[error("a stored log state is damaged")]
    CorruptLogState,
}

/// Result of keyspace operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a geospatial request is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GeoError {
    #[error("invalid longitude,latitude pair {0:.6},{1:.6}")]
    BadPosition(f64, f64),
    #[error("unsupported unit provided. please use M, KM, FT, MI")]
    BadUnit,
    /// The radius, width or height is not a float.
    #[error("need numeric {0}")]
    NotNumeric(&'static str),
    #[error("radius cannot be negative")]
    NegativeRadius,
    #[error("height or width cannot be negative")]
    NegativeBox,
    #[error("COUNT must be > 0")]
    CountNotPositive,
    /// STORE or STOREDIST (GEOSEARCHSTORE: `search_store`) with a WITH option.
    #[error(
        "{} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
        if *search_store { "GEOSEARCHSTORE" } else { "STORE option in GEORADIUS" }
    )]
    StoreWithOptions { search_store: bool },
    /// GEOSEARCH without FROMMEMBER or FROMLONLAT (the command's name as sent).
    #[error("exactly one of FROMMEMBER or FROMLONLAT can be specified for {0}")]
    NoCentre(String),
    /// GEOSEARCH without BYRADIUS or BYBOX.
    #[error("exactly one of BYRADIUS and BYBOX can be specified for {0}")]
    NoShape(String),
    #[error("the ANY argument requires COUNT argument")]
    AnyWithoutCount,
    /// A search around a member that the sorted set does not hold.
    #[error("could not decode requested zset member")]
    MemberMissing,
}

/// Which of Redis's texts a missing consumer group is reported with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoGroupForm {
    /// XREADGROUP's.
    ReadGroup,
    /// XPENDING's, XCLAIM's and XAUTOCLAIM's: no such key or group.
    KeyOrGroup,
    /// XGROUP's and XINFO CONSUMERS': no such group for the key.
    ForKey,
}

/// Why a stream command is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// An id argument does not parse.
    #[error("invalid stream id")]
    InvalidId,
    /// XADD's id is not above the stream's last id.
    #[error("the id is not greater than the stream's last id")]
    IdNotGreater,
    /// XADD's explicit id is 0-0.
    #[error("the id must be greater than 0-0")]
    IdZero,
    /// The last id is the greatest there is.
    #[error("the stream has exhausted the last possible id")]
    Exhausted,
    /// An entry's fields and values exceed a node's limit (1 GiB).
    #[error("the entry is too large")]
    TooLarge,
    /// No such key or consumer group.
    #[error("no consumer group {group:?} for key {key:?}")]
    NoGroup {
        key: bytes::Bytes,
        group: bytes::Bytes,
        form: NoGroupForm,
    },
    /// XGROUP CREATE of a group that exists.
    #[error("the consumer group exists")]
    GroupExists,
    /// XGROUP on a missing key without MKSTREAM.
    #[error("the key does not exist")]
    GroupNeedsKey,
    /// XSETID below the last live entry.
    #[error("the id is below the stream's top entry")]
    SetIdBelowTop,
    /// XSETID's ENTRIESADDED below the stream's length.
    #[error("entries added is below the stream's length")]
    EntriesAddedBelowLength,
    /// `$` given to XREADGROUP.
    #[error("$ is meaningless for XREADGROUP")]
    DollarInReadGroup,
    /// `>` given to XREAD.
    #[error("> is only for XREADGROUP")]
    GreaterInRead,
    /// A blocked XREADGROUP's group was removed.
    #[error("the consumer group waited on no longer exists")]
    GroupGone,
    /// A blocked XREADGROUP's stream was removed or replaced.
    #[error("the stream waited on no longer exists")]
    KeyGone,
    /// Streams are not kept under a store's prefix.
    #[error("streams cannot be kept under a store's prefix")]
    UnderStore,
    /// An XCLAIM integer option (`what`: min-idle-time, IDLE, TIME, RETRYCOUNT) is no
    /// integer.
    #[error("invalid {0} argument for XCLAIM")]
    ClaimInteger(&'static str),
    /// An XCLAIM option that is none.
    #[error("unrecognized XCLAIM option")]
    ClaimOption(bytes::Bytes),
}

/// Why a change to the function libraries was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LibraryError {
    /// A library of that name exists (and the change does not replace it).
    #[error("library '{0}' already exists")]
    Exists(String),
    /// A restored library has the name of one that exists (FUNCTION RESTORE APPEND).
    #[error("library {0} already exists")]
    RestoredExists(String),
    /// No library of that name.
    #[error("library not found")]
    NotFound,
    /// Another library registers a function of that name.
    #[error("function {0} already exists")]
    FunctionExists(String),
}
