//! The server through the `redis` crate: commands, pipelines, concurrency, restarts, expiry.

mod common;

use std::thread;
use std::time::Duration;

use redis::{Commands, Value};

#[test]
fn strings_and_keys_work_through_a_real_client() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let _: () = c.set("a", "1").unwrap();
    assert_eq!(c.get::<_, String>("a").unwrap(), "1");
    assert_eq!(c.incr::<_, _, i64>("a", 41).unwrap(), 42);
    assert_eq!(c.append::<_, _, i64>("a", "x").unwrap(), 3);
    assert_eq!(c.get::<_, String>("a").unwrap(), "42x");
    let r: redis::RedisResult<i64> = c.incr("a", 1);
    assert_eq!(
        r.unwrap_err().to_string(),
        "An error was signalled by the server - ResponseError: value is not an integer or out of range"
    );
    let _: () = c.mset(&[("k1", "v1"), ("k2", "v2")]).unwrap();
    let v: Vec<Option<String>> = c.mget(&["k1", "nope", "k2"]).unwrap();
    assert_eq!(v, vec![Some("v1".into()), None, Some("v2".into())]);
    assert_eq!(c.exists::<_, i64>(&["k1", "k1", "nope"]).unwrap(), 2);
    assert_eq!(c.del::<_, i64>(&["k1", "nope"]).unwrap(), 1);
    let _: () = c.rename("k2", "k3").unwrap();
    assert_eq!(c.get::<_, Option<String>>("k2").unwrap(), None);
    let mut keys: Vec<String> = c.keys("*").unwrap();
    keys.sort();
    assert_eq!(keys, vec!["a", "k3"]);
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 2);
    let _: () = redis::cmd("FLUSHDB").query(&mut c).unwrap();
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 0);
    srv.shutdown().unwrap();
}

#[test]
fn binary_keys_and_values_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let all: Vec<u8> = (0..=255u8).collect();
    let big = vec![7u8; 1 << 20];
    let _: () = c.set(&all[..], &big[..]).unwrap();
    let _: () = c.set("empty", "").unwrap();
    assert_eq!(c.get::<_, Vec<u8>>(&all[..]).unwrap(), big);
    assert_eq!(c.get::<_, Vec<u8>>("empty").unwrap(), Vec::<u8>::new());
    assert_eq!(c.strlen::<_, i64>("empty").unwrap(), 0);
    srv.shutdown().unwrap();
}

#[test]
fn a_pipeline_keeps_order_and_reads_its_own_writes() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let mut p = redis::pipe();
    for i in 0..500 {
        p.cmd("SET").arg(format!("k{i}")).arg(i);
        p.cmd("GET").arg(format!("k{i}"));
        p.cmd("INCR").arg("n");
        p.cmd("PING");
    }
    let out: Vec<Value> = p.query(&mut c).unwrap();
    assert_eq!(out.len(), 2000);
    for i in 0..500 {
        assert_eq!(out[4 * i], Value::Okay);
        assert_eq!(
            out[4 * i + 1],
            Value::BulkString(i.to_string().into_bytes())
        );
        assert_eq!(out[4 * i + 2], Value::Int(i as i64 + 1));
    }
    srv.shutdown().unwrap();
}

