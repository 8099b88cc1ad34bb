//! `rialto push` with the inputs data engineers have: output directories of part files,
//! quoted patterns, gzip and zstd files, tab-separated values; through a running server
//! (`--server`, the client reads the files) and into a directory (`--dir`).

use std::io::Write;
use std::path::{Path, PathBuf};

use rialto_push_input::Format;

mod common;
use common::{mget, rialto, serve};

/// Runs a command that must succeed: its stdout and stderr.
fn ok(args: &[&str]) -> (String, String) {
    let out = rialto(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?} failed: {err}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), err)
}

/// Runs a command that must fail with one line on stderr besides its progress lines
/// (`push: ...`, written when stderr is not a terminal): (exit code, that line).
fn fails(args: &[&str]) -> (i32, String) {
    let out = rialto(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} should fail");
    let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with("push: ")).collect();
    assert_eq!(lines.len(), 1, "{args:?}: {err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    (out.status.code().unwrap_or(-1), lines[0].to_string())
}

/// Records `user{i}` -> `{tag}-{i}` for `i` in `range`, as CSV text with `delim`.
fn csv_text(range: std::ops::Range<usize>, tag: &str, delim: char) -> String {
    let mut s = format!("key{delim}value\n");
    for i in range {
        s.push_str(&format!("user{i:05}{delim}{tag}-{i}\n"));
    }
    s
}

fn jsonl_text(range: std::ops::Range<usize>, tag: &str) -> String {
    range
        .map(|i| format!("{{\"key\":\"user{i:05}\",\"value\":\"{tag}-{i}\"}}\n"))
        .collect()
}

fn gzip(data: &str) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data.as_bytes()).unwrap();
    e.finish().unwrap()
}

fn zstd(data: &str) -> Vec<u8> {
    zstd::stream::encode_all(data.as_bytes(), 3).unwrap()
}

fn put(dir: &Path, name: &str, data: impl AsRef<[u8]>) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

