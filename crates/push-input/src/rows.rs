//! Values built from several fields of a row: a hash (each field's text under its name) or a
//! JSON object (each field's JSON value under its name, in order). The readers hand each
//! field to a [`RowBuilder`], which applies the null policy and encodes the value.

use std::fmt;

/// Builds the packed payload of a hash from its fields in order (a push with the hash layout
/// sends it as the value; `rialto_keyspace::encode_hash_payload`).
pub type HashEncoder = fn(&[(&[u8], &[u8])], &mut Vec<u8>);

/// How a record's value is built from several fields of its row.
#[derive(Clone, Debug)]
pub struct RowSpec {
    /// The fields, in the order they are written; `None`: every field but the key (Parquet and
    /// CSV: the columns in file order; JSONL: each line's fields in its order).
    pub fields: Option<Vec<String>>,
    pub encoding: RowEncoding,
}

/// What a row's value is.
#[derive(Clone, Copy)]
pub enum RowEncoding {
    /// A hash: field names and their text, encoded by the function given.
    Hash(HashEncoder),
    /// A JSON object: members in field order, typed values as JSON types.
    Json,
}

impl fmt::Debug for RowEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RowEncoding::Hash(_) => "Hash",
            RowEncoding::Json => "Json",
        })
    }
}

/// What a null value or field does (a Parquet null, a JSON `null`, and for a row's fields a
/// JSONL field missing from its line; CSV has no nulls: an empty field is an empty string).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nulls {
    /// Left out: the hash has no such field, the JSON object no such member; a row whose
    /// every field is null is not loaded (the reader counts it, see
    /// [`crate::RecordReader::skipped`]), nor is a null single value.
    Skip,
    /// Written empty: a hash field with an empty value, a JSON member `null`, an empty
    /// single value.
    Empty,
    /// The file is refused at the first null, naming its row or line and field.
    Error,
}

impl Nulls {
    /// Parses `skip`, `empty` or `error`.
    pub fn parse(s: &str) -> Option<Nulls> {
        match s {
            "skip" => Some(Nulls::Skip),
            "empty" => Some(Nulls::Empty),
            "error" => Some(Nulls::Error),
            _ => None,
        }
    }
}

/// The value of one row, field by field.
pub(crate) struct RowBuilder {
    encoding: RowEncoding,
    nulls: Nulls,
    /// Hash: every name and value of the row, back to back, and where each ends.
    parts: Vec<u8>,
    ends: Vec<(usize, usize)>,
    /// Fields written so far.
    present: usize,
    /// The encoded value.
    out: Vec<u8>,
}

impl RowBuilder {
    pub(crate) fn new(encoding: RowEncoding, nulls: Nulls) -> RowBuilder {
        RowBuilder {
            encoding,
            nulls,
            parts: Vec::new(),
            ends: Vec::new(),
            present: 0,
            out: Vec::new(),
        }
    }

    /// Whether fields are written as JSON values (else as text).
    pub(crate) fn json(&self) -> bool {
        matches!(self.encoding, RowEncoding::Json)
    }

    /// Starts a row.
    pub(crate) fn begin(&mut self) {
        self.parts.clear();
        self.ends.clear();
        self.present = 0;
        self.out.clear();
        if self.json() {
            self.out.push(b'{');
        }
    }

    /// Starts field `name`: the caller appends its value (text, or JSON text when
    /// [`RowBuilder::json`]) to the buffer returned, then calls [`RowBuilder::end_field`].
    pub(crate) fn start_field(&mut self, name: &[u8]) -> &mut Vec<u8> {
        self.present += 1;
        match self.encoding {
            RowEncoding::Hash(_) => {
                self.parts.extend_from_slice(name);
                self.ends.push((self.parts.len(), 0));
                &mut self.parts
            }
            RowEncoding::Json => {
                if self.present > 1 {
                    self.out.push(b',');
                }
                crate::render::json_str(&String::from_utf8_lossy(name), &mut self.out);
                self.out.push(b':');
                &mut self.out
            }
        }
    }

    pub(crate) fn end_field(&mut self) {
        if let Some(last) = self.ends.last_mut() {
            last.1 = self.parts.len();
        }
    }

    /// Field `name` holding `text`, written as it is (hash) or as a JSON string (JSON, where
    /// text that is not UTF-8 is an error).
    pub(crate) fn text(&mut self, name: &[u8], text: &[u8]) -> Result<(), String> {
        if self.json() && std::str::from_utf8(text).is_err() {
            return Err(format!(
                "field \"{}\" is not UTF-8 text, which a JSON value cannot hold",
                String::from_utf8_lossy(name)
            ));
        }
        let json = self.json();
        let buf = self.start_field(name);
        if json {
            let _ = crate::render::json_bytes_checked(text, buf);
        } else {
            buf.extend_from_slice(text);
        }
        self.end_field();
        Ok(())
    }

