//! A second process opening a database directory gets a clear "locked" error.
//!
//! The test re-runs its own binary as the second process: with `RIALTO_LOCK_CHILD_DIR` set,
//! `child_opens_locked_directory` opens that directory and reports what happened on stdout.

use std::process::Command;

use rialto_engine::Error;
use rialto_lsm::{Db, Options};

const CHILD_ENV: &str = "RIALTO_LOCK_CHILD_DIR";

#[test]
fn second_process_gets_locked_error() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return; // running as the child of the other test
    }
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_opens_locked_directory",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {stdout}");
    assert!(
        stdout.contains("CHILD: locked:") && stdout.contains("is locked by another process"),
        "{stdout}"
    );
    drop(db);
    // Once the first process lets go, the directory opens again.
    Db::open(dir.path(), Options::default()).unwrap();
}

#[test]
fn child_opens_locked_directory() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return; // only meaningful as the child process
    };
    match Db::open(&dir, Options::default()) {
        Err(e @ Error::Locked(_)) => println!("CHILD: locked: {e}"),
        Err(e) => println!("CHILD: other error: {e}"),
        Ok(_) => println!("CHILD: opened a locked directory"),
    }
}
