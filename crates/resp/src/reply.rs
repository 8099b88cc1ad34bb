//! Reply values: what a server sends and a client decodes.

use bytes::{Bytes, BytesMut};

use crate::encode::{
    write_array_header, write_attribute_header, write_big_number, write_blob_error, write_bool,
    write_bulk, write_double, write_error, write_human_double, write_int, write_map_header,
    write_null, write_null_array, write_push_header, write_set_header, write_simple,
    write_verbatim,
};
use crate::num::{format_double, format_human_double, DOUBLE_BUF};

/// The protocol version a connection speaks: RESP2 until the client sends `HELLO 3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Protocol {
    /// RESP2: RESP3-only types are downgraded as Redis does.
    #[default]
    Resp2,
    /// RESP3.
    Resp3,
}

impl Protocol {
    /// The protocol for a `HELLO` version number: 2 or 3.
    pub fn from_version(version: i64) -> Option<Protocol> {
        match version {
            2 => Some(Protocol::Resp2),
            3 => Some(Protocol::Resp3),
            _ => None,
        }
    }

    /// 2 or 3.
    pub fn version(self) -> u8 {
        match self {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        }
    }
}

/// A reply, RESP3's types with RESP2's two nulls.
///
/// [`encode`](Self::encode) writes it for either protocol; under RESP2 the RESP3-only types
/// become what Redis sends instead (see each variant). For large replies the `write_*`
/// functions write the same bytes without building a tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `+text`. `\r` and `\n` in the text are sent as spaces.
    Simple(Bytes),
    /// `-CODE message`, the code included (`ERR ...`, `WRONGTYPE ...`). `\r` and `\n` are
    /// sent as spaces.
    Error(Bytes),
    /// `:n`.
    Integer(i64),
    /// `$len` and the bytes.
    Bulk(Bytes),
    /// The null bulk: `$-1` in RESP2, `_` in RESP3.
    Null,
    /// The null array: `*-1` in RESP2, `_` in RESP3 (which decodes as [`Reply::Null`]).
    NullArray,
    /// `*n` and the elements.
    Array(Vec<Reply>),
    /// `%n` and the key-value pairs; RESP2: an array of 2n elements, keys and values alternating.
    Map(Vec<(Reply, Reply)>),
    /// Pairs as Redis sends a list of them (HRANDFIELD WITHVALUES, ZRANGE WITHSCORES): RESP3
    /// an array of two-element arrays; RESP2 a flat array of 2n elements.
    Pairs(Vec<(Reply, Reply)>),
    /// Key-value pairs as Redis sends XREAD's streams: `%n` in RESP3; in RESP2 an array of n
    /// two-element arrays.
    Keyed(Vec<(Reply, Reply)>),
    /// `~n`; RESP2: an array.
    Set(Vec<Reply>),
    /// `,d`; RESP2: a bulk string of the same text (see [`write_double`]).
    Double(f64),
    /// A double as Redis's `addReplyHumanLongDouble` sends it (GEOPOS's coordinates): 17
    /// digits after the point, trailing zeros dropped (`13.36138933897018433`); `,text` in
    /// RESP3, a bulk string of the same text in RESP2.
    HumanDouble(f64),
    /// `#t`/`#f`; RESP2: the integer 1 or 0.
    Boolean(bool),
    /// `(digits`; RESP2: a bulk string of the digits.
    BigNumber(Bytes),
    /// `=len` then a 3-byte format (`txt`, `mkd`), `:` and the text; RESP2: a bulk string of
    /// the text alone.
    Verbatim {
        /// The format, e.g. `*b"txt"`.
        format: [u8; 3],
        /// The text.
        text: Bytes,
    },
    /// `!len` and the error text, which may hold any bytes; RESP2: a simple error (`\r`, `\n`
    /// as spaces). Redis itself never sends it.
    BlobError(Bytes),
    /// `>n`, an out-of-band message (pub/sub, invalidation); RESP2: an array.
    Push(Vec<Reply>),
    /// `|n` and key-value pairs describing the reply that follows; RESP2: the reply alone
    /// (Redis never sends attributes to RESP2 clients).
    Attribute {
        /// The attribute pairs.
        attrs: Vec<(Reply, Reply)>,
        /// The reply they describe.
        reply: Box<Reply>,
    },
}

impl Reply {
    /// `Reply::Simple` from a static string, e.g. `Reply::simple("OK")`.
    pub fn simple(text: &'static str) -> Reply {
        Reply::Simple(Bytes::from_static(text.as_bytes()))
    }

    /// `Reply::Error` from a static string, e.g. `Reply::error("ERR syntax error")`.
    pub fn error(text: &'static str) -> Reply {
        Reply::Error(Bytes::from_static(text.as_bytes()))
    }

    /// `Reply::Bulk` copying `data`.
    pub fn bulk(data: impl AsRef<[u8]>) -> Reply {
        Reply::Bulk(Bytes::copy_from_slice(data.as_ref()))
    }

