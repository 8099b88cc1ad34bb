//! Authentication and permission checks: the glue between connections, the command table and
//! the ACL users of [`crate::acl`].

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use rialto_resp::Reply;

use crate::acl::{Acl, CatalogEntry, KeyAccess, User};
use crate::client::Client;
use crate::command_table::{self, CommandSpec};
use crate::config::Config;
use crate::server::Shared;

fn entry(spec: &'static CommandSpec) -> CatalogEntry {
    let mut e = CatalogEntry::new(spec.name, spec.acl_categories, spec.arity);
    if spec.first_key > 0 {
        // The legacy range, for ACL DRYRUN; connections check the exact key specs.
        let access = if spec.has_flag("write") {
            KeyAccess::READ_WRITE
        } else {
            KeyAccess::READ
        };
        e = e.key_range(
            spec.first_key as usize,
            spec.last_key,
            spec.step.max(1) as usize,
            access,
        );
    }
    if spec.has_flag("no_auth") {
        e = e.no_auth();
    }
    e
}

/// Every command and subcommand with its ACL categories, arity and keys.
pub fn catalog() -> &'static [CatalogEntry] {
    static CATALOG: OnceLock<Vec<CatalogEntry>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let mut v = Vec::new();
        for spec in command_table::all() {
            v.push(entry(spec));
            v.extend(spec.subcommands.iter().map(entry));
        }
        v
    })
}

/// The users a configuration declares: the default user (with `requirepass`), then each
/// `user` entry (`name rules...`, as ACL SETUSER takes them).
pub fn acl_from_config(cfg: &Config) -> Result<Acl, String> {
    let mut acl = Acl::new(catalog(), cfg.requirepass.as_deref().map(str::as_bytes));
    let mut users = Vec::new();
    for line in &cfg.users {
        let spec = line.trim();
        let parsed = if spec.starts_with("user ") {
            crate::acl::parse_user_line(spec)
        } else {
            crate::acl::parse_user_spec(spec)
        };
        users.push(parsed.map_err(|e| format!("user '{line}': {e}"))?);
    }
    acl.load_users(&users).map_err(|e| e.to_string())?;
    Ok(acl)
}

/// Checks a password; counts failures.
/// `user` `None`: the one-argument AUTH of the default user.
pub fn authenticate(shared: &Shared, user: Option<&[u8]>, pass: &[u8]) -> Result<Arc<User>, Reply> {
    let r = match user {
        Some(u) => shared.acl.read().authenticate(u, pass),
        None => shared.acl.read().authenticate_default(pass),
    };
    r.map_err(|e| {
        shared
            .stats
            .auth_failures
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        e.to_reply()
    })
}

/// Makes `user` the connection's user.
pub fn login(client: &mut Client, user: Arc<User>) {
    client.handle.info.lock().user = String::from_utf8_lossy(user.name()).into_owned();
    client.set_user(Some(user));
}

/// Back to the default user: authenticated only if it needs no password (RESET).
pub fn logout(shared: &Shared, client: &mut Client) {
    let acl = shared.acl.read();
    client.set_user(if acl.default_user_needs_auth() {
        None
    } else {
        acl.user(b"default")
    });
    client.handle.info.lock().user = "default".into();
}

/// Whether `user` may run this request (command, subcommand, first argument and keys, each
/// key with the access its key spec says).
pub fn check(user: &User, spec: &CommandSpec, args: &[Bytes]) -> Result<(), Reply> {
    let keys: Vec<(&[u8], KeyAccess)> = command_table::keys_with_flags(spec, args)
        .into_iter()
        .filter_map(|k| {
            let read = k.flags.contains(&"access");
            let write = k
                .flags
                .iter()
                .any(|f| matches!(*f, "update" | "insert" | "delete"));
            let access = match (read, write) {
                (true, true) => KeyAccess::READ_WRITE,
                (true, false) => KeyAccess::READ,
                (false, true) => KeyAccess::WRITE,
                (false, false) => KeyAccess::META,
            };
            args.get(k.pos).map(|a| (&a[..], access))
        })
        .collect();
    let first = if spec.name.contains('|') { 2 } else { 1 };
    user.check_keys(spec.name, args.get(first).map(|a| &a[..]), &keys)
        .map_err(|d| d.to_reply())
}

/// ACL subcommands, run as the connection's user.
pub fn acl_command(shared: &Shared, client: &Client, args: &[Bytes]) -> Reply {
    let me: &[u8] = client.user.as_ref().map_or(b"default", |u| u.name());
    crate::acl::acl_command(&shared.acl, me, args)
}
