//! Stores, batch pushes, atomic swaps, rollback and hybrid replay through a real client.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use redis::{Commands, Connection, Value};

fn cmd(c: &mut Connection, args: &[&str]) -> redis::RedisResult<Value> {
    let mut q = redis::cmd(args[0]);
    for a in &args[1..] {
        q.arg(*a);
    }
    q.query(c)
}

/// A map reply (a flat array in RESP2) by key.
fn map(v: Value) -> HashMap<String, Value> {
    let items = match v {
        Value::Array(items) => items,
        Value::Map(pairs) => pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        other => panic!("not a map: {other:?}"),
    };
    items
        .chunks(2)
        .map(|p| match &p[0] {
            Value::BulkString(k) => (String::from_utf8_lossy(k).into_owned(), p[1].clone()),
            other => panic!("key {other:?}"),
        })
        .collect()
}

fn describe(c: &mut Connection, store: &str) -> HashMap<String, Value> {
    map(cmd(c, &["STORE", "DESCRIBE", store]).unwrap())
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        other => panic!("not an int: {other:?}"),
    }
}

/// Pushes `records` (store-relative keys) into `store` and returns the COMMIT reply.
fn push(c: &mut Connection, store: &str, records: &[(String, String)]) -> HashMap<String, Value> {
    let id = int(&cmd(c, &["PUSH", "BEGIN", store]).unwrap());
    for chunk in records.chunks(500) {
        let mut q = redis::cmd("PUSH");
        q.arg("ADD").arg(id);
        for (k, v) in chunk {
            q.arg(k).arg(v);
        }
        let n: i64 = q.query(c).unwrap();
        assert_eq!(n as usize, chunk.len());
    }
    map(cmd(c, &["PUSH", "COMMIT", &id.to_string()]).unwrap())
}

fn dataset(n: usize, tag: &str) -> Vec<(String, String)> {
    // Out of order on purpose: the push sorts.
    (0..n)
        .rev()
        .map(|i| (format!("user{i:05}"), format!("{tag}-{i}")))
        .collect()
}

#[test]
fn a_push_becomes_the_current_version_and_rollback_goes_back_once() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let _: () = c.set("other", "x").unwrap();
    let e = cmd(&mut c, &["STORE", "DESCRIBE", "features"]).unwrap_err();
    assert!(e.to_string().contains("no such store"), "{e}");
    cmd(&mut c, &["STORE", "CREATE", "features"]).unwrap();
    let d = describe(&mut c, "features");
    assert_eq!(int(&d["current-version"]), 1);
    assert_eq!(d["prefix"], Value::BulkString(b"features:".to_vec()));

    let r = push(&mut c, "features", &dataset(2000, "a"));
    assert_eq!(int(&r["version"]), 2);
    assert_eq!(int(&r["records"]), 2000);
    assert_eq!(c.get::<_, String>("features:user00042").unwrap(), "a-42");
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 2001);

    push(&mut c, "features", &dataset(1000, "b"));
    assert_eq!(c.get::<_, String>("features:user00042").unwrap(), "b-42");
    assert_eq!(
        c.get::<_, Option<String>>("features:user01500").unwrap(),
        None
    );
    let d = describe(&mut c, "features");
    assert_eq!(int(&d["current-version"]), 3);
    assert_eq!(int(&d["previous-version"]), 2);

    // Only back, and only to a version kept.
    let e = cmd(&mut c, &["STORE", "ROLLBACK", "features", "4"]).unwrap_err();
    assert!(e.to_string().contains("a rollback only goes back"), "{e}");
    let e = cmd(&mut c, &["STORE", "ROLLBACK", "features", "1"]).unwrap_err();
    assert!(
        e.to_string().contains("does not keep version 1")
            && e.to_string().contains("roll back to is 2"),
        "{e}"
    );
    let e = cmd(&mut c, &["STORE", "ROLLBACK", "features", "x"]).unwrap_err();
    assert!(e.to_string().contains("invalid version number"), "{e}");
    let e = cmd(&mut c, &["STORE", "ROLLBACK", "features", "2", "3"]).unwrap_err();
    assert!(e.to_string().contains("syntax error"), "{e}");

    let d = map(cmd(&mut c, &["STORE", "ROLLBACK", "features", "2"]).unwrap());
    assert_eq!(int(&d["current-version"]), 2);
    assert_eq!(
        d["previous-version"],
        Value::Nil,
        "the version left is retired"
    );
    assert_eq!(c.get::<_, String>("features:user01500").unwrap(), "a-1500");
    assert_eq!(c.get::<_, String>("features:user00042").unwrap(), "a-42");
    // A second rollback does not flip back to the version just left: it is refused.
    let e = cmd(&mut c, &["STORE", "ROLLBACK", "features"]).unwrap_err();
    assert!(
        e.to_string()
            .contains("keeps no version older than its current version 2"),
        "{e}"
    );
    // Naming the version it is at already succeeds (a retried rollback) and changes nothing.
    let d = map(cmd(&mut c, &["STORE", "ROLLBACK", "features", "2"]).unwrap());
    assert_eq!(int(&d["current-version"]), 2);
    assert_eq!(c.get::<_, String>("features:user00042").unwrap(), "a-42");

    // Everything survives a restart.
    srv.shutdown().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    assert_eq!(c.get::<_, String>("features:user00042").unwrap(), "a-42");
    assert_eq!(int(&describe(&mut c, "features")["current-version"]), 2);
    assert_eq!(c.get::<_, String>("other").unwrap(), "x");
    let mut keys: Vec<String> = c.keys("features:user0000*").unwrap();
    keys.sort();
    assert_eq!(keys.len(), 10);
    assert_eq!(keys[0], "features:user00000");
    srv.shutdown().unwrap();
}

