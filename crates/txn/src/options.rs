//! Options of the transaction merger. Every option states its default and trade-off.

use std::time::Duration;

/// When a write is acknowledged, and what a crash can take back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Default. A write is acknowledged, and becomes visible to readers, only after an
    /// `fdatasync` of the journal covered it. A crash (process, kernel or power) loses nothing
    /// acknowledged and no reader ever saw a write that a crash took back.
    #[default]
    Always,
    /// Acknowledged and visible once written to the operating system; the journal is synced
    /// about once a second. A process crash loses nothing; a kernel crash or power loss loses
    /// up to the last second of acknowledged writes (Redis `appendfsync everysec`).
    EverySec,
    /// Acknowledged and visible once written to the operating system; never synced by the
    /// merger (the kernel writes back dirty pages within about 30 s on Linux defaults, and a
    /// memtable switch or clean shutdown syncs). A process crash loses nothing; a kernel crash
    /// or power loss can lose every write since the last of those (Redis `appendfsync no`).
    Never,
}

impl Durability {
    /// Parses the Redis `appendfsync` names `always`, `everysec`, `no`.
    pub fn parse(s: &str) -> Option<Durability> {
        match s.to_ascii_lowercase().as_str() {
            "always" => Some(Durability::Always),
            "everysec" => Some(Durability::EverySec),
            "no" | "never" => Some(Durability::Never),
            _ => None,
        }
    }

    /// The Redis `appendfsync` name.
    pub fn name(self) -> &'static str {
        match self {
            Durability::Always => "always",
            Durability::EverySec => "everysec",
            Durability::Never => "no",
        }
    }
}

/// Options of a [`crate::Merger`].
#[derive(Debug, Clone)]
pub struct MergerOptions {
    /// Durability of acknowledged writes. Default [`Durability::Always`].
    pub durability: Durability,
    /// A group is closed once its merged batch reaches this many bytes. Default 4 MiB.
    /// Larger: fewer journal writes under bulk load; a small write queued behind a big group
    /// waits for the big group's write.
    pub max_group_bytes: usize,
    /// A group is closed after this many transactions. Default 4096.
    pub max_group_txns: usize,
    /// Longest a sync waits for more transactions to join it. Default 100 µs. The sync starts
    /// as soon as as many transactions arrived as the previous sync acknowledged (the writers
    /// it released are likely to come back), so this only bounds the wait when they do not.
    /// Zero: every sync starts at once, and with several writers about half of them ride on
    /// each sync instead of all. Larger: more writes per sync, more latency for a lone writer
    /// whose peers went idle.
    pub max_wait: Duration,
    /// Journal bytes logged but not yet durable before the merger waits for the sync.
    /// Default 64 MiB. Bounds the memory of pending acknowledgements and the work a failed
    /// sync throws away.
    pub max_unsynced_bytes: usize,
    /// Interval of the background sync with [`Durability::EverySec`]. Default 1 s.
    pub sync_interval: Duration,
    /// How long the merger and syncer threads keep polling (yielding the CPU between polls)
    /// for work before they sleep. Default 50 µs. A sleeping thread takes 10-15 µs to wake
    /// here, and a commit hands off twice, so polling cuts durable-write latency; it costs
    /// CPU time while writers are active (never when idle). Zero: always sleep.
    pub spin: Duration,
    /// How long a thread waiting on durability polls (yielding the CPU between polls)
    /// before it sleeps: a writer blocked in [`crate::CommitHandle::wait`], and whoever holds
    /// the syncer's role while it gathers arrivals (`max_wait`). Default 300 µs, about one
    /// fdatasync plus the writers' return here. During an fdatasync every writer waits; once
    /// they all slept, both CPUs of this VM idled, and waking them (writer after writer, then
    /// the gatherer) left ~100 µs between one sync's end and the next one's start. Polling
    /// keeps them running: at 8 blocking writers on 2 cores durable writes went from 30.7K to
    /// 49K/s, at 64 from 86K to 149K (`probe` example). Costs CPU while writers wait, at most
    /// this long per wait, never when idle; async waiters (the server's connections) never
    /// poll. Zero: always sleep.
    pub wait_spin: Duration,
    /// A poll's yield that took at least this long (times the merger's waiting threads per
    /// core, which take turns) was preempted: another thread (a compaction, another
    /// process) held the CPU for its time slice, and polling then costs a commit that
    /// slice. Polling (`spin`, `wait_spin`) stops for a cooldown of 10 ms, doubled
    /// while the contention lasts. Default 500 µs: a yield among the merger's own threads
    /// returns within tens of µs, a preempted one after 1-4 ms. Measured with 4 blocking
    /// writers beside one CPU-bound thread on 2 cores: commit p99 4.0 ms polling regardless,
    /// 0.76 ms sleeping. Zero: never stop polling.
    pub poll_preempted_after: Duration,
    /// Longest cooldown of polling after preempted yields. Default 1 s. Each probe after a
    /// cooldown costs the probing threads one time slice if the CPU is still contended, so a
    /// longer cooldown costs less under steady contention and resumes polling later after it.
    pub poll_max_cooldown: Duration,
    /// Execute groups on the submitting thread instead of a merger thread. Default false.
    /// A submitter that finds no group executing runs every queued transaction itself (flat
    /// combining) and writes the group to the journal; others only queue. This removes a
    /// thread hand-off per group, which dominates when writers are many small requests on
    /// few cores (a server), at the price that a submitter can be held up by others' work and
    /// by write stalls. Either way a thread blocked in `CommitHandle::wait` syncs when no
    /// other thread is syncing (see `Merger`), so a lone blocking writer with inline
    /// execution commits without any hand-off. A transaction queued as long
    /// (`Merger::enqueue_long`, a script) is the exception: a merger thread kept for them
    /// executes it and what is queued after it.
    pub inline_execution: bool,
}

impl Default for MergerOptions {
    fn default() -> Self {
        MergerOptions {
            durability: Durability::Always,
            max_group_bytes: 4 << 20,
            max_group_txns: 4096,
            max_wait: Duration::from_micros(100),
            max_unsynced_bytes: 64 << 20,
            sync_interval: Duration::from_secs(1),
            spin: Duration::from_micros(50),
            wait_spin: Duration::from_micros(300),
            poll_preempted_after: Duration::from_micros(500),
            poll_max_cooldown: Duration::from_secs(1),
            inline_execution: false,
        }
    }
}
