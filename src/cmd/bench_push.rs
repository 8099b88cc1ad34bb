//! `rialto bench-push`: a batch push end to end (read the input, sort, write, swap) against
//! RocksDB loading the same file by random puts and by SstFileWriter + ingest, alternating
//! engines over several rounds; prints medians and ratios.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rialto_keyspace::PushPageCache;
use rialto_push_input::{Format, InputSpec, RecordReader};

use super::stores_backend::{BackendError, Local};

/// Arguments of `rialto bench-push`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Records in the dataset.
    #[arg(long, default_value_t = 1_000_000)]
    pub records: u64,
    /// Key bytes (at least 16: a unique hex key, padded).
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,
    /// Value bytes.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Input format: csv, parquet or jsonl.
    #[arg(long, default_value = "csv", value_parser = ["csv", "parquet", "jsonl"])]
    pub format: String,
    /// Rounds (each runs every engine; the first engine rotates).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Engines: rialto, rocksdb-sst, rocksdb-put (the last two need `--features rocksdb`).
    #[arg(long, default_value = "rialto,rocksdb-sst,rocksdb-put")]
    pub engines: String,
    /// Working directory: the input file is made there once and kept; databases are
    /// recreated every run.
    #[arg(long, default_value = "bench-push")]
    pub work: PathBuf,
    /// Sort memory of Rialto's push and of the SstFileWriter path, MiB.
    #[arg(long, default_value_t = 256)]
    pub memory_limit_mb: usize,
    /// Memory touched and freed before each run, MiB (0: none; default: 2.5 × the raw
    /// data, at most half of the available memory). On virtual machines that hand freed
    /// memory back to the host (free page reporting, DAMON), the first touch of a page costs
    /// a host fault, and whichever run came first after an idle spell paid it for its page
    /// cache; warming the allocator gives every run the same start.
    #[arg(long)]
    pub warm_mb: Option<usize>,
    /// Rialto's `push-page-cache`: auto, all, none or a size. RocksDB's SstFileWriter path
    /// drops every page (its default), like `none`.
    #[arg(long, default_value = "auto")]
    pub page_cache: String,
}

