//! Commands: one file per command (or per family sharing one implementation), each declaring
//! its command (metadata, subcommands and handlers: see [`crate::command_table`]); the list of
//! every declaration; admission; per-command statistics.
//!
//! Five kinds of handler, by what they touch:
//! - [`Handler::Read`]: reads keys. Runs on the connection against the published state, or
//!   through the merger when it must see this connection's pending writes.
//! - [`Handler::Write`]: turns the request into an [`Op`] (parsing and checking what Redis
//!   checks before looking at a key); the keyspace applies it in the merger's order and the
//!   reply is sent once it is durable. A failed op writes nothing.
//! - [`Handler::Block`]: a blocking pop (BLPOP and kin): its pop runs as a write; if it took
//!   nothing, the same transaction makes the connection a waiter on its keys (see the
//!   keyspace's `blocking`). Inside MULTI or a script it is the pop alone.
//! - [`Handler::Conn`]: everything else (connection state, server state, whole-keyspace
//!   scans). Runs on the connection after its pending replies are resolved.
//! - [`Handler::Meta`] (COMMAND) and [`Handler::Acl`] (ACL): like `Conn`, but they need only
//!   the declarations, or only the users, so they also run without a server.
//! - [`Handler::Txn`]: MULTI, EXEC, DISCARD, WATCH, UNWATCH, which the connection runs on its
//!   own transaction state.
//! - [`Handler::Script`]: EVAL and its forms: a Lua script run as one merger transaction.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::RwLock;
use rialto_resp::Reply;

use crate::acl::Acl;
use crate::client::Client;
use crate::command_table::{self, CommandSpec};
use crate::conn::BoxReply;
use rialto_keyspace::{Op, Reader, Record};

use crate::reply::{self, CmdResult};
use crate::server::Shared;

pub mod util;
mod util_opts;

mod append;
mod bitcount;
mod bitfield;
mod bitfield_ro;
mod bitop;
mod bitpos;
mod blmove;
mod blmpop;
mod blpop;
mod brpoplpush;
mod bzmpop;
mod bzpop;
mod copy;
mod del;
mod dump;
mod exists;
mod expire;
mod geo_util;
mod geoadd;
mod geodist;
mod geohash;
mod geopos;
mod georadius;
mod georadius_ro;
mod georadiusbymember;
mod georadiusbymember_ro;
mod geosearch;
mod geosearchstore;
mod get;
mod getbit;
mod getdel;
mod getex;
mod getrange;
mod getset;
mod hdel;
mod hexists;
mod hget;
mod hgetall;
mod hincrby;
mod hincrbyfloat;
mod hkeys;
mod hlen;
mod hmget;
mod hmset;
mod hrandfield;
mod hscan;
mod hset;
mod hsetnx;
mod hstrlen;
mod hvals;
mod incr;
pub mod incrbyfloat;
mod mget;
mod move_;
mod mset;
mod persist;
mod pfadd;
mod pfcount;
pub(crate) mod pfdebug;
mod pfmerge;
mod rename;
mod role;
mod rpoplpush;
mod set;
mod setbit;
mod setex;
mod setnx;
mod setrange;
mod strlen;
mod touch;
mod ttl;
mod type_;
mod zadd;
mod zcard;
mod zcombine;
mod zcount;
mod zincrby;
mod zlexcount;
mod zmpop;
mod zmscore;
mod zpop;
mod zrandmember;
mod zrange;
mod zrangestore;
mod zrank;
mod zrem;
mod zremrange;
mod zscan;
mod zscore;
mod zset_util;
mod zstore;

