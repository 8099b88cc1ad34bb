//! CSV input, with the `csv-core` parser's semantics and a fast path for plain lines.
//!
//! A profile of a 5M-record push of 1 KiB values put `csv_core`'s parser at 45% of the reading
//! thread, which is the push's busiest thread while records arrive. Most lines of a derived
//! dataset hold no quote: such a line (up to its first CR or LF) is split at its delimiters
//! with SIMD searches (`memchr`), which gives exactly what the parser gives for it. A line with
//! a quote goes to `csv_core::Reader`, fed from the same buffer from that record's first byte,
//! so quoted fields (which may hold delimiters, quotes and line ends) parse as before.
//!
//! What the parser does and the fast path reproduces: `\n`, `\r\n` and a lone `\r` end a
//! record; empty lines are skipped; fields are raw bytes, never trimmed; a UTF-8 byte-order
//! mark at the start of the file is dropped. The differential test below checks the reader
//! against the `csv` crate on random inputs.
//!
//! Line numbers count the `\n` bytes consumed, so a record is reported at the line where it
//! starts, after any blank lines before it.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use csv_core::ReadRecordResult;

use crate::rows::{check_unique, RowBuilder};
use crate::{InputError, InputSpec, Location, Record, RecordReader, Role};

/// Read buffer; large so that a fast disk is not throttled by small reads. A record longer
/// than the buffer grows it.
const BUF_SIZE: usize = 1 << 20;
/// Header names quoted in a "column not found" error, at most.
const MAX_LISTED_COLUMNS: usize = 40;

/// Where the fields of the record just read are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// In the read buffer (a plain line).
    Buf,
    /// In `parsed` (the parser's output).
    Parsed,
}

pub(crate) struct CsvReader<R = File> {
    path: PathBuf,
    input: R,
    buf: Vec<u8>,
    /// Unread bytes are `buf[pos..len]`.
    pos: usize,
    len: usize,
    eof: bool,
    /// File bytes before `buf[0]`.
    base: u64,
    delimiter: u8,
    parser: csv_core::Reader,
    /// The parser's output for the record just read, and its fields' end offsets.
    parsed: Vec<u8>,
    ends: Vec<usize>,
    /// The record just read: where its fields are, and their `[start, end)` in there.
    source: Source,
    fields: Vec<(usize, usize)>,
    key_idx: usize,
    value_idx: usize,
    /// A row's fields as the value: (name, index) in the order written; `None` until known
    /// for every column of a file without header (the first row says how many there are).
    row: Option<CsvRow>,
    /// Fields every row must have: the header's count, or else the first row's (set on reading
    /// it). `None` until known.
    expected_fields: Option<usize>,
    has_header: bool,
    /// Line number of the next unread byte.
    line_at_pos: u64,
    /// First line of the last record returned (0: none yet).
    record_line: u64,
    total: u64,
}

/// The fields of a row that make its value (see [`crate::RowSpec`]).
struct CsvRow {
    fields: Option<Vec<(Vec<u8>, usize)>>,
    builder: RowBuilder,
}

impl CsvReader<File> {
    pub(crate) fn new(
        path: &Path,
        file: File,
        total: u64,
        spec: &InputSpec,
    ) -> Result<Self, InputError> {
        CsvReader::with_buffer(path, file, total, spec, BUF_SIZE)
    }
}

impl<R: Read> CsvReader<R> {
    /// Reads a stream whose size is unknown (a decoder): `total_bytes` is 0.
    pub(crate) fn from_stream(path: &Path, input: R, spec: &InputSpec) -> Result<Self, InputError> {
        CsvReader::with_buffer(path, input, 0, spec, BUF_SIZE)
    }

