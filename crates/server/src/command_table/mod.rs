//! The command registry: every command and subcommand Rialto implements, declared once in its
//! command file (`crate::commands`) with Redis 7.0's metadata as `COMMAND INFO` and `COMMAND
//! DOCS` report it and the handler that runs it; here, what reads those declarations: lookup
//! by name, resolution of a request with Redis's errors, arity and key finding.
//!
//! Cluster clients (redis-py's `RedisCluster`, Jedis, Lettuce) route requests with the key
//! positions and flags published here, and ACL checks and `COMMAND GETKEYS` use the same key
//! specifications, so arity, flags, key specs, ACL categories, tips and argument structure are
//! Redis 7.0's (`CLIENT SETINFO`, which 7.0 lacks, has 7.2's). The prose of the docs (summaries,
//! complexities, history entries, key-spec notes) is our own wording.

use bytes::Bytes;
use rialto_resp::Reply;

use crate::reply;

pub mod help;
mod index;
mod keys;
mod spec;

#[cfg(test)]
pub use keys::key_positions;
pub use keys::{keys_with_flags, spec_keys};
pub use spec::*;

use index::NameIndex;

static INDEX: NameIndex = NameIndex::build(crate::commands::COMMANDS);

/// Every top-level command, subcommands nested in their parents, in `COMMAND`'s order.
pub fn all() -> &'static [CommandSpec] {
    crate::commands::COMMANDS
}

/// The position in [`all`] of the top-level command named `name`, in any case.
pub fn index_of(name: &[u8]) -> Option<usize> {
    INDEX.find(all(), name)
}

/// The top-level command named `name`, in any case.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    all().get(index_of(name)?)
}

/// The subcommand `sub` (in any case) of `parent`.
pub fn lookup_sub(parent: &'static CommandSpec, sub: &[u8]) -> Option<&'static CommandSpec> {
    let prefix = parent.name.len() + 1;
    parent.subcommands.iter().find(|s| {
        s.name
            .as_bytes()
            .get(prefix..)
            .is_some_and(|n| n.eq_ignore_ascii_case(sub))
    })
}

/// The command a request invokes, as Redis resolves it: the top-level command, or for a
/// container with at least two arguments, its subcommand `args[1]`.
pub fn lookup_command(args: &[Bytes]) -> Option<&'static CommandSpec> {
    let base = lookup(args.first()?)?;
    match args.get(1) {
        Some(sub) if !base.subcommands.is_empty() => lookup_sub(base, sub),
        _ => Some(base),
    }
}

/// The command or subcommand with this full name (`get`, `client|kill`), in any case, as
/// `COMMAND INFO`, `COMMAND DOCS` and ACL rules name them. A `|` after a command without
/// subcommands, or a second `|`, names nothing.
pub fn lookup_fullname(name: &[u8]) -> Option<&'static CommandSpec> {
    match name.iter().position(|&b| b == b'|') {
        None => lookup(name),
        Some(bar) => {
            let (base, sub) = (name.get(..bar)?, name.get(bar + 1..)?);
            if sub.contains(&b'|') {
                return None;
            }
            lookup_sub(lookup(base)?, sub)
        }
    }
}

/// The first statistics slot of each top-level command: one slot per command and per
/// subcommand, a command's own first and its subcommands' after it, in declaration order (so a
/// slot names one `CommandSpec`, as Redis keeps a `redisCommand` per subcommand).
static SLOT_BASE: [u16; 256] = slot_bases(crate::commands::COMMANDS);

const fn slot_bases(commands: &[CommandSpec]) -> [u16; 256] {
    // The name index refuses 255 commands or more, so every position fits.
    let mut bases = [0u16; 256];
    let mut next = 0usize;
    let mut i = 0;
    while i < commands.len() {
        assert!(next + 1 + commands[i].subcommands.len() <= u16::MAX as usize);
        bases[i] = next as u16;
        next += 1 + commands[i].subcommands.len();
        i += 1;
    }
    bases
}

/// How many statistics slots there are: every command and subcommand.
pub fn slot_count() -> usize {
    all().iter().map(|c| 1 + c.subcommands.len()).sum()
}

/// The statistics slot of `spec`, the command at position `index` in [`all`] or one of its
/// subcommands. A subcommand is found by identity among its parent's few.
pub fn slot_of(index: usize, spec: &'static CommandSpec) -> usize {
    let base = usize::from(SLOT_BASE.get(index).copied().unwrap_or(0));
    match all().get(index) {
        Some(top) if !std::ptr::eq(top, spec) => top
            .subcommands
            .iter()
            .position(|s| std::ptr::eq(s, spec))
            .map_or(base, |i| base + 1 + i),
        _ => base,
    }
}