/// Checks that store `s` serves `user{i}` -> `{tag}-{i}` for `i` in `0..n`, and nothing at `n`.
fn assert_serves(port: u16, n: usize, tag: &str) {
    let keys: Vec<String> = (0..=n).map(|i| format!("s:user{i:05}")).collect();
    let got = mget(port, &keys);
    for (i, v) in got.iter().enumerate() {
        let want = (i < n).then(|| format!("{tag}-{i}"));
        assert_eq!(v, &want, "{}", keys[i]);
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A Spark-style output directory of gzip, zstd and plain CSV part files with the
/// committer's bookkeeping, pushed through a server: every record of every part file serves,
/// in one version, and nothing else was read.
#[test]
fn a_spark_output_directory_of_compressed_part_files_pushes_through_a_server() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    let out = t.path().join("out");
    put(
        &out,
        "part-00000-c1-c000.csv.gz",
        gzip(&csv_text(0..1500, "a", ',')),
    );
    put(
        &out,
        "part-00001-c1-c000.csv.zst",
        zstd(&csv_text(1500..3000, "a", ',')),
    );
    put(
        &out,
        "part-00002-c1-c000.csv",
        csv_text(3000..3100, "a", ','),
    );
    put(&out, "part-00003-c1-c000.csv", ""); // an empty partition
    put(&out, "_SUCCESS", "");
    put(&out, "_committed_1", "{}");
    put(&out, "_started_1", "");
    put(&out, ".part-00000-c1-c000.csv.gz.crc", "not data");
    put(&out.join("_temporary/0"), "part-00009.csv", "not,data\n");
    ok(&["store", "--dir", s(&db), "create", "s"]);
    let server = serve(&db);
    let addr = format!("127.0.0.1:{}", server.port);

    let (stdout, stderr) = ok(&[
        "push",
        "--server",
        &addr,
        "--store",
        "s",
        "--input",
        s(&out),
        "--require-success-marker",
        "--batch",
        "100",
    ]);
    assert!(stdout.contains("records: 3100"), "{stdout}");
    assert!(stderr.contains("push: read started (3 files, "), "{stderr}");
    assert_serves(server.port, 3100, "a");

    // Without the marker, the directory is refused only when the push asks for it.
    std::fs::remove_file(out.join("_SUCCESS")).unwrap();
    let (code, line) = fails(&[
        "push",
        "--server",
        &addr,
        "--store",
        "s",
        "--input",
        s(&out),
        "--require-success-marker",
    ]);
    assert_eq!(code, 2);
    assert!(line.contains("no _SUCCESS marker"), "{line}");
    let (stdout, _) = ok(&[
        "push",
        "--server",
        &addr,
        "--store",
        "s",
        "--input",
        s(&out),
    ]);
    assert!(stdout.contains("records: 3100"), "{stdout}");
    // The bookkeeping, the checksum files and the empty partition were not read.
    let (stdout, _) = ok(&["store", "--server", &addr, "describe", "s"]);
    assert!(stdout.contains("current-records: 3100"), "{stdout}");
}

/// Patterns (quoted, expanded by rialto), several `--input` flags, JSONL in gzip and zstd and a
/// Parquet directory (its pages Snappy-compressed) into a directory; then tab-separated values
/// through the server.
#[test]
fn patterns_repeated_inputs_parquet_and_tabs_into_a_directory() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    let db_s = s(&db);
    let json = t.path().join("json");
    put(&json, "part-0.jsonl.gz", gzip(&jsonl_text(0..1000, "j")));
    put(
        &json,
        "part-1.jsonl.zst",
        zstd(&jsonl_text(1000..2000, "j")),
    );
    put(&json, "part-2.jsonl", jsonl_text(2000..2500, "j"));
    put(&json, "other.jsonl", jsonl_text(0..1, "x"));
    ok(&["store", "--dir", db_s, "create", "s"]);
    let pattern = json.join("part-*");
    let extra = put(t.path(), "extra.jsonl", jsonl_text(2500..2600, "j"));
    // Two --input flags: a pattern and a file.
    let (stdout, _) = ok(&[
        "push",
        "--dir",
        db_s,
        "--store",
        "s",
        "--input",
        s(&pattern),
        "--input",
        s(&extra),
    ]);
    assert!(stdout.contains("records: 2600"), "{stdout}");

    let parquet = t.path().join("parquet");
    std::fs::create_dir(&parquet).unwrap();
    for (part, range) in [(0, 0..2000), (1, 2000..2700)] {
        let mut it = range;
        rialto_push_input::write_dataset(
            &parquet.join(format!("part-{part:05}-c1.snappy.parquet")),
            Format::Parquet,
            &mut |k, v| {
                let Some(i) = it.next() else { return false };
                k.clear();
                v.clear();
                k.extend_from_slice(format!("user{i:05}").as_bytes());
                v.extend_from_slice(format!("p-{i}").as_bytes());
                true
            },
        )
        .unwrap();
    }
    put(&parquet, "_SUCCESS", "");
    let (stdout, _) = ok(&[
        "push",
        "--dir",
        db_s,
        "--store",
        "s",
        "--input",
        s(&parquet),
    ]);
    assert!(stdout.contains("records: 2700"), "{stdout}");

    let server = serve(&db);
    assert_serves(server.port, 2700, "p");
    let addr = format!("127.0.0.1:{}", server.port);
    // The previous version is the JSONL one.
    ok(&["store", "--server", &addr, "rollback", "s"]);
    assert_serves(server.port, 2600, "j");

    for (n, delim) in [(2800, "\\t"), (2900, "tab")] {
        let tsv = put(t.path(), "day.tsv.gz", gzip(&csv_text(0..n, delim, '\t')));
        let (stdout, _) = ok(&[
            "push",
            "--server",
            &addr,
            "--store",
            "s",
            "--input",
            s(&tsv),
            "--format",
            "csv",
            "--csv-delimiter",
            delim,
        ]);
        assert!(
            stdout.contains(&format!("records: {n}")),
            "{delim}: {stdout}"
        );
        assert_serves(server.port, n, delim);
    }
}