    fn with_buffer(
        path: &Path,
        input: R,
        total: u64,
        spec: &InputSpec,
        buf_size: usize,
    ) -> Result<Self, InputError> {
        if is_reserved(spec.csv_delimiter) {
            return Err(InputError::new(
                path,
                Location::None,
                DelimiterError::Reserved(spec.csv_delimiter).to_string(),
            ));
        }
        let mut parser = csv_core::ReaderBuilder::new()
            .delimiter(spec.csv_delimiter)
            .build();
        // The parser drops a byte-order mark at its first call only; this reader drops the
        // file's own (see `fill`), and the parser's first call may come in the middle of the
        // file, where three such bytes are data. A terminator at the start of a record is
        // skipped, leaving the parser where it was, at the start of a record.
        let _ = parser.read_record(b"\n", &mut [0u8; 1], &mut [0usize; 1]);
        let mut r = CsvReader {
            path: path.to_path_buf(),
            input,
            buf: vec![0; buf_size.max(1)],
            pos: 0,
            len: 0,
            eof: false,
            base: 0,
            delimiter: spec.csv_delimiter,
            parser,
            parsed: Vec::new(),
            ends: Vec::new(),
            source: Source::Buf,
            fields: Vec::new(),
            key_idx: 0,
            value_idx: 0,
            row: spec.row.as_ref().map(|r| CsvRow {
                fields: None,
                builder: RowBuilder::new(r.encoding, spec.nulls),
            }),
            expected_fields: None,
            has_header: spec.csv_has_header,
            line_at_pos: 1,
            record_line: 0,
            total,
        };
        if spec.csv_has_header {
            let got = r
                .read_fields()
                .map_err(|e| io_error(path, e, Location::Line(1)))?;
            if !got {
                return Err(InputError::new(
                    path,
                    Location::None,
                    "empty file: no header line",
                ));
            }
            let header: Vec<Vec<u8>> = (0..r.fields.len()).map(|i| r.field(i).to_vec()).collect();
            let line = Location::Line(r.record_line);
            // No record has been returned yet.
            r.record_line = 0;
            let find = |role: Role, name: &str| {
                header
                    .iter()
                    .position(|h| h == name.as_bytes())
                    .ok_or_else(|| {
                        InputError::new(path, line.clone(), missing_column(role, name, &header))
                    })
            };
            r.key_idx = find(Role::Key, &spec.key_field)?;
            let json = r.row.as_ref().is_some_and(|row| row.builder.json());
            match spec.row.as_ref().map(|row| &row.fields) {
                None => r.value_idx = find(Role::Value, &spec.value_field)?,
                Some(Some(names)) => {
                    check_unique(names).map_err(|e| InputError::new(path, line.clone(), e))?;
                    let fields = names
                        .iter()
                        .map(|n| Ok((n.as_bytes().to_vec(), find(Role::Field, n)?)))
                        .collect::<Result<Vec<_>, InputError>>()?;
                    r.set_row_fields(fields);
                }
                Some(None) => {
                    let key_idx = r.key_idx;
                    let fields: Vec<(Vec<u8>, usize)> = header
                        .iter()
                        .enumerate()
                        .filter(|&(i, _)| i != key_idx)
                        .map(|(i, h)| (h.clone(), i))
                        .collect();
                    if fields.is_empty() {
                        return Err(InputError::new(
                            path,
                            line.clone(),
                            "the header has no column besides the key to make a value of",
                        ));
                    }
                    r.set_row_fields(fields);
                }
            }
            if json {
                if let Some(h) = header.iter().find(|h| std::str::from_utf8(h).is_err()) {
                    return Err(InputError::new(
                        path,
                        line,
                        format!(
                            "column name \"{}\" is not UTF-8, which a JSON member name cannot be",
                            String::from_utf8_lossy(h)
                        ),
                    ));
                }
            }
            r.expected_fields = Some(header.len());
        } else {
            let index = |role: Role, field: &str| {
                field.trim().parse::<usize>().map_err(|_| {
                    InputError::new(
                        path,
                        Location::None,
                        format!(
                            "without a header, the {} field must be a 0-based column index, not \"{field}\"",
                            role.name()
                        ),
                    )
                })
            };
            r.key_idx = index(Role::Key, &spec.key_field)?;
            match spec.row.as_ref().map(|row| &row.fields) {
                None => r.value_idx = index(Role::Value, &spec.value_field)?,
                Some(Some(names)) => {
                    check_unique(names).map_err(|e| InputError::new(path, Location::None, e))?;
                    let fields = names
                        .iter()
                        .map(|n| Ok((n.as_bytes().to_vec(), index(Role::Field, n)?)))
                        .collect::<Result<Vec<_>, InputError>>()?;
                    r.set_row_fields(fields);
                }
                // Every column but the key, once the first row says how many there are.
                Some(None) => {}
            }
        }
        Ok(r)
    }

