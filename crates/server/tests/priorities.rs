//! Push threads run at `push-nice`, connection threads at the default priority. A test binary
//! of its own: thread names are the same for every server, so no other test's server may
//! share the process.

mod common;

use std::time::{Duration, Instant};

use rialto_io::ThreadPriority;

/// (thread id, name) of every thread of this process.
fn threads() -> Vec<(libc::pid_t, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(tid) = e.file_name().to_string_lossy().parse::<libc::pid_t>() else {
            continue;
        };
        if let Ok(name) = std::fs::read_to_string(e.path().join("comm")) {
            out.push((tid, name.trim().to_string()));
        }
    }
    out
}

/// (scheduling policy, niceness) of thread `tid`.
fn priority(tid: libc::pid_t) -> (i32, i32) {
    // SAFETY: both calls only read the scheduler's view of a thread of this process.
    unsafe {
        (
            libc::sched_getscheduler(tid),
            libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t),
        )
    }
}

#[test]
fn push_threads_run_at_push_nice_and_connection_threads_do_not() {
    // Where SCHED_IDLE is refused, push threads fall back to niceness 19.
    let idle_allowed =
        std::thread::spawn(|| rialto_io::set_thread_priority(ThreadPriority::Idle).is_ok())
            .join()
            .unwrap();
    let want_push = if idle_allowed {
        (libc::SCHED_IDLE, 0)
    } else {
        (libc::SCHED_OTHER, 19)
    };
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start_with(dir.path(), |c| {
        c.push_nice = ThreadPriority::Idle;
        c.push_threads = 2;
    });
    // Each thread sets its priority first thing after it starts.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ts = threads();
        let of = |prefix: &str| -> Vec<(i32, i32)> {
            ts.iter()
                .filter(|(_, n)| n.starts_with(prefix))
                .map(|(t, _)| priority(*t))
                .collect()
        };
        let (ingest, bulk, conn) = (of("rialto-ingest-"), of("rialto-bulk"), of("rialto-conn-"));
        let settled = ingest.len() == 2
            && bulk.len() == 1
            && conn.len() == 2
            && ingest.iter().chain(&bulk).all(|p| *p == want_push);
        if settled {
            assert!(
                conn.iter().all(|p| *p == (libc::SCHED_OTHER, 0)),
                "{conn:?}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "ingest {ingest:?} bulk {bulk:?} conn {conn:?}, want {want_push:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    srv.shutdown().unwrap();
}
