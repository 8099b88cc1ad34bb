//! JSONL input: one JSON object per line.
//!
//! Each line is parsed with serde_json into borrowed raw values of just the two fields (other
//! fields are skipped without being built), so the common record allocates nothing: a string
//! without escapes, a number or a boolean is copied straight from the line buffer. A row's
//! value ([`crate::RowSpec`]) takes every field of the line as a borrowed raw value, then the
//! ones it writes.

use std::borrow::Cow;

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::de::{DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::rows::{check_unique, RowBuilder};
use crate::{InputError, InputSpec, Location, Nulls, Record, RecordReader, Role};

const BUF_SIZE: usize = 1 << 20;

pub(crate) struct JsonlReader<R = File> {
    path: PathBuf,
    rdr: BufReader<R>,
    line_buf: Vec<u8>,
    /// The record just read (a field's value is decoded: escapes, compacted JSON).
    key: Vec<u8>,
    value: Vec<u8>,
    key_field: String,
    value_field: String,
    nulls: Nulls,
    /// A row's fields as the value: those named (`None`: every field of each line but the
    /// key), and the value's builder.
    row: Option<(Option<Vec<String>>, RowBuilder)>,
    /// Lines whose value was null, or every field of their row, left out.
    skipped: u64,
    /// Lines read so far, blank ones included: the number of the last one read.
    line: u64,
    /// Line of the last record returned (0: none yet).
    record_line: u64,
    bytes: u64,
    total: u64,
}

impl<R: Read> JsonlReader<R> {
    /// `total`: the input's size for progress (0 for a stream of unknown size).
    pub(crate) fn new(
        path: &Path,
        input: R,
        total: u64,
        spec: &InputSpec,
    ) -> Result<Self, InputError> {
        if let Some(Some(names)) = spec.row.as_ref().map(|r| &r.fields) {
            check_unique(names).map_err(|e| InputError::new(path, Location::None, e))?;
        }
        Ok(JsonlReader {
            path: path.to_path_buf(),
            rdr: BufReader::with_capacity(BUF_SIZE, input),
            line_buf: Vec::new(),
            key: Vec::new(),
            value: Vec::new(),
            key_field: spec.key_field.clone(),
            value_field: spec.value_field.clone(),
            nulls: spec.nulls,
            row: spec
                .row
                .as_ref()
                .map(|r| (r.fields.clone(), RowBuilder::new(r.encoding, spec.nulls))),
            skipped: 0,
            line: 0,
            record_line: 0,
            bytes: 0,
            total,
        })
    }
}

impl<R: Read + Send> RecordReader for JsonlReader<R> {
    fn read_record(&mut self) -> Result<Option<Record<'_>>, InputError> {
        let (key, value) = (&mut self.key, &mut self.value);
        key.clear();
        value.clear();
        loop {
            self.line_buf.clear();
            let n = self
                .rdr
                .read_until(b'\n', &mut self.line_buf)
                .map_err(|e| {
                    InputError::new(
                        &self.path,
                        Location::Line(self.line + 1),
                        format!("read error: {e}"),
                    )
                })?;
            if n == 0 {
                return Ok(None);
            }
            self.line += 1;
            self.bytes += n as u64;
            // Without its line end, so that an error at the end of the line has a column on it.
            let mut text = self.line_buf.strip_suffix(b"\n").unwrap_or(&self.line_buf);
            text = text.strip_suffix(b"\r").unwrap_or(text);
            if self.line == 1 {
                // Some Windows tools start UTF-8 text with a byte order mark.
                text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
            }
            if text.iter().all(|&b| is_json_ws(b)) {
                continue;
            }
            // A line left out (a null value) may have filled them.
            key.clear();
            value.clear();
            let at = |reason| InputError::new(&self.path, Location::Line(self.line), reason);
            let got = match &mut self.row {
                None => parse_line(
                    text,
                    &self.key_field,
                    &self.value_field,
                    self.nulls,
                    key,
                    value,
                ),
                Some((fields, builder)) => {
                    parse_row(text, &self.key_field, fields.as_deref(), builder, key)
                }
            };
            self.record_line = self.line;
            if !got.map_err(at)? {
                self.skipped += 1;
                continue;
            }
            let value = match &self.row {
                None => &value[..],
                Some((_, builder)) => builder.value(),
            };
            return Ok(Some((&key[..], value)));
        }
    }

    fn skipped(&self) -> u64 {
        self.skipped
    }

    fn bytes_read(&self) -> u64 {
        self.bytes
    }

    fn total_bytes(&self) -> u64 {
        self.total
    }

    fn location(&self) -> Location {
        if self.record_line == 0 {
            Location::None
        } else {
            Location::Line(self.record_line)
        }
    }
}

