//! `rialto push`: loads whole datasets (CSV, JSONL, Parquet) into a store as its new version
//! and swaps it in (see `rialto_keyspace`). The first Ctrl-C while reading abandons the push
//! (the current version keeps serving, partial files are removed). Once the commit has
//! begun, the first one says what a second would do, and the second stops the process: with
//! `--dir`, the next start of the database abandons the push unless its swap was made; with
//! `--server`, the server finishes (or fails) the commit on its own.
//!
//! What this command writes (progress, notes, the report) is only information: a closed
//! stdout or stderr (`| head`) never stops a push half-way, so writes to them ignore errors.
//! Progress (`push_progress`) goes to stderr through every phase: while it waits for the
//! commit, a second thread looks at the server's phase (STORE DESCRIBE on a connection of its
//! own; with `--dir`, the push registry) every [`POLL_EVERY`].

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rialto_keyspace::{DuplicatePolicy, PushLayout, StoreError};
use rialto_push_input::{
    ExpandOptions, Format, InputError, InputSpec, Nulls, RecordReader, RowEncoding, RowSpec,
};
use rialto_resp::Reply;

use super::push_progress::{self, Figures, Mode, Phase, Reporter};
use super::stores_backend::{render, Backend, BackendError, Local, Remote, Target};

/// How often the server's phase is looked at during the commit.
const POLL_EVERY: Duration = Duration::from_millis(500);
/// How long a look at the server's phase may wait for its reply before looks stop.
const POLL_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest `--progress-interval`.
const MAX_PROGRESS_INTERVAL_S: f64 = 86_400.0;

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
    /// The field (column) holding values, with a raw value (default: value).
    #[arg(long)]
    pub value_field: Option<String>,
    /// What each key holds: a string (default), or a hash whose fields are the row's --fields,
    /// each field's value as text.
    #[arg(long, default_value = "string", value_parser = ["string", "hash"])]
    pub layout: String,
    /// A string's value: raw (the --value-field's value, default), or json (the row's
    /// --fields as one JSON object, typed values as JSON types).
    #[arg(long, default_value = "raw", value_parser = ["raw", "json"])]
    pub value_format: String,
    /// The fields (columns) of a hash or JSON value, in order, comma-separated (default:
    /// every field but the key).
    #[arg(long, value_delimiter = ',', num_args = 1.., value_name = "NAME,...")]
    pub fields: Option<Vec<String>>,
    /// What a null field or value does: skip it (a row with no field left is not loaded),
    /// write it empty (a JSON null), or fail the push (default: skip with --layout hash or
    /// --value-format json, error with a raw value).
    #[arg(long, value_parser = ["skip", "empty", "error"])]
    pub nulls: Option<String>,
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
    /// Show no progress (the report on stdout and errors still come).
    #[arg(long, short = 'q', visible_alias = "quiet")]
    pub no_progress: bool,
    /// When stderr is not a terminal: seconds between progress lines (besides the line at
    /// each phase change); 0 writes only those.
    #[arg(long, default_value = "10", value_name = "SECONDS", value_parser = progress_interval)]
    pub progress_interval: Duration,
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

/// `--progress-interval`: seconds, 0 to a day.
fn progress_interval(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=MAX_PROGRESS_INTERVAL_S).contains(&v) => Ok(Duration::from_secs_f64(v)),
        _ => Err(format!(
            "expected seconds from 0 to {MAX_PROGRESS_INTERVAL_S}"
        )),
    }
}

/// How progress is shown: bars on a terminal, lines elsewhere (and on a terminal that
/// cannot move the cursor), nothing with `--no-progress`.
fn progress_mode(args: &Args) -> Mode {
    if args.no_progress {
        return Mode::Off;
    }
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    if std::io::stderr().is_terminal() && !dumb {
        Mode::Bars {
            columns: push_progress::stderr_columns(),
        }
    } else {
        Mode::Lines {
            every: (!args.progress_interval.is_zero()).then_some(args.progress_interval),
        }
    }
}

/// Counts what is read and tells the reporter.
struct Progress {
    records: u64,
    bytes: u64,
    /// Rows not loaded because their value, or every field of their row, was null.
    skipped: u64,
    /// Input bytes consumed by finished files, and the total of every input.
    done_input: u64,
    total_input: u64,
    reporter: Reporter,
}

