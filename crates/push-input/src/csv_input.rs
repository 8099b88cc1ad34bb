//! CSV input: `csv` crate byte records, so fields pass through as raw bytes.
//!
//! Line numbers are tracked here rather than taken from the csv crate's record positions: those
//! are where the previous record ended, so a record after blank lines (which the crate skips)
//! would be reported on the first blank line.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use csv::{ByteRecord, ReaderBuilder};

use crate::{InputError, InputSpec, Location, RecordReader, Role};

/// Read buffer; large so that a fast disk is not throttled by small reads.
const BUF_SIZE: usize = 1 << 20;
/// Header names quoted in a "column not found" error, at most.
const MAX_LISTED_COLUMNS: usize = 40;

pub(crate) struct CsvReader {
    path: PathBuf,
    rdr: csv::Reader<NewlineIndex<File>>,
    record: ByteRecord,
    key_idx: usize,
    value_idx: usize,
    /// Fields every row must have: the header's count, or else the first row's (set on reading
    /// it). `None` until known.
    expected_fields: Option<usize>,
    has_header: bool,
    /// Line number at the csv reader's current byte position.
    line_at_pos: u64,
    /// First line of the last record returned (0: none yet).
    record_line: u64,
    total: u64,
}

/// Remembers the offsets of the newlines read ahead by the csv reader that it has not yet
/// consumed, to count the lines of each record's raw bytes.
struct NewlineIndex<R> {
    inner: R,
    offset: u64,
    newlines: VecDeque<u64>,
}

impl<R: Read> Read for NewlineIndex<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let base = self.offset;
        self.newlines
            .extend(memchr::memchr_iter(b'\n', &buf[..n]).map(|i| base + i as u64));
        self.offset += n as u64;
        Ok(n)
    }
}

impl CsvReader {
    pub(crate) fn new(
        path: &Path,
        file: File,
        total: u64,
        spec: &InputSpec,
    ) -> Result<Self, InputError> {
        let rdr = ReaderBuilder::new()
            .delimiter(spec.csv_delimiter)
            .has_headers(spec.csv_has_header)
            // Row lengths are checked here instead, for a message that says what was expected.
            .flexible(true)
            .buffer_capacity(BUF_SIZE)
            .from_reader(NewlineIndex {
                inner: file,
                offset: 0,
                newlines: VecDeque::new(),
            });
        let mut r = CsvReader {
            path: path.to_path_buf(),
            rdr,
            record: ByteRecord::new(),
            key_idx: 0,
            value_idx: 0,
            expected_fields: None,
            has_header: spec.csv_has_header,
            line_at_pos: 1,
            record_line: 0,
            total,
        };
        if spec.csv_has_header {
            let header = match r.rdr.byte_headers() {
                Ok(h) => h.clone(),
                Err(e) => return Err(csv_error(path, e, Location::Line(1))),
            };
            if header.is_empty() {
                return Err(InputError::new(
                    path,
                    Location::None,
                    "empty file: no header line",
                ));
            }
            let line = Location::Line(r.advance_lines(&header));
            let find = |role: Role, name: &str| {
                header
                    .iter()
                    .position(|h| h == name.as_bytes())
                    .ok_or_else(|| {
                        InputError::new(path, line.clone(), missing_column(role, name, &header))
                    })
            };
            r.key_idx = find(Role::Key, &spec.key_field)?;
            r.value_idx = find(Role::Value, &spec.value_field)?;
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
            r.value_idx = index(Role::Value, &spec.value_field)?;
        }
        Ok(r)
    }

    fn advance_lines(&mut self, record: &ByteRecord) -> u64 {
        advance_lines(&mut self.rdr, &mut self.line_at_pos, record)
    }
}

/// Accounts for the raw bytes the csv reader consumed to read `record`, which are: blank lines
/// it skipped, the record (whose only newlines are inside quoted fields, copied into the fields
/// as they are), and the record's terminator unless that is `\r\n` (its `\n` is consumed with
/// the next record) or the end of file. Returns the record's first line.
fn advance_lines(
    rdr: &mut csv::Reader<NewlineIndex<File>>,
    line_at_pos: &mut u64,
    record: &ByteRecord,
) -> u64 {
    let end = rdr.position().byte();
    let index = rdr.get_mut();
    let (mut consumed, mut last) = (0u64, None);
    while let Some(&off) = index.newlines.front() {
        if off >= end {
            break;
        }
        index.newlines.pop_front();
        consumed += 1;
        last = Some(off);
    }
    let in_fields = memchr::memchr_iter(b'\n', record.as_slice()).count() as u64;
    let terminator = u64::from(end > 0 && last == Some(end - 1));
    let skipped = consumed.saturating_sub(in_fields + terminator);
    let first = *line_at_pos + skipped;
    *line_at_pos += consumed;
    first
}

fn missing_column(role: Role, name: &str, header: &ByteRecord) -> String {
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

fn csv_error(path: &Path, e: csv::Error, location: Location) -> InputError {
    let reason = match e.kind() {
        csv::ErrorKind::Io(io) => format!("read error: {io}"),
        _ => e.to_string(),
    };
    InputError::new(path, location, reason)
}

impl RecordReader for CsvReader {
    fn next_record(&mut self, key: &mut Vec<u8>, value: &mut Vec<u8>) -> Result<bool, InputError> {
        key.clear();
        value.clear();
        let next_line = Location::Line(self.line_at_pos);
        let record = &mut self.record;
        if !self
            .rdr
            .read_byte_record(record)
            .map_err(|e| csv_error(&self.path, e, next_line))?
        {
            return Ok(false);
        }
        let line = advance_lines(&mut self.rdr, &mut self.line_at_pos, record);
        self.record_line = line;
        let n = record.len();
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
        let field = |role: Role, idx: usize| {
            record.get(idx).ok_or_else(|| {
                err(format!(
                    "{} column {idx} missing: the row has {n} fields",
                    role.name()
                ))
            })
        };
        let k = field(Role::Key, self.key_idx)?;
        if k.is_empty() {
            return Err(err("empty key".to_string()));
        }
        let v = field(Role::Value, self.value_idx)?;
        key.extend_from_slice(k);
        value.extend_from_slice(v);
        Ok(true)
    }

    fn bytes_read(&self) -> u64 {
        self.rdr.position().byte()
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
