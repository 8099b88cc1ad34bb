//! Commands: one file per command (or per family sharing one implementation), and the registry
//! that maps the command table's entries to their handlers.
//!
//! Three kinds of handler, by what they touch:
//! - [`Handler::Read`]: reads keys. Runs on the connection against the published state, or
//!   through the merger when it must see this connection's pending writes.
//! - [`Handler::Write`]: turns the request into an [`Op`] (parsing and checking what Redis
//!   checks before looking at a key); the keyspace applies it in the merger's order and the
//!   reply is sent once it is durable. A failed op writes nothing.
//! - [`Handler::Conn`]: everything else (connection state, server state, whole-keyspace
//!   scans). Runs on the connection after its pending replies are resolved.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use bytes::Bytes;
use rialto_resp::Reply;

use crate::client::Client;
use crate::command_table::{self, CmdId, CommandSpec};
use crate::conn::BoxReply;
use rialto_keyspace::{Op, Reader, Record};

use crate::reply::{self, CmdResult};
use crate::server::Shared;

pub mod util;
mod util_opts;

mod append;
mod del;
mod exists;
mod expire;
mod get;
mod getdel;
mod getex;
mod getrange;
mod getset;
mod incr;
pub mod incrbyfloat;
mod mget;
mod mset;
mod persist;
mod rename;
mod set;
mod setex;
mod setnx;
mod setrange;
mod strlen;
mod ttl;
mod type_;

mod acl;
mod auth;
mod client;
mod cluster;
mod command;
mod config;
mod dbsize;
mod echo;
mod flushdb;
mod hello;
mod info;
mod keys;
mod ping;
mod push;
mod quit;
mod randomkey;
mod reset;
pub mod scan;
mod select;
mod shutdown;
mod slowlog;
pub mod store;
mod time;

/// Keys as read commands see them: the keyspace's view, with failures as error replies.
pub struct R<'a, 'k> {
    keys: &'a mut Reader<'k>,
}

impl<'a, 'k> R<'a, 'k> {
    /// Wraps the keyspace's view.
    pub fn new(keys: &'a mut Reader<'k>) -> Self {
        R { keys }
    }

    /// The live record of `key`: `None` if absent or expired.
    pub fn get(&mut self, key: &[u8]) -> CmdResult<Option<Record>> {
        self.keys.get(key).map_err(|e| reply::keyspace_error(&e))
    }

    /// Whether `key` exists (and is not expired).
    pub fn exists(&mut self, key: &[u8]) -> CmdResult<bool> {
        self.keys.exists(key).map_err(|e| reply::keyspace_error(&e))
    }

    /// The instant expiry is judged against, Unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        self.keys.now_ms
    }
}

/// Where and when a write command's op runs: the client's database, the instant it is
/// normalised at.
#[derive(Debug, Clone, Copy)]
pub struct At {
    /// Database index (SELECT).
    pub db: u8,
    /// Unix milliseconds.
    pub now_ms: i64,
}

impl At {
    /// The op doing `kind` here and now.
    pub fn op(self, kind: rialto_keyspace::OpKind) -> Op {
        Op::new(self.db, self.now_ms, kind)
    }
}

/// A read command.
pub type ReadFn = fn(&mut R<'_, '_>, &[Bytes]) -> CmdResult;
/// A write command: the request as an op.
pub type WriteFn = fn(At, &[Bytes]) -> CmdResult<Op>;
/// A connection or server command.
pub type ConnFn = fn(&mut Ctx<'_>, &[Bytes]) -> Outcome;

/// How a command runs; see the module docs.
#[derive(Clone, Copy)]
pub enum Handler {
    Read(ReadFn),
    Write(WriteFn),
    Conn(ConnFn),
}

/// What a connection command asks of its connection.
pub enum Outcome {
    /// Send this reply.
    Reply(Reply),
    /// Send the reply this future produces (work off the connection's thread).
    Later(BoxReply),
    /// Send the reply, if any, then close the connection.
    Close(Option<Reply>),
}

impl From<CmdResult> for Outcome {
    fn from(r: CmdResult) -> Self {
        Outcome::Reply(r.unwrap_or_else(|e| e))
    }
}

/// What a connection command may use.
pub struct Ctx<'a> {
    pub shared: &'a Arc<Shared>,
    pub client: &'a mut Client,
}

/// A command's handler and its statistics (INFO commandstats).
pub struct Entry {
    pub spec: &'static CommandSpec,
    pub handler: Handler,
    pub calls: AtomicU64,
    pub micros: AtomicU64,
}

/// Every command's entry, indexed like the command table.
pub struct Registry {
    entries: Vec<Entry>,
}

