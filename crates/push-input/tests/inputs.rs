//! Reading real files of each format through the public API. One test binary for all formats,
//! so that the Parquet code is linked once.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{FixedSizeBinaryBuilder, StringDictionaryBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, DurationSecondArray, Float32Array,
    Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, LargeBinaryArray,
    LargeStringArray, ListArray, RecordBatch, StringArray, StringViewArray, UInt16Array,
    UInt32Array, UInt64Array, UInt8Array,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::WriterProperties;
use rialto_push_input::{open, Format, InputError, InputSpec, Location, RecordReader};
use tempfile::TempDir;

type Rec = (Vec<u8>, Vec<u8>, Location);

fn write(dir: &TempDir, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, data).unwrap();
    p
}

/// Reads every record, checking progress along the way.
fn read_all(path: &Path, spec: &InputSpec) -> Result<Vec<Rec>, InputError> {
    let mut r = open(path, spec)?;
    assert_eq!(r.total_bytes(), std::fs::metadata(path).unwrap().len());
    assert_eq!(r.location(), Location::None);
    let (mut k, mut v) = (b"stale".to_vec(), b"stale".to_vec());
    let mut out = Vec::new();
    let mut last_bytes = 0;
    while r.next_record(&mut k, &mut v)? {
        out.push((k.clone(), v.clone(), r.location()));
        let b = r.bytes_read();
        assert!(
            b >= last_bytes && b <= r.total_bytes(),
            "progress {last_bytes} -> {b}"
        );
        last_bytes = b;
    }
    assert!(
        k.is_empty() && v.is_empty(),
        "buffers are cleared at the end too"
    );
    assert_eq!(r.bytes_read(), r.total_bytes(), "all bytes read at the end");
    // End of input is sticky.
    assert!(!r.next_record(&mut k, &mut v)?);
    Ok(out)
}

fn read_err(path: &Path, spec: &InputSpec) -> InputError {
    match read_all(path, spec) {
        Ok(recs) => panic!("expected an error, read {} records", recs.len()),
        Err(e) => e,
    }
}

/// The error message with the temp directory removed, for exact comparison.
fn msg(e: &InputError, dir: &TempDir) -> String {
    let s = e.to_string();
    s.strip_prefix(&format!("{}/", dir.path().display()))
        .unwrap_or(&s)
        .to_string()
}

fn pairs(recs: &[Rec]) -> Vec<(&str, &str)> {
    recs.iter()
        .map(|(k, v, _)| {
            (
                std::str::from_utf8(k).unwrap(),
                std::str::from_utf8(v).unwrap(),
            )
        })
        .collect()
}

fn locations(recs: &[Rec]) -> Vec<Location> {
    recs.iter().map(|r| r.2.clone()).collect()
}

fn fields(key: &str, value: &str) -> InputSpec {
    InputSpec {
        key_field: key.into(),
        value_field: value.into(),
        ..InputSpec::default()
    }
}

// ---------------------------------------------------------------------------------------------
// CSV

#[test]
fn csv_round_trip_with_header() {
    let dir = TempDir::new().unwrap();
    let p = write(&dir, "data.csv", b"key,value\na,1\nb,\nc,three\n");
    let recs = read_all(&p, &InputSpec::default()).unwrap();
    assert_eq!(pairs(&recs), [("a", "1"), ("b", ""), ("c", "three")]);
    assert_eq!(
        locations(&recs),
        [Location::Line(2), Location::Line(3), Location::Line(4)]
    );

    // Named columns anywhere among others; CRLF line ends; no final newline.
    let p = write(
        &dir,
        "named.csv",
        b"id,x,score,y\r\nk1,a,10,b\r\nk2,c, 20 ,d",
    );
    let recs = read_all(&p, &fields("id", "score")).unwrap();
    assert_eq!(pairs(&recs), [("k1", "10"), ("k2", " 20 ")]);

    // Only a header: no records.
    let p = write(&dir, "empty.csv", b"key,value\n");
    assert!(read_all(&p, &InputSpec::default()).unwrap().is_empty());

    // A byte order mark does not become part of the first column name.
    let p = write(&dir, "bom.csv", b"\xEF\xBB\xBFkey,value\nx,y\n");
    assert_eq!(
        pairs(&read_all(&p, &InputSpec::default()).unwrap()),
        [("x", "y")]
    );
}

