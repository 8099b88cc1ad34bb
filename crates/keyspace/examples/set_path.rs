//! The write path of a SET, from the op to the memtable, without the network or the disk's
//! syncs: `rounds` groups of `group` SETs of 100-byte values, each group queued then executed
//! as one merger group (as a connection thread does), with durability `no`. With `hset` as
//! the third argument, HSETs of one field each into one hash (`myhash element:N`, as
//! redis-benchmark's hset test writes) instead. Run under `valgrind --tool=callgrind` to count
//! the instructions each step costs:
//!
//! ```text
//! cargo build --release -p rialto-keyspace --example set_path
//! valgrind --tool=callgrind target/release/examples/set_path 20000 16 [set|hset]
//! ```

use std::sync::Arc;

use bytes::Bytes;
use rialto_io::{Clock, SystemClock};
use rialto_keyspace::{HashOp, Keyspace, KeyspaceOptions, Op, OpKind, Set};

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let group: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(16);
    let hset = args.next().as_deref() == Some("hset");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let ks = Keyspace::open(
        &dir.path().join("db"),
        KeyspaceOptions {
            engine: rialto_lsm::Options {
                clock,
                ..rialto_lsm::Options::default()
            },
            merger: rialto_txn::MergerOptions {
                durability: rialto_txn::Durability::Never,
                inline_execution: true,
                ..rialto_txn::MergerOptions::default()
            },
            stores: rialto_keyspace::StoreOptions {
                push_memory_limit: 1 << 20,
                push_tmp_dir: dir.path().join("push-tmp"),
                push_threads: 1,
                push_nice: rialto_io::ThreadPriority::Nice(0),
                push_page_cache: rialto_keyspace::PushPageCache::All,
                push_guard: rialto_keyspace::PushGuard::default(),
                partitions: 1,
            },
        },
    )
    .expect("open");
    let value = Bytes::from(vec![b'x'; 100]);
    let now = ks.now_ms();
    let start = std::time::Instant::now();
    for r in 0..rounds {
        let handles: Vec<_> = (0..group)
            .map(|i| {
                let n = (r * group + i) % 1_000_000;
                let kind = if hset {
                    OpKind::Hash(HashOp::Set {
                        key: Bytes::from_static(b"myhash"),
                        pairs: vec![(Bytes::from(format!("element:{n:012}")), value.clone())],
                        ok: false,
                    })
                } else {
                    OpKind::Set(Set {
                        key: Bytes::from(format!("key:{n:012}")),
                        value: value.clone(),
                        expire_at_ms: None,
                        keep_ttl: false,
                        cond: None,
                        get: false,
                    })
                };
                let op = Op::new(0, now, kind);
                ks.enqueue(op, |r, _| r.is_ok())
            })
            .collect();
        ks.run_queued();
        for h in handles {
            assert!(h.wait().expect("committed"), "applied");
        }
    }
    let n = rounds * group;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{n} {} in groups of {group}: {:.0} ns each ({:.0}/s)",
        if hset { "HSETs" } else { "SETs" },
        secs * 1e9 / n as f64,
        n as f64 / secs
    );
    ks.close().expect("close");
}
