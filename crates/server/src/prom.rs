//! A writer of the Prometheus text exposition format, version 0.0.4.
//!
//! Samples are grouped by metric family: each family gets one `# HELP` and one `# TYPE` line
//! however many label sets it is written with, and its samples stay together even when the
//! calls for different families interleave (the format requires a family to be contiguous).
//! Invalid input (a bad metric or label name, a repeated series, one name used with two types)
//! drops that sample, logs a warning and is listed by [`PromWriter::errors`]: a scrape with one
//! bad metric is better than no scrape, and a programming mistake must not take the server down.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// The `Content-Type` of a text-format scrape response.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// A sample value. Integers are written exactly (an `f64` would round counters above 2^53);
/// floats the way Prometheus parses them (`NaN`, `+Inf`, `-Inf`).
pub trait PromValue {
    fn write_to(&self, out: &mut String);
}

macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl PromValue for $t {
            fn write_to(&self, out: &mut String) {
                let _ = write!(out, "{self}");
            }
        }
    )*};
}
int_value!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

impl PromValue for f64 {
    fn write_to(&self, out: &mut String) {
        if self.is_nan() {
            out.push_str("NaN");
        } else if self.is_infinite() {
            out.push_str(if *self > 0.0 { "+Inf" } else { "-Inf" });
        } else {
            // Rust's Display never uses exponents and round-trips, which Go's ParseFloat reads.
            let _ = write!(out, "{self}");
        }
    }
}

impl PromValue for f32 {
    fn write_to(&self, out: &mut String) {
        f64::from(*self).write_to(out);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Summary,
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Summary => "summary",
            Kind::Histogram => "histogram",
        }
    }
}

struct Family {
    name: String,
    help: String,
    kind: Kind,
    /// The rendered sample lines, in call order.
    lines: String,
    /// Rendered label sets already written, to refuse duplicate series.
    series: HashSet<String>,
}

/// Collects metric samples and renders them with [`PromWriter::finish`].
#[derive(Default)]
pub struct PromWriter {
    families: Vec<Family>,
    /// Every name a family owns (a summary also owns `_sum` and `_count`) to its index.
    names: HashMap<String, usize>,
    errors: Vec<String>,
}