#[test]
fn streamed_writes_land_on_every_live_version_and_are_replayed_onto_a_push() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    cmd(&mut c, &["STORE", "CREATE", "f"]).unwrap();
    push(&mut c, "f", &dataset(100, "a"));

    let id = int(&cmd(&mut c, &["PUSH", "BEGIN", "f"]).unwrap());
    let mut q = redis::cmd("PUSH");
    q.arg("ADD").arg(id);
    for (k, v) in dataset(100, "b") {
        q.arg(k).arg(v);
    }
    let _: i64 = q.query(&mut c).unwrap();
    // Streamed while the push runs: must survive the swap, in order.
    let _: () = c.set("f:user00001", "streamed-1").unwrap();
    let _: () = c.set("f:user00001", "streamed-2").unwrap();
    let _: () = c.set("f:new", "n").unwrap();
    let _: i64 = c.del("f:user00002").unwrap();
    assert_eq!(c.get::<_, String>("f:user00001").unwrap(), "streamed-2");
    cmd(&mut c, &["PUSH", "COMMIT", &id.to_string()]).unwrap();

    assert_eq!(c.get::<_, String>("f:user00001").unwrap(), "streamed-2");
    assert_eq!(c.get::<_, String>("f:new").unwrap(), "n");
    assert_eq!(c.get::<_, Option<String>>("f:user00002").unwrap(), None);
    assert_eq!(c.get::<_, String>("f:user00003").unwrap(), "b-3");

    // After the swap, writes go to the new current and the previous version: a rollback
    // keeps them.
    let _: () = c.set("f:user00004", "after").unwrap();
    cmd(&mut c, &["STORE", "ROLLBACK", "f"]).unwrap();
    assert_eq!(c.get::<_, String>("f:user00004").unwrap(), "after");
    assert_eq!(c.get::<_, String>("f:user00003").unwrap(), "a-3");
    srv.shutdown().unwrap();
}

#[test]
fn readers_never_see_a_mix_of_versions() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    cmd(&mut c, &["STORE", "CREATE", "s"]).unwrap();
    push(&mut c, "s", &dataset(300, "v0"));
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for _ in 0..2 {
        let stop = Arc::clone(&stop);
        let addr = srv.addr;
        readers.push(thread::spawn(move || {
            let mut c = common::client(addr);
            let keys: Vec<String> = (0..300)
                .step_by(7)
                .map(|i| format!("s:user{i:05}"))
                .collect();
            let mut last_gen = 0u32;
            let mut reads = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let vals: Vec<String> = c.mget(&keys).unwrap();
                let gens: Vec<u32> = vals
                    .iter()
                    .map(|v| v.split('-').next().unwrap()[1..].parse().unwrap())
                    .collect();
                assert!(
                    gens.iter().all(|g| *g == gens[0]),
                    "mixed versions: {vals:?}"
                );
                assert!(gens[0] >= last_gen, "went back in time");
                last_gen = gens[0];
                reads += 1;
            }
            reads
        }));
    }
    for g in 1..=4 {
        push(&mut c, "s", &dataset(300, &format!("v{g}")));
        thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    srv.shutdown().unwrap();
}

#[test]
fn bad_commands_and_duplicate_keys_get_clear_errors_and_leave_the_version_serving() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let e = cmd(&mut c, &["STORE", "CREATE", "bad name"]).unwrap_err();
    assert!(e.to_string().contains("invalid store name"), "{e}");
    cmd(&mut c, &["STORE", "CREATE", "a", "PREFIX", "ab"]).unwrap();
    let e = cmd(&mut c, &["STORE", "CREATE", "b", "PREFIX", "abc"]).unwrap_err();
    assert!(e.to_string().contains("overlaps"), "{e}");
    let e = cmd(&mut c, &["STORE", "CREATE", "a"]).unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
    let _: () = c.set("zz:1", "x").unwrap();
    let e = cmd(&mut c, &["STORE", "CREATE", "z", "PREFIX", "zz"]).unwrap_err();
    assert!(e.to_string().contains("default store"), "{e}");
    let e = cmd(&mut c, &["STORE", "ROLLBACK", "a"]).unwrap_err();
    assert!(e.to_string().contains("keeps no version older"), "{e}");
    let e = cmd(&mut c, &["PUSH", "BEGIN", "nope"]).unwrap_err();
    assert!(e.to_string().contains("no such store"), "{e}");
    let e = cmd(&mut c, &["PUSH", "COMMIT", "999"]).unwrap_err();
    assert!(e.to_string().contains("no push"), "{e}");

    push(&mut c, "a", &[("1".into(), "one".into())]);
    let id = int(&cmd(&mut c, &["PUSH", "BEGIN", "a"]).unwrap());
    let e = cmd(&mut c, &["PUSH", "BEGIN", "a"]).unwrap_err();
    assert!(e.to_string().contains("already has a push"), "{e}");
    cmd(
        &mut c,
        &["PUSH", "ADD", &id.to_string(), "k", "v1", "k", "v2"],
    )
    .unwrap();
    let e = cmd(&mut c, &["PUSH", "COMMIT", &id.to_string()]).unwrap_err();
    assert!(e.to_string().to_lowercase().contains("duplicate"), "{e}");
    assert_eq!(c.get::<_, String>("ab1").unwrap(), "one");
    assert_eq!(c.get::<_, Option<String>>("abk").unwrap(), None);

    // LAST-WINS keeps the later record.
    let id = int(&cmd(&mut c, &["PUSH", "BEGIN", "a", "DUPLICATES", "LAST-WINS"]).unwrap());
    cmd(
        &mut c,
        &["PUSH", "ADD", &id.to_string(), "k", "v1", "k", "v2"],
    )
    .unwrap();
    cmd(&mut c, &["PUSH", "COMMIT", &id.to_string()]).unwrap();
    assert_eq!(c.get::<_, String>("abk").unwrap(), "v2");
    assert_eq!(c.get::<_, Option<String>>("ab1").unwrap(), None);

    // What a push must load: bad limits are refused at BEGIN, an empty push at COMMIT.
    for bad in [
        &["MAX-SHRINK", "101"][..],
        &["MIN-RECORDS", "-1"],
        &["MIN-RECORDS"],
        &["MAX-SHRINK", "x"],
    ] {
        let e = cmd(&mut c, &[&["PUSH", "BEGIN", "a"][..], bad].concat()).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("MAX-SHRINK must be")
                || text.contains("MIN-RECORDS must be")
                || text.contains("syntax error"),
            "{bad:?}: {text}"
        );
    }
    let id = int(&cmd(&mut c, &["PUSH", "BEGIN", "a"]).unwrap());
    let e = cmd(&mut c, &["PUSH", "COMMIT", &id.to_string()]).unwrap_err();
    assert!(
        e.to_string().contains("push refused: it loaded 0 records"),
        "{e}"
    );
    assert_eq!(c.get::<_, String>("abk").unwrap(), "v2");
    let id = int(&cmd(
        &mut c,
        &[
            "PUSH",
            "BEGIN",
            "a",
            "MIN-RECORDS",
            "0",
            "MAX-SHRINK",
            "100",
        ],
    )
    .unwrap());
    cmd(&mut c, &["PUSH", "COMMIT", &id.to_string()]).unwrap();
    assert_eq!(
        c.get::<_, Option<String>>("abk").unwrap(),
        None,
        "an empty version, as asked"
    );
    srv.shutdown().unwrap();
}

