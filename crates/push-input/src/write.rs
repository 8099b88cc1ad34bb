//! Writing datasets in the formats the readers take: for benchmarks, tests and tools that make
//! push inputs. Keys and values are written as given (CSV fields quoted when they need it).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use arrow_array::types::Decimal128Type;
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Float64Array, Int64Array, PrimitiveArray, RecordBatch,
    StringArray, TimestampMillisecondArray,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::Format;

/// Rows per Parquet row group (and per Arrow batch written).
const ROWS_PER_GROUP: usize = 128 * 1024;

/// Writes the records `next` produces (it fills key and value and returns `false` at the end)
/// to `path` in `format`, with fields named `key` and `value`. Parquet columns are binary,
/// Snappy-compressed, as Spark and pandas write by default.
pub fn write_dataset(
    path: &Path,
    format: Format,
    next: &mut dyn FnMut(&mut Vec<u8>, &mut Vec<u8>) -> bool,
) -> std::io::Result<u64> {
    let (mut k, mut v) = (Vec::new(), Vec::new());
    let mut n = 0u64;
    match format {
        Format::Csv | Format::Jsonl => {
            let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
            if format == Format::Csv {
                w.write_all(b"key,value\n")?;
            }
            while next(&mut k, &mut v) {
                if format == Format::Csv {
                    csv_field(&mut w, &k)?;
                    w.write_all(b",")?;
                    csv_field(&mut w, &v)?;
                    w.write_all(b"\n")?;
                } else {
                    let line = format!(
                        "{{\"key\":{},\"value\":{}}}\n",
                        json_string(&k),
                        json_string(&v)
                    );
                    w.write_all(line.as_bytes())?;
                }
                n += 1;
            }
            w.flush()?;
        }
        Format::Parquet => {
            let props = WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_max_row_group_row_count(Some(ROWS_PER_GROUP))
                .build();
            let mut writer: Option<ArrowWriter<File>> = None;
            loop {
                let (mut keys, mut values) = (Vec::new(), Vec::new());
                while keys.len() < ROWS_PER_GROUP && next(&mut k, &mut v) {
                    keys.push(std::mem::take(&mut k));
                    values.push(std::mem::take(&mut v));
                }
                if keys.is_empty() {
                    break;
                }
                n += keys.len() as u64;
                let batch = RecordBatch::try_from_iter([
                    (
                        "key",
                        Arc::new(BinaryArray::from_iter_values(keys.iter())) as ArrayRef,
                    ),
                    (
                        "value",
                        Arc::new(BinaryArray::from_iter_values(values.iter())) as ArrayRef,
                    ),
                ])
                .map_err(std::io::Error::other)?;
                if writer.is_none() {
                    writer = Some(
                        ArrowWriter::try_new(
                            File::create(path)?,
                            batch.schema(),
                            Some(props.clone()),
                        )
                        .map_err(std::io::Error::other)?,
                    );
                }
                if let Some(w) = writer.as_mut() {
                    w.write(&batch).map_err(std::io::Error::other)?;
                }
            }
            match writer {
                Some(w) => {
                    w.close().map_err(std::io::Error::other)?;
                }
                None => {
                    // No rows: still a valid file with the two columns.
                    let batch = RecordBatch::try_from_iter([
                        (
                            "key",
                            Arc::new(BinaryArray::from_iter_values(Vec::<Vec<u8>>::new()))
                                as ArrayRef,
                        ),
                        (
                            "value",
                            Arc::new(BinaryArray::from_iter_values(Vec::<Vec<u8>>::new())),
                        ),
                    ])
                    .map_err(std::io::Error::other)?;
                    let w = ArrowWriter::try_new(File::create(path)?, batch.schema(), Some(props))
                        .map_err(std::io::Error::other)?;
                    w.close().map_err(std::io::Error::other)?;
                }
            }
        }
    }
    Ok(n)
}

/// A table of typed features, one row per entity, for benchmarks and tests of pushes that
/// load rows as hashes or JSON: column `id` (`000000000042`), then `columns` features `f00`,
/// `f01`... whose types cycle through int64, float64, string, boolean, timestamp (ms, UTC)
/// and decimal(12, 2). Row `i`'s feature `j` is, by type: `31 i + j - 500`; `i / 4 + j`;
/// `s{i}-{j}`; `(i + j)` even; 1,700,000,000,000 ms + `1000 i + j` ms; `(100 i + j)` hundredths.
/// Null where `null_every > 0` and `(i + j) % null_every == 0`.
#[derive(Clone, Copy, Debug)]
pub struct FeatureTable {
    pub rows: u64,
    pub columns: usize,
    pub null_every: u64,
}

