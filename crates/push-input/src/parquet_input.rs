//! Parquet input: the Arrow record-batch reader, projected to the columns used (the key and
//! the value, or the key and a row's fields), each value rendered by `render`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

use crate::render::{supported, Col};
use crate::rows::{check_unique, RowBuilder};
use crate::{InputError, InputSpec, Location, Nulls, Record, RecordReader};

/// Rows per decoded batch: big enough to amortize per-batch work, small enough to stay in
/// cache.
const BATCH_ROWS: usize = 8192;
const MAX_LISTED_COLUMNS: usize = 40;

/// What a record's value is made of.
enum Value {
    /// One column, at this position of a projected batch.
    Column(usize),
    /// A row's fields: names and positions, in the order they are written.
    Row {
        fields: Vec<(String, usize)>,
        builder: Box<RowBuilder>,
    },
}

pub(crate) struct ParquetReader {
    path: PathBuf,
    reader: ParquetRecordBatchReader,
    /// Position of the key column in a projected batch.
    key_pos: usize,
    value: Value,
    nulls: Nulls,
    /// The projected batch's columns.
    cols: Vec<Col>,
    /// The key or value just read, when it is not a string or binary.
    key_scratch: Vec<u8>,
    value_scratch: Vec<u8>,
    batch_len: usize,
    batch_next: usize,
    /// Rows read so far, which is the 1-based number of the last one.
    row: u64,
    skipped: u64,
    /// Per row group: (rows, compressed bytes), for progress.
    groups: Vec<(u64, u64)>,
    group: usize,
    group_first_row: u64,
    group_first_byte: u64,
    done: bool,
    total: u64,
}

impl ParquetReader {
    pub(crate) fn new(
        path: &Path,
        file: File,
        total: u64,
        spec: &InputSpec,
    ) -> Result<Self, InputError> {
        let at_open = |reason: String| InputError::new(path, Location::None, reason);
        let mut meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
            .map_err(|e| at_open(format!("cannot read Parquet metadata: {e}")))?;
        let schema = meta.schema().clone();
        let find = |role: &str, name: &str| {
            let idx = schema.fields().iter().position(|f| f.name() == name);
            idx.ok_or_else(|| at_open(missing_column(role, name, &schema)))
        };
        let key_idx = find("key", &spec.key_field)?;
        // The columns of the value: (name, index in the file).
        let value_cols: Vec<(String, usize)> = match &spec.row {
            None => vec![(spec.value_field.clone(), find("value", &spec.value_field)?)],
            Some(row) => match &row.fields {
                Some(names) => {
                    check_unique(names).map_err(at_open)?;
                    names
                        .iter()
                        .map(|n| Ok((n.clone(), find("field", n)?)))
                        .collect::<Result<_, InputError>>()?
                }
                None => schema
                    .fields()
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != key_idx)
                    .map(|(i, f)| (f.name().clone(), i))
                    .collect(),
            },
        };
        if value_cols.is_empty() {
            return Err(at_open(
                "the file has no column besides the key to make a value of".to_string(),
            ));
        }

        // Dictionary-typed columns (as pandas writes categoricals) are read as their plain value
        // type instead, through a schema hint, so that rendering only knows plain arrays.
        let mut plain: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
        let mut hinted = false;
        let used = std::iter::once(("key", key_idx)).chain(
            value_cols
                .iter()
                .map(|(_, i)| (if spec.row.is_some() { "field" } else { "value" }, *i)),
        );
        for (role, idx) in used {
            let field = &schema.fields()[idx];
            let dt = match field.data_type() {
                DataType::Dictionary(_, inner) => {
                    hinted = true;
                    plain[idx] = Arc::new(
                        field
                            .as_ref()
                            .clone()
                            .with_data_type(inner.as_ref().clone()),
                    );
                    inner.as_ref()
                }
                dt => dt,
            };
            if !supported(dt) {
                // Taken by default as one of every column: say how to leave it out.
                let hint = match spec.row.as_ref().map(|r| &r.fields) {
                    Some(None) if role == "field" => "; name the fields to load with --fields",
                    _ => "",
                };
                return Err(at_open(format!(
                    "{role} column \"{}\" has unsupported type {}{hint}",
                    field.name(),
                    field.data_type()
                )));
            }
        }
        if hinted {
            let hint = Arc::new(Schema::new_with_metadata(plain, schema.metadata().clone()));
            meta = ArrowReaderMetadata::try_new(
                meta.metadata().clone(),
                ArrowReaderOptions::new().with_schema(hint),
            )
            .map_err(|e| {
                at_open(format!(
                    "cannot read dictionary column as plain values: {e}"
                ))
            })?;
        }

