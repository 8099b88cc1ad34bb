//! `rialto push` and `rialto store` as a user runs them: into a directory (`--dir`) and into a
//! running server (`--server`), with good and bad inputs.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::{mget, rialto, serve, serve_with};

fn ok(args: &[&str]) -> String {
    let out = rialto(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The lines of `stderr` that are not progress (which a push writes to a stderr that is
/// not a terminal, `push: ...`).
fn not_progress(stderr: &str) -> impl Iterator<Item = &str> {
    stderr.lines().filter(|l| !l.starts_with("push: "))
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
    // 10 records replacing 3,000: allowed only when the push says so.
    ok(&push_args(
        "--dir",
        db,
        "features",
        jsonl.to_str().unwrap(),
        &["--max-shrink", "100"],
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

    // A record the push itself refuses is reported at its line too.
    let long = dir.path().join("long.csv");
    let key = "k".repeat(100_000);
    std::fs::write(&long, format!("key,value\nk1,v1\n{key},v2\n")).unwrap();
    let out = rialto(&push_args("--dir", db, "s", long.to_str().unwrap(), &[]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(not_progress(&err).count(), 1, "{err}");
    assert!(err.contains("long.csv:3: key of 100000 bytes"), "{err}");

    let dup = dir.path().join("dup.csv");
    std::fs::write(&dup, "key,value\nk1,v1\nk1,v2\n").unwrap();
    let (_, line) = fails(&push_args("--dir", db, "s", dup.to_str().unwrap(), &[]));
    assert!(line.to_lowercase().contains("duplicate"), "{line}");
    ok(&push_args(
        "--dir",
        db,
        "s",
        dup.to_str().unwrap(),
        &["--duplicates", "last-wins", "--max-shrink", "100"],
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
    // (and retired) versions 3 to 5, so it is version 6, and version 2 is the previous.
    let out = ok(&["store", "--dir", db, "describe", "s"]);
    assert!(out.contains("current-version: 6"), "{out}");
    assert!(out.contains("previous-version: 2"), "{out}");
    assert!(out.contains("pushing-version: (none)"), "{out}");
    let out = ok(&["check", "--dir", db]);
    assert!(out.contains("ok"), "{out}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn a_crash_at_any_step_of_a_push_leaves_the_old_version_or_the_whole_new_one() {
    use std::os::unix::process::ExitStatusExt;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    write_csv(&a, 3000, "a");
    // The new version also has keys the old one lacks.
    write_csv(&b, 3500, "b");
    let base = dir.path().join("base");
    let base_s = base.to_str().unwrap();
    ok(&["store", "--dir", base_s, "create", "s"]);
    ok(&push_args(
        "--dir",
        base_s,
        "s",
        a.to_str().unwrap(),
        &ID_SCORE,
    ));
    let keys: Vec<String> = (0..3500).map(|i| format!("s:user{i:05}")).collect();
    let old: Vec<Option<String>> = (0..3500)
        .map(|i| (i < 3000).then(|| format!("a-{i}")))
        .collect();
    let new: Vec<Option<String>> = (0..3500).map(|i| Some(format!("b-{i}"))).collect();

    // The push's own points (each passed once) at their hit; the engine's that a push passes
    // (table files, manifest edits, the journal and the merger's store records and swap) at
    // their first hit and at a later one.
    let mut cases: Vec<(&str, u64, u64)> = rialto_killpoint::PUSH_POINTS
        .iter()
        .map(|p| (*p, 1, 1))
        .collect();
    for p in [
        "sstable.finish",
        "manifest.write",
        "manifest.installed",
        "wal.append",
        "wal.sync",
        "merger.group_logged",
        "merger.group_synced",
    ] {
        cases.extend([(p, 1, 1), (p, 2, 3)]);
    }
    let fired: Vec<AtomicUsize> = cases.iter().map(|_| AtomicUsize::new(0)).collect();
    let next = AtomicUsize::new(0);
    let run = |case: usize| {
        let (point, seed, one_in) = cases[case];
        let what = format!("{point} seed={seed} one_in={one_in}");
        let db = dir.path().join(format!("case{case}"));
        copy_dir(&base, &db);
        let db_s = db.to_str().unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_rialto"))
            .args(push_args(
                "--dir",
                db_s,
                "s",
                b.to_str().unwrap(),
                &ID_SCORE,
            ))
            .env(
                "RIALTO_KILL_POINTS",
                format!("seed={seed},one_in={one_in},only={point}"),
            )
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let killed = out.status.signal() == Some(9);
        if killed {
            assert!(stderr.contains(&format!("kill point {point}")), "{stderr}");
            fired[case].fetch_add(1, Ordering::Relaxed);
        } else {
            assert!(out.status.success(), "{what}: {stderr}");
        }

        // The restart retires an unfinished push; one version serves, whole.
        let s = serve(&db);
        let got = mget(s.port, &keys);
        if got != new {
            assert!(!killed || got == old, "{what}: a mix of versions");
            assert!(
                killed,
                "{what}: the push succeeded but its version does not serve"
            );
        }
        let addr = format!("127.0.0.1:{}", s.port);
        let out = ok(&["store", "--server", &addr, "describe", "s"]);
        assert!(out.contains("pushing-version: (none)"), "{what}: {out}");
        s.stop();
        let out = ok(&["check", "--dir", db_s]);
        assert!(out.contains("ok"), "{what}: {out}");
        std::fs::remove_dir_all(&db).unwrap();
    };
    // Two at a time: each case opens the database twice.
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let case = next.fetch_add(1, Ordering::Relaxed);
                if case >= cases.len() {
                    break;
                }
                run(case);
            });
        }
    });
    let mut hits = std::collections::BTreeMap::new();
    for ((point, _, _), f) in cases.iter().zip(&fired) {
        *hits.entry(*point).or_insert(0) += f.load(Ordering::Relaxed);
    }
    for (point, n) in hits {
        assert!(n > 0, "kill point {point} is never reached by a push");
    }
}

/// An upstream job that wrote nothing (a header-only CSV, an empty JSONL file) or far less
/// than usual must not replace the version being served: the push is refused with one line,
/// exit 1, and the current version keeps serving, unless the push says otherwise.
#[test]
fn empty_or_much_smaller_inputs_are_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let full = dir.path().join("full.csv");
    write_csv(&full, 1000, "a");
    let header_only = dir.path().join("empty.csv");
    std::fs::write(&header_only, "id,score,extra\n").unwrap();
    let empty_jsonl = dir.path().join("empty.jsonl");
    std::fs::write(&empty_jsonl, "").unwrap();
    let small = dir.path().join("small.csv");
    write_csv(&small, 400, "b");
    ok(&["store", "--dir", db, "create", "s"]);
    // The first push of a store is not compared with anything, but must not be empty.
    let (code, line) = fails(&push_args(
        "--dir",
        db,
        "s",
        header_only.to_str().unwrap(),
        &ID_SCORE,
    ));
    assert_eq!(code, 1);
    assert!(
        line.contains("push refused: it loaded 0 records") && line.contains("MIN-RECORDS"),
        "{line}"
    );
    ok(&push_args(
        "--dir",
        db,
        "s",
        full.to_str().unwrap(),
        &ID_SCORE,
    ));

    for input in [&header_only, &empty_jsonl] {
        let extra: &[&str] = if input == &header_only {
            &ID_SCORE
        } else {
            &[]
        };
        let (code, line) = fails(&push_args("--dir", db, "s", input.to_str().unwrap(), extra));
        assert_eq!(code, 1, "{line}");
        assert!(line.contains("0 records"), "{line}");
    }
    // 400 of 1,000 is a 60% shrink: over the default 50%.
    let (_, line) = fails(&push_args(
        "--dir",
        db,
        "s",
        small.to_str().unwrap(),
        &ID_SCORE,
    ));
    assert!(
        line.contains("loaded 400 records, 60% fewer than the current version's 1000")
            && line.contains("MAX-SHRINK 50%"),
        "{line}"
    );
    let (_, line) = fails(&push_args(
        "--dir",
        db,
        "s",
        full.to_str().unwrap(),
        &[&ID_SCORE[..], &["--min-records", "1001"]].concat(),
    ));
    assert!(line.contains("fewer than the 1001 required"), "{line}");
    let out = ok(&["store", "--dir", db, "describe", "s"]);
    assert!(
        out.contains("current-records: 1000"),
        "the full version serves: {out}"
    );

    // Through a server, with the push's own limits.
    let s = serve(Path::new(db));
    let addr = format!("127.0.0.1:{}", s.port);
    let (_, line) = fails(&push_args(
        "--server",
        &addr,
        "s",
        small.to_str().unwrap(),
        &ID_SCORE,
    ));
    assert!(line.contains("MAX-SHRINK 50%"), "{line}");
    assert_eq!(get(s.port, "s:user00999"), "$5\r\na-999\r\n");
    ok(&push_args(
        "--server",
        &addr,
        "s",
        small.to_str().unwrap(),
        &[&ID_SCORE[..], &["--max-shrink", "60"]].concat(),
    ));
    assert_eq!(get(s.port, "s:user00999"), "$-1\r\n");
    let out = ok(&push_args(
        "--server",
        &addr,
        "s",
        header_only.to_str().unwrap(),
        &[&ID_SCORE[..], &["--allow-empty", "--max-shrink", "100"]].concat(),
    ));
    assert!(out.contains("records: 0"), "{out}");
    assert_eq!(get(s.port, "s:user00001"), "$-1\r\n");
}

/// A pipe whose reading end is already closed: what `| head` leaves once it has its lines.
fn closed_pipe() -> std::fs::File {
    let mut fds = [0i32; 2];
    // SAFETY: pipe(2) fills two descriptors we then own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: each descriptor is owned once: the read end closed, the write end wrapped.
    unsafe {
        libc::close(fds[0]);
        std::os::fd::FromRawFd::from_raw_fd(fds[1])
    }
}

/// Runs rialto with stdout into a closed pipe; returns its status and stderr.
fn into_closed_pipe(args: &[&str]) -> (std::process::ExitStatus, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rialto"))
        .args(args)
        .stdout(Stdio::from(closed_pipe()))
        .stderr(Stdio::piped())
        .output()
        .expect("rialto runs");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `rialto store describe s | head` and the like: output into a closed pipe ends the command
/// quietly (no panic, no backtrace, nothing on stderr), and a push into a closed pipe still
/// finishes: it never stops half-way because nobody reads its report.
#[test]
fn output_into_a_closed_pipe_ends_quietly_and_a_push_still_finishes() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    ok(&["store", "--dir", db, "create", "s"]);
    for args in [
        &["store", "--dir", db, "describe", "s"][..],
        &["store", "--dir", db, "list"],
        &["check", "--dir", db],
    ] {
        let (status, err) = into_closed_pipe(args);
        assert!(
            status.success() || status.signal() == Some(libc::SIGPIPE),
            "{args:?}: {status:?} {err}"
        );
        assert!(err.is_empty(), "{args:?}: {err}");
    }
    let csv = dir.path().join("a.csv");
    write_csv(&csv, 100, "a");
    let (status, err) = into_closed_pipe(&push_args(
        "--dir",
        db,
        "s",
        csv.to_str().unwrap(),
        &ID_SCORE,
    ));
    assert!(status.success(), "{status:?} {err}");
    assert!(!err.contains("panicked"), "{err}");
    let out = ok(&["store", "--dir", db, "describe", "s"]);
    assert!(out.contains("current-version: 2"), "{out}");
}

/// STORE DESCRIBE's times, in Unix milliseconds over RESP, are RFC 3339 UTC in the CLI.
#[test]
fn store_describe_prints_times_as_rfc3339_utc() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    ok(&["store", "--dir", db, "create", "s"]);
    let out = ok(&["store", "--dir", db, "describe", "s"]);
    let field = |name: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
            .unwrap_or_else(|| panic!("no {name} in {out}"))
            .to_string()
    };
    for name in ["created", "current-created"] {
        let t = field(name);
        // 2026-11-27T09:30:00.125Z
        assert_eq!(t.len(), 24, "{name}: {t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{name}: {t}");
        assert!(t.starts_with("20"), "{name}: {t}");
    }
    assert!(!out.contains("-ms:"), "{out}");
}

/// A second rollback is refused, not a flip back to the version just left; `--to-version`
/// names where to go.
#[test]
fn store_rollback_goes_back_once_to_the_version_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let csv = dir.path().join("a.csv");
    ok(&["store", "--dir", db, "create", "s"]);
    for tag in ["a", "b"] {
        write_csv(&csv, 100, tag);
        ok(&push_args(
            "--dir",
            db,
            "s",
            csv.to_str().unwrap(),
            &ID_SCORE,
        ));
    }
    let (code, line) = fails(&["store", "--dir", db, "rollback", "s", "--to-version", "1"]);
    assert_eq!(code, 1);
    assert!(line.contains("does not keep version 1"), "{line}");
    let out = ok(&["store", "--dir", db, "rollback", "s", "--to-version", "2"]);
    assert!(out.contains("current-version: 2"), "{out}");
    assert!(out.contains("previous-version: (none)"), "{out}");
    let (_, line) = fails(&["store", "--dir", db, "rollback", "s"]);
    assert!(line.contains("keeps no version older"), "{line}");
}

#[test]
fn store_create_and_config_set_a_store_compression() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let out = ok(&["store", "--dir", db, "create", "s", "--compression", "zstd"]);
    assert!(out.contains("compression: zstd"), "{out}");
    let out = ok(&["store", "--dir", db, "create", "t"]);
    assert!(out.contains("compression: none"), "{out}");
    let csv = dir.path().join("a.csv");
    write_csv(&csv, 100, "a");
    ok(&push_args(
        "--dir",
        db,
        "s",
        csv.to_str().unwrap(),
        &ID_SCORE,
    ));
    let out = ok(&["store", "--dir", db, "config", "s", "--compression", "lz4"]);
    assert!(
        out.contains("compression: lz4") && out.contains("current-version: 2"),
        "{out}"
    );
    let (code, line) = fails(&["store", "--dir", db, "config", "s"]);
    assert_eq!(code, 2);
    assert!(line.contains("--compression"), "{line}");
    let out = rialto(&[
        "store",
        "--dir",
        db,
        "create",
        "u",
        "--compression",
        "snappy",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not none, lz4 or zstd"),
        "{out:?}"
    );
}

#[test]
fn store_keep_and_rollback_to_a_version_named_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let out = ok(&["store", "--dir", db, "create", "s", "--keep", "3"]);
    assert!(out.contains("keep: 3"), "{out}");
    let csv = dir.path().join("a.csv");
    for tag in ["a", "b", "c"] {
        write_csv(&csv, 100, tag);
        ok(&push_args(
            "--dir",
            db,
            "s",
            csv.to_str().unwrap(),
            &ID_SCORE,
        ));
    }
    let out = ok(&["store", "--dir", db, "describe", "s"]);
    assert!(out.contains("kept-versions: 3 2"), "{out}");
    let out = ok(&["store", "--dir", db, "rollback", "s", "2"]);
    assert!(out.contains("current-version: 2"), "{out}");
    assert!(out.contains("kept-versions: (none)"), "{out}");
    let (code, line) = fails(&["store", "--dir", db, "config", "s", "--keep", "11"]);
    assert_eq!(code, 2);
    assert!(line.contains("--keep must be 1 to 10"), "{line}");
    let out = ok(&["store", "--dir", db, "config", "s", "--keep", "1"]);
    assert!(out.contains("keep: 1"), "{out}");
}

