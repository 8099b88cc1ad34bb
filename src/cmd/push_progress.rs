//! What `rialto push` shows on stderr while it runs: on a terminal a bar per phase, elsewhere
//! (a scheduler's log, a file) plain lines, with no terminal control codes, every
//! `--progress-interval` and at each phase change.
//!
//! The phases are the client's `read` (the inputs read, and sent with `--server`) and the
//! commit's `sort`, `write` and `swap` (link, replay and swap, then the spilled runs'
//! removal), which the client learns by polling the server's STORE DESCRIBE (with `--dir`,
//! the push registry) while it waits for the commit. Without the server's phases (cluster
//! mode) the commit is one phase, `commit`.
//!
//! Rates are averages over the phase so far and the ETA is the rest of the phase's work at
//! that rate; both are pure functions of the figures and the time, tested below. Each phase
//! counts its own work: `read` the input bytes, `write` the records written; `sort` the
//! records its last step processes (the last buffer sorted in memory, the spill it waits
//! for, the merge passes), whose ETA is the rest at the speed of the push's own spills,
//! since the in-memory sort moves its count all at once: a push sorted wholly in memory has
//! no spill to go by and says so ("no estimate"); `swap` the streamed writes replayed (while
//! `replaying`, rated from when that step was first seen); linking and cleaning up are
//! not measured, and show their time.

use std::fmt::Write as _;
use std::io::Write;
use std::time::{Duration, Instant};

/// A phase of a push, in order; [`Phase::Commit`] stands for sort, write and swap when the
/// server does not report them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    Read,
    Sort,
    Write,
    Swap,
    Commit,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Read => "read",
            Phase::Sort => "sort",
            Phase::Write => "write",
            Phase::Swap => "swap",
            Phase::Commit => "commit",
        }
    }

    /// The phase and step of a server phase name (`PushPhase::name`); `None` before the
    /// commit runs (`adding`, `pending`) and for a name this client does not know.
    pub fn of_server(name: &str) -> Option<(Phase, Option<&'static str>)> {
        Some(match name {
            "sorting" => (Phase::Sort, None),
            "writing" => (Phase::Write, None),
            "linking" => (Phase::Swap, Some("linking")),
            "replaying" => (Phase::Swap, Some("replaying")),
            "cleaning_up" => (Phase::Swap, Some("cleaning up")),
            _ => return None,
        })
    }

    /// The phase a commit step of `PushReport::phases` (or PUSH COMMIT's `<step>-ms`)
    /// belongs to.
    pub fn of_commit_step(step: &str) -> Option<Phase> {
        match step {
            "sort" => Some(Phase::Sort),
            "write" => Some(Phase::Write),
            "link" | "replay" | "cleanup" => Some(Phase::Swap),
            _ => None,
        }
    }

    /// Whether the phase's records are counted as it goes (and so have a rate).
    fn counts_records(self) -> bool {
        matches!(self, Phase::Read | Phase::Write)
    }
}

/// How far a push is at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    /// Records read (in `read`), or added to the push (later).
    pub records: u64,
    /// Their key and value bytes.
    pub bytes: u64,
    /// The phase's work done, in its unit: input bytes consumed (`read`), records written
    /// (`write`).
    pub done: u64,
    /// The phase's whole work in that unit, when known.
    pub total: Option<u64>,
    /// The speed of the phase's work known from elsewhere, in its unit per second (`sort`:
    /// that of the push's spills; `None`: nothing spilled).
    pub speed: Option<u64>,
    /// Merge passes left (`sort`).
    pub passes: u64,
}

impl Figures {
    /// Records the phase has processed: read, or written.
    fn processed(&self, phase: Phase) -> u64 {
        match phase {
            Phase::Write => self.done,
            _ => self.records,
        }
    }

    /// Bytes of the processed records (in `write` in proportion to the records written,
    /// since tables are not counted in record bytes).
    fn processed_bytes(&self, phase: Phase) -> u64 {
        match phase {
            Phase::Write if self.records > 0 => {
                (self.bytes as f64 * (self.done.min(self.records) as f64 / self.records as f64))
                    as u64
            }
            _ => self.bytes,
        }
    }

    /// The share of the phase's work done, 0 to 1, when its total is known.
    pub fn ratio(&self) -> Option<f64> {
        match self.total {
            Some(0) | None => None,
            Some(t) => Some((self.done as f64 / t as f64).min(1.0)),
        }
    }
}

/// A phase's rates since it began, and when it should end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub records_per_s: Option<f64>,
    pub bytes_per_s: Option<f64>,
    pub eta: Option<Duration>,
}