/// GETs and MGETs of one read run ahead in batches (prefetched together); replies must stay in
/// request order, a read after a write still sees it, and what follows a batch still runs.
#[test]
fn a_pipeline_of_reads_answers_in_order_around_writes_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let pairs: Vec<(String, String)> = (0..100)
        .map(|i| (format!("k{i}"), format!("v{i}")))
        .collect();
    let _: () = c.mset(&pairs).unwrap();
    // Read once so the row cache holds them.
    let _: Vec<Option<String>> = c
        .mget(pairs.iter().map(|p| &p.0).collect::<Vec<_>>())
        .unwrap();
    let mut p = redis::pipe();
    let mut want = Vec::new();
    for i in 0..150 {
        // Longer than READ_AHEAD, with misses among the hits.
        p.cmd("GET").arg(format!("k{i}"));
        want.push(if i < 100 {
            Value::BulkString(format!("v{i}").into_bytes())
        } else {
            Value::Nil
        });
        if i % 37 == 0 {
            p.cmd("MGET").arg(format!("k{i}")).arg("nope");
            let hit = if i < 100 {
                Value::BulkString(format!("v{i}").into_bytes())
            } else {
                Value::Nil
            };
            want.push(Value::Array(vec![hit, Value::Nil]));
        }
    }
    p.cmd("SET").arg("k5").arg("new");
    want.push(Value::Okay);
    p.cmd("GET").arg("k5");
    want.push(Value::BulkString(b"new".to_vec()));
    p.cmd("GET").arg("k6");
    want.push(Value::BulkString(b"v6".to_vec()));
    let out: Vec<Value> = p.query(&mut c).unwrap();
    assert_eq!(out, want);

    // At the byte level: a batch of reads, a wrong-arity GET, then a protocol error.
    let mut s = common::raw(srv.addr);
    let r = common::exchange(
        &mut s,
        b"GET k1\r\nGET k2\r\nGET\r\nMGET k3 k4\r\n*1\r\n$x\r\n",
        200,
    );
    assert_eq!(
        String::from_utf8_lossy(&r),
        "$2\r\nv1\r\n$2\r\nv2\r\n-ERR wrong number of arguments for 'get' command\r\n\
         *2\r\n$2\r\nv3\r\n$2\r\nv4\r\n-ERR Protocol error: invalid bulk length\r\n"
    );
    assert!(common::closed(&mut s));
    srv.shutdown().unwrap();
}

