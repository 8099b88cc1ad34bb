//! `rialto serve` as a user runs it: start the binary, talk RESP over TCP, stop it with SIGTERM
//! or SHUTDOWN, start it again on the same directory, and find every write there.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Serve {
    child: Child,
    port: u16,
    /// Everything the server wrote to stderr, collected by a thread.
    log: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Serve {
    /// A failing test must not leave a server running.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `rialto serve` on a port the kernel picks (`--port 0`) and learns it from the
/// "ready to accept connections" log line, so concurrent tests never race for a port.
fn spawn(dir: &std::path::Path, extra: &[&str]) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rialto"))
        .args(["serve", "--dir"])
        .arg(dir)
        .args(["--port", "0", "--threads", "1"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rialto starts");
    let stderr = child.stderr.take().expect("stderr piped");
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = Arc::clone(&log);
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if line.contains("ready to accept connections") {
                let port = line
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.trim().parse::<u16>().ok());
                let _ = tx.send(port);
            }
            let mut l = sink.lock().unwrap();
            l.push_str(&line);
            l.push('\n');
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(30))
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("rialto serve did not listen: {}", log.lock().unwrap()));
    Serve {
        child,
        port,
        log,
        reader: Some(reader),
    }
}

fn request(port: u16, input: &[u8], reply_len: usize) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(input).unwrap();
    let mut out = vec![0u8; reply_len];
    s.read_exact(&mut out).unwrap();
    out
}

fn wait_exit(mut s: Serve) -> (i32, String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            if let Some(r) = s.reader.take() {
                let _ = r.join();
            }
            let log = s.log.lock().unwrap().clone();
            return (st.code().unwrap_or(-1), log);
        }
        assert!(Instant::now() < deadline, "rialto serve did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_stops_gracefully_and_a_restart_finds_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let s = spawn(dir.path(), &[]);
    let mut input = Vec::new();
    for i in 0..200 {
        input.extend_from_slice(format!("SET k{i} v{i}\r\n").as_bytes());
    }
    assert_eq!(request(s.port, &input, 5 * 200), b"+OK\r\n".repeat(200));
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc_kill(s.child.id() as i32, 15) };
    let (code, log) = wait_exit(s);
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("SIGTERM received"), "{log}");

    let s = spawn(dir.path(), &[]);
    assert_eq!(request(s.port, b"GET k199\r\n", 10), b"$4\r\nv199\r\n");
    assert_eq!(request(s.port, b"SHUTDOWN\r\n", 0), b"");
    let (code, _) = wait_exit(s);
    assert_eq!(code, 0);
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

#[test]
fn bad_options_exit_2_with_one_line() {
    let out = Command::new(env!("CARGO_BIN_EXE_rialto"))
        .args(["serve", "--port", "notaport"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("'notaport' is not a valid number"), "{err}");

    let out = Command::new(env!("CARGO_BIN_EXE_rialto"))
        .args(["serve", "--no-such-option", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown option 'no-such-option'"));
}

#[test]
fn a_config_file_and_flags_combine() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("rialto.toml");
    std::fs::write(&cfg, "requirepass = \"pw\"\nslowlog-max-len = 7\n").unwrap();
    let data = dir.path().join("data");
    let s = spawn(&data, &["--config", cfg.to_str().unwrap()]);
    assert_eq!(
        request(s.port, b"PING\r\n", 34),
        b"-NOAUTH Authentication required.\r\n"
    );
    let r = request(
        s.port,
        b"AUTH pw\r\nCONFIG GET slowlog-max-len\r\n",
        5 + 4 + 21 + 8,
    );
    assert_eq!(r, b"+OK\r\n*2\r\n$15\r\nslowlog-max-len\r\n$1\r\n7\r\n");
    assert_eq!(request(s.port, b"AUTH pw\r\nSHUTDOWN\r\n", 5), b"+OK\r\n");
    let (code, _) = wait_exit(s);
    assert_eq!(code, 0);
}

#[test]
fn check_passes_a_clean_directory_and_reports_a_damaged_one() {
    let dir = tempfile::tempdir().unwrap();
    let s = spawn(dir.path(), &[]);
    let mut input = Vec::new();
    for i in 0..500 {
        input.extend_from_slice(format!("SET key{i} value{i}\r\n").as_bytes());
    }
    assert_eq!(request(s.port, &input, 5 * 500), b"+OK\r\n".repeat(500));
    assert_eq!(request(s.port, b"SHUTDOWN\r\n", 0), b"");
    let (code, _) = wait_exit(s);
    assert_eq!(code, 0);

    let check = || {
        Command::new(env!("CARGO_BIN_EXE_rialto"))
            .args(["check", "--dir"])
            .arg(dir.path())
            .output()
            .unwrap()
    };
    let out = check();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(": ok"), "{text}");

    // Shutdown flushed the memtable: the data is in a table. Damage it.
    let table = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .expect("a table");
    let mut data = std::fs::read(&table).unwrap();
    let mid = data.len() / 3;
    data[mid] ^= 0x40;
    std::fs::write(&table, data).unwrap();
    let out = check();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("problem: "), "{text}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: ") && err.contains("problem(s) in "),
        "{err}"
    );
}