    fn set_row_fields(&mut self, fields: Vec<(Vec<u8>, usize)>) {
        if let Some(row) = &mut self.row {
            row.fields = Some(fields);
        }
    }

    /// Field `i` of the record just read.
    fn field(&self, i: usize) -> &[u8] {
        let (start, end) = self.fields[i];
        match self.source {
            Source::Buf => &self.buf[start..end],
            Source::Parsed => &self.parsed[start..end],
        }
    }

    /// Reads more input behind the unread bytes, first moving them to the buffer's start
    /// (and growing the buffer if they fill it). Sets `eof` at the end of the input.
    fn fill(&mut self) -> io::Result<()> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.len, 0);
            self.base += self.pos as u64;
            self.len -= self.pos;
            self.pos = 0;
        }
        // The file's first bytes are read until a byte-order mark can be told from data.
        let first = self.base == 0 && self.len == 0;
        loop {
            if self.len == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let n = match self.input.read(&mut self.buf[self.len..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => r?,
            };
            self.len += n;
            self.eof = n == 0;
            if !first || self.eof || self.len >= 3 {
                break;
            }
        }
        if first && self.buf[..self.len].starts_with(b"\xef\xbb\xbf") {
            self.pos = 3;
        }
        Ok(())
    }

    /// Reads the next record's fields (`fields`, `source`, `record_line`); false at the end.
    fn read_fields(&mut self) -> io::Result<bool> {
        loop {
            // Terminators at the start of a record are empty lines: skipped, as the parser
            // does.
            while self.pos < self.len && matches!(self.buf[self.pos], b'\n' | b'\r') {
                self.line_at_pos += u64::from(self.buf[self.pos] == b'\n');
                self.pos += 1;
            }
            if self.pos == self.len {
                if self.eof {
                    return Ok(false);
                }
                self.fill()?;
                continue;
            }
            let rest = &self.buf[self.pos..self.len];
            // A line ends at its first CR or LF (an LF after a CR is skipped as an empty line
            // at the next record, as the parser does).
            let Some(end) = memchr::memchr2(b'\n', b'\r', rest) else {
                if !self.eof {
                    // The line may go on beyond what is buffered.
                    self.fill()?;
                    continue;
                }
                return self.parse_fields();
            };
            let line = &rest[..end];
            if memchr::memchr(b'"', line).is_some() {
                return self.parse_fields();
            }
            let newline = rest[end] == b'\n';
            self.fields.clear();
            let mut start = self.pos;
            for i in memchr::memchr_iter(self.delimiter, line) {
                self.fields.push((start, self.pos + i));
                start = self.pos + i + 1;
            }
            self.fields.push((start, self.pos + line.len()));
            self.source = Source::Buf;
            self.record_line = self.line_at_pos;
            self.line_at_pos += u64::from(newline);
            self.pos += end + 1;
            return Ok(true);
        }
    }

    /// Reads one record with the parser, from `buf[pos]` (not a terminator) on.
    fn parse_fields(&mut self) -> io::Result<bool> {
        self.record_line = self.line_at_pos;
        if self.parsed.is_empty() {
            self.parsed.resize(1024, 0);
            self.ends.resize(16, 0);
        }
        let (mut nout, mut nend) = (0, 0);
        loop {
            let input = &self.buf[self.pos..self.len];
            let (res, nin, out, end) =
                self.parser
                    .read_record(input, &mut self.parsed[nout..], &mut self.ends[nend..]);
            self.line_at_pos += memchr::memchr_iter(b'\n', &input[..nin]).count() as u64;
            self.pos += nin;
            nout += out;
            nend += end;
            match res {
                ReadRecordResult::InputEmpty => {
                    if self.eof {
                        // An empty input tells the parser the input ended: it then gives
                        // the record it holds.
                        continue;
                    }
                    self.fill()?;
                }
                ReadRecordResult::OutputFull => {
                    let n = self.parsed.len() * 2;
                    self.parsed.resize(n, 0);
                }
                ReadRecordResult::OutputEndsFull => {
                    let n = self.ends.len() * 2;
                    self.ends.resize(n, 0);
                }
                ReadRecordResult::Record => break,
                ReadRecordResult::End => return Ok(false),
            }
        }
        self.fields.clear();
        let mut start = 0;
        for &end in &self.ends[..nend] {
            self.fields.push((start, end));
            start = end;
        }
        self.source = Source::Parsed;
        Ok(true)
    }
}

