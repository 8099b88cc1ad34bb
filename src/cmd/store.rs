//! `rialto store create|describe|list|delete|rollback`: manages stores on a running server
//! (`--server`) or in a database directory (`--dir`).

use rialto_resp::Reply;

use super::stores_backend::{render, Backend, BackendError, Target};

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
    },
    /// Show a store's prefix, versions and push in progress.
    Describe { name: String },
    /// List the stores.
    List,
    /// Delete a store (its data is removed in the background).
    Delete { name: String },
    /// Make the previous version current again and retire the version left. A rollback only
    /// goes back: a second one, with no older version kept, is refused.
    Rollback {
        name: String,
        /// Only if this is the version the rollback goes back to (a guard for scripts: a
        /// push that landed meanwhile makes it fail); the current version changes nothing.
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
                } => {
                    req.extend([b"CREATE".to_vec(), name.clone().into_bytes()]);
                    if let Some(p) = prefix {
                        req.extend([b"PREFIX".to_vec(), p.clone().into_bytes()]);
                    }
                    req.extend([b"REWIND".to_vec(), rewind.to_string().into_bytes()]);
                }
                Action::Describe { name } => {
                    req.extend([b"DESCRIBE".to_vec(), name.clone().into_bytes()])
                }
                Action::List => req.push(b"LIST".to_vec()),
                Action::Delete { name } => {
                    req.extend([b"DELETE".to_vec(), name.clone().into_bytes()])
                }
                Action::Rollback { name, to_version } => {
                    req.extend([b"ROLLBACK".to_vec(), name.clone().into_bytes()]);
                    if let Some(v) = to_version {
                        req.push(v.to_string().into_bytes());
                    }
                }
            }
            render(&r.call(&req)?)
        }
        Backend::Local(l) => {
            let describe = |name: &str| -> Result<String, BackendError> {
                let cat = l.keyspace().catalog();
                let s = cat
                    .get(name)
                    .ok_or_else(|| BackendError::Store(format!("no such store '{name}'")))?;
                Ok(render(&rialto_server::describe_store(s)))
            };
            let r = match &args.action {
                Action::Create {
                    name,
                    prefix,
                    rewind,
                } => {
                    let p = prefix.clone().unwrap_or_else(|| format!("{name}:"));
                    l.create(name, p.as_bytes(), rewind.saturating_mul(1000))
                        .and_then(|()| describe(name))
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
                Action::Rollback { name, to_version } => {
                    l.rollback(name, *to_version).and_then(|()| describe(name))
                }
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