#[test]
fn an_aborted_or_abandoned_push_changes_nothing_and_its_files_go() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    cmd(&mut c, &["STORE", "CREATE", "s"]).unwrap();
    push(&mut c, "s", &dataset(50, "a"));
    let id = int(&cmd(&mut c, &["PUSH", "BEGIN", "s"]).unwrap());
    cmd(&mut c, &["PUSH", "ADD", &id.to_string(), "user00001", "b"]).unwrap();
    cmd(&mut c, &["PUSH", "ABORT", &id.to_string()]).unwrap();
    assert_eq!(c.get::<_, String>("s:user00001").unwrap(), "a-1");
    let d = describe(&mut c, "s");
    assert_eq!(d["pushing-version"], Value::Nil);

    // A connection that closes mid-push aborts it.
    {
        let mut c2 = common::client(srv.addr);
        let id = int(&cmd(&mut c2, &["PUSH", "BEGIN", "s"]).unwrap());
        cmd(&mut c2, &["PUSH", "ADD", &id.to_string(), "user00001", "b"]).unwrap();
    }
    for _ in 0..200 {
        if describe(&mut c, "s")["pushing-version"] == Value::Nil {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(describe(&mut c, "s")["pushing-version"], Value::Nil);
    let _ = cmd(&mut c, &["PUSH", "BEGIN", "s"]).unwrap();
    // Stopped with a push open: the restart retires it. Also a regression test: `c` is still
    // connected with that push, so shutdown hands its abort to the ingestion pool, and the
    // restart found the directory locked until shutdown waited for that job.
    srv.shutdown().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    assert_eq!(describe(&mut c, "s")["pushing-version"], Value::Nil);
    assert_eq!(c.get::<_, String>("s:user00001").unwrap(), "a-1");
    srv.shutdown().unwrap();
}

/// A push's id is its version number, and the push is its connection's: another connection
/// is refused with the reason and the owner carries on undisturbed.
#[test]
fn a_push_is_named_by_its_version_and_belongs_to_its_connection() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut owner = common::client(srv.addr);
    let mut other = common::client(srv.addr);
    cmd(&mut owner, &["STORE", "CREATE", "s"]).unwrap();
    push(&mut owner, "s", &dataset(20, "a"));
    let id = int(&cmd(&mut owner, &["PUSH", "BEGIN", "s"]).unwrap());
    let pushing = int(&describe(&mut other, "s")["pushing-version"]);
    assert_eq!(
        id, pushing,
        "PUSH BEGIN's id is STORE DESCRIBE's pushing-version"
    );
    let listed = cmd(&mut other, &["PUSH", "LIST"]).unwrap();
    assert_eq!(
        listed,
        Value::Array(vec![Value::Int(id), Value::BulkString(b"s".to_vec())])
    );
    let owner_id = int(&redis::cmd("CLIENT").arg("ID").query(&mut owner).unwrap());
    let id_s = id.to_string();
    for args in [
        &["PUSH", "ADD", &id_s, "user00001", "theirs"][..],
        &["PUSH", "COMMIT", &id_s],
        &["PUSH", "ABORT", &id_s],
    ] {
        let e = cmd(&mut other, args).unwrap_err().to_string();
        assert!(
            e.contains("belongs to another connection")
                && e.contains(&format!("client id {owner_id}")),
            "{args:?}: {e}"
        );
    }
    cmd(&mut owner, &["PUSH", "ADD", &id_s, "user00001", "b"]).unwrap();
    // The owner aborts by the number STORE DESCRIBE shows.
    cmd(&mut owner, &["PUSH", "ABORT", &pushing.to_string()]).unwrap();
    assert_eq!(describe(&mut other, "s")["pushing-version"], Value::Nil);
    assert_eq!(owner.get::<_, String>("s:user00001").unwrap(), "a-1");
    let r = push(&mut owner, "s", &dataset(20, "c"));
    assert!(int(&r["version"]) > id, "a version number is never reused");
    srv.shutdown().unwrap();
}

/// What `rialto push --server` follows from a second connection while it waits for the
/// commit: STORE DESCRIBE shows the push's phase and figures, and the COMMIT reply gives each
/// step's time.
#[test]
fn describe_shows_a_push_in_progress_and_commit_reports_its_steps() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut owner = common::client(srv.addr);
    let mut other = common::client(srv.addr);
    cmd(&mut owner, &["STORE", "CREATE", "s"]).unwrap();
    let d = describe(&mut other, "s");
    assert!(!d.contains_key("pushing-phase"), "no push: {d:?}");
    let id = int(&cmd(&mut owner, &["PUSH", "BEGIN", "s"]).unwrap()).to_string();
    cmd(&mut owner, &["PUSH", "ADD", &id, "k1", "v1", "k22", "v22"]).unwrap();
    let d = describe(&mut other, "s");
    assert_eq!(d["pushing-phase"], Value::BulkString(b"adding".to_vec()));
    assert_eq!(int(&d["pushing-records"]), 2);
    assert_eq!(int(&d["pushing-bytes"]), 10);
    assert_eq!(int(&d["pushing-written-records"]), 0);
    assert!(int(&d["pushing-elapsed-ms"]) >= 0);
    let r = map(cmd(&mut owner, &["PUSH", "COMMIT", &id]).unwrap());
    for step in ["sort", "write", "link", "replay", "cleanup"] {
        assert!(int(&r[&format!("{step}-ms")]) >= 0, "{step}: {r:?}");
    }
    let d = describe(&mut other, "s");
    assert_eq!(d["pushing-version"], Value::Nil);
    assert!(!d.contains_key("pushing-phase"), "{d:?}");
    srv.shutdown().unwrap();
}