/// The statistics slot of the top-level command at position `index` in [`all`] (a request
/// refused before its subcommand was resolved counts there).
pub fn top_slot(index: usize) -> usize {
    usize::from(SLOT_BASE.get(index).copied().unwrap_or(0))
}

/// Every command and subcommand with its statistics slot, in slot order.
pub fn slots() -> impl Iterator<Item = (usize, &'static CommandSpec)> {
    all()
        .iter()
        .flat_map(|c| std::iter::once(c).chain(c.subcommands))
        .enumerate()
}

/// Whether `argc` arguments (the name(s) included) suit the command's arity.
pub fn check_arity(spec: &CommandSpec, argc: usize) -> bool {
    let n = spec.arity.unsigned_abs() as usize;
    if spec.arity >= 0 {
        argc == n
    } else {
        argc >= n
    }
}

/// What a request runs, resolved as Redis does before anything else: the top-level command's
/// position in [`all`] and the command or subcommand that applies, or Redis's error for an
/// unknown command, an unknown subcommand or a wrong number of arguments.
pub fn resolve(args: &[Bytes]) -> Result<(usize, &'static CommandSpec), Reply> {
    let found = args.first().and_then(|name| index_of(name));
    let Some((index, base)) = found.and_then(|i| Some((i, all().get(i)?))) else {
        return Err(unknown_command(args));
    };
    Ok((index, resolve_in(base, args)?))
}

/// [`resolve`] once `args[0]` is known to name `base`.
pub fn resolve_in(
    base: &'static CommandSpec,
    args: &[Bytes],
) -> Result<&'static CommandSpec, Reply> {
    let spec = match args.get(1) {
        Some(sub) if !base.subcommands.is_empty() => {
            lookup_sub(base, sub).ok_or_else(|| unknown_subcommand(base, sub))?
        }
        _ => base,
    };
    if !check_arity(spec, args.len()) {
        return Err(reply::wrong_arity(spec.name));
    }
    Ok(spec)
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

/// An error reply with line breaks turned into spaces, as Redis's `rejectCommandFormat` does.
fn clean(text: Vec<u8>) -> Reply {
    let text: Vec<u8> = text
        .into_iter()
        .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect();
    Reply::Error(text.into())
}

/// `ERR unknown command '<name>', with args beginning with: '<arg>' ...`.
fn unknown_command(args: &[Bytes]) -> Reply {
    let name = args.first().map_or(&[][..], |a| &a[..a.len().min(128)]);
    let text = format!(
        "ERR unknown command '{}', with args beginning with: {}",
        String::from_utf8_lossy(name),
        args_preview(args.get(1..).unwrap_or(&[]))
    );
    clean(text.into_bytes())
}