#[test]
fn csv_without_header_and_other_delimiter() {
    let dir = TempDir::new().unwrap();
    let p = write(&dir, "data.txt", b"a;1;x\nb;2;y\n");
    let spec = InputSpec {
        format: Some(Format::Csv),
        key_field: "2".into(),
        value_field: "0".into(),
        csv_delimiter: b';',
        csv_has_header: false,
        ..InputSpec::default()
    };
    let recs = read_all(&p, &spec).unwrap();
    assert_eq!(pairs(&recs), [("x", "a"), ("y", "b")]);
    assert_eq!(locations(&recs), [Location::Line(1), Location::Line(2)]);

    // Names are not indexes.
    let e = open(
        &p,
        &InputSpec {
            key_field: "key".into(),
            ..spec.clone()
        },
    )
    .err()
    .unwrap();
    assert_eq!(e.location, Location::None);
    assert_eq!(
        msg(&e, &dir),
        "data.txt: without a header, the key field must be a 0-based column index, not \"key\""
    );

    // An index past the row's end.
    let e = read_err(
        &p,
        &InputSpec {
            value_field: "3".into(),
            ..spec
        },
    );
    assert_eq!(
        msg(&e, &dir),
        "data.txt:1: value column 3 missing: the row has 3 fields"
    );
}

#[test]
fn csv_quoted_fields_keep_line_numbers() {
    let dir = TempDir::new().unwrap();
    let data = b"key,value\n\
        \"a,b\",\"line1\nline2\r\nline3\"\n\
        \"c\"\"q\",\"\"\n\
        plain,v\n\
        d,x,y\n";
    let p = write(&dir, "q.csv", data);
    let mut r = open(&p, &InputSpec::default()).unwrap();
    let (mut k, mut v) = (Vec::new(), Vec::new());
    let mut got = Vec::new();
    let e = loop {
        match r.next_record(&mut k, &mut v) {
            Ok(true) => got.push((k.clone(), v.clone(), r.location())),
            Ok(false) => panic!("expected an error"),
            Err(e) => break e,
        }
    };
    assert_eq!(
        got,
        [
            (
                b"a,b".to_vec(),
                b"line1\nline2\r\nline3".to_vec(),
                Location::Line(2)
            ),
            (b"c\"q".to_vec(), b"".to_vec(), Location::Line(5)),
            (b"plain".to_vec(), b"v".to_vec(), Location::Line(6)),
        ]
    );
    assert_eq!(e.location, Location::Line(7));
    assert_eq!(
        msg(&e, &dir),
        "q.csv:7: 3 fields, expected 2 as in the header"
    );
}