/// What `rialto push --server` says when interrupted during its commit: the server finishes
/// the commit without the client. A connection that sends COMMIT and goes away still gets
/// the new version swapped in.
#[test]
fn a_commit_finishes_when_its_client_goes_away() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    cmd(&mut c, &["STORE", "CREATE", "s"]).unwrap();
    let mut raw = std::net::TcpStream::connect(srv.addr).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reply = [0u8; 4];
    raw.write_all(b"PUSH BEGIN s\r\n").unwrap();
    raw.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b":2\r\n");
    raw.write_all(b"PUSH ADD 2 k1 v1 k2 v2\r\n").unwrap();
    raw.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b":2\r\n");
    raw.write_all(b"PUSH COMMIT 2\r\n").unwrap();
    drop(raw);
    for _ in 0..500 {
        let d = describe(&mut c, "s");
        if d["pushing-version"] == Value::Nil {
            assert_eq!(int(&d["current-version"]), 2, "{d:?}");
            assert_eq!(c.get::<_, String>("s:k2").unwrap(), "v2");
            return srv.shutdown().unwrap();
        }
        thread::sleep(Duration::from_millis(10));
    }
    panic!("the push never ended: {:?}", describe(&mut c, "s"));
}

/// A connection that begins a push moves to the bulk thread right after PUSH BEGIN is answered,
/// taking along what it already sent: a whole push pipelined in one write, reads included,
/// must answer exactly as on one thread. Another client is served meanwhile, and the moved
/// connection's push is aborted when it closes.
#[test]
fn a_pushing_connection_moves_to_the_bulk_thread_with_its_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut other = common::client(srv.addr);
    let mut c = common::client(srv.addr);
    cmd(&mut c, &["STORE", "CREATE", "s"]).unwrap();
    // A new store is at version 1: its first push loads version 2, which is the push's id.
    let mut p = redis::pipe();
    p.cmd("PUSH").arg("BEGIN").arg("s");
    p.cmd("PUSH")
        .arg("ADD")
        .arg(2)
        .arg("a")
        .arg("1")
        .arg("b")
        .arg("2");
    p.cmd("GET").arg("s:a");
    p.cmd("PUSH").arg("ADD").arg(2).arg("c").arg("3");
    p.cmd("PUSH").arg("COMMIT").arg(2);
    p.cmd("GET").arg("s:a");
    p.cmd("MGET").arg("s:b").arg("s:c");
    let out: Vec<Value> = p.query(&mut c).unwrap();
    assert_eq!(out[0], Value::Int(2));
    assert_eq!(out[1], Value::Int(2));
    assert_eq!(out[2], Value::Nil);
    assert_eq!(out[3], Value::Int(1));
    assert_eq!(
        &out[5..],
        &[
            Value::BulkString(b"1".to_vec()),
            Value::Array(vec![
                Value::BulkString(b"2".to_vec()),
                Value::BulkString(b"3".to_vec())
            ]),
        ]
    );
    assert_eq!(other.get::<_, String>("s:c").unwrap(), "3");
    // It keeps serving after the push, and a second push from it (already moved) works.
    let d = push(&mut c, "s", &dataset(10, "x"));
    assert_eq!(int(&d["records"]), 10);
    assert_eq!(other.get::<_, String>("s:user00001").unwrap(), "x-1");
    // Closing it mid-push aborts that push, from the bulk thread too.
    let id = int(&cmd(&mut c, &["PUSH", "BEGIN", "s"]).unwrap());
    assert!(id > 0);
    drop(c);
    for _ in 0..200 {
        if describe(&mut other, "s")["pushing-version"] == Value::Nil {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(describe(&mut other, "s")["pushing-version"], Value::Nil);
    srv.shutdown().unwrap();
}

#[test]
fn deleting_a_store_returns_its_keys_to_the_default_store_and_removes_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start_with(dir.path(), |c| {
        c.store_maintenance_interval = Duration::from_millis(20)
    });
    let mut c = common::client(srv.addr);
    cmd(&mut c, &["STORE", "CREATE", "s"]).unwrap();
    push(&mut c, "s", &dataset(500, "a"));
    push(&mut c, "s", &dataset(500, "b"));
    push(&mut c, "s", &dataset(500, "c"));
    cmd(&mut c, &["STORE", "DELETE", "s"]).unwrap();
    assert_eq!(c.get::<_, Option<String>>("s:user00001").unwrap(), None);
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 0);
    let _: () = c.set("s:user00001", "default").unwrap();
    assert_eq!(c.get::<_, String>("s:user00001").unwrap(), "default");
    // The data goes in the background: wait for the table files to be dropped.
    let tables = |d: &std::path::Path| {
        std::fs::read_dir(d)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".sst"))
            })
            .count()
    };
    for _ in 0..300 {
        if tables(dir.path()) == 0 {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(tables(dir.path()), 0);
    srv.shutdown().unwrap();
}

#[test]
fn a_rewind_window_replays_writes_made_before_the_push_began() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    cmd(&mut c, &["STORE", "CREATE", "r", "REWIND", "3600"]).unwrap();
    cmd(&mut c, &["STORE", "CREATE", "n"]).unwrap();
    // Streamed before the push begins: within r's window, outside n's (no window).
    let _: () = c.set("r:user00001", "streamed").unwrap();
    let _: () = c.set("n:user00001", "streamed").unwrap();
    push(&mut c, "r", &dataset(10, "batch"));
    push(&mut c, "n", &dataset(10, "batch"));
    assert_eq!(c.get::<_, String>("r:user00001").unwrap(), "streamed");
    assert_eq!(c.get::<_, String>("n:user00001").unwrap(), "batch-1");
    srv.shutdown().unwrap();
}