    /// Field `name` is null: left out, written empty or an error, as the policy says; the
    /// error is its reason.
    pub(crate) fn null(&mut self, name: &[u8]) -> Result<(), String> {
        match self.nulls {
            Nulls::Skip => Ok(()),
            Nulls::Empty => {
                let json = self.json();
                let buf = self.start_field(name);
                if json {
                    buf.extend_from_slice(b"null");
                }
                self.end_field();
                Ok(())
            }
            Nulls::Error => Err(format!(
                "field \"{}\" is null (--nulls error)",
                String::from_utf8_lossy(name)
            )),
        }
    }

    /// Encodes the row's value ([`RowBuilder::value`]); false if no field was written (every
    /// one null and left out), when there is no value.
    pub(crate) fn finish(&mut self) -> bool {
        if self.present == 0 {
            return false;
        }
        match self.encoding {
            RowEncoding::Hash(encode) => {
                let mut pairs = Vec::with_capacity(self.ends.len());
                let mut start = 0;
                for &(name_end, value_end) in &self.ends {
                    pairs.push((
                        &self.parts[start..name_end],
                        &self.parts[name_end..value_end],
                    ));
                    start = value_end;
                }
                encode(&pairs, &mut self.out);
            }
            RowEncoding::Json => self.out.push(b'}'),
        }
        true
    }

    /// The value [`RowBuilder::finish`] encoded.
    pub(crate) fn value(&self) -> &[u8] {
        &self.out
    }
}

/// Refuses a field list naming a field twice (a hash or object cannot hold it twice).
pub(crate) fn check_unique(fields: &[String]) -> Result<(), String> {
    for (i, f) in fields.iter().enumerate() {
        if fields[..i].contains(f) {
            return Err(format!("field \"{f}\" is listed twice"));
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A stand-in for the packed encoding: `name=value;` per field.
    pub(crate) fn plain(fields: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
        for (f, v) in fields {
            out.extend_from_slice(f);
            out.push(b'=');
            out.extend_from_slice(v);
            out.push(b';');
        }
    }

    fn row(b: &mut RowBuilder, fields: &[(&str, Option<&str>)]) -> Result<Option<String>, String> {
        b.begin();
        for (name, v) in fields {
            match v {
                Some(t) => b.text(name.as_bytes(), t.as_bytes())?,
                None => b.null(name.as_bytes())?,
            }
        }
        Ok(b.finish()
            .then(|| String::from_utf8(b.value().to_vec()).unwrap()))
    }

    #[test]
    fn hash_rows_follow_the_null_policy() {
        let fields = [("a", Some("1")), ("b", None), ("c", Some(""))];
        let mut b = RowBuilder::new(RowEncoding::Hash(plain), Nulls::Skip);
        assert_eq!(row(&mut b, &fields), Ok(Some("a=1;c=;".into())));
        assert_eq!(row(&mut b, &[("a", None), ("b", None)]), Ok(None));
        let mut b = RowBuilder::new(RowEncoding::Hash(plain), Nulls::Empty);
        assert_eq!(row(&mut b, &fields), Ok(Some("a=1;b=;c=;".into())));
        let mut b = RowBuilder::new(RowEncoding::Hash(plain), Nulls::Error);
        assert_eq!(
            row(&mut b, &fields),
            Err("field \"b\" is null (--nulls error)".into())
        );
    }

    #[test]
    fn json_rows_are_objects_in_field_order() {
        let fields = [("z", Some("x\"y")), ("b", None), ("a", Some("é"))];
        let mut b = RowBuilder::new(RowEncoding::Json, Nulls::Skip);
        assert_eq!(
            row(&mut b, &fields),
            Ok(Some(r#"{"z":"x\"y","a":"é"}"#.into()))
        );
        let mut b = RowBuilder::new(RowEncoding::Json, Nulls::Empty);
        assert_eq!(
            row(&mut b, &fields),
            Ok(Some(r#"{"z":"x\"y","b":null,"a":"é"}"#.into()))
        );
        assert_eq!(
            row(&mut b, &[("b", None)]),
            Ok(Some(r#"{"b":null}"#.into()))
        );
        b.begin();
        let e = b.text(b"bin", b"\xff").unwrap_err();
        assert!(e.contains("not UTF-8"), "{e}");
    }

    #[test]
    fn a_field_listed_twice_is_refused() {
        assert!(check_unique(&["a".into(), "b".into()]).is_ok());
        assert_eq!(
            check_unique(&["a".into(), "b".into(), "a".into()]),
            Err("field \"a\" is listed twice".into())
        );
    }
}