fn handler(id: CmdId) -> Handler {
    use CmdId::*;
    use Handler::{Conn, Read, Write};
    match id {
        Get => Read(get::run),
        MGet => Read(mget::run),
        Exists => Read(exists::run),
        Type => Read(type_::run),
        StrLen => Read(strlen::run),
        GetRange | SubStr => Read(getrange::run),
        Ttl => Read(ttl::ttl),
        PTtl => Read(ttl::pttl),
        ExpireTime => Read(ttl::expiretime),
        PExpireTime => Read(ttl::pexpiretime),

        Set => Write(set::run),
        SetNx => Write(setnx::run),
        SetEx => Write(setex::setex),
        PSetEx => Write(setex::psetex),
        GetSet => Write(getset::run),
        GetDel => Write(getdel::run),
        GetEx => Write(getex::run),
        MSet => Write(mset::mset),
        MSetNx => Write(mset::msetnx),
        Del | Unlink => Write(del::run),
        Append => Write(append::run),
        SetRange => Write(setrange::run),
        Incr => Write(incr::incr),
        Decr => Write(incr::decr),
        IncrBy => Write(incr::incrby),
        DecrBy => Write(incr::decrby),
        IncrByFloat => Write(incrbyfloat::run),
        Expire => Write(expire::expire_cmd),
        PExpire => Write(expire::pexpire),
        ExpireAt => Write(expire::expireat),
        PExpireAt => Write(expire::pexpireat),
        Persist => Write(persist::run),
        Rename => Write(rename::rename_cmd),
        RenameNx => Write(rename::renamenx),

        Ping => Conn(ping::run),
        Echo => Conn(echo::run),
        Hello => Conn(hello::run),
        Auth => Conn(auth::run),
        Select => Conn(select::run),
        Quit => Conn(quit::run),
        Reset => Conn(reset::run),
        Client => Conn(client::run),
        Scan => Conn(scan::run),
        Keys => Conn(keys::run),
        DbSize => Conn(dbsize::run),
        RandomKey => Conn(randomkey::run),
        FlushDb => Conn(flushdb::flushdb),
        FlushAll => Conn(flushdb::flushall),
        Info => Conn(info::run),
        Config => Conn(config::run),
        Store => Conn(store::run),
        Push => Conn(push::run),
        Command => Conn(command::run),
        Time => Conn(time::run),
        SlowLog => Conn(slowlog::run),
        Shutdown => Conn(shutdown::run),
        Acl => Conn(acl::run),
        Cluster | ReadOnly | ReadWrite => Conn(cluster::run),
    }
}

impl Registry {
    pub fn new() -> Registry {
        Registry {
            entries: command_table::all()
                .iter()
                .map(|spec| Entry {
                    spec,
                    handler: handler(spec.id),
                    calls: AtomicU64::new(0),
                    micros: AtomicU64::new(0),
                })
                .collect(),
        }
    }

    /// The entry of a top-level command.
    pub fn entry(&self, id: CmdId) -> &Entry {
        &self.entries[id as usize]
    }

    /// Every entry.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

/// Redis's `'arg' 'arg' ` list in unknown-command errors: at most ~128 bytes of arguments.
fn args_preview(args: &[Bytes]) -> String {
    let mut s = String::new();
    for a in args {
        if s.len() >= 128 {
            break;
        }
        let room = 128 - s.len();
        let text = String::from_utf8_lossy(&a[..a.len().min(room)]);
        s.push('\'');
        s.push_str(&text);
        s.push_str("' ");
    }
    s
}

fn clean(text: String) -> Reply {
    reply::err_string(text.replace(['\r', '\n'], " "))
}

/// Resolves a request to its entry and checks what Redis checks before running a command, in
/// Redis's order: known command, arity, authentication, ACL permission.
pub fn admit<'r>(shared: &'r Shared, client: &Client, args: &[Bytes]) -> Result<&'r Entry, Reply> {
    let Some(base) = args.first().and_then(|a| command_table::lookup(a)) else {
        let name = args
            .first()
            .map(|a| String::from_utf8_lossy(a).into_owned());
        let mut name = name.unwrap_or_default();
        name.truncate(128);
        return Err(clean(format!(
            "ERR unknown command '{name}', with args beginning with: {}",
            args_preview(args.get(1..).unwrap_or(&[]))
        )));
    };
    let spec = if !base.subcommands.is_empty() && args.len() >= 2 {
        match command_table::lookup_sub(base, &args[1]) {
            Some(sub) => sub,
            None => {
                let mut sub = String::from_utf8_lossy(&args[1]).into_owned();
                sub.truncate(128);
                return Err(clean(format!(
                    "ERR unknown subcommand '{sub}'. Try {} HELP.",
                    base.name.to_ascii_uppercase()
                )));
            }
        }
    } else {
        base
    };
    if !command_table::check_arity(spec, args.len()) {
        return Err(reply::wrong_arity(spec.name));
    }
    match &client.user {
        None if !spec.has_flag("no_auth") => {
            return Err(Reply::error("NOAUTH Authentication required."));
        }
        None => {}
        Some(_) if client.unrestricted => {}
        Some(user) => crate::auth::check(user, spec, args)?,
    }
    Ok(shared.registry.entry(spec.id))
}