/// What a careful user gets wrong is refused with one line and a non-zero exit, and the
/// version serving stays.
#[test]
fn bad_inputs_are_refused_with_one_line() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    let db_s = s(&db);
    ok(&["store", "--dir", db_s, "create", "s"]);
    let good = put(t.path(), "good.csv", csv_text(0..100, "a", ','));
    ok(&["push", "--dir", db_s, "--store", "s", "--input", s(&good)]);
    let push = |input: &Path, extra: &[&str]| {
        let mut args = vec!["push", "--dir", db_s, "--store", "s", "--input", s(input)];
        args.extend_from_slice(extra);
        fails(&args)
    };

    let (code, line) = push(&t.path().join("nothing-*.csv"), &[]);
    assert_eq!(code, 2);
    assert!(
        line.contains("no data file matches") && line.contains("nothing-*.csv"),
        "{line}"
    );

    let mixed = t.path().join("mixed");
    put(&mixed, "part-0.csv", csv_text(0..10, "m", ','));
    put(&mixed, "part-1.jsonl", jsonl_text(10..20, "m"));
    let (code, line) = push(&mixed, &[]);
    assert_eq!(code, 2);
    assert!(line.contains("two formats, csv"), "{line}");

    let nested = t.path().join("nested");
    put(
        &nested.join("dt=1"),
        "part-0.csv",
        csv_text(0..10, "n", ','),
    );
    let (code, line) = push(&nested, &[]);
    assert_eq!(code, 2);
    assert!(line.contains("holds the directory"), "{line}");

    for bad in ["ab", "\\n", "space"] {
        let (code, line) = push(&good, &["--csv-delimiter", bad]);
        assert_eq!(code, 2, "{bad}");
        assert!(
            line.contains("--csv-delimiter") && line.contains("not one byte"),
            "{line}"
        );
    }
    let (code, line) = push(&good, &["--csv-delimiter", "\""]);
    assert_eq!(code, 2);
    assert!(line.contains("quote or a line end"), "{line}");

    let cut = put(
        t.path(),
        "cut.csv.gz",
        &gzip(&csv_text(0..5000, "c", ','))[..2000],
    );
    let (code, line) = push(&cut, &[]);
    assert_ne!(code, 0);
    assert!(line.contains("cut.csv.gz"), "{line}");

    let bz2 = put(t.path(), "x.csv.bz2", "BZh");
    let (code, line) = push(&bz2, &[]);
    assert_eq!(code, 2);
    assert!(line.contains(".gz and .zst"), "{line}");

    // A directory holding no data file is an empty input: the guard refuses it unless allowed.
    let empty = t.path().join("empty");
    put(&empty, "_SUCCESS", "");
    put(&empty, "part-0.csv", "");
    let out = rialto(&["push", "--dir", db_s, "--store", "s", "--input", s(&empty)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.starts_with("the inputs hold no data file\n"), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: push refused: it loaded 0 records"),
        "{err}"
    );
    let out = ok(&["store", "--dir", db_s, "describe", "s"]);
    assert!(out.0.contains("current-records: 100"), "{}", out.0);
    let (stdout, _) = ok(&[
        "push",
        "--dir",
        db_s,
        "--store",
        "s",
        "--input",
        s(&empty),
        "--allow-empty",
        "--max-shrink",
        "100",
    ]);
    assert!(stdout.contains("records: 0"), "{stdout}");
}

/// The fields of hash `key`, in order (HGETALL).
fn hgetall(port: u16, key: &str) -> Vec<(String, String)> {
    let flat = common::array(port, &["HGETALL".into(), key.into()]);
    flat.chunks(2)
        .map(|p| (p[0].clone().unwrap(), p[1].clone().unwrap()))
        .collect()
}

