//! Readers of batch-push inputs (CSV, JSONL, Parquet) as key/value records.
//!
//! A batch push loads a whole dataset from files. [`open`] returns a [`RecordReader`] that yields
//! one `(key, value)` pair of byte strings per record, taken from two fields named in the
//! [`InputSpec`] (`key` and `value` by default), or with a [`RowSpec`], the value built from
//! several fields of the row: a hash payload or a JSON object. The format comes from the spec or from the file
//! extension (see [`Format::from_path`]). CSV and JSONL files may be gzip or zstd compressed
//! (`day1.csv.gz`, see [`Compression`]); they are decoded as they are read. [`expand_inputs`]
//! turns a push's input arguments (files, output directories of part files, glob patterns)
//! into the files to read.
//!
//! # Formats and conversions
//!
//! - **CSV** (RFC 4180, quoted fields may hold delimiters and newlines). With a header the fields
//!   are column names; without one they are 0-based column indexes (`"0"`, `"1"`). Fields are
//!   taken as raw bytes: no trimming, no UTF-8 requirement. Every row must have as many fields
//!   as the first one (the header, if any): a short or long row usually means a broken quote or an
//!   unquoted delimiter, which would otherwise shift values silently.
//! - **JSONL** (also NDJSON): one JSON object per line; lines holding only whitespace are
//!   skipped. A string field gives its UTF-8 bytes (escapes decoded); a number or boolean gives
//!   its JSON text as written (`42`, `3.50`, `true`); an object or array gives its JSON text with
//!   the whitespace outside strings removed (key order and number spelling are kept).
//! - **Parquet**: only the columns used are decoded. Typed values are rendered as the table in
//!   `render.rs` says: strings and binaries (any width, views, dictionary-encoded) give their
//!   bytes; integers decimal text; floats their shortest round-trip text (`3.5`, `1e-7`,
//!   `NaN`, `inf`); booleans `true`/`false`; decimals exact; dates, times and timestamps ISO
//!   8601 / RFC 3339 text; lists, structs and maps JSON. Any other column type (durations,
//!   intervals, unions) is refused when the file is opened.
//!
//! Several fields ([`RowSpec`]): a hash takes each field's text as above (a JSONL field: a
//! string's text, anything else its compact JSON); a JSON object takes each field's JSON
//! value (Parquet: numbers stay numbers, decimals, dates and times are strings, binaries
//! base64; CSV: strings; JSONL: the value as written, compacted).
//!
//! A null or missing key is an error, and so is an empty key (almost always a data bug
//! upstream). A null value or field does what [`InputSpec::nulls`] says (by default, an error);
//! an empty value is allowed. Errors name the file and the line (CSV, JSONL) or row
//! (Parquet), see [`InputError`]. Malformed input never panics.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

mod compressed;
mod csv_input;
mod expand;
mod jsonl_input;
mod parquet_input;
mod render;
mod rows;
mod write;

pub use compressed::Compression;
pub use csv_input::{parse_csv_delimiter, DelimiterError};
pub use expand::{expand_inputs, ExpandError, ExpandOptions};
pub use render::{float as format_float, Float};
pub use rows::{HashEncoder, Nulls, RowEncoding, RowSpec};
pub use write::{write_dataset, write_feature_table, FeatureTable};

/// An input file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    Csv,
    Jsonl,
    Parquet,
}

impl Format {
    /// Parses a format name: `csv`, `jsonl` (or `ndjson`), `parquet`; case-insensitive.
    pub fn parse(s: &str) -> Option<Format> {
        match s.to_ascii_lowercase().as_str() {
            "csv" => Some(Format::Csv),
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            "parquet" => Some(Format::Parquet),
            _ => None,
        }
    }

    /// The format given by a file's extension: `.csv`, `.jsonl`/`.ndjson`, `.parquet`/`.pq`
    /// (case-insensitive), looking through a compression suffix (`day1.csv.gz` is CSV, see
    /// [`Compression::from_path`]). `.json` is not taken: it may be one big document rather
    /// than lines.
    pub fn from_path(p: &Path) -> Option<Format> {
        let stem;
        let p = if Compression::from_path(p).is_some() {
            stem = p.with_extension("");
            stem.as_path()
        } else {
            p
        };
        match compressed::lower_extension(p)?.as_str() {
            "csv" => Some(Format::Csv),
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            "parquet" | "pq" => Some(Format::Parquet),
            _ => None,
        }
    }

