//! The Kafka wrapper against a real cluster: three brokers and a controller started with
//! `scripts/kafka.sh` (Kafka's jars fetched with Maven on first use). Skipped, with the reason
//! printed, where Java or Maven is missing.
//!
//! One test, in phases on the same cluster: 1000 records over 3 partitions (replication factor
//! 3, min.insync.replicas 2) read back in order; one broker killed and writes still
//! acknowledged by the two left; a second killed and writes refused for want of in-sync
//! replicas; both restarted and writes acknowledged again.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rialto_cluster::kafka::{
    Admin, ClientOptions, DeliveryError, Error, PartitionConsumer, Producer, ProducerOptions,
    Record, StartOffset, Written,
};

const TOPIC: &str = "rialto-log";
const PARTITIONS: u32 = 3;
const RECORDS: u32 = 1000;

struct Cluster {
    dir: PathBuf,
    bootstrap: String,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh")
}

fn have(program: &str, version_flag: &str) -> bool {
    Command::new(program)
        .arg(version_flag)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs the script and returns its stdout; panics with its stderr if it fails.
fn kafka_sh(args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(script())
        .args(args)
        .output()
        .expect("run bash");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprint!("{stderr}");
    assert!(out.status.success(), "kafka.sh {} failed", args.join(" "));
    String::from_utf8(out.stdout)
        .expect("utf-8 output")
        .trim()
        .to_owned()
}

/// A base port with it and the next three free (three brokers and the controller).
fn free_base_port() -> u16 {
    for _ in 0..100 {
        let base = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if base > 65000 {
            continue;
        }
        if (1..4).all(|i| TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return base;
        }
    }
    panic!("no four consecutive free ports on 127.0.0.1");
}

impl Cluster {
    /// Starts the cluster, or says why not and returns `None`.
    fn up() -> Option<Cluster> {
        for (program, flag) in [("java", "-version"), ("mvn", "--version")] {
            if !have(program, flag) {
                eprintln!(
                    "skipped: {program} not found (the Kafka cluster needs Java 17+ and Maven)"
                );
                return None;
            }
        }
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kafka-cluster");
        let dir_arg = dir.to_str().expect("utf-8 path").to_owned();
        if dir.join("cluster.env").exists() {
            // Left running by a run that was killed before it could stop it.
            kafka_sh(&["down", "--dir", &dir_arg]);
        }
        let port = free_base_port().to_string();
        let start = Instant::now();
        let bootstrap = kafka_sh(&[
            "up",
            "--brokers",
            "3",
            "--base-port",
            &port,
            "--dir",
            &dir_arg,
        ]);
        eprintln!(
            "cluster up in {:.1} s: {bootstrap}",
            start.elapsed().as_secs_f64()
        );
        Some(Cluster { dir, bootstrap })
    }

    fn run(&self, command: &str, broker: u32) {
        let start = Instant::now();
        kafka_sh(&[
            command,
            &broker.to_string(),
            "--dir",
            self.dir.to_str().unwrap(),
        ]);
        eprintln!("{command} {broker}: {:.1} s", start.elapsed().as_secs_f64());
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Not kafka_sh: a panic while unwinding would abort and hide the test's own failure.
        let status = Command::new("bash")
            .arg(script())
            .args(["down", "--dir", self.dir.to_str().unwrap()])
            .status();
        if !status.is_ok_and(|s| s.success()) {
            eprintln!(
                "kafka.sh down failed; stop the nodes by hand (kafka.sh status --dir {})",
                self.dir.display()
            );
        }
    }
}

/// Sends one record to every partition and waits for each; the results in partition order.
fn produce_each(producer: &Producer, tag: &str) -> Vec<Result<u64, DeliveryError>> {
    let deliveries: Vec<_> = (0..PARTITIONS)
        .map(|p| {
            producer
                .send(TOPIC, p, None, format!("{tag}-{p}").as_bytes())
                .expect("queue")
        })
        .collect();
    deliveries.into_iter().map(|d| d.wait()).collect()
}

/// The next record, waiting at most 30 s for it.
fn next_record(consumer: &PartitionConsumer) -> Record {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(r) = consumer.poll(Duration::from_millis(500)).expect("poll") {
            return r;
        }
        assert!(Instant::now() < deadline, "no record in 30 s");
    }
}