fn is_json_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Parses one non-blank line into `key` and `value`; false if its value is null and left out.
/// The error is the reason, without location.
fn parse_line(
    text: &[u8],
    key_field: &str,
    value_field: &str,
    nulls: Nulls,
    key: &mut Vec<u8>,
    value: &mut Vec<u8>,
) -> Result<bool, String> {
    if text.iter().find(|&&b| !is_json_ws(b)) != Some(&b'{') {
        return Err("not a JSON object".to_string());
    }
    let mut de = serde_json::Deserializer::from_slice(text);
    let fields = de
        .deserialize_map(LineVisitor {
            key_field,
            value_field,
        })
        .and_then(|f| de.end().map(|()| f))
        .map_err(invalid_json)?;
    let missing = |role: Role, name: &str| format!("{} field \"{name}\" missing", role.name());
    let k = fields.key.ok_or_else(|| missing(Role::Key, key_field))?;
    let v = fields
        .value
        .ok_or_else(|| missing(Role::Value, value_field))?;
    convert(k, Role::Key, key)?;
    if key.is_empty() {
        return Err("empty key".to_string());
    }
    match (v.get(), nulls) {
        ("null", Nulls::Skip) => return Ok(false),
        ("null", Nulls::Empty) => return Ok(true),
        _ => {}
    }
    convert(v, Role::Value, value)?;
    Ok(true)
}

/// Parses one non-blank line into `key` and a row's value in `builder`; false if every field
/// of the row is null and left out. A field missing from the line is null.
fn parse_row(
    text: &[u8],
    key_field: &str,
    fields: Option<&[String]>,
    builder: &mut RowBuilder,
    key: &mut Vec<u8>,
) -> Result<bool, String> {
    if text.iter().find(|&&b| !is_json_ws(b)) != Some(&b'{') {
        return Err("not a JSON object".to_string());
    }
    let mut de = serde_json::Deserializer::from_slice(text);
    let pairs = de
        .deserialize_map(RowVisitor)
        .and_then(|f| de.end().map(|()| f))
        .map_err(invalid_json)?;
    // A repeated field: the last one wins, as in most JSON parsers.
    let last = |name: &str| pairs.iter().rev().find(|(n, _)| n == name).map(|(_, v)| *v);
    let k = last(key_field).ok_or_else(|| format!("key field \"{key_field}\" missing"))?;
    convert(k, Role::Key, key)?;
    if key.is_empty() {
        return Err("empty key".to_string());
    }
    builder.begin();
    let json = builder.json();
    let mut add = |name: &str, raw: Option<&RawValue>| -> Result<(), String> {
        match raw {
            None => builder.null(name.as_bytes()),
            Some(raw) if raw.get() == "null" => builder.null(name.as_bytes()),
            Some(raw) => {
                let out = builder.start_field(name.as_bytes());
                if json {
                    minify(raw.get(), out);
                } else {
                    convert(raw, Role::Field, out)?;
                }
                builder.end_field();
                Ok(())
            }
        }
    };
    match fields {
        Some(names) => {
            for name in names {
                add(name, last(name))?;
            }
        }
        None => {
            for (i, (name, raw)) in pairs.iter().enumerate() {
                if name == key_field || pairs[i + 1..].iter().any(|(n, _)| n == name) {
                    continue;
                }
                add(name, Some(raw))?;
            }
        }
    }
    Ok(builder.finish())
}

/// Every field of a line, in order: its name and raw value.
struct RowVisitor;