impl Progress {
    fn figures(&self, current_input: u64) -> Figures {
        Figures {
            records: self.records,
            bytes: self.bytes,
            done: self.done_input + current_input,
            total: Some(self.total_input),
            ..Figures::default()
        }
    }

    fn tick(&mut self, current_input: u64) {
        let figs = self.figures(current_input);
        self.reporter.update(figs, None, Instant::now());
    }

    /// The figures of the commit's phases: every record read, none written yet.
    fn added(&self) -> Figures {
        Figures {
            records: self.records,
            bytes: self.bytes,
            ..Figures::default()
        }
    }
}

/// A push's state as the server reports it while committing.
struct ServerView {
    /// `PushPhase::name`.
    phase: String,
    records: u64,
    bytes: u64,
    written: u64,
    /// The sort's last step: records to process, done, merge passes left, and the speed of
    /// the push's spills (`None`: nothing spilled).
    sort_records: u64,
    sort_done: u64,
    merge_passes: u64,
    spill_speed: Option<u64>,
    /// Streamed writes the replay goes through, and done.
    replay_total: u64,
    replay_done: u64,
}

impl ServerView {
    fn from_status(s: &rialto_keyspace::PushStatus) -> ServerView {
        ServerView {
            phase: s.phase.name().to_string(),
            records: s.records,
            bytes: s.bytes,
            written: s.written,
            sort_records: s.sort.records,
            sort_done: s.sort.done,
            merge_passes: s.sort.merge_passes,
            spill_speed: s.sort.spill_records_per_s,
            replay_total: s.replay_total,
            replay_done: s.replay_done,
        }
    }

    /// From a STORE DESCRIBE reply, if it shows push `id` with its phase.
    fn from_describe(r: &Reply, id: u64) -> Option<ServerView> {
        let Reply::Map(pairs) = r else {
            return None;
        };
        let field = |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| matches!(k, Reply::Bulk(b) | Reply::Simple(b) if b.as_ref() == name.as_bytes()))
                .map(|(_, v)| v)
        };
        let int = |name: &str| match field(name) {
            Some(Reply::Integer(n)) => u64::try_from(*n).ok(),
            _ => None,
        };
        if int("pushing-version")? != id {
            return None;
        }
        let phase = match field("pushing-phase")? {
            Reply::Bulk(b) | Reply::Simple(b) => String::from_utf8_lossy(b).into_owned(),
            _ => return None,
        };
        Some(ServerView {
            phase,
            records: int("pushing-records").unwrap_or(0),
            bytes: int("pushing-bytes").unwrap_or(0),
            written: int("pushing-written-records").unwrap_or(0),
            // Absent from a server before these fields: no measure, as before.
            sort_records: int("pushing-sort-records").unwrap_or(0),
            sort_done: int("pushing-sort-done-records").unwrap_or(0),
            merge_passes: int("pushing-sort-merge-passes").unwrap_or(0),
            spill_speed: int("pushing-sort-records-per-s"),
            replay_total: int("pushing-replay-entries").unwrap_or(0),
            replay_done: int("pushing-replay-done-entries").unwrap_or(0),
        })
    }

    /// The figures of `phase` (at `step`, for `swap`) as the server shows them.
    fn figures(&self, phase: Phase, step: Option<&str>) -> Figures {
        let added = Figures {
            records: self.records,
            bytes: self.bytes,
            ..Figures::default()
        };
        match phase {
            Phase::Write => Figures {
                done: self.written,
                total: Some(self.records),
                ..added
            },
            // Zero records: `finish` has not said what it has to do yet.
            Phase::Sort if self.sort_records > 0 => Figures {
                done: self.sort_done,
                total: Some(self.sort_records),
                speed: self.spill_speed,
                passes: self.merge_passes,
                ..added
            },
            // Linking is not measured; the replay and after it the clean-up show the replay.
            Phase::Swap if step != Some("linking") => Figures {
                done: self.replay_done,
                total: Some(self.replay_total),
                ..added
            },
            _ => added,
        }
    }

    /// Tells `reporter` what the server is doing.
    fn report(&self, reporter: &mut Reporter, at: Instant) {
        let Some((phase, step)) = Phase::of_server(&self.phase) else {
            reporter.tick(at);
            return;
        };
        // The sort's last figures (all done) before its done line, when the look after it
        // finds a later phase.
        if reporter.phase() == Some(Phase::Sort) && phase > Phase::Sort {
            reporter.last_figures(self.figures(Phase::Sort, None));
        }
        let figs = self.figures(phase, step);
        reporter.enter(phase, figs, None, at);
        reporter.update(figs, step, at);
    }
}

