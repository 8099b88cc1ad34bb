//! db_bench's report: the header and the per-benchmark line, byte for byte in db_bench's
//! layout so that scripts that parse db_bench output parse ours.

use std::io::Write;
use std::time::Duration;

use hdrhistogram::Histogram;
use rialto_engine::EngineStats;

use crate::config::Config;
use crate::error::{out_err, Result};

/// One benchmark's report line:
/// `fillrandom   :       4.590 micros/op 218011 ops/sec;   24.1 MB/s (message)`.
///
/// The MB/s part appears only when the benchmark moved bytes, the message only when it has
/// one, as in db_bench.
pub fn format_line(
    name: &str,
    micros_per_op: f64,
    ops_per_sec: u64,
    mb_per_sec: Option<f64>,
    message: &str,
) -> String {
    let rate = match mb_per_sec {
        Some(mb) => format!(" {mb:>6.1} MB/s"),
        None => String::new(),
    };
    let extra = if message.is_empty() {
        String::new()
    } else {
        format!(" {message}")
    };
    format!("{name:<12} : {micros_per_op:>11.3} micros/op {ops_per_sec} ops/sec;{rate}{extra}")
}

/// The message of a lookup benchmark: `(found of total found)`.
pub fn found_message(found: u64, total: u64) -> String {
    format!("({found} of {total} found)")
}

/// The message of syncwhilecompacting: how long the compaction ran against the writers.
/// `(compaction 12.3 s; writers stopped with it)` when the writers ran until it ended, `(compaction
/// 1.2 s, the writers' count ended first)` otherwise; `None` when there was no compaction.
pub fn compaction_message(compaction: Option<Duration>, writers: Duration) -> String {
    match compaction {
        None => String::new(),
        Some(c) if c <= writers => {
            format!(
                "(compaction {:.1} s; writers stopped with it)",
                c.as_secs_f64()
            )
        }
        Some(c) => format!(
            "(compaction {:.1} s; the writers' count ended first, after {:.1} s)",
            c.as_secs_f64(),
            writers.as_secs_f64()
        ),
    }
}

fn mib(bytes: f64) -> f64 {
    bytes / 1048576.0
}

/// The message of readrandomwriterandom (and phaseshift), as db_bench prints it:
/// `( reads:900 writes:100 total:1000 found:850)`.
pub fn mix_message(reads: u64, writes: u64, found: u64) -> String {
    format!(
        "( reads:{reads} writes:{writes} total:{} found:{found})",
        reads + writes
    )
}

/// `p50 1.23 p99 4.56` in microseconds from a nanosecond histogram, `-` when it is empty.
pub fn percentiles_us(h: &Histogram<u64>) -> String {
    if h.is_empty() {
        return "p50 - p99 -".to_string();
    }
    let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    format!("p50 {:.2} p99 {:.2}", us(0.5), us(0.99))
}

/// The latency line of a mixed benchmark, reads and writes apart:
/// `latency (us) : read p50 0.80 p99 3.10 (9000 ops); write p50 1.20 p99 5.00 (1000 ops)`.
pub fn latency_line(read: &Histogram<u64>, write: &Histogram<u64>) -> String {
    format!(
        "latency (us) : read {} ({} ops); write {} ({} ops)",
        percentiles_us(read),
        read.len(),
        percentiles_us(write),
        write.len()
    )
}

/// Prints db_bench's header: data shape, sizes, engine and settings, seed and path, then
/// `notes` (engine-specific settings), one line each.
pub fn write_header(
    out: &mut dyn Write,
    cfg: &Config,
    engine: &str,
    notes: &[String],
) -> Result<()> {
    let raw = cfg.entry_bytes() as f64 * cfg.num as f64;
    let file =
        (cfg.key_size as f64 + cfg.value_size as f64 * cfg.compression_ratio) * cfg.num as f64;
    let mut h = String::new();
    h.push_str(&format!("Engine:     {engine}\n"));
    if let Some(cpu) = cpu_description() {
        h.push_str(&format!("CPU:        {cpu}\n"));
    }
    h.push_str(&format!("Keys:       {} bytes each\n", cfg.key_size));
    if cfg.key_dist == crate::dist::KeyDist::Zipf {
        h.push_str(&format!(
            "KeyDist:    zipf, theta {} (scrambled)\n",
            cfg.zipf_theta
        ));
    }
    h.push_str(&format!(
        "Values:     {} bytes each ({} bytes after compression)\n",
        cfg.value_size,
        cfg.compressed_value_size()
    ));
    h.push_str(&format!("Entries:    {}\n", cfg.num));
    h.push_str(&format!("RawSize:    {:.1} MB (estimated)\n", mib(raw)));
    h.push_str(&format!("FileSize:   {:.1} MB (estimated)\n", mib(file)));
    h.push_str(&format!("Compression: {}\n", cfg.compression.name()));
    h.push_str(&format!(
        "Options:    write_buffer_size={} cache_size={} bloom_bits={} block_size=4096 background_jobs=2\n",
        cfg.write_buffer_size, cfg.cache_size, cfg.bloom_bits
    ));
    h.push_str(&format!(
        "Threads:    {} (batch_size={}, sync={})\n",
        cfg.threads,
        cfg.batch_size,
        u8::from(cfg.sync)
    ));
    h.push_str(&format!(
        "Seed:       {}{}\n",
        cfg.seed,
        if cfg.seed_from_clock {
            " (from the clock; pass --seed to repeat)"
        } else {
            ""
        }
    ));
    h.push_str(&format!("DB path:    [{}]\n", cfg.db.display()));
    for n in notes {
        h.push_str(n);
        h.push('\n');
    }
    h.push_str("------------------------------------------------\n");
    out.write_all(h.as_bytes()).map_err(out_err)?;
    out.flush().map_err(out_err)
}

