//! Authentication and permission checks: the glue between connections, the command table and
//! the ACL users of [`crate::acl`].

use std::sync::Arc;

use rialto_resp::Reply;

use crate::acl::log::Event;
use crate::acl::users::AuthError;
use crate::acl::{Acl, User};
use crate::client::{Client, ClientHandle};
use crate::command_table;
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

/// Checks a password; counts failures, and logs a wrong one in the ACL log as a refusal of
/// `command` (as typed: `AUTH`, `HELLO`) for `client`.
/// `user` `None`: the one-argument AUTH of the default user.
pub fn authenticate(
    shared: &Shared,
    client: &ClientHandle,
    command: &[u8],
    user: Option<&[u8]>,
    pass: &[u8],
) -> Result<Arc<User>, Reply> {
    let r = match user {
        Some(u) => shared.acl.read().authenticate(u, pass),
        None => shared.acl.read().authenticate_default(pass),
    };
    r.map_err(|e| {
        shared
            .stats
            .auth_failures
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if e == AuthError::WrongPass {
            let event = Event::auth(command, user.unwrap_or(b"default"));
            log_refusal(shared, client, event);
        }
        e.to_reply()
    })
}

/// Adds a refusal of `client`'s request to the ACL log.
pub fn log_refusal(shared: &Shared, client: &ClientHandle, event: Event) {
    let info = client.describe();
    let now_ms = shared.now_ms();
    shared.acl_log.lock().add(event, info, now_ms);
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