#[test]
fn a_push_larger_than_its_memory_limit_spills_and_loads_everything() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start_with(dir.path(), |c| c.push_memory_limit = 1 << 20);
    let mut c = common::client(srv.addr);
    cmd(&mut c, &["STORE", "CREATE", "big"]).unwrap();
    let records: Vec<(String, String)> = (0..30_000u32)
        .map(|i| {
            let k = format!("k{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000_007);
            (k, format!("{i:0>100}"))
        })
        .collect();
    let r = push(&mut c, "big", &records);
    assert!(int(&r["runs-spilled"]) >= 2, "spilled: {r:?}");
    assert_eq!(int(&r["records"]), 30_000);
    for (k, v) in records.iter().step_by(997) {
        assert_eq!(&c.get::<_, String>(format!("big:{k}")).unwrap(), v);
    }
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 30_000);
    // Nothing is left in the spill directory.
    let tmp = dir.path().join("push-tmp");
    let leftovers: usize = std::fs::read_dir(&tmp)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|d| std::fs::read_dir(d.path()).map_or(0, |f| f.count()))
                .sum()
        })
        .unwrap_or(0);
    assert_eq!(leftovers, 0);
    srv.shutdown().unwrap();
}

/// With a page-cache budget smaller than the version, the tables beyond it are written out of
/// the cache; every record still reads back, also after a restart.
#[test]
fn a_push_past_its_page_cache_budget_loads_everything() {
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<(String, String)> = (0..30_000u32)
        .map(|i| (format!("k{i:08}"), format!("{i:0>100}")))
        .collect();
    for budget in [0, 1 << 20] {
        let srv = common::start_with(dir.path(), |c| {
            c.push_page_cache = rialto_keyspace::PushPageCache::Bytes(budget)
        });
        let mut c = common::client(srv.addr);
        let name = format!("pc{budget}");
        cmd(&mut c, &["STORE", "CREATE", &name]).unwrap();
        let r = push(&mut c, &name, &records);
        assert_eq!(int(&r["records"]), 30_000);
        for (k, v) in records.iter().step_by(499) {
            assert_eq!(&c.get::<_, String>(format!("{name}:{k}")).unwrap(), v);
        }
        srv.shutdown().unwrap();
    }
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 60_000);
    for (k, v) in records.iter().step_by(991) {
        assert_eq!(&c.get::<_, String>(format!("pc0:{k}")).unwrap(), v);
        assert_eq!(&c.get::<_, String>(format!("pc1048576:{k}")).unwrap(), v);
    }
    srv.shutdown().unwrap();
}

fn info_field(c: &mut Connection, field: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("rialto_engine").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {field} in INFO"))
        .trim()
        .parse()
        .unwrap()
}

/// Rows of the version a swap retires leave the row cache, so the warm-up fills it with the
/// new version: before, the cache stayed full of rows no read asked for, and every first read
/// of the new version missed.
#[test]
fn after_a_swap_the_row_cache_warms_the_new_version_not_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start_with(dir.path(), |c| {
        c.row_cache_size = rialto_server::CacheSize::Bytes(2 << 20)
    });
    let mut c = common::client(srv.addr);
    cmd(&mut c, &["STORE", "CREATE", "features"]).unwrap();
    let n = 3000;
    let value = |tag: &str, i: usize| format!("{tag}-{i:0>200}");
    let records = |tag: &str| -> Vec<(String, String)> {
        (0..n)
            .map(|i| (format!("user{i:05}"), value(tag, i)))
            .collect()
    };
    push(&mut c, "features", &records("a"));
    // Reads fill the cache with version 2's rows (about 1 MiB of the 2 MiB).
    let read_all = |c: &mut Connection, tag: &str| -> u64 {
        let hits = info_field(c, "row_cache_hits");
        for i in 0..n {
            let v: String = c.get(format!("features:user{i:05}")).unwrap();
            assert_eq!(v, value(tag, i));
        }
        info_field(c, "row_cache_hits") - hits
    };
    read_all(&mut c, "a");
    // Nothing changes the data from here to the push: no pass runs in between.
    let warmed = info_field(&mut c, "row_cache_warmed_rows");
    push(&mut c, "features", &records("b"));
    // The pass after the swap (writes have paused) warms at most the free room: most rows.
    let warmed_by = |c: &mut Connection, at_least: u64| {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while info_field(c, "row_cache_warmed_rows") < at_least {
            assert!(
                std::time::Instant::now() < deadline,
                "no warm-up of the new version"
            );
            thread::sleep(Duration::from_millis(20));
        }
    };
    warmed_by(&mut c, warmed + (n as u64) / 2);
    let first_read_hits = read_all(&mut c, "b");
    assert!(
        first_read_hits >= (n as u64) / 2,
        "only {first_read_hits} of {n} first reads of the new version hit the row cache"
    );
    // A rollback swaps back, and the cache follows.
    let warmed = info_field(&mut c, "row_cache_warmed_rows");
    cmd(&mut c, &["STORE", "ROLLBACK", "features"]).unwrap();
    warmed_by(&mut c, warmed + (n as u64) / 2);
    let first_read_hits = read_all(&mut c, "a");
    assert!(
        first_read_hits >= (n as u64) / 2,
        "only {first_read_hits} of {n} first reads after the rollback hit the row cache"
    );
    srv.shutdown().unwrap();
}

