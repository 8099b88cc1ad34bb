//! What a command's execution returns: the content of its reply, independent of the protocol
//! that will carry it.

use bytes::Bytes;

use crate::stores::StoreMeta;

/// The content of a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// Done (`+OK`).
    Ok,
    /// Nothing (a missing key, a refused conditional write).
    Null,
    /// No array (a pop with a count from a missing key).
    NullArray,
    /// An integer.
    Int(i64),
    /// A string.
    Bulk(Bytes),
    /// Set members (SPOP with a count): a RESP3 set.
    Members(Vec<Bytes>),
    /// A store as a catalog change left it.
    Store(Box<StoreMeta>),
    /// Several replies in order (BITFIELD's).
    Array(Vec<Value>),
    /// A sorted-set score (ZADD INCR, ZINCRBY).
    Score(Score),
    /// Members and their scores (ZPOPMIN, ZPOPMAX): `nested` sends them as pairs, else as
    /// one flat list.
    Scored {
        /// Members and scores, in reply order.
        items: Vec<(Bytes, Score)>,
        /// Pairs (a count was given) rather than a flat list.
        nested: bool,
    },
    /// A status line (PFDEBUG ENCODING's `dense`).
    Status(&'static str),
    /// Members and their scores as [member, score] pairs in every protocol (ZMPOP).
    ScoredPairs(Vec<(Bytes, Score)>),
    /// Key-value pairs: a RESP3 map, an array of [key, value] arrays in RESP2 (XREAD's streams).
    Map(Vec<(Value, Value)>),
}

/// A sorted-set score: a double that is never NaN (parsing refuses it, arithmetic that makes
/// one fails), so equality is total.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Score(pub f64);

impl Eq for Score {}
