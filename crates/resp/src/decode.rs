//! Client side: decoding replies, RESP2 and RESP3 (streamed strings and aggregates included).
//!
//! The decoder never recurses: an explicit stack holds the aggregates being filled, and values
//! are consumed from the buffer as they complete. So a reply arriving in many reads is scanned
//! once, and nesting is bounded by [`ReplyLimits::max_depth`] rather than by the thread's stack.

use bytes::{Buf, Bytes, BytesMut};

use crate::error::ReplyDecodeError as E;
use crate::limits::{reserve_for_bulk, ReplyLimits, BIG_BULK};
use crate::num::parse_resp_int;
use crate::reply::Reply;

/// Incremental decoder of one connection's replies.
///
/// Accepts both protocols without being told which: RESP2 is a subset of RESP3 except for its
/// nulls, `$-1` (read as [`Reply::Null`]) and `*-1` (read as [`Reply::NullArray`]).
/// Streamed strings (`$?` and `;` chunks) are read as [`Reply::Bulk`], streamed aggregates
/// (`*?` ... `.`) as their sized forms.
#[derive(Debug, Clone, Default)]
pub struct ReplyDecoder {
    limits: ReplyLimits,
    /// Aggregates being filled, outermost first.
    stack: Vec<Frame>,
    /// A blob whose header is consumed but whose data is not.
    blob: Option<Blob>,
    /// The data so far of a streamed string being collected.
    streamed: Option<Vec<u8>>,
    /// How much of the buffer's front was already searched for the current line's `\r`.
    scanned: usize,
    /// Set by the first error; every later call returns it.
    failed: Option<E>,
}

#[derive(Debug, Clone, Copy)]
enum BlobKind {
    Bulk,
    Verbatim,
    Error,
    /// A chunk of a streamed string.
    Chunk,
}

#[derive(Debug, Clone, Copy)]
struct Blob {
    kind: BlobKind,
    len: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Array,
    Map,
    Set,
    Push,
    Attribute,
}

#[derive(Debug, Clone)]
struct Frame {
    kind: Kind,
    /// Values still expected; `None` for a streamed aggregate, which ends at `.`.
    remaining: Option<usize>,
    items: Vec<Reply>,
}

impl Frame {
    /// The finished aggregate. Map-like frames hold an even number of items (an attribute one
    /// more, its reply), checked by the caller for streamed frames.
    fn finish(self) -> Reply {
        let mut items = self.items;
        match self.kind {
            Kind::Array => Reply::Array(items),
            Kind::Set => Reply::Set(items),
            Kind::Push => Reply::Push(items),
            Kind::Map => Reply::Map(pairs(items)),
            Kind::Attribute => {
                let reply = items.pop().unwrap_or(Reply::Null);
                Reply::Attribute {
                    attrs: pairs(items),
                    reply: Box::new(reply),
                }
            }
        }
    }
}

fn pairs(items: Vec<Reply>) -> Vec<(Reply, Reply)> {
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    out
}

/// What one step of parsing produced.
enum Step {
    Value(Reply),
    Begin(Kind, Option<usize>),
    /// `.`: the end of a streamed aggregate.
    End,
    /// Bytes were consumed (a streamed string's header or chunk) but no value finished.
    Progress,
}