/// Runs `commit` while a second thread looks at the server's phase with `look` every
/// [`POLL_EVERY`] and tells `reporter`.
fn watch_commit<T>(
    reporter: &mut Reporter,
    mut look: impl FnMut() -> Option<ServerView> + Send,
    commit: impl FnOnce() -> T,
) -> T {
    let (done_tx, done_rx) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let watcher = scope.spawn(move || loop {
            let view = look();
            let now = Instant::now();
            match view {
                Some(v) => v.report(reporter, now),
                None => reporter.tick(now),
            }
            match done_rx.recv_timeout(POLL_EVERY) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                _ => return,
            }
        });
        let r = commit();
        drop(done_tx);
        // A watcher that panicked only loses the progress.
        let _ = watcher.join();
        r
    })
}

/// A second connection to the server that looks at push `id` of `store` with STORE
/// DESCRIBE; an error if the server does not show the push's phase there (cluster mode, a
/// server before this client, a user without `store|describe`).
fn server_looker(
    target: &Target,
    store: &str,
    id: u64,
) -> Result<impl FnMut() -> Option<ServerView> + Send, BackendError> {
    let mut conn = match target.open()? {
        Backend::Remote(r) => r,
        Backend::Local(_) => return Err(BackendError::Usage("not a server".into())),
    };
    conn.set_read_timeout(POLL_TIMEOUT)?;
    let first = conn.call(&[b"STORE".as_slice(), b"DESCRIBE", store.as_bytes()])?;
    if ServerView::from_describe(&first, id).is_none() {
        return Err(BackendError::Store(
            "STORE DESCRIBE does not show them".into(),
        ));
    }
    let store = store.to_string();
    let mut broken = false;
    Ok(move || {
        if broken {
            return None;
        }
        match conn.call(&[b"STORE".as_slice(), b"DESCRIBE", store.as_bytes()]) {
            Ok(r) => ServerView::from_describe(&r, id),
            Err(_) => {
                // A timed-out reply would arrive as the answer to the next look.
                broken = true;
                None
            }
        }
    })
}

/// What the values are made of, from `--layout`, `--value-format`, `--fields`,
/// `--value-field` and `--nulls`: the push's layout, the reader's row (`None`: one field's
/// value) and null policy.
fn value_options(args: &Args) -> Result<(PushLayout, Option<RowSpec>, Nulls), BackendError> {
    let usage = |s: &str| Err(BackendError::Usage(s.to_string()));
    let (layout, encoding) = match (args.layout.as_str(), args.value_format.as_str()) {
        ("hash", "json") => {
            return usage(
                "--value-format json makes a string of the row's fields; a hash (--layout hash) holds them as fields",
            )
        }
        ("hash", _) => (
            PushLayout::Hash,
            Some(RowEncoding::Hash(rialto_keyspace::encode_hash_payload)),
        ),
        (_, "json") => (PushLayout::String, Some(RowEncoding::Json)),
        _ => (PushLayout::String, None),
    };
    let nulls = match &args.nulls {
        Some(n) => Nulls::parse(n).ok_or_else(|| BackendError::Usage(format!("--nulls {n}")))?,
        None if encoding.is_some() => Nulls::Skip,
        None => Nulls::Error,
    };
    let row = match encoding {
        Some(encoding) => {
            if args.value_field.is_some() {
                return usage(
                    "--value-field names a raw value's column; a hash or JSON value is made of --fields",
                );
            }
            Some(RowSpec {
                fields: args.fields.clone(),
                encoding,
            })
        }
        None if args.fields.is_some() => {
            return usage("--fields needs --layout hash or --value-format json")
        }
        None => None,
    };
    Ok((layout, row, nulls))
}

