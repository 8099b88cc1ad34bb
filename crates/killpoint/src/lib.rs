//! Kill points: named places in the engine where a crash-test build may kill its own
//! process with SIGKILL, so that recovery is tested from the states a crash leaves *inside*
//! a multi-step operation (between a WAL append and its sync, between a table's sync and the
//! manifest edit that links it, ...), not only from wherever an outside kill happens to land.
//!
//! Kill points exist in debug builds (what `cargo test` runs) and in builds with the `enabled`
//! feature (`cargo build --release --features kill-points` for long crash runs). In other
//! release builds [`kill_point`] is an empty `#[inline(always)]` function and no code
//! remains. Where they exist, the process reads `RIALTO_KILL_POINTS` once:
//!
//! ```text
//! RIALTO_KILL_POINTS="seed=42,one_in=500"              every point, each hit dies with p = 1/500
//! RIALTO_KILL_POINTS="seed=42,one_in=20,only=wal.sync" only points whose name starts so
//! ```
//!
//! Unset or empty, no point ever fires. The choice is a function of the seed and the order of
//! hits, so a single-threaded run replays exactly. Before dying the process writes
//! `kill point NAME` to stderr (one line) so a driver can tell which point fired.

/// Every kill point of the engine and the merger, for drivers and documentation (the stress
/// driver draws from these). Names are `area.step`; `only=` matches by prefix, so `only=wal`
/// selects both WAL points.
pub const POINTS: &[&str] = &[
    "wal.append",
    "wal.sync",
    "merger.group_logged",
    "merger.group_synced",
    "flush.table_written",
    "flush.hot_relogged",
    "sstable.finish",
    "manifest.write",
    "manifest.installed",
    "compaction.install",
];

/// The kill points between the steps of a batch push's commit (`rialto_keyspace`, stores/push.rs):
/// tables written but not linked, linked but nothing replayed, replayed but not swapped, and
/// swapped. A push also passes the engine's table, manifest, WAL and merger points.
pub const PUSH_POINTS: &[&str] = &[
    "push.tables_written",
    "push.linked",
    "push.replayed",
    "push.swapped",
];

/// Marks a kill point. A no-op unless compiled in (see the crate docs) and armed through
/// `RIALTO_KILL_POINTS`.
#[inline(always)]
pub fn kill_point(name: &'static str) {
    #[cfg(any(feature = "enabled", debug_assertions))]
    imp::hit(name);
    #[cfg(not(any(feature = "enabled", debug_assertions)))]
    let _ = name;
}

/// Whether this build has kill points compiled in.
pub const fn compiled_in() -> bool {
    cfg!(any(feature = "enabled", debug_assertions))
}

/// Parsed `RIALTO_KILL_POINTS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Seed of the generator deciding which hit dies.
    pub seed: u64,
    /// Each hit dies with probability `1 / one_in` (0: never).
    pub one_in: u64,
    /// Only points whose name starts with this.
    pub only: Option<String>,
}

impl Config {
    /// Parses `seed=S,one_in=N[,only=PREFIX]`; unknown or malformed parts are an error.
    pub fn parse(s: &str) -> Result<Config, String> {
        let mut c = Config {
            seed: 0,
            one_in: 0,
            only: None,
        };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("'{part}' is not key=value"))?;
            let num = || {
                v.parse::<u64>()
                    .map_err(|_| format!("'{v}' is not a number in '{part}'"))
            };
            match k {
                "seed" => c.seed = num()?,
                "one_in" => c.one_in = num()?,
                "only" => c.only = Some(v.to_string()),
                _ => return Err(format!("unknown key '{k}' (seed, one_in, only)")),
            }
        }
        Ok(c)
    }

    /// Whether a hit of `name` with generator output `r` dies.
    pub fn fires(&self, name: &str, r: u64) -> bool {
        self.one_in > 0
            && self.only.as_deref().is_none_or(|p| name.starts_with(p))
            && r % self.one_in == 0
    }
}

/// splitmix64: the generator behind the choices (stable across dependency upgrades).
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(any(feature = "enabled", debug_assertions))]
mod imp {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    use super::{splitmix64, Config};

    static CONFIG: OnceLock<Option<Config>> = OnceLock::new();
    static STATE: AtomicU64 = AtomicU64::new(0);

    fn config() -> Option<&'static Config> {
        CONFIG
            .get_or_init(|| {
                let raw = std::env::var("RIALTO_KILL_POINTS").ok()?;
                match Config::parse(&raw) {
                    Ok(c) => {
                        STATE.store(c.seed, Ordering::Relaxed);
                        Some(c)
                    }
                    Err(e) => {
                        // A typo must not silently test nothing.
                        eprintln!("error: RIALTO_KILL_POINTS: {e}");
                        std::process::exit(2);
                    }
                }
            })
            .as_ref()
    }

    pub(super) fn hit(name: &'static str) {
        let Some(c) = config() else { return };
        let mut s = STATE.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
        let r = splitmix64(&mut s);
        if c.fires(name, r) {
            let _ = writeln!(std::io::stderr(), "kill point {name}");
            // SAFETY: kill(2) on our own pid; SIGKILL cannot be caught, so nothing of this
            // process runs afterwards (no destructors, no buffered writes), as in a crash.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_filters() {
        let c = Config::parse("seed=7, one_in=1, only=wal").unwrap();
        assert_eq!(c.seed, 7);
        assert!(c.fires("wal.sync", 3));
        assert!(!c.fires("manifest.write", 3));
        assert!(!Config::parse("").unwrap().fires("wal.sync", 0));
        assert!(Config::parse("seed=x").is_err());
        assert!(Config::parse("speed=1").is_err());
        assert!(Config::parse("seed").is_err());
    }

    #[test]
    fn one_in_n_fires_about_once_in_n() {
        let c = Config::parse("one_in=10").unwrap();
        let mut s = 1;
        let fired = (0..10_000)
            .filter(|_| c.fires("x", splitmix64(&mut s)))
            .count();
        assert!((800..1200).contains(&fired), "{fired}");
    }
}
