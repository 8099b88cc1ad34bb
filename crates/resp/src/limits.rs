//! Size limits of the two decoders. Every limit exists so that a peer cannot make us buffer or
//! allocate without bound; each states its default, why, and what exceeding it does.
//!
//! All fields can be changed at run time with `set_limits` on a decoder; the new values apply
//! from the next line or length the decoder reads.

/// Limits of [`RequestDecoder`](crate::RequestDecoder) (server side). The defaults are
/// Redis 7's, except [`max_multibulk_len`](Self::max_multibulk_len) and
/// [`max_bulk_prealloc`](Self::max_bulk_prealloc) which Redis does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest bulk argument, in bytes. Default 512 MiB, Redis's `proto-max-bulk-len`. A larger
    /// `$<n>` is refused with "invalid bulk length". Raising it lets one argument hold more; the
    /// bytes are buffered in full before the request is returned.
    pub max_bulk_len: usize,
    /// Most elements in one multibulk request. Default 1024 × 1024. Redis accepts up to
    /// `INT_MAX`; a count above this limit (and at most `INT_MAX`) is refused with the same
    /// "invalid multibulk length" Redis gives above `INT_MAX`. Arguments are stored as 32-byte
    /// `Bytes` handles, so the default bounds one request's argument vector at 32 MiB.
    /// Set `i32::MAX as usize` for Redis's exact behaviour.
    pub max_multibulk_len: usize,
    /// Longest line, in bytes: an inline request (the bytes before its `\n`, a `\r` included),
    /// or a `*<n>` or `$<n>` line (the bytes before its `\r`, the `*` or `$` included). Default
    /// 64 KiB, Redis's `PROTO_INLINE_MAX_SIZE`. A longer line is refused with "too big inline
    /// request", "too big mbulk count string" or "too big bulk count string". While a line
    /// cannot end (a NUL came first, see `RequestDecoder`), the limit applies to the whole
    /// buffer.
    ///
    /// Redis checks this only when a read leaves a line without its terminator, so whether it
    /// accepts a line of, say, 70 KiB depends on how the bytes were split into reads. This
    /// decoder answers as Redis does when every byte arrives in its own read, which makes the
    /// answer independent of the split: a line longer than the limit is always refused.
    pub max_inline_len: usize,
    /// Most elements in a multibulk request before authentication. Default 10, as Redis 7.
    /// Above it: "unauthenticated multibulk length". Used while
    /// [`RequestDecoder::set_pre_auth`](crate::RequestDecoder::set_pre_auth) is on.
    pub pre_auth_max_multibulk_len: usize,
    /// Largest bulk argument before authentication, in bytes. Default 16384, as Redis 7. Above
    /// it: "unauthenticated bulk length".
    pub pre_auth_max_bulk_len: usize,
    /// Most bytes reserved in the read buffer ahead of data when a bulk of 32 KiB or more is
    /// announced. Default 1 MiB. Redis reserves the whole announced length at once, so a 15-byte
    /// `$536870912` makes it allocate 512 MiB; here the reservation is at most this much beyond
    /// twice what has arrived, so the buffer grows geometrically with real data and the large
    /// bulk still lands in one contiguous buffer with O(n) copying.
    pub max_bulk_prealloc: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            max_multibulk_len: 1024 * 1024,
            max_inline_len: 64 * 1024,
            pre_auth_max_multibulk_len: 10,
            pre_auth_max_bulk_len: 16384,
            max_bulk_prealloc: 1024 * 1024,
        }
    }
}

/// Limits of [`ReplyDecoder`](crate::ReplyDecoder) (client side). A client trusts its server
/// more than a server trusts its clients, so these are looser; they still keep a broken or
/// hostile peer from making the client allocate without bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyLimits {
    /// Largest bulk, verbatim or blob error, in bytes, and largest total of a streamed string.
    /// Default 512 MiB, the largest value Redis stores.
    pub max_bulk_len: usize,
    /// Most elements an aggregate may claim (a map counts its pairs). Default `i32::MAX`. Memory
    /// does not depend on this: preallocation follows the bytes received, not the claim.
    pub max_aggregate_len: usize,
    /// Deepest nesting of aggregates (attributes count). Default 128; Redis's deepest replies
    /// nest fewer than 10 levels.
    pub max_depth: usize,
    /// Longest line (simple string, error, number, length), counting its type byte but not its
    /// CRLF. Default 1 MiB.
    pub max_line_len: usize,
    /// As [`Limits::max_bulk_prealloc`]. Default 1 MiB.
    pub max_bulk_prealloc: usize,
}

impl Default for ReplyLimits {
    fn default() -> Self {
        ReplyLimits {
            max_bulk_len: 512 * 1024 * 1024,
            max_aggregate_len: i32::MAX as usize,
            max_depth: 128,
            max_line_len: 1024 * 1024,
            max_bulk_prealloc: 1024 * 1024,
        }
    }
}

/// Bulks this large or larger get room reserved once their length is known
/// (Redis's `PROTO_MBULK_BIG_ARG`).
pub(crate) const BIG_BULK: usize = 32 * 1024;

/// Makes room in `buf` for a bulk of which `need` bytes (data and CRLF) are wanted at its front
/// and `buf.len()` have arrived, reserving at most `prealloc_max` more than twice what arrived.
pub(crate) fn reserve_for_bulk(buf: &mut bytes::BytesMut, need: usize, prealloc_max: usize) {
    let have = buf.len();
    if have >= need {
        return;
    }
    let target = need.min(prealloc_max.max(have.saturating_mul(2)));
    if buf.capacity() < target {
        buf.reserve(target - have);
    }
}