#[test]
fn csv_line_numbers_with_blank_lines_and_line_ends() {
    // Records with quoted newlines, blank lines in between and every kind of line end; each
    // record's value is its expected first line.
    let dir = TempDir::new().unwrap();
    for (variant, end) in ["\n", "\r\n", "\r"].into_iter().enumerate() {
        let mut data = String::new();
        let mut line = 1u64;
        // Blank lines before the header too.
        data.push_str(end);
        line += 1;
        data.push_str(&format!("key,value{end}"));
        line += 1;
        let mut want = Vec::new();
        let mut seed = 7u32 + variant as u32;
        for i in 0..200 {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            for _ in 0..(seed >> 16) % 3 {
                data.push_str(end);
                line += 1;
            }
            let inner_newlines = u64::from((seed >> 20) % 3);
            let key = format!("\"k{i}{}\"", "\n".repeat(inner_newlines as usize));
            want.push((line, key.trim_matches('"').to_string()));
            data.push_str(&format!("{key},{line}"));
            line += inner_newlines;
            // The last record may lack a line end.
            if i < 199 || variant == 0 {
                data.push_str(end);
                line += 1;
            }
        }
        let p = write(&dir, &format!("lines{variant}.csv"), data.as_bytes());
        let recs = read_all(&p, &InputSpec::default()).unwrap();
        assert_eq!(recs.len(), want.len());
        for ((k, v, loc), (wl, wk)) in recs.iter().zip(&want) {
            assert_eq!(std::str::from_utf8(k).unwrap(), wk);
            // "\r" alone ends records but is not a line for editors; only "\n" counts.
            if variant < 2 {
                assert_eq!(*loc, Location::Line(*wl), "variant {variant}");
                assert_eq!(v, wl.to_string().as_bytes());
            }
        }
    }

    // An error after blank lines names the right line, with a missing header column too.
    let p = write(&dir, "gap.csv", b"\r\n\r\nid,x\r\n");
    let e = open(&p, &InputSpec::default()).err().unwrap();
    assert_eq!(e.location, Location::Line(3));
}

#[test]
fn csv_non_utf8_bytes_pass_through() {
    let dir = TempDir::new().unwrap();
    let p = write(&dir, "bin.csv", b"key,value\n\xff\xfe,\x80abc\x00\n");
    let recs = read_all(&p, &InputSpec::default()).unwrap();
    assert_eq!(
        recs,
        [(
            b"\xff\xfe".to_vec(),
            b"\x80abc\x00".to_vec(),
            Location::Line(2)
        )]
    );
}

#[test]
fn csv_errors() {
    let dir = TempDir::new().unwrap();
    let spec = InputSpec::default();

    let p = write(&dir, "cols.csv", b"id,name,score\n1,a,2\n");
    let e = open(&p, &spec).err().unwrap();
    assert_eq!(
        msg(&e, &dir),
        "cols.csv:1: key column \"key\" not found; the header has: \"id\", \"name\", \"score\""
    );
    let e = open(&p, &fields("id", "value")).err().unwrap();
    assert_eq!(
        msg(&e, &dir),
        "cols.csv:1: value column \"value\" not found; the header has: \"id\", \"name\", \"score\""
    );

    let p = write(&dir, "short.csv", b"key,value\na,1\n\nb\nc,3\n");
    let e = read_err(&p, &spec);
    assert_eq!(e.location, Location::Line(4));
    assert_eq!(
        msg(&e, &dir),
        "short.csv:4: 1 fields, expected 2 as in the header"
    );

    let p = write(&dir, "long.csv", b"key,value\na,1\nb,2,3\n");
    assert_eq!(
        msg(&read_err(&p, &spec), &dir),
        "long.csv:3: 3 fields, expected 2 as in the header"
    );

    let p = write(&dir, "nohead.csv", b"a,1\nb,2,3\n");
    let spec_nh = InputSpec {
        csv_has_header: false,
        key_field: "0".into(),
        value_field: "1".into(),
        ..spec.clone()
    };
    assert_eq!(
        msg(&read_err(&p, &spec_nh), &dir),
        "nohead.csv:2: 3 fields, expected 2 as in the first row"
    );

    let p = write(&dir, "emptykey.csv", b"key,value\na,1\n,2\n");
    let e = read_err(&p, &spec);
    assert_eq!(msg(&e, &dir), "emptykey.csv:3: empty key");

    let p = write(&dir, "nothing.csv", b"");
    assert_eq!(
        msg(&open(&p, &spec).err().unwrap(), &dir),
        "nothing.csv: empty file: no header line"
    );
}

// ---------------------------------------------------------------------------------------------
// JSONL