pub mod acl;
mod applied;
mod auth;
mod client;
mod cluster;
pub mod command;
mod config;
mod dbsize;
pub(crate) mod debug;
mod echo;
mod eval;
mod fcall;
pub mod flushdb;
pub mod function;
mod hello;
mod info;
mod keys;
mod latency;
mod lcs;
mod lindex;
mod linsert;
mod list_util;
mod llen;
mod lmove;
mod lmpop;
mod lpop;
mod lpos;
mod lpush;
mod lpushx;
mod lrange;
mod lrem;
mod lset;
mod ltrim;
mod memory;
mod migrate;
mod monitor;
mod multi;
mod object;
mod ping;
pub mod pubsub;
mod push;
mod quit;
mod randomkey;
mod reset;
mod restore;
mod sadd;
mod save;
pub mod scan;
mod scard;
pub mod script;
mod sdiff;
mod sdiffstore;
pub mod select;
mod shutdown;
mod sinter;
mod sintercard;
mod sinterstore;
mod sismember;
mod slowlog;
mod smembers;
mod smismember;
mod smove;
pub mod sort;
mod sort_ro;
mod spop;
mod srandmember;
mod srem;
mod sscan;
pub mod store;
mod stream_util;
mod sunion;
mod sunionstore;
mod swapdb;
mod time;
mod xack;
mod xadd;
mod xautoclaim;
mod xclaim;
mod xdel;
mod xgroup;
mod xinfo;
mod xlen;
mod xpending;
mod xrange;
mod xread;
mod xreadgroup;
mod xsetid;
mod xtrim;

