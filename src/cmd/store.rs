//! `rialto store create|config|describe|list|delete|rollback`: manages stores on a running
//! server (`--server`) or in a database directory (`--dir`).

use rialto_keyspace::{Compression, StoreSettings};
use rialto_resp::Reply;

use super::stores_backend::{render, Backend, BackendError, Target};

fn no_setting() -> BackendError {
    BackendError::Usage("store config: name a setting to change (--compression, --keep)".into())
}

/// STORE CREATE's and CONFIG's COMPRESSION and KEEP arguments.
fn settings_args(req: &mut Vec<Vec<u8>>, compression: Option<Compression>, keep: Option<u32>) {
    if let Some(c) = compression {
        req.extend([b"COMPRESSION".to_vec(), c.name().as_bytes().to_vec()]);
    }
    if let Some(k) = keep {
        req.extend([b"KEEP".to_vec(), k.to_string().into_bytes()]);
    }
}

fn parse_codec(s: &str) -> Result<Compression, String> {
    match s.to_ascii_lowercase().as_str() {
        "none" => Ok(Compression::None),
        "lz4" => Ok(Compression::Lz4),
        "zstd" => Ok(Compression::Zstd),
        _ => Err(format!("'{s}' is not none, lz4 or zstd")),
    }
}

/// Arguments of `rialto store`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
    #[command(flatten)]
    pub target: Target,
}

/// What to do.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Create a store owning the keys that start with its prefix.
    Create {
        name: String,
        /// Key prefix (default `NAME:`).
        #[arg(long)]
        prefix: Option<String>,
        /// How far before a push's start streamed writes are replayed onto it, in seconds.
        #[arg(long, default_value_t = 0)]
        rewind: u64,
        /// Block compression of the tables written for its versions: none, lz4 or zstd
        /// (default: the server's `compression`; with --dir, none).
        #[arg(long, value_parser = parse_codec)]
        compression: Option<Compression>,
        /// Versions kept: the current one and N - 1 older ones to roll back to, each
        /// receiving the streamed writes (default 2).
        #[arg(long, value_name = "N")]
        keep: Option<u32>,
    },
    /// Change a store's settings; a new compression applies to the tables written after the
    /// change (pushes begun after it, flushes and compactions), a smaller keep retires the
    /// oldest kept versions beyond it.
    Config {
        name: String,
        /// Block compression: none, lz4 or zstd.
        #[arg(long, value_parser = parse_codec)]
        compression: Option<Compression>,
        /// Versions kept: the current one and N - 1 older ones.
        #[arg(long, value_name = "N")]
        keep: Option<u32>,
    },
    /// Show a store's prefix, versions and push in progress (times in RFC 3339, UTC).
    Describe { name: String },
    /// List the stores.
    List,
    /// Delete a store (its data is removed in the background).
    Delete { name: String },
    /// Make a kept older version current again (default: the newest one) and retire the
    /// versions newer than it. A rollback only goes back: with no older version kept, it is
    /// refused.
    Rollback {
        name: String,
        /// The version to go back to, one the store keeps (STORE DESCRIBE's
        /// kept-versions); naming the current version changes nothing, so a retried rollback
        /// is harmless.
        #[arg(value_name = "VERSION", conflicts_with = "to_version")]
        to: Option<u32>,
        /// The same as VERSION.
        #[arg(long, value_name = "N")]
        to_version: Option<u32>,
    },
}

