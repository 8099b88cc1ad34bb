//! Server side: decoding client requests as Redis 7 does (`processInputBuffer`,
//! `processMultibulkBuffer`, `processInlineBuffer` in `networking.c`).
//!
//! A request starting with `*` is a multibulk: `*<n>\r\n` then `n` times `$<len>\r\n<bytes>\r\n`.
//! Anything else is an inline request: one line ended by `\n` (a `\r` before it is dropped),
//! split like `sdssplitargs` (see `inline.rs`). Requests with no arguments (`*0`, `*-1`, any
//! negative count, a blank line) are skipped, as Redis skips them.
//!
//! Quirks kept because Redis has them and a client may depend on what Redis accepts:
//! - A `*<n>` or `$<n>` line ends at its first `\r`; the byte after it is skipped unchecked.
//! - The two bytes after a bulk's data are skipped unchecked (`$3\r\nfooXY` reads `foo`).
//! - Redis finds line ends with `strchr`, which stops at a NUL byte. So a NUL before the end of
//!   a line means the end is never found: the request waits for more bytes until the buffer
//!   exceeds [`Limits::max_inline_len`], then fails with the matching "too big" error.

use std::mem;

use bytes::{Buf, Bytes, BytesMut};

use crate::error::ProtocolError;
use crate::inline::split_args;
use crate::limits::{reserve_for_bulk, Limits, BIG_BULK};
use crate::num::parse_redis_int;

/// Never preallocate more argument slots than this for a claimed count; the vector grows with
/// the arguments that actually arrive. 256 slots are 8 KiB.
const ARGS_PREALLOC_MAX: usize = 256;

/// One client command: its arguments, the command name first. Never empty when it comes from
/// [`RequestDecoder`].
///
/// Arguments of a multibulk request (and unquoted inline ones) are slices of the connection's
/// read buffer, so they keep that buffer's allocation alive; copy an argument
/// (`Bytes::copy_from_slice`) before storing it for long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    args: Vec<Bytes>,
    inline: bool,
}

impl Request {
    /// A multibulk request with these arguments (client side, or tests).
    pub fn new(args: Vec<Bytes>) -> Self {
        Request {
            args,
            inline: false,
        }
    }

    /// The arguments, the command name first.
    pub fn args(&self) -> &[Bytes] {
        &self.args
    }

    /// Takes the arguments.
    pub fn into_args(self) -> Vec<Bytes> {
        self.args
    }

    /// Whether the request came in the inline form (Redis refuses inline requests from a
    /// replication master, for example).
    pub fn is_inline(&self) -> bool {
        self.inline
    }

    /// Appends this request as a multibulk array, as clients send it.
    pub fn encode(&self, buf: &mut BytesMut) {
        crate::encode::write_request(buf, &self.args);
    }
}

/// Where a line's terminator was looked for.
enum LineEnd {
    /// At this index of the buffer.
    At(usize),
    /// Not in the buffer; it may still come.
    Missing,
    /// A NUL comes first, so (as with Redis's `strchr`) it will never be found.
    BehindNul,
}

/// Incremental decoder of one connection's requests.
///
/// Call [`decode`](Self::decode) after every read with the connection's read buffer; it removes
/// each request's bytes from the front of the buffer as it parses them. Between calls it
/// remembers the multibulk element count still expected, the length of the bulk being read and
/// the arguments read so far, so each byte is examined once however the request is split into
/// reads (Redis keeps `multibulklen` and `bulklen` for the same reason).
///
/// The result depends only on the bytes, never on how they were split into reads.
#[derive(Debug, Clone)]
pub struct RequestDecoder {
    limits: Limits,
    pre_auth: bool,
    /// Elements of the current multibulk request still to read; 0 between requests.
    pending: usize,
    /// Length of the bulk whose `$<len>` line is consumed but whose data is not.
    bulk_len: Option<usize>,
    /// Arguments read so far of the current multibulk request.
    args: Vec<Bytes>,
    /// How much of the buffer's front was already searched for the current line's end.
    scanned: usize,
    /// Set by the first error; every later call returns it.
    failed: Option<ProtocolError>,
}

