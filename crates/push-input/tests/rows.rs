//! Values made of several fields of a row (`RowSpec`): every Parquet type rendered as a hash
//! field's text and as a JSON value, CSV and JSONL rows, field selection and the null policy.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{
    FixedSizeBinaryBuilder, Int32Builder, ListBuilder, MapBuilder, StringBuilder,
    StringDictionaryBuilder,
};
use arrow_array::types::{Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type, Int32Type};
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Date64Array, FixedSizeListArray,
    Float16Array, Float32Array, Float64Array, Int16Array, Int64Array, Int8Array, LargeBinaryArray,
    LargeListArray, LargeStringArray, NullArray, PrimitiveArray, RecordBatch, StringArray,
    StructArray, Time32MillisecondArray, Time32SecondArray, Time64MicrosecondArray,
    Time64NanosecondArray, TimestampMicrosecondArray, TimestampMillisecondArray,
    TimestampNanosecondArray, TimestampSecondArray, UInt16Array, UInt32Array, UInt64Array,
    UInt8Array,
};
use arrow_schema::{DataType, Field};
use parquet::arrow::ArrowWriter;
use rialto_push_input::{open, InputSpec, Nulls, RowEncoding, RowSpec};
use tempfile::TempDir;

/// The hash encoding as `name=value` lines, so that tests read the fields back plainly.
fn lines(fields: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
    for (f, v) in fields {
        out.extend_from_slice(f);
        out.push(b'=');
        out.extend_from_slice(v);
        out.push(b'\n');
    }
}

fn hash_spec(key: &str, fields: Option<&[&str]>, nulls: Nulls) -> InputSpec {
    InputSpec {
        key_field: key.into(),
        row: Some(RowSpec {
            fields: fields.map(|f| f.iter().map(|s| s.to_string()).collect()),
            encoding: RowEncoding::Hash(lines),
        }),
        nulls,
        ..InputSpec::default()
    }
}

fn json_spec(key: &str, fields: Option<&[&str]>, nulls: Nulls) -> InputSpec {
    InputSpec {
        key_field: key.into(),
        row: Some(RowSpec {
            fields: fields.map(|f| f.iter().map(|s| s.to_string()).collect()),
            encoding: RowEncoding::Json,
        }),
        nulls,
        ..InputSpec::default()
    }
}

