//! Where `rialto push` and `rialto store` act: a running server over RESP (`--server`), or a
//! database directory opened in this process (`--dir`, the server must not be running).

use std::fmt;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::BytesMut;
use rialto_io::{Clock, SystemClock};
use rialto_keyspace::{
    DuplicatePolicy, Keyspace, PushGuard, PushLayout, PushOptions, PushReport, StoreError,
    StoreSettings,
};
use rialto_resp::{Reply, ReplyDecoder, ReplyLimits};
use rialto_server::Config;

/// Where to act, from the command line.
#[derive(Debug, Clone, clap::Args)]
pub struct Target {
    /// A running server, `HOST:PORT` (default 127.0.0.1:6379 when --dir is not given).
    #[arg(long, global = true, value_name = "HOST:PORT", conflicts_with = "dir")]
    pub server: Option<String>,
    /// A database directory to open in this process (the server must not be running on it).
    #[arg(long, global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Password for AUTH (with --server).
    #[arg(long, global = true, env = "RIALTO_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// User for AUTH (with --server and --password; default `default`).
    #[arg(long, global = true)]
    pub user: Option<String>,
}

/// A failure of a store command, as one line.
#[derive(Debug)]
pub enum BackendError {
    /// The server or the store layer said no.
    Store(String),
    /// Connecting or talking to the server failed.
    Connection(String),
    /// The user interrupted.
    Interrupted,
    /// A bad input or argument.
    Usage(String),
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::Store(s) | BackendError::Usage(s) => f.write_str(s),
            BackendError::Connection(s) => write!(f, "server: {s}"),
            BackendError::Interrupted => {
                f.write_str("interrupted: the push was abandoned; the current version serves")
            }
        }
    }
}

impl crate::cli::CliError for BackendError {
    fn exit_code(&self) -> u8 {
        match self {
            BackendError::Usage(_) => 2,
            BackendError::Interrupted => 130,
            _ => 1,
        }
    }
}

impl From<StoreError> for BackendError {
    fn from(e: StoreError) -> Self {
        BackendError::Store(e.to_string())
    }
}

/// A database opened in this process.
pub struct Local {
    keyspace: Keyspace,
    /// What a push must load unless told otherwise.
    guard: PushGuard,
    /// The most versions a store may keep (`store-max-keep`).
    max_keep: u32,
}

/// A RESP connection.
pub struct Remote {
    stream: TcpStream,
    decoder: ReplyDecoder,
    inbuf: BytesMut,
    out: BytesMut,
    /// Requests sent whose replies are not read yet.
    pub in_flight: usize,
}

/// Either.
pub enum Backend {
    Local(Box<Local>),
    Remote(Remote),
}

impl Target {
    /// Opens the target.
    pub fn open(&self) -> Result<Backend, BackendError> {
        match &self.dir {
            Some(dir) => Ok(Backend::Local(Box::new(Local::open(dir.clone())?))),
            None => {
                let addr = self.server.as_deref().unwrap_or("127.0.0.1:6379");
                let mut r = Remote::connect(addr)?;
                // RESP3, so that maps arrive as maps.
                let mut hello: Vec<&[u8]> = vec![b"HELLO", b"3"];
                if let Some(p) = &self.password {
                    let user = self.user.as_deref().unwrap_or("default");
                    hello.extend([b"AUTH".as_slice(), user.as_bytes(), p.as_bytes()]);
                }
                r.call(&hello)?;
                Ok(Backend::Remote(r))
            }
        }
    }
}

impl Local {
    /// Opens the database in `dir` (created if missing) with the server's engine options.
    pub fn open(dir: PathBuf) -> Result<Local, BackendError> {
        Local::open_with(Config {
            dir,
            ..Config::default()
        })
    }

