//! Parquet input: the Arrow record-batch reader, projected to the key and value columns.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, FixedSizeBinaryArray,
    LargeBinaryArray, LargeStringArray, PrimitiveArray, RecordBatch, StringArray, StringViewArray,
};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

use crate::{InputError, InputSpec, Location, Record, RecordReader, Role};

/// Rows per decoded batch: big enough to amortize per-batch work, small enough (with two
/// columns) to stay in cache.
const BATCH_ROWS: usize = 8192;
const MAX_LISTED_COLUMNS: usize = 40;

pub(crate) struct ParquetReader {
    path: PathBuf,
    reader: ParquetRecordBatchReader,
    /// Positions of the key and value columns in a projected batch.
    key_pos: usize,
    value_pos: usize,
    batch: Option<(Col, Col)>,
    /// The key or value just read, when it is a number written as text.
    key_scratch: Vec<u8>,
    value_scratch: Vec<u8>,
    batch_len: usize,
    batch_next: usize,
    /// Rows returned so far, which is the 1-based number of the last one.
    row: u64,
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
        let find = |role: Role, name: &str| {
            let idx = schema.fields().iter().position(|f| f.name() == name);
            idx.ok_or_else(|| at_open(missing_column(role, name, &schema)))
        };
        let key_idx = find(Role::Key, &spec.key_field)?;
        let value_idx = find(Role::Value, &spec.value_field)?;