#[test]
fn concurrent_increments_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let addr = srv.addr;
    let threads: Vec<_> = (0..8)
        .map(|_| {
            thread::spawn(move || {
                let mut c = common::client(addr);
                for _ in 0..200 {
                    let _: i64 = c.incr("counter", 1).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = common::client(addr);
    assert_eq!(c.get::<_, i64>("counter").unwrap(), 1600);
    srv.shutdown().unwrap();
}

#[test]
fn acknowledged_writes_and_ttls_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    for i in 0..1000 {
        let _: () = c.set(format!("key{i}"), format!("value{i}")).unwrap();
    }
    let _: () = c.set_ex("ttl", "v", 1000).unwrap();
    // SHUTDOWN closes the connection without a reply, as in Redis.
    let r: redis::RedisResult<()> = redis::cmd("SHUTDOWN").query(&mut c);
    assert!(r.is_err());
    srv.join().unwrap();

    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    for i in 0..1000 {
        assert_eq!(
            c.get::<_, String>(format!("key{i}")).unwrap(),
            format!("value{i}")
        );
    }
    let ttl: i64 = c.ttl("ttl").unwrap();
    assert!((990..=1000).contains(&ttl), "{ttl}");
    srv.shutdown().unwrap();
}

#[test]
fn expired_keys_are_never_returned_and_the_pass_removes_them() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start_with(dir.path(), |c| c.hz = 50);
    let mut c = common::client(srv.addr);
    for i in 0..50 {
        let _: () = redis::cmd("SET")
            .arg(format!("e{i}"))
            .arg("v")
            .arg("PX")
            .arg(50)
            .query(&mut c)
            .unwrap();
    }
    let _: () = c.set("keep", "v").unwrap();
    thread::sleep(Duration::from_millis(120));
    assert_eq!(c.get::<_, Option<String>>("e1").unwrap(), None);
    assert_eq!(c.exists::<_, i64>("e2").unwrap(), 0);
    assert_eq!(c.ttl::<_, i64>("e3").unwrap(), -2);
    // The pass deletes them for real (INFO counts them).
    let mut removed = 0;
    for _ in 0..100 {
        let info: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
        removed = info
            .lines()
            .find_map(|l| l.strip_prefix("expired_keys:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        if removed == 50 {
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(removed, 50);
    let keys: Vec<String> = c.keys("*").unwrap();
    assert_eq!(keys, vec!["keep"]);
    srv.shutdown().unwrap();
}

#[test]
fn scan_visits_every_key_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    for i in 0..300 {
        let _: () = c.set(format!("s{i:03}"), i).unwrap();
    }
    let _: () = c.set("other", 1).unwrap();
    let mut seen: Vec<String> = c.scan_match("s*").unwrap().collect();
    seen.sort();
    let want: Vec<String> = (0..300).map(|i| format!("s{i:03}")).collect();
    assert_eq!(seen, want);
    let r: redis::RedisResult<Value> = redis::cmd("SCAN").arg("12345678").query(&mut c);
    assert!(r.unwrap_err().to_string().contains("invalid cursor"));
    srv.shutdown().unwrap();
}

#[test]
fn databases_are_separate() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let _: () = c.set("k", "db0").unwrap();
    let _: () = redis::cmd("SELECT").arg(3).query(&mut c).unwrap();
    assert_eq!(c.get::<_, Option<String>>("k").unwrap(), None);
    let _: () = c.set("k", "db3").unwrap();
    let _: () = redis::cmd("FLUSHDB").query(&mut c).unwrap();
    let _: () = redis::cmd("SELECT").arg(0).query(&mut c).unwrap();
    assert_eq!(c.get::<_, String>("k").unwrap(), "db0");
    let r: redis::RedisResult<()> = redis::cmd("SELECT").arg(16).query(&mut c);
    assert!(r
        .unwrap_err()
        .to_string()
        .contains("DB index is out of range"));
    srv.shutdown().unwrap();
}

#[test]
fn requirepass_gates_commands_until_auth() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start_with(dir.path(), |c| c.requirepass = Some("s3cret".into()));
    let mut s = common::raw(srv.addr);
    let r = common::exchange(&mut s, b"GET a\r\n", 32);
    assert_eq!(r, b"-NOAUTH Authentication required.\r\n");
    let r = common::exchange(&mut s, b"AUTH wrong\r\n", 70);
    assert_eq!(
        r,
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    let r = common::exchange(&mut s, b"AUTH s3cret\r\nSET a 1\r\nGET a\r\n", 16);
    assert_eq!(r, b"+OK\r\n+OK\r\n$1\r\n1\r\n");
    srv.shutdown().unwrap();
}

#[test]
fn client_kill_closes_the_other_connection() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut victim = common::raw(srv.addr);
    let r = common::exchange(&mut victim, b"CLIENT ID\r\n", 4);
    let id = String::from_utf8(r[1..r.len() - 2].to_vec()).unwrap();
    let mut c = common::client(srv.addr);
    let n: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(&id)
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 1);
    assert!(common::closed(&mut victim));
    srv.shutdown().unwrap();
}

#[test]
fn maxclients_refuses_the_extra_connection_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start_with(dir.path(), |c| c.maxclients = 2);
    let mut a = common::raw(srv.addr);
    let mut b = common::raw(srv.addr);
    assert_eq!(common::exchange(&mut a, b"PING\r\n", 7), b"+PONG\r\n");
    assert_eq!(common::exchange(&mut b, b"PING\r\n", 7), b"+PONG\r\n");
    let mut c = common::raw(srv.addr);
    let r = common::exchange(&mut c, b"PING\r\n", 37);
    assert_eq!(r, b"-ERR max number of clients reached\r\n");
    srv.shutdown().unwrap();
}

#[test]
fn an_idle_client_is_closed_after_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start_with(dir.path(), |c| c.timeout = Duration::from_secs(1));
    let mut s = common::raw(srv.addr);
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    assert!(common::closed(&mut s));
    srv.shutdown().unwrap();
}

#[test]
fn resp3_hello_switches_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut s = common::raw(srv.addr);
    let r = common::exchange(&mut s, b"HELLO 3\r\n", 10_000);
    assert!(
        r.starts_with(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"),
        "{r:?}"
    );
    let r = common::exchange(&mut s, b"GET nothing\r\nCONFIG GET port\r\n", 20);
    let port = srv.addr.port().to_string();
    let want = format!("_\r\n%1\r\n$4\r\nport\r\n${}\r\n{port}\r\n", port.len());
    assert_eq!(String::from_utf8_lossy(&r), want);
    srv.shutdown().unwrap();
}