/// Every top-level command, in the order `COMMAND` lists them.
pub static COMMANDS: &[CommandSpec] = &[
    ping::PING,
    echo::ECHO,
    hello::HELLO,
    auth::AUTH,
    select::SELECT,
    quit::QUIT,
    reset::RESET,
    client::CLIENT,
    get::GET,
    set::SET,
    setnx::SETNX,
    setex::SETEX,
    setex::PSETEX,
    getset::GETSET,
    getdel::GETDEL,
    getex::GETEX,
    mget::MGET,
    mset::MSET,
    setbit::SETBIT,
    getbit::GETBIT,
    lcs::LCS,
    bitcount::BITCOUNT,
    bitpos::BITPOS,
    bitop::BITOP,
    bitfield::BITFIELD,
    bitfield_ro::BITFIELD_RO,
    hdel::HDEL,
    hexists::HEXISTS,
    hget::HGET,
    hgetall::HGETALL,
    hincrby::HINCRBY,
    hincrbyfloat::HINCRBYFLOAT,
    hkeys::HKEYS,
    hlen::HLEN,
    hmget::HMGET,
    hmset::HMSET,
    hrandfield::HRANDFIELD,
    hscan::HSCAN,
    hset::HSET,
    hsetnx::HSETNX,
    hstrlen::HSTRLEN,
    hvals::HVALS,
    lindex::LINDEX,
    linsert::LINSERT,
    llen::LLEN,
    lmove::LMOVE,
    lmpop::LMPOP,
    lpop::LPOP,
    lpop::RPOP,
    lpos::LPOS,
    lpush::LPUSH,
    lpush::RPUSH,
    lpushx::LPUSHX,
    lpushx::RPUSHX,
    lrange::LRANGE,
    lrem::LREM,
    lset::LSET,
    ltrim::LTRIM,
    rpoplpush::RPOPLPUSH,
    blpop::BLPOP,
    blpop::BRPOP,
    blmove::BLMOVE,
    brpoplpush::BRPOPLPUSH,
    blmpop::BLMPOP,
    mset::MSETNX,
    del::DEL,
    del::UNLINK,
    exists::EXISTS,
    touch::TOUCH,
    type_::TYPE,
    strlen::STRLEN,
    append::APPEND,
    getrange::GETRANGE,
    setrange::SETRANGE,
    incr::INCR,
    incr::DECR,
    incr::INCRBY,
    incr::DECRBY,
    incrbyfloat::INCRBYFLOAT,
    expire::EXPIRE,
    expire::PEXPIRE,
    expire::EXPIREAT,
    expire::PEXPIREAT,
    ttl::EXPIRETIME,
    ttl::PEXPIRETIME,
    ttl::TTL,
    ttl::PTTL,
    persist::PERSIST,
    scan::SCAN,
    keys::KEYS,
    dbsize::DBSIZE,
    randomkey::RANDOMKEY,
    rename::RENAME,
    rename::RENAMENX,
    copy::COPY,
    dump::DUMP,
    restore::RESTORE,
    migrate::MIGRATE,
    move_::MOVE,
    swapdb::SWAPDB,
    flushdb::FLUSHDB,
    flushdb::FLUSHALL,
    info::INFO,
    config::CONFIG,
    command::COMMAND,
    time::TIME,
    save::SAVE,
    role::ROLE,
    slowlog::SLOWLOG,
    shutdown::SHUTDOWN,
    acl::ACL,
    cluster::CLUSTER,
    cluster::READONLY,
    cluster::READWRITE,
    cluster::ASKING,
    applied::LASTWRITE,
    applied::WAITAPPLIED,
    getrange::SUBSTR,
    store::STORE,
    push::PUSH,
    multi::MULTI,
    multi::EXEC,
    multi::DISCARD,
    multi::WATCH,
    multi::UNWATCH,
    eval::EVAL,
    eval::EVALSHA,
    eval::EVAL_RO,
    eval::EVALSHA_RO,
    script::SCRIPT,
    fcall::FCALL,
    fcall::FCALL_RO,
    function::FUNCTION,
    pubsub::SUBSCRIBE,
    pubsub::UNSUBSCRIBE,
    pubsub::PSUBSCRIBE,
    pubsub::PUNSUBSCRIBE,
    pubsub::SSUBSCRIBE,
    pubsub::SUNSUBSCRIBE,
    pubsub::PUBLISH,
    pubsub::SPUBLISH,
    pubsub::PUBSUB,
    debug::DEBUG,
    monitor::MONITOR,
    latency::LATENCY,
    memory::MEMORY,
    object::OBJECT,
    sadd::SADD,
    scard::SCARD,
    sdiff::SDIFF,
    sdiffstore::SDIFFSTORE,
    sinter::SINTER,
    sintercard::SINTERCARD,
    sinterstore::SINTERSTORE,
    sismember::SISMEMBER,
    smembers::SMEMBERS,
    smismember::SMISMEMBER,
    smove::SMOVE,
    spop::SPOP,
    srandmember::SRANDMEMBER,
    srem::SREM,
    sscan::SSCAN,
    sunion::SUNION,
    sunionstore::SUNIONSTORE,
    zadd::ZADD,
    zcard::ZCARD,
    zcount::ZCOUNT,
    zincrby::ZINCRBY,
    zlexcount::ZLEXCOUNT,
    zmscore::ZMSCORE,
    zpop::ZPOPMIN,
    zpop::ZPOPMAX,
    zmpop::ZMPOP,
    bzpop::BZPOPMIN,
    bzpop::BZPOPMAX,
    bzmpop::BZMPOP,
    zrange::ZRANGE,
    zrange::ZRANGEBYSCORE,
    zrange::ZREVRANGEBYSCORE,
    zrange::ZRANGEBYLEX,
    zrange::ZREVRANGEBYLEX,
    zrange::ZREVRANGE,
    zrank::ZRANK,
    zrank::ZREVRANK,
    zrem::ZREM,
    zremrange::ZREMRANGEBYRANK,
    zremrange::ZREMRANGEBYSCORE,
    zremrange::ZREMRANGEBYLEX,
    zscan::ZSCAN,
    zscore::ZSCORE,
    zrandmember::ZRANDMEMBER,
    zrangestore::ZRANGESTORE,
    zcombine::ZUNION,
    zcombine::ZINTER,
    zcombine::ZDIFF,
    zcombine::ZINTERCARD,
    zstore::ZUNIONSTORE,
    zstore::ZINTERSTORE,
    zstore::ZDIFFSTORE,
    sort::SORT,
    sort_ro::SORT_RO,
    geoadd::GEOADD,
    geodist::GEODIST,
    geohash::GEOHASH,
    geopos::GEOPOS,
    georadius::GEORADIUS,
    georadius_ro::GEORADIUS_RO,
    georadiusbymember::GEORADIUSBYMEMBER,
    georadiusbymember_ro::GEORADIUSBYMEMBER_RO,
    geosearch::GEOSEARCH,
    geosearchstore::GEOSEARCHSTORE,
    pfadd::PFADD,
    pfcount::PFCOUNT,
    pfmerge::PFMERGE,
    pfdebug::PFDEBUG,
    pfdebug::PFSELFTEST,
    xack::XACK,
    xadd::XADD,
    xautoclaim::XAUTOCLAIM,
    xclaim::XCLAIM,
    xdel::XDEL,
    xgroup::XGROUP,
    xinfo::XINFO,
    xlen::XLEN,
    xpending::XPENDING,
    xrange::XRANGE,
    xread::XREAD,
    xreadgroup::XREADGROUP,
    xrange::XREVRANGE,
    xsetid::XSETID,
    xtrim::XTRIM,
];