impl ReplyDecoder {
    /// A decoder with these limits.
    pub fn new(limits: ReplyLimits) -> Self {
        ReplyDecoder {
            limits,
            ..Default::default()
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &ReplyLimits {
        &self.limits
    }

    /// Replaces the limits; they apply from the next value read.
    pub fn set_limits(&mut self, limits: ReplyLimits) {
        self.limits = limits;
    }

    /// Whether a reply is partly consumed from the buffer.
    pub fn in_reply(&self) -> bool {
        !self.stack.is_empty() || self.blob.is_some() || self.streamed.is_some()
    }

    /// Decodes the next complete reply from the front of `buf`, removing its bytes.
    ///
    /// Returns `Ok(None)` when more bytes are needed (what was parsed is kept). After an `Err`
    /// the stream is unusable and later calls return the same error.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Reply>, E> {
        if let Some(err) = self.failed {
            return Err(err);
        }
        let result = self.decode_inner(buf);
        if let Err(err) = result {
            self.failed = Some(err);
            self.stack = Vec::new();
            self.blob = None;
            self.streamed = None;
        }
        result
    }

    fn decode_inner(&mut self, buf: &mut BytesMut) -> Result<Option<Reply>, E> {
        loop {
            let Some(step) = self.step(buf)? else {
                return Ok(None);
            };
            let value = match step {
                Step::Value(v) => v,
                Step::Begin(kind, count) => {
                    if self.stack.len() >= self.limits.max_depth {
                        return Err(E::TooDeep);
                    }
                    let remaining = count.map(|n| match kind {
                        Kind::Map => n.saturating_mul(2),
                        Kind::Attribute => n.saturating_mul(2).saturating_add(1),
                        _ => n,
                    });
                    // Every value takes at least 3 bytes (`_\r\n`): preallocate for what the
                    // buffer could hold, not for the claim, less what enclosing aggregates
                    // reserved for the same bytes (else each nesting level would reserve it
                    // again: found by the `resp_decode` fuzz target).
                    let reserved: usize = self.stack.iter().map(|f| f.items.capacity()).sum();
                    let cap = remaining
                        .unwrap_or(0)
                        .min((buf.len() / 3).saturating_sub(reserved))
                        .min(1024);
                    let frame = Frame {
                        kind,
                        remaining,
                        items: Vec::with_capacity(cap),
                    };
                    if remaining == Some(0) {
                        frame.finish()
                    } else {
                        self.stack.push(frame);
                        continue;
                    }
                }
                Step::End => match self.stack.pop() {
                    Some(frame) if frame.remaining.is_none() => {
                        let odd = frame.items.len() % 2 == 1;
                        if matches!(frame.kind, Kind::Map) && odd {
                            return Err(E::UnexpectedEnd);
                        }
                        frame.finish()
                    }
                    _ => return Err(E::UnexpectedEnd),
                },
                Step::Progress => continue,
            };
            if let Some(done) = self.complete(value) {
                return Ok(Some(done));
            }
        }
    }

    /// Adds a finished value to the innermost aggregate, finishing aggregates that become
    /// full. Returns the reply when the outermost one is done.
    fn complete(&mut self, mut value: Reply) -> Option<Reply> {
        loop {
            let Some(top) = self.stack.last_mut() else {
                return Some(value);
            };
            top.items.push(value);
            match &mut top.remaining {
                Some(n) if *n > 1 => {
                    *n -= 1;
                    return None;
                }
                Some(_) => {}
                None => return None,
            }
            value = self.stack.pop()?.finish();
        }
    }

    /// Parses one value or aggregate header from the front of `buf`.
    fn step(&mut self, buf: &mut BytesMut) -> Result<Option<Step>, E> {
        if let Some(blob) = self.blob {
            return self.read_blob(buf, blob);
        }
        let Some(end) = self.find_line(buf)? else {
            return Ok(None);
        };
        let line = buf.split_to(end + 2).freeze();
        self.scanned = 0;
        let kind = line.first().copied().unwrap_or(0);
        let text = line.get(1..end).unwrap_or_default();
        // Zero-copy text of a line value.
        let owned = || line.slice(1..end.max(1));
        if self.streamed.is_some() {
            // Inside a streamed string only `;<len>` chunks may come.
            if kind != b';' {
                return Err(E::InvalidType(kind));
            }
            let len = length(text)?.ok_or(E::InvalidLength)?;
            if len == 0 {
                let data = self.streamed.take().unwrap_or_default();
                return Ok(Some(Step::Value(Reply::Bulk(Bytes::from(data)))));
            }
            return self.start_blob(buf, BlobKind::Chunk, len);
        }
        let step = match kind {
            b'+' => Step::Value(Reply::Simple(owned())),
            b'-' => Step::Value(Reply::Error(owned())),
            b':' => Step::Value(Reply::Integer(
                parse_resp_int(text).ok_or(E::InvalidInteger)?,
            )),
            b',' => Step::Value(Reply::Double(parse_double(text)?)),
            b'#' => Step::Value(Reply::Boolean(match text {
                b"t" => true,
                b"f" => false,
                _ => return Err(E::InvalidBoolean),
            })),
            b'(' => {
                let digits = text.strip_prefix(b"-").unwrap_or(text);
                if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                    return Err(E::InvalidBigNumber);
                }
                Step::Value(Reply::BigNumber(owned()))
            }
            b'_' if text.is_empty() => Step::Value(Reply::Null),
            b'_' => return Err(E::InvalidNull),
            b'.' if text.is_empty() => Step::End,
            b'$' if text == b"?" => {
                self.streamed = Some(Vec::new());
                Step::Progress
            }
            b'$' | b'=' | b'!' => {
                let blob_kind = match kind {
                    b'$' => BlobKind::Bulk,
                    b'=' => BlobKind::Verbatim,
                    _ => BlobKind::Error,
                };
                match length(text)? {
                    Some(len) => return self.start_blob(buf, blob_kind, len),
                    None if kind == b'$' => Step::Value(Reply::Null),
                    None => return Err(E::InvalidLength),
                }
            }
            b'*' | b'%' | b'~' | b'>' | b'|' => {
                let agg = match kind {
                    b'*' => Kind::Array,
                    b'%' => Kind::Map,
                    b'~' => Kind::Set,
                    b'>' => Kind::Push,
                    _ => Kind::Attribute,
                };
                if text == b"?" && agg != Kind::Attribute {
                    Step::Begin(agg, None)
                } else {
                    match length(text)? {
                        Some(n) if n > self.limits.max_aggregate_len => {
                            return Err(E::AggregateTooLong)
                        }
                        Some(n) => Step::Begin(agg, Some(n)),
                        None if agg == Kind::Array => Step::Value(Reply::NullArray),
                        None => return Err(E::InvalidLength),
                    }
                }
            }
            other => return Err(E::InvalidType(other)),
        };
        Ok(Some(step))
    }