#[test]
fn replicated_log_survives_one_broker_down_and_refuses_writes_with_two() {
    let Some(cluster) = Cluster::up() else { return };
    let client = ClientOptions::new(cluster.bootstrap.clone());

    Admin::new(&client)
        .unwrap()
        .create_topic(TOPIC, PARTITIONS, 3, Duration::from_secs(30))
        .expect("create topic");
    assert!(matches!(
        Admin::new(&client)
            .unwrap()
            .create_topic(TOPIC, PARTITIONS, 3, Duration::from_secs(30)),
        Err(Error::TopicAlreadyExists)
    ));

    // Requests that wait on a dead follower are sent again every 3 s; refusals use up the
    // retries in about 8 s; both well within the delivery timeout.
    let mut options = ProducerOptions::new(client.clone());
    options.delivery_timeout = Duration::from_secs(40);
    options.request_timeout = Duration::from_secs(3);
    let producer = Producer::new(&options).unwrap();

    // 1000 records, round robin over the partitions, all in flight at once.
    let start = Instant::now();
    let deliveries: Vec<_> = (0..RECORDS)
        .map(|i| {
            let payload = format!("record-{i}");
            (
                i,
                producer
                    .send(
                        TOPIC,
                        i % PARTITIONS,
                        Some(&i.to_be_bytes()),
                        payload.as_bytes(),
                    )
                    .unwrap(),
            )
        })
        .collect();
    let mut sent: BTreeMap<u32, Vec<(u64, String)>> = BTreeMap::new();
    for (i, delivery) in deliveries {
        let offset = delivery.wait().expect("acknowledged");
        sent.entry(i % PARTITIONS)
            .or_default()
            .push((offset, format!("record-{i}")));
    }
    eprintln!(
        "{RECORDS} records acknowledged in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    for records in sent.values() {
        // Idempotent and in order: offsets 0, 1, 2, ... in send order, no gap, no duplicate.
        let offsets: Vec<u64> = records.iter().map(|r| r.0).collect();
        assert_eq!(offsets, (0..records.len() as u64).collect::<Vec<_>>());
    }

    let starts: Vec<_> = (0..PARTITIONS)
        .map(|p| (p, StartOffset::Earliest))
        .collect();
    let consumer = PartitionConsumer::new(&client, TOPIC, &starts).unwrap();
    let mut read: BTreeMap<u32, Vec<(u64, String)>> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut count = 0;
    while count < RECORDS {
        assert!(
            Instant::now() < deadline,
            "read {count} of {RECORDS} records in 60 s"
        );
        if let Some(r) = consumer.poll(Duration::from_millis(500)).expect("poll") {
            read.entry(r.partition)
                .or_default()
                .push((r.offset, String::from_utf8(r.payload).unwrap()));
            count += 1;
        }
    }
    assert_eq!(read, sent, "every partition read back in the order written");
    assert_eq!(
        consumer
            .watermarks(TOPIC, 0, Duration::from_secs(10))
            .unwrap(),
        (0, sent[&0].len() as u64)
    );
    // Reading from a stored offset starts there.
    let from = PartitionConsumer::new(&client, TOPIC, &[(1, StartOffset::At(100))]).unwrap();
    let first = next_record(&from);
    assert_eq!((first.partition, first.offset), (1, 100));
    assert_eq!(first.payload, sent[&1][100].1.as_bytes());
    drop(from);
    drop(consumer);

    // One broker crashes: two replicas of three are still in sync, enough for acks=all.
    cluster.run("kill-broker", 1);
    let start = Instant::now();
    for (p, result) in produce_each(&producer, "one-down").into_iter().enumerate() {
        let offset = result.unwrap_or_else(|e| panic!("partition {p} with one broker down: {e}"));
        assert_eq!(offset, sent[&(p as u32)].len() as u64);
    }
    eprintln!(
        "acknowledged with broker 1 down after {:.1} s",
        start.elapsed().as_secs_f64()
    );

    // A second one: a single replica left, below min.insync.replicas = 2.
    cluster.run("kill-broker", 2);
    let start = Instant::now();
    let mut refused = Vec::new();
    for (p, result) in produce_each(&producer, "two-down").into_iter().enumerate() {
        match result {
            Err(e) if matches!(e.error, Error::NotEnoughReplicas) => {
                eprintln!("partition {p}: {e}");
                refused.push(e.written);
            }
            other => panic!(
                "partition {p} with two brokers down: expected not enough replicas, got {other:?}"
            ),
        }
    }
    eprintln!(
        "refused with brokers 1 and 2 down after {:.1} s",
        start.elapsed().as_secs_f64()
    );

    // Both back: writes are acknowledged again once they have caught up.
    cluster.run("start-broker", 2);
    cluster.run("start-broker", 1);
    let start = Instant::now();
    let mut last = Vec::new();
    for (p, result) in produce_each(&producer, "all-back").into_iter().enumerate() {
        last.push(result.unwrap_or_else(|e| panic!("partition {p} after the restarts: {e}")));
    }
    eprintln!(
        "acknowledged after the restarts in {:.1} s",
        start.elapsed().as_secs_f64()
    );

    // A refused record said not written is not in the log; one that may have been written
    // may be there, committed once the replicas came back.
    for p in 0..PARTITIONS {
        let after_one_down = sent[&p].len() as u64 + 1;
        let consumer =
            PartitionConsumer::new(&client, TOPIC, &[(p, StartOffset::At(after_one_down))])
                .unwrap();
        let mut payloads = Vec::new();
        while payloads.last().map(|(o, _)| *o) != Some(last[p as usize]) {
            let r = next_record(&consumer);
            payloads.push((r.offset, String::from_utf8(r.payload).unwrap()));
        }
        let present = payloads.iter().any(|(_, v)| *v == format!("two-down-{p}"));
        eprintln!(
            "partition {p}: refused record {:?} written, {} in the log",
            refused[p as usize],
            if present { "present" } else { "absent" }
        );
        if refused[p as usize] == Written::No {
            assert!(
                !present,
                "partition {p}: a record refused as not written is in the log"
            );
        }
    }
}