        // Dictionary-typed columns (as pandas writes categoricals) are read as their plain value
        // type instead, through a schema hint, so that conversion only knows plain arrays.
        let mut plain: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
        let mut hinted = false;
        for (role, idx) in [(Role::Key, key_idx), (Role::Value, value_idx)] {
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
                return Err(at_open(format!(
                    "{} column \"{}\" has unsupported type {}",
                    role.name(),
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
        let mask = ProjectionMask::roots(meta.parquet_schema(), [key_idx, value_idx]);
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta)
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| at_open(format!("cannot read Parquet file: {e}")))?;
        // Projected columns keep file order.
        let (key_pos, value_pos) = match key_idx.cmp(&value_idx) {
            std::cmp::Ordering::Less => (0, 1),
            std::cmp::Ordering::Equal => (0, 0),
            std::cmp::Ordering::Greater => (1, 0),
        };
        Ok(ParquetReader {
            path: path.to_path_buf(),
            reader,
            key_pos,
            value_pos,
            batch: None,
            key_scratch: Vec::new(),
            value_scratch: Vec::new(),
            batch_len: 0,
            batch_next: 0,
            row: 0,
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
            let key = self.column(&batch, self.key_pos)?;
            let value = self.column(&batch, self.value_pos)?;
            self.batch_len = batch.num_rows();
            self.batch_next = 0;
            self.batch = Some((key, value));
            return Ok(true);
        }
    }

    fn column(&self, batch: &RecordBatch, pos: usize) -> Result<Col, InputError> {
        let array = batch.columns().get(pos);
        // Types were checked at open, so this is a reader inconsistency, reported not panicked.
        array.and_then(Col::new).ok_or_else(|| {
            let dt = array.map_or_else(|| "none".to_string(), |a| a.data_type().to_string());
            self.error(
                self.row + 1,
                format!("unexpected column type {dt} in a decoded batch"),
            )
        })
    }

    fn error(&self, row: u64, reason: String) -> InputError {
        InputError::new(&self.path, Location::Row(row), reason)
    }
}

fn missing_column(role: Role, name: &str, schema: &Schema) -> String {
    let mut msg = format!("{} column \"{name}\" not found; the file has:", role.name());
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

fn supported(dt: &DataType) -> bool {
    use DataType::*;
    matches!(
        dt,
        Utf8 | LargeUtf8
            | Utf8View
            | Binary
            | LargeBinary
            | BinaryView
            | FixedSizeBinary(_)
            | Int8
            | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Float32
            | Float64
            | Boolean
    )
}

/// A decoded column of a supported type, downcast once per batch rather than once per value.
enum Col {
    Utf8(StringArray),
    LargeUtf8(LargeStringArray),
    Utf8View(StringViewArray),
    Binary(BinaryArray),
    LargeBinary(LargeBinaryArray),
    BinaryView(BinaryViewArray),
    FixedBinary(FixedSizeBinaryArray),
    I8(PrimitiveArray<Int8Type>),
    I16(PrimitiveArray<Int16Type>),
    I32(PrimitiveArray<Int32Type>),
    I64(PrimitiveArray<Int64Type>),
    U8(PrimitiveArray<UInt8Type>),
    U16(PrimitiveArray<UInt16Type>),
    U32(PrimitiveArray<UInt32Type>),
    U64(PrimitiveArray<UInt64Type>),
    F32(PrimitiveArray<Float32Type>),
    F64(PrimitiveArray<Float64Type>),
    Bool(BooleanArray),
}

impl Col {
    fn new(a: &ArrayRef) -> Option<Col> {
        fn cast<T: Clone + 'static>(a: &ArrayRef) -> Option<T> {
            a.as_any().downcast_ref::<T>().cloned()
        }
        Some(match a.data_type() {
            DataType::Utf8 => Col::Utf8(cast(a)?),
            DataType::LargeUtf8 => Col::LargeUtf8(cast(a)?),
            DataType::Utf8View => Col::Utf8View(cast(a)?),
            DataType::Binary => Col::Binary(cast(a)?),
            DataType::LargeBinary => Col::LargeBinary(cast(a)?),
            DataType::BinaryView => Col::BinaryView(cast(a)?),
            DataType::FixedSizeBinary(_) => Col::FixedBinary(cast(a)?),
            DataType::Int8 => Col::I8(cast(a)?),
            DataType::Int16 => Col::I16(cast(a)?),
            DataType::Int32 => Col::I32(cast(a)?),
            DataType::Int64 => Col::I64(cast(a)?),
            DataType::UInt8 => Col::U8(cast(a)?),
            DataType::UInt16 => Col::U16(cast(a)?),
            DataType::UInt32 => Col::U32(cast(a)?),
            DataType::UInt64 => Col::U64(cast(a)?),
            DataType::Float32 => Col::F32(cast(a)?),
            DataType::Float64 => Col::F64(cast(a)?),
            DataType::Boolean => Col::Bool(cast(a)?),
            _ => return None,
        })
    }

    fn array(&self) -> &dyn Array {
        match self {
            Col::Utf8(a) => a,
            Col::LargeUtf8(a) => a,
            Col::Utf8View(a) => a,
            Col::Binary(a) => a,
            Col::LargeBinary(a) => a,
            Col::BinaryView(a) => a,
            Col::FixedBinary(a) => a,
            Col::I8(a) => a,
            Col::I16(a) => a,
            Col::I32(a) => a,
            Col::I64(a) => a,
            Col::U8(a) => a,
            Col::U16(a) => a,
            Col::U32(a) => a,
            Col::U64(a) => a,
            Col::F32(a) => a,
            Col::F64(a) => a,
            Col::Bool(a) => a,
        }
    }

    /// Value `i` as bytes, `None` if it is null: borrowed from the column for strings and
    /// binaries, or else written into `scratch` (cleared first). `i` is below the batch length.
    fn bytes<'a>(&'a self, i: usize, scratch: &'a mut Vec<u8>) -> Option<&'a [u8]> {
        if self.array().is_null(i) {
            return None;
        }
        scratch.clear();
        // Writing into a Vec cannot fail.
        let _ = match self {
            Col::Utf8(a) => return Some(a.value(i).as_bytes()),
            Col::LargeUtf8(a) => return Some(a.value(i).as_bytes()),
            Col::Utf8View(a) => return Some(a.value(i).as_bytes()),
            Col::Binary(a) => return Some(a.value(i)),
            Col::LargeBinary(a) => return Some(a.value(i)),
            Col::BinaryView(a) => return Some(a.value(i)),
            Col::FixedBinary(a) => return Some(a.value(i)),
            Col::Bool(a) => return Some(if a.value(i) { b"true" } else { b"false" }),
            Col::I8(a) => write!(scratch, "{}", a.value(i)),
            Col::I16(a) => write!(scratch, "{}", a.value(i)),
            Col::I32(a) => write!(scratch, "{}", a.value(i)),
            Col::I64(a) => write!(scratch, "{}", a.value(i)),
            Col::U8(a) => write!(scratch, "{}", a.value(i)),
            Col::U16(a) => write!(scratch, "{}", a.value(i)),
            Col::U32(a) => write!(scratch, "{}", a.value(i)),
            Col::U64(a) => write!(scratch, "{}", a.value(i)),
            Col::F32(a) => write!(scratch, "{}", a.value(i)),
            Col::F64(a) => write!(scratch, "{}", a.value(i)),
        };
        Some(scratch)
    }
}

impl RecordReader for ParquetReader {
    fn read_record(&mut self) -> Result<Option<Record<'_>>, InputError> {
        if self.batch_next >= self.batch_len && (self.done || !self.next_batch()?) {
            return Ok(None);
        }
        let i = self.batch_next;
        self.batch_next += 1;
        self.row += 1;
        while self.group < self.groups.len()
            && self.row > self.group_first_row + self.groups[self.group].0
        {
            self.group_first_row += self.groups[self.group].0;
            self.group_first_byte += self.groups[self.group].1;
            self.group += 1;
        }
        let Some((k, v)) = &self.batch else {
            return Ok(None);
        };
        let error = |reason: &str| InputError::new(&self.path, Location::Row(self.row), reason);
        let key = match k.bytes(i, &mut self.key_scratch) {
            None => return Err(error("null key")),
            Some([]) => return Err(error("empty key")),
            Some(key) => key,
        };
        let value = v
            .bytes(i, &mut self.value_scratch)
            .ok_or_else(|| error("null value"))?;
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
}