/// Rates of `phase` between `base` (its figures when it began) and `now`, `elapsed` apart.
/// `None` where the phase counts nothing, or no time has passed; no ETA before any work is
/// done, since a rate of zero says nothing about when it ends. `sort` and `swap` count their
/// work in their own unit ([`Figures::done`]) and have no byte rate; `sort`'s ETA goes by
/// [`Figures::speed`].
pub fn rates(phase: Phase, base: &Figures, now: &Figures, elapsed: Duration) -> Rates {
    let secs = elapsed.as_secs_f64();
    if secs < 1e-3 {
        return Rates {
            records_per_s: None,
            bytes_per_s: None,
            eta: None,
        };
    }
    if matches!(phase, Phase::Sort | Phase::Swap) {
        return work_rates(phase, base, now, secs);
    }
    let counted = phase.counts_records();
    let records = now.processed(phase).saturating_sub(base.processed(phase));
    let bytes = now
        .processed_bytes(phase)
        .saturating_sub(base.processed_bytes(phase));
    let eta = now.total.and_then(|total| {
        if now.done >= total {
            return Some(Duration::ZERO);
        }
        let per_s = now.done.saturating_sub(base.done) as f64 / secs;
        (per_s > 0.0).then(|| Duration::from_secs_f64((total - now.done) as f64 / per_s))
    });
    Rates {
        records_per_s: counted.then_some(records as f64 / secs),
        bytes_per_s: counted.then_some(bytes as f64 / secs),
        eta,
    }
}

/// The rates of `sort` and `swap`, in their unit of work. `sort`'s in-memory step moves its
/// count all at once, so its ETA is the rest at the spills' speed, and its rate that speed
/// until the count moves; `swap`'s are those of the replay so far.
fn work_rates(phase: Phase, base: &Figures, now: &Figures, secs: f64) -> Rates {
    let moved = now.done.saturating_sub(base.done);
    let observed = (moved > 0).then(|| moved as f64 / secs);
    let left = now.total.map(|t| t.saturating_sub(now.done));
    let (per_s, eta_per_s) = match phase {
        Phase::Sort => {
            let speed = now.speed.filter(|&s| s > 0).map(|s| s as f64);
            (observed.or(speed), speed)
        }
        _ => (now.total.and(observed), observed),
    };
    let eta = match left {
        Some(0) => Some(Duration::ZERO),
        Some(left) => eta_per_s.map(|r| Duration::from_secs_f64(left as f64 / r)),
        None => None,
    };
    Rates {
        records_per_s: per_s,
        bytes_per_s: None,
        eta,
    }
}

/// What `sort` and `swap` count, for their lines.
fn work_unit(phase: Phase) -> Option<&'static str> {
    match phase {
        Phase::Sort => Some("records sorted"),
        Phase::Swap => Some("entries replayed"),
        _ => None,
    }
}

/// ` | 1,000 of 3,000 records sorted | 2 merge passes`: `sort`'s and `swap`'s work, where
/// it is known.
fn work_text(phase: Phase, now: &Figures) -> String {
    let mut out = String::new();
    if let (Some(unit), Some(total)) = (work_unit(phase), now.total) {
        if phase == Phase::Swap && total == 0 {
            return " | no streamed writes to replay".into();
        }
        let _ = write!(out, " | {} of {} {unit}", count(now.done), count(total));
        match now.passes {
            0 => {}
            1 => out.push_str(" | 1 merge pass left"),
            n => {
                let _ = write!(out, " | {n} merge passes left");
            }
        }
    }
    out
}

/// ` | 500,000 records/s`, `sort`'s and `swap`'s rate in their unit.
fn work_rate_text(phase: Phase, r: &Rates) -> String {
    match (phase, r.records_per_s) {
        (Phase::Sort, Some(rps)) => format!(" | {} records/s", count(rps.round() as u64)),
        (Phase::Swap, Some(rps)) => format!(" | {} entries/s", count(rps.round() as u64)),
        _ => String::new(),
    }
}

/// `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Decimal units, as the rest of the CLI prints sizes: `512 B`, `45.1 MB`.
pub fn size(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];
    if bytes < 1000.0 {
        return format!("{bytes:.0} B");
    }
    let mut v = bytes / 1000.0;
    let mut unit = UNITS[0];
    for u in &UNITS[1..] {
        if v < 1000.0 {
            break;
        }
        v /= 1000.0;
        unit = u;
    }
    format!("{v:.1} {unit}")
}

/// `0.4s`, `42s`, `3m05s`, `2h07m`.
pub fn duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 10.0 {
        return format!("{secs:.1}s");
    }
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// A bar per phase, redrawn in place, at most `columns` wide.
    Bars { columns: usize },
    /// Plain lines at each phase change and every `every` in between (`None`: only at
    /// phase changes).
    Lines { every: Option<Duration> },
    /// Nothing.
    Off,
}

/// Bars are redrawn at most this often.
const REDRAW: Duration = Duration::from_millis(200);
/// Cells of a bar.
const BAR_CELLS: usize = 20;

/// The phase being shown.
struct Current {
    phase: Phase,
    step: Option<&'static str>,
    started: Instant,
    /// When the step was first seen, and the figures then: the work of a new step is
    /// counted from there.
    step_started: Instant,
    base: Figures,
    now: Figures,
}

/// Shows a push's progress: told of phases and figures, it decides what to write and when.
/// Every method takes the time it acts at, so that tests run on a made-up clock. Write errors
/// are ignored: progress is information, and a closed stderr must not stop a push.
pub struct Reporter {
    mode: Mode,
    out: Box<dyn Write + Send>,
    began: Instant,
    current: Option<Current>,
    /// Phases ended, with how long each took as seen here.
    ended: Vec<(Phase, Duration)>,
    /// When something was last written (a line or a redraw).
    last_output: Instant,
    /// A phase that began and ended between two looks took at most this long.
    poll_every: Duration,
}