impl Default for RequestDecoder {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

impl RequestDecoder {
    /// A decoder for a new connection, not in pre-authentication mode.
    pub fn new(limits: Limits) -> Self {
        RequestDecoder {
            limits,
            pre_auth: false,
            pending: 0,
            bulk_len: None,
            args: Vec::new(),
            scanned: 0,
            failed: None,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Replaces the limits; they apply from the next line read.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Turns pre-authentication mode on or off. While on, requests are held to
    /// [`Limits::pre_auth_max_multibulk_len`] and [`Limits::pre_auth_max_bulk_len`], as Redis
    /// holds a client that must authenticate and has not. Turn it off once `AUTH` or `HELLO`
    /// succeeds; since `decode` returns one request at a time, the next request is already
    /// parsed with the new setting.
    pub fn set_pre_auth(&mut self, on: bool) {
        self.pre_auth = on;
    }

    /// Whether pre-authentication mode is on.
    pub fn pre_auth(&self) -> bool {
        self.pre_auth
    }

    /// Whether a multibulk request is partly consumed from the buffer. When the client closes,
    /// `in_request() || !buf.is_empty()` tells that it stopped mid-request.
    pub fn in_request(&self) -> bool {
        self.pending > 0
    }

    /// Decodes the next request from the front of `buf`.
    ///
    /// Returns `Ok(None)` when `buf` holds no complete request yet (what was parsed is kept;
    /// call again with more bytes appended). On `Err` the server should send
    /// [`ProtocolError::write_reply`] and close the connection, as Redis does; later calls
    /// return the same error, and what is left in `buf` is unspecified.
    ///
    /// When a bulk of 32 KiB or more is announced, room for it is reserved in `buf` (see
    /// [`Limits::max_bulk_prealloc`]) so that the bulk arrives contiguously.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Request>, ProtocolError> {
        if let Some(err) = self.failed {
            return Err(err);
        }
        let result = self.decode_inner(buf);
        if let Err(err) = result {
            self.failed = Some(err);
            self.pending = 0;
            self.bulk_len = None;
            self.args = Vec::new();
        }
        result
    }

    fn decode_inner(&mut self, buf: &mut BytesMut) -> Result<Option<Request>, ProtocolError> {
        loop {
            if self.pending == 0 {
                let Some(&first) = buf.first() else {
                    return Ok(None);
                };
                if first == b'*' {
                    match self.read_count(buf)? {
                        None => return Ok(None),
                        Some(0) => continue,
                        Some(n) => {
                            self.pending = n;
                            // Each element takes at least 6 bytes (`$0\r\n\r\n`).
                            let cap = n.min(1 + buf.len() / 6).min(ARGS_PREALLOC_MAX);
                            self.args = Vec::with_capacity(cap);
                        }
                    }
                } else {
                    match self.read_inline(buf)? {
                        None => return Ok(None),
                        Some(args) if args.is_empty() => continue,
                        Some(args) => return Ok(Some(Request { args, inline: true })),
                    }
                }
            }
            while self.pending > 0 {
                let len = match self.bulk_len {
                    Some(len) => len,
                    None => match self.read_bulk_len(buf)? {
                        None => return Ok(None),
                        Some(len) => {
                            self.bulk_len = Some(len);
                            len
                        }
                    },
                };
                let need = len.saturating_add(2);
                if buf.len() < need {
                    if len >= BIG_BULK {
                        reserve_for_bulk(buf, need, self.limits.max_bulk_prealloc);
                    }
                    return Ok(None);
                }
                let arg = buf.split_to(len).freeze();
                buf.advance(2);
                self.args.push(arg);
                self.pending -= 1;
                self.bulk_len = None;
            }
            let args = mem::take(&mut self.args);
            return Ok(Some(Request {
                args,
                inline: false,
            }));
        }
    }

    /// Finds the end of the line at the front of `buf`: the first `term`, unless a NUL comes
    /// first. Remembers how far it looked, so a line arriving in pieces is scanned once.
    fn find_line_end(&mut self, buf: &[u8], term: u8) -> LineEnd {
        let from = self.scanned.min(buf.len());
        let rest = buf.get(from..).unwrap_or_default();
        match rest.iter().position(|&b| b == term || b == 0) {
            Some(i) => {
                self.scanned = from + i;
                if rest.get(i) == Some(&term) {
                    LineEnd::At(from + i)
                } else {
                    LineEnd::BehindNul
                }
            }
            None => {
                self.scanned = buf.len();
                LineEnd::Missing
            }
        }
    }

    /// Finds a `\r`-terminated line (`*<n>` or `$<n>`) and returns its length, or `None` to
    /// wait for more bytes. Fails with `too_big` when the line is longer than the inline limit,
    /// or could only end past it.
    fn find_header_line(
        &mut self,
        buf: &[u8],
        too_big: ProtocolError,
    ) -> Result<Option<usize>, ProtocolError> {
        match self.find_line_end(buf, b'\r') {
            LineEnd::At(i) if i > self.limits.max_inline_len => Err(too_big),
            // Redis wants one more byte after the `\r` and skips it without looking.
            LineEnd::At(i) if i + 2 <= buf.len() => Ok(Some(i)),
            LineEnd::At(_) => Ok(None),
            LineEnd::Missing | LineEnd::BehindNul if buf.len() > self.limits.max_inline_len => {
                Err(too_big)
            }
            LineEnd::Missing | LineEnd::BehindNul => Ok(None),
        }
    }

    /// Reads `*<n>\r\n`. Returns the element count, 0 for a request to skip.
    fn read_count(&mut self, buf: &mut BytesMut) -> Result<Option<usize>, ProtocolError> {
        let Some(end) = self.find_header_line(buf, ProtocolError::TooBigMultibulkCountString)?
        else {
            return Ok(None);
        };
        let digits = buf.get(1..end).unwrap_or_default();
        let count = match parse_redis_int(digits) {
            Some(n) if n <= i64::from(i32::MAX) => n,
            _ => return Err(ProtocolError::InvalidMultibulkLength),
        };
        if self.pre_auth && count > as_i64(self.limits.pre_auth_max_multibulk_len) {
            return Err(ProtocolError::UnauthenticatedMultibulkLength);
        }
        if count > as_i64(self.limits.max_multibulk_len) {
            return Err(ProtocolError::InvalidMultibulkLength);
        }
        buf.advance(end + 2);
        self.scanned = 0;
        Ok(Some(usize::try_from(count).unwrap_or(0)))
    }

    /// Reads `$<len>\r\n`.
    fn read_bulk_len(&mut self, buf: &mut BytesMut) -> Result<Option<usize>, ProtocolError> {
        let Some(end) = self.find_header_line(buf, ProtocolError::TooBigBulkCountString)? else {
            return Ok(None);
        };
        match buf.first() {
            Some(b'$') => {}
            Some(&other) => return Err(ProtocolError::ExpectedDollar(other)),
            None => return Ok(None),
        }
        let digits = buf.get(1..end).unwrap_or_default();
        let len = match parse_redis_int(digits) {
            Some(n) if n >= 0 && n <= as_i64(self.limits.max_bulk_len) => n,
            _ => return Err(ProtocolError::InvalidBulkLength),
        };
        if self.pre_auth && len > as_i64(self.limits.pre_auth_max_bulk_len) {
            return Err(ProtocolError::UnauthenticatedBulkLength);
        }
        buf.advance(end + 2);
        self.scanned = 0;
        Ok(Some(usize::try_from(len).unwrap_or(usize::MAX)))
    }

    /// Reads one inline line and splits it. An empty vector means a blank line.
    fn read_inline(&mut self, buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        let newline = match self.find_line_end(buf, b'\n') {
            LineEnd::At(i) if i > self.limits.max_inline_len => {
                return Err(ProtocolError::TooBigInlineRequest)
            }
            LineEnd::At(i) => i,
            LineEnd::Missing | LineEnd::BehindNul => {
                if buf.len() > self.limits.max_inline_len {
                    return Err(ProtocolError::TooBigInlineRequest);
                }
                return Ok(None);
            }
        };
        let line_len = match newline.checked_sub(1) {
            Some(cr) if buf.get(cr) == Some(&b'\r') => cr,
            _ => newline,
        };
        let line = buf.split_to(newline + 1).freeze().slice(..line_len);
        self.scanned = 0;
        split_args(&line)
            .map(Some)
            .ok_or(ProtocolError::UnbalancedQuotes)
    }
}

fn as_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