#[test]
fn acl_users_from_the_config_are_limited_to_their_commands_and_keys() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start_with(dir.path(), |c| {
        c.requirepass = Some("admin".into());
        c.users = vec!["app on >apppw ~features:* +@read +@write -@dangerous".into()];
    });
    let mut s = common::raw(srv.addr);
    let r = common::exchange(
        &mut s,
        b"AUTH app apppw\r\nSET features:1 x\r\nGET features:1\r\n",
        5 + 5 + 7,
    );
    assert_eq!(r, b"+OK\r\n+OK\r\n$1\r\nx\r\n");
    let r = common::exchange(&mut s, b"SET other 1\r\n", 80);
    assert_eq!(
        String::from_utf8_lossy(&r),
        "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
    );
    let r = common::exchange(&mut s, b"FLUSHALL\r\n", 80);
    assert_eq!(
        String::from_utf8_lossy(&r),
        "-NOPERM this user has no permissions to run the 'flushall' command\r\n"
    );
    // Deleting the user closes its connections.
    let mut admin = common::raw(srv.addr);
    let r = common::exchange(&mut admin, b"AUTH admin\r\nACL DELUSER app\r\n", 9);
    assert_eq!(r, b"+OK\r\n:1\r\n");
    let r = common::exchange(&mut s, b"PING\r\n", 7);
    assert_eq!(r, b"");
    srv.shutdown().unwrap();
}

#[test]
fn slow_commands_are_logged() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start_with(dir.path(), |c| c.slowlog_log_slower_than = 0);
    let mut c = common::client(srv.addr);
    let _: () = c.set("a", "b").unwrap();
    let n: i64 = redis::cmd("SLOWLOG").arg("LEN").query(&mut c).unwrap();
    assert!(n >= 1);
    let v: Value = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query(&mut c)
        .unwrap();
    let text = format!("{v:?}");
    assert!(
        text.contains(r#"bulk-string('"SET"'), bulk-string('"a"')"#),
        "{text}"
    );
    srv.shutdown().unwrap();
}

