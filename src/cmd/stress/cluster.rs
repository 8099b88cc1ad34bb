//! Cluster mode: faults injected into a local cluster on Kafka (3 brokers, 3 nodes, started
//! with `scripts/cluster.sh`) while writer threads increment counters in every partition
//! through MOVED redirections, each thread its own way: INCR, a script, MULTI/INCR/EXEC, or
//! WATCH/GET/MULTI/SET/EXEC (a read-modify-write that a stale read would make lose updates);
//! four threads, the default, cover them all. Each cycle kills (SIGKILL) or stalls (SIGSTOP
//! past the node timeout) the master of a random partition, or kills a broker, then repairs
//! it and checks every counter: its value is at least the increments acknowledged and at
//! most those plus the ones whose outcome was unknown, and every replica holds the master's
//! value. The time from the fault to the first write acknowledged after it in the partition
//! hit is the cycle's write outage.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rialto_cluster::slot;
use rialto_killpoint::splitmix64;
use rialto_resp::Reply;

use super::super::stores_backend::{BackendError, Remote};
use super::StressError;

const NODES: u32 = 3;
const PARTITIONS: u32 = 3;
const BASE_PORT: u16 = 7400;
/// Stall of a master: past the nodes' 3 s timeout, so the group replaces it.
const STALL: Duration = Duration::from_secs(6);

/// One counter: its key (in partition `partition`), increments acknowledged and unknown.
struct Counter {
    key: String,
    partition: u32,
    acked: u64,
    unknown: u64,
    /// When its first increment after the fault was acknowledged.
    first_after: Option<Instant>,
    /// Its value when the cycle began.
    base: u64,
    way: Way,
}

/// A connection per address, following MOVED.
struct Client {
    conns: HashMap<String, Remote>,
    slots: HashMap<u16, String>,
    seed: String,
    /// The node asked last when no address is known for a slot.
    turn: u32,
}

/// How a counter is incremented: each reaches the log differently.
#[derive(Clone, Copy, Debug)]
enum Way {
    Incr,
    Script,
    Multi,
    Watch,
}

const WAYS: [Way; 4] = [Way::Incr, Way::Script, Way::Multi, Way::Watch];

enum Outcome {
    Acked,
    /// Not applied: redirected, refused before the log, or skipped by the log.
    Refused,
    /// It may have been applied.
    Unknown,
}

impl Client {
    fn new(seed: &str) -> Client {
        Client {
            conns: HashMap::new(),
            slots: HashMap::new(),
            seed: seed.to_owned(),
            turn: 0,
        }
    }

    /// Where to send a request for `slot`: the address MOVED named last, else the nodes in
    /// turn (a stalled node still accepts connections: always asking the same one first
    /// would keep a writer on it).
    fn addr_for(&mut self, slot: u16) -> String {
        if let Some(a) = self.slots.get(&slot) {
            return a.clone();
        }
        for _ in 0..NODES {
            self.turn = (self.turn + 1) % NODES;
            let a = format!("127.0.0.1:{}", BASE_PORT + 100 * self.turn as u16);
            if self.conn(&a).is_ok() {
                return a;
            }
        }
        self.seed.clone()
    }

    fn conn(&mut self, addr: &str) -> Result<&mut Remote, String> {
        if !self.conns.contains_key(addr) {
            let c = Remote::connect(addr).map_err(|e| e.to_string())?;
            // A stalled node must not hold a writer longer than a failover takes: past this the
            // write counts as unknown and the writer moves on.
            c.set_read_timeout(Duration::from_secs(2))
                .map_err(|e| e.to_string())?;
            self.conns.insert(addr.to_owned(), c);
        }
        self.conns
            .get_mut(addr)
            .ok_or_else(|| "no connection".to_owned())
    }

    /// One request; an error reply comes back as `Ok(Reply::Error)`, a broken connection as
    /// `Err` (and is dropped).
    fn call(&mut self, addr: &str, args: &[&[u8]]) -> Result<Reply, String> {
        match self.conn(addr)?.call(args) {
            Ok(r) => Ok(r),
            Err(BackendError::Store(e)) => Ok(Reply::Error(e.into())),
            Err(e) => {
                self.conns.remove(addr);
                Err(e.to_string())
            }
        }
    }