/// Keys as read commands see them: the keyspace's view, with failures as error replies.
pub struct R<'a, 'k> {
    keys: &'a mut Reader<'k>,
    script: bool,
}

impl<'a, 'k> R<'a, 'k> {
    /// Wraps the keyspace's view.
    pub fn new(keys: &'a mut Reader<'k>) -> Self {
        R {
            keys,
            script: false,
        }
    }

    /// Wraps the keyspace's view for a command a script calls.
    pub fn in_script(keys: &'a mut Reader<'k>) -> Self {
        R { keys, script: true }
    }

    /// Whether a script called the command (SORT sorts a set it would leave in its order).
    pub fn called_by_script(&self) -> bool {
        self.script
    }

    /// The live record of `key`: `None` if absent or expired.
    pub fn get(&mut self, key: &[u8]) -> CmdResult<Option<Record>> {
        self.keys.get(key).map_err(|e| reply::keyspace_error(&e))
    }

    /// The live records of `keys`, in their order, read in one state (a batch get).
    pub fn get_many(&mut self, keys: &[Bytes]) -> CmdResult<Vec<Option<Record>>> {
        self.keys
            .get_many(keys)
            .map_err(|e| reply::keyspace_error(&e))
    }

    /// Whether `key` exists (and is not expired).
    pub fn exists(&mut self, key: &[u8]) -> CmdResult<bool> {
        self.keys.exists(key).map_err(|e| reply::keyspace_error(&e))
    }

    /// The live record of `key` if it holds a string (WRONGTYPE if it holds another kind).
    pub fn get_string(&mut self, key: &[u8]) -> CmdResult<Option<Record>> {
        self.keys
            .get_string(key)
            .map_err(|e| reply::keyspace_error(&e))
    }

    /// The hash at `key` (WRONGTYPE if it holds another kind); its fields are read through
    /// [`R::keys`].
    pub fn hash(&mut self, key: &[u8]) -> CmdResult<Option<rialto_keyspace::Hash>> {
        rialto_keyspace::Hash::load(self.keys, key).map_err(|e| reply::keyspace_error(&e))
    }

    /// The set at `key` (WRONGTYPE if it holds another kind); its members are read through
    /// [`R::keys`].
    pub fn set(&mut self, key: &[u8]) -> CmdResult<Option<rialto_keyspace::SetValue>> {
        rialto_keyspace::SetValue::load(self.keys, key).map_err(|e| reply::keyspace_error(&e))
    }

    /// The list at `key` (WRONGTYPE if it holds another kind); its elements are read through
    /// [`R::keys`].
    pub fn list(&mut self, key: &[u8]) -> CmdResult<Option<rialto_keyspace::List>> {
        rialto_keyspace::List::load(self.keys, key).map_err(|e| reply::keyspace_error(&e))
    }

    /// The sorted set at `key` (WRONGTYPE if it holds another kind); its members are read
    /// through [`R::keys`].
    pub fn zset(&mut self, key: &[u8]) -> CmdResult<Option<rialto_keyspace::ZSet>> {
        rialto_keyspace::ZSet::load(self.keys, key).map_err(|e| reply::keyspace_error(&e))
    }

    /// The keyspace's view, for reads of a collection's members.
    pub fn keys(&mut self) -> &mut Reader<'k> {
        self.keys
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
    /// How many databases there are (`databases`), for commands that name one.
    pub databases: usize,
    /// `hll-sparse-max-bytes`: the bytes a HyperLogLog write leaves depend on it, so its ops
    /// carry it.
    pub hll_sparse_max: u64,
    /// The stream node limits XADD and XTRIM carry in their ops.
    pub stream_node: rialto_keyspace::NodeLimits,
}

