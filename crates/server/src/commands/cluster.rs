//! CLUSTER ..., READONLY, READWRITE — a single `rialto serve` is a standalone server, and
//! refuses them as Redis without cluster-enabled does; cluster mode (on Kafka) answers these.

use bytes::Bytes;
use rialto_resp::Reply;

use super::{Ctx, Handler, Outcome};
use crate::command_table::ArgType::String as Str;
use crate::command_table::{arg, cmd, doc, CommandSpec};

const CLUSTER_INFO: CommandSpec = cmd("cluster|info", 2, &["stale"], &["@slow"])
    .tips(&["nondeterministic_output"])
    .docs(doc(
        "cluster",
        "3.0.0",
        "Reports the state and counters of the cluster as this node sees them.",
        "O(1)",
    ))
    .handler(Handler::Conn(disabled));

const CLUSTER_SLOTS: CommandSpec = cmd("cluster|slots", 2, &["stale"], &["@slow"])
    .tips(&["nondeterministic_output"])
    .docs(
        doc(
            "cluster",
            "3.0.0",
            "Returns the nodes that serve each range of hash slots.",
            "O(N), N being the number of nodes in the cluster.",
        )
        .deprecated("7.0.0", "`CLUSTER SHARDS`")
        .history(&[
            ("4.0.0", "Node IDs in the reply."),
            ("7.0.0", "More networking metadata per node."),
        ]),
    )
    .handler(Handler::Conn(disabled));

const CLUSTER_SHARDS: CommandSpec = cmd("cluster|shards", 2, &["stale"], &["@slow"])
    .tips(&["nondeterministic_output"])
    .docs(doc(
        "cluster",
        "7.0.0",
        "Returns the shards of the cluster with their slot ranges and nodes.",
        "O(N), N being the number of nodes in the cluster.",
    ))
    .handler(Handler::Conn(disabled));

const CLUSTER_NODES: CommandSpec = cmd("cluster|nodes", 2, &["stale"], &["@slow"])
    .tips(&["nondeterministic_output"])
    .docs(doc(
        "cluster",
        "3.0.0",
        "Returns the cluster configuration as this node sees it, one node per line.",
        "O(N), N being the number of nodes in the cluster.",
    ))
    .handler(Handler::Conn(disabled));

const CLUSTER_MYID: CommandSpec = cmd("cluster|myid", 2, &["stale"], &["@slow"])
    .docs(doc(
        "cluster",
        "3.0.0",
        "Returns the ID of this node.",
        "O(1)",
    ))
    .handler(Handler::Conn(disabled));

const CLUSTER_KEYSLOT: CommandSpec = cmd("cluster|keyslot", 3, &["stale"], &["@slow"])
    .docs(
        doc(
            "cluster",
            "3.0.0",
            "Returns the hash slot that a key maps to.",
            "O(N), N being the length of the key in bytes.",
        )
        .args(&[arg("key", Str)]),
    )
    .handler(Handler::Conn(disabled));

const CLUSTER_HELP: CommandSpec = cmd("cluster|help", 2, &["loading", "stale"], &["@slow"])
    .docs(doc(
        "cluster",
        "5.0.0",
        "Lists the CLUSTER subcommands with a short description of each.",
        "O(1)",
    ))
    .handler(Handler::Conn(disabled));

pub const CLUSTER: CommandSpec = cmd("cluster", -2, &[], &["@slow"])
    .docs(doc(
        "cluster",
        "3.0.0",
        "Groups the subcommands that describe the cluster.",
        "Varies by subcommand.",
    ))
    .subs(&[
        CLUSTER_INFO,
        CLUSTER_SLOTS,
        CLUSTER_SHARDS,
        CLUSTER_NODES,
        CLUSTER_MYID,
        CLUSTER_KEYSLOT,
        CLUSTER_HELP,
    ]);

pub const READONLY: CommandSpec = cmd(
    "readonly",
    1,
    &["loading", "stale", "fast"],
    &["@fast", "@connection"],
)
.docs(doc(
    "cluster",
    "3.0.0",
    "Allows this connection to read from a replica node of a cluster.",
    "O(1)",
))
.handler(Handler::Conn(disabled));

pub const READWRITE: CommandSpec = cmd(
    "readwrite",
    1,
    &["loading", "stale", "fast"],
    &["@fast", "@connection"],
)
.docs(doc(
    "cluster",
    "3.0.0",
    "Ends the read-only mode of this connection to a cluster replica.",
    "O(1)",
))
.handler(Handler::Conn(disabled));

/// Every CLUSTER subcommand (HELP too, as in Redis), READONLY and READWRITE.
fn disabled(_: &mut Ctx<'_>, _: &[Bytes]) -> Outcome {
    Outcome::Reply(Reply::error(
        "ERR This instance has cluster support disabled",
    ))
}