/// `N * model` from /proc/cpuinfo, when readable: results mean little without the machine.
fn cpu_description() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let mut count = 0;
    let mut model = None;
    for line in info.lines() {
        if let Some((k, v)) = line.split_once(':') {
            if k.trim() == "model name" {
                count += 1;
                model.get_or_insert_with(|| v.trim().to_string());
            }
        }
    }
    model.map(|m| format!("{count} * {m}"))
}

/// What the `stats` benchmark prints. `stats` is the engine's report with the two
/// denominators replaced by what the harness knows (see [`bench_view`]), then the engine's
/// `extra` lines ([`crate::BenchEngine::extra_stats`]), so its last line is still
/// `amplification : write W.WW space S.SS`.
pub fn format_stats(
    engine: &str,
    stats: &EngineStats,
    engine_view: &EngineStats,
    live_keys: Option<u64>,
    os_bytes_written: Option<u64>,
    extra: &[String],
) -> String {
    let mut s = format!("\n** {engine} statistics **\n");
    match live_keys {
        Some(n) => s.push_str(&format!("live keys : {n} (counted by the bench)\n")),
        None => s.push_str(
            "live keys : unknown (--use_existing_db): live data as estimated by the engine\n",
        ),
    }
    s.push_str(&format!(
        "engine's own counts : user {:.2} MB written, live data {:.2} MB, disk {:.2} MB\n",
        mib(engine_view.user_bytes_written as f64),
        mib(engine_view.live_data_bytes as f64),
        mib(engine_view.disk_bytes as f64)
    ));
    let text = stats.to_string();
    // The engine's report ends with its own amplification line; the bench prints its own.
    let body = text
        .rsplit_once('\n')
        .map_or(text.as_str(), |(body, _)| body);
    s.push_str(body);
    s.push('\n');
    for line in extra {
        s.push_str(line);
        s.push('\n');
    }
    let write_amp = match os_bytes_written {
        Some(os) => {
            s.push_str(&format!(
                "written (os) : {:.2} MB handed to write(2) since open; engine's own count gives write amplification {:.2}\n",
                mib(os as f64),
                stats.write_amplification()
            ));
            ratio(os, stats.user_bytes_written)
        }
        None => stats.write_amplification(),
    };
    s.push_str(&format!(
        "amplification : write {:.2} space {:.2}",
        write_amp,
        stats.space_amplification()
    ));
    s
}