    /// The canonical lower-case name, as accepted by [`Format::parse`].
    pub fn name(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Jsonl => "jsonl",
            Format::Parquet => "parquet",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How to read an input file.
#[derive(Clone, Debug)]
pub struct InputSpec {
    /// `None`: from the file extension, an error if it is unknown.
    pub format: Option<Format>,
    /// Field holding the key: a column or JSON field name, or a 0-based column index for CSV
    /// without header. Default `"key"`.
    pub key_field: String,
    /// Field holding the value, like `key_field`. Default `"value"`. Not read with `row`.
    pub value_field: String,
    /// `Some`: the value is built from several fields of the row rather than taken from
    /// `value_field`. Default `None`.
    pub row: Option<RowSpec>,
    /// What a null value (or field of a row) does. Default [`Nulls::Error`].
    pub nulls: Nulls,
    /// CSV field delimiter. Default `b','`. A quote, `\r` or `\n` is refused when the file is
    /// opened.
    pub csv_delimiter: u8,
    /// Whether the first CSV row names the columns. Default `true`.
    pub csv_has_header: bool,
}

impl Default for InputSpec {
    fn default() -> Self {
        InputSpec {
            format: None,
            key_field: "key".to_string(),
            value_field: "value".to_string(),
            row: None,
            nulls: Nulls::Error,
            csv_delimiter: b',',
            csv_has_header: true,
        }
    }
}

/// A record's key and value, borrowed from the reader that read it.
pub type Record<'a> = (&'a [u8], &'a [u8]);

/// A sequential reader of key/value records from one input file.
///
/// After an error the reader should not be used further: what it returns then is unspecified
/// (though it never panics).
pub trait RecordReader: Send {
    /// Reads the next record: its key and value, borrowed from the reader until its next call
    /// (no copy: a plain CSV line's fields stay in the read buffer, a Parquet string or
    /// binary value in its decoded column); `None` at end of input.
    fn read_record(&mut self) -> Result<Option<Record<'_>>, InputError>;

    /// Reads the next record into `key` and `value` (cleared first). Ok(false) at end of input.
    fn next_record(&mut self, key: &mut Vec<u8>, value: &mut Vec<u8>) -> Result<bool, InputError> {
        key.clear();
        value.clear();
        match self.read_record()? {
            Some((k, v)) => {
                key.extend_from_slice(k);
                value.extend_from_slice(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    /// Bytes of the input consumed so far (for progress: MB/s and ETA); approximate for Parquet
    /// (compressed row-group sizes, prorated by rows within the current row group).
    fn bytes_read(&self) -> u64;
    /// Total size of the input file in bytes.
    fn total_bytes(&self) -> u64;
    /// Where the last returned record came from: 1-based line (CSV, JSONL; for a CSV record
    /// spanning lines, its first line) or 1-based row (Parquet).
    fn location(&self) -> Location;
    /// Rows read and not returned because their value was null, or every field of their row
    /// (with [`Nulls::Skip`]).
    fn skipped(&self) -> u64 {
        0
    }
}

/// Opens `path` for reading records as `spec` says. Errors in the spec (unknown format, missing
/// column, unsupported column type) are reported here rather than at the first record.
pub fn open(path: &Path, spec: &InputSpec) -> Result<Box<dyn RecordReader>, InputError> {
    if let Some(ext) = compressed::unsupported_compression(path) {
        return Err(InputError::new(
            path,
            Location::None,
            format!("compressed as .{ext}, which is not read; .gz and .zst are"),
        ));
    }
    let format = match spec.format {
        Some(f) => f,
        None => Format::from_path(path).ok_or_else(|| {
            InputError::new(
                path,
                Location::None,
                "unknown format: the file name does not end in .csv, .jsonl, .ndjson, .parquet \
                 or .pq (before any .gz or .zst); name the format explicitly",
            )
        })?,
    };
    let compression = Compression::from_path(path);
    let (file, total) = open_file(path)?;
    let Some(compression) = compression else {
        return Ok(match format {
            Format::Csv => Box::new(csv_input::CsvReader::new(path, file, total, spec)?),
            Format::Jsonl => Box::new(jsonl_input::JsonlReader::new(path, file, total, spec)?),
            Format::Parquet => {
                Box::new(parquet_input::ParquetReader::new(path, file, total, spec)?)
            }
        });
    };
    let cannot = |reason: String| InputError::new(path, Location::None, reason);
    let inner: Box<dyn RecordReader> = match format {
        // Its reader seeks to the footer, which a stream cannot do; its pages are compressed
        // inside the file anyway.
        Format::Parquet => {
            return Err(cannot(format!(
                "a {}-compressed Parquet file cannot be read: Parquet compresses its own \
                 pages; decompress the file first",
                compression.name()
            )))
        }
        Format::Csv | Format::Jsonl => {
            let (stream, consumed) = compressed::decoder(file, compression).map_err(|e| {
                cannot(format!(
                    "cannot start the {} decoder: {e}",
                    compression.name()
                ))
            })?;
            let inner: Box<dyn RecordReader> = if format == Format::Csv {
                Box::new(csv_input::CsvReader::from_stream(path, stream, spec)?)
            } else {
                Box::new(jsonl_input::JsonlReader::new(path, stream, 0, spec)?)
            };
            Box::new(compressed::Decompressed {
                inner,
                consumed,
                total,
            })
        }
    };
    Ok(inner)
}

fn open_file(path: &Path) -> Result<(File, u64), InputError> {
    let cannot =
        |e: std::io::Error| InputError::new(path, Location::None, format!("cannot open: {e}"));
    let file = File::open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    // Opening a directory succeeds on Unix; say so now rather than fail at the first read.
    if meta.is_dir() {
        return Err(InputError::new(
            path,
            Location::None,
            "cannot open: is a directory",
        ));
    }
    Ok((file, meta.len()))
}

/// Where in its file a record or an error is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The file as a whole (cannot open, bad header, unsupported column type...).
    None,
    /// 1-based line (CSV, JSONL).
    Line(u64),
    /// 1-based row (Parquet).
    Row(u64),
}

/// An error reading an input file. Displays as one line, e.g. `data.csv:17: 2 fields, expected
/// 3`, `data.parquet: row 1234: null key`, `data.jsonl: cannot open: No such file or directory
/// (os error 2)`.
#[derive(Debug)]
pub struct InputError {
    /// The file, as given to [`open`].
    pub file: PathBuf,
    pub location: Location,
    pub reason: String,
}

impl InputError {
    pub(crate) fn new(file: &Path, location: Location, reason: impl Into<String>) -> Self {
        InputError {
            file: file.to_path_buf(),
            location,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        match self.location {
            Location::None => write!(f, "{file}: {}", self.reason),
            Location::Line(n) => write!(f, "{file}:{n}: {}", self.reason),
            Location::Row(n) => write!(f, "{file}: row {n}: {}", self.reason),
        }
    }
}

impl std::error::Error for InputError {}

/// Which of the two fields; used to word errors ("key field ...", "null value").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Key,
    Value,
    /// One of a row's fields ([`RowSpec`]).
    Field,
}

impl Role {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Role::Key => "key",
            Role::Value => "value",
            Role::Field => "field",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_parse_and_from_path() {
        assert_eq!(Format::parse("CSV"), Some(Format::Csv));
        assert_eq!(Format::parse("jsonl"), Some(Format::Jsonl));
        assert_eq!(Format::parse("NDJson"), Some(Format::Jsonl));
        assert_eq!(Format::parse("parquet"), Some(Format::Parquet));
        assert_eq!(Format::parse("json"), None);
        assert_eq!(Format::parse(""), None);
        for f in [Format::Csv, Format::Jsonl, Format::Parquet] {
            assert_eq!(Format::parse(f.name()), Some(f));
        }

        let p = |s: &str| Format::from_path(Path::new(s));
        assert_eq!(p("data.csv"), Some(Format::Csv));
        assert_eq!(p("/a/b.c/DATA.CSV"), Some(Format::Csv));
        assert_eq!(p("x.jsonl"), Some(Format::Jsonl));
        assert_eq!(p("x.ndjson"), Some(Format::Jsonl));
        assert_eq!(p("x.parquet"), Some(Format::Parquet));
        assert_eq!(p("x.Pq"), Some(Format::Parquet));
        assert_eq!(p("x.json"), None);
        assert_eq!(p("x.csv.gz"), Some(Format::Csv));
        assert_eq!(p("x.gz"), None);
        assert_eq!(p("csv"), None);
        assert_eq!(p("dir.csv/file"), None);
    }

    #[test]
    fn error_display() {
        let e = InputError::new(
            Path::new("data.csv"),
            Location::Line(17),
            "value field \"score\" missing",
        );
        assert_eq!(e.to_string(), "data.csv:17: value field \"score\" missing");
        let e = InputError::new(Path::new("data.parquet"), Location::Row(1234), "null key");
        assert_eq!(e.to_string(), "data.parquet: row 1234: null key");
        let e = InputError::new(Path::new("d/data.jsonl"), Location::None, "cannot open: x");
        assert_eq!(e.to_string(), "d/data.jsonl: cannot open: x");
    }

    #[test]
    fn open_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.jsonl");
        let e = open(&missing, &InputSpec::default()).err().unwrap();
        assert_eq!(e.location, Location::None);
        assert!(e.reason.starts_with("cannot open: "), "{e}");
        assert!(e
            .to_string()
            .starts_with(&format!("{}: cannot open: ", missing.display())));

        let unknown = dir.path().join("data.txt");
        std::fs::write(&unknown, "key,value\na,b\n").unwrap();
        let e = open(&unknown, &InputSpec::default()).err().unwrap();
        assert!(e.reason.starts_with("unknown format"), "{e}");
        // An explicit format overrides the extension.
        let spec = InputSpec {
            format: Some(Format::Csv),
            ..InputSpec::default()
        };
        assert!(open(&unknown, &spec).is_ok());

        let d = dir.path().join("d.csv");
        std::fs::create_dir(&d).unwrap();
        let e = open(&d, &InputSpec::default()).err().unwrap();
        assert_eq!(e.reason, "cannot open: is a directory");
    }
}
