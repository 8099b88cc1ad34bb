//! MULTI, EXEC, DISCARD, WATCH, UNWATCH: transactions. The connection keeps their state (the
//! queue, the watch) and runs them (`crate::conn`'s transaction half); these are their
//! declarations.

use super::{Handler, TxnCmd};
use crate::command_table::ArgType::Key;
use crate::command_table::{arg, cmd, doc, CommandSpec, KeySpec};

pub const MULTI: CommandSpec = cmd(
    "multi",
    1,
    &["noscript", "loading", "stale", "fast", "allow_busy"],
    &["@fast", "@transaction"],
)
.docs(doc(
    "transactions",
    "1.2.0",
    "Starts a transaction: the commands that follow are queued until EXEC.",
    "O(1)",
))
.handler(Handler::Txn(TxnCmd::Multi));

pub const EXEC: CommandSpec = cmd(
    "exec",
    1,
    &["noscript", "loading", "stale", "skip_slowlog"],
    &["@slow", "@transaction"],
)
.docs(doc(
    "transactions",
    "1.2.0",
    "Runs the queued commands as one atomic transaction, unless a watched key changed.",
    "Depends on commands in the transaction",
))
.handler(Handler::Txn(TxnCmd::Exec));

pub const DISCARD: CommandSpec = cmd(
    "discard",
    1,
    &["noscript", "loading", "stale", "fast", "allow_busy"],
    &["@fast", "@transaction"],
)
.docs(doc(
    "transactions",
    "2.0.0",
    "Drops the queued commands and leaves the transaction.",
    "O(N), when N is the number of queued commands",
))
.handler(Handler::Txn(TxnCmd::Discard));

pub const WATCH: CommandSpec = cmd(
    "watch",
    -2,
    &["noscript", "loading", "stale", "fast", "allow_busy"],
    &["@fast", "@transaction"],
)
.keys(1, -1, 1)
.key_specs(&[KeySpec::range(1, -1, 1, 0, &["RO"])])
.docs(
    doc(
        "transactions",
        "2.2.0",
        "Makes the next EXEC fail if any of these keys changes before it.",
        "O(1) for every key.",
    )
    .args(&[arg("key", Key).key(0).multi()]),
)
.handler(Handler::Txn(TxnCmd::Watch));

pub const UNWATCH: CommandSpec = cmd(
    "unwatch",
    1,
    &["noscript", "loading", "stale", "fast", "allow_busy"],
    &["@fast", "@transaction"],
)
.docs(doc(
    "transactions",
    "2.2.0",
    "Forgets every watched key.",
    "O(1)",
))
.handler(Handler::Txn(TxnCmd::Unwatch));
