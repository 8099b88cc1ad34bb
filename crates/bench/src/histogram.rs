//! Latency histograms (`--histogram=1`), recorded in nanoseconds and printed in microseconds
//! in db_bench's layout.
//!
//! Nanoseconds because a memtable hit takes well under a microsecond: db_bench's integer
//! microseconds would put most reads in the first bucket. HdrHistogram keeps 3 significant
//! digits at any magnitude in bounded memory, and per-thread histograms add up exactly.

use hdrhistogram::Histogram;

/// A new latency histogram (nanoseconds, 3 significant digits, growing as needed).
pub fn new_histogram() -> Histogram<u64> {
    // `new` fails only for a precision above 5 digits; 3 is a constant, so no input reaches
    // this.
    Histogram::new(3).expect("3 significant digits is a valid precision")
}

/// Records `ns`. `saturating_record` would not grow an auto-resizing histogram, so record
/// normally and clamp only what it refuses (values beyond 2^62 ns).
pub fn record(h: &mut Histogram<u64>, ns: u64) {
    if h.record(ns).is_err() {
        h.saturating_record(ns);
    }
}

fn us(ns: f64) -> f64 {
    ns / 1000.0
}

/// db_bench's histogram block for operations called `label` ("write", "read", ...).
pub fn format_histogram(label: &str, h: &Histogram<u64>) -> String {
    let mut s = format!("Microseconds per {label}:\n");
    if h.is_empty() {
        s.push_str("Count: 0\n");
        return s;
    }
    s.push_str(&format!(
        "Count: {} Average: {:.4}  StdDev: {:.2}\n",
        h.len(),
        us(h.mean()),
        us(h.stdev())
    ));
    s.push_str(&format!(
        "Min: {:.4}  Median: {:.4}  Max: {:.4}\n",
        us(h.min() as f64),
        us(h.value_at_quantile(0.5) as f64),
        us(h.max() as f64)
    ));
    s.push_str(&format!(
        "Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}\n",
        us(h.value_at_quantile(0.5) as f64),
        us(h.value_at_quantile(0.75) as f64),
        us(h.value_at_quantile(0.99) as f64),
        us(h.value_at_quantile(0.999) as f64),
        us(h.value_at_quantile(0.9999) as f64),
    ));
    s.push_str("------------------------------------------------------\n");
    // Buckets double from 1 us: [0, 1) [1, 2) [2, 4) ... ; empty ones are left out.
    let total = h.len() as f64;
    let mut cumulative = 0u64;
    let mut low_us = 0u64;
    let mut high_us = 1u64;
    for step in h.iter_log(1000, 2.0) {
        let n = step.count_since_last_iteration();
        if n > 0 {
            cumulative += n;
            let pct = 100.0 * n as f64 / total;
            let marks = "#".repeat((pct / 5.0).round() as usize);
            let line = format!(
                "[ {:>7}, {:>7} ) {:>8} {:>7.3}% {:>7.3}% {}",
                low_us,
                high_us,
                n,
                pct,
                100.0 * cumulative as f64 / total,
                marks
            );
            s.push_str(line.trim_end());
            s.push('\n');
        }
        low_us = high_us;
        high_us = high_us.saturating_mul(2);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_numbers() {
        let mut h = new_histogram();
        for _ in 0..90 {
            record(&mut h, 500); // 0.5 us
        }
        for _ in 0..10 {
            record(&mut h, 3_000); // 3 us
        }
        let s = format_histogram("read", &h);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "Microseconds per read:");
        assert!(
            lines[1].starts_with("Count: 100 Average: 0.750"),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].starts_with("Min: 0.5000  Median: 0.5000  Max: 3.0"),
            "{}",
            lines[2]
        );
        assert!(
            lines[3].starts_with("Percentiles: P50: 0.50 P75: 0.50 P99: 3.00"),
            "{}",
            lines[3]
        );
        assert_eq!(
            lines[5],
            "[       0,       1 )       90  90.000%  90.000% ##################"
        );
        assert_eq!(
            lines[6],
            "[       2,       4 )       10  10.000% 100.000% ##"
        );
        assert_eq!(lines.len(), 7);
    }

    #[test]
    fn empty_and_merged() {
        let h = new_histogram();
        assert_eq!(
            format_histogram("write", &h),
            "Microseconds per write:\nCount: 0\n"
        );
        let mut a = new_histogram();
        let mut b = new_histogram();
        record(&mut a, 1_000_000);
        record(&mut b, 10);
        assert!(a.add(&b).is_ok());
        assert_eq!(a.len(), 2);
    }
}
