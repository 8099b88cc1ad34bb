//! Disk failures seen through the server: after a failed journal sync, writes are refused with
//! Redis's MISCONF class, nothing unacknowledged becomes visible, reads keep working, /readyz
//! says why, and a restart recovers exactly the acknowledged writes.

mod common;

use std::sync::Arc;

use rialto_io::{CrashMode, Fault, FaultOp, FaultPlan, MemFs};

#[test]
fn a_failed_sync_turns_writes_into_misconf_errors_and_reads_keep_working() {
    let fs = MemFs::new();
    let dir = std::path::PathBuf::from("/db");
    let cfg = common::config(&dir);
    let srv = rialto_server::start_on(cfg.clone(), Arc::new(fs.clone())).unwrap();
    let mut s = common::raw(srv.addr);
    assert_eq!(common::exchange(&mut s, b"SET a 1\r\n", 5), b"+OK\r\n");
    // Every later sync of the journal fails.
    fs.add_fault(
        FaultPlan::new(FaultOp::Sync, 1, Fault::Eio)
            .persistent()
            .only_paths_containing(".log"),
    );
    let r = common::exchange(&mut s, b"SET b 2\r\n", 20);
    assert!(
        r.starts_with(b"-MISCONF "),
        "{}",
        String::from_utf8_lossy(&r)
    );
    let r = common::exchange(&mut s, b"SET c 3\r\n", 20);
    assert!(
        r.starts_with(b"-MISCONF "),
        "{}",
        String::from_utf8_lossy(&r)
    );
    // Reads work and never show the failed writes.
    assert_eq!(
        common::exchange(&mut s, b"GET a\r\nGET b\r\n", 12),
        b"$1\r\n1\r\n$-1\r\n"
    );
    let info = common::exchange(&mut s, b"INFO rialto_engine\r\n", 4096);
    assert!(
        String::from_utf8_lossy(&info).contains("read_only:engine is read-only")
            || String::from_utf8_lossy(&info).contains("read_only:I/O error"),
        "{}",
        String::from_utf8_lossy(&info)
    );
    drop(s);
    // Shutdown reports that not everything could be made durable.
    assert!(srv.shutdown().is_err());

    fs.clear_faults();
    fs.crash(CrashMode::DropUnsynced);
    let srv = rialto_server::start_on(cfg, Arc::new(fs.clone())).unwrap();
    let mut s = common::raw(srv.addr);
    assert_eq!(
        common::exchange(&mut s, b"GET a\r\nGET b\r\nGET c\r\n", 17),
        b"$1\r\n1\r\n$-1\r\n$-1\r\n"
    );
    srv.shutdown().unwrap();
}