/// `ERR unknown subcommand '<sub>'. Try <CMD> HELP.`: at most 128 bytes of the subcommand,
/// cut at a NUL byte as Redis's `%s` cuts it.
fn unknown_subcommand(base: &CommandSpec, sub: &[u8]) -> Reply {
    let sub = sub.split(|&b| b == 0).next().unwrap_or_default();
    let mut text = b"ERR unknown subcommand '".to_vec();
    text.extend_from_slice(&sub[..sub.len().min(128)]);
    text.extend_from_slice(b"'. Try ");
    text.extend(base.name.bytes().map(|b| b.to_ascii_uppercase()));
    text.extend_from_slice(b" HELP.");
    clean(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<Bytes> {
        line.split(' ')
            .filter(|a| !a.is_empty())
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect()
    }

    fn every() -> impl Iterator<Item = &'static CommandSpec> {
        all()
            .iter()
            .flat_map(|c| std::iter::once(c).chain(c.subcommands))
    }

    fn positions(line: &str) -> Vec<usize> {
        let args = argv(line);
        let spec = lookup_command(&args).expect("known command");
        key_positions(spec, &args)
    }

    #[test]
    fn the_index_finds_every_command_at_its_position() {
        for (i, c) in all().iter().enumerate() {
            assert_eq!(index_of(c.name.as_bytes()), Some(i), "{}", c.name);
            assert!(std::ptr::eq(lookup(c.name.as_bytes()).expect("top"), c));
            for s in c.subcommands {
                assert!(s.subcommands.is_empty());
                let sub = s
                    .name
                    .strip_prefix(c.name)
                    .and_then(|r| r.strip_prefix('|'));
                assert!(sub.is_some_and(|n| !n.is_empty()), "{}", s.name);
            }
        }
    }

    #[test]
    fn names_are_lowercase_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for c in every() {
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(seen.insert(c.name), "{} twice", c.name);
        }
        assert_eq!(all().len(), 231);
        // Subcommands: XGROUP's 6 and XINFO's 4 after the others.
        assert_eq!(seen.len(), 231 + 81 + 12 + 7 + 5 + 6 + 4);
    }

    #[test]
    fn every_command_and_subcommand_has_its_own_slot() {
        let mut seen = 0;
        for (slot, spec) in slots() {
            assert_eq!(slot, seen);
            seen += 1;
            let top = spec.name.split('|').next().unwrap_or_default();
            let index = index_of(top.as_bytes()).expect("declared");
            assert_eq!(slot_of(index, spec), slot, "{}", spec.name);
        }
        assert_eq!(seen, slot_count());
        let config = index_of(b"config").expect("config");
        let set = lookup_fullname(b"config|set").expect("config|set");
        assert_ne!(slot_of(config, set), slot_of(config, &all()[config]));
    }

    #[test]
    fn lookups_ignore_case() {
        for c in all() {
            let upper = c.name.to_ascii_uppercase();
            assert!(std::ptr::eq(lookup(upper.as_bytes()).expect("top"), c));
            for s in c.subcommands {
                let sub = s.name.rsplit('|').next().unwrap_or_default();
                let found = lookup_sub(c, sub.to_ascii_uppercase().as_bytes()).expect("sub");
                assert!(std::ptr::eq(found, s));
                let full = s.name.to_ascii_uppercase();
                assert!(std::ptr::eq(
                    lookup_fullname(full.as_bytes()).expect("full"),
                    s
                ));
            }
        }
        for missing in [
            &b"nosuch"[..],
            b"",
            b"getx",
            b"incrbyfloatandmore",
            b"client|setname",
        ] {
            assert!(lookup(missing).is_none());
        }
        let client = lookup(b"client").expect("client");
        assert!(lookup_sub(client, b"nosuch").is_none());
        assert!(lookup_sub(client, b"").is_none());
        for missing in [
            &b"client|"[..],
            b"|",
            b"|get",
            b"get|x",
            b"client|kill|x",
            b"",
        ] {
            assert!(lookup_fullname(missing).is_none());
        }
        assert_eq!(
            lookup_fullname(b"Client|Kill").map(|s| s.name),
            Some("client|kill")
        );
    }

    #[test]
    fn lookup_command_resolves_subcommands() {
        let name = |line: &str| lookup_command(&argv(line)).map(|s| s.name);
        assert_eq!(name("client setname x"), Some("client|setname"));
        assert_eq!(name("CLIENT"), Some("client"));
        assert_eq!(name("client nosuch"), None);
        assert_eq!(name("get k"), Some("get"));
        assert_eq!(name("get k extra"), Some("get"));
        assert_eq!(name("nosuch"), None);
        assert_eq!(name(""), None);
    }

    #[test]
    fn check_arity_exact_and_minimum() {
        let arity = |name: &[u8], argc| check_arity(lookup_fullname(name).expect("known"), argc);
        assert!(arity(b"get", 2) && !arity(b"get", 1) && !arity(b"get", 3));
        assert!(arity(b"set", 3) && arity(b"set", 9) && !arity(b"set", 2));
        assert!(arity(b"ping", 1) && arity(b"ping", 2) && !arity(b"ping", 0));
        assert!(arity(b"client", 2) && !arity(b"client", 1));
        assert!(arity(b"client|setname", 3) && !arity(b"client|setname", 4));
        assert!(arity(b"command|getkeys", 4) && !arity(b"command|getkeys", 3));
        assert!(arity(b"reset", 1) && !arity(b"reset", 2));
    }

    #[test]
    fn key_positions_follow_the_key_specs() {
        assert_eq!(positions("get k"), [1]);
        assert_eq!(positions("set k v EX 10 GET"), [1]);
        assert_eq!(positions("getex k PERSIST"), [1]);
        assert_eq!(positions("mget a b c"), [1, 2, 3]);
        assert_eq!(positions("mset a 1 b 2"), [1, 3]);
        assert_eq!(positions("mset a 1 b"), [1, 3]);
        assert_eq!(positions("del a b"), [1, 2]);
        assert_eq!(positions("exists a a"), [1, 2]);
        assert_eq!(positions("rename a b"), [1, 2]);
        assert_eq!(positions("expire k 10 NX"), [1]);
        // No keys: keyless commands, and arguments that do not reach a spec's keys.
        assert!(positions("ping").is_empty());
        assert!(positions("scan 0 MATCH k*").is_empty());
        assert!(positions("client kill 1.2.3.4:5").is_empty());
        assert!(positions("get").is_empty());
        assert!(positions("del").is_empty());
        assert!(positions("rename a").is_empty());
    }

    #[test]
    fn set_key_flags_depend_on_get() {
        let flags = |line: &str| {
            let args = argv(line);
            let keys = keys_with_flags(lookup(b"set").expect("set"), &args);
            assert_eq!(keys.len(), 1);
            keys[0].flags
        };
        assert_eq!(flags("set k v"), ["OW", "update"]);
        assert_eq!(flags("set k v EX 1 NX"), ["OW", "update"]);
        assert_eq!(flags("set k v gEt"), ["RW", "access", "update"]);
        // The value itself being "get" is not the option.
        assert_eq!(flags("set k get"), ["OW", "update"]);
        let args = argv("rename a b");
        let keys = keys_with_flags(lookup(b"rename").expect("rename"), &args);
        assert_eq!(keys[0].flags, ["RW", "access", "delete"]);
        assert_eq!(keys[1].flags, ["OW", "update"]);
    }

    // Shapes no command in the table uses yet, modelled on Redis commands that have them.
    static KEYNUM: CommandSpec = cmd("keynum", -3, &[], &[]).key_specs(&[
        // ZUNIONSTORE-like: destination, then numkeys and the keys.
        KeySpec::single(1, &["OW", "update"]),
        KeySpec {
            notes: None,
            flags: &["RO", "access"],
            begin_search: BeginSearch::Index(2),
            find_keys: FindKeys::Keynum {
                keynumidx: 0,
                firstkey: 1,
                keystep: 1,
            },
        },
    ]);
    static KEYNUM_PAIRS: CommandSpec = cmd("pairs", -2, &[], &[]).key_specs(&[KeySpec {
        notes: None,
        flags: &["OW", "update"],
        begin_search: BeginSearch::Index(1),
        find_keys: FindKeys::Keynum {
            keynumidx: 0,
            firstkey: 1,
            keystep: 2,
        },
    }]);
    static KEYWORD: CommandSpec = cmd("keyword", -2, &[], &[]).key_specs(&[
        // XREAD-like: keys are the first half of what follows STREAMS.
        KeySpec {
            notes: None,
            flags: &["RO", "access"],
            begin_search: BeginSearch::Keyword {
                keyword: "STREAMS",
                startfrom: 1,
            },
            find_keys: FindKeys::Range {
                lastkey: -1,
                keystep: 1,
                limit: 2,
            },
        },
        // MIGRATE-like: KEYS searched backwards from the end.
        KeySpec {
            notes: None,
            flags: &["RW", "access", "delete"],
            begin_search: BeginSearch::Keyword {
                keyword: "KEYS",
                startfrom: -2,
            },
            find_keys: FindKeys::Range {
                lastkey: -1,
                keystep: 1,
                limit: 0,
            },
        },
    ]);

    #[test]
    fn keynum_specs() {
        let pos = |line: &str| key_positions(&KEYNUM, &argv(line));
        assert_eq!(pos("z dest 2 a b"), [1, 3, 4]);
        assert_eq!(pos("z dest 0"), [1]);
        // More keys announced than given, or a bad count: no keys at all.
        assert!(pos("z dest 3 a b").is_empty());
        assert!(pos("z dest x a").is_empty());
        assert!(pos("z dest -1 a").is_empty());
        assert!(pos("z dest +1 a").is_empty());
        assert!(pos("z dest 9223372036854775807 a").is_empty());
    }

    #[test]
    fn keynum_with_a_step() {
        let pos = |line: &str| key_positions(&KEYNUM_PAIRS, &argv(line));
        assert_eq!(pos("p 2 k1 v1 k2 v2"), [2, 4]);
        assert!(pos("p 3 k1 v1 k2 v2").is_empty());
        assert!(pos("p 9223372036854775807 k v").is_empty());
    }

    #[test]
    fn keyword_specs() {
        let pos = |line: &str| key_positions(&KEYWORD, &argv(line));
        assert_eq!(pos("x COUNT 1 STREAMS a b 0 0"), [4, 5]);
        assert_eq!(pos("x streams a 0"), [2]);
        // Absent keywords: no keys from that spec, without invalidating the others.
        assert!(pos("x COUNT 1").is_empty());
        // The keyword as the last argument is not searched for.
        assert!(pos("x a STREAMS").is_empty());
        assert_eq!(pos("x h p KEYS k1 k2"), [4, 5]);
        // The STREAMS spec takes the first half of everything after it, KEYS included.
        assert_eq!(pos("x STREAMS s 0 KEYS k"), [2, 3, 5]);
    }

    #[test]
    fn legacy_key_range_agrees_with_key_specs() {
        // A command with movable keys has no legacy range (0 0 0): its key specs say where.
        for c in every().filter(|c| !c.key_specs.is_empty() && !c.has_flag("movablekeys")) {
            for extra in 0..4 {
                let n = c.arity.unsigned_abs() as usize + extra;
                if !check_arity(c, n) {
                    continue;
                }
                // PFMERGE with a destination alone: its sources' spec starts past the end,
                // so Redis's specs (and `COMMAND GETKEYS`) find no key where the legacy range
                // names the destination.
                if c.name == "pfmerge" && n == 2 {
                    continue;
                }
                let args: Vec<Bytes> = (0..n).map(|i| Bytes::from(format!("a{i}"))).collect();
                let last = if c.last_key < 0 {
                    n as i32 + c.last_key
                } else {
                    c.last_key
                };
                let legacy: Vec<usize> = (c.first_key..=last)
                    .step_by(c.step as usize)
                    .map(|i| i as usize)
                    .collect();
                assert_eq!(key_positions(c, &args), legacy, "{} with {n} args", c.name);
            }
        }
    }

    #[test]
    fn docs_are_complete_and_key_args_name_key_specs() {
        fn key_args(args: &[Arg], out: &mut Vec<u32>) {
            for a in args {
                // A pattern naming keys (SORT's BY and GET) has a key spec too.
                if a.kind == ArgType::Key || a.key_spec_index.is_some() {
                    assert!(
                        a.key_spec_index.is_some()
                            && matches!(a.kind, ArgType::Key | ArgType::Pattern),
                        "{}",
                        a.name
                    );
                }
                out.extend(a.key_spec_index);
                assert_eq!(
                    matches!(a.kind, ArgType::OneOf | ArgType::Block),
                    !a.arguments.is_empty()
                );
                key_args(a.arguments, out);
            }
        }
        for c in every() {
            let d = &c.docs;
            for text in [d.summary, d.since, d.group] {
                assert!(!text.is_empty(), "{}", c.name);
            }
            // Only MONITOR goes without, as in Redis's docs.
            assert_eq!(d.complexity.is_empty(), c.name == "monitor", "{}", c.name);
            assert_eq!(
                d.deprecated_since.is_some(),
                d.doc_flags.contains(&"deprecated")
            );
            let mut used = Vec::new();
            key_args(d.arguments, &mut used);
            used.sort_unstable();
            // Several arguments may share one spec (LCS's two keys).
            used.dedup();
            // Redis's shard channels are key specs flagged `not_key`, tied to no argument.
            let all: Vec<u32> = (0..c.key_specs.len() as u32)
                .filter(|&i| !c.key_specs[i as usize].flags.contains(&"not_key"))
                .collect();
            assert_eq!(used, all, "{}: every key spec has its argument", c.name);
        }
    }

    #[test]
    fn flags_agree_with_acl_categories() {
        for c in every() {
            let cat = |name: &str| c.acl_categories.contains(&name);
            assert_eq!(c.has_flag("write"), cat("@write"), "{}", c.name);
            // Redis's own table flags EVAL_RO, EVALSHA_RO and FCALL_RO readonly without @read.
            if !matches!(c.name, "eval_ro" | "evalsha_ro" | "fcall_ro") {
                assert_eq!(c.has_flag("readonly"), cat("@read"), "{}", c.name);
            }
            // Redis's own table puts ROLE in @admin without the admin flag.
            if c.name != "role" {
                assert_eq!(c.has_flag("admin"), cat("@admin"), "{}", c.name);
            }
            assert_eq!(c.has_flag("fast"), cat("@fast"), "{}", c.name);
            assert_eq!(!c.has_flag("fast"), cat("@slow"), "{}", c.name);
            assert!(c.acl_categories.iter().all(|c| c.starts_with('@')));
        }
    }
}

#[cfg(test)]
mod vs_redis;