    /// Finds the `\r\n` ending the line at the front of `buf`; returns the index of `\r`.
    fn find_line(&mut self, buf: &[u8]) -> Result<Option<usize>, E> {
        let from = self.scanned.min(buf.len());
        let rest = buf.get(from..).unwrap_or_default();
        match rest.iter().position(|&b| b == b'\r') {
            Some(i) => {
                let cr = from + i;
                self.scanned = cr;
                if cr > self.limits.max_line_len {
                    return Err(E::LineTooLong);
                }
                match buf.get(cr + 1) {
                    None => Ok(None),
                    Some(b'\n') => Ok(Some(cr)),
                    Some(_) => Err(E::MissingCrlf),
                }
            }
            None => {
                self.scanned = buf.len();
                if buf.len() > self.limits.max_line_len {
                    return Err(E::LineTooLong);
                }
                Ok(None)
            }
        }
    }

    fn start_blob(
        &mut self,
        buf: &mut BytesMut,
        kind: BlobKind,
        len: usize,
    ) -> Result<Option<Step>, E> {
        let collected = self.streamed.as_ref().map_or(0, Vec::len);
        if len > self.limits.max_bulk_len.saturating_sub(collected) {
            return Err(E::BulkTooLong);
        }
        let blob = Blob { kind, len };
        self.blob = Some(blob);
        self.read_blob(buf, blob)
    }

    fn read_blob(&mut self, buf: &mut BytesMut, blob: Blob) -> Result<Option<Step>, E> {
        let need = blob.len.saturating_add(2);
        if buf.len() < need {
            if blob.len >= BIG_BULK {
                reserve_for_bulk(buf, need, self.limits.max_bulk_prealloc);
            }
            return Ok(None);
        }
        if buf.get(blob.len..need) != Some(b"\r\n") {
            return Err(E::MissingCrlf);
        }
        let data = buf.split_to(blob.len).freeze();
        buf.advance(2);
        self.blob = None;
        let value = match blob.kind {
            BlobKind::Bulk => Reply::Bulk(data),
            BlobKind::Error => Reply::BlobError(data),
            BlobKind::Verbatim => {
                if data.len() < 4 || data.get(3) != Some(&b':') {
                    return Err(E::InvalidVerbatim);
                }
                let mut format = [0u8; 3];
                format.copy_from_slice(data.get(..3).unwrap_or(b"   "));
                Reply::Verbatim {
                    format,
                    text: data.slice(4..),
                }
            }
            BlobKind::Chunk => {
                if let Some(collected) = self.streamed.as_mut() {
                    collected.extend_from_slice(&data);
                }
                return Ok(Some(Step::Progress));
            }
        };
        Ok(Some(Step::Value(value)))
    }
}

/// Parses a length: `Some(n)`, or `None` for `-1`.
fn length(text: &[u8]) -> Result<Option<usize>, E> {
    match parse_resp_int(text) {
        Some(-1) => Ok(None),
        Some(n) => usize::try_from(n).map(Some).map_err(|_| E::InvalidLength),
        None => Err(E::InvalidLength),
    }
}

fn parse_double(text: &[u8]) -> Result<f64, E> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or(E::InvalidDouble)
}