        let groups = meta
            .metadata()
            .row_groups()
            .iter()
            .map(|g| {
                (
                    g.num_rows().max(0) as u64,
                    g.compressed_size().max(0) as u64,
                )
            })
            .collect();
        // Projected columns keep file order: a column's position is its rank among them.
        let mut projected: Vec<usize> = std::iter::once(key_idx)
            .chain(value_cols.iter().map(|(_, i)| *i))
            .collect();
        projected.sort_unstable();
        projected.dedup();
        let pos = |idx: usize| projected.binary_search(&idx).unwrap_or(0);
        let mask = ProjectionMask::roots(meta.parquet_schema(), projected.iter().copied());
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta)
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| at_open(format!("cannot read Parquet file: {e}")))?;
        let value = match &spec.row {
            None => Value::Column(pos(value_cols[0].1)),
            Some(row) => Value::Row {
                fields: value_cols
                    .iter()
                    .map(|(n, i)| (n.clone(), pos(*i)))
                    .collect(),
                builder: Box::new(RowBuilder::new(row.encoding, spec.nulls)),
            },
        };
        Ok(ParquetReader {
            path: path.to_path_buf(),
            reader,
            key_pos: pos(key_idx),
            value,
            nulls: spec.nulls,
            cols: Vec::new(),
            key_scratch: Vec::new(),
            value_scratch: Vec::new(),
            batch_len: 0,
            batch_next: 0,
            row: 0,
            skipped: 0,
            groups,
            group: 0,
            group_first_row: 0,
            group_first_byte: 0,
            done: false,
            total,
        })
    }

    /// Loads the next non-empty batch; false at end of input.
    fn next_batch(&mut self) -> Result<bool, InputError> {
        loop {
            let batch = match self.reader.next() {
                None => {
                    self.done = true;
                    return Ok(false);
                }
                Some(b) => b.map_err(|e| self.error(self.row + 1, format!("read error: {e}")))?,
            };
            if batch.num_rows() == 0 {
                continue;
            }
            self.cols = self.columns(&batch)?;
            self.batch_len = batch.num_rows();
            self.batch_next = 0;
            return Ok(true);
        }
    }

    fn columns(&self, batch: &RecordBatch) -> Result<Vec<Col>, InputError> {
        batch
            .columns()
            .iter()
            .map(|array| {
                // Types were checked at open, so this is a reader inconsistency, reported not
                // panicked.
                Col::new(array).ok_or_else(|| {
                    self.error(
                        self.row + 1,
                        format!(
                            "unexpected column type {} in a decoded batch",
                            array.data_type()
                        ),
                    )
                })
            })
            .collect()
    }

    fn error(&self, row: u64, reason: String) -> InputError {
        InputError::new(&self.path, Location::Row(row), reason)
    }

    /// Moves to the next row; false at end of input.
    fn advance(&mut self) -> Result<bool, InputError> {
        if self.batch_next >= self.batch_len && (self.done || !self.next_batch()?) {
            return Ok(false);
        }
        self.batch_next += 1;
        self.row += 1;
        while self.group < self.groups.len()
            && self.row > self.group_first_row + self.groups[self.group].0
        {
            self.group_first_row += self.groups[self.group].0;
            self.group_first_byte += self.groups[self.group].1;
            self.group += 1;
        }
        Ok(true)
    }
}

fn missing_column(role: &str, name: &str, schema: &Schema) -> String {
    let mut msg = format!("{role} column \"{name}\" not found; the file has:");
    for (i, f) in schema.fields().iter().enumerate() {
        if i == MAX_LISTED_COLUMNS {
            msg.push_str(&format!(" ... ({} columns)", schema.fields().len()));
            break;
        }
        if i > 0 {
            msg.push(',');
        }
        msg.push_str(&format!(" \"{}\"", f.name()));
    }
    msg
}

impl RecordReader for ParquetReader {
    fn read_record(&mut self) -> Result<Option<Record<'_>>, InputError> {
        // The next row with a value (the null policy may skip rows).
        let i = loop {
            if !self.advance()? {
                return Ok(None);
            }
            let i = self.batch_next - 1;
            let error =
                |reason: String| InputError::new(&self.path, Location::Row(self.row), reason);
            let Some(k) = self.cols.get(self.key_pos) else {
                return Ok(None);
            };
            if k.is_null(i) {
                return Err(error("null key".into()));
            }
            let keep = match &mut self.value {
                Value::Column(pos) => match self.cols.get(*pos) {
                    Some(v) if v.is_null(i) => match self.nulls {
                        Nulls::Error => return Err(error("null value".into())),
                        Nulls::Empty => true,
                        Nulls::Skip => false,
                    },
                    _ => true,
                },
                Value::Row { fields, builder } => {
                    builder.begin();
                    let json = builder.json();
                    for (name, pos) in fields.iter() {
                        let Some(col) = self.cols.get(*pos) else {
                            continue;
                        };
                        if col.is_null(i) {
                            builder.null(name.as_bytes()).map_err(error)?;
                            continue;
                        }
                        let out = builder.start_field(name.as_bytes());
                        if json {
                            col.json(i, out);
                        } else {
                            col.append_text(i, out);
                        }
                        builder.end_field();
                    }
                    builder.finish()
                }
            };
            if keep {
                break i;
            }
            self.skipped += 1;
        };
        let key = self
            .cols
            .get(self.key_pos)
            .and_then(|k| k.text(i, &mut self.key_scratch))
            .unwrap_or_default();
        if key.is_empty() {
            return Err(InputError::new(
                &self.path,
                Location::Row(self.row),
                "empty key",
            ));
        }
        let value = match &self.value {
            Value::Column(pos) => self
                .cols
                .get(*pos)
                .and_then(|v| v.text(i, &mut self.value_scratch))
                .unwrap_or_default(),
            Value::Row { builder, .. } => builder.value(),
        };
        Ok(Some((key, value)))
    }

    fn bytes_read(&self) -> u64 {
        if self.done {
            return self.total;
        }
        // Compressed size of the row groups before the current one, plus its share of the
        // current one by rows.
        let within = match self.groups.get(self.group) {
            Some(&(rows, bytes)) if rows > 0 => {
                let done_rows = self.row - self.group_first_row;
                (bytes as u128 * done_rows as u128 / rows as u128) as u64
            }
            _ => 0,
        };
        (self.group_first_byte + within).min(self.total)
    }

    fn total_bytes(&self) -> u64 {
        self.total
    }

    fn location(&self) -> Location {
        if self.row == 0 {
            Location::None
        } else {
            Location::Row(self.row)
        }
    }

    fn skipped(&self) -> u64 {
        self.skipped
    }
}