impl Reporter {
    pub fn new(mode: Mode, out: Box<dyn Write + Send>, poll_every: Duration, at: Instant) -> Self {
        Reporter {
            mode,
            out,
            began: at,
            current: None,
            ended: Vec::new(),
            last_output: at,
            poll_every,
        }
    }

    /// The phase shown now.
    pub fn phase(&self) -> Option<Phase> {
        self.current.as_ref().map(|c| c.phase)
    }

    /// Moves to `phase` with figures `figs` (`detail` for its first line), ending the phase
    /// shown and any skipped between them. Phases only move forward: an earlier or the same
    /// phase changes nothing.
    pub fn enter(&mut self, phase: Phase, figs: Figures, detail: Option<String>, at: Instant) {
        if self.phase().is_some_and(|p| p >= phase) {
            return;
        }
        if let Some(mut c) = self.current.take() {
            let from = c.phase;
            let took = at.saturating_duration_since(c.started);
            // A phase left is complete, whatever the last look saw of it.
            c.now.done = c.now.total.unwrap_or(c.now.done);
            self.end(c, took, at);
            // Server phases that began and ended between two looks (`commit` stands for
            // them all, so it skips none).
            if phase != Phase::Commit {
                for skipped in [Phase::Sort, Phase::Write, Phase::Swap] {
                    if skipped > from && skipped < phase {
                        self.skipped(skipped, figs, at);
                    }
                }
            }
        }
        self.start(phase, figs, detail, at);
    }

    /// The last figures of the phase shown, for its done line, without writing anything.
    pub fn last_figures(&mut self, figs: Figures) {
        if let Some(c) = self.current.as_mut() {
            c.now = figs;
        }
    }

    /// New figures (and step) for the phase shown; writes if it is time to.
    pub fn update(&mut self, figs: Figures, step: Option<&'static str>, at: Instant) {
        let Some(c) = self.current.as_mut() else {
            return;
        };
        if step.is_some() && step != c.step {
            // A step measured after one that was not (the replay after the link): its
            // rates count from here.
            if c.step.is_some() && c.now.total.is_none() {
                c.base = figs;
                c.step_started = at;
            }
            c.step = step;
        }
        c.now = figs;
        self.tick(at);
    }

    /// Writes if it is time to, with the figures known (for the time elapsed).
    pub fn tick(&mut self, at: Instant) {
        let since = at.saturating_duration_since(self.last_output);
        match self.mode {
            Mode::Bars { .. } if since >= REDRAW => self.redraw(false, at),
            Mode::Lines { every: Some(every) } if since >= every => {
                if let Some(line) = self.current.as_ref().map(|c| status_line(c, at)) {
                    self.line(&line, at);
                }
            }
            _ => {}
        }
    }

    /// The push succeeded: ends the phase shown and any the server ran since the last look,
    /// and sums up. `exact` holds how long the server's phases took, where known (the
    /// commit's report); they replace what was seen here.
    pub fn finish(&mut self, figs: Figures, exact: &[(Phase, Duration)], at: Instant) {
        let exact_of = |p: Phase| -> Option<Duration> {
            let mut it = exact.iter().filter(|e| e.0 == p).map(|e| e.1).peekable();
            it.peek()?;
            Some(it.sum())
        };
        if let Some(mut c) = self.current.take() {
            let last = c.phase;
            let took = exact_of(last).unwrap_or(at.saturating_duration_since(c.started));
            c.now.done = c.now.total.unwrap_or(c.now.done);
            self.end(c, took, at);
            // The server's phases after the last one seen, when the server reported them.
            if last != Phase::Commit && last != Phase::Read {
                for p in [Phase::Write, Phase::Swap] {
                    if p > last {
                        let took = exact_of(p).unwrap_or(Duration::ZERO);
                        let seen = if p == Phase::Write {
                            write_figures(figs)
                        } else {
                            figs
                        };
                        self.start(p, seen, None, at);
                        if let Some(c) = self.current.take() {
                            self.end(c, took, at);
                        }
                    }
                }
            }
        }
        let mut line = format!(
            "push: done in {}",
            duration(at.saturating_duration_since(self.began))
        );
        let ended = self.ended.clone();
        for (p, seen) in ended {
            let took = if p == Phase::Read {
                seen
            } else {
                exact_of(p).unwrap_or(seen)
            };
            let _ = write!(line, " | {} {}", p.name(), duration(took));
        }
        // Under the bars too: the server's own times of its phases.
        if self.mode != Mode::Off {
            self.raw(&format!("{line}\n"));
        }
    }

    /// The push failed or was interrupted: leaves the terminal on a fresh line; the error
    /// follows.
    pub fn abandon(&mut self, at: Instant) {
        if let (Mode::Bars { .. }, Some(_)) = (self.mode, &self.current) {
            self.redraw(false, at);
            self.raw("\n");
        }
        self.current = None;
    }