/// `a / b`, 0 when `b` is 0.
pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Bytes this process has handed to `write(2)`/`pwrite(2)` (`wchar` of `/proc/self/io`), or
/// `None` where the kernel does not report it. Every engine's WAL, table and manifest writes
/// pass through these calls, so the difference between two readings measures what an engine
/// wrote the same way for every engine, whatever its own counters include or leave out.
pub fn process_bytes_written() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("wchar:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The engine's statistics with the amplification denominators the harness defines:
/// write amplification divides storage bytes written (WAL + flush + compaction) by the key
/// and value bytes the benchmarks wrote since the engine was opened; space amplification
/// divides disk bytes by live keys x (key_size + value_size). Engines count these
/// differently (or only estimate them), so using the harness's numbers keeps two engines
/// comparable.
pub fn bench_view(
    engine: &EngineStats,
    user_bytes: u64,
    live_keys: Option<u64>,
    entry_bytes: u64,
) -> EngineStats {
    let mut s = engine.clone();
    s.user_bytes_written = user_bytes;
    if let Some(n) = live_keys {
        s.live_data_bytes = n.saturating_mul(entry_bytes);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BenchFlags;

    #[test]
    fn line_format_is_db_bench_exact() {
        assert_eq!(
            format_line("fillrandom", 4.59, 218011, Some(24.1), ""),
            "fillrandom   :       4.590 micros/op 218011 ops/sec;   24.1 MB/s"
        );
        assert_eq!(
            format_line("readrandom", 2.1, 476190, None, "(632000 of 1000000 found)"),
            "readrandom   :       2.100 micros/op 476190 ops/sec; (632000 of 1000000 found)"
        );
        assert_eq!(
            format_line("readrandom", 2.1, 476190, Some(52.3), &found_message(632000, 1000000)),
            "readrandom   :       2.100 micros/op 476190 ops/sec;   52.3 MB/s (632000 of 1000000 found)"
        );
        assert_eq!(
            format_line("deleterandom", 1234.5678, 810, None, ""),
            "deleterandom :    1234.568 micros/op 810 ops/sec;"
        );
        // Long names are not cut.
        assert_eq!(
            format_line("readwhilewriting", 0.5, 2000000, Some(1234.56), ""),
            "readwhilewriting :       0.500 micros/op 2000000 ops/sec; 1234.6 MB/s"
        );
    }

    #[test]
    fn mixed_lines() {
        assert_eq!(
            mix_message(900, 100, 850),
            "( reads:900 writes:100 total:1000 found:850)"
        );
        let mut r = crate::histogram::new_histogram();
        for ns in [1_000, 1_000, 2_000, 50_000] {
            crate::histogram::record(&mut r, ns);
        }
        let w = crate::histogram::new_histogram();
        assert_eq!(
            latency_line(&r, &w),
            "latency (us) : read p50 1.00 p99 50.02 (4 ops); write p50 - p99 - (0 ops)"
        );
    }

    #[test]
    fn header_mentions_the_shape() {
        let cfg = Config::from_flags(&BenchFlags {
            seed: Some(5),
            db: Some("/tmp/x".into()),
            ..BenchFlags::default()
        })
        .unwrap();
        let mut out = Vec::new();
        write_header(
            &mut out,
            &cfg,
            "rialto 0.1.0",
            &["TRIAD:      adaptive".into()],
        )
        .unwrap();
        let h = String::from_utf8(out).unwrap();
        assert!(h.contains("Keys:       16 bytes each\n"), "{h}");
        assert!(h.contains("Values:     100 bytes each (50 bytes after compression)\n"));
        assert!(h.contains("Entries:    1000000\n"));
        assert!(h.contains("RawSize:    110.6 MB (estimated)\n"));
        assert!(h.contains("FileSize:   62.9 MB (estimated)\n"));
        assert!(h.contains("Engine:     rialto 0.1.0\n"));
        assert!(h.contains("Compression: none\n"));
        assert!(h.contains("Seed:       5\n"));
        assert!(h.contains("DB path:    [/tmp/x]\nTRIAD:      adaptive\n---"));
        assert!(
            !h.contains("KeyDist"),
            "uniform keys are db_bench's: no line"
        );
        let cfg = Config::from_flags(&BenchFlags {
            seed: Some(5),
            key_dist: crate::dist::KeyDist::Zipf,
            zipf_theta: 0.8,
            ..BenchFlags::default()
        })
        .unwrap();
        let mut out = Vec::new();
        write_header(&mut out, &cfg, "x", &[]).unwrap();
        let h = String::from_utf8(out).unwrap();
        assert!(
            h.contains("KeyDist:    zipf, theta 0.8 (scrambled)\n"),
            "{h}"
        );
    }

    #[test]
    fn process_bytes_written_moves_with_writes() {
        let Some(before) = process_bytes_written() else {
            return; // not Linux
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![1u8; 4096]).unwrap();
        let after = process_bytes_written().unwrap();
        assert!(after >= before + 4096, "{before} -> {after}");
    }

    #[test]
    fn os_bytes_decide_the_amplification_line() {
        let e = EngineStats {
            user_bytes_written: 1000,
            wal_bytes_written: 1000,
            ..Default::default()
        };
        let s = format_stats("x", &e, &e, Some(1), Some(2500), &[]);
        assert!(s.contains("written (os) : 0.00 MB"), "{s}");
        assert!(s.ends_with("amplification : write 2.50 space 0.00"), "{s}");
        assert_eq!(s.matches("amplification :").count(), 1, "{s}");
    }

    #[test]
    fn stats_end_with_amplification() {
        let engine = EngineStats {
            user_bytes_written: 999,
            wal_bytes_written: 1000,
            flush_bytes_written: 800,
            compaction_bytes_written: 1200,
            disk_bytes: 2320,
            live_data_bytes: 1,
            ..EngineStats::default()
        };
        let view = bench_view(&engine, 1000, Some(10), 116);
        assert_eq!(view.user_bytes_written, 1000);
        assert_eq!(view.live_data_bytes, 1160);
        let s = format_stats(
            "rialto",
            &view,
            &engine,
            Some(10),
            None,
            &["triad : x".into()],
        );
        assert!(
            s.ends_with("triad : x\namplification : write 3.00 space 2.00"),
            "{s}"
        );
        assert!(s.contains("live keys : 10"));
        // Unknown live set: the engine's estimate stays.
        let view = bench_view(&engine, 1000, None, 116);
        assert_eq!(view.live_data_bytes, 1);
    }
}