impl At {
    /// The op doing `kind` here and now.
    pub fn op(self, kind: rialto_keyspace::OpKind) -> Op {
        Op::new(self.db, self.now_ms, kind)
    }
}

// Every handler gets the request whole (`args[0]` the command name, `args[1]` a subcommand's
// name) and only once admission checked it against the declared arity.

/// A read command.
pub type ReadFn = fn(&mut R<'_, '_>, &[Bytes]) -> CmdResult;
/// A write command: the request as an op.
pub type WriteFn = fn(At, &[Bytes]) -> CmdResult<Op>;
/// A connection or server command.
pub type ConnFn = fn(&mut Ctx<'_>, &[Bytes]) -> Outcome;
/// A command answered from the declarations alone.
pub type MetaFn = fn(&[Bytes]) -> Reply;
/// An ACL command: the users and who asks.
pub type AclFn = fn(&AclCtx<'_>, &[Bytes]) -> Reply;

/// A blocking pop's request, parsed (see [`Handler::Block`]).
pub struct BlockingPop {
    /// The pop over every key, as it runs when it need not wait (and inside MULTI or a
    /// script, where it never waits).
    pub op: Op,
    /// The keys it waits on.
    pub keys: Vec<Bytes>,
    /// How long it waits (`None`: until served).
    pub timeout_ms: Option<u64>,
    /// Its reply when the time runs out.
    pub timed_out: Reply,
    /// Whether it may wait at all (XREAD and XREADGROUP without BLOCK never do).
    pub may_wait: bool,
    /// The reply a script gets instead of running it (XREAD and XREADGROUP with BLOCK).
    pub in_script: Option<Reply>,
}

/// A blocking pop.
pub type BlockFn = fn(At, &[Bytes]) -> CmdResult<BlockingPop>;

/// How a command runs; see the module docs.
#[derive(Clone, Copy)]
pub enum Handler {
    Read(ReadFn),
    Write(WriteFn),
    Block(BlockFn),
    Conn(ConnFn),
    Meta(MetaFn),
    Acl(AclFn),
    Txn(TxnCmd),
    Script(ScriptCmd),
}

/// The script commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptCmd {
    Eval,
    EvalSha,
    EvalRo,
    EvalShaRo,
    FCall,
    FCallRo,
}

/// The transaction commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnCmd {
    Multi,
    Exec,
    Discard,
    Watch,
    Unwatch,
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Handler::Read(_) => "Read",
            Handler::Write(_) => "Write",
            Handler::Block(_) => "Block",
            Handler::Conn(_) => "Conn",
            Handler::Meta(_) => "Meta",
            Handler::Acl(_) => "Acl",
            Handler::Txn(_) => "Txn",
            Handler::Script(_) => "Script",
        })
    }
}

/// What a connection command asks of its connection.
pub enum Outcome {
    /// Send this reply.
    Reply(Reply),
    /// Send the reply this future produces (work off the connection's thread).
    Later(BoxReply),
    /// Send the reply, if any, then close the connection.
    Close(Option<Reply>),
    /// Send these replies in order (the subscribe family: one confirmation per channel).
    Many(Vec<Reply>),
    /// Send nothing (CLIENT REPLY OFF and SKIP, MONITOR when already monitoring).
    Silent,
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

/// What an ACL command may use: the users, the name of the connection's user (WHOAMI), and
/// the log of refusals with the time now (LOG).
pub struct AclCtx<'a> {
    pub acl: &'a RwLock<Acl>,
    pub me: &'a [u8],
    pub log: &'a parking_lot::Mutex<crate::acl::log::AclLog>,
    pub now_ms: i64,
}

