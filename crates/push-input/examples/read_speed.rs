//! Read throughput of each input format.
//!
//! `cargo run --release -p rialto-push-input --example read_speed [RECORDS]` writes RECORDS
//! (default 1,000,000) records of a 16-byte key and a 100-byte value as CSV, JSONL and Parquet
//! (Snappy) in a temporary directory, then reads each back and prints MB/s of file and records/s.
//! `read_speed PATH [KEY_FIELD VALUE_FIELD]` times one existing file instead.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use rialto_push_input::{open, InputSpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(arg) = args.first().filter(|a| a.parse::<u64>().is_err()) {
        let mut spec = InputSpec::default();
        if let [_, k, v] = &args[..] {
            spec.key_field = k.clone();
            spec.value_field = v.clone();
        }
        time(Path::new(arg), &spec)?;
        return Ok(());
    }
    let n: u64 = args.first().map_or(Ok(1_000_000), |a| a.parse())?;
    let dir = std::env::temp_dir().join(format!("rialto-read-speed-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let key = |i: u64| format!("key-{i:012}");
    let value = |i: u64| {
        let mut v = format!("value-{i:012}-");
        while v.len() < 100 {
            v.push((b'a' + (v.len() as u8 * 7 + i as u8) % 26) as char);
        }
        v
    };

    let csv = dir.join("data.csv");
    let mut w = BufWriter::new(std::fs::File::create(&csv)?);
    writeln!(w, "key,value")?;
    for i in 0..n {
        writeln!(w, "{},{}", key(i), value(i))?;
    }
    w.flush()?;

    let jsonl = dir.join("data.jsonl");
    let mut w = BufWriter::new(std::fs::File::create(&jsonl)?);
    for i in 0..n {
        writeln!(w, "{{\"key\":\"{}\",\"value\":\"{}\"}}", key(i), value(i))?;
    }
    w.flush()?;

    let parquet = dir.join("data.parquet");
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer: Option<ArrowWriter<std::fs::File>> = None;
    let mut start = 0;
    while start < n {
        let end = (start + 100_000).min(n);
        let batch = RecordBatch::try_from_iter([
            (
                "key",
                Arc::new(StringArray::from_iter_values((start..end).map(key))) as ArrayRef,
            ),
            (
                "value",
                Arc::new(StringArray::from_iter_values((start..end).map(value))),
            ),
        ])?;
        if writer.is_none() {
            writer = Some(ArrowWriter::try_new(
                std::fs::File::create(&parquet)?,
                batch.schema(),
                Some(props.clone()),
            )?);
        }
        if let Some(w) = writer.as_mut() {
            w.write(&batch)?;
        }
        start = end;
    }
    if let Some(w) = writer {
        w.close()?;
    }

    for p in [&csv, &jsonl, &parquet] {
        time(p, &InputSpec::default())?;
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

fn time(path: &Path, spec: &InputSpec) -> Result<(), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let mut r = open(path, spec)?;
    let (mut records, mut payload) = (0u64, 0u64);
    while let Some((k, v)) = r.read_record()? {
        records += 1;
        payload += (k.len() + v.len()) as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{}: {records} records, {:.1} MB in {secs:.3} s: {:.0} MB/s of file, {:.0} MB/s of keys+values, {:.2} M records/s",
        path.display(),
        r.total_bytes() as f64 / 1e6,
        r.total_bytes() as f64 / 1e6 / secs,
        payload as f64 / 1e6 / secs,
        records as f64 / 1e6 / secs,
    );
    Ok(())
}