/// They already mean quote and end of record: no CSV uses them between fields.
fn is_reserved(b: u8) -> bool {
    matches!(b, b'"' | b'\r' | b'\n')
}

/// A CSV delimiter as a user writes it on a command line: one byte (`;`, or a tab typed as
/// one), the escape `\t` (shells pass `'\t'` as two characters), or a name: `tab`, `comma`,
/// `semicolon`, `pipe` (case-insensitive). The quote, CR and LF are refused.
pub fn parse_csv_delimiter(s: &str) -> Result<u8, DelimiterError> {
    let b = match s.to_ascii_lowercase().as_str() {
        "\\t" | "tab" => b'\t',
        "comma" => b',',
        "semicolon" => b';',
        "pipe" => b'|',
        _ => match s.as_bytes() {
            [b] => *b,
            _ => return Err(DelimiterError::NotOneByte(s.to_string())),
        },
    };
    if is_reserved(b) {
        return Err(DelimiterError::Reserved(b));
    }
    Ok(b)
}

/// Why a CSV delimiter is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DelimiterError {
    /// Neither one byte nor an escape or name of one.
    NotOneByte(String),
    /// The quote, CR or LF.
    Reserved(u8),
}

impl std::fmt::Display for DelimiterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DelimiterError::NotOneByte(s) => write!(
                f,
                "{s:?} is not one byte, \\t, tab, comma, semicolon or pipe"
            ),
            DelimiterError::Reserved(b) => write!(
                f,
                "the CSV delimiter cannot be {:?}: it is the quote or a line end",
                *b as char
            ),
        }
    }
}

impl std::error::Error for DelimiterError {}

fn missing_column(role: Role, name: &str, header: &[Vec<u8>]) -> String {
    let mut msg = format!(
        "{} column \"{name}\" not found; the header has:",
        role.name()
    );
    for (i, h) in header.iter().enumerate() {
        if i == MAX_LISTED_COLUMNS {
            msg.push_str(&format!(" ... ({} columns)", header.len()));
            break;
        }
        if i > 0 {
            msg.push(',');
        }
        msg.push_str(&format!(" \"{}\"", String::from_utf8_lossy(h)));
    }
    msg
}

fn io_error(path: &Path, e: io::Error, location: Location) -> InputError {
    InputError::new(path, location, format!("read error: {e}"))
}