#[test]
fn the_operations_endpoint_serves_metrics_and_health() {
    use std::io::{Read, Write};
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start_with(dir.path(), |c| c.metrics_port = port);
    let addr = srv.metrics_addr.expect("metrics endpoint");
    let mut c = common::client(srv.addr);
    let _: () = c.set("a", "b").unwrap();
    // A command refused before it ran (arity) and one that failed as it ran.
    assert!(redis::cmd("GET").query::<()>(&mut c).is_err());
    assert!(redis::cmd("INCR").arg("a").query::<()>(&mut c).is_err());
    let get = |path: &str| {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    let m = get("/metrics");
    assert!(m.starts_with("HTTP/1.1 200"), "{m}");
    assert!(
        m.contains("rialto_command_calls_total{cmd=\"set\"} 1"),
        "{m}"
    );
    assert!(m.contains("rialto_merger_syncs_total"), "{m}");
    for series in [
        "rialto_error_replies_total 2",
        "rialto_errors_total{prefix=\"ERR\"} 2",
        "rialto_command_rejected_calls_total{cmd=\"get\"} 1",
        "rialto_command_failed_calls_total{cmd=\"incr\"} 1",
    ] {
        assert!(m.contains(series), "no {series}: {m}");
    }
    assert!(m.contains("rialto_merger_relayed_wakeups_total"), "{m}");
    assert!(get("/livez").starts_with("HTTP/1.1 200"));
    assert!(get("/readyz").starts_with("HTTP/1.1 200"));
    assert!(get("/nope").starts_with("HTTP/1.1 404"));
    srv.shutdown().unwrap();
}

/// The operations endpoint follows a push: its phase and records in `/metrics` and in the
/// dashboard's `/api/status` while it adds, then the store's new current version.
#[test]
fn the_operations_endpoint_shows_stores_and_a_push_in_progress() {
    use std::io::{Read, Write};
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start_with(dir.path(), |c| c.metrics_port = port);
    let addr = srv.metrics_addr.expect("metrics endpoint");
    let get = |path: &str| {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let body = out
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_string();
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
        body
    };
    let status = || -> serde_json::Value { serde_json::from_str(&get("/api/status")).unwrap() };
    let mut c = common::client(srv.addr);
    let _: () = redis::cmd("STORE")
        .arg(&["CREATE", "feat", "PREFIX", "feat:"])
        .query(&mut c)
        .unwrap();
    let id: u64 = redis::cmd("PUSH")
        .arg(&["BEGIN", "feat"])
        .query(&mut c)
        .unwrap();
    let added: u64 = redis::cmd("PUSH")
        .arg("ADD")
        .arg(id)
        .arg(&["a", "1", "b", "22", "c", "333"])
        .query(&mut c)
        .unwrap();
    assert_eq!(added, 3);

    let m = get("/metrics");
    for series in [
        "rialto_store_current_version{store=\"feat\"} 1".to_string(),
        format!("rialto_store_pushing_version{{store=\"feat\"}} {id}"),
        "rialto_push_records{store=\"feat\"} 3".into(),
        "rialto_push_bytes{store=\"feat\"} 9".into(),
        "rialto_push_phase{store=\"feat\",phase=\"adding\"} 1".into(),
        "rialto_push_phase{store=\"feat\",phase=\"writing\"} 0".into(),
        "rialto_pushes_begun_total 1".into(),
    ] {
        assert!(m.contains(&series), "no {series}: {m}");
    }
    assert!(!m.contains("rialto_store_current_version_records"), "{m}");
    let s = status();
    let feat = &s["stores"][0];
    assert_eq!(feat["name"], "feat");
    assert_eq!(feat["current"]["version"], 1);
    assert!(feat["current"]["records"].is_null());
    assert_eq!(feat["pushing"]["version"], id);
    assert_eq!(feat["pushing"]["phase"], "adding");
    assert_eq!(feat["pushing"]["records"], 3);
    assert_eq!(feat["pushing"]["progress_ratio"], 0.0);
    assert!(feat["pushing"]["owner"].is_u64());

    let _: () = redis::cmd("PUSH")
        .arg("COMMIT")
        .arg(id)
        .query(&mut c)
        .unwrap();
    let m = get("/metrics");
    for series in [
        format!("rialto_store_current_version{{store=\"feat\"}} {id}"),
        "rialto_store_previous_version{store=\"feat\"} 1".into(),
        "rialto_store_pushing_version{store=\"feat\"} 0".into(),
        "rialto_store_current_version_records{store=\"feat\"} 3".into(),
        "rialto_pushes_committed_total 1".into(),
        "rialto_io_operations_total{kind=\"ingest\"} 1".into(),
        "rialto_merger_group_transactions_bucket{le=\"+Inf\"}".into(),
    ] {
        assert!(m.contains(&series), "no {series}: {m}");
    }
    assert!(!m.contains("rialto_push_records"), "{m}");
    let s = status();
    let feat = &s["stores"][0];
    assert_eq!(feat["current"]["version"], id);
    assert_eq!(feat["current"]["records"], 3);
    assert_eq!(feat["previous"]["version"], 1);
    assert!(feat["pushing"].is_null());
    assert_eq!(s["pushes"]["committed"], 1);
    let ingests: Vec<&serde_json::Value> = s["io"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "ingest")
        .collect();
    assert_eq!(ingests.len(), 1, "{s}");
    assert_eq!(ingests[0]["entries"], 3);
    assert!(get("/").contains("<title>Rialto</title>"));
    srv.shutdown().unwrap();
}

#[test]
fn a_client_over_the_output_buffer_limit_is_closed_and_others_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start_with(dir.path(), |c| c.output_buffer_limit = 1024);
    let mut c = common::client(srv.addr);
    let _: () = c.set("big", vec![b'x'; 4096]).unwrap();
    let mut s = common::raw(srv.addr);
    let r = common::exchange(&mut s, b"GET big\r\n", 8192);
    assert_eq!(r, b"");
    assert!(common::closed(&mut s));
    // The limit is per client: small replies still flow.
    assert_eq!(c.strlen::<_, i64>("big").unwrap(), 4096);
    srv.shutdown().unwrap();
}