/// Runs a handler of the kinds that run on the connection, its pending replies resolved:
/// [`Handler::Conn`], [`Handler::Meta`] and [`Handler::Acl`].
pub fn run_on_connection(handler: Handler, ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    match handler {
        Handler::Conn(f) => f(ctx, args),
        Handler::Meta(f) => Outcome::Reply(f(args)),
        Handler::Acl(f) => {
            let me: &[u8] = ctx.client.user.as_ref().map_or(b"default", |u| u.name());
            Outcome::Reply(f(
                &AclCtx {
                    acl: &ctx.shared.acl,
                    me,
                    log: &ctx.shared.acl_log,
                    now_ms: ctx.shared.now_ms(),
                },
                args,
            ))
        }
        // The connection runs these itself, on the keyspace; never handed here.
        Handler::Read(_)
        | Handler::Write(_)
        | Handler::Block(_)
        | Handler::Txn(_)
        | Handler::Script(_) => {
            Outcome::Reply(Reply::error("ERR command cannot run on the connection"))
        }
    }
}

/// A top-level command's statistics (INFO commandstats), its subcommands' included.
pub struct Entry {
    pub spec: &'static CommandSpec,
    pub calls: AtomicU64,
    pub micros: AtomicU64,
    /// Refused before it ran (arity, NOAUTH, NOPERM, BUSY...): not in `calls`.
    pub rejected: AtomicU64,
    /// Ran and answered an error.
    pub failed: AtomicU64,
}

/// Every top-level command's entry, indexed like [`command_table::all`].
pub struct Registry {
    entries: Vec<Entry>,
}

impl Registry {
    pub fn new() -> Registry {
        Registry {
            entries: command_table::slots()
                .map(|(_, spec)| Entry {
                    spec,
                    calls: AtomicU64::new(0),
                    micros: AtomicU64::new(0),
                    rejected: AtomicU64::new(0),
                    failed: AtomicU64::new(0),
                })
                .collect(),
        }
    }

    /// The entry of statistics slot `slot` ([`command_table::slot_of`]): each command and each
    /// subcommand has its own, as Redis 7 counts `config|get` apart from `config|set`.
    pub fn entry(&self, slot: usize) -> Option<&Entry> {
        self.entries.get(slot)
    }

    /// Every entry, in slot order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

/// Where a call's statistics go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatsAt {
    /// The top-level command's position in [`command_table::all`].
    pub index: usize,
    /// The command's or subcommand's own statistics slot ([`command_table::slot_of`]): its
    /// latency histogram, INFO commandstats and the error counters.
    pub slot: usize,
}

impl StatsAt {
    pub fn of(index: usize, spec: &'static CommandSpec) -> StatsAt {
        StatsAt {
            index,
            slot: command_table::slot_of(index, spec),
        }
    }
}

/// An admitted request: what runs it, and where its statistics go.
#[derive(Debug, Clone, Copy)]
pub struct Admitted {
    /// The top-level command's position in [`command_table::all`].
    pub index: usize,
    /// The command or subcommand resolved.
    pub spec: &'static CommandSpec,
    /// What runs the command or subcommand.
    pub handler: Handler,
}

impl Admitted {
    /// The statistics slot of the command or subcommand resolved.
    pub fn slot(&self) -> usize {
        command_table::slot_of(self.index, self.spec)
    }
}

/// A request [`admit`] refused: the error reply, and the top-level command it counts as a
/// rejected call of — none when the command is unknown, or, as in Redis, when its
/// subcommand is.
#[derive(Debug)]
pub struct Refused {
    pub index: Option<usize>,
    pub reply: Reply,
    /// What the ACL refused, for the ACL log.
    pub denied: Option<crate::acl::users::Denied>,
}

