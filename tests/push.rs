//! `rialto push` and `rialto store` as a user runs them: into a directory (`--dir`) and into a
//! running server (`--server`), with good and bad inputs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

fn rialto(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rialto"))
        .args(args)
        .output()
        .expect("rialto runs")
}

fn ok(args: &[&str]) -> String {
    let out = rialto(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a failing command: returns (exit code, the one stderr line).
fn fails(args: &[&str]) -> (i32, String) {
    let out = rialto(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} should fail");
    let last = err.lines().last().unwrap_or_default().to_string();
    assert!(last.starts_with("error: "), "{err}");
    (out.status.code().unwrap_or(-1), last)
}

/// The fields of the CSV files `write_csv` makes.
const ID_SCORE: [&str; 4] = ["--key-field", "id", "--value-field", "score"];

/// `rialto push <target> <at> --store <store> --input <input> <extra...>`.
fn push_args<'a>(
    target: &'a str,
    at: &'a str,
    store: &'a str,
    input: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut v = vec!["push", target, at, "--store", store, "--input", input];
    v.extend_from_slice(extra);
    v
}

fn write_csv(path: &Path, n: usize, tag: &str) {
    let mut s = String::from("id,score,extra\n");
    for i in (0..n).rev() {
        s.push_str(&format!("user{i:05},{tag}-{i},x\n"));
    }
    std::fs::write(path, s).unwrap();
}

struct Serve {
    child: Child,
    port: u16,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `rialto serve` on a port the kernel picks and learns it from the log.
fn serve(dir: &Path) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rialto"))
        .args(["serve", "--dir"])
        .arg(dir)
        .args(["--port", "0", "--threads", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if line.contains("ready to accept connections") {
                let _ = tx.send(line.rsplit(':').next().and_then(|p| p.trim().parse().ok()));
            }
        }
    });
    let port: u16 = rx
        .recv_timeout(Duration::from_secs(30))
        .ok()
        .flatten()
        .expect("rialto serve listens");
    Serve { child, port }
}

fn get(port: u16, key: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(format!("GET {key}\r\n").as_bytes()).unwrap();
    let mut buf = vec![0u8; 256];
    let n = s.read(&mut buf).unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn push_csv_and_jsonl_into_a_directory_then_serve_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let csv = dir.path().join("a.csv");
    write_csv(&csv, 3000, "a");
    let out = ok(&["store", "--dir", db, "create", "features"]);
    assert!(out.contains("current-version: 1"), "{out}");
    let out = ok(&push_args(
        "--dir",
        db,
        "features",
        csv.to_str().unwrap(),
        &ID_SCORE,
    ));
    assert!(out.contains("records: 3000"), "{out}");
    assert!(out.contains("version: 2"), "{out}");

    let jsonl = dir.path().join("b.jsonl");
    let mut text = String::new();
    for i in 0..10 {
        text.push_str(&format!(
            "{{\"key\": \"user{i:05}\", \"value\": {{\"n\": {i}}}}}\n"
        ));
    }
    std::fs::write(&jsonl, text).unwrap();
    ok(&push_args(
        "--dir",
        db,
        "features",
        jsonl.to_str().unwrap(),
        &[],
    ));
    let out = ok(&["store", "--dir", db, "describe", "features"]);
    assert!(out.contains("current-version: 3"), "{out}");
    assert!(out.contains("previous-version: 2"), "{out}");

    let s = serve(Path::new(db));
    assert_eq!(get(s.port, "features:user00007"), "$7\r\n{\"n\":7}\r\n");
    assert_eq!(get(s.port, "features:user02000"), "$-1\r\n");
    // Roll back through the server.
    let addr = format!("127.0.0.1:{}", s.port);
    ok(&["store", "--server", &addr, "rollback", "features"]);
    assert_eq!(get(s.port, "features:user02000"), "$6\r\na-2000\r\n");
    // And push through it.
    let out = ok(&push_args(
        "--server",
        &addr,
        "features",
        csv.to_str().unwrap(),
        &[&ID_SCORE[..], &["--batch", "100"]].concat(),
    ));
    assert!(out.contains("records: 3000"), "{out}");
    assert_eq!(get(s.port, "features:user02999"), "$6\r\na-2999\r\n");
}

#[test]
fn bad_inputs_fail_with_one_line_and_leave_the_current_version() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let good = dir.path().join("good.csv");
    write_csv(&good, 100, "a");
    ok(&["store", "--dir", db, "create", "s"]);
    ok(&push_args(
        "--dir",
        db,
        "s",
        good.to_str().unwrap(),
        &ID_SCORE,
    ));

    let (code, line) = fails(&push_args("--dir", db, "s", "/nonexistent.csv", &[]));
    assert_eq!(code, 2);
    assert!(line.contains("/nonexistent.csv"), "{line}");

    let (_, line) = fails(&push_args("--dir", db, "s", good.to_str().unwrap(), &[]));
    assert!(line.contains("key"), "missing column: {line}");

    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "key,value\nk1,v1\nk2\nk3,v3\n").unwrap();
    let (_, line) = fails(&push_args("--dir", db, "s", bad.to_str().unwrap(), &[]));
    assert!(line.contains("bad.csv:3"), "line number: {line}");

    let dup = dir.path().join("dup.csv");
    std::fs::write(&dup, "key,value\nk1,v1\nk1,v2\n").unwrap();
    let (_, line) = fails(&push_args("--dir", db, "s", dup.to_str().unwrap(), &[]));
    assert!(line.to_lowercase().contains("duplicate"), "{line}");
    ok(&push_args(
        "--dir",
        db,
        "s",
        dup.to_str().unwrap(),
        &["--duplicates", "last-wins"],
    ));

    let (_, line) = fails(&push_args(
        "--dir",
        db,
        "nope",
        good.to_str().unwrap(),
        &ID_SCORE,
    ));
    assert!(line.contains("no such store"), "{line}");

    // Nothing above changed what serves except the last-wins push: the failed pushes used
    // (and retired) versions 3 and 4, so it is version 5, and version 2 is the previous.
    let out = ok(&["store", "--dir", db, "describe", "s"]);
    assert!(out.contains("current-version: 5"), "{out}");
    assert!(out.contains("previous-version: 2"), "{out}");
    assert!(out.contains("pushing-version: (none)"), "{out}");
    let out = ok(&["check", "--dir", db]);
    assert!(out.contains("ok"), "{out}");
}
