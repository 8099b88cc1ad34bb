//! Errors of the two decoders.

use bytes::{BufMut, BytesMut};
use thiserror::Error;

/// Why a client's request stream was refused.
///
/// `Display` is exactly the text Redis 7 puts after `-ERR ` (see `processMultibulkBuffer` and
/// `processInlineBuffer` in Redis's `networking.c`); [`write_reply`](Self::write_reply) writes the
/// whole error reply. Like Redis, a server must send that reply and then close the connection:
/// the stream has no reliable point to resume at. The decoder keeps returning the same error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// `*<n>` where `n` is not a Redis integer (`string2ll`), is above `INT_MAX`, or is above
    /// [`Limits::max_multibulk_len`](crate::Limits::max_multibulk_len).
    #[error("Protocol error: invalid multibulk length")]
    InvalidMultibulkLength,
    /// `$<n>` where `n` is not a Redis integer, is negative, or is above
    /// [`Limits::max_bulk_len`](crate::Limits::max_bulk_len).
    #[error("Protocol error: invalid bulk length")]
    InvalidBulkLength,
    /// An element of a multibulk request does not start with `$` (nested arrays included).
    /// Carries the byte Redis prints with `%c`.
    #[error("Protocol error: expected '$', got '{}'", shown_byte(*.0))]
    ExpectedDollar(u8),
    /// The `*<n>` line is longer than [`Limits::max_inline_len`](crate::Limits::max_inline_len).
    #[error("Protocol error: too big mbulk count string")]
    TooBigMultibulkCountString,
    /// A `$<n>` line is longer than [`Limits::max_inline_len`](crate::Limits::max_inline_len).
    #[error("Protocol error: too big bulk count string")]
    TooBigBulkCountString,
    /// An inline request line is longer than
    /// [`Limits::max_inline_len`](crate::Limits::max_inline_len).
    #[error("Protocol error: too big inline request")]
    TooBigInlineRequest,
    /// An inline request has an unterminated quote, or a closing quote followed by something
    /// other than a space.
    #[error("Protocol error: unbalanced quotes in request")]
    UnbalancedQuotes,
    /// Before authentication, `*<n>` above
    /// [`Limits::pre_auth_max_multibulk_len`](crate::Limits::pre_auth_max_multibulk_len).
    #[error("Protocol error: unauthenticated multibulk length")]
    UnauthenticatedMultibulkLength,
    /// Before authentication, `$<n>` above
    /// [`Limits::pre_auth_max_bulk_len`](crate::Limits::pre_auth_max_bulk_len).
    #[error("Protocol error: unauthenticated bulk length")]
    UnauthenticatedBulkLength,
}

impl ProtocolError {
    /// Appends the reply Redis 7 sends for this error, `-ERR <Display>\r\n` (the same in RESP2
    /// and RESP3).
    ///
    /// For [`ExpectedDollar`](Self::ExpectedDollar) the offending byte is written raw, as Redis
    /// does, except that `\r` and `\n` become spaces (Redis's `addReplyErrorFormat`); `Display`
    /// shows a byte above 0x7f as the Latin-1 character instead.
    pub fn write_reply(&self, buf: &mut BytesMut) {
        buf.extend_from_slice(b"-ERR ");
        match *self {
            ProtocolError::ExpectedDollar(got) => {
                buf.extend_from_slice(b"Protocol error: expected '$', got '");
                buf.put_u8(sanitized_byte(got));
                buf.put_u8(b'\'');
            }
            _ => buf.extend_from_slice(self.to_string().as_bytes()),
        }
        buf.extend_from_slice(b"\r\n");
    }
}

fn sanitized_byte(b: u8) -> u8 {
    if b == b'\r' || b == b'\n' {
        b' '
    } else {
        b
    }
}

fn shown_byte(b: u8) -> char {
    char::from(sanitized_byte(b))
}

/// Why a reply stream (client side) could not be decoded. After one, the decoder keeps returning
/// it: the stream has no reliable point to resume at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ReplyDecodeError {
    /// The first byte of a value is not a RESP2 or RESP3 type.
    #[error("invalid RESP type byte 0x{0:02x}")]
    InvalidType(u8),
    /// A length is not `-1` (where allowed), a decimal number, or `?` (where streaming is
    /// supported).
    #[error("invalid length")]
    InvalidLength,
    /// An integer reply is not a decimal `i64`.
    #[error("invalid integer")]
    InvalidInteger,
    /// A double reply does not parse as a float.
    #[error("invalid double")]
    InvalidDouble,
    /// A boolean reply is not `#t` or `#f`.
    #[error("invalid boolean")]
    InvalidBoolean,
    /// A big number reply is not an optionally signed run of digits.
    #[error("invalid big number")]
    InvalidBigNumber,
    /// A null reply (`_`) has trailing bytes before its CRLF.
    #[error("invalid null")]
    InvalidNull,
    /// A verbatim string is shorter than 4 bytes or lacks the `:` after its format.
    #[error("invalid verbatim string")]
    InvalidVerbatim,
    /// A line's `\r` is not followed by `\n`, or a bulk's data is not followed by CRLF.
    #[error("missing CRLF")]
    MissingCrlf,
    /// A line is longer than [`ReplyLimits::max_line_len`](crate::ReplyLimits::max_line_len).
    #[error("line too long")]
    LineTooLong,
    /// A bulk is longer than [`ReplyLimits::max_bulk_len`](crate::ReplyLimits::max_bulk_len).
    #[error("bulk too long")]
    BulkTooLong,
    /// An aggregate claims more than
    /// [`ReplyLimits::max_aggregate_len`](crate::ReplyLimits::max_aggregate_len) elements.
    #[error("aggregate too long")]
    AggregateTooLong,
    /// Aggregates nest deeper than [`ReplyLimits::max_depth`](crate::ReplyLimits::max_depth).
    #[error("aggregates nested too deep")]
    TooDeep,
    /// A `.` end marker outside a streamed aggregate, or a streamed map with an odd number of
    /// elements.
    #[error("unexpected end of streamed aggregate")]
    UnexpectedEnd,
}