/// TRIAD is configured by `triad` (read-only at run time) and its state is in `INFO
/// rialto_triad`: the characterizer sees a write-heavy, skewed stream of SETs and says so.
#[test]
fn triad_state_is_in_info_and_its_mode_in_config() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let got: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("triad")
        .query(&mut c)
        .unwrap();
    assert_eq!(got, vec!["triad", "adaptive"]);
    let r: redis::RedisResult<()> = redis::cmd("CONFIG")
        .arg("SET")
        .arg("triad")
        .arg("off")
        .query(&mut c);
    assert!(r.is_err());
    // 30,000 writes, nearly all to 10 keys: three windows, skewed and write-heavy.
    for chunk in 0..30 {
        let mut p = redis::pipe();
        for i in 0..1000 {
            let k = if i % 10 == 0 {
                format!("cold{chunk}-{i}")
            } else {
                format!("hot{}", i % 10)
            };
            p.set(k, "v").ignore();
        }
        let _: () = p.query(&mut c).unwrap();
    }
    let info: String = redis::cmd("INFO")
        .arg("rialto_triad")
        .query(&mut c)
        .unwrap();
    assert!(info.starts_with("# Rialto_triad\r\n"), "{info}");
    let field = |name: &str| common::info_field(&info, name);
    assert_eq!(field("adaptive"), "on");
    assert_eq!(field("windows"), "3");
    assert_eq!(field("workload"), "write-heavy-skewed");
    assert_eq!(field("hot_cold_active"), "1");
    assert!(
        field("decision0").contains("to=write-heavy-skewed"),
        "{info}"
    );
    // In the default INFO too.
    let all: String = redis::cmd("INFO").query(&mut c).unwrap();
    assert!(all.contains("# Rialto_triad\r\n"));
    srv.shutdown().unwrap();
}

/// The characterizer counts the reads an operation makes (an INCR reads its key through the
/// same tables a GET does), but not the bookkeeping read of the record a write replaces: a
/// stream of INCRs of distinct keys is balanced, not write-heavy, so level 0 is not left to
/// grow under it. (A key an earlier write of the same group holds is read from the group,
/// not from the engine, and does not count.)
#[test]
fn reads_inside_operations_count_in_the_workload() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    for chunk in 0..30 {
        let mut p = redis::pipe();
        for i in 0..1000 {
            p.incr(format!("n{chunk}-{i}"), 1).ignore();
        }
        let _: () = p.query(&mut c).unwrap();
    }
    let info: String = redis::cmd("INFO")
        .arg("rialto_triad")
        .query(&mut c)
        .unwrap();
    let window = common::info_field(&info, "last_window");
    let reads: f64 = window
        .split(',')
        .find_map(|f| f.strip_prefix("read_fraction="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{info}"));
    assert!((0.45..=0.55).contains(&reads), "{info}");
    assert_eq!(common::info_field(&info, "workload"), "balanced", "{info}");
    srv.shutdown().unwrap();
}

#[test]
fn durable_replies_released_by_the_syncer_are_counted_through_the_relay() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    // Each SET waits for its sync, which the syncer thread runs and releases: the reply's
    // wake-up goes through the connection thread's relay.
    for i in 0..5 {
        let _: () = c.set(format!("k{i}"), "v").unwrap();
    }
    let info: String = redis::cmd("INFO")
        .arg("rialto_merger")
        .query(&mut c)
        .unwrap();
    let field = |name: &str| -> u64 { common::info_field(&info, name).parse().unwrap() };
    let (relayed, batches) = (field("relayed_wakeups"), field("relay_batches"));
    assert!(relayed >= 1, "{info}");
    assert!(batches >= 1 && batches <= relayed, "{info}");
    srv.shutdown().unwrap();
}

