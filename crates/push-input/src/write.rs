//! Writing datasets in the formats the readers take: for benchmarks, tests and tools that make
//! push inputs. Keys and values are written as given (CSV fields quoted when they need it).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, RecordBatch};
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
}