/// Runs the action and prints the result.
pub fn run(args: Args) -> Result<(), BackendError> {
    let mut backend = args.target.open()?;
    let out = match &mut backend {
        Backend::Remote(r) => {
            let mut req: Vec<Vec<u8>> = vec![b"STORE".to_vec()];
            match &args.action {
                Action::Create {
                    name,
                    prefix,
                    rewind,
                    compression,
                    keep,
                } => {
                    req.extend([b"CREATE".to_vec(), name.clone().into_bytes()]);
                    if let Some(p) = prefix {
                        req.extend([b"PREFIX".to_vec(), p.clone().into_bytes()]);
                    }
                    req.extend([b"REWIND".to_vec(), rewind.to_string().into_bytes()]);
                    settings_args(&mut req, *compression, *keep);
                }
                Action::Config {
                    name,
                    compression,
                    keep,
                } => {
                    req.extend([b"CONFIG".to_vec(), name.clone().into_bytes()]);
                    settings_args(&mut req, *compression, *keep);
                    if req.len() == 3 {
                        return Err(no_setting());
                    }
                }
                Action::Describe { name } => {
                    req.extend([b"DESCRIBE".to_vec(), name.clone().into_bytes()])
                }
                Action::List => req.push(b"LIST".to_vec()),
                Action::Delete { name } => {
                    req.extend([b"DELETE".to_vec(), name.clone().into_bytes()])
                }
                Action::Rollback {
                    name,
                    to,
                    to_version,
                } => {
                    req.extend([b"ROLLBACK".to_vec(), name.clone().into_bytes()]);
                    if let Some(v) = to.or(*to_version) {
                        req.push(v.to_string().into_bytes());
                    }
                }
            }
            render(&with_times(r.call(&req)?))
        }
        Backend::Local(l) => {
            let describe = |name: &str| -> Result<String, BackendError> {
                let cat = l.keyspace().catalog();
                let s = cat
                    .get(name)
                    .ok_or_else(|| BackendError::Store(format!("no such store '{name}'")))?;
                Ok(render(&with_times(rialto_server::describe_store(s))))
            };
            let r = match &args.action {
                Action::Create {
                    name,
                    prefix,
                    rewind,
                    compression,
                    keep,
                } => {
                    let p = prefix.clone().unwrap_or_else(|| format!("{name}:"));
                    let settings = StoreSettings {
                        compression: *compression,
                        keep: *keep,
                    };
                    l.create(name, p.as_bytes(), rewind.saturating_mul(1000), settings)
                        .and_then(|()| describe(name))
                }
                Action::Config {
                    name,
                    compression,
                    keep,
                } => {
                    let settings = StoreSettings {
                        compression: *compression,
                        keep: *keep,
                    };
                    if settings.is_empty() {
                        Err(no_setting())
                    } else {
                        l.configure(name, settings).and_then(|()| describe(name))
                    }
                }
                Action::Describe { name } => describe(name),
                Action::List => Ok(render(&Reply::Array(
                    l.keyspace()
                        .catalog()
                        .iter()
                        .map(|s| Reply::bulk(s.name.as_bytes()))
                        .collect(),
                ))),
                Action::Delete { name } => l.delete(name).map(|()| "OK".to_string()),
                Action::Rollback {
                    name,
                    to,
                    to_version,
                } => l
                    .rollback(name, to.or(*to_version))
                    .and_then(|()| describe(name)),
            };
            match r {
                Ok(s) => s,
                Err(e) => {
                    if let Backend::Local(l) = backend {
                        let _ = l.close();
                    }
                    return Err(e);
                }
            }
        }
    };
    if let Backend::Local(l) = backend {
        l.close()?;
    }
    if !out.is_empty() {
        println!("{out}");
    }
    Ok(())
}

/// A store's description with its Unix-millisecond fields (`created-ms`...) as RFC 3339 UTC
/// times, named without the unit (`created`): what a person reads. The RESP reply keeps the
/// milliseconds for programs.
fn with_times(r: Reply) -> Reply {
    let Reply::Map(pairs) = r else {
        return r;
    };
    Reply::Map(
        pairs
            .into_iter()
            .map(|(k, v)| match (&k, &v) {
                (Reply::Bulk(name), Reply::Integer(ms)) if is_time(name) => {
                    let name = String::from_utf8_lossy(&name[..name.len() - 3]).into_owned();
                    (Reply::bulk(name), Reply::bulk(rfc3339_utc(*ms)))
                }
                _ => (k, v),
            })
            .collect(),
    )
}

/// Whether a STORE DESCRIBE field is a time (`created-ms`, `current-created-ms`,
/// `pushing-started-ms`...).
fn is_time(name: &[u8]) -> bool {
    name.ends_with(b"created-ms") || name.ends_with(b"started-ms")
}

/// Unix milliseconds as RFC 3339 in UTC, to the millisecond: `2026-11-27T09:30:00.125Z`.
pub fn rfc3339_utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let (days, day_secs) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (Howard Hinnant's `civil_from_days`).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        day_secs / 3600,
        day_secs % 3600 / 60,
        day_secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_utc(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        // Leap days and century rules.
        assert_eq!(rfc3339_utc(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339_utc(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
        assert_eq!(rfc3339_utc(4_107_542_400_000), "2100-03-01T00:00:00.000Z");
        assert_eq!(rfc3339_utc(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn describe_times_are_rendered_and_the_rest_is_kept() {
        let r = with_times(Reply::Map(vec![
            (Reply::bulk("name"), Reply::bulk("features")),
            (Reply::bulk("current-version"), Reply::Integer(3)),
            (Reply::bulk("current-created-ms"), Reply::Integer(0)),
            (Reply::bulk("pushing-version"), Reply::Null),
            (Reply::bulk("pushing-started-ms"), Reply::Integer(1000)),
            (Reply::bulk("created-ms"), Reply::Integer(86_400_000)),
        ]));
        assert_eq!(
            render(&r),
            "name: features\ncurrent-version: 3\ncurrent-created: 1970-01-01T00:00:00.000Z\npushing-version: (none)\npushing-started: 1970-01-01T00:00:01.000Z\ncreated: 1970-01-02T00:00:00.000Z"
        );
    }
}
