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
}