#[test]
fn jsonl_round_trip() {
    let dir = TempDir::new().unwrap();
    let data = "{\"key\":\"a\",\"value\":\"x\"}\n\
        \n\
        \t  \r\n\
        {\"value\": 42, \"other\": [1, {\"key\": 0}], \"key\": \"b\"}\r\n\
        {\"key\":\"c\",\"value\":{\"n\": 1.50, \"l\": [true, null]}}\n\
        {\"key\":\"d\",\"value\":\"\\u00e9\\n\"}\n\
        {\"key\":10,\"value\":false}";
    let p = write(&dir, "data.jsonl", data.as_bytes());
    let recs = read_all(&p, &InputSpec::default()).unwrap();
    assert_eq!(
        pairs(&recs),
        [
            ("a", "x"),
            ("b", "42"),
            ("c", r#"{"n":1.50,"l":[true,null]}"#),
            ("d", "\u{e9}\n"),
            ("10", "false")
        ]
    );
    assert_eq!(
        locations(&recs),
        [
            Location::Line(1),
            Location::Line(4),
            Location::Line(5),
            Location::Line(6),
            Location::Line(7)
        ]
    );

    // Other field names; a leading byte order mark.
    let p = write(
        &dir,
        "data.ndjson",
        "\u{feff}{\"id\":\"k\",\"score\":-3e5}\n".as_bytes(),
    );
    let recs = read_all(&p, &fields("id", "score")).unwrap();
    assert_eq!(pairs(&recs), [("k", "-3e5")]);

    // Nothing but blank lines.
    let p = write(&dir, "blank.jsonl", b"\n  \n\n");
    assert!(read_all(&p, &InputSpec::default()).unwrap().is_empty());
}

#[test]
fn jsonl_errors() {
    let dir = TempDir::new().unwrap();
    let good = "{\"id\":\"a\",\"score\":1}\n\n";
    let spec = fields("id", "score");
    let cases: &[(&str, &str)] = &[
        ("{\"id\":\"b\"}", "3: value field \"score\" missing"),
        ("{\"score\":1}", "3: key field \"id\" missing"),
        ("{\"id\":null,\"score\":1}", "3: null key"),
        ("{\"id\":\"b\",\"score\":null}", "3: null value"),
        ("{\"id\":\"\",\"score\":1}", "3: empty key"),
        ("[1,2]", "3: not a JSON object"),
        ("  \"text\"", "3: not a JSON object"),
        (
            "{\"id\":\"b\",\"score\":1",
            "3: invalid JSON at column 19: EOF while parsing an object",
        ),
        (
            "{\"id\":\"b\" \"score\":1}",
            "3: invalid JSON at column 11: expected `,` or `}`",
        ),
        (
            "{\"id\":\"b\",\"score\":1}{}",
            "3: invalid JSON at column 21: trailing characters",
        ),
    ];
    for (i, (line, want)) in cases.iter().enumerate() {
        let p = write(
            &dir,
            &format!("e{i}.jsonl"),
            format!("{good}{line}\n{good}").as_bytes(),
        );
        let e = read_err(&p, &spec);
        assert_eq!(e.location, Location::Line(3));
        assert_eq!(msg(&e, &dir), format!("e{i}.jsonl:{want}"));
    }
}

// ---------------------------------------------------------------------------------------------
// Parquet

fn write_parquet(
    dir: &TempDir,
    name: &str,
    batches: &[RecordBatch],
    props: Option<WriterProperties>,
) -> PathBuf {
    let p = dir.path().join(name);
    let f = std::fs::File::create(&p).unwrap();
    let mut w = ArrowWriter::try_new(f, batches[0].schema(), props).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    p
}

fn batch(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(cols).unwrap()
}

#[test]
fn parquet_row_groups_and_extra_columns() {
    let dir = TempDir::new().unwrap();
    let n = 1000usize;
    let mk = |start: usize, len: usize| {
        let rows = start..start + len;
        batch(vec![
            (
                "extra",
                Arc::new(Int64Array::from_iter_values(
                    rows.clone().map(|i| i as i64 * 7),
                )) as ArrayRef,
            ),
            (
                "value",
                Arc::new(StringArray::from_iter_values(
                    rows.clone().map(|i| format!("v{i}")),
                )),
            ),
            (
                "blob",
                Arc::new(BinaryArray::from_iter_values(
                    rows.clone().map(|i| vec![i as u8; 50]),
                )),
            ),
            (
                "key",
                Arc::new(StringArray::from_iter_values(
                    rows.map(|i| format!("k{i:05}")),
                )),
            ),
        ])
    };
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(128))
        .set_compression(Compression::SNAPPY)
        .build();
    let p = write_parquet(
        &dir,
        "data.parquet",
        &[mk(0, 600), mk(600, n - 600)],
        Some(props),
    );

    let recs = read_all(&p, &InputSpec::default()).unwrap();
    assert_eq!(recs.len(), n);
    for (i, (k, v, loc)) in recs.iter().enumerate() {
        assert_eq!(k, format!("k{i:05}").as_bytes());
        assert_eq!(v, format!("v{i}").as_bytes());
        assert_eq!(*loc, Location::Row(i as u64 + 1));
    }

    // Progress moves within the file as row groups are consumed.
    let mut r = open(&p, &InputSpec::default()).unwrap();
    let (mut k, mut v) = (Vec::new(), Vec::new());
    for _ in 0..n / 2 {
        assert!(r.next_record(&mut k, &mut v).unwrap());
    }
    let half = r.bytes_read() as f64 / r.total_bytes() as f64;
    assert!(half > 0.2 && half < 0.8, "{half}");

    // Key and value from the same column; other codecs.
    for (i, c) in [
        Compression::ZSTD(ZstdLevel::default()),
        Compression::LZ4_RAW,
        Compression::GZIP(GzipLevel::default()),
        Compression::UNCOMPRESSED,
    ]
    .into_iter()
    .enumerate()
    {
        let props = WriterProperties::builder().set_compression(c).build();
        let p = write_parquet(&dir, &format!("c{i}.pq"), &[mk(0, 10)], Some(props));
        let recs = read_all(&p, &fields("key", "key")).unwrap();
        assert_eq!(pairs(&recs)[9], ("k00009", "k00009"));
    }
}

