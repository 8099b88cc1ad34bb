//! Rialto's Redis-protocol server (`rialto serve`): RESP2/RESP3 connections over the LSM
//! engine, every write through the transaction merger.
//!
//! Layout: `server` (start, shutdown), `listen` (the accept loops, rebound by CONFIG SET), `conn` (one connection's read-execute-write
//! loop), `commands` (one file per command, declaring it with its handler: a read over the
//! keyspace, a write turned into an op the keyspace applies, or a connection or server
//! command), `command_table` (what reads those declarations: lookup, resolution, arity, keys,
//! HELP), `expire_pass`, `auth` and `acl` (users), `config` (file, flags and CONFIG
//! GET/SET), `http` and `ops` (/metrics, /livez, /readyz), `slowlog`, `latency` (the latency monitor), `latency_histograms` (LATENCY HISTOGRAM, INFO latencystats), `monitor` (MONITOR), `process` (memory and
//! CPU figures), `cluster` (cluster mode on
//! Kafka: the log's state machine and where a command may run). The data model is
//! `rialto_keyspace`.

mod acl;
mod auth;
mod client;
mod cluster;
mod cluster_stores;
mod command_table;
mod commands;
mod config;
mod conn;
mod errorstats;
mod expire_pass;
mod glob;
mod http;
mod latency;
mod latency_histograms;
mod listen;
mod monitor;
mod ops;
mod periodic;
mod process;
mod prom;
mod pubsub;
mod reply;
mod server;
mod slowlog;
mod status;
mod tracking;
mod wake;
mod workers;

pub use commands::store::describe as describe_store;
pub use config::{help_text, parse_push_page_cache, CacheSize, Config, ConfigError};
pub use config::{set_log_filter, LogFilter};
pub use server::{keyspace_options, serve, start, start_on, RunningServer, Server, ServerError};
