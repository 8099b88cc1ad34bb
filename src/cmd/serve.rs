//! `rialto serve`: the Redis-protocol server on the embedded engine.

use std::fmt;

use rialto_server::{Config, ServerError};

/// Arguments of `rialto serve`: `--config FILE` (a TOML file of configuration keys) and
/// `--<key> <value>` for every configuration key (`--port 7000`, `--appendfsync everysec`),
/// in any order; flags override the file. `rialto serve --help` lists the keys.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// `--config FILE` and `--<key> <value>` pairs, in any order.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "--config FILE | --KEY VALUE"
    )]
    pub options: Vec<String>,
}

/// Splits `--config FILE` (or `--config=FILE`) from the key flags.
fn split_config(options: &[String]) -> Result<(Option<String>, Vec<String>), ServeError> {
    let mut config = None;
    let mut rest = Vec::new();
    let mut it = options.iter();
    while let Some(o) = it.next() {
        if o == "--config" {
            let path = it
                .next()
                .ok_or_else(|| ServeError::Config("option 'config': missing value".into()))?;
            config = Some(path.clone());
        } else if let Some(path) = o.strip_prefix("--config=") {
            config = Some(path.to_string());
        } else {
            rest.push(o.clone());
        }
    }
    Ok((config, rest))
}

/// Why `rialto serve` failed.
#[derive(Debug)]
pub enum ServeError {
    Config(String),
    Server(ServerError),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Config(e) => f.write_str(e),
            ServeError::Server(e) => write!(f, "{e}"),
        }
    }
}

impl crate::cli::CliError for ServeError {
    fn exit_code(&self) -> u8 {
        match self {
            ServeError::Config(_) => 2,
            ServeError::Server(_) => 1,
        }
    }
}

/// Builds the configuration (defaults, file, flags), starts logging and serves until
/// SIGTERM, SIGINT or SHUTDOWN.
pub fn run(args: Args) -> Result<(), ServeError> {
    let mut cfg = Config::default();
    let (config, options) = split_config(&args.options)?;
    if let Some(path) = &config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ServeError::Config(format!("config file {path}: {e}")))?;
        cfg.apply_toml(path, &text)
            .map_err(|e| ServeError::Config(e.to_string()))?;
        // Absolute, so CONFIG REWRITE finds it whatever the working directory becomes.
        cfg.config_file = Some(std::path::absolute(path).unwrap_or_else(|_| path.into()));
    }
    cfg.apply_flags(&options)
        .map_err(|e| ServeError::Config(e.to_string()))?;
    cfg.validate()
        .map_err(|e| ServeError::Config(e.to_string()))?;
    init_logging(&cfg.log_level, &cfg.log_format);
    rialto_server::serve(cfg).map_err(ServeError::Server)
}

fn init_logging(level: &str, format: &str) {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let ansi = colors_wanted(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    // CONFIG SET loglevel swaps the filter while the server runs.
    let reloadable = |level: &str| {
        EnvFilter::try_new(level).map_err(|e| format!("not a log level or filter: {e}"))
    };
    if format == "json" {
        let builder = builder.json().with_filter_reloading();
        let handle = builder.reload_handle();
        rialto_server::set_log_filter(Box::new(move |level| {
            handle.reload(reloadable(level)?).map_err(|e| e.to_string())
        }));
        let _ = builder.try_init();
    } else {
        let builder = builder.with_filter_reloading();
        let handle = builder.reload_handle();
        rialto_server::set_log_filter(Box::new(move |level| {
            handle.reload(reloadable(level)?).map_err(|e| e.to_string())
        }));
        let _ = builder.try_init();
    }
}

/// Whether log lines carry ANSI colours: only on a terminal (a file or a pipe gets plain
/// text, which `grep` and log shippers read), and never when `NO_COLOR` is set to anything
/// but the empty string (<https://no-color.org>).
fn colors_wanted(stderr_is_tty: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_tty && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::colors_wanted;
    use std::ffi::OsStr;

    #[test]
    fn colours_only_on_a_terminal_and_not_with_no_color() {
        assert!(colors_wanted(true, None));
        assert!(!colors_wanted(false, None));
        assert!(!colors_wanted(true, Some(OsStr::new("1"))));
        assert!(!colors_wanted(false, Some(OsStr::new("1"))));
        // An empty NO_COLOR does not count, as the convention says.
        assert!(colors_wanted(true, Some(OsStr::new(""))));
    }
}