    fn start(&mut self, phase: Phase, figs: Figures, detail: Option<String>, at: Instant) {
        self.current = Some(Current {
            phase,
            step: None,
            started: at,
            step_started: at,
            base: figs,
            now: figs,
        });
        match self.mode {
            Mode::Lines { .. } => {
                let mut line = format!("push: {} started", phase.name());
                if let Some(d) = detail {
                    let _ = write!(line, " ({d})");
                }
                self.line(&line, at);
            }
            Mode::Bars { .. } => self.redraw(false, at),
            Mode::Off => {}
        }
    }

    fn end(&mut self, c: Current, took: Duration, at: Instant) {
        self.ended.push((c.phase, took));
        match self.mode {
            Mode::Lines { .. } => {
                let line = done_line(&c, took, None);
                self.line(&line, at);
            }
            Mode::Bars { .. } => {
                self.current = Some(c);
                self.redraw(true, at);
                self.raw("\n");
                self.current = None;
            }
            Mode::Off => {}
        }
    }

    /// A phase that began and ended between two looks: its lines, with its time bounded.
    fn skipped(&mut self, phase: Phase, figs: Figures, at: Instant) {
        let figs = if phase == Phase::Write {
            write_figures(figs)
        } else {
            figs
        };
        self.start(phase, figs, None, at);
        if let Some(mut c) = self.current.take() {
            c.base.done = 0;
            let bound = self.poll_every;
            match self.mode {
                Mode::Lines { .. } => {
                    let line = done_line(&c, bound, Some(bound));
                    self.line(&line, at);
                }
                Mode::Bars { .. } => {
                    self.current = Some(c);
                    self.redraw(true, at);
                    self.raw("\n");
                    self.current = None;
                }
                Mode::Off => {}
            }
            self.ended.push((phase, bound));
        }
    }

    fn redraw(&mut self, ended: bool, at: Instant) {
        let Mode::Bars { columns } = self.mode else {
            return;
        };
        let Some(c) = &self.current else {
            return;
        };
        let mut text = bar_line(c, ended, at);
        truncate(&mut text, columns.saturating_sub(1));
        // Back to the line's start, the line, then clear what a longer one left.
        self.raw(&format!("\r{text}\x1b[K"));
        self.last_output = at;
    }

    fn line(&mut self, text: &str, at: Instant) {
        if let Mode::Lines { .. } = self.mode {
            self.raw(&format!("{text}\n"));
            self.last_output = at;
        }
    }

    fn raw(&mut self, s: &str) {
        let _ = self.out.write_all(s.as_bytes());
        let _ = self.out.flush();
    }
}

/// Figures for `write` when its records were all written before it was seen.
fn write_figures(figs: Figures) -> Figures {
    Figures {
        done: figs.records,
        total: Some(figs.records),
        ..figs
    }
}

/// A periodic line: `push: write 50% | 1,500,000 of 3,000,000 records | 56.0 MB |
/// 500,000 records/s | 18.7 MB/s | 3.0s elapsed | ETA 3.0s`.
/// `elapsed` is the phase's time, `in_step` that of its step, which its rates count from.
pub fn status_line_of(
    phase: Phase,
    step: Option<&'static str>,
    base: &Figures,
    now: &Figures,
    elapsed: Duration,
    in_step: Duration,
) -> String {
    let r = rates(phase, base, now, in_step);
    let mut line = format!("push: {}", phase.name());
    if let Some(step) = step {
        let _ = write!(line, " ({step})");
    }
    if let Some(ratio) = now.ratio() {
        let _ = write!(line, " {:.0}%", 100.0 * ratio);
    }
    match phase {
        Phase::Write => {
            let _ = write!(
                line,
                " | {} of {} records | {}",
                count(now.done),
                count(now.records),
                size(now.processed_bytes(phase) as f64)
            );
        }
        _ => {
            let _ = write!(
                line,
                " | {} records | {}",
                count(now.records),
                size(now.bytes as f64)
            );
        }
    }
    line.push_str(&work_text(phase, now));
    if let (Some(rps), Some(bps)) = (r.records_per_s, r.bytes_per_s) {
        let _ = write!(
            line,
            " | {} records/s | {}/s",
            count(rps.round() as u64),
            size(bps)
        );
    }
    line.push_str(&work_rate_text(phase, &r));
    let _ = write!(line, " | {} elapsed", duration(elapsed));
    match r.eta {
        Some(eta) => {
            let _ = write!(line, " | ETA {}", duration(eta));
        }
        // A sort with its work known and no spill: in memory, with nothing to go by.
        None if phase == Phase::Sort && now.total.is_some() && now.speed.is_none() => {
            line.push_str(" | no estimate (sorted in memory, no spill to time)")
        }
        None => line.push_str(" | ETA unknown"),
    }
    line
}

fn status_line(c: &Current, at: Instant) -> String {
    let elapsed = at.saturating_duration_since(c.started);
    let in_step = at.saturating_duration_since(c.step_started);
    status_line_of(c.phase, c.step, &c.base, &c.now, elapsed, in_step)
}