    /// `Err(true)`: the request may have reached the node; `Err(false)`: it was not sent.
    fn send(&mut self, addr: &str, args: &[&[u8]]) -> Result<Reply, bool> {
        if self.conn(addr).is_err() {
            return Err(false);
        }
        self.call(addr, args).map_err(|_| true)
    }

    /// One increment of `key` made `way`, following MOVED at most a few times.
    fn incr(&mut self, key: &str, way: Way) -> Outcome {
        let s = slot::key_slot(key.as_bytes());
        for _ in 0..5 {
            let addr = self.addr_for(s);
            let k = key.as_bytes();
            let sent = match way {
                Way::Incr => self.send(&addr, &[b"INCR", k]),
                Way::Script => self.send(
                    &addr,
                    &[b"EVAL", b"return redis.call('INCR', KEYS[1])", b"1", k],
                ),
                Way::Multi => self.transaction(&addr, key, false),
                Way::Watch => self.transaction(&addr, key, true),
            };
            match sent {
                Ok(Reply::Integer(_)) => return Outcome::Acked,
                Ok(Reply::Array(replies)) => {
                    return if replies.iter().any(|r| matches!(r, Reply::Error(_))) {
                        Outcome::Refused
                    } else {
                        Outcome::Acked
                    }
                }
                // A watched key changed (or may have): nothing ran.
                Ok(Reply::Null | Reply::NullArray) => return Outcome::Refused,
                Ok(Reply::Error(e)) => {
                    let e = String::from_utf8_lossy(&e).into_owned();
                    if let Some(to) = e.strip_prefix("MOVED ") {
                        if let Some((_, a)) = to.split_once(' ') {
                            self.slots.insert(s, a.to_owned());
                            continue;
                        }
                    }
                    if e.contains("may still be applied") {
                        return Outcome::Unknown;
                    }
                    return Outcome::Refused;
                }
                Ok(_) => return Outcome::Unknown,
                Err(sent) => {
                    self.slots.remove(&s);
                    // Sent: it may have reached the node before the connection broke.
                    return if sent {
                        Outcome::Unknown
                    } else {
                        Outcome::Refused
                    };
                }
            }
        }
        Outcome::Refused
    }