impl PromWriter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes one counter sample.
    pub fn counter(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        value: impl PromValue,
    ) {
        self.simple(Kind::Counter, name, help, labels, &value);
    }

    /// Writes one gauge sample.
    pub fn gauge(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        value: impl PromValue,
    ) {
        self.simple(Kind::Gauge, name, help, labels, &value);
    }

    /// Writes one summary: a `name{..,quantile="q"} v` line per `(q, v)` in `quantiles`
    /// (each `q` in 0..=1), then `name_sum` and `name_count`.
    #[cfg(test)]
    pub fn summary(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        quantiles: &[(f64, f64)],
        sum: impl PromValue,
        count: u64,
    ) {
        if let Some(&(q, _)) = quantiles.iter().find(|(q, _)| !(0.0..=1.0).contains(q)) {
            self.error(format!("{name}: quantile {q} is outside 0..=1"));
            return;
        }
        if labels.iter().any(|(k, _)| *k == "quantile") {
            self.error(format!(
                "{name}: a summary may not have a \"quantile\" label"
            ));
            return;
        }
        let Some((idx, rendered)) = self.admit(Kind::Summary, name, help, labels) else {
            return;
        };
        let mut lines = String::new();
        for &(q, v) in quantiles {
            let mut qs = String::new();
            q.write_to(&mut qs);
            lines.push_str(name);
            push_labels(&mut lines, labels, Some(("quantile", &qs)));
            lines.push(' ');
            v.write_to(&mut lines);
            lines.push('\n');
        }
        for (suffix, value) in [("_sum", &sum as &dyn PromValue), ("_count", &count)] {
            lines.push_str(name);
            lines.push_str(suffix);
            lines.push_str(&rendered);
            lines.push(' ');
            value.write_to(&mut lines);
            lines.push('\n');
        }
        self.families[idx].lines.push_str(&lines);
    }

    /// Writes one histogram: a `name_bucket{..,le="b"}` line per `(b, n)` in `buckets`, each
    /// `n` counting the observations `<= b` (cumulative, `b` increasing), then the `+Inf`
    /// bucket (`count`), `name_sum` and `name_count`.
    pub fn histogram(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        buckets: &[(f64, u64)],
        sum: impl PromValue,
        count: u64,
    ) {
        let ordered = buckets
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1);
        if !ordered || buckets.last().is_some_and(|&(_, n)| n > count) {
            self.error(format!(
                "{name}: buckets must grow and stay within the count"
            ));
            return;
        }
        if labels.iter().any(|(k, _)| *k == "le") {
            self.error(format!("{name}: a histogram may not have an \"le\" label"));
            return;
        }
        let Some((idx, rendered)) = self.admit(Kind::Histogram, name, help, labels) else {
            return;
        };
        let mut lines = String::new();
        let inf = [(f64::INFINITY, count)];
        for &(le, n) in buckets.iter().chain(&inf) {
            let mut les = String::new();
            le.write_to(&mut les);
            lines.push_str(name);
            lines.push_str("_bucket");
            push_labels(&mut lines, labels, Some(("le", &les)));
            lines.push(' ');
            n.write_to(&mut lines);
            lines.push('\n');
        }
        for (suffix, value) in [("_sum", &sum as &dyn PromValue), ("_count", &count)] {
            lines.push_str(name);
            lines.push_str(suffix);
            lines.push_str(&rendered);
            lines.push(' ');
            value.write_to(&mut lines);
            lines.push('\n');
        }
        self.families[idx].lines.push_str(&lines);
    }

    /// What was dropped so far and why (each is also logged).
    #[cfg(test)]
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// The exposition text: families in the order first written, each with its header.
    pub fn finish(self) -> String {
        let mut out = String::new();
        for f in &self.families {
            if f.lines.is_empty() {
                continue;
            }
            if !f.help.is_empty() {
                let _ = writeln!(out, "# HELP {} {}", f.name, escape_help(&f.help));
            }
            let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind.as_str());
            out.push_str(&f.lines);
        }
        out
    }

    fn simple(
        &mut self,
        kind: Kind,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        value: &dyn PromValue,
    ) {
        let Some((idx, rendered)) = self.admit(kind, name, help, labels) else {
            return;
        };
        let lines = &mut self.families[idx].lines;
        lines.push_str(name);
        lines.push_str(&rendered);
        lines.push(' ');
        value.write_to(lines);
        lines.push('\n');
    }

    /// Validates a sample and finds or creates its family; returns the family's index and the
    /// rendered label set, or `None` (after recording why) when the sample must be dropped.
    fn admit(
        &mut self,
        kind: Kind,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
    ) -> Option<(usize, String)> {
        if !is_valid_metric_name(name) {
            self.error(format!("invalid metric name {name:?}"));
            return None;
        }
        for (i, (k, _)) in labels.iter().enumerate() {
            if !is_valid_label_name(k) {
                self.error(format!("{name}: invalid label name {k:?}"));
                return None;
            }
            if labels[..i].iter().any(|(prev, _)| prev == k) {
                self.error(format!("{name}: label {k:?} given twice"));
                return None;
            }
        }
        let idx = match self.names.get(name) {
            Some(&idx) if self.families[idx].name == name && self.families[idx].kind == kind => idx,
            Some(&idx) => {
                let other = &self.families[idx];
                let msg = format!(
                    "{name}: already used by {} {}",
                    other.kind.as_str(),
                    other.name
                );
                self.error(msg);
                return None;
            }
            None => {
                let owned: Vec<String> = if kind == Kind::Summary {
                    vec![
                        name.to_owned(),
                        format!("{name}_sum"),
                        format!("{name}_count"),
                    ]
                } else if kind == Kind::Histogram {
                    vec![
                        name.to_owned(),
                        format!("{name}_bucket"),
                        format!("{name}_sum"),
                        format!("{name}_count"),
                    ]
                } else {
                    vec![name.to_owned()]
                };
                if let Some(&idx) = owned.iter().find_map(|n| self.names.get(n)) {
                    let other = &self.families[idx];
                    let msg = format!(
                        "{name}: collides with {} {}",
                        other.kind.as_str(),
                        other.name
                    );
                    self.error(msg);
                    return None;
                }
                let idx = self.families.len();
                self.families.push(Family {
                    name: name.to_owned(),
                    help: help.to_owned(),
                    kind,
                    lines: String::new(),
                    series: HashSet::new(),
                });
                for n in owned {
                    self.names.insert(n, idx);
                }
                idx
            }
        };
        let mut rendered = String::new();
        push_labels(&mut rendered, labels, None);
        if !self.families[idx].series.insert(rendered.clone()) {
            self.error(format!("{name}: duplicate series {rendered}"));
            return None;
        }
        Some((idx, rendered))
    }

    fn error(&mut self, msg: String) {
        tracing::warn!(error = %msg, "metric sample dropped");
        self.errors.push(msg);
    }
}

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`, the text format's metric name grammar.
pub fn is_valid_metric_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'A'..=b'Z' | b'_' | b':'))
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
}

/// `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__` (reserved for Prometheus itself).
pub fn is_valid_label_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'A'..=b'Z' | b'_'))
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.starts_with("__")
}

fn push_labels(out: &mut String, labels: &[(&str, &str)], extra: Option<(&str, &str)>) {
    if labels.is_empty() && extra.is_none() {
        return;
    }
    out.push('{');
    for (i, (k, v)) in labels.iter().copied().chain(extra).enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        out.push_str("=\"");
        for c in v.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push('}');
}

/// HELP text escapes only backslash and newline (quotes stay as they are).
fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_writer_renders_nothing() {
        assert_eq!(PromWriter::new().finish(), "");
    }

    #[test]
    fn counter_and_gauge_without_labels() {
        let mut w = PromWriter::new();
        w.counter(
            "rialto_connections_total",
            "Accepted connections.",
            &[],
            42u64,
        );
        w.gauge("rialto_connected_clients", "Open connections.", &[], 7i64);
        assert_eq!(
            w.finish(),
            "# HELP rialto_connections_total Accepted connections.\n\
             # TYPE rialto_connections_total counter\n\
             rialto_connections_total 42\n\
             # HELP rialto_connected_clients Open connections.\n\
             # TYPE rialto_connected_clients gauge\n\
             rialto_connected_clients 7\n"
        );
    }

    #[test]
    fn one_header_per_family_and_families_stay_contiguous() {
        let mut w = PromWriter::new();
        w.counter("cmds_total", "Commands.", &[("cmd", "get")], 1u64);
        w.gauge("mem_bytes", "Memory.", &[], 1.5f64);
        w.counter("cmds_total", "Commands.", &[("cmd", "set")], 2u64);
        w.counter("cmds_total", "Commands.", &[("cmd", "del")], 3u64);
        assert!(w.errors().is_empty());
        assert_eq!(
            w.finish(),
            "# HELP cmds_total Commands.\n\
             # TYPE cmds_total counter\n\
             cmds_total{cmd=\"get\"} 1\n\
             cmds_total{cmd=\"set\"} 2\n\
             cmds_total{cmd=\"del\"} 3\n\
             # HELP mem_bytes Memory.\n\
             # TYPE mem_bytes gauge\n\
             mem_bytes 1.5\n"
        );
    }

    #[test]
    fn summary_lines() {
        let mut w = PromWriter::new();
        w.summary(
            "rialto_command_duration_seconds",
            "Command latency.",
            &[("cmd", "get")],
            &[(0.5, 0.0001), (0.99, 0.00125), (1.0, 0.5)],
            12.25f64,
            1000,
        );
        w.summary("plain", "", &[], &[], 0u64, 0);
        assert!(w.errors().is_empty());
        assert_eq!(
            w.finish(),
            "# HELP rialto_command_duration_seconds Command latency.\n\
             # TYPE rialto_command_duration_seconds summary\n\
             rialto_command_duration_seconds{cmd=\"get\",quantile=\"0.5\"} 0.0001\n\
             rialto_command_duration_seconds{cmd=\"get\",quantile=\"0.99\"} 0.00125\n\
             rialto_command_duration_seconds{cmd=\"get\",quantile=\"1\"} 0.5\n\
             rialto_command_duration_seconds_sum{cmd=\"get\"} 12.25\n\
             rialto_command_duration_seconds_count{cmd=\"get\"} 1000\n\
             # TYPE plain summary\n\
             plain_sum 0\n\
             plain_count 0\n"
        );
    }

    #[test]
    fn histogram_lines() {
        let mut w = PromWriter::new();
        w.histogram(
            "rialto_merger_group_transactions",
            "Transactions per group.",
            &[],
            &[(1.0, 3), (2.0, 5), (4.0, 5)],
            17u64,
            6,
        );
        w.histogram("h", "", &[("le", "1")], &[], 0u64, 0); // reserved label
        w.histogram("h", "", &[], &[(2.0, 1), (1.0, 2)], 0u64, 2); // not increasing
        w.histogram("h", "", &[], &[(1.0, 3)], 0u64, 2); // over the count
        w.gauge("rialto_merger_group_transactions_bucket", "", &[], 1u64); // owned
        assert_eq!(w.errors().len(), 4, "{:?}", w.errors());
        assert_eq!(
            w.finish(),
            "# HELP rialto_merger_group_transactions Transactions per group.\n\
             # TYPE rialto_merger_group_transactions histogram\n\
             rialto_merger_group_transactions_bucket{le=\"1\"} 3\n\
             rialto_merger_group_transactions_bucket{le=\"2\"} 5\n\
             rialto_merger_group_transactions_bucket{le=\"4\"} 5\n\
             rialto_merger_group_transactions_bucket{le=\"+Inf\"} 6\n\
             rialto_merger_group_transactions_sum 17\n\
             rialto_merger_group_transactions_count 6\n"
        );
    }

    #[test]
    fn escaping() {
        let mut w = PromWriter::new();
        w.gauge(
            "g",
            "Help with \\ backslash, \"quotes\"\nand a newline.",
            &[("path", "C:\\dir\\\"x\"\nnext"), ("utf8", "ü")],
            1u64,
        );
        assert_eq!(
            w.finish(),
            "# HELP g Help with \\\\ backslash, \"quotes\"\\nand a newline.\n\
             # TYPE g gauge\n\
             g{path=\"C:\\\\dir\\\\\\\"x\\\"\\nnext\",utf8=\"ü\"} 1\n"
        );
    }

    #[test]
    fn float_values() {
        let mut w = PromWriter::new();
        w.gauge("g", "", &[("v", "nan")], f64::NAN);
        w.gauge("g", "", &[("v", "inf")], f64::INFINITY);
        w.gauge("g", "", &[("v", "-inf")], f64::NEG_INFINITY);
        w.gauge("g", "", &[("v", "int")], 3.0f64);
        w.gauge("g", "", &[("v", "small")], 1e-7f64);
        w.gauge("g", "", &[("v", "neg")], -2i32);
        w.gauge("g", "", &[("v", "max")], u64::MAX);
        assert_eq!(
            w.finish(),
            "# TYPE g gauge\n\
             g{v=\"nan\"} NaN\n\
             g{v=\"inf\"} +Inf\n\
             g{v=\"-inf\"} -Inf\n\
             g{v=\"int\"} 3\n\
             g{v=\"small\"} 0.0000001\n\
             g{v=\"neg\"} -2\n\
             g{v=\"max\"} 18446744073709551615\n"
        );
    }

    #[test]
    fn metric_and_label_name_validation() {
        for ok in ["a", "_a", ":a", "a:b_c9", "rialto_up"] {
            assert!(is_valid_metric_name(ok), "{ok}");
        }
        for bad in ["", "9a", "a-b", "a b", "a.b", "é", "a\n"] {
            assert!(!is_valid_metric_name(bad), "{bad:?}");
        }
        for ok in ["a", "_a", "cmd", "a9_"] {
            assert!(is_valid_label_name(ok), "{ok}");
        }
        for bad in ["", "9a", "a:b", "__name__", "__x", "a-b"] {
            assert!(!is_valid_label_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn invalid_samples_are_dropped_and_reported() {
        let mut w = PromWriter::new();
        w.counter("bad-name", "", &[], 1u64);
        w.counter("c_total", "", &[("bad-label", "x")], 1u64);
        w.counter("c_total", "", &[("a", "1"), ("a", "2")], 1u64);
        w.counter("c_total", "", &[("a", "1")], 1u64);
        w.counter("c_total", "", &[("a", "1")], 2u64); // duplicate series
        w.gauge("c_total", "", &[("a", "2")], 1u64); // type conflict
        w.summary("s", "", &[], &[(1.5, 1.0)], 1u64, 1); // quantile out of range
        w.summary("s", "", &[("quantile", "x")], &[], 1u64, 1); // reserved label
        w.summary("c", "", &[], &[], 1u64, 1);
        w.gauge("c_sum", "", &[], 1u64); // owned by summary c
        w.summary("c_total", "", &[], &[], 1u64, 1); // counter already owns c_total
        w.summary("x", "", &[], &[], 1u64, 1);
        w.gauge("x_count", "", &[], 1u64);
        assert_eq!(w.errors().len(), 10, "{:?}", w.errors());
        assert_eq!(
            w.finish(),
            "# TYPE c_total counter\n\
             c_total{a=\"1\"} 1\n\
             # TYPE c summary\n\
             c_sum 1\n\
             c_count 1\n\
             # TYPE x summary\n\
             x_sum 1\n\
             x_count 1\n"
        );
    }

    #[test]
    fn family_whose_samples_were_all_dropped_renders_no_header() {
        let mut w = PromWriter::new();
        w.counter("ok_total", "", &[], 1u64);
        w.summary("s", "h", &[("bad-label", "")], &[], 0u64, 0);
        assert_eq!(w.finish(), "# TYPE ok_total counter\nok_total 1\n");
    }
}