/// The line that ends a phase: `push: read done in 25s | 3,000,000 records | 112.0 MB |
/// 120,000 records/s | 4.5 MB/s`; `within` says the phase ran between two looks.
fn done_line(c: &Current, took: Duration, within: Option<Duration>) -> String {
    let mut line = match within {
        Some(bound) => format!("push: {} done in under {}", c.phase.name(), duration(bound)),
        None => format!("push: {} done in {}", c.phase.name(), duration(took)),
    };
    let records = c.now.processed(c.phase);
    let _ = write!(
        line,
        " | {} records | {}",
        count(records),
        size(c.now.processed_bytes(c.phase) as f64)
    );
    line.push_str(&work_text(c.phase, &c.now));
    if within.is_none() {
        // Rates count from the step their base is from.
        let before_step = c.step_started.saturating_duration_since(c.started);
        let r = rates(c.phase, &c.base, &c.now, took.saturating_sub(before_step));
        if let (Some(rps), Some(bps)) = (r.records_per_s, r.bytes_per_s) {
            let _ = write!(
                line,
                " | {} records/s | {}/s",
                count(rps.round() as u64),
                size(bps)
            );
        }
        line.push_str(&work_rate_text(c.phase, &r));
    }
    line
}

/// A bar line, what matters most first (a narrow terminal cuts the end): `write  [#####
/// ]  50%  3.0s  ETA 3.0s  1,500,000/3,000,000 rec  500,000 rec/s  18.7 MB/s`. A phase with
/// no measure of its work shows a block moving with time instead of a fill, and its step.
fn bar_line(c: &Current, ended: bool, at: Instant) -> String {
    let elapsed = at.saturating_duration_since(c.started);
    let r = rates(
        c.phase,
        &c.base,
        &c.now,
        at.saturating_duration_since(c.step_started),
    );
    let ratio = if ended { Some(1.0) } else { c.now.ratio() };
    let cells = match ratio {
        Some(ratio) => {
            let full = ((ratio * BAR_CELLS as f64) as usize).min(BAR_CELLS);
            format!("{}{}", "#".repeat(full), " ".repeat(BAR_CELLS - full))
        }
        None => {
            // Three cells bouncing from end to end, one step every 100 ms.
            let span = BAR_CELLS - 3;
            let step = (elapsed.as_millis() / 100) as usize % (2 * span);
            let pos = if step <= span { step } else { 2 * span - step };
            format!("{}==={}", " ".repeat(pos), " ".repeat(span - pos))
        }
    };
    let mut line = format!("{:<6} [{cells}]", c.phase.name());
    match ratio {
        Some(ratio) => {
            let _ = write!(line, " {:>3.0}%", 100.0 * ratio);
        }
        None => line.push_str("     "),
    }
    let _ = write!(line, "  {}", duration(elapsed));
    if !ended {
        if let Some(eta) = r.eta {
            let _ = write!(line, "  ETA {}", duration(eta));
        }
        if let Some(step) = c.step {
            let _ = write!(line, "  {step}");
        }
    }
    match (c.phase, c.now.total) {
        (Phase::Write, _) => {
            let _ = write!(line, "  {}/{} rec", count(c.now.done), count(c.now.records));
        }
        (Phase::Sort, Some(total)) => {
            let _ = write!(line, "  {}/{} rec", count(c.now.done), count(total));
        }
        (Phase::Swap, Some(total)) if total > 0 => {
            let _ = write!(line, "  {}/{} entries", count(c.now.done), count(total));
        }
        _ => {
            let _ = write!(
                line,
                "  {} rec  {}",
                count(c.now.records),
                size(c.now.bytes as f64)
            );
        }
    }
    match (r.records_per_s, r.bytes_per_s) {
        (Some(rps), Some(bps)) => {
            let _ = write!(
                line,
                "  {} rec/s  {}/s",
                count(rps.round() as u64),
                size(bps)
            );
        }
        (Some(rps), None) => {
            let unit = if c.phase == Phase::Swap {
                "entries"
            } else {
                "rec"
            };
            let _ = write!(line, "  {} {unit}/s", count(rps.round() as u64));
        }
        _ => {}
    }
    line
}

/// Cuts `s` to at most `max` characters (a line longer than the terminal would wrap, and
/// the next redraw would start on the wrong line).
fn truncate(s: &mut String, max: usize) {
    if let Some((i, _)) = s.char_indices().nth(max) {
        s.truncate(i);
    }
}