/// Writes `table` to `path` in `format`: Parquet typed (Snappy); CSV as the text a hash push
/// of the Parquet file stores (a null empty); JSONL with each value as the JSON a JSON push
/// of it writes (a null `null`). Returns the rows written.
pub fn write_feature_table(
    path: &Path,
    format: Format,
    table: &FeatureTable,
) -> std::io::Result<u64> {
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROWS_PER_GROUP))
        .build();
    let mut parquet: Option<ArrowWriter<File>> = None;
    let mut text = match format {
        Format::Parquet => None,
        _ => Some(BufWriter::with_capacity(1 << 20, File::create(path)?)),
    };
    let names: Vec<String> = std::iter::once("id".to_string())
        .chain((0..table.columns).map(|j| format!("f{j:02}")))
        .collect();
    if let (Some(w), Format::Csv) = (text.as_mut(), format) {
        w.write_all(names.join(",").as_bytes())?;
        w.write_all(b"\n")?;
    }
    let mut first = 0u64;
    // One batch at least: a file of no rows still has the columns.
    loop {
        let n = (table.rows - first).min(ROWS_PER_GROUP as u64);
        let batch = feature_batch(table, &names, first, n).map_err(std::io::Error::other)?;
        match text.as_mut() {
            None => {
                if parquet.is_none() {
                    let w = ArrowWriter::try_new(
                        File::create(path)?,
                        batch.schema(),
                        Some(props.clone()),
                    )
                    .map_err(std::io::Error::other)?;
                    parquet = Some(w);
                }
                if let Some(w) = parquet.as_mut() {
                    w.write(&batch).map_err(std::io::Error::other)?;
                }
            }
            Some(w) => write_text_rows(w, format, &names, &batch)?,
        }
        first += n;
        if first >= table.rows {
            break;
        }
    }
    if let Some(w) = parquet {
        w.close().map_err(std::io::Error::other)?;
    }
    if let Some(mut w) = text {
        w.flush()?;
    }
    Ok(table.rows)
}

fn feature_batch(
    t: &FeatureTable,
    names: &[String],
    first: u64,
    n: u64,
) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let rows = first..first + n;
    let null = |i: u64, j: usize| t.null_every > 0 && (i + j as u64).is_multiple_of(t.null_every);
    let mut cols: Vec<(String, ArrayRef)> = vec![(
        names[0].clone(),
        Arc::new(StringArray::from_iter_values(
            // Twelve digits, as redis-benchmark writes `__rand_int__`: its reads can name them.
            rows.clone().map(|i| format!("{i:012}")),
        )),
    )];
    for j in 0..t.columns {
        let some = |i: u64| !null(i, j);
        let jj = j as i64;
        let a: ArrayRef = match j % 6 {
            0 => Arc::new(Int64Array::from_iter(
                rows.clone()
                    .map(|i| some(i).then(|| 31 * i as i64 + jj - 500)),
            )),
            1 => Arc::new(Float64Array::from_iter(
                rows.clone()
                    .map(|i| some(i).then(|| i as f64 / 4.0 + j as f64)),
            )),
            2 => Arc::new(StringArray::from_iter(
                rows.clone().map(|i| some(i).then(|| format!("s{i}-{j}"))),
            )),
            3 => Arc::new(BooleanArray::from_iter(
                rows.clone()
                    .map(|i| some(i).then_some((i + j as u64).is_multiple_of(2))),
            )),
            4 => Arc::new(
                TimestampMillisecondArray::from_iter(
                    rows.clone()
                        .map(|i| some(i).then(|| 1_700_000_000_000 + 1000 * i as i64 + jj)),
                )
                .with_timezone("UTC"),
            ),
            _ => Arc::new(
                PrimitiveArray::<Decimal128Type>::from_iter(
                    rows.clone()
                        .map(|i| some(i).then(|| 100 * i as i128 + j as i128)),
                )
                .with_precision_and_scale(12, 2)?,
            ),
        };
        cols.push((names[j + 1].clone(), a));
    }
    RecordBatch::try_from_iter(cols)
}