impl<R: Read + Send> RecordReader for CsvReader<R> {
    fn read_record(&mut self) -> Result<Option<Record<'_>>, InputError> {
        let next_line = Location::Line(self.line_at_pos);
        if !self
            .read_fields()
            .map_err(|e| io_error(&self.path, e, next_line))?
        {
            return Ok(None);
        }
        let line = self.record_line;
        let n = self.fields.len();
        let expected = *self.expected_fields.get_or_insert(n);
        let err = |reason: String| InputError::new(&self.path, Location::Line(line), reason);
        if n != expected {
            let whence = if self.has_header {
                "the header"
            } else {
                "the first row"
            };
            return Err(err(format!(
                "{n} fields, expected {expected} as in {whence}"
            )));
        }
        // Only reachable without a header: the header's columns were checked at open.
        let missing = |role: Role, idx: usize| {
            err(format!(
                "{} column {idx} missing: the row has {n} fields",
                role.name()
            ))
        };
        if self.key_idx >= n {
            return Err(missing(Role::Key, self.key_idx));
        }
        if self.field(self.key_idx).is_empty() {
            return Err(err("empty key".to_string()));
        }
        if self.row.is_none() {
            if self.value_idx >= n {
                return Err(missing(Role::Value, self.value_idx));
            }
            return Ok(Some((self.field(self.key_idx), self.field(self.value_idx))));
        }
        let Some(row) = self.row.as_mut() else {
            return Ok(None);
        };
        let key_idx = self.key_idx;
        let fields = row.fields.get_or_insert_with(|| {
            (0..n)
                .filter(|&i| i != key_idx)
                .map(|i| (i.to_string().into_bytes(), i))
                .collect()
        });
        if fields.is_empty() {
            return Err(err(
                "the row has no field besides the key to make a value of".to_string(),
            ));
        }
        row.builder.begin();
        for (name, i) in fields.iter() {
            let Some(&(start, end)) = self.fields.get(*i) else {
                return Err(missing(Role::Field, *i));
            };
            let text = match self.source {
                Source::Buf => &self.buf[start..end],
                Source::Parsed => &self.parsed[start..end],
            };
            row.builder.text(name, text).map_err(err)?;
        }
        row.builder.finish();
        let (start, end) = self.fields[key_idx];
        let key = match self.source {
            Source::Buf => &self.buf[start..end],
            Source::Parsed => &self.parsed[start..end],
        };
        Ok(Some((key, row.builder.value())))
    }

    fn bytes_read(&self) -> u64 {
        self.base + self.pos as u64
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record of `input` as this reader splits it, with a `buf_size`-byte buffer.
    fn records(input: &[u8], delimiter: u8, buf_size: usize) -> Vec<Vec<Vec<u8>>> {
        records_from(input, delimiter, buf_size)
    }

    /// A reader handing out its bytes in chunks of the given sizes, in turn (short reads).
    struct Chunked<'a> {
        data: &'a [u8],
        sizes: Vec<usize>,
        turn: usize,
    }

    impl Read for Chunked<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let want = self.sizes[self.turn % self.sizes.len()].max(1);
            self.turn += 1;
            let n = want.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn records_from(input: impl Read, delimiter: u8, buf_size: usize) -> Vec<Vec<Vec<u8>>> {
        let spec = InputSpec {
            key_field: "0".into(),
            value_field: "1".into(),
            csv_delimiter: delimiter,
            csv_has_header: false,
            ..InputSpec::default()
        };
        let mut r = CsvReader::with_buffer(Path::new("t.csv"), input, 0, &spec, buf_size).unwrap();
        let mut out = Vec::new();
        while r.read_fields().unwrap() {
            out.push((0..r.fields.len()).map(|i| r.field(i).to_vec()).collect());
        }
        out
    }

    /// The `csv` crate's records of `input`: the parser the fast path must agree with.
    fn reference(input: &[u8], delimiter: u8) -> Vec<Vec<Vec<u8>>> {
        let mut rdr = csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(false)
            .flexible(true)
            .from_reader(input);
        rdr.byte_records()
            .map(|r| r.unwrap().iter().map(|f| f.to_vec()).collect())
            .collect()
    }

    /// Pieces random inputs are made of: the bytes that matter (delimiters, quote, CR, LF, a
    /// byte-order mark's), an escaped quote, a long field and a run of delimiters (records
    /// over the parser's first 1 KiB of output and 16 fields).
    fn pieces() -> Vec<Vec<u8>> {
        let mut p: Vec<Vec<u8>> = [b'a', b',', b';', b'"', b'\r', b'\n', b' ', 0xef, 0xbb, 0xbf]
            .iter()
            .map(|&b| vec![b])
            .collect();
        p.push(b"\"\"".to_vec());
        p.push(vec![b'x'; 700]);
        p.push(vec![b','; 20]);
        p
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Random inputs split exactly as the `csv` crate splits them, whatever the delimiter,
        /// the buffer size (records across refills and longer than the buffer) and the sizes
        /// the input hands bytes out in.
        #[test]
        fn splits_as_the_csv_crate_does(
            parts in proptest::collection::vec(proptest::sample::select(pieces()), 0..80),
            bom in proptest::bool::ANY,
            delimiter in proptest::sample::select(vec![b',', b';', b'a', b' ', 0xef]),
            buf_size in 1usize..64,
            reads in proptest::collection::vec(1usize..80, 1..8),
        ) {
            let mut input = if bom { b"\xef\xbb\xbf".to_vec() } else { Vec::new() };
            for p in &parts {
                input.extend_from_slice(p);
            }
            let want = reference(&input, delimiter);
            proptest::prop_assert_eq!(&records(&input, delimiter, buf_size), &want);
            let chunked = Chunked { data: &input, sizes: reads, turn: 0 };
            proptest::prop_assert_eq!(&records_from(chunked, delimiter, buf_size), &want);
        }
    }

    /// Regression (review): lines ended by CR alone were read whole before a line was split,
    /// the buffer growing to the whole file and each line searched to its end.
    #[test]
    fn lines_ended_by_cr_alone_stream_in_a_small_buffer() {
        let input = b"k,v\r".repeat(100_000);
        let spec = InputSpec {
            key_field: "0".into(),
            value_field: "1".into(),
            csv_has_header: false,
            ..InputSpec::default()
        };
        let mut r = CsvReader::with_buffer(Path::new("t.csv"), &input[..], 0, &spec, 64).unwrap();
        let (mut k, mut v) = (Vec::new(), Vec::new());
        let mut n = 0;
        while r.next_record(&mut k, &mut v).unwrap() {
            assert_eq!((&k[..], &v[..]), (&b"k"[..], &b"v"[..]));
            n += 1;
        }
        assert_eq!(n, 100_000);
        assert_eq!(r.buf.len(), 64, "the buffer grew");
    }

    #[test]
    fn plain_and_quoted_lines_mix() {
        let input = b"k1,v1\r\n\"k,2\",\"v\"\"2\"\n\nk3,\"multi\nline\"\rk4,v4\n\"k5\",v5";
        let want: Vec<Vec<Vec<u8>>> = vec![
            vec![b"k1".to_vec(), b"v1".to_vec()],
            vec![b"k,2".to_vec(), b"v\"2".to_vec()],
            vec![b"k3".to_vec(), b"multi\nline".to_vec()],
            vec![b"k4".to_vec(), b"v4".to_vec()],
            vec![b"k5".to_vec(), b"v5".to_vec()],
        ];
        for size in [1, 3, 7, 1 << 20] {
            assert_eq!(records(input, b',', size), want, "buffer {size}");
        }
        assert_eq!(reference(input, b','), want);
    }

    /// Regression (found by the test above): with a buffer smaller than a byte-order mark, the
    /// first read held part of it, which was taken as data.
    #[test]
    fn a_byte_order_mark_split_across_reads_is_still_dropped() {
        for size in 1..4 {
            assert_eq!(
                records(b"\xef\xbb\xbf", b',', size),
                Vec::<Vec<Vec<u8>>>::new()
            );
            assert_eq!(
                records(b"\xef\xbb\xbfa,b\n", b',', size),
                vec![vec![b"a".to_vec(), b"b".to_vec()]]
            );
            // Not a mark: data.
            assert_eq!(
                records(b"\xef\xbb\n", b',', size),
                vec![vec![b"\xef\xbb".to_vec()]]
            );
        }
    }

    #[test]
    fn a_quote_or_line_end_as_delimiter_is_refused() {
        for d in [b'"', b'\r', b'\n'] {
            let spec = InputSpec {
                csv_delimiter: d,
                ..InputSpec::default()
            };
            let e = CsvReader::with_buffer(Path::new("t.csv"), &b"a,b\n"[..], 0, &spec, 64)
                .err()
                .expect("refused");
            assert!(e.to_string().contains("delimiter cannot be"), "{e}");
        }
    }

    #[test]
    fn delimiters_as_written_on_a_command_line() {
        for (arg, want) in [
            (",", b','),
            (";", b';'),
            ("|", b'|'),
            ("\t", b'\t'),
            ("\\t", b'\t'),
            ("tab", b'\t'),
            ("TAB", b'\t'),
            ("comma", b','),
            ("semicolon", b';'),
            ("Pipe", b'|'),
            (" ", b' '),
            ("\\", b'\\'),
        ] {
            assert_eq!(parse_csv_delimiter(arg), Ok(want), "{arg:?}");
        }
        for arg in ["", ";;", "\\n", "\\x09", "space", "é", "tabs"] {
            let e = parse_csv_delimiter(arg).expect_err(arg);
            assert_eq!(e, DelimiterError::NotOneByte(arg.to_string()));
            let line = e.to_string();
            assert!(
                line.contains("not one byte") && !line.contains('\n'),
                "{line}"
            );
        }
        for (arg, b) in [("\"", b'"'), ("\n", b'\n'), ("\r", b'\r')] {
            let e = parse_csv_delimiter(arg).expect_err(arg);
            assert_eq!(e, DelimiterError::Reserved(b));
            assert!(e.to_string().contains("quote or a line end"), "{e}");
        }
    }

    /// A tab-separated file read with the delimiter the command line gives for `\t`.
    #[test]
    fn tab_separated_values() {
        let spec = InputSpec {
            csv_delimiter: parse_csv_delimiter("\\t").unwrap(),
            ..InputSpec::default()
        };
        let input: &[u8] = b"key\tvalue\na\tx,y\n";
        let mut r = CsvReader::with_buffer(Path::new("t.tsv"), input, 0, &spec, 64).unwrap();
        assert_eq!(r.read_record().unwrap(), Some((&b"a"[..], &b"x,y"[..])));
        assert_eq!(r.read_record().unwrap(), None);
    }

    #[test]
    fn line_numbers_count_blank_lines_and_quoted_newlines() {
        let spec = InputSpec {
            key_field: "0".into(),
            value_field: "1".into(),
            csv_has_header: false,
            ..InputSpec::default()
        };
        let input: &[u8] = b"\n\na,1\n\"b\nc\",2\r\n\r\nd,3\n";
        let mut r = CsvReader::with_buffer(Path::new("t.csv"), input, 0, &spec, 4).unwrap();
        let (mut k, mut v) = (Vec::new(), Vec::new());
        let mut lines = Vec::new();
        while r.next_record(&mut k, &mut v).unwrap() {
            lines.push((String::from_utf8(k.clone()).unwrap(), r.location()));
        }
        assert_eq!(
            lines,
            vec![
                ("a".to_string(), Location::Line(3)),
                ("b\nc".to_string(), Location::Line(4)),
                ("d".to_string(), Location::Line(7)),
            ]
        );
    }
}