impl<'de> Visitor<'de> for RowVisitor {
    type Value = Vec<(Cow<'de, str>, &'de RawValue)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(name) = map.next_key_seed(NameSeed)? {
            out.push((name, map.next_value()?));
        }
        Ok(out)
    }
}

/// A field name, borrowed from the line unless it has escapes (serde's own `Cow` always
/// copies).
struct NameSeed;

impl<'de> DeserializeSeed<'de> for NameSeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for NameSeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(s))
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s.to_string()))
    }
}

/// serde_json's message without its "at line 1 column N" (always line 1 here, which would
/// contradict the file line in front of it); the column is kept.
fn invalid_json(e: serde_json::Error) -> String {
    let msg = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    match msg.strip_suffix(&suffix) {
        Some(m) => format!("invalid JSON at column {}: {m}", e.column()),
        None => format!("invalid JSON: {msg}"),
    }
}

/// Appends the bytes a field's JSON value stands for (see the crate docs) to `out`.
fn convert(raw: &RawValue, role: Role, out: &mut Vec<u8>) -> Result<(), String> {
    let s = raw.get();
    match s.as_bytes().first() {
        Some(b'"') => {
            let inner = s.get(1..s.len().saturating_sub(1)).unwrap_or("");
            if inner.as_bytes().contains(&b'\\') {
                let decoded: String =
                    serde_json::from_str(s).map_err(|e| format!("invalid JSON string: {e}"))?;
                out.extend_from_slice(decoded.as_bytes());
            } else {
                out.extend_from_slice(inner.as_bytes());
            }
        }
        Some(b'n') => return Err(format!("null {}", role.name())),
        Some(b'{' | b'[') => minify(s, out),
        // Numbers and booleans: their text as written.
        _ => out.extend_from_slice(s.as_bytes()),
    }
    Ok(())
}

/// Copies valid JSON text without the whitespace outside strings.
fn minify(s: &str, out: &mut Vec<u8>) {
    let (mut in_string, mut escaped) = (false, false);
    for &b in s.as_bytes() {
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if !is_json_ws(b) {
            in_string = b == b'"';
            out.push(b);
        }
    }
}

#[derive(Default)]
struct Fields<'de> {
    key: Option<&'de RawValue>,
    value: Option<&'de RawValue>,
}

struct LineVisitor<'a> {
    key_field: &'a str,
    value_field: &'a str,
}

impl<'de> Visitor<'de> for LineVisitor<'_> {
    type Value = Fields<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
        let mut fields = Fields::default();
        let seed = KeySeed {
            key_field: self.key_field,
            value_field: self.value_field,
        };
        // A repeated field: the last one wins, as in most JSON parsers.
        while let Some(which) = map.next_key_seed(seed)? {
            if which == Which::Other {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let raw: &'de RawValue = map.next_value()?;
            if matches!(which, Which::Key | Which::Both) {
                fields.key = Some(raw);
            }
            if matches!(which, Which::Value | Which::Both) {
                fields.value = Some(raw);
            }
        }
        Ok(fields)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    Key,
    Value,
    /// The key and value fields are the same one.
    Both,
    Other,
}

