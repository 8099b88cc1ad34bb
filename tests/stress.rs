//! `rialto stress` as a user runs it: kill loops in both modes lose nothing, kill points
//! inside the engine fire and are survived, and a lost write is reported (the checker is
//! not vacuous).

use std::path::Path;
use std::process::{Command, Output};

fn stress(dir: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rialto"))
        .arg("stress")
        .arg("--dir")
        .arg(dir)
        .args([
            "--keys",
            "2000",
            "--min-run-ms",
            "20",
            "--max-run-ms",
            "150",
        ])
        .args(extra)
        .output()
        .expect("rialto runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn engine_kill_loop_with_kill_points_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let o = stress(
        dir.path(),
        &[
            "--cycles",
            "12",
            "--seed",
            "11",
            "--kill-points-one-in",
            "200",
        ],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("cycles 12 ("), "{t}");
    assert!(t.contains("lost 0, phantom 0"), "{t}");
    assert!(t.contains("recovery ms: p50"), "{t}");
}

/// Every TRIAD technique on from the first flush: kills land in hot-key re-logging,
/// commit-log flushes and deferred compactions, with kill points armed.
#[test]
fn engine_kill_loop_with_every_triad_technique_on_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let o = stress(
        dir.path(),
        &[
            "--cycles",
            "12",
            "--seed",
            "12",
            "--kill-points-one-in",
            "200",
            "--triad",
            "on",
            "--write-buffer-size",
            "65536",
        ],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("lost 0, phantom 0"), "{t}");
}

#[test]
fn resp_kill_loop_loses_nothing_in_every_durability_mode() {
    for mode in ["always", "no"] {
        let dir = tempfile::tempdir().unwrap();
        let o = stress(
            dir.path(),
            &[
                "--mode",
                "resp",
                "--cycles",
                "3",
                "--seed",
                "5",
                "--durability",
                mode,
            ],
        );
        let t = text(&o);
        assert!(o.status.success(), "{mode}: {t}");
        assert!(t.contains("lost 0, phantom 0"), "{mode}: {t}");
    }
}

/// Power losses that tear unsynced writes in every way a disk can (a prefix, any subset of
/// sectors, a torn sector): every restart succeeds and keeps every acknowledged write.
#[test]
fn power_loss_loop_restarts_every_time_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let o = stress(
        dir.path(),
        &["--mode", "power", "--cycles", "40", "--seed", "3"],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("cycles 40 (power losses: "), "{t}");
    assert!(t.contains("scattered"), "{t}");
    assert!(
        t.contains("lost 0, phantom 0, torn multi-key writes 0; failed restarts 0"),
        "{t}"
    );
}

#[test]
fn power_mode_refuses_what_it_cannot_check() {
    let dir = tempfile::tempdir().unwrap();
    for extra in [&["--durability", "everysec"][..], &["--resume"]] {
        let o = stress(dir.path(), &[&["--mode", "power"][..], extra].concat());
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: --mode power"), "{err}");
    }
}

#[test]
fn a_lost_acknowledged_write_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let o = stress(
        dir.path(),
        &["--cycles", "1", "--seed", "1", "--threads", "2"],
    );
    assert!(o.status.success(), "{}", text(&o));
    // Claim that key 0's write of version 1,000,000 was acknowledged (slot layout in
    // src/cmd/stress/expected.rs): the database cannot hold it, so it was "lost".
    let path = dir.path().join("expected");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[1024..1032].copy_from_slice(&(1_000_000u64 << 1).to_le_bytes());
    std::fs::write(&path, bytes).unwrap();
    let o = stress(
        dir.path(),
        &["--cycles", "1", "--seed", "1", "--threads", "2", "--resume"],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(t.contains("VIOLATION") && t.contains("lost: key 0"), "{t}");
}

#[test]
fn bad_arguments_get_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let o = stress(dir.path(), &["--threads", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: --threads"), "{err}");
}
