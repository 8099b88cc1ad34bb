//! `rialto push`: loads whole datasets (CSV, JSONL, Parquet) into a store as its new version
//! and swaps it in (see `rialto_keyspace`). The first Ctrl-C while reading abandons the push
//! (the current version keeps serving, partial files are removed). Once the commit has
//! begun, the first one says what a second would do, and the second stops the process: with
//! `--dir`, the next start of the database abandons the push unless its swap was made; with
//! `--server`, the server finishes (or fails) the commit on its own.
//!
//! What this command writes (progress, notes, the report) is only information: a closed
//! stdout or stderr (`| head`) never stops a push half-way, so writes to them ignore errors.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use rialto_keyspace::{DuplicatePolicy, StoreError};
use rialto_push_input::{ExpandOptions, Format, InputError, InputSpec, RecordReader};
use rialto_resp::Reply;

use super::stores_backend::{render, Backend, BackendError, Local, Remote, Target};

/// Arguments of `rialto push`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store to load.
    #[arg(long)]
    pub store: String,
    /// What to read, in order (keys are relative to the store's prefix): files, directories of
    /// part files as Spark or Hive write them (bookkeeping such as _SUCCESS, .crc and hidden
    /// files skipped), quoted patterns ('out/part-*.parquet'); several after one --input or
    /// each after its own. CSV and JSONL may be gzip or zstd compressed: x.csv.gz, x.jsonl.zst.
    #[arg(long, required = true, num_args = 1.., value_name = "PATH")]
    pub input: Vec<PathBuf>,
    /// Refuse a directory without the _SUCCESS marker its writer leaves when it finishes (for
    /// a file or pattern: the directory it is in).
    #[arg(long)]
    pub require_success_marker: bool,
    /// Input format (default: from each file's extension: .csv, .jsonl/.ndjson, .parquet/.pq).
    #[arg(long, value_parser = ["csv", "jsonl", "parquet"])]
    pub format: Option<String>,
    /// The field (column) holding keys; a 0-based index for CSV without a header.
    #[arg(long, default_value = "key")]
    pub key_field: String,
    /// The field (column) holding values.
    #[arg(long, default_value = "value")]
    pub value_field: String,
    /// CSV field delimiter: one byte, \t, or tab, comma, semicolon, pipe; not a double quote,
    /// CR or LF.
    #[arg(long, default_value = ",")]
    pub csv_delimiter: String,
    /// CSV files have no header row (fields are then 0-based indexes).
    #[arg(long)]
    pub no_header: bool,
    /// What a key given twice does: fail the push (default) or keep the last record.
    #[arg(long, default_value = "error", value_parser = ["error", "last-wins"])]
    pub duplicates: String,
    /// Allow a push of no records (an empty version replacing the current one); the same as
    /// --min-records 0.
    #[arg(long, conflicts_with = "min_records")]
    pub allow_empty: bool,
    /// Refuse the push (the current version keeps serving) if it loads fewer records than
    /// this (default: the server's push-min-records, 1).
    #[arg(long, value_name = "N")]
    pub min_records: Option<u64>,
    /// Refuse the push (the current version keeps serving) if its record count falls more
    /// than this percentage below the current version's (0-100; default: the server's
    /// push-max-shrink, 50; 100 allows any shrink).
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub max_shrink: Option<u32>,
    /// Records per PUSH ADD request with --server; with --dir, records added per hold of the
    /// push's lock (and per progress update).
    #[arg(long, default_value_t = 2000)]
    pub batch: usize,
    /// Never draw the progress line.
    #[arg(long)]
    pub no_progress: bool,
    #[command(flatten)]
    pub target: Target,
}

/// 0: running; 1: interrupted once; 2: twice.
static INTERRUPTS: AtomicU8 = AtomicU8::new(0);
/// Which commit runs, for what Ctrl-C says: [`NOT_COMMITTING`], [`COMMITTING_HERE`] or
/// [`COMMITTING_ON_SERVER`].
static COMMIT: AtomicU8 = AtomicU8::new(NOT_COMMITTING);
const NOT_COMMITTING: u8 = 0;
/// `--dir`: this process sorts, writes and swaps.
const COMMITTING_HERE: u8 = 1;
/// `--server`: the server does, and goes on without this process.
const COMMITTING_ON_SERVER: u8 = 2;

/// What the first Ctrl-C during a commit says: a second one only stops this process, and
/// what then becomes of the push differs.
const INTERRUPT_HERE: &[u8] = b"\nthe new version is being written and swapped in by this process; Ctrl-C again stops it, and the database abandons the push at its next start unless the swap was already made (then the new version serves)\n";
const INTERRUPT_ON_SERVER: &[u8] = b"\nthe server is writing and swapping in the new version and finishes on its own; Ctrl-C again only stops waiting for its report (then see `rialto store describe`)\n";

