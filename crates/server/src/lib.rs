//! Rialto's Redis-protocol server (`rialto serve`): RESP2/RESP3 connections over the LSM
//! engine, every write through the transaction merger.
//!
//! Layout: [`server`] (listeners, shutdown), [`conn`] (one connection's read-execute-write
//! loop), [`commands`] (one file per command, declaring it with its handler: a read over the
//! keyspace, a write turned into an op the keyspace applies, or a connection or server
//! command), [`command_table`] (what reads those declarations: lookup, resolution, arity, keys,
//! HELP), [`expire_pass`], [`auth`] and [`acl`] (users), [`config`] (file, flags and CONFIG
//! GET/SET), [`http`] and [`ops`] (/metrics, /livez, /readyz), [`slowlog`]. The data model is
//! `rialto_keyspace`.

pub mod acl;
pub mod auth;
pub mod client;
pub mod command_table;
pub mod commands;
pub mod config;
pub mod conn;
pub mod expire_pass;
pub mod glob;
pub mod http;
pub mod ops;
pub mod periodic;
pub mod prom;
pub mod reply;
pub mod server;
pub mod slowlog;
pub mod wake;
pub mod workers;

pub use config::{Config, ConfigError};
pub use server::{serve, start, start_on, RunningServer, Server, ServerError};
