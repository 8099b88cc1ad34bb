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
    }
    cfg.apply_flags(&options)
        .map_err(|e| ServeError::Config(e.to_string()))?;
    cfg.validate()
        .map_err(|e| ServeError::Config(e.to_string()))?;
    init_logging(&cfg.log_level, &cfg.log_format);
    rialto_server::serve(cfg).map_err(ServeError::Server)
}

fn init_logging(level: &str, format: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if format == "json" {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