#[test]
fn parquet_column_types() {
    let dir = TempDir::new().unwrap();
    let mut fsb = FixedSizeBinaryBuilder::new(2);
    fsb.append_value(b"\x00\xff").unwrap();
    fsb.append_value(b"ab").unwrap();
    let mut dict = StringDictionaryBuilder::<Int32Type>::new();
    dict.append_value("red");
    dict.append_value("red");
    let cols: Vec<(&str, ArrayRef, [&[u8]; 2])> = vec![
        (
            "i8",
            Arc::new(Int8Array::from(vec![-128, 127])),
            [b"-128", b"127"],
        ),
        (
            "i16",
            Arc::new(Int16Array::from(vec![-3, 0])),
            [b"-3", b"0"],
        ),
        (
            "i32",
            Arc::new(Int32Array::from(vec![i32::MIN, 5])),
            [b"-2147483648", b"5"],
        ),
        (
            "i64",
            Arc::new(Int64Array::from(vec![i64::MAX, -1])),
            [b"9223372036854775807", b"-1"],
        ),
        (
            "u8",
            Arc::new(UInt8Array::from(vec![255, 0])),
            [b"255", b"0"],
        ),
        (
            "u16",
            Arc::new(UInt16Array::from(vec![65535, 1])),
            [b"65535", b"1"],
        ),
        (
            "u32",
            Arc::new(UInt32Array::from(vec![u32::MAX, 2])),
            [b"4294967295", b"2"],
        ),
        (
            "u64",
            Arc::new(UInt64Array::from(vec![u64::MAX, 3])),
            [b"18446744073709551615", b"3"],
        ),
        (
            "f32",
            Arc::new(Float32Array::from(vec![0.1, -2.0])),
            [b"0.1", b"-2"],
        ),
        (
            "f64",
            Arc::new(Float64Array::from(vec![3.5, 1e-7])),
            [b"3.5", b"1e-7"],
        ),
        (
            "f64x",
            Arc::new(Float64Array::from(vec![f64::NAN, f64::NEG_INFINITY])),
            [b"NaN", b"-inf"],
        ),
        (
            "bool",
            Arc::new(BooleanArray::from(vec![true, false])),
            [b"true", b"false"],
        ),
        (
            "bin",
            Arc::new(BinaryArray::from_vec(vec![b"\xff\x00", b""])),
            [b"\xff\x00", b""],
        ),
        (
            "lbin",
            Arc::new(LargeBinaryArray::from_vec(vec![b"x", b"yy"])),
            [b"x", b"yy"],
        ),
        (
            "vbin",
            Arc::new(BinaryViewArray::from_iter_values([
                b"p".as_slice(),
                b"a longer binary view value",
            ])),
            [b"p", b"a longer binary view value"],
        ),
        ("fsb", Arc::new(fsb.finish()), [b"\x00\xff", b"ab"]),
        (
            "lstr",
            Arc::new(LargeStringArray::from(vec!["\u{e9}", "b"])),
            ["\u{e9}".as_bytes(), b"b"],
        ),
        (
            "vstr",
            Arc::new(StringViewArray::from(vec![
                "s",
                "a string longer than twelve bytes",
            ])),
            [b"s", b"a string longer than twelve bytes"],
        ),
        ("dict", Arc::new(dict.finish()), [b"red", b"red"]),
        (
            "key",
            Arc::new(StringArray::from(vec!["r1", "r2"])),
            [b"r1", b"r2"],
        ),
    ];
    let b = batch(cols.iter().map(|(n, a, _)| (*n, a.clone())).collect());
    let p = write_parquet(&dir, "types.parquet", &[b], None);
    for (name, _, want) in &cols {
        let recs = read_all(&p, &fields("key", name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got: Vec<&[u8]> = recs.iter().map(|r| r.1.as_slice()).collect();
        assert_eq!(got, want, "column {name}");
    }
    // Non-string keys convert the same way.
    let recs = read_all(&p, &fields("i64", "bool")).unwrap();
    assert_eq!(recs[0].0, b"9223372036854775807");
}

#[test]
fn parquet_nulls_and_empty_keys() {
    let dir = TempDir::new().unwrap();
    let n = 300;
    let keys: Vec<Option<String>> = (0..n)
        .map(|i| (i != 149).then(|| format!("k{i}")))
        .collect();
    let values: Vec<Option<i32>> = (0..n).map(|i| (i != 250).then_some(i)).collect();
    let props = || {
        Some(
            WriterProperties::builder()
                .set_max_row_group_row_count(Some(100))
                .build(),
        )
    };
    let b = batch(vec![
        ("key", Arc::new(StringArray::from(keys.clone())) as ArrayRef),
        ("value", Arc::new(Int32Array::from(values.clone()))),
    ]);
    let p = write_parquet(&dir, "nulls.parquet", &[b], props());
    let e = read_err(&p, &InputSpec::default());
    assert_eq!(e.location, Location::Row(150));
    assert_eq!(msg(&e, &dir), "nulls.parquet: row 150: null key");

    let mut keys = keys;
    keys[149] = Some("x".into());
    let b = batch(vec![
        ("key", Arc::new(StringArray::from(keys.clone())) as ArrayRef),
        ("value", Arc::new(Int32Array::from(values))),
    ]);
    let p = write_parquet(&dir, "nullv.parquet", &[b], props());
    assert_eq!(
        msg(&read_err(&p, &InputSpec::default()), &dir),
        "nullv.parquet: row 251: null value"
    );

    keys[7] = Some(String::new());
    let b = batch(vec![
        ("key", Arc::new(StringArray::from(keys)) as ArrayRef),
        ("value", Arc::new(Int32Array::from_iter_values(0..n))),
    ]);
    let p = write_parquet(&dir, "emptyk.parquet", &[b], props());
    assert_eq!(
        msg(&read_err(&p, &InputSpec::default()), &dir),
        "emptyk.parquet: row 8: empty key"
    );
}

#[test]
fn parquet_open_errors() {
    let dir = TempDir::new().unwrap();
    let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![Some(vec![Some(1)])]);
    let b = batch(vec![
        ("key", Arc::new(StringArray::from(vec!["a"])) as ArrayRef),
        ("dur", Arc::new(DurationSecondArray::from(vec![19000]))),
        ("list", Arc::new(list)),
    ]);
    let p = write_parquet(&dir, "t.parquet", &[b], None);
    let e = open(&p, &fields("key", "dur")).err().unwrap();
    assert_eq!(e.location, Location::None);
    assert_eq!(
        msg(&e, &dir),
        "t.parquet: value column \"dur\" has unsupported type Duration(s)"
    );
    let e = open(&p, &fields("dur", "key")).err().unwrap();
    assert!(
        msg(&e, &dir).starts_with("t.parquet: key column \"dur\" has unsupported type Duration"),
        "{e}"
    );
    // A list is its JSON text, as a key too.
    let recs = read_all(&p, &fields("list", "key")).unwrap();
    assert_eq!(recs[0].0, b"[1]");
    let e = open(&p, &InputSpec::default()).err().unwrap();
    assert_eq!(
        msg(&e, &dir),
        "t.parquet: value column \"value\" not found; the file has: \"key\", \"dur\", \"list\""
    );

    let p = write(&dir, "bad.parquet", b"key,value\na,b\n");
    let e = open(&p, &InputSpec::default()).err().unwrap();
    assert!(
        msg(&e, &dir).starts_with("bad.parquet: cannot read Parquet metadata: "),
        "{e}"
    );

    // A truncated file: the footer is gone.
    let good = std::fs::read(dir.path().join("t.parquet")).unwrap();
    let p = write(&dir, "cut.parquet", &good[..good.len() / 2]);
    assert!(open(&p, &fields("key", "key")).is_err());
}

#[test]
fn parquet_corrupt_data_is_an_error_not_a_panic() {
    let dir = TempDir::new().unwrap();
    let b = batch(vec![
        (
            "key",
            Arc::new(StringArray::from_iter_values(
                (0..2000).map(|i| format!("key-{i}")),
            )) as ArrayRef,
        ),
        (
            "value",
            Arc::new(StringArray::from_iter_values(
                (0..2000).map(|i| format!("value-{i}")),
            )),
        ),
    ]);
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let p = write_parquet(&dir, "ok.parquet", &[b], Some(props));
    let good = std::fs::read(&p).unwrap();
    // Overwrite bytes in the data pages (the metadata is at the end) at several places.
    for (i, at) in [8usize, 100, 1000, 4000].into_iter().enumerate() {
        if at + 64 > good.len() / 2 {
            continue;
        }
        let mut bad = good.clone();
        for b in &mut bad[at..at + 64] {
            *b ^= 0x5a;
        }
        let p = write(&dir, &format!("bad{i}.parquet"), &bad);
        // Any outcome but a panic; an error must name the file.
        match open(&p, &InputSpec::default()) {
            Err(e) => assert_eq!(e.file, p),
            Ok(mut r) => {
                let (mut k, mut v) = (Vec::new(), Vec::new());
                loop {
                    match r.next_record(&mut k, &mut v) {
                        Ok(true) => {}
                        Ok(false) => break,
                        Err(e) => {
                            assert_eq!(e.file, p);
                            break;
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn reader_is_send() {
    fn is_send<T: Send>(_: &T) {}
    let dir = TempDir::new().unwrap();
    let p = write(&dir, "a.csv", b"key,value\n");
    let r: Box<dyn RecordReader> = open(&p, &InputSpec::default()).unwrap();
    is_send(&r);
    std::thread::spawn(move || drop(r)).join().unwrap();
}