/// A typed Parquet table of 20 feature columns pushed with `--layout hash`: every key a
/// hash of every column but the key, each field the text the table's CSV holds (the
/// rendering of each type); `--fields` picks and orders them; a JSON value push of the same
/// file; nulls skipped, written empty, or refused with one line and the version serving.
#[test]
fn a_typed_table_pushes_as_hashes_and_json_through_a_server() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    let table = |name: &str, nulls: &str| {
        let p = t.path().join(name);
        ok(&[
            "gen-table",
            "--rows",
            "300",
            "--columns",
            "20",
            "--null-every",
            nulls,
            "--out",
            s(&p),
        ]);
        p
    };
    let parquet = table("t.parquet", "0");
    let csv = table("t.csv", "0");
    ok(&["store", "--dir", s(&db), "create", "f"]);
    let server = serve(&db);
    let addr = format!("127.0.0.1:{}", server.port);
    let push = |input: &Path, extra: &[&str]| {
        let mut args = vec![
            "push",
            "--server",
            &addr,
            "--store",
            "f",
            "--input",
            s(input),
            "--key-field",
            "id",
        ];
        args.extend_from_slice(extra);
        rialto(&args)
    };
    let out = push(&parquet, &["--layout", "hash"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("records: 300\n") && stdout.contains("skipped-rows: 0\n"),
        "{stdout}"
    );

    // The CSV holds each field as the hash push renders it.
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    for i in [0usize, 1, 7, 299] {
        let want: Vec<(String, String)> = header[1..]
            .iter()
            .zip(&rows[i][1..])
            .map(|(h, v)| (h.to_string(), v.to_string()))
            .collect();
        assert_eq!(hgetall(server.port, &format!("f:{}", rows[i][0])), want);
    }
    assert_eq!(
        common::array(
            server.port,
            &[
                "HMGET".into(),
                "f:000000000005".into(),
                "f00".into(),
                "f01".into(),
                "f03".into(),
                "f04".into(),
                "f05".into(),
                "nope".into()
            ]
        ),
        [
            Some("-345".to_string()),
            Some("2.25".to_string()),
            Some("true".to_string()),
            Some("2023-11-14T22:13:25.004Z".to_string()),
            Some("5.05".to_string()),
            None
        ]
    );

    // Chosen fields, in the order named, and a JSON value.
    let out = push(&parquet, &["--layout", "hash", "--fields", "f05,f00"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        hgetall(server.port, "f:000000000002"),
        [
            ("f05".to_string(), "2.05".to_string()),
            ("f00".to_string(), "-438".to_string())
        ]
    );
    let out = push(
        &parquet,
        &["--value-format", "json", "--fields", "f02,f01,f03,f05"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        mget(server.port, &["f:000000000002".to_string()]),
        [Some(
            r#"{"f02":"s2-2","f01":1.5,"f03":false,"f05":"2.05"}"#.to_string()
        )]
    );

    // Nulls: skipped by default (the field absent), empty when asked.
    let nully = table("n.parquet", "4");
    let out = push(&nully, &["--layout", "hash", "--fields", "f00,f01,f02"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Row 3: (3 + 1) % 4 == 0, f01 null.
    assert_eq!(
        hgetall(server.port, "f:000000000003"),
        [
            ("f00".to_string(), "-407".to_string()),
            ("f02".to_string(), "s3-2".to_string())
        ]
    );
    let out = push(
        &nully,
        &[
            "--layout", "hash", "--fields", "f00,f01", "--nulls", "empty",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        hgetall(server.port, "f:000000000003"),
        [
            ("f00".to_string(), "-407".to_string()),
            ("f01".to_string(), String::new())
        ]
    );
    // Refused at the first null, with one line naming the row and the field; the version
    // pushed last serves on.
    let out = push(&nully, &["--layout", "hash", "--nulls", "error"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with("push: ")).collect();
    assert_eq!(
        lines,
        [format!(
            "error: {}: row 1: field \"f00\" is null (--nulls error)",
            nully.display()
        )],
        "{err}"
    );
    assert_eq!(
        hgetall(server.port, "f:000000000003"),
        [
            ("f00".to_string(), "-407".to_string()),
            ("f01".to_string(), String::new())
        ]
    );
    let pushes = common::array(server.port, &["PUSH".into(), "LIST".into()]);
    assert!(pushes.is_empty(), "the push was aborted: {pushes:?}");

    // Options that do not go together.
    for (extra, says) in [
        (
            &["--layout", "hash", "--value-format", "json"][..],
            "--value-format json",
        ),
        (&["--fields", "f00"][..], "--fields needs --layout hash"),
        (
            &["--layout", "hash", "--value-field", "f00"][..],
            "--value-field names a raw value",
        ),
    ] {
        let out = push(&parquet, extra);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{extra:?}"
        );
    }
    server.stop();
}

/// A hash push into a directory (`--dir`), from CSV and JSONL; rows whose every field is
/// null are skipped and counted.
#[test]
fn hash_pushes_into_a_directory_from_csv_and_jsonl() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    let csv = put(t.path(), "h.csv", "id,a,b\nk1,1,x\nk2,,\n");
    let jsonl = put(
        t.path(),
        "h.jsonl",
        "{\"id\":\"k1\",\"a\":2.50,\"b\":null}\n{\"id\":\"k2\",\"a\":null}\n{\"id\":\"k3\",\"b\":[1, 2]}\n",
    );
    ok(&["store", "--dir", s(&db), "create", "f"]);
    let (stdout, _) = ok(&[
        "push",
        "--dir",
        s(&db),
        "--store",
        "f",
        "--input",
        s(&csv),
        "--key-field",
        "id",
        "--layout",
        "hash",
    ]);
    assert!(stdout.contains("records: 2\n"), "{stdout}");
    let (stdout, stderr) = ok(&[
        "push",
        "--dir",
        s(&db),
        "--store",
        "f",
        "--input",
        s(&jsonl),
        "--key-field",
        "id",
        "--layout",
        "hash",
        "--max-shrink",
        "100",
    ]);
    assert!(
        stdout.contains("records: 2\n") && stdout.contains("skipped-rows: 1\n"),
        "{stdout}"
    );
    assert!(stderr.contains("note: 1 rows were not loaded"), "{stderr}");
    let server = serve(&db);
    assert_eq!(
        hgetall(server.port, "f:k1"),
        [("a".to_string(), "2.50".to_string())]
    );
    assert_eq!(
        hgetall(server.port, "f:k3"),
        [("b".to_string(), "[1,2]".to_string())]
    );
    assert!(hgetall(server.port, "f:k2").is_empty());
    server.stop();
}