fn config_set(c: &mut redis::Connection, pairs: &[&str]) -> redis::RedisResult<()> {
    redis::cmd("CONFIG").arg("SET").arg(pairs).query(c)
}

/// CONFIG SET port listens on the new port before it closes the old one; clients already
/// connected stay. A port that cannot be bound changes nothing: not the listener, not the
/// other parameters of the same call.
#[test]
fn config_set_port_rebinds_and_rolls_back_when_the_port_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let new_port = free.local_addr().unwrap().port();
    drop(free);
    config_set(&mut c, &["port", &new_port.to_string()]).unwrap();
    let moved = std::net::SocketAddr::from(([127, 0, 0, 1], new_port));
    let mut d = common::client(moved);
    let _: () = redis::cmd("PING").query(&mut d).unwrap();
    assert!(std::net::TcpStream::connect(srv.addr).is_err());
    // The connection made before the move still works.
    let _: () = redis::cmd("PING").query(&mut c).unwrap();
    let info: String = redis::cmd("INFO").arg("server").query(&mut c).unwrap();
    assert_eq!(common::info_field(&info, "tcp_port"), new_port.to_string());

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_port = taken.local_addr().unwrap().port().to_string();
    let err = config_set(&mut c, &["maxmemory", "10000001", "port", &taken_port]).unwrap_err();
    assert!(
        err.to_string()
            .contains("(possibly related to argument 'port') - Unable to listen on this port"),
        "{err}"
    );
    let mm: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory")
        .query(&mut c)
        .unwrap();
    assert_eq!(mm, vec!["maxmemory", "0"]);
    let _: () = redis::cmd("PING")
        .query(&mut common::client(moved))
        .unwrap();
    // Back to the first port: the listener closed there let it go.
    config_set(&mut c, &["port", &srv.addr.port().to_string()]).unwrap();
    let _: () = redis::cmd("PING")
        .query(&mut common::client(srv.addr))
        .unwrap();
    srv.shutdown().unwrap();
}

/// A parameter fixed at start accepts the value it has, so a tool that sets every parameter
/// CONFIG GET lists succeeds; any other value is Redis's immutable error.
#[test]
fn config_set_of_a_fixed_parameter_accepts_its_own_value_only() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let all: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("*")
        .query(&mut c)
        .unwrap();
    for kv in all.chunks(2) {
        // requirepass and user change the ACL; the value CONFIG GET shows is not a setting.
        if kv[0] == "requirepass" || kv[0] == "user" {
            continue;
        }
        config_set(&mut c, &[&kv[0], &kv[1]])
            .unwrap_or_else(|e| panic!("CONFIG SET {} {:?}: {e}", kv[0], kv[1]));
    }
    let again: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("*")
        .query(&mut c)
        .unwrap();
    assert_eq!(all, again);
    for (name, other) in [("threads", "3"), ("daemonize", "yes"), ("appendonly", "no")] {
        let err = config_set(&mut c, &[name, other]).unwrap_err();
        assert!(
            err.to_string().contains("can't set immutable config"),
            "{name}: {err}"
        );
    }
    srv.shutdown().unwrap();
}

/// CONFIG REWRITE writes the running configuration into the file the server started with (a
/// server started from none says so), and a restart from that file runs with it.
#[test]
fn config_rewrite_persists_config_set_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let err = redis::cmd("CONFIG")
        .arg("REWRITE")
        .query::<()>(&mut c)
        .unwrap_err();
    assert!(
        err.to_string().contains("running without a config file"),
        "{err}"
    );
    srv.shutdown().unwrap();

    let file = dir.path().join("rialto.toml");
    std::fs::write(&file, "# kept\ntimeout = 5 # seconds\n").unwrap();
    let srv = common::start_with(dir.path(), |c| {
        c.apply_toml("rialto.toml", "timeout = 5\n").unwrap();
        c.config_file = Some(file.clone());
    });
    let mut c = common::client(srv.addr);
    config_set(&mut c, &["timeout", "30", "maxmemory", "1mb"]).unwrap();
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "reader", "on", ">pw", "~k*", "+get"])
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("CONFIG").arg("REWRITE").query(&mut c).unwrap();
    srv.shutdown().unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("# kept\ntimeout = 30 # seconds\n"),
        "{text}"
    );

    let srv = common::start_with(dir.path(), |c| {
        c.apply_toml("rialto.toml", &text).unwrap();
    });
    let mut c = common::client(srv.addr);
    let got: Vec<String> = redis::cmd("CONFIG")
        .arg(&["GET", "timeout", "maxmemory"])
        .query(&mut c)
        .unwrap();
    assert_eq!(got, vec!["timeout", "30", "maxmemory", "1048576"]);
    let mut reader = redis::Client::open(format!("redis://reader:pw@{}/", srv.addr))
        .unwrap()
        .get_connection()
        .unwrap();
    let v: Option<String> = redis::cmd("GET").arg("k1").query(&mut reader).unwrap();
    assert_eq!(v, None);
    srv.shutdown().unwrap();
}