/// Resolves a request and checks what Redis checks before running a command, in Redis's
/// order: known command (and subcommand), arity, authentication, ACL permission.
pub fn admit(client: &Client, args: &[Bytes]) -> Result<Admitted, Refused> {
    let known = args.first().and_then(|name| command_table::index_of(name));
    let refused = |reply: Reply, counted: bool| Refused {
        index: known.filter(|_| counted),
        reply,
        denied: None,
    };
    let (index, spec) = match command_table::resolve(args) {
        Ok(found) => found,
        Err(reply) => {
            // Redis counts an arity error against the command; an unknown subcommand it
            // cannot name.
            let named = command_table::lookup_command(args).is_some();
            return Err(refused(reply, named));
        }
    };
    match &client.user {
        None if !spec.has_flag("no_auth") => {
            return Err(refused(
                Reply::error("NOAUTH Authentication required."),
                true,
            ));
        }
        None => {}
        Some(_) if client.unrestricted => {}
        Some(user) => {
            user.check(spec.name, args).map_err(|d| Refused {
                reply: d.to_reply(),
                denied: Some(d),
                ..refused(Reply::Null, true)
            })?;
            if let Some(r) = sort::acl_refusal(user, spec, args) {
                return Err(refused(r, true));
            }
        }
    }
    let Some(handler) = spec.handler_for(args) else {
        // A container's arity requires a subcommand, so resolution never stops at one.
        return Err(refused(reply::wrong_arity(spec.name), true));
    };
    Ok(Admitted {
        index,
        spec,
        handler,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every() -> impl Iterator<Item = &'static CommandSpec> {
        command_table::all()
            .iter()
            .flat_map(|c| std::iter::once(c).chain(c.subcommands))
    }

    fn args(line: &str) -> Vec<Bytes> {
        line.split(' ')
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect()
    }

    #[test]
    fn every_declaration_resolves_to_itself_with_a_handler() {
        for spec in every() {
            let mut line: Vec<&str> = spec.name.split('|').collect();
            let need = spec.arity.unsigned_abs() as usize;
            while line.len() < need {
                line.push("x");
            }
            let request = args(&line.join(" ").to_ascii_uppercase());
            if !spec.subcommands.is_empty() && spec.handler.is_none() {
                // A container without a handler must not be runnable bare.
                assert!(!command_table::check_arity(spec, 1), "{}", spec.name);
                continue;
            }
            let (index, found) = command_table::resolve(&request).expect(spec.name);
            assert!(std::ptr::eq(found, spec), "{}", spec.name);
            let top = spec.name.split('|').next().unwrap_or_default();
            assert_eq!(command_table::all()[index].name, top);
            assert!(spec.handler.is_some(), "{} has no handler", spec.name);
        }
    }

    #[test]
    fn handlers_that_run_without_a_server_belong_to_their_commands() {
        for spec in every() {
            let top = spec.name.split('|').next().unwrap_or_default();
            match spec.handler {
                // `command::run` and `acl::acl_command` reach these, and only these.
                Some(Handler::Meta(_)) => assert_eq!(top, "command", "{}", spec.name),
                Some(Handler::Acl(_)) => assert_eq!(top, "acl", "{}", spec.name),
                Some(_) => assert!(top != "command" && top != "acl", "{}", spec.name),
                None => {}
            }
        }
    }

    #[test]
    fn keys_with_variable_flags_have_their_own_finder() {
        for spec in every() {
            let variable = spec
                .key_specs
                .iter()
                .any(|k| k.flags.contains(&"variable_flags"));
            // Or keys no spec can locate (SORT's STORE), or not all of them (MIGRATE's KEYS
            // after AUTH), which Redis finds with its own code.
            let unknown = spec.key_specs.iter().any(|k| {
                k.begin_search == command_table::BeginSearch::Unknown
                    || k.flags.contains(&"incomplete")
            });
            assert_eq!(variable || unknown, spec.getkeys.is_some(), "{}", spec.name);
        }
    }

    #[test]
    fn statistics_follow_the_declarations() {
        let registry = Registry::new();
        for (slot, spec) in command_table::slots() {
            let entry = registry.entry(slot).expect("entry");
            assert!(std::ptr::eq(entry.spec, spec));
        }
        assert!(registry.entry(command_table::slot_count()).is_none());
        for (i, top) in command_table::all().iter().enumerate() {
            let entry = registry.entry(command_table::top_slot(i)).expect("top");
            assert!(std::ptr::eq(entry.spec, top));
            for sub in top.subcommands {
                let entry = registry.entry(command_table::slot_of(i, sub)).expect("sub");
                assert!(std::ptr::eq(entry.spec, sub));
            }
        }
    }
}