#[test]
fn info_shows_stores_their_versions_and_push_totals_and_dbsize_counts_the_served_version() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    cmd(&mut c, &["STORE", "CREATE", "f,x", "PREFIX", "f:"]).unwrap_err();
    cmd(&mut c, &["STORE", "CREATE", "feat", "PREFIX", "f=\x01"]).unwrap();
    let _: () = c.set("plain", "x").unwrap();
    push(&mut c, "feat", &dataset(300, "a"));
    push(&mut c, "feat", &dataset(200, "b"));
    let info: String = redis::cmd("INFO")
        .arg("rialto_stores")
        .query(&mut c)
        .unwrap();
    let lines: Vec<&str> = info.lines().collect();
    assert_eq!(lines[0], "# Rialto_stores");
    assert!(lines.contains(&"stores:1"), "{info}");
    assert!(lines.contains(&"pushes_begun:2"), "{info}");
    assert!(lines.contains(&"pushes_committed:2"), "{info}");
    assert!(lines.contains(&"pushes_in_progress:0"), "{info}");
    // The prefix's separator and control bytes are escaped.
    assert!(
        lines.contains(&"store_feat:id=1,prefix=f\\x3d\\x01,current_version=3,current_records=200,current_bytes=3290,previous_version=2,kept_versions=1,keep=2,compression=none,pushing_version=0"),
        "{info}"
    );
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 201);
    cmd(&mut c, &["STORE", "ROLLBACK", "feat"]).unwrap();
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 301);
    // Plain INFO includes the section.
    let all: String = redis::cmd("INFO").query(&mut c).unwrap();
    assert!(all.contains("# Rialto_stores"));
}

/// A store's compression: the server's `compression` by default, named at creation, changed
/// by STORE CONFIG for later pushes, shown by STORE DESCRIBE and kept across a restart.
#[test]
fn a_store_compression_is_chosen_at_creation_changed_by_store_config_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let codec = |c: &mut Connection, store: &str| match &describe(c, store)["compression"] {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("compression {other:?}"),
    };
    let get_config = |c: &mut Connection| -> String {
        let v: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg("compression")
            .query(c)
            .unwrap();
        v[1].clone()
    };
    assert_eq!(get_config(&mut c), "none");
    cmd(&mut c, &["STORE", "CREATE", "plain"]).unwrap();
    assert_eq!(codec(&mut c, "plain"), "none");
    cmd(&mut c, &["CONFIG", "SET", "compression", "zstd"]).unwrap();
    assert_eq!(get_config(&mut c), "zstd");
    cmd(&mut c, &["STORE", "CREATE", "packed"]).unwrap();
    assert_eq!(
        codec(&mut c, "packed"),
        "zstd",
        "the server's codec by default"
    );
    let d = map(cmd(&mut c, &["STORE", "CREATE", "quick", "COMPRESSION", "LZ4"]).unwrap());
    assert_eq!(d["compression"], Value::BulkString(b"lz4".to_vec()));
    assert_eq!(codec(&mut c, "plain"), "none", "fixed at creation");

    let e = cmd(&mut c, &["STORE", "CREATE", "x", "COMPRESSION", "snappy"]).unwrap_err();
    assert!(
        e.to_string()
            .contains("COMPRESSION must be none, lz4 or zstd"),
        "{e}"
    );
    let e = cmd(&mut c, &["CONFIG", "SET", "compression", "snappy"]).unwrap_err();
    assert!(e.to_string().contains("not none, lz4 or zstd"), "{e}");
    let e = cmd(&mut c, &["STORE", "CONFIG", "quick"]).unwrap_err();
    assert!(e.to_string().contains("wrong number of arguments"), "{e}");
    let e = cmd(&mut c, &["STORE", "CONFIG", "quick", "COMPRESSION"]).unwrap_err();
    assert!(e.to_string().contains("wrong number of arguments"), "{e}");
    let e = cmd(&mut c, &["STORE", "CONFIG", "quick", "COLOR", "red"]).unwrap_err();
    assert!(e.to_string().contains("syntax error"), "{e}");
    let e = cmd(&mut c, &["STORE", "CONFIG", "nope", "COMPRESSION", "lz4"]).unwrap_err();
    assert!(e.to_string().contains("no such store"), "{e}");
    let d = map(cmd(&mut c, &["STORE", "CONFIG", "quick", "COMPRESSION", "none"]).unwrap());
    assert_eq!(d["compression"], Value::BulkString(b"none".to_vec()));

    // The same records, pushed with each codec, read back alike; zstd's tables are smaller.
    let records: Vec<(String, String)> = (0..5000)
        .map(|i| {
            (
                format!("u{i:06}"),
                format!(
                    r#"{{"id":{i},"country":"FR","segments":["sports","news"],"score":0.{:03}}}"#,
                    i % 997
                ),
            )
        })
        .collect();
    let plain = int(&push(&mut c, "plain", &records)["file-bytes"]);
    let packed = int(&push(&mut c, "packed", &records)["file-bytes"]);
    assert!(packed < plain / 2, "none {plain}, zstd {packed}");
    for (k, v) in records.iter().step_by(97) {
        assert_eq!(&c.get::<_, String>(format!("plain:{k}")).unwrap(), v);
        assert_eq!(&c.get::<_, String>(format!("packed:{k}")).unwrap(), v);
    }

    srv.shutdown().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    // CONFIG SET lasts until the server stops; each store keeps its own codec.
    assert_eq!(get_config(&mut c), "none");
    assert_eq!(codec(&mut c, "packed"), "zstd");
    assert_eq!(codec(&mut c, "quick"), "none");
    for (k, v) in records.iter().step_by(101) {
        assert_eq!(&c.get::<_, String>(format!("packed:{k}")).unwrap(), v);
    }
    srv.shutdown().unwrap();
}