/// Damage in journal bytes that later records prove durable fails the start with one line
/// naming the file, the offset and the way past it; `--wal-recovery salvage` takes it and
/// keeps the writes before the damage.
#[test]
fn damage_in_the_journal_fails_the_start_until_salvage_is_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spawn(dir.path(), &[]);
    for i in 0..300 {
        // One durable write at a time: each record's mark proves the ones before it.
        let reply = request(s.port, format!("SET key{i} value{i}\r\n").as_bytes(), 5);
        assert_eq!(reply, b"+OK\r\n");
    }
    // A crash, not a shutdown: the writes stay in the journal.
    s.child.kill().unwrap();
    let _ = s.child.wait();
    let wal = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .expect("a journal segment");
    let mut data = std::fs::read(&wal).unwrap();
    let end = data.iter().rposition(|&b| b != 0).unwrap();
    data[end / 2] ^= 0x40;
    std::fs::write(&wal, data).unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_rialto"))
        .args(["serve", "--port", "0", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains("corruption in ") && line.contains("--wal-recovery salvage"),
        "{line}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_rialto"))
        .args(["check", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("problem: ") && l.contains(".log: corrupt record at offset")),
        "{text}"
    );

    let s = spawn(dir.path(), &["--wal-recovery", "salvage"]);
    assert_eq!(request(s.port, b"GET key0\r\n", 12), b"$6\r\nvalue0\r\n");
    assert_eq!(request(s.port, b"EXISTS key299\r\n", 4), b":0\r\n");
    assert_eq!(request(s.port, b"SHUTDOWN\r\n", 0), b"");
    assert_eq!(wait_exit(s).0, 0);
}

/// Logs written to a pipe or a file are plain text (colours are for terminals), and binding
/// beyond loopback with no password says at start what that means.
#[test]
fn redirected_logs_are_plain_and_an_open_bind_is_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    let s = spawn(dir.path(), &["--bind", "0.0.0.0"]);
    assert_eq!(request(s.port, b"PING\r\n", 7), b"+PONG\r\n");
    assert_eq!(request(s.port, b"SHUTDOWN\r\n", 0), b"");
    let (code, log) = wait_exit(s);
    assert_eq!(code, 0, "{log}");
    assert!(
        !log.contains('\x1b'),
        "ANSI escapes in a redirected log: {log:?}"
    );
    let warning = log
        .lines()
        .find(|l| l.contains("beyond loopback"))
        .unwrap_or_else(|| panic!("no warning about the bind: {log}"));
    assert!(
        warning.contains("WARN")
            && warning.contains("0.0.0.0")
            && warning.contains("protected mode refuses")
            && warning.contains("requirepass"),
        "{warning}"
    );

    // Loopback only, the default: nothing to warn of.
    let s = spawn(dir.path(), &[]);
    assert_eq!(request(s.port, b"SHUTDOWN\r\n", 0), b"");
    let (_, log) = wait_exit(s);
    assert!(!log.contains("beyond loopback"), "{log}");
}