    /// Opens the database of `cfg.dir` with the server's engine and push options from `cfg`.
    pub fn open_with(cfg: Config) -> Result<Local, BackendError> {
        let fs: rialto_io::FsRef = Arc::new(rialto_io::PosixFs::new());
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        let opts = rialto_server::keyspace_options(&cfg, fs, clock);
        let keyspace = Keyspace::open(&cfg.dir, opts)
            .map_err(|e| BackendError::Store(format!("cannot open {}: {e}", cfg.dir.display())))?;
        Ok(Local {
            keyspace,
            guard: cfg.push_guard(),
            max_keep: cfg.store_max_keep,
        })
    }

    /// The keyspace.
    pub fn keyspace(&self) -> &Keyspace {
        &self.keyspace
    }

    /// Begins a push of values of `layout`; what it must load is the configuration's unless
    /// given.
    pub fn push_begin(
        &self,
        store: &str,
        dup: DuplicatePolicy,
        min_records: Option<u64>,
        max_shrink_percent: Option<u32>,
        layout: PushLayout,
    ) -> Result<u64, BackendError> {
        let mut guard = self.guard;
        if let Some(n) = min_records {
            guard.min_records = n;
        }
        if let Some(p) = max_shrink_percent {
            guard.max_shrink_percent = p;
        }
        let opts = PushOptions {
            duplicates: dup,
            guard: Some(guard),
            owner: None,
            layout,
        };
        Ok(self.keyspace.push_begin_with(store, opts)?)
    }

    /// Whether push `id` is in progress (a refused record aborts it).
    pub fn push_in_progress(&self, id: u64) -> bool {
        self.keyspace.pushes().iter().any(|(p, _)| *p == id)
    }

    /// Adds the records `fill` passes to `add`, under one hold of the push's lock (see
    /// `Keyspace::push_add_with`).
    pub fn push_add_with<T>(
        &self,
        id: u64,
        fill: impl FnOnce(
            &mut dyn FnMut(&[u8], &[u8]) -> Result<(), StoreError>,
        ) -> Result<T, BackendError>,
    ) -> Result<T, BackendError> {
        self.keyspace.push_add_with(id, None, fill)
    }

    /// Commits.
    pub fn push_commit(&self, id: u64) -> Result<PushReport, BackendError> {
        Ok(self.keyspace.push_commit(id, None)?)
    }

    /// Aborts.
    pub fn push_abort(&self, id: u64) -> Result<(), BackendError> {
        Ok(self.keyspace.push_abort(id, None)?)
    }

    /// Creates a store; a setting left out takes its default.
    pub fn create(
        &self,
        name: &str,
        prefix: &[u8],
        rewind_ms: u64,
        settings: StoreSettings,
    ) -> Result<(), BackendError> {
        self.check_keep(settings)?;
        self.keyspace
            .create_store_with(name, prefix, rewind_ms, settings)?;
        Ok(())
    }

    /// Changes a store's settings.
    pub fn configure(&self, name: &str, settings: StoreSettings) -> Result<(), BackendError> {
        self.check_keep(settings)?;
        self.keyspace.configure_store(name, settings)?;
        Ok(())
    }

    /// Refuses a `keep` outside 1..=`store-max-keep`, as the server does.
    fn check_keep(&self, settings: StoreSettings) -> Result<(), BackendError> {
        match settings.keep {
            Some(k) if k == 0 || k > self.max_keep => Err(BackendError::Usage(format!(
                "--keep must be 1 to {} (store-max-keep)",
                self.max_keep
            ))),
            _ => Ok(()),
        }
    }

    /// Deletes a store.
    pub fn delete(&self, name: &str) -> Result<(), BackendError> {
        Ok(self.keyspace.delete_store(name)?)
    }

    /// Rolls a store back (to version `to`, if given).
    pub fn rollback(&self, name: &str, to: Option<u32>) -> Result<(), BackendError> {
        self.keyspace.rollback_store(name, to)?;
        Ok(())
    }