    /// Appends this reply as `proto` sends it.
    pub fn encode(&self, proto: Protocol, buf: &mut BytesMut) {
        match self {
            Reply::Simple(s) => write_simple(buf, proto, s),
            Reply::Error(e) => write_error(buf, proto, e),
            Reply::Integer(n) => write_int(buf, proto, *n),
            Reply::Bulk(b) => write_bulk(buf, proto, b),
            Reply::Null => write_null(buf, proto),
            Reply::NullArray => write_null_array(buf, proto),
            Reply::Array(items) => {
                write_array_header(buf, proto, items.len());
                items.iter().for_each(|r| r.encode(proto, buf));
            }
            Reply::Map(pairs) => {
                write_map_header(buf, proto, pairs.len());
                for (k, v) in pairs {
                    k.encode(proto, buf);
                    v.encode(proto, buf);
                }
            }
            Reply::Keyed(pairs) if proto == Protocol::Resp3 => {
                write_map_header(buf, proto, pairs.len());
                for (k, v) in pairs {
                    k.encode(proto, buf);
                    v.encode(proto, buf);
                }
            }
            Reply::Keyed(pairs) => {
                write_array_header(buf, proto, pairs.len());
                for (k, v) in pairs {
                    write_array_header(buf, proto, 2);
                    k.encode(proto, buf);
                    v.encode(proto, buf);
                }
            }
            Reply::Pairs(pairs) if proto == Protocol::Resp3 => {
                write_array_header(buf, proto, pairs.len());
                for (k, v) in pairs {
                    write_array_header(buf, proto, 2);
                    k.encode(proto, buf);
                    v.encode(proto, buf);
                }
            }
            Reply::Pairs(pairs) => {
                write_array_header(buf, proto, pairs.len() * 2);
                for (k, v) in pairs {
                    k.encode(proto, buf);
                    v.encode(proto, buf);
                }
            }
            Reply::Set(items) => {
                write_set_header(buf, proto, items.len());
                items.iter().for_each(|r| r.encode(proto, buf));
            }
            Reply::Double(d) => write_double(buf, proto, *d),
            Reply::HumanDouble(d) => write_human_double(buf, proto, *d),
            Reply::Boolean(b) => write_bool(buf, proto, *b),
            Reply::BigNumber(n) => write_big_number(buf, proto, n),
            Reply::Verbatim { format, text } => write_verbatim(buf, proto, *format, text),
            Reply::BlobError(e) => write_blob_error(buf, proto, e),
            Reply::Push(items) => {
                write_push_header(buf, proto, items.len());
                items.iter().for_each(|r| r.encode(proto, buf));
            }
            Reply::Attribute { attrs, reply } => {
                if write_attribute_header(buf, proto, attrs.len()) {
                    for (k, v) in attrs {
                        k.encode(proto, buf);
                        v.encode(proto, buf);
                    }
                }
                reply.encode(proto, buf);
            }
        }
    }

    /// The reply as a peer decodes it after [`encode`](Self::encode) with `proto`: RESP2
    /// downgrades applied, `NullArray` read back as `Null` under RESP3, `\r`/`\n` in simple
    /// strings and errors turned into spaces.
    pub fn as_received(&self, proto: Protocol) -> Reply {
        let list = |items: &[Reply]| items.iter().map(|r| r.as_received(proto)).collect();
        let pairs = |pairs: &[(Reply, Reply)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.as_received(proto), v.as_received(proto)))
                .collect()
        };
        let resp3 = proto == Protocol::Resp3;
        match self {
            Reply::Simple(s) => Reply::Simple(sanitized(s)),
            Reply::Error(e) => Reply::Error(sanitized(e)),
            Reply::NullArray if resp3 => Reply::Null,
            Reply::Array(items) => Reply::Array(list(items)),
            Reply::Map(p) if resp3 => Reply::Map(pairs(p)),
            Reply::Map(p) => Reply::Array(
                p.iter()
                    .flat_map(|(k, v)| [k.as_received(proto), v.as_received(proto)])
                    .collect(),
            ),
            Reply::Keyed(p) if resp3 => Reply::Map(pairs(p)),
            Reply::Keyed(p) => Reply::Array(
                p.iter()
                    .map(|(k, v)| Reply::Array(vec![k.as_received(proto), v.as_received(proto)]))
                    .collect(),
            ),
            Reply::Pairs(p) if resp3 => Reply::Array(
                p.iter()
                    .map(|(k, v)| Reply::Array(vec![k.as_received(proto), v.as_received(proto)]))
                    .collect(),
            ),
            Reply::Pairs(p) => Reply::Array(
                p.iter()
                    .flat_map(|(k, v)| [k.as_received(proto), v.as_received(proto)])
                    .collect(),
            ),
            Reply::Set(items) if resp3 => Reply::Set(list(items)),
            Reply::Push(items) if resp3 => Reply::Push(list(items)),
            Reply::Set(items) | Reply::Push(items) => Reply::Array(list(items)),
            Reply::Double(d) if !resp3 => {
                let mut text = [0u8; DOUBLE_BUF];
                let n = format_double(*d, &mut text);
                Reply::Bulk(Bytes::copy_from_slice(text.get(..n).unwrap_or_default()))
            }
            Reply::HumanDouble(d) => {
                let text = format_human_double(*d);
                if resp3 {
                    Reply::Double(text.parse().unwrap_or(*d))
                } else {
                    Reply::Bulk(Bytes::from(text))
                }
            }
            Reply::Boolean(b) if !resp3 => Reply::Integer(i64::from(*b)),
            Reply::BigNumber(n) if !resp3 => Reply::Bulk(n.clone()),
            Reply::Verbatim { text, .. } if !resp3 => Reply::Bulk(text.clone()),
            Reply::BlobError(e) if !resp3 => Reply::Error(sanitized(e)),
            Reply::Attribute { reply, .. } if !resp3 => reply.as_received(proto),
            Reply::Attribute { attrs, reply } => Reply::Attribute {
                attrs: pairs(attrs),
                reply: Box::new(reply.as_received(proto)),
            },
            other => other.clone(),
        }
    }
}

fn sanitized(s: &Bytes) -> Bytes {
    if s.iter().any(|&b| b == b'\r' || b == b'\n') {
        s.iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect::<Vec<u8>>()
            .into()
    } else {
        s.clone()
    }
}