extern "C" fn on_sigint(_: libc::c_int) {
    let n = INTERRUPTS.fetch_add(1, Ordering::SeqCst);
    if n >= 1 {
        // SAFETY: async-signal-safe calls only.
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::raise(libc::SIGINT);
        }
        return;
    }
    let Some(msg) = interrupt_message(COMMIT.load(Ordering::SeqCst)) else {
        return;
    };
    // SAFETY: write(2) is async-signal-safe; the buffer is static.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
    }
}

/// What the first Ctrl-C says in commit state `commit`; nothing while reading.
fn interrupt_message(commit: u8) -> Option<&'static [u8]> {
    match commit {
        COMMITTING_HERE => Some(INTERRUPT_HERE),
        COMMITTING_ON_SERVER => Some(INTERRUPT_ON_SERVER),
        _ => None,
    }
}

/// `eprint!` that ignores a closed stderr.
macro_rules! note {
    ($($arg:tt)*) => {{
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

/// `println!` that ignores a closed stdout.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

fn interrupted() -> bool {
    INTERRUPTS.load(Ordering::SeqCst) > 0
}

/// Counts and draws progress on stderr.
struct Progress {
    start: Instant,
    last_draw: Instant,
    records: u64,
    bytes: u64,
    /// Input bytes consumed by finished files, and the total of every input.
    done_input: u64,
    total_input: u64,
    draw: bool,
}

impl Progress {
    fn new(total_input: u64, draw: bool) -> Progress {
        let now = Instant::now();
        Progress {
            start: now,
            last_draw: now,
            records: 0,
            bytes: 0,
            done_input: 0,
            total_input,
            draw,
        }
    }

    fn tick(&mut self, current_input: u64) {
        if !self.draw || self.last_draw.elapsed() < Duration::from_millis(250) {
            return;
        }
        self.last_draw = Instant::now();
        let secs = self.start.elapsed().as_secs_f64().max(1e-3);
        let read = self.done_input + current_input;
        let eta = if read > 0 && self.total_input > read {
            let rate = read as f64 / secs;
            format!("{:.0}s", (self.total_input - read) as f64 / rate)
        } else {
            "-".into()
        };
        note!(
            "\r{:>12} records  {:>10.0} records/s  {:>7.1} MB/s  {:>5.1}%  ETA {:<8}",
            self.records,
            self.records as f64 / secs,
            self.bytes as f64 / secs / 1e6,
            100.0 * read as f64 / self.total_input.max(1) as f64,
            eta
        );
    }

    fn clear(&self) {
        if self.draw {
            note!("\r{:90}\r", "");
        }
    }
}

/// Runs the push.
pub fn run(args: Args) -> Result<(), BackendError> {
    let delim = rialto_push_input::parse_csv_delimiter(&args.csv_delimiter)
        .map_err(|e| BackendError::Usage(format!("--csv-delimiter: {e}")))?;
    let spec = InputSpec {
        format: args.format.as_deref().and_then(Format::parse),
        key_field: args.key_field.clone(),
        value_field: args.value_field.clone(),
        csv_delimiter: delim,
        csv_has_header: !args.no_header,
    };
    let duplicates = if args.duplicates == "last-wins" {
        DuplicatePolicy::LastWins
    } else {
        DuplicatePolicy::Error
    };
    let expand = ExpandOptions {
        format: spec.format,
        require_success_marker: args.require_success_marker,
    };
    let files = rialto_push_input::expand_inputs(&args.input, &expand)
        .map_err(|e| BackendError::Usage(e.to_string()))?;
    // Open every input first: a missing file or column fails before anything starts. Each is
    // opened again when its turn comes, so a directory of many part files is never all open.
    let mut total = 0u64;
    for p in &files {
        total += open_input(p, &spec)?.total_bytes();
    }
    // Directories and patterns: say what they came to.
    if files.is_empty() {
        note!("the inputs hold no data file\n");
    } else if files.len() != args.input.len() {
        note!(
            "reading {} files ({:.1} MB)\n",
            files.len(),
            total as f64 / 1e6
        );
    }
    // SAFETY: installing a handler that only touches atomics.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
    }
    let mut backend = args.target.open()?;
    let started = Instant::now();
    let min_records = if args.allow_empty {
        Some(0)
    } else {
        args.min_records
    };
    let id = match &mut backend {
        Backend::Local(l) => l.push_begin(&args.store, duplicates, min_records, args.max_shrink)?,
        Backend::Remote(r) => {
            let mut req: Vec<&[u8]> = vec![b"PUSH", b"BEGIN", args.store.as_bytes()];
            if duplicates == DuplicatePolicy::LastWins {
                req.extend([b"DUPLICATES".as_slice(), b"LAST-WINS"]);
            }
            let min = min_records.map(|n| n.to_string());
            if let Some(n) = &min {
                req.extend([b"MIN-RECORDS".as_slice(), n.as_bytes()]);
            }
            let shrink = args.max_shrink.map(|p| p.to_string());
            if let Some(p) = &shrink {
                req.extend([b"MAX-SHRINK".as_slice(), p.as_bytes()]);
            }
            match r.call(&req)? {
                Reply::Integer(n) if n > 0 => n as u64,
                other => {
                    return Err(BackendError::Connection(format!(
                        "unexpected reply to PUSH BEGIN: {other:?}"
                    )))
                }
            }
        }
    };
    let draw = !args.no_progress && std::io::stderr().is_terminal();
    let mut progress = Progress::new(total, draw);
    let inputs = Inputs {
        files: &files,
        spec: &spec,
    };
    let loaded = load(&mut backend, id, inputs, &mut progress, args.batch.max(1));
    progress.clear();
    if let Err(e) = loaded {
        abort(&mut backend, id);
        if let Backend::Local(l) = backend {
            let _ = l.close();
        }
        return Err(if interrupted() {
            BackendError::Interrupted
        } else {
            e
        });
    }
    let read_secs = started.elapsed().as_secs_f64();
    note!(
        "read {} records ({:.1} MB) in {:.1} s; sorting, writing and swapping...\n",
        progress.records,
        progress.bytes as f64 / 1e6,
        read_secs
    );
    let committing = match backend {
        Backend::Local(_) => COMMITTING_HERE,
        Backend::Remote(_) => COMMITTING_ON_SERVER,
    };
    COMMIT.store(committing, Ordering::SeqCst);
    let report = match &mut backend {
        Backend::Local(l) => {
            let r = l.push_commit(id);
            match r {
                Ok(r) => format!(
                    "store: {}\nversion: {}\nrecords: {}\nbytes: {}\nfiles: {}\nfile-bytes: {}\nruns-spilled: {}\nduplicates-dropped: {}\nreplayed: {}",
                    r.store, r.version, r.records, r.bytes, r.files, r.file_bytes, r.runs_spilled,
                    r.duplicates_dropped, r.replayed
                ),
                Err(e) => {
                    if let Backend::Local(l) = backend {
                        let _ = l.close();
                    }
                    return Err(e);
                }
            }
        }
        Backend::Remote(r) => {
            render(&r.call(&[b"PUSH".as_slice(), b"COMMIT", id.to_string().as_bytes()])?)
        }
    };
    if let Backend::Local(l) = backend {
        l.close()?;
    }
    let secs = started.elapsed().as_secs_f64().max(1e-6);
    say!("{report}");
    say!(
        "elapsed-s: {:.2}\nrecords-per-s: {:.0}\nmb-per-s: {:.1}",
        secs,
        progress.records as f64 / secs,
        progress.bytes as f64 / secs / 1e6
    );
    Ok(())
}

fn abort(backend: &mut Backend, id: u64) {
    let r = match backend {
        // A record the push refused has aborted it already.
        Backend::Local(l) if !l.push_in_progress(id) => Ok(()),
        Backend::Local(l) => l.push_abort(id),
        Backend::Remote(r) => {
            // Drain replies to requests in flight, then abort.
            while r.in_flight > 0 {
                if r.recv().is_err() && r.in_flight > 0 {
                    break;
                }
            }
            r.call(&[b"PUSH".as_slice(), b"ABORT", id.to_string().as_bytes()])
                .map(|_| ())
        }
    };
    if let Err(e) = r {
        // Already aborted by the server (a bad record), or the connection is gone (the
        // server aborts a push whose connection closed).
        note!("note: abort: {e}\n");
    }
}

/// The files a push reads, in order, and how.
#[derive(Clone, Copy)]
struct Inputs<'a> {
    files: &'a [PathBuf],
    spec: &'a InputSpec,
}

impl<'a> Inputs<'a> {
    /// Each file with its reader, opened when its turn comes.
    fn readers(
        self,
    ) -> impl Iterator<Item = Result<(&'a Path, Box<dyn RecordReader>), BackendError>> {
        self.files
            .iter()
            .map(move |p| Ok((p.as_path(), open_input(p, self.spec)?)))
    }
}

fn open_input(path: &Path, spec: &InputSpec) -> Result<Box<dyn RecordReader>, BackendError> {
    rialto_push_input::open(path, spec).map_err(|e| BackendError::Usage(e.to_string()))
}

fn load(
    backend: &mut Backend,
    id: u64,
    inputs: Inputs<'_>,
    progress: &mut Progress,
    batch: usize,
) -> Result<(), BackendError> {
    match backend {
        Backend::Local(l) => load_local(l, id, inputs, progress, batch),
        Backend::Remote(r) => load_remote(r, id, inputs, progress, batch),
    }
}

/// Hands each record from the reader straight to the push's sorter (one copy, into the sort
/// buffer), `batch` records per hold of the push's lock. A record the push refuses (a key
/// over the length limit, say) is reported with its file and line or row.
fn load_local(
    local: &Local,
    id: u64,
    inputs: Inputs<'_>,
    progress: &mut Progress,
    batch: usize,
) -> Result<(), BackendError> {
    for reader in inputs.readers() {
        let (path, mut r) = reader?;
        loop {
            if interrupted() {
                return Err(BackendError::Interrupted);
            }
            let more = local.push_add_with(id, |add| {
                for _ in 0..batch {
                    let Some((k, v)) = r
                        .read_record()
                        .map_err(|e| BackendError::Usage(e.to_string()))?
                    else {
                        return Ok(false);
                    };
                    progress.records += 1;
                    progress.bytes += (k.len() + v.len()) as u64;
                    add(k, v).map_err(|e| {
                        let reason = match e {
                            StoreError::Input(reason) => reason,
                            e => e.to_string(),
                        };
                        let at = InputError {
                            file: path.to_path_buf(),
                            location: r.location(),
                            reason,
                        };
                        BackendError::Store(format!("push failed: {at}"))
                    })?;
                }
                Ok(true)
            })?;
            progress.tick(r.bytes_read());
            if !more {
                break;
            }
        }
        progress.done_input += r.total_bytes();
    }
    Ok(())
}

/// Sends records in `PUSH ADD` requests of `batch` records, with a window of requests in
/// flight.
fn load_remote(
    remote: &mut Remote,
    id: u64,
    inputs: Inputs<'_>,
    progress: &mut Progress,
    batch: usize,
) -> Result<(), BackendError> {
    let mut keys: Vec<Vec<u8>> = Vec::with_capacity(batch);
    let mut values: Vec<Vec<u8>> = Vec::with_capacity(batch);
    let mut n = 0usize;
    // Replies awaited before another request is sent.
    const WINDOW: usize = 8;
    for reader in inputs.readers() {
        let (_, mut r) = reader?;
        loop {
            if interrupted() {
                return Err(BackendError::Interrupted);
            }
            if n == keys.len() {
                keys.push(Vec::new());
                values.push(Vec::new());
            }
            if !r
                .next_record(&mut keys[n], &mut values[n])
                .map_err(|e| BackendError::Usage(e.to_string()))?
            {
                break;
            }
            progress.records += 1;
            progress.bytes += (keys[n].len() + values[n].len()) as u64;
            n += 1;
            if n == batch {
                send(remote, id, &keys[..n], &values[..n], WINDOW)?;
                n = 0;
                progress.tick(r.bytes_read());
            }
        }
        progress.done_input += r.total_bytes();
    }
    if n > 0 {
        send(remote, id, &keys[..n], &values[..n], WINDOW)?;
    }
    remote.flush()?;
    while remote.in_flight > 0 {
        remote.recv()?;
    }
    Ok(())
}

fn send(
    remote: &mut Remote,
    id: u64,
    keys: &[Vec<u8>],
    values: &[Vec<u8>],
    window: usize,
) -> Result<(), BackendError> {
    let id = id.to_string();
    let mut req: Vec<&[u8]> = Vec::with_capacity(3 + 2 * keys.len());
    req.extend([b"PUSH".as_slice(), b"ADD", id.as_bytes()]);
    for (k, v) in keys.iter().zip(values) {
        req.push(k);
        req.push(v);
    }
    remote.send(&req);
    remote.flush()?;
    while remote.in_flight >= window {
        remote.recv()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctrl_c_during_a_commit_says_what_happens_where_the_commit_runs() {
        assert_eq!(interrupt_message(NOT_COMMITTING), None);
        let here = String::from_utf8_lossy(interrupt_message(COMMITTING_HERE).unwrap());
        assert!(
            here.contains("by this process") && here.contains("next start"),
            "{here}"
        );
        // The server goes on without the client: nothing is abandoned at a restart.
        let remote = String::from_utf8_lossy(interrupt_message(COMMITTING_ON_SERVER).unwrap());
        assert!(remote.contains("finishes on its own"), "{remote}");
        assert!(!remote.contains("abandons"), "{remote}");
    }
}