    /// Makes everything durable, removes what retired versions left and closes.
    pub fn close(self) -> Result<(), BackendError> {
        if let Err(e) = self.keyspace.maintenance_pass() {
            let _ = writeln!(
                std::io::stderr(),
                "warning: removing retired versions failed: {e} (the server will retry)"
            );
        }
        self.keyspace
            .close()
            .map_err(|e| BackendError::Store(e.to_string()))
    }
}

impl Remote {
    /// Connects to a RESP server at `addr` (`host:port`).
    pub fn connect(addr: &str) -> Result<Remote, BackendError> {
        let stream = TcpStream::connect(addr)
            .map_err(|e| BackendError::Connection(format!("{addr}: {e}")))?;
        let _ = stream.set_nodelay(true);
        Ok(Remote {
            stream,
            decoder: ReplyDecoder::new(ReplyLimits::default()),
            inbuf: BytesMut::with_capacity(64 << 10),
            out: BytesMut::with_capacity(1 << 20),
            in_flight: 0,
        })
    }

    /// Fails reads that wait longer than `d` for a reply (none by default: a push commit may
    /// take minutes).
    pub fn set_read_timeout(&self, d: std::time::Duration) -> Result<(), BackendError> {
        self.stream
            .set_read_timeout(Some(d))
            .map_err(|e| BackendError::Connection(e.to_string()))
    }

    /// Queues a request (sent by [`Remote::flush`]).
    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        rialto_resp::write_request(&mut self.out, args);
        self.in_flight += 1;
    }

    /// Sends what is queued.
    pub fn flush(&mut self) -> Result<(), BackendError> {
        self.stream
            .write_all(&self.out)
            .map_err(|e| BackendError::Connection(e.to_string()))?;
        self.out.clear();
        Ok(())
    }

    /// Reads the next reply; an error reply becomes `BackendError::Store`.
    pub fn recv(&mut self) -> Result<Reply, BackendError> {
        loop {
            match self.decoder.decode(&mut self.inbuf) {
                Ok(Some(r)) => {
                    self.in_flight = self.in_flight.saturating_sub(1);
                    return match r {
                        Reply::Error(e) => {
                            let s = String::from_utf8_lossy(&e).into_owned();
                            Err(BackendError::Store(
                                s.strip_prefix("ERR ").unwrap_or(&s).to_string(),
                            ))
                        }
                        r => Ok(r),
                    };
                }
                Ok(None) => {}
                Err(e) => return Err(BackendError::Connection(format!("bad reply: {e}"))),
            }
            let mut buf = [0u8; 64 << 10];
            let n = self
                .stream
                .read(&mut buf)
                .map_err(|e| BackendError::Connection(e.to_string()))?;
            if n == 0 {
                return Err(BackendError::Connection("connection closed".into()));
            }
            self.inbuf.extend_from_slice(&buf[..n]);
        }
    }

    /// One request, one reply.
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Reply, BackendError> {
        self.send(args);
        self.flush()?;
        self.recv()
    }
}

/// A reply as text lines for the CLI (maps as `key: value`).
pub fn render(r: &Reply) -> String {
    fn scalar(r: &Reply) -> String {
        match r {
            Reply::Simple(b) | Reply::Bulk(b) | Reply::Error(b) => {
                String::from_utf8_lossy(b).into_owned()
            }
            Reply::Integer(n) => n.to_string(),
            Reply::Null | Reply::NullArray => "(none)".into(),
            // Inside a map: a list on one line (STORE DESCRIBE's kept-versions).
            Reply::Array(items) if items.is_empty() => "(none)".into(),
            Reply::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(" "),
            Reply::Map(pairs) => {
                let fields: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("{}: {}", scalar(k), scalar(v)))
                    .collect();
                format!("{{{}}}", fields.join(", "))
            }
            other => format!("{other:?}"),
        }
    }
    match r {
        Reply::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| format!("{}: {}", scalar(k), scalar(v)))
            .collect::<Vec<_>>()
            .join("\n"),
        Reply::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join("\n"),
        other => scalar(other),
    }
}