fn write_text_rows(
    w: &mut impl Write,
    format: Format,
    names: &[String],
    batch: &RecordBatch,
) -> std::io::Result<()> {
    let cols: Vec<crate::render::Col> = batch
        .columns()
        .iter()
        .map(|a| crate::render::Col::new(a).ok_or_else(|| std::io::Error::other("column type")))
        .collect::<Result<_, _>>()?;
    let mut line = Vec::new();
    let mut field = Vec::new();
    for i in 0..batch.num_rows() {
        line.clear();
        if format == Format::Jsonl {
            line.push(b'{');
        }
        for (j, col) in cols.iter().enumerate() {
            if j > 0 {
                line.push(b',');
            }
            if format == Format::Jsonl {
                crate::render::json_str(&names[j], &mut line);
                line.push(b':');
                col.json(i, &mut line);
            } else {
                field.clear();
                col.append_text(i, &mut field);
                csv_field(&mut line, &field)?;
            }
        }
        if format == Format::Jsonl {
            line.push(b'}');
        }
        line.push(b'\n');
        w.write_all(&line)?;
    }
    Ok(())
}

fn csv_field(w: &mut impl Write, f: &[u8]) -> std::io::Result<()> {
    if f.iter().any(|&c| matches!(c, b',' | b'"' | b'\n' | b'\r')) {
        w.write_all(b"\"")?;
        for &c in f {
            if c == b'"' {
                w.write_all(b"\"\"")?;
            } else {
                w.write_all(&[c])?;
            }
        }
        w.write_all(b"\"")
    } else {
        w.write_all(f)
    }
}

fn json_string(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_reads_back_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        for (f, name) in [
            (Format::Csv, "d.csv"),
            (Format::Jsonl, "d.jsonl"),
            (Format::Parquet, "d.parquet"),
        ] {
            let path = dir.path().join(name);
            let recs: Vec<(Vec<u8>, Vec<u8>)> = (0..1000)
                .map(|i| {
                    (
                        format!("k,\"{i}").into_bytes(),
                        format!("v\n{i}\\").into_bytes(),
                    )
                })
                .collect();
            let mut it = recs.iter();
            let n = write_dataset(&path, f, &mut |k, v| match it.next() {
                Some((a, b)) => {
                    *k = a.clone();
                    *v = b.clone();
                    true
                }
                None => false,
            })
            .unwrap();
            assert_eq!(n, 1000);
            let mut r = crate::open(&path, &crate::InputSpec::default()).unwrap();
            let (mut k, mut v) = (Vec::new(), Vec::new());
            let mut got = Vec::new();
            while r.next_record(&mut k, &mut v).unwrap() {
                got.push((k.clone(), v.clone()));
            }
            assert_eq!(got, recs, "{name}");
        }
    }

    #[test]
    fn a_feature_table_reads_back_in_every_format() {
        let dir = tempfile::tempdir().unwrap();
        let t = FeatureTable {
            rows: 10,
            columns: 7,
            null_every: 5,
        };
        for (f, name) in [
            (Format::Csv, "t.csv"),
            (Format::Jsonl, "t.jsonl"),
            (Format::Parquet, "t.parquet"),
        ] {
            let path = dir.path().join(name);
            assert_eq!(write_feature_table(&path, f, &t).unwrap(), 10);
            let spec = crate::InputSpec {
                key_field: "id".into(),
                value_field: "f02".into(),
                nulls: crate::Nulls::Empty,
                ..crate::InputSpec::default()
            };
            let mut r = crate::open(&path, &spec).unwrap();
            let (mut k, mut v) = (Vec::new(), Vec::new());
            let mut got = Vec::new();
            while r.next_record(&mut k, &mut v).unwrap() {
                got.push((
                    String::from_utf8(k.clone()).unwrap(),
                    String::from_utf8(v.clone()).unwrap(),
                ));
            }
            assert_eq!(got.len(), 10, "{name}");
            assert_eq!(got[1], ("000000000001".into(), "s1-2".into()), "{name}");
            // (3 + 2) % 5 == 0: null, read as empty.
            assert_eq!(got[3].1, "", "{name}");
        }
    }
}
