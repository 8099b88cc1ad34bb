//! The command registry seen from a client: every command and subcommand `COMMAND` lists is
//! dispatched by the server, and every subcommand a `HELP` names is one it lists and runs.

mod common;

use std::collections::BTreeSet;
use std::net::SocketAddr;

use redis::Value;

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        other => panic!("not a string: {other:?}"),
    }
}

fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(v) | Value::Set(v) => v,
        other => panic!("not an array: {other:?}"),
    }
}

/// Sends one command on a connection of its own (QUIT and RESET change theirs) and returns
/// the reply, or the error's text.
fn call(addr: SocketAddr, args: &[String]) -> Result<Value, String> {
    let mut c = common::client(addr);
    let mut cmd = redis::cmd(&args[0]);
    for a in &args[1..] {
        cmd.arg(a);
    }
    cmd.query::<Value>(&mut c).map_err(|e| e.to_string())
}

/// Every name `COMMAND LIST` gives, with its arity from `COMMAND INFO`.
fn listed(addr: SocketAddr) -> Vec<(String, i64)> {
    let names = call(addr, &["COMMAND".into(), "LIST".into()]).expect("COMMAND LIST");
    let mut out = Vec::new();
    for name in items(&names).iter().map(text) {
        let info = call(addr, &["COMMAND".into(), "INFO".into(), name.clone()]).expect("info");
        let entry = items(&items(&info)[0]).to_vec();
        let arity = match entry[1] {
            Value::Int(n) => n,
            ref other => panic!("{name}: arity {other:?}"),
        };
        out.push((name, arity));
    }
    out
}

/// A request for `name` (`parent|sub` for a subcommand) with as many placeholder arguments as
/// its arity requires.
fn request(name: &str, arity: i64) -> Vec<String> {
    let mut args: Vec<String> = name.split('|').map(str::to_uppercase).collect();
    let need = arity.unsigned_abs() as usize;
    let mut i = 0;
    while args.len() < need {
        i += 1;
        args.push(format!("a{i}"));
    }
    if name == "shutdown" {
        // Refused for its argument, so the server keeps running: still dispatched.
        args.push("a1".into());
    }
    args
}

#[test]
fn every_listed_command_and_subcommand_is_dispatched() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let listed = listed(srv.addr);
    assert!(listed.iter().any(|(n, _)| n == "client|kill"));
    assert!(listed.iter().any(|(n, _)| n == "acl|dryrun"));
    let containers: BTreeSet<&str> = listed
        .iter()
        .filter_map(|(n, _)| n.split_once('|'))
        .map(|(parent, _)| parent)
        .collect();
    for (name, arity) in &listed {
        // A container runs through its subcommands, each tried on its own; bare only if its
        // arity allows it (COMMAND).
        if containers.contains(name.as_str()) && *arity != -1 {
            continue;
        }
        let args = request(name, *arity);
        if let Err(e) = call(srv.addr, &args) {
            for refusal in [
                "unknown command",
                "unknown subcommand",
                "wrong number of arguments",
                "does not run here",
            ] {
                assert!(!e.contains(refusal), "{args:?} refused: {e}");
            }
        }
    }
    srv.shutdown().unwrap();
}

#[test]
fn every_subcommand_a_help_names_is_listed() {
    let dir = tempfile::tempdir().unwrap();
    let srv = common::start(dir.path());
    let names: BTreeSet<String> = listed(srv.addr).into_iter().map(|(n, _)| n).collect();
    let containers: BTreeSet<&str> = names
        .iter()
        .filter_map(|n| n.split_once('|'))
        .map(|(p, _)| p)
        .collect();
    assert!(containers.contains("acl") && containers.contains("client"));
    for parent in containers {
        let upper = parent.to_uppercase();
        let help = match call(srv.addr, &[upper.clone(), "HELP".into()]) {
            Ok(v) => v,
            // CLUSTER refuses every subcommand here, HELP included, as Redis does.
            Err(e) if parent == "cluster" && e.contains("cluster support disabled") => continue,
            Err(e) => panic!("{upper} HELP: {e}"),
        };
        let lines: Vec<String> = items(&help).iter().map(text).collect();
        assert!(
            lines[0].starts_with(&format!("{upper} <subcommand> ")),
            "{lines:?}"
        );
        let mut named = BTreeSet::new();
        for line in &lines[1..] {
            if line.starts_with(' ') || line == "(no subcommand)" {
                continue;
            }
            let word = line.split(' ').next().unwrap_or_default().to_lowercase();
            let full = format!("{parent}|{word}");
            assert!(
                names.contains(&full),
                "{upper} HELP names {word}, which is not listed"
            );
            named.insert(full);
        }
        let declared: BTreeSet<String> = names
            .iter()
            .filter(|n| n.starts_with(&format!("{parent}|")))
            .cloned()
            .collect();
        assert_eq!(named, declared, "{upper} HELP lists every subcommand");
    }
    srv.shutdown().unwrap();
}