/// The README's pushing user, taken from the README itself: its ACL is enough to push,
/// describe and roll back through a server, and an application user is refused.
#[test]
fn the_readme_pushing_user_can_push_and_an_application_user_cannot() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let acl = readme
        .lines()
        .find(|l| l.starts_with("user = [\"loader "))
        .expect("the README shows the pushing user's ACL");
    let loader = acl
        .strip_prefix("user = [")
        .and_then(|l| l.strip_suffix(']'))
        .expect("one quoted entry");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("rialto.toml");
    let app = "\"app on >apppw ~* +@read +@write -@dangerous\"";
    std::fs::write(&cfg, format!("user = [{loader}, {app}]\n")).unwrap();
    let s = serve_with(&dir.path().join("db"), &["--config", cfg.to_str().unwrap()]);
    let addr = format!("127.0.0.1:{}", s.port);
    ok(&["store", "--server", &addr, "create", "features"]);
    let csv = dir.path().join("a.csv");
    write_csv(&csv, 100, "a");
    let as_loader = ["--user", "loader", "--password", "secret"];
    for tag in ["a", "b"] {
        write_csv(&csv, 100, tag);
        let out = ok(&push_args(
            "--server",
            &addr,
            "features",
            csv.to_str().unwrap(),
            &[&ID_SCORE[..], &as_loader].concat(),
        ));
        assert!(out.contains("records: 100"), "{out}");
    }
    let out = ok(&[
        &["store", "--server", &addr, "describe", "features"][..],
        &as_loader,
    ]
    .concat());
    assert!(out.contains("current-version: 3"), "{out}");
    ok(&[
        &["store", "--server", &addr, "rollback", "features"][..],
        &as_loader,
    ]
    .concat());
    assert_eq!(get(s.port, "features:user00001"), "$3\r\na-1\r\n");
    let (_, line) = fails(&push_args(
        "--server",
        &addr,
        "features",
        csv.to_str().unwrap(),
        &[&ID_SCORE[..], &["--user", "app", "--password", "apppw"]].concat(),
    ));
    assert!(line.contains("NOPERM"), "{line}");
    s.stop();
}