/// Runs the push.
pub fn run(args: Args) -> Result<(), BackendError> {
    let delim = rialto_push_input::parse_csv_delimiter(&args.csv_delimiter)
        .map_err(|e| BackendError::Usage(format!("--csv-delimiter: {e}")))?;
    let (layout, row, nulls) = value_options(&args)?;
    let spec = InputSpec {
        format: args.format.as_deref().and_then(Format::parse),
        key_field: args.key_field.clone(),
        value_field: args.value_field.clone().unwrap_or_else(|| "value".into()),
        row,
        nulls,
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
    if files.is_empty() {
        note!("the inputs hold no data file\n");
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
        Backend::Local(l) => l.push_begin(
            &args.store,
            duplicates,
            min_records,
            args.max_shrink,
            layout,
        )?,
        Backend::Remote(r) => {
            let mut req: Vec<&[u8]> = vec![b"PUSH", b"BEGIN", args.store.as_bytes()];
            // Sent only when not a string, so that a server from before layouts still takes
            // every push it can load.
            if layout == PushLayout::Hash {
                req.extend([b"LAYOUT".as_slice(), b"HASH"]);
            }
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
    let mode = progress_mode(&args);
    let quiet = mode == Mode::Off;
    let reporter = Reporter::new(mode, Box::new(std::io::stderr()), POLL_EVERY, started);
    let mut progress = Progress {
        records: 0,
        bytes: 0,
        skipped: 0,
        done_input: 0,
        total_input: total,
        reporter,
    };
    let detail = format!(
        "{} {}, {}",
        files.len(),
        if files.len() == 1 { "file" } else { "files" },
        push_progress::size(total as f64)
    );
    progress
        .reporter
        .enter(Phase::Read, progress.figures(0), Some(detail), started);
    let inputs = Inputs {
        files: &files,
        spec: &spec,
    };
    let loaded = load(&mut backend, id, inputs, &mut progress, args.batch.max(1));
    if let Err(e) = loaded {
        progress.reporter.abandon(Instant::now());
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
    progress.tick(0);
    let committing = match backend {
        Backend::Local(_) => COMMITTING_HERE,
        Backend::Remote(_) => COMMITTING_ON_SERVER,
    };
    COMMIT.store(committing, Ordering::SeqCst);
    let added = progress.added();
    let reporter = &mut progress.reporter;
    let committed: Result<(String, Vec<(Phase, Duration)>), BackendError> = match &mut backend {
        Backend::Local(l) => {
            reporter.enter(Phase::Sort, added, None, Instant::now());
            let keyspace = l.keyspace();
            let look = || {
                keyspace
                    .push_statuses()
                    .iter()
                    .find(|s| s.id == id)
                    .map(ServerView::from_status)
            };
            let local: &Local = l;
            watch_commit(reporter, look, || local.push_commit(id)).map(|r| {
                let exact = commit_phases(r.phases.iter().map(|&(n, d)| (n, d)));
                let text = format!(
                    "store: {}\nversion: {}\nrecords: {}\nbytes: {}\nfiles: {}\nfile-bytes: {}\nruns-spilled: {}\nduplicates-dropped: {}\nreplayed: {}",
                    r.store, r.version, r.records, r.bytes, r.files, r.file_bytes, r.runs_spilled,
                    r.duplicates_dropped, r.replayed
                );
                let steps: String = r
                    .phases
                    .iter()
                    .map(|(n, d)| format!("\n{n}-ms: {}", d.as_millis()))
                    .collect();
                (text + &steps, exact)
            })
        }
        Backend::Remote(r) => {
            // The server shows its phases in STORE DESCRIBE (not in cluster mode, nor
            // before this version): without them the commit is one phase.
            let mut looker = None;
            let mut detail = None;
            if !quiet {
                match server_looker(&args.target, &args.store, id) {
                    Ok(look) => looker = Some(look),
                    Err(e) => detail = Some(format!("the server's phases are not shown: {e}")),
                }
            }
            let phase = if looker.is_some() {
                Phase::Sort
            } else {
                Phase::Commit
            };
            reporter.enter(phase, added, detail, Instant::now());
            let look = move || looker.as_mut().and_then(|l| l());
            let id_arg = id.to_string();
            let req = [b"PUSH".as_slice(), b"COMMIT", id_arg.as_bytes()];
            watch_commit(reporter, look, || r.call(&req)).map(|reply| {
                let exact = commit_phases(reply_phases(&reply));
                (render(&reply), exact)
            })
        }
    };
    let (report, exact) = match committed {
        Ok(c) => c,
        Err(e) => {
            progress.reporter.abandon(Instant::now());
            if let Backend::Local(l) = backend {
                let _ = l.close();
            }
            return Err(e);
        }
    };
    if let Backend::Local(l) = backend {
        l.close()?;
    }
    progress.reporter.finish(added, &exact, Instant::now());
    let secs = started.elapsed().as_secs_f64().max(1e-6);
    say!("{report}");
    say!("skipped-rows: {}", progress.skipped);
    if progress.skipped > 0 {
        note!(
            "note: {} rows were not loaded: their value, or every field of their row, was null (--nulls skip)\n",
            progress.skipped
        );
    }
    say!(
        "elapsed-s: {:.2}\nrecords-per-s: {:.0}\nmb-per-s: {:.1}",
        secs,
        progress.records as f64 / secs,
        progress.bytes as f64 / secs / 1e6
    );
    Ok(())
}

/// The commit's steps (`sort`, `write`, `link`, `replay`, `cleanup`) as the client's phases.
fn commit_phases<'a>(steps: impl Iterator<Item = (&'a str, Duration)>) -> Vec<(Phase, Duration)> {
    steps
        .filter_map(|(step, d)| Some((Phase::of_commit_step(step)?, d)))
        .collect()
}

/// PUSH COMMIT's `<step>-ms` fields.
fn reply_phases(r: &Reply) -> impl Iterator<Item = (&str, Duration)> {
    let pairs: &[(Reply, Reply)] = match r {
        Reply::Map(p) => p,
        _ => &[],
    };
    pairs.iter().filter_map(|(k, v)| {
        let (Reply::Bulk(k) | Reply::Simple(k), Reply::Integer(ms)) = (k, v) else {
            return None;
        };
        let step = std::str::from_utf8(k).ok()?.strip_suffix("-ms")?;
        // `elapsed-ms` is the whole push, not a step.
        Phase::of_commit_step(step)?;
        Some((step, Duration::from_millis(u64::try_from(*ms).ok()?)))
    })
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
        progress.skipped += r.skipped();
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
        progress.skipped += r.skipped();
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
    use clap::Parser;

    fn args(extra: &[&str]) -> Args {
        let base = ["rialto", "push", "--store", "s", "--input", "x.parquet"];
        match crate::Cli::try_parse_from(base.iter().chain(extra)) {
            Ok(crate::Cli {
                command: crate::Command::Push(a),
            }) => a,
            other => panic!("{other:?}"),
        }
    }

    fn options(extra: &[&str]) -> Result<(PushLayout, Option<RowSpec>, Nulls), String> {
        value_options(&args(extra)).map_err(|e| e.to_string())
    }

    #[test]
    fn layouts_value_formats_fields_and_nulls_combine_as_documented() {
        let (layout, row, nulls) = options(&[]).unwrap();
        assert_eq!(
            (layout, row.is_none(), nulls),
            (PushLayout::String, true, Nulls::Error)
        );
        let (layout, row, nulls) = options(&["--layout", "hash"]).unwrap();
        let row = row.unwrap();
        assert_eq!(
            (layout, row.fields, nulls),
            (PushLayout::Hash, None, Nulls::Skip)
        );
        assert!(matches!(row.encoding, RowEncoding::Hash(_)));
        let (layout, row, _) = options(&["--value-format", "json", "--fields", "b,a"]).unwrap();
        let row = row.unwrap();
        assert_eq!(layout, PushLayout::String);
        assert_eq!(row.fields, Some(vec!["b".to_string(), "a".to_string()]));
        assert!(matches!(row.encoding, RowEncoding::Json));
        let (_, _, nulls) = options(&["--nulls", "empty"]).unwrap();
        assert_eq!(nulls, Nulls::Empty);
        let (_, _, nulls) = options(&["--layout", "hash", "--nulls", "error"]).unwrap();
        assert_eq!(nulls, Nulls::Error);
        for (extra, says) in [
            (
                &["--layout", "hash", "--value-format", "json"][..],
                "--value-format json",
            ),
            (&["--fields", "a"][..], "--fields needs"),
            (
                &["--value-format", "json", "--value-field", "v"][..],
                "--value-field",
            ),
        ] {
            let e = options(extra).unwrap_err();
            assert!(e.contains(says), "{extra:?}: {e}");
        }
    }

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
