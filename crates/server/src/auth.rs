//! Authentication and permission checks: the glue between connections, the command table and
//! the ACL users of [`crate::acl`].

use std::sync::Arc;

use bytes::Bytes;
use rialto_resp::Reply;

use crate::acl::{Acl, User};
use crate::client::Client;
use crate::command_table::{self, CommandSpec};
use crate::config::Config;
use crate::server::Shared;

/// The users a configuration declares: the default user (with `requirepass`), then each
/// `user` entry (`name rules...`, as ACL SETUSER takes them).
pub fn acl_from_config(cfg: &Config) -> Result<Acl, String> {
    let requirepass = cfg.requirepass.as_deref().map(str::as_bytes);
    let mut acl = Acl::new(command_table::all(), requirepass);
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
    user.check(spec.name, args).map_err(|d| d.to_reply())
}