/// Runs a push with stderr into a pipe (as a scheduler's log takes it) and returns its
/// stderr, after checking that it succeeded.
fn push_logged(args: &[&str]) -> String {
    let out = rialto(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?} failed: {err}");
    err
}

/// A push whose sort spills (a 1 MiB sort budget, many runs, merge passes): its log shows the
/// sort's work and rate, as for read and write, and its periodic lines an ETA at the speed
/// of the push's spills once the sort's last step has said what it has to do.
#[test]
fn progress_of_a_spilling_sort_has_its_work_a_rate_and_an_eta() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("a.csv");
    write_csv(&csv, 1_000_000, "a");
    let csv = csv.to_str().unwrap();
    let s = serve_with(&dir.path().join("served"), &["--push-memory-limit", "1mb"]);
    let addr = format!("127.0.0.1:{}", s.port);
    ok(&["store", "--server", &addr, "create", "s"]);
    let extra = [&ID_SCORE[..], &["--progress-interval", "0.1"]].concat();
    let err = push_logged(&push_args("--server", &addr, "s", csv, &extra));
    s.stop();
    // A look during the write (a million records: several looks) brings the sort's last
    // figures.
    let done = err.lines().find(|l| l.starts_with("push: sort done in "));
    let done = done.unwrap_or_else(|| panic!("no sort done line in:\n{err}"));
    assert!(
        done.contains(" records sorted | ") && done.ends_with(" records/s"),
        "{err}"
    );
    for line in err.lines().filter(|l| l.starts_with("push: sort ")) {
        if line.contains(" records sorted") && line.contains(" elapsed") {
            assert!(line.contains(" | ETA "), "{line}");
        }
    }
}