/// KEEP: a store keeps that many versions, STORE DESCRIBE lists the older ones, a rollback
/// goes to any of them and retires the newer ones, and KEEP is bounded by `store-max-keep`.
#[test]
fn a_store_keeps_its_keep_versions_and_rolls_back_to_the_one_named() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let kept = |d: &HashMap<String, Value>| -> Vec<i64> {
        match &d["kept-versions"] {
            Value::Array(items) => items.iter().map(int).collect(),
            other => panic!("kept-versions {other:?}"),
        }
    };
    let d = map(cmd(&mut c, &["STORE", "CREATE", "f", "KEEP", "3"]).unwrap());
    assert_eq!((int(&d["keep"]), kept(&d)), (3, vec![]));
    for tag in ["a", "b", "c", "d"] {
        push(&mut c, "f", &dataset(100, tag));
    }
    let _: () = c.set("f:streamed", "x").unwrap();
    let d = describe(&mut c, "f");
    assert_eq!(int(&d["current-version"]), 5);
    assert_eq!(int(&d["previous-version"]), 4);
    assert_eq!(kept(&d), [4, 3]);

    let e = cmd(&mut c, &["STORE", "ROLLBACK", "f", "2"]).unwrap_err();
    assert!(
        e.to_string().contains("does not keep version 2")
            && e.to_string().contains("roll back to are 4, 3"),
        "{e}"
    );
    let d = map(cmd(&mut c, &["STORE", "ROLLBACK", "f", "3"]).unwrap());
    assert_eq!((int(&d["current-version"]), kept(&d)), (3, vec![]));
    assert_eq!(c.get::<_, String>("f:user00042").unwrap(), "b-42");
    assert_eq!(c.get::<_, String>("f:streamed").unwrap(), "x");

    // Bounds: 1 to store-max-keep (default 10), which CONFIG SET changes.
    for bad in ["0", "11", "-1", "x"] {
        let e = cmd(&mut c, &["STORE", "CONFIG", "f", "KEEP", bad]).unwrap_err();
        assert!(
            e.to_string().contains("KEEP must be 1 to 10")
                || e.to_string().contains("not an integer"),
            "{bad}: {e}"
        );
    }
    cmd(&mut c, &["CONFIG", "SET", "store-max-keep", "12"]).unwrap();
    let d = map(cmd(&mut c, &["STORE", "CONFIG", "f", "KEEP", "12"]).unwrap());
    assert_eq!(int(&d["keep"]), 12);
    let d = map(cmd(
        &mut c,
        &["STORE", "CONFIG", "f", "KEEP", "1", "COMPRESSION", "lz4"],
    )
    .unwrap());
    assert_eq!(int(&d["keep"]), 1);
    assert_eq!(d["compression"], Value::BulkString(b"lz4".to_vec()));

    srv.shutdown().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let d = describe(&mut c, "f");
    assert_eq!((int(&d["keep"]), int(&d["current-version"])), (1, 3));
    assert_eq!(c.get::<_, String>("f:user00042").unwrap(), "b-42");
    srv.shutdown().unwrap();
}

/// A hash value as `PUSH ADD` takes it under `LAYOUT HASH`: the packed payload of `fields`.
fn hash_value(fields: &[(String, String)]) -> Vec<u8> {
    let pairs: Vec<(&[u8], &[u8])> = fields
        .iter()
        .map(|(f, v)| (f.as_bytes(), v.as_bytes()))
        .collect();
    let mut out = Vec::new();
    rialto_keyspace::encode_hash_payload(&pairs, &mut out);
    out
}

/// `n` entities of `width` features each, tagged.
fn hash_rows(n: usize, width: usize, tag: &str) -> Vec<(String, Vec<(String, String)>)> {
    (0..n)
        .map(|i| {
            let fields = (0..width)
                .map(|j| (format!("f{j:02}"), format!("{tag}-{i}-{j}")))
                .collect();
            (format!("e{i:05}"), fields)
        })
        .collect()
}

/// Pushes hash rows with `LAYOUT HASH`; returns the COMMIT reply.
fn push_hashes(
    c: &mut Connection,
    store: &str,
    rows: &[(String, Vec<(String, String)>)],
) -> HashMap<String, Value> {
    let id = int(&cmd(c, &["PUSH", "BEGIN", store, "LAYOUT", "HASH"]).unwrap());
    for chunk in rows.chunks(200) {
        let mut q = redis::cmd("PUSH");
        q.arg("ADD").arg(id);
        for (k, fields) in chunk {
            q.arg(k).arg(hash_value(fields));
        }
        let _: i64 = q.query(c).unwrap();
    }
    map(cmd(c, &["PUSH", "COMMIT", &id.to_string()]).unwrap())
}

