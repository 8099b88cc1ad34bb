//! The Redis protocol (RESP2 and RESP3) for Rialto, with no I/O: every function works on a
//! [`BytesMut`] that the caller reads into or writes out.
//!
//! Server side:
//! - [`RequestDecoder`] turns a connection's read buffer into [`Request`]s exactly as Redis 7
//!   does (multibulk and inline forms, the same limits, the same `-ERR Protocol error: ...`
//!   texts in [`ProtocolError`]). It is incremental: it keeps its place inside a partly received
//!   request, so a large request arriving in many reads is scanned once.
//! - [`Reply`] and the `write_*` helpers encode replies for a [`Protocol`], downgrading RESP3
//!   types for RESP2 clients the way Redis's `addReply*` functions do.
//!
//! Client side (tools and tests): [`write_request`] and [`ReplyDecoder`].
//!
//! Incomplete input is not an error: decoders return `Ok(None)` and keep what they consumed.
//! No input makes any function here panic, and memory use is bounded by the bytes received
//! times a small constant plus the preallocation caps in [`Limits`] and [`ReplyLimits`].
//!
//! [`BytesMut`]: bytes::BytesMut

#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![warn(missing_docs)]

mod decode;
mod encode;
mod error;
mod inline;
mod limits;
mod num;
mod reply;
mod request;

pub use decode::ReplyDecoder;
pub use encode::{
    write_array_header, write_attribute_header, write_big_number, write_blob_error, write_bool,
    write_bulk, write_double, write_error, write_human_double, write_int, write_map_header,
    write_null, write_null_array, write_push_header, write_request, write_set_header, write_simple,
    write_verbatim,
};
pub use error::{ProtocolError, ReplyDecodeError};
pub use inline::split_args;
pub use limits::{Limits, ReplyLimits};
pub use num::{format_human_double, parse_redis_int};
pub use reply::{Protocol, Reply};
pub use request::{Request, RequestDecoder};