/// The terminal's width on stderr, 80 when it cannot be told.
pub fn stderr_columns() -> usize {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ fills the winsize passed; nothing else is touched.
    let ok = unsafe { libc::ioctl(2, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        usize::from(ws.ws_col)
    } else {
        80
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A sink the test reads back.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Sink {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    const SEC: Duration = Duration::from_secs(1);
    const POLL: Duration = Duration::from_millis(500);

    fn reporter(mode: Mode, t0: Instant) -> (Reporter, Sink) {
        let sink = Sink::default();
        (Reporter::new(mode, Box::new(sink.clone()), POLL, t0), sink)
    }

    fn read_figs(records: u64, input: u64) -> Figures {
        Figures {
            records,
            bytes: records * 100,
            done: input,
            total: Some(1000),
            ..Figures::default()
        }
    }

    #[test]
    fn numbers_sizes_and_durations_read_plainly() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(size(512.0), "512 B");
        assert_eq!(size(45_100_000.0), "45.1 MB");
        assert_eq!(size(2.5e12), "2.5 TB");
        assert_eq!(duration(Duration::from_millis(400)), "0.4s");
        assert_eq!(duration(Duration::from_secs(42)), "42s");
        assert_eq!(duration(Duration::from_secs(185)), "3m05s");
        assert_eq!(duration(Duration::from_secs(7620)), "2h07m");
    }

    #[test]
    fn eta_is_the_rest_of_the_work_at_the_rate_so_far() {
        let base = read_figs(0, 0);
        // A quarter of the input in 10 s: 30 s to go.
        let r = rates(Phase::Read, &base, &read_figs(500, 250), 10 * SEC);
        assert_eq!(r.eta, Some(30 * SEC));
        assert_eq!(r.records_per_s, Some(50.0));
        assert_eq!(r.bytes_per_s, Some(5000.0));
        // Nothing done yet: no ETA, not an infinite one.
        let r = rates(Phase::Read, &base, &base, 10 * SEC);
        assert_eq!(r.eta, None);
        // All done: nothing left.
        let r = rates(Phase::Read, &base, &read_figs(9, 1000), SEC);
        assert_eq!(r.eta, Some(Duration::ZERO));
        // No time yet: no rate.
        let r = rates(Phase::Read, &base, &read_figs(9, 10), Duration::ZERO);
        assert_eq!((r.records_per_s, r.eta), (None, None));
    }

    #[test]
    fn write_rates_count_records_written_since_the_phase_was_seen() {
        // Seen first with 100 of 1,000 written; 300 more in 2 s: 150/s, 600 left, 4 s.
        let f = |done| Figures {
            records: 1000,
            bytes: 100_000,
            done,
            total: Some(1000),
            ..Figures::default()
        };
        let r = rates(Phase::Write, &f(100), &f(400), 2 * SEC);
        assert_eq!(r.records_per_s, Some(150.0));
        assert_eq!(r.bytes_per_s, Some(15_000.0));
        assert_eq!(r.eta, Some(4 * SEC));
        let line = status_line_of(Phase::Write, None, &f(100), &f(400), 2 * SEC, 2 * SEC);
        assert_eq!(
            line,
            "push: write 40% | 400 of 1,000 records | 40.0 kB | 150 records/s | 15.0 kB/s | 2.0s elapsed | ETA 4.0s"
        );
    }

    #[test]
    fn phases_without_a_measure_show_time_and_no_eta() {
        let f = Figures {
            records: 3_000_000,
            bytes: 112_000_000,
            done: 0,
            total: None,
            ..Figures::default()
        };
        let r = rates(Phase::Sort, &f, &f, 12 * SEC);
        assert_eq!((r.records_per_s, r.eta), (None, None));
        let line = status_line_of(Phase::Swap, Some("replaying"), &f, &f, 12 * SEC, 12 * SEC);
        assert_eq!(
            line,
            "push: swap (replaying) | 3,000,000 records | 112.0 MB | 12s elapsed | ETA unknown"
        );
    }

    fn sort_figs(done: u64, speed: Option<u64>, passes: u64) -> Figures {
        Figures {
            records: 3000,
            bytes: 300_000,
            done,
            total: Some(4000),
            speed,
            passes,
        }
    }

    #[test]
    fn sort_eta_is_the_rest_at_the_spills_speed() {
        let base = sort_figs(0, Some(1000), 1);
        // The in-memory sort has not moved the count: the spills' speed is the rate.
        let r = rates(Phase::Sort, &base, &base, SEC);
        assert_eq!((r.records_per_s, r.eta), (Some(1000.0), Some(4 * SEC)));
        assert_eq!(r.bytes_per_s, None);
        // 1,000 sorted in memory in 0.5 s: that is the rate seen, the ETA still at the
        // spills' speed (the rest is writing and merging).
        let now = sort_figs(1000, Some(1000), 1);
        let r = rates(Phase::Sort, &base, &now, SEC / 2);
        assert_eq!((r.records_per_s, r.eta), (Some(2000.0), Some(3 * SEC)));
        let line = status_line_of(Phase::Sort, None, &base, &now, SEC, SEC / 2);
        assert_eq!(
            line,
            "push: sort 25% | 3,000 records | 300.0 kB | 1,000 of 4,000 records sorted | 1 merge pass left | 2,000 records/s | 1.0s elapsed | ETA 3.0s"
        );
        // Nothing spilled: sorted in memory, and no speed to estimate by.
        let mem = Figures {
            total: Some(3000),
            ..sort_figs(0, None, 0)
        };
        let r = rates(Phase::Sort, &mem, &mem, SEC);
        assert_eq!((r.records_per_s, r.eta), (None, None));
        let line = status_line_of(Phase::Sort, None, &mem, &mem, SEC, SEC);
        assert!(
            line.ends_with("| 0 of 3,000 records sorted | 1.0s elapsed | no estimate (sorted in memory, no spill to time)"),
            "{line}"
        );
        // Done: its records over its time, whatever the speed.
        let done = Figures { done: 3000, ..mem };
        let r = rates(Phase::Sort, &mem, &done, 2 * SEC);
        assert_eq!(
            (r.records_per_s, r.eta),
            (Some(1500.0), Some(Duration::ZERO))
        );

        // Its last figures, seen once the write began, make its done line, and only that.
        let t0 = Instant::now();
        let (mut rep, sink) = reporter(Mode::Lines { every: Some(SEC) }, t0);
        rep.enter(Phase::Sort, sort_figs(0, None, 0), None, t0);
        rep.last_figures(done);
        rep.enter(Phase::Write, write_figures(done), None, t0 + 2 * SEC);
        let text = sink.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..2],
            [
                "push: sort started",
                "push: sort done in 2.0s | 3,000 records | 300.0 kB | 3,000 of 3,000 records sorted | 1,500 records/s",
            ],
            "{text}"
        );
    }

    #[test]
    fn swap_rates_the_replay_from_when_it_was_seen() {
        let t0 = Instant::now();
        let (mut r, sink) = reporter(Mode::Lines { every: Some(SEC) }, t0);
        let added = Figures {
            records: 10,
            bytes: 100,
            ..Figures::default()
        };
        let replay = |done, total| Figures {
            done,
            total: Some(total),
            ..added
        };
        r.enter(Phase::Swap, added, None, t0);
        r.update(added, Some("linking"), t0 + SEC);
        // The replay seen 4 s in: 100 of 1,000 entries; 2 s later 500.
        r.update(replay(100, 1000), Some("replaying"), t0 + 4 * SEC);
        r.update(replay(500, 1000), Some("replaying"), t0 + 6 * SEC);
        r.update(replay(1000, 1000), Some("cleaning up"), t0 + 7 * SEC);
        r.finish(added, &[], t0 + 8 * SEC);
        let text = sink.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1..5],
            [
                "push: swap (linking) | 10 records | 100 B | 1.0s elapsed | ETA unknown",
                "push: swap (replaying) 10% | 10 records | 100 B | 100 of 1,000 entries replayed | 4.0s elapsed | ETA unknown",
                "push: swap (replaying) 50% | 10 records | 100 B | 500 of 1,000 entries replayed | 200 entries/s | 6.0s elapsed | ETA 2.5s",
                "push: swap (cleaning up) 100% | 10 records | 100 B | 1,000 of 1,000 entries replayed | 300 entries/s | 7.0s elapsed | ETA 0.0s",
            ],
            "{text}"
        );
        assert!(
            lines[5].starts_with("push: swap done in 8.0s | 10 records | 100 B | 1,000 of 1,000 entries replayed | 225 entries/s"),
            "{text}"
        );
        // Nothing streamed meanwhile: said so, with no rate.
        let none = replay(0, 0);
        let line = status_line_of(Phase::Swap, Some("replaying"), &none, &none, SEC, SEC);
        assert!(
            line.contains("| no streamed writes to replay | 1.0s elapsed | ETA 0.0s"),
            "{line}"
        );
    }

    #[test]
    fn server_phases_and_commit_steps_map_onto_the_client_phases() {
        assert_eq!(Phase::of_server("adding"), None);
        assert_eq!(Phase::of_server("pending"), None);
        assert_eq!(Phase::of_server("sorting"), Some((Phase::Sort, None)));
        assert_eq!(Phase::of_server("writing"), Some((Phase::Write, None)));
        assert_eq!(
            Phase::of_server("replaying"),
            Some((Phase::Swap, Some("replaying")))
        );
        assert_eq!(
            Phase::of_server("cleaning_up").map(|p| p.0),
            Some(Phase::Swap)
        );
        let steps: Vec<_> = ["sort", "write", "link", "replay", "cleanup"]
            .iter()
            .map(|s| Phase::of_commit_step(s))
            .collect();
        use Phase::*;
        assert_eq!(
            steps,
            [Some(Sort), Some(Write), Some(Swap), Some(Swap), Some(Swap)]
        );
    }

    /// A whole push in log lines: a line at each phase change and every interval, nothing
    /// that is not plain text.
    #[test]
    fn lines_mode_writes_each_phase_and_periodic_lines_without_escapes() {
        let t0 = Instant::now();
        let every = Some(10 * SEC);
        let (mut r, sink) = reporter(Mode::Lines { every }, t0);
        r.enter(
            Phase::Read,
            read_figs(0, 0),
            Some("2 files, 1.0 kB".into()),
            t0,
        );
        r.update(read_figs(100, 100), None, t0 + SEC);
        // Not yet the interval: nothing new.
        assert_eq!(sink.text().lines().count(), 1);
        r.update(read_figs(1000, 500), None, t0 + 10 * SEC);
        r.update(read_figs(2000, 1000), None, t0 + 12 * SEC);
        let total = Figures {
            records: 2000,
            bytes: 200_000,
            done: 0,
            total: None,
            ..Figures::default()
        };
        r.enter(Phase::Sort, total, None, t0 + 20 * SEC);
        let writing = |done| Figures {
            done,
            total: Some(2000),
            ..total
        };
        r.enter(Phase::Write, writing(0), None, t0 + 21 * SEC);
        r.update(writing(1000), None, t0 + 31 * SEC);
        r.enter(Phase::Swap, total, None, t0 + 33 * SEC);
        r.update(total, Some("replaying"), t0 + 34 * SEC);
        // An earlier phase seen late changes nothing.
        r.enter(Phase::Write, writing(1500), None, t0 + 34 * SEC);
        let exact = [
            (Phase::Sort, Duration::from_millis(900)),
            (Phase::Write, 12 * SEC),
            (Phase::Swap, Duration::from_millis(100)),
            (Phase::Swap, Duration::from_millis(200)),
        ];
        r.finish(total, &exact, t0 + 35 * SEC);
        let text = sink.text();
        assert!(!text.contains('\x1b') && !text.contains('\r'), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "push: read started (2 files, 1.0 kB)",
                "push: read 50% | 1,000 records | 100.0 kB | 100 records/s | 10.0 kB/s | 10s elapsed | ETA 10s",
                "push: read done in 20s | 2,000 records | 200.0 kB | 100 records/s | 10.0 kB/s",
                "push: sort started",
                "push: sort done in 1.0s | 2,000 records | 200.0 kB",
                "push: write started",
                "push: write 50% | 1,000 of 2,000 records | 100.0 kB | 100 records/s | 10.0 kB/s | 10s elapsed | ETA 10s",
                "push: write done in 12s | 2,000 records | 200.0 kB | 167 records/s | 16.7 kB/s",
                "push: swap started",
                "push: swap done in 0.3s | 2,000 records | 200.0 kB",
                "push: done in 35s | read 20s | sort 0.9s | write 12s | swap 0.3s",
            ],
            "{text}"
        );
    }

    /// Phases the server ran between two looks, or after the last one, still get their lines
    /// (bounded by the poll interval, or with the report's exact time).
    #[test]
    fn phases_run_between_looks_are_still_reported() {
        let t0 = Instant::now();
        let (mut r, sink) = reporter(Mode::Lines { every: None }, t0);
        let total = Figures {
            records: 10,
            bytes: 100,
            done: 0,
            total: None,
            ..Figures::default()
        };
        r.enter(Phase::Read, read_figs(0, 0), None, t0);
        r.enter(Phase::Sort, total, None, t0 + SEC);
        // Sorting seen, then swapping: writing came and went in between.
        r.enter(Phase::Swap, total, None, t0 + 2 * SEC);
        r.finish(total, &[], t0 + 3 * SEC);
        let text = sink.text();
        let starts: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_suffix(" started"))
            .collect();
        assert_eq!(
            starts,
            ["push: read", "push: sort", "push: write", "push: swap"]
        );
        assert!(
            text.contains("push: write done in under 0.5s | 10 records"),
            "{text}"
        );

        // A commit over before any look: write and swap come from the report.
        let (mut r, sink) = reporter(Mode::Lines { every: None }, t0);
        r.enter(Phase::Read, read_figs(0, 0), None, t0);
        r.enter(Phase::Sort, total, None, t0 + SEC);
        let exact = [
            (Phase::Sort, Duration::from_millis(10)),
            (Phase::Write, Duration::from_millis(20)),
            (Phase::Swap, Duration::from_millis(30)),
        ];
        r.finish(total, &exact, t0 + 2 * SEC);
        let text = sink.text();
        for p in ["sort", "write", "swap"] {
            assert!(text.contains(&format!("push: {p} started")), "{text}");
            assert!(text.contains(&format!("push: {p} done in ")), "{text}");
        }
        assert!(
            text.ends_with("| read 1.0s | sort 0.0s | write 0.0s | swap 0.0s\n"),
            "{text}"
        );
    }

    #[test]
    fn bars_redraw_in_place_within_the_width_and_end_each_phase_on_its_line() {
        let t0 = Instant::now();
        let (mut r, sink) = reporter(Mode::Bars { columns: 60 }, t0);
        r.enter(Phase::Read, read_figs(0, 0), None, t0);
        r.update(read_figs(500, 500), None, t0 + SEC);
        // Too soon after the last redraw: nothing drawn.
        let before = sink.text().len();
        r.update(
            read_figs(600, 600),
            None,
            t0 + SEC + Duration::from_millis(50),
        );
        assert_eq!(sink.text().len(), before);
        r.enter(Phase::Sort, read_figs(1000, 0), None, t0 + 2 * SEC);
        r.abandon(t0 + 3 * SEC);
        let text = sink.text();
        for draw in text.split('\r').skip(1) {
            let visible = draw.split("\x1b[K").next().unwrap();
            assert!(visible.chars().count() < 60, "{visible:?}");
        }
        // One finished line per phase: read ended, sort abandoned.
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(lines.len(), 3, "{text:?}");
        assert!(lines[0].contains("read") && lines[0].contains("[####################] 100%"));
        assert!(lines[1].rsplit('\r').next().unwrap().starts_with("sort"));
        assert_eq!(lines[2], "");
    }

    #[test]
    fn off_writes_nothing() {
        let t0 = Instant::now();
        let (mut r, sink) = reporter(Mode::Off, t0);
        r.enter(Phase::Read, read_figs(0, 0), Some("x".into()), t0);
        r.update(read_figs(10, 10), None, t0 + 100 * SEC);
        r.enter(Phase::Sort, read_figs(10, 10), None, t0 + 101 * SEC);
        r.finish(read_figs(10, 10), &[], t0 + 102 * SEC);
        assert_eq!(sink.text(), "");
    }
}