/// Classifies an object key without allocating it.
#[derive(Clone, Copy)]
struct KeySeed<'a> {
    key_field: &'a str,
    value_field: &'a str,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Which;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Which, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed<'_> {
    type Value = Which;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Which, E> {
        Ok(match (s == self.key_field, s == self.value_field) {
            (true, true) => Which::Both,
            (true, false) => Which::Key,
            (false, true) => Which::Value,
            (false, false) => Which::Other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<(String, String), String> {
        let (mut k, mut v) = (Vec::new(), Vec::new());
        parse_line(
            line.as_bytes(),
            "key",
            "value",
            Nulls::Error,
            &mut k,
            &mut v,
        )?;
        Ok((String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap()))
    }

    fn ok(k: &str, v: &str) -> Result<(String, String), String> {
        Ok((k.to_string(), v.to_string()))
    }

    #[test]
    fn conversions() {
        assert_eq!(parse(r#"{"key":"a","value":"b"}"#), ok("a", "b"));
        assert_eq!(parse(r#" { "value" : 42 , "key" : "k" } "#), ok("k", "42"));
        assert_eq!(parse(r#"{"key":"k","value":3.50}"#), ok("k", "3.50"));
        assert_eq!(parse(r#"{"key":"k","value":-1e-7}"#), ok("k", "-1e-7"));
        assert_eq!(parse(r#"{"key":"k","value":true}"#), ok("k", "true"));
        assert_eq!(parse(r#"{"key":"k","value":false}"#), ok("k", "false"));
        assert_eq!(parse(r#"{"key":7,"value":""}"#), ok("7", ""));
        assert_eq!(
            parse(r#"{"key":"k","value":{ "b" : [1, 2 ,{}], "a":" x  y "}}"#),
            ok("k", r#"{"b":[1,2,{}],"a":" x  y "}"#)
        );
        assert_eq!(
            parse(r#"{"key":"k","value":[ "q\" ,", null ]}"#),
            ok("k", r#"["q\" ,",null]"#)
        );
        assert_eq!(
            parse(r#"{"key":"a\"b\\c\u00e9\n","value":"\ud83d\ude00"}"#),
            ok("a\"b\\c\u{e9}\n", "\u{1F600}")
        );
        assert_eq!(
            parse("{\"key\":\"\u{e9}t\u{e9}\",\"value\":\"v\"}"),
            ok("\u{e9}t\u{e9}", "v")
        );
        // Other fields of any shape are skipped; repeated fields: the last wins.
        assert_eq!(
            parse(r#"{"x":{"key":"no"},"key":"a","y":[1,{"value":2}],"value":"1","value":"2"}"#),
            ok("a", "2")
        );
        // An escaped field name still matches.
        assert_eq!(parse(r#"{"k\u0065y":"a","value":"b"}"#), ok("a", "b"));
    }

    #[test]
    fn same_field_for_key_and_value() {
        let (mut k, mut v) = (Vec::new(), Vec::new());
        parse_line(
            br#"{"id":"x1","other":2}"#,
            "id",
            "id",
            Nulls::Error,
            &mut k,
            &mut v,
        )
        .unwrap();
        assert_eq!((&k[..], &v[..]), (&b"x1"[..], &b"x1"[..]));
    }

    #[test]
    fn errors() {
        assert_eq!(
            parse(r#"{"value":"b"}"#),
            Err("key field \"key\" missing".to_string())
        );
        assert_eq!(
            parse(r#"{"key":"a"}"#),
            Err("value field \"value\" missing".to_string())
        );
        assert_eq!(
            parse(r#"{"key":null,"value":"b"}"#),
            Err("null key".to_string())
        );
        assert_eq!(
            parse(r#"{"key":"a","value":null}"#),
            Err("null value".to_string())
        );
        assert_eq!(
            parse(r#"{"key":"","value":"b"}"#),
            Err("empty key".to_string())
        );
        assert_eq!(
            parse(r#"["key","value"]"#),
            Err("not a JSON object".to_string())
        );
        assert_eq!(parse(r#""key""#), Err("not a JSON object".to_string()));
        assert_eq!(parse("42"), Err("not a JSON object".to_string()));
        assert_eq!(
            parse(r#"{"key":"a","value":"b"} x"#),
            Err("invalid JSON at column 25: trailing characters".to_string())
        );
        assert_eq!(
            parse(r#"{"key":"a" "value":"b"}"#),
            Err("invalid JSON at column 12: expected `,` or `}`".to_string())
        );
        assert_eq!(
            parse(r#"{"key":"a","value":"b""#),
            Err("invalid JSON at column 22: EOF while parsing an object".to_string())
        );
        let e = parse(r#"{"key":"a","value":tru}"#).unwrap_err();
        assert!(e.starts_with("invalid JSON at column"), "{e}");
        let (mut k, mut v) = (Vec::new(), Vec::new());
        let e = parse_line(
            b"{\"key\":\"\xff\",\"value\":\"b\"}",
            "key",
            "value",
            Nulls::Error,
            &mut k,
            &mut v,
        )
        .unwrap_err();
        assert!(e.starts_with("invalid JSON at column"), "{e}");
    }
}