    /// MULTI, INCR `key`, EXEC on `addr`; with `watch`, WATCH and GET first and a SET of the
    /// value read plus one instead of INCR. What comes back is EXEC's reply, or the first
    /// refusal (the transaction is then dropped). `Err(true)` only once EXEC was sent.
    fn transaction(&mut self, addr: &str, key: &str, watch: bool) -> Result<Reply, bool> {
        let k = key.as_bytes();
        let ok = |r: &Reply| matches!(r, Reply::Simple(_));
        let mut set_to = None;
        if watch {
            match self.send(addr, &[b"WATCH", k]) {
                Ok(r) if ok(&r) => {}
                Ok(other) => return Ok(other),
                Err(_) => return Err(false),
            }
            let read = match self.send(addr, &[b"GET", k]) {
                Ok(Reply::Bulk(b)) => std::str::from_utf8(&b)
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok()),
                Ok(Reply::Null) => Some(0),
                Ok(other) => {
                    let _ = self.send(addr, &[b"UNWATCH"]);
                    return Ok(other);
                }
                Err(_) => return Err(false),
            };
            let Some(v) = read else {
                let _ = self.send(addr, &[b"UNWATCH"]);
                return Ok(Reply::Error("not a counter".into()));
            };
            set_to = Some((v + 1).to_string());
        }
        match self.send(addr, &[b"MULTI"]) {
            Ok(r) if ok(&r) => {}
            Ok(other) => return Ok(other),
            Err(_) => return Err(false),
        }
        let queued = match &set_to {
            None => self.send(addr, &[b"INCR", k]),
            Some(v) => self.send(addr, &[b"SET", k, v.as_bytes()]),
        };
        match queued {
            Ok(r) if ok(&r) => {}
            Ok(other) => {
                let _ = self.send(addr, &[b"DISCARD"]);
                return Ok(other);
            }
            Err(_) => return Err(false),
        }
        self.send(addr, &[b"EXEC"])
    }

    /// GET through the master, following MOVED and waiting out TRYAGAIN (at most 30 s).
    fn get_routed(&mut self, key: &str) -> Result<u64, String> {
        let s = slot::key_slot(key.as_bytes());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let addr = self.addr_for(s);
            match self.get(&addr, key, false) {
                Ok(v) => return Ok(v),
                Err(e) if Instant::now() > deadline => return Err(e),
                Err(e) => {
                    if let Some(to) = e.strip_prefix("MOVED ") {
                        if let Some((_, a)) = to.split_once(' ') {
                            self.slots.insert(s, a.to_owned());
                            continue;
                        }
                    }
                    self.slots.remove(&s);
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    fn get(&mut self, addr: &str, key: &str, readonly: bool) -> Result<u64, String> {
        if readonly {
            self.call(addr, &[b"READONLY"])?;
        }
        match self.call(addr, &[b"GET", key.as_bytes()])? {
            Reply::Bulk(b) => std::str::from_utf8(&b)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| "not a number".to_owned()),
            Reply::Null => Ok(0),
            Reply::Error(e) => Err(String::from_utf8_lossy(&e).into_owned()),
            other => Err(format!("GET replied {other:?}")),
        }
    }
}

/// Addresses of each partition: master first.
fn layout(seed: &str) -> Result<Vec<Vec<String>>, String> {
    let mut c = Client::new(seed);
    let Reply::Array(ranges) = c.call(seed, &[b"CLUSTER", b"SLOTS"])? else {
        return Err("CLUSTER SLOTS is not an array".into());
    };
    let mut out = vec![Vec::new(); PARTITIONS as usize];
    for r in ranges {
        let Reply::Array(items) = r else { continue };
        let Some(Reply::Integer(lo)) = items.first() else {
            continue;
        };
        let p = slot::partition_of(*lo as u16, PARTITIONS) as usize;
        for node in items.iter().skip(2) {
            if let Reply::Array(n) = node {
                if let (Some(Reply::Bulk(h)), Some(Reply::Integer(port))) = (n.first(), n.get(1)) {
                    out[p].push(format!("{}:{port}", String::from_utf8_lossy(h)));
                }
            }
        }
    }
    if out.iter().any(Vec::is_empty) {
        return Err("a partition has no master".into());
    }
    Ok(out)
}

fn node_of(addr: &str) -> u32 {
    let port: u32 = addr
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    port.saturating_sub(u32::from(BASE_PORT)) / 100 + 1
}

fn script(repo: &Path, args: &[&str]) -> Result<(), StressError> {
    let out = Command::new("bash")
        .arg(repo.join("scripts").join(args[0]))
        .args(&args[1..])
        .output()
        .map_err(|e| StressError::Io(format!("{}: {e}", args[0])))?;
    if !out.status.success() {
        return Err(StressError::Engine(format!(
            "{} {} failed: {}",
            args[0],
            args[1],
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )));
    }
    Ok(())
}

/// Sends `sig` to node `node` of the cluster in `cdir`.
fn signal(repo: &Path, cdir: &str, node: &str, sig: &str) -> Result<(), StressError> {
    script(
        repo,
        &[
            "cluster.sh",
            "kill-node",
            node,
            "--dir",
            cdir,
            "--signal",
            sig,
        ],
    )
}

/// Runs `cycles` fault cycles; see the module docs.
pub fn run(
    dir: &Path,
    cycles: u64,
    threads: u32,
    seed: u64,
    faults: &str,
) -> Result<(), StressError> {
    let repo = std::env::var_os("RIALTO_REPO")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    if !repo.join("scripts/cluster.sh").exists() {
        return Err(StressError::Usage(
            "--mode cluster runs scripts/cluster.sh: run it from the repository or set RIALTO_REPO"
                .into(),
        ));
    }
    let faults: Vec<&str> = faults.split(',').collect();
    if faults
        .iter()
        .any(|f| !matches!(*f, "kill" | "stop" | "broker"))
    {
        return Err(StressError::Usage(
            "--faults takes kill, stop and broker".into(),
        ));
    }
    let exe = std::env::current_exe().map_err(|e| StressError::Io(e.to_string()))?;
    let cdir = dir.join("cluster");
    let cdir_s = cdir.display().to_string();
    let base = BASE_PORT.to_string();
    println!("stress: starting 3 brokers and {NODES} nodes in {cdir_s}");
    script(
        &repo,
        &[
            "cluster.sh",
            "up",
            "--dir",
            &cdir_s,
            "--base-port",
            &base,
            "--bin",
            &exe.display().to_string(),
        ],
    )?;
    let result = cycles_loop(&repo, &cdir_s, cycles, threads, seed, &faults);
    if result.is_err() {
        // What each node believed when the check failed, before the cluster goes down.
        for i in 0..NODES {
            let addr = format!("127.0.0.1:{}", BASE_PORT + 100 * i as u16);
            let mut c = Client::new(&addr);
            if let Ok(Reply::Bulk(b) | Reply::Verbatim { text: b, .. }) =
                c.call(&addr, &[b"INFO", b"cluster"])
            {
                eprintln!(
                    "node {} INFO cluster:\n{}",
                    i + 1,
                    String::from_utf8_lossy(&b)
                );
            }
        }
    }
    let _ = script(&repo, &["cluster.sh", "down", "--dir", &cdir_s]);
    result
}

fn cycles_loop(
    repo: &Path,
    cdir: &str,
    cycles: u64,
    threads: u32,
    seed: u64,
    faults: &[&str],
) -> Result<(), StressError> {
    let seed_addr = format!("127.0.0.1:{BASE_PORT}");
    let mut rng = seed;
    // Counters: `threads` per partition, each written by one thread, thread t's all
    // incremented the `t`-th way (a round of a thread stays short, so every counter is tried
    // again soon after a fault).
    let mut counters = Vec::new();
    for p in 0..PARTITIONS {
        let (lo, hi) = slot::slot_range(p, PARTITIONS);
        let mut found = 0;
        for i in 0u64.. {
            let key = format!("stress:{seed}:{i}");
            let s = slot::key_slot(key.as_bytes());
            if (lo..=hi).contains(&s) {
                counters.push(Counter {
                    key,
                    partition: p,
                    acked: 0,
                    unknown: 0,
                    first_after: None,
                    base: 0,
                    way: WAYS[found as usize % WAYS.len()],
                });
                found += 1;
                if found == threads {
                    break;
                }
            }
        }
    }
    let counters: Vec<Arc<Mutex<Counter>>> = counters
        .into_iter()
        .map(|c| Arc::new(Mutex::new(c)))
        .collect();
    let mut outages = Vec::new();
    let (mut total_acked, mut total_unknown) = (0u64, 0u64);
    for cycle in 1..=cycles {
        let stop = Arc::new(AtomicBool::new(false));
        let fault_at: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
        let mut handles = Vec::new();
        for t in 0..threads {
            let mine: Vec<_> = counters
                .iter()
                .enumerate()
                .filter(|(i, _)| *i as u32 % threads == t)
                .map(|(_, c)| Arc::clone(c))
                .collect();
            let stop = Arc::clone(&stop);
            let seed_addr = seed_addr.clone();
            let fault_at = Arc::clone(&fault_at);
            handles.push(std::thread::spawn(move || {
                let mut client = Client::new(&seed_addr);
                while !stop.load(Ordering::Acquire) {
                    for c in &mine {
                        let (key, way) = c
                            .lock()
                            .map(|c| (c.key.clone(), c.way))
                            .unwrap_or((String::new(), Way::Incr));
                        let outcome = client.incr(&key, way);
                        let now = Instant::now();
                        if let Ok(mut c) = c.lock() {
                            match outcome {
                                Outcome::Acked => {
                                    c.acked += 1;
                                    let fault = fault_at.lock().ok().and_then(|f| *f);
                                    if fault.is_some_and(|f| now > f) && c.first_after.is_none() {
                                        c.first_after = Some(now);
                                    }
                                }
                                Outcome::Unknown => c.unknown += 1,
                                Outcome::Refused => {}
                            }
                        }
                        if !matches!(outcome, Outcome::Acked) {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                    }
                }
            }));
        }
        std::thread::sleep(Duration::from_millis(1000 + splitmix64(&mut rng) % 2000));
        let lay = layout(&seed_addr).map_err(StressError::Engine)?;
        let fault = faults[(splitmix64(&mut rng) % faults.len() as u64) as usize];
        let partition = (splitmix64(&mut rng) % u64::from(PARTITIONS)) as u32;
        let node = node_of(&lay[partition as usize][0]).to_string();
        for c in &counters {
            if let Ok(mut c) = c.lock() {
                c.first_after = None;
            }
        }
        // The outage runs from just before the fault to the first write acknowledged once it
        // took effect (the writes acknowledged while the script starts do not count).
        let fault_instant = Instant::now();
        let took_effect = || {
            if let Ok(mut f) = fault_at.lock() {
                *f = Some(Instant::now());
            }
        };
        let what = match fault {
            "kill" => {
                signal(repo, cdir, &node, "KILL")?;
                took_effect();
                std::thread::sleep(Duration::from_secs(6));
                script(repo, &["cluster.sh", "start-node", &node, "--dir", cdir])?;
                format!("kill -9 of node {node}, master of partition {partition}")
            }
            "stop" => {
                signal(repo, cdir, &node, "STOP")?;
                took_effect();
                std::thread::sleep(STALL);
                signal(repo, cdir, &node, "CONT")?;
                format!(
                    "SIGSTOP of node {node} for {} s, master of partition {partition}",
                    STALL.as_secs()
                )
            }
            _ => {
                let broker = (1 + splitmix64(&mut rng) % 3).to_string();
                let kdir = format!("{cdir}/kafka");
                script(repo, &["kafka.sh", "kill-broker", &broker, "--dir", &kdir])?;
                took_effect();
                std::thread::sleep(Duration::from_secs(5));
                script(repo, &["kafka.sh", "start-broker", &broker, "--dir", &kdir])?;
                format!("kill -9 of broker {broker}")
            }
        };
        std::thread::sleep(Duration::from_secs(1));
        stop.store(true, Ordering::Release);
        for h in handles {
            let _ = h.join();
        }
        // The partition hit: from the fault to the first write acknowledged after it, for
        // the slowest of its counters.
        let mut outage = Duration::ZERO;
        for c in counters.iter().filter_map(|c| c.lock().ok()) {
            if fault != "broker" && c.partition != partition {
                continue;
            }
            match c.first_after {
                Some(t) => outage = outage.max(t - fault_instant),
                None => {
                    return Err(StressError::Engine(format!(
                        "cycle {cycle}: {what}: no increment of {} acknowledged after the fault ({} acknowledged, {} unknown in all)",
                        c.key, c.acked, c.unknown
                    )))
                }
            }
        }
        if fault != "broker" {
            outages.push(outage);
        }
        // Check every counter on its master, then on every replica once it caught up.
        let lay = wait_layout(&seed_addr)?;
        let mut client = Client::new(&seed_addr);
        let (mut acked, mut unknown) = (0, 0);
        for c in &counters {
            let mut c = c
                .lock()
                .map_err(|_| StressError::Engine("a writer panicked".into()))?;
            let addrs = &lay[c.partition as usize];
            let value = client.get_routed(&c.key).map_err(StressError::Engine)?;
            if value < c.acked || value > c.acked + c.unknown {
                return Err(StressError::Violation(format!(
                    "cycle {cycle}: {} holds {value}, but {} increments were acknowledged and {} unknown",
                    c.key, c.acked, c.unknown
                )));
            }
            for replica in &addrs[1..] {
                let deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    let v = client.get(replica, &c.key, true);
                    if v.as_ref().is_ok_and(|v| *v == value) {
                        break;
                    }
                    if Instant::now() > deadline {
                        return Err(StressError::Violation(format!(
                            "cycle {cycle}: replica {replica} holds {v:?} for {}, the master {value}",
                            c.key
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            acked += c.acked - c.base;
            unknown += c.unknown;
            // What the unknown writes did is known now.
            c.acked = value;
            c.unknown = 0;
            c.base = value;
        }
        total_acked += acked;
        total_unknown += unknown;
        println!(
            "cycle {cycle}: {what}; write outage {:.2} s; {acked} increments acknowledged, {unknown} unknown; all counters and replicas check",
            outage.as_secs_f64()
        );
    }
    outages.sort();
    let median = outages.get(outages.len() / 2).copied().unwrap_or_default();
    let max = outages.last().copied().unwrap_or_default();
    println!(
        "stress: {cycles} cycles passed: 0 acknowledged writes lost ({total_acked} acknowledged, {total_unknown} unknown); write outage after a node fault median {:.2} s, max {:.2} s",
        median.as_secs_f64(),
        max.as_secs_f64()
    );
    Ok(())
}

/// The layout once every partition has a master again.
fn wait_layout(seed: &str) -> Result<Vec<Vec<String>>, StressError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match layout(seed) {
            Ok(l) if l.iter().all(|a| a.len() == NODES as usize) => return Ok(l),
            r if Instant::now() > deadline => {
                return Err(StressError::Engine(format!(
                    "the cluster did not recover: {r:?}"
                )))
            }
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}