/// `maxmemory-clients`: a client whose buffers push every client's memory past the limit is
/// closed; one marked CLIENT NO-EVICT, and small ones, stay. CLIENT LIST shows what each holds.
#[test]
fn clients_over_maxmemory_clients_are_closed_largest_first() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    config_set(&mut c, &["maxmemory-clients", "1mb"]).unwrap();
    let partial = |s: &mut std::net::TcpStream| {
        s.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000000\r\n")
            .unwrap();
        s.write_all(&vec![b'x'; 1_500_000]).unwrap();
    };
    let mut kept = common::raw(srv.addr);
    assert_eq!(
        common::exchange(&mut kept, b"CLIENT NO-EVICT on\r\n", 5),
        b"+OK\r\n"
    );
    partial(&mut kept);
    let mut big = common::raw(srv.addr);
    big.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    partial(&mut big);
    let mut buf = [0u8; 16];
    assert_eq!(
        big.read(&mut buf).unwrap_or(0),
        0,
        "the largest evictable client is closed"
    );
    let _: () = redis::cmd("PING").query(&mut c).unwrap();
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut c).unwrap();
    let line = list
        .lines()
        .find(|l| l.contains("flags=e"))
        .expect("the no-evict client");
    let tot: u64 = line
        .split(' ')
        .find_map(|f| f.strip_prefix("tot-mem="))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(tot > 1_500_000, "{line}");
    kept.write_all(&vec![b'x'; 1_500_000]).unwrap();
    kept.write_all(b"\r\n").unwrap();
    assert_eq!(common::exchange(&mut kept, b"", 5), b"+OK\r\n");
    let info: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
    assert_eq!(common::info_field(&info, "evicted_clients"), "1");
    // MULTI's queue shows in CLIENT LIST.
    let _: () = redis::cmd("MULTI").query(&mut c).unwrap();
    let _: () = redis::cmd("SET").arg("a").arg("b").query(&mut c).unwrap();
    let mut other = common::client(srv.addr);
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut other).unwrap();
    assert!(list.contains("multi=1 "), "{list}");
    srv.shutdown().unwrap();
}

/// INFO commandstats counts each subcommand apart, under its full name, as Redis 7 does
/// (`cmdstat_config|get`); an unknown subcommand is no call of anything (errorstats only).
#[test]
fn commandstats_count_subcommands_apart() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let mut c = common::client(srv.addr);
    let _: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("port")
        .query(&mut c)
        .unwrap();
    let _: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("bind")
        .query(&mut c)
        .unwrap();
    let _: i64 = redis::cmd("CLIENT").arg("ID").query(&mut c).unwrap();
    let r: redis::RedisResult<()> = redis::cmd("CONFIG").arg("NOSUCH").query(&mut c);
    assert!(r.is_err());
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut c)
        .unwrap();
    assert!(stats.contains("cmdstat_config|get:calls=2,"), "{stats}");
    assert!(stats.contains("cmdstat_client|id:calls=1,"), "{stats}");
    assert!(!stats.contains("cmdstat_config:"), "{stats}");
    srv.shutdown().unwrap();
}