/// Progress written to a log: a line as each phase starts and ends, read, sort, write and
/// swap in order, a summary, and no terminal control codes; `--quiet` writes none of it.
#[test]
fn progress_into_a_log_has_plain_lines_for_every_phase() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let csv = dir.path().join("a.csv");
    write_csv(&csv, 20_000, "a");
    let csv = csv.to_str().unwrap();
    ok(&["store", "--dir", db, "create", "s"]);
    let check = |err: &str, what: &str| {
        assert!(
            !err.contains('\x1b') && !err.contains('\r'),
            "{what}: control codes in {err:?}"
        );
        let mut at = 0;
        for phase in ["read", "sort", "write", "swap"] {
            for event in ["started", "done in "] {
                let needle = format!("push: {phase} {event}");
                let found = err[at..].find(&needle);
                let Some(i) = found else {
                    panic!("{what}: no {needle:?} in order in:\n{err}");
                };
                at += i;
            }
        }
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("push: done in ") && last.contains("| write "),
            "{what}: {err}"
        );
        assert!(
            err.lines().all(|l| l.starts_with("push: ")),
            "{what}: {err}"
        );
        assert!(err.contains("20,000 records"), "{what}: {err}");
    };
    let err = push_logged(&push_args("--dir", db, "s", csv, &ID_SCORE));
    check(&err, "--dir");
    // Only the phase changes at an interval of 0.
    let extra = [&ID_SCORE[..], &["--progress-interval", "0"]].concat();
    let err = push_logged(&push_args("--dir", db, "s", csv, &extra));
    check(&err, "--dir, interval 0");
    assert!(!err.contains("elapsed"), "no periodic line: {err}");

    let s = serve(Path::new(&dir.path().join("served")));
    let addr = format!("127.0.0.1:{}", s.port);
    ok(&["store", "--server", &addr, "create", "s"]);
    let extra = [&ID_SCORE[..], &["--batch", "500"]].concat();
    let err = push_logged(&push_args("--server", &addr, "s", csv, &extra));
    check(&err, "--server");
    for quiet in ["--quiet", "-q", "--no-progress"] {
        let extra = [&ID_SCORE[..], &[quiet]].concat();
        let err = push_logged(&push_args("--server", &addr, "s", csv, &extra));
        assert_eq!(err, "", "{quiet}");
    }
    let (code, line) = fails(&push_args(
        "--server",
        &addr,
        "s",
        csv,
        &[&ID_SCORE[..], &["--progress-interval", "-1"]].concat(),
    ));
    assert_eq!(code, 2, "{line}");
    s.stop();
}