struct RunResult {
    secs: f64,
    disk_bytes: u64,
    /// Seconds of each phase, in order (printed with each round).
    phases: Vec<(&'static str, f64)>,
}

/// Seconds since `*since`, which moves to now.
fn lap(since: &mut Instant) -> f64 {
    let now = Instant::now();
    let s = now.duration_since(*since).as_secs_f64();
    *since = now;
    s
}

fn io(context: &str, e: impl std::fmt::Display) -> BackendError {
    BackendError::Store(format!("{context}: {e}"))
}

fn key(i: u64, size: usize, out: &mut Vec<u8>) {
    out.clear();
    // An odd multiplier is a bijection of u64: keys are unique and in random order.
    out.extend_from_slice(format!("{:016x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).as_bytes());
    out.resize(size.max(16), b'k');
}

fn value(i: u64, size: usize, out: &mut Vec<u8>) {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    out.clear();
    let mut x = i.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
    for _ in 0..size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push(ALPHABET[(x % ALPHABET.len() as u64) as usize]);
    }
}

fn dir_bytes(p: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(p) else {
        return 0;
    };
    rd.filter_map(|e| e.ok())
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn reader(input: &Path) -> Result<Box<dyn RecordReader>, BackendError> {
    rialto_push_input::open(input, &InputSpec::default()).map_err(|e| io("input", e))
}

fn run_rialto(
    input: &Path,
    db: &Path,
    memory: usize,
    page_cache: PushPageCache,
) -> Result<RunResult, BackendError> {
    let start = Instant::now();
    let mut at = start;
    let local = Local::open_with(rialto_server::Config {
        dir: db.to_path_buf(),
        push_memory_limit: memory,
        push_page_cache: page_cache,
        ..rialto_server::Config::default()
    })?;
    local.create("b", b"b:", 0, rialto_keyspace::StoreSettings::default())?;
    let id = local.push_begin(
        "b",
        rialto_sort::DuplicatePolicy::Error,
        None,
        Some(100),
        rialto_keyspace::PushLayout::String,
    )?;
    let mut r = reader(input)?;
    // As `rialto push --dir` loads: records go from the reader straight to the sorter.
    while local.push_add_with(id, |add| {
        for _ in 0..4096 {
            match r.read_record().map_err(|e| io("input", e))? {
                Some((k, v)) => add(k, v)?,
                None => return Ok(false),
            }
        }
        Ok(true)
    })? {}
    let mut phases = vec![("read", lap(&mut at))];
    let report = local.push_commit(id)?;
    let commit = lap(&mut at);
    let parts: f64 = report.phases.iter().map(|(_, d)| d.as_secs_f64()).sum();
    phases.extend(report.phases.iter().map(|&(n, d)| (n, d.as_secs_f64())));
    // Begin and end of the commit outside its phases (session bookkeeping).
    phases.push(("other", (commit - parts).max(0.0)));
    local.close()?;
    phases.push(("close", lap(&mut at)));
    let secs = start.elapsed().as_secs_f64();
    Ok(RunResult {
        secs,
        disk_bytes: dir_bytes(db),
        phases,
    })
}

#[cfg(feature = "rocksdb")]
fn rocks_config() -> rialto_bench::EngineConfig {
    rialto_bench::EngineConfig {
        write_buffer_size: 64 << 20,
        cache_size: 64 << 20,
        bloom_bits: 10,
        compression: rialto_bench::CompressionKind::None,
        block_size: 4096,
        background_jobs: 2,
        commit: rialto_bench::CommitPath::Merger,
        triad: rialto_bench::TriadMode::Adaptive,
        journal_first: true,
        wal_zero_fill: 0,
        background_nice: 0,
        wait_spin_us: 0,
        poll_preempted_us: 0,
    }
}

#[cfg(feature = "rocksdb")]
fn run_rocks_put(input: &Path, db: &Path) -> Result<RunResult, BackendError> {
    use rialto_bench::PutLoader;
    let start = Instant::now();
    let mut l = PutLoader::open(db, &rocks_config()).map_err(|e| io("rocksdb", e))?;
    let mut r = reader(input)?;
    while let Some((k, v)) = r.read_record().map_err(|e| io("input", e))? {
        l.put(k, v).map_err(|e| io("rocksdb", e))?;
    }
    let put = start.elapsed().as_secs_f64();
    l.finish().map_err(|e| io("rocksdb", e))?;
    let secs = start.elapsed().as_secs_f64();
    Ok(RunResult {
        secs,
        disk_bytes: dir_bytes(db),
        phases: vec![("put", put), ("finish", secs - put)],
    })
}

#[cfg(feature = "rocksdb")]
fn run_rocks_sst(input: &Path, db: &Path, memory: usize) -> Result<RunResult, BackendError> {
    use rialto_bench::SstLoader;
    use rialto_sort::{SortOptions, Sorter};
    let start = Instant::now();
    let tmp = db.with_extension("sort");
    let fs: rialto_io::FsRef = std::sync::Arc::new(rialto_io::PosixFs::new());
    let mut sorter = Sorter::new(
        fs,
        SortOptions {
            memory_limit: memory,
            tmp_dir: tmp.clone(),
            ..SortOptions::default()
        },
    )
    .map_err(|e| io("sort", e))?;
    let mut r = reader(input)?;
    while let Some((k, v)) = r.read_record().map_err(|e| io("input", e))? {
        sorter.add(k, v).map_err(|e| io("sort", e))?;
    }
    let mut at = start;
    let read = lap(&mut at);
    let mut sorted = sorter.finish().map_err(|e| io("sort", e))?;
    let mut l = SstLoader::open(db, &rocks_config(), 64 << 20).map_err(|e| io("rocksdb", e))?;
    while let Some((k, v)) = sorted.next().map_err(|e| io("sort", e))? {
        l.add(k, v).map_err(|e| io("rocksdb", e))?;
    }
    drop(sorted);
    let write = lap(&mut at);
    l.finish().map_err(|e| io("rocksdb", e))?;
    let _ = std::fs::remove_dir_all(&tmp);
    let ingest = lap(&mut at);
    let secs = start.elapsed().as_secs_f64();
    Ok(RunResult {
        secs,
        disk_bytes: dir_bytes(db),
        phases: vec![("read", read), ("write", write), ("ingest", ingest)],
    })
}

#[cfg(not(feature = "rocksdb"))]
fn run_rocks_put(_: &Path, _: &Path) -> Result<RunResult, BackendError> {
    Err(BackendError::Usage(
        "the rocksdb engines need a build with --features rocksdb".into(),
    ))
}

#[cfg(not(feature = "rocksdb"))]
fn run_rocks_sst(_: &Path, _: &Path, _: usize) -> Result<RunResult, BackendError> {
    run_rocks_put(Path::new(""), Path::new(""))
}

/// Gives every run the same start: the previous run's dirty pages are written back and
/// `bytes` of memory is touched and freed, so the kernel's free pages are backed.
fn settle(bytes: usize) {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    if bytes == 0 {
        return;
    }
    let mut v: Vec<u8> = Vec::with_capacity(bytes);
    let spare = v.spare_capacity_mut();
    for i in (0..spare.len()).step_by(4096) {
        spare[i].write(1);
    }
    std::hint::black_box(&v);
    drop(v);
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Runs the benchmark and prints a table.
pub fn run(args: Args) -> Result<(), BackendError> {
    let format =
        Format::parse(&args.format).ok_or_else(|| BackendError::Usage("--format".into()))?;
    let engines: Vec<String> = args
        .engines
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    for e in &engines {
        if !["rialto", "rocksdb-sst", "rocksdb-put"].contains(&e.as_str()) {
            return Err(BackendError::Usage(format!("unknown engine '{e}'")));
        }
    }
    if args.rounds == 0 || args.key_size < 16 {
        return Err(BackendError::Usage(
            "--rounds >= 1 and --key-size >= 16".into(),
        ));
    }
    let page_cache = rialto_server::parse_push_page_cache(&args.page_cache)
        .map_err(|e| BackendError::Usage(format!("--page-cache: {e}")))?;
    std::fs::create_dir_all(&args.work).map_err(|e| io("work directory", e))?;
    let ext = match format {
        Format::Csv => "csv",
        Format::Parquet => "parquet",
        Format::Jsonl => "jsonl",
    };
    let input = args.work.join(format!(
        "input-{}-{}-{}.{ext}",
        args.records, args.key_size, args.value_size
    ));
    if !input.exists() {
        eprintln!("writing {} ...", input.display());
        let tmp = input.with_extension("tmp");
        let mut i = 0u64;
        let (n, ks, vs) = (args.records, args.key_size, args.value_size);
        rialto_push_input::write_dataset(&tmp, format, &mut |k, v| {
            if i == n {
                return false;
            }
            key(i, ks, k);
            value(i, vs, v);
            i += 1;
            true
        })
        .map_err(|e| io("write input", e))?;
        std::fs::rename(&tmp, &input).map_err(|e| io("rename input", e))?;
    }
    let raw = args.records * (args.key_size + args.value_size) as u64;
    let input_bytes = std::fs::metadata(&input).map(|m| m.len()).unwrap_or(0);
    let memory = args.memory_limit_mb << 20;
    let warm = match args.warm_mb {
        Some(mb) => mb << 20,
        None => {
            let want = (raw as usize).saturating_mul(5) / 2;
            let available = rialto_io::mem_available().unwrap_or(0);
            want.min(usize::try_from(available / 2).unwrap_or(usize::MAX))
        }
    };
    let mut results: Vec<Vec<RunResult>> = engines.iter().map(|_| Vec::new()).collect();
    for round in 0..args.rounds {
        for j in 0..engines.len() {
            let e = (round + j) % engines.len();
            let name = &engines[e];
            let db = args.work.join(format!("db-{name}"));
            let _ = std::fs::remove_dir_all(&db);
            let _ = std::fs::remove_dir_all(db.with_extension("staging"));
            settle(warm);
            let r = match name.as_str() {
                "rialto" => run_rialto(&input, &db, memory, page_cache)?,
                "rocksdb-sst" => run_rocks_sst(&input, &db, memory)?,
                _ => run_rocks_put(&input, &db)?,
            };
            let phases: Vec<String> = r
                .phases
                .iter()
                .map(|(name, s)| format!("{name} {s:.2}"))
                .collect();
            eprintln!(
                "round {} {name:<12} {:>8.2} s  {:>10.0} records/s  {:>7.1} MB/s  space {:.3}  ({} s)",
                round + 1,
                r.secs,
                args.records as f64 / r.secs,
                raw as f64 / r.secs / 1e6,
                r.disk_bytes as f64 / raw as f64,
                phases.join(", ")
            );
            let _ = std::fs::remove_dir_all(&db);
            results[e].push(r);
        }
    }
    println!(
        "\n{} records, {}-byte keys, {}-byte values, {} input ({:.1} MB), {} rounds, medians:\n",
        args.records,
        args.key_size,
        args.value_size,
        ext,
        input_bytes as f64 / 1e6,
        args.rounds
    );
    println!("| engine | seconds | records/s | MB/s (key+value) | disk ÷ raw |");
    println!("|---|---|---|---|---|");
    let mut rates = Vec::new();
    for (e, rs) in engines.iter().zip(&results) {
        let secs = median(&mut rs.iter().map(|r| r.secs).collect::<Vec<_>>());
        let space = median(
            &mut rs
                .iter()
                .map(|r| r.disk_bytes as f64 / raw as f64)
                .collect::<Vec<_>>(),
        );
        println!(
            "| {e} | {secs:.2} | {:.0} | {:.1} | {space:.3} |",
            args.records as f64 / secs,
            raw as f64 / secs / 1e6
        );
        rates.push((e.clone(), args.records as f64 / secs));
    }
    if let Some((_, rialto)) = rates.iter().find(|(e, _)| e == "rialto") {
        for (e, r) in rates.iter().filter(|(e, _)| e != "rialto") {
            println!("\nrialto / {e}: {:.2}x", rialto / r);
        }
    }
    Ok(())
}