/// Every record as (key, value) strings, and the rows skipped.
fn read(path: &Path, spec: &InputSpec) -> Result<(Vec<(String, String)>, u64), String> {
    let mut r = open(path, spec).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    loop {
        match r.read_record() {
            Ok(Some((k, v))) => out.push((
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )),
            Ok(None) => return Ok((out, r.skipped())),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// A hash value's fields in order.
fn fields(v: &str) -> Vec<(String, String)> {
    v.lines()
        .map(|l| {
            let (f, v) = l.split_once('=').unwrap();
            (f.to_string(), v.to_string())
        })
        .collect()
}

fn parquet(dir: &TempDir, name: &str, cols: Vec<(&str, ArrayRef)>) -> PathBuf {
    let batch = RecordBatch::try_from_iter(cols).unwrap();
    let p = dir.path().join(name);
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&p).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    p
}

/// Columns of every type a push renders, two rows each: (name, array, text of row 0, JSON of
/// row 0), row 1 being null where the type allows.
fn typed_columns() -> Vec<(&'static str, ArrayRef, &'static str, &'static str)> {
    let mut fsb = FixedSizeBinaryBuilder::new(2);
    fsb.append_value(b"\x00\xff").unwrap();
    fsb.append_null();
    let mut dict = StringDictionaryBuilder::<Int32Type>::new();
    dict.append_value("red");
    dict.append_null();
    let mut list = ListBuilder::new(Int32Builder::new());
    list.values().append_value(1);
    list.values().append_null();
    list.values().append_value(3);
    list.append(true);
    list.append(false);
    let mut map = MapBuilder::new(None, Int32Builder::new(), StringBuilder::new());
    map.keys().append_value(7);
    map.values().append_value("seven");
    map.keys().append_value(-1);
    map.values().append_null();
    map.append(true).unwrap();
    map.append(false).unwrap();
    let strukt = StructArray::try_new(
        vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Utf8, true),
        ]
        .into(),
        vec![
            Arc::new(Int64Array::from(vec![Some(1), Some(2)])) as ArrayRef,
            Arc::new(StringArray::from(vec![Some("x\"y"), None])) as ArrayRef,
        ],
        Some(arrow_buffer::NullBuffer::from(vec![true, false])),
    )
    .unwrap();
    let fixed_list = FixedSizeListArray::from_iter_primitive::<Int32Type, _, _>(
        vec![Some(vec![Some(4), Some(5)]), None],
        2,
    );
    let large_list = LargeListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![]),
        None::<Vec<Option<i32>>>,
    ]);
    vec![
        (
            "utf8",
            Arc::new(StringArray::from(vec![Some("é\t\"q\""), None])),
            "é\t\"q\"",
            r#""é\t\"q\"""#,
        ),
        (
            "lutf8",
            Arc::new(LargeStringArray::from(vec![Some("l"), None])),
            "l",
            r#""l""#,
        ),
        ("dict", Arc::new(dict.finish()), "red", r#""red""#),
        (
            "bin",
            Arc::new(BinaryArray::from(vec![Some(&b"\x00\xffab"[..]), None])),
            "\u{0}\u{fffd}ab",
            r#""AP9hYg==""#,
        ),
        (
            "lbin",
            Arc::new(LargeBinaryArray::from(vec![Some(&b"hi"[..]), None])),
            "hi",
            r#""aGk=""#,
        ),
        ("fsb", Arc::new(fsb.finish()), "\u{0}\u{fffd}", r#""AP8=""#),
        (
            "bool",
            Arc::new(BooleanArray::from(vec![Some(true), None])),
            "true",
            "true",
        ),
        (
            "i8",
            Arc::new(Int8Array::from(vec![Some(-128), None])),
            "-128",
            "-128",
        ),
        (
            "i16",
            Arc::new(Int16Array::from(vec![Some(-300), None])),
            "-300",
            "-300",
        ),
        (
            "i64",
            Arc::new(Int64Array::from(vec![Some(i64::MIN), None])),
            "-9223372036854775808",
            "-9223372036854775808",
        ),
        (
            "u8",
            Arc::new(UInt8Array::from(vec![Some(255), None])),
            "255",
            "255",
        ),
        (
            "u16",
            Arc::new(UInt16Array::from(vec![Some(65535), None])),
            "65535",
            "65535",
        ),
        (
            "u32",
            Arc::new(UInt32Array::from(vec![Some(u32::MAX), None])),
            "4294967295",
            "4294967295",
        ),
        (
            "u64",
            Arc::new(UInt64Array::from(vec![Some(u64::MAX), None])),
            "18446744073709551615",
            "18446744073709551615",
        ),
        (
            "f16",
            Arc::new(Float16Array::from(vec![Some(half_of(1.5)), None])),
            "1.5",
            "1.5",
        ),
        (
            "f32",
            Arc::new(Float32Array::from(vec![Some(0.1), None])),
            "0.1",
            "0.1",
        ),
        (
            "f64",
            Arc::new(Float64Array::from(vec![Some(1e21), None])),
            "1e+21",
            "1e+21",
        ),
        (
            "nan",
            Arc::new(Float64Array::from(vec![Some(f64::NAN), None])),
            "NaN",
            r#""NaN""#,
        ),
        (
            "ninf",
            Arc::new(Float32Array::from(vec![Some(f32::NEG_INFINITY), None])),
            "-inf",
            r#""-inf""#,
        ),
        (
            "dec32",
            Arc::new(
                PrimitiveArray::<Decimal32Type>::from(vec![Some(-5i32), None])
                    .with_precision_and_scale(9, 2)
                    .unwrap(),
            ),
            "-0.05",
            r#""-0.05""#,
        ),
        (
            "dec64",
            Arc::new(
                PrimitiveArray::<Decimal64Type>::from(vec![Some(1230i64), None])
                    .with_precision_and_scale(18, 2)
                    .unwrap(),
            ),
            "12.30",
            r#""12.30""#,
        ),
        (
            "dec128",
            Arc::new(
                PrimitiveArray::<Decimal128Type>::from(vec![
                    Some(123456789012345678901234567i128),
                    None,
                ])
                .with_precision_and_scale(38, 10)
                .unwrap(),
            ),
            "12345678901234567.8901234567",
            r#""12345678901234567.8901234567""#,
        ),
        (
            "dec256",
            Arc::new(
                PrimitiveArray::<Decimal256Type>::from(vec![
                    Some(arrow_buffer::i256::from_i128(7)),
                    None,
                ])
                .with_precision_and_scale(40, 3)
                .unwrap(),
            ),
            "0.007",
            r#""0.007""#,
        ),
        (
            "date32",
            Arc::new(Date32Array::from(vec![Some(19_844), None])),
            "2024-05-01",
            r#""2024-05-01""#,
        ),
        (
            "date64",
            Arc::new(Date64Array::from(vec![Some(19_844 * 86_400_000), None])),
            "2024-05-01",
            r#""2024-05-01""#,
        ),
        (
            "t32s",
            Arc::new(Time32SecondArray::from(vec![Some(45_296), None])),
            "12:34:56",
            r#""12:34:56""#,
        ),
        (
            "t32ms",
            Arc::new(Time32MillisecondArray::from(vec![Some(45_296_007), None])),
            "12:34:56.007",
            r#""12:34:56.007""#,
        ),
        (
            "t64us",
            Arc::new(Time64MicrosecondArray::from(vec![
                Some(45_296_000_001),
                None,
            ])),
            "12:34:56.000001",
            r#""12:34:56.000001""#,
        ),
        (
            "t64ns",
            Arc::new(Time64NanosecondArray::from(vec![Some(1), None])),
            "00:00:00.000000001",
            r#""00:00:00.000000001""#,
        ),
        (
            "ts_s",
            Arc::new(
                TimestampSecondArray::from(vec![Some(1_714_564_800), None]).with_timezone("UTC"),
            ),
            "2024-05-01T12:00:00Z",
            r#""2024-05-01T12:00:00Z""#,
        ),
        (
            "ts_ms",
            Arc::new(
                TimestampMillisecondArray::from(vec![Some(1_714_564_800_250), None])
                    .with_timezone("+02:00"),
            ),
            "2024-05-01T12:00:00.250Z",
            r#""2024-05-01T12:00:00.250Z""#,
        ),
        (
            "ts_us",
            Arc::new(TimestampMicrosecondArray::from(vec![
                Some(1_714_564_800_000_001),
                None,
            ])),
            "2024-05-01T12:00:00.000001",
            r#""2024-05-01T12:00:00.000001""#,
        ),
        (
            "ts_ns",
            Arc::new(TimestampNanosecondArray::from(vec![Some(-1), None]).with_timezone("UTC")),
            "1969-12-31T23:59:59.999999999Z",
            r#""1969-12-31T23:59:59.999999999Z""#,
        ),
        ("list", Arc::new(list.finish()), "[1,null,3]", "[1,null,3]"),
        ("llist", Arc::new(large_list), "[]", "[]"),
        ("flist", Arc::new(fixed_list), "[4,5]", "[4,5]"),
        (
            "struct",
            Arc::new(strukt),
            r#"{"a":1,"b":"x\"y"}"#,
            r#"{"a":1,"b":"x\"y"}"#,
        ),
        (
            "map",
            Arc::new(map.finish()),
            r#"{"7":"seven","-1":null}"#,
            r#"{"7":"seven","-1":null}"#,
        ),
        ("null", Arc::new(NullArray::new(2)), "", ""),
    ]
}

fn half_of(x: f32) -> half::f16 {
    half::f16::from_f32(x)
}

fn typed_file(dir: &TempDir) -> (PathBuf, Vec<(&'static str, &'static str, &'static str)>) {
    let cols = typed_columns();
    let mut arrays: Vec<(&str, ArrayRef)> = vec![(
        "key",
        Arc::new(StringArray::from(vec!["r0", "r1"])) as ArrayRef,
    )];
    arrays.extend(cols.iter().map(|(n, a, _, _)| (*n, a.clone())));
    let p = parquet(dir, "types.parquet", arrays);
    (p, cols.into_iter().map(|(n, _, t, j)| (n, t, j)).collect())
}

#[test]
fn every_parquet_type_renders_as_a_hash_field() {
    let dir = TempDir::new().unwrap();
    let (p, cols) = typed_file(&dir);
    let (recs, skipped) = read(&p, &hash_spec("key", None, Nulls::Skip)).unwrap();
    assert_eq!((recs.len(), skipped), (1, 1), "row 1 is all null: skipped");
    let (k, v) = &recs[0];
    assert_eq!(k, "r0");
    let want: Vec<(String, String)> = cols
        .iter()
        .filter(|(n, _, _)| *n != "null")
        .map(|(n, t, _)| (n.to_string(), t.to_string()))
        .collect();
    assert_eq!(fields(v), want);
}

#[test]
fn every_parquet_type_renders_as_a_json_member() {
    let dir = TempDir::new().unwrap();
    let (p, cols) = typed_file(&dir);
    let (recs, skipped) = read(&p, &json_spec("key", None, Nulls::Empty)).unwrap();
    assert_eq!((recs.len(), skipped), (2, 0));
    let members: Vec<String> = cols
        .iter()
        .map(|(n, _, j)| {
            let j = if *n == "null" { "null" } else { j };
            format!("\"{n}\":{j}")
        })
        .collect();
    assert_eq!(recs[0].1, format!("{{{}}}", members.join(",")));
    // Every value is valid JSON, and the second row's every member null.
    let v: serde_json::Value = serde_json::from_str(&recs[0].1).unwrap();
    assert_eq!(v["u64"], serde_json::json!(u64::MAX));
    assert_eq!(v["struct"]["b"], "x\"y");
    let nulls: serde_json::Value = serde_json::from_str(&recs[1].1).unwrap();
    assert!(nulls.as_object().unwrap().values().all(|v| v.is_null()));
}

#[test]
fn the_single_value_path_renders_the_same() {
    let dir = TempDir::new().unwrap();
    let (p, cols) = typed_file(&dir);
    for (name, text, _) in cols.iter().filter(|(n, _, _)| *n != "null") {
        let spec = InputSpec {
            value_field: name.to_string(),
            nulls: Nulls::Skip,
            ..InputSpec::default()
        };
        let (recs, skipped) = read(&p, &spec).unwrap();
        assert_eq!((recs.len(), skipped), (1, 1), "{name}");
        assert_eq!(recs[0].1, *text, "{name}");
    }
}

#[test]
fn chosen_fields_go_in_the_order_named_and_nulls_follow_the_policy() {
    let dir = TempDir::new().unwrap();
    let p = parquet(
        &dir,
        "n.parquet",
        vec![
            (
                "id",
                Arc::new(StringArray::from(vec!["a", "b", "c"])) as ArrayRef,
            ),
            ("x", Arc::new(Int64Array::from(vec![Some(1), None, None]))),
            (
                "y",
                Arc::new(StringArray::from(vec![Some("p"), Some("q"), None])),
            ),
            (
                "z",
                Arc::new(Float64Array::from(vec![Some(0.5), None, None])),
            ),
        ],
    );
    let f: &[&str] = &["z", "x"];
    let (recs, skipped) = read(&p, &hash_spec("id", Some(f), Nulls::Skip)).unwrap();
    assert_eq!(skipped, 2, "b and c have no z and no x");
    assert_eq!(recs, [("a".into(), "z=0.5\nx=1\n".into())]);
    let (recs, _) = read(&p, &hash_spec("id", Some(f), Nulls::Empty)).unwrap();
    assert_eq!(recs[1], ("b".into(), "z=\nx=\n".into()));
    let (recs, skipped) = read(&p, &hash_spec("id", None, Nulls::Skip)).unwrap();
    assert_eq!(skipped, 1);
    assert_eq!(recs[1], ("b".into(), "y=q\n".into()));
    let e = read(&p, &hash_spec("id", None, Nulls::Error)).unwrap_err();
    assert!(
        e.ends_with("n.parquet: row 2: field \"x\" is null (--nulls error)"),
        "{e}"
    );
    let (recs, _) = read(&p, &json_spec("id", Some(&["y", "x"]), Nulls::Skip)).unwrap();
    assert_eq!(
        recs,
        [
            ("a".into(), r#"{"y":"p","x":1}"#.into()),
            ("b".into(), r#"{"y":"q"}"#.into())
        ]
    );
    // A field named twice, or one the file lacks, fails at open.
    let e = read(&p, &hash_spec("id", Some(&["x", "x"]), Nulls::Skip)).unwrap_err();
    assert!(e.ends_with("field \"x\" is listed twice"), "{e}");
    let e = read(&p, &hash_spec("id", Some(&["w"]), Nulls::Skip)).unwrap_err();
    assert!(e.contains("field column \"w\" not found"), "{e}");

    // A column of a type no value takes: refused at open, unless left out.
    let p = parquet(
        &dir,
        "d.parquet",
        vec![
            ("id", Arc::new(StringArray::from(vec!["a"])) as ArrayRef),
            ("x", Arc::new(Int64Array::from(vec![1]))),
            (
                "d",
                Arc::new(arrow_array::DurationSecondArray::from(vec![5])),
            ),
        ],
    );
    let e = read(&p, &hash_spec("id", None, Nulls::Skip)).unwrap_err();
    assert!(
        e.ends_with(
            "d.parquet: field column \"d\" has unsupported type Duration(s); name the fields to load with --fields"
        ),
        "{e}"
    );
    let (recs, _) = read(&p, &hash_spec("id", Some(&["x"]), Nulls::Skip)).unwrap();
    assert_eq!(recs, [("a".into(), "x=1\n".into())]);
}

#[test]
fn csv_rows_are_text_as_is() {
    let dir = TempDir::new().unwrap();
    let p = dir.path().join("r.csv");
    std::fs::write(&p, "a,id,b\n1,k1,\"x,y\"\n,k2,2.50\n").unwrap();
    let (recs, _) = read(&p, &hash_spec("id", None, Nulls::Error)).unwrap();
    assert_eq!(
        recs,
        [
            ("k1".into(), "a=1\nb=x,y\n".into()),
            ("k2".into(), "a=\nb=2.50\n".into())
        ]
    );
    let (recs, _) = read(&p, &json_spec("id", Some(&["b", "a"]), Nulls::Error)).unwrap();
    assert_eq!(recs[1].1, r#"{"b":"2.50","a":""}"#);
    // Without a header, fields are column indexes, and so are their names.
    let p = dir.path().join("n.csv");
    std::fs::write(&p, "k1,x,y\nk2,z,w\n").unwrap();
    let spec = InputSpec {
        csv_has_header: false,
        ..hash_spec("0", None, Nulls::Error)
    };
    let (recs, _) = read(&p, &spec).unwrap();
    assert_eq!(recs[1], ("k2".into(), "1=z\n2=w\n".into()));
    // Text that is not UTF-8 cannot be a JSON string.
    let p = dir.path().join("bin.csv");
    std::fs::write(&p, b"id,v\nk,\xff\n").unwrap();
    let e = read(&p, &json_spec("id", None, Nulls::Error)).unwrap_err();
    assert!(
        e.ends_with("bin.csv:2: field \"v\" is not UTF-8 text, which a JSON value cannot hold"),
        "{e}"
    );
}

#[test]
fn jsonl_rows_take_strings_as_text_and_the_rest_as_json() {
    let dir = TempDir::new().unwrap();
    let p = dir.path().join("r.jsonl");
    std::fs::write(
        &p,
        concat!(
            r#"{"id":"k1","n":3.50,"s":"a\"b","o":{ "x" : [1, 2] },"t":true,"z":null}"#,
            "\n",
            r#"{"z":null,"id":"k2"}"#,
            "\n",
            r#"{"id":"k3","s":"first","s":"last"}"#,
            "\n"
        ),
    )
    .unwrap();
    let (recs, skipped) = read(&p, &hash_spec("id", None, Nulls::Skip)).unwrap();
    assert_eq!(skipped, 1, "k2 has no field but a null one");
    assert_eq!(
        recs,
        [
            (
                "k1".into(),
                "n=3.50\ns=a\"b\no={\"x\":[1,2]}\nt=true\n".into()
            ),
            ("k3".into(), "s=last\n".into())
        ]
    );
    let (recs, _) = read(&p, &json_spec("id", Some(&["s", "n", "z"]), Nulls::Empty)).unwrap();
    assert_eq!(
        recs,
        [
            ("k1".into(), r#"{"s":"a\"b","n":3.50,"z":null}"#.into()),
            ("k2".into(), r#"{"s":null,"n":null,"z":null}"#.into()),
            ("k3".into(), r#"{"s":"last","n":null,"z":null}"#.into())
        ]
    );
    let e = read(&p, &hash_spec("id", Some(&["s"]), Nulls::Error)).unwrap_err();
    assert!(
        e.ends_with("r.jsonl:2: field \"s\" is null (--nulls error)"),
        "{e}"
    );
}