/// A push with `LAYOUT HASH` loads records every hash command reads as it reads HSET's:
/// TYPE, OBJECT ENCODING, HGET, HMGET, HGETALL, HLEN, a later HSET; streamed HSETs during
/// the push are replayed onto it as whole records, and a rollback goes back to the strings.
#[test]
fn a_hash_push_loads_hashes_every_hash_command_reads() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    cmd(&mut c, &["STORE", "CREATE", "h"]).unwrap();
    push(&mut c, "h", &dataset(10, "s"));
    // Wider than hash-max-listpack-entries: still one packed record under a store.
    let rows = hash_rows(300, 130, "a");
    let id = int(&cmd(&mut c, &["PUSH", "BEGIN", "h", "LAYOUT", "HASH"]).unwrap());
    let mut q = redis::cmd("PUSH");
    q.arg("ADD").arg(id);
    for (k, fields) in &rows {
        q.arg(k).arg(hash_value(fields));
    }
    let _: i64 = q.query(&mut c).unwrap();
    // Streamed during the push onto a key the push loads and one it does not.
    let _: i64 = c.hset("h:e00007", "f00", "streamed").unwrap();
    let _: i64 = c.hset("h:new", "x", "1").unwrap();
    let r = map(cmd(&mut c, &["PUSH", "COMMIT", &id.to_string()]).unwrap());
    assert_eq!(int(&r["records"]), 300);

    let t: String = redis::cmd("TYPE").arg("h:e00001").query(&mut c).unwrap();
    assert_eq!(t, "hash");
    let enc: String = redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg("h:e00001")
        .query(&mut c)
        .unwrap();
    assert_eq!(enc, "listpack");
    assert_eq!(c.hlen::<_, i64>("h:e00001").unwrap(), 130);
    assert_eq!(
        c.hget::<_, _, String>("h:e00001", "f129").unwrap(),
        "a-1-129"
    );
    let got: Vec<Option<String>> = c.hget("h:e00299", &["f00", "nope", "f42"]).unwrap();
    assert_eq!(got, [Some("a-299-0".into()), None, Some("a-299-42".into())]);
    let all: Vec<(String, String)> = c.hgetall("h:e00002").unwrap();
    assert_eq!(all, rows[2].1, "fields in the order pushed");
    // A streamed write replaces the pushed record whole (the record it left on the version
    // that served), as a SET replaces a pushed string.
    let all: Vec<(String, String)> = c.hgetall("h:e00007").unwrap();
    assert_eq!(all, [("f00".to_string(), "streamed".to_string())]);
    assert_eq!(c.hget::<_, _, String>("h:new", "x").unwrap(), "1");
    // A later HSET updates a pushed hash in place.
    let _: i64 = c.hset("h:e00003", "f05", "updated").unwrap();
    let got: Vec<String> = c.hget("h:e00003", &["f05", "f06"]).unwrap();
    assert_eq!(got, ["updated", "a-3-6"]);
    let e = c.get::<_, String>("h:e00003").unwrap_err();
    assert!(e.to_string().contains("WRONGTYPE"), "{e}");

    // Back to the strings. The HSET streamed after the swap wrote the record it made on the
    // current version to the kept one too, as every streamed write to a store does.
    cmd(&mut c, &["STORE", "ROLLBACK", "h"]).unwrap();
    assert_eq!(c.get::<_, String>("h:user00003").unwrap(), "s-3");
    assert!(!c.exists::<_, bool>("h:e00004").unwrap());
    let got: Vec<String> = c.hget("h:e00003", &["f05", "f06"]).unwrap();
    assert_eq!(got, ["updated", "a-3-6"]);
    // Everything survives a restart.
    srv.shutdown().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    assert_eq!(c.get::<_, String>("h:user00003").unwrap(), "s-3");
    push_hashes(&mut c, "h", &hash_rows(20, 3, "b"));
    assert_eq!(c.hget::<_, _, String>("h:e00019", "f02").unwrap(), "b-19-2");
    srv.shutdown().unwrap();
}

/// Under `LAYOUT HASH` a value that is not a packed hash payload is refused with one error
/// line and aborts the push, the current version serving; a bad LAYOUT is a syntax error; a
/// PUSH BEGIN without LAYOUT pushes strings as before.
#[test]
fn a_hash_push_refuses_values_that_are_no_hash() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    cmd(&mut c, &["STORE", "CREATE", "h"]).unwrap();
    push_hashes(&mut c, "h", &hash_rows(5, 2, "a"));
    let e = cmd(&mut c, &["PUSH", "BEGIN", "h", "LAYOUT", "LIST"]).unwrap_err();
    assert!(e.to_string().contains("syntax error"), "{e}");
    let good = hash_value(&[("f".into(), "v".into())]);
    let dup = hash_value(&[("f".into(), "1".into()), ("f".into(), "2".into())]);
    let cases: [(&[u8], &str); 4] = [
        (b"plain", "it does not decode as a packed hash"),
        (&[0], "it has no field"),
        (&dup, "field 'f' is given twice"),
        (
            &good[..good.len() - 1],
            "it does not decode as a packed hash",
        ),
    ];
    for (bad, why) in cases {
        let id = int(&cmd(&mut c, &["PUSH", "BEGIN", "h", "LAYOUT", "hash"]).unwrap());
        let e = redis::cmd("PUSH")
            .arg("ADD")
            .arg(id)
            .arg("ok")
            .arg(&good)
            .arg("bad")
            .arg(bad)
            .query::<i64>(&mut c)
            .unwrap_err();
        let want = format!("push failed: the value of key 'bad' is not a hash: {why}");
        assert!(e.to_string().ends_with(&want), "{e}");
        assert_eq!(
            describe(&mut c, "h")["pushing-version"],
            Value::Nil,
            "aborted"
        );
        let e = cmd(&mut c, &["PUSH", "COMMIT", &id.to_string()]).unwrap_err();
        assert!(e.to_string().contains("no push with id"), "{e}");
        assert_eq!(c.hget::<_, _, String>("h:e00004", "f01").unwrap(), "a-4-1");
    }
    // No LAYOUT: strings, whatever their bytes.
    let plain: Vec<(String, String)> = (0..5).map(|i| (format!("k{i}"), "plain".into())).collect();
    let r = push(&mut c, "h", &plain);
    assert_eq!(int(&r["records"]), 5);
    assert_eq!(c.get::<_, String>("h:k0").unwrap(), "plain");
    srv.shutdown().unwrap();
}

/// HMGET of several fields during hash pushes never mixes versions: each key is one record.
#[test]
fn hmget_during_hash_pushes_never_mixes_versions() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    cmd(&mut c, &["STORE", "CREATE", "s"]).unwrap();
    push_hashes(&mut c, "s", &hash_rows(200, 20, "v0"));
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for _ in 0..2 {
        let stop = Arc::clone(&stop);
        let addr = srv.addr;
        readers.push(thread::spawn(move || {
            let mut c = common::client(addr);
            let fields = ["f00", "f07", "f13", "f19"];
            let mut last_gen = 0u32;
            let mut reads = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut p = redis::pipe();
                for i in (0..200).step_by(11) {
                    p.cmd("HMGET").arg(format!("s:e{i:05}")).arg(&fields[..]);
                }
                let rows: Vec<Vec<String>> = p.query(&mut c).unwrap();
                for vals in &rows {
                    let gens: Vec<u32> = vals
                        .iter()
                        .map(|v| v.split('-').next().unwrap()[1..].parse().unwrap())
                        .collect();
                    assert!(gens.iter().all(|g| *g == gens[0]), "mixed: {vals:?}");
                    assert!(gens[0] >= last_gen, "went back in time");
                    last_gen = gens[0];
                }
                reads += 1;
            }
            reads
        }));
    }
    for g in 1..=4 {
        push_hashes(&mut c, "s", &hash_rows(200, 20, &format!("v{g}")));
        thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    srv.shutdown().unwrap();
}
