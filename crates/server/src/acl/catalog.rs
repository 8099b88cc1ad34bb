//! The commands and categories ACL rules name, indexed from the command declarations: a bit
//! per command and subcommand, the members of each category, and the order rules are printed
//! in.

use std::collections::HashMap;

use bytes::Bytes;

use crate::command_table::CommandSpec;

/// Redis 7.0's command categories, in the order `ACL CAT` lists them.
pub const CATEGORIES: [&str; 21] = [
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// A command as the ACL indexes it.
#[derive(Debug)]
pub(super) struct Cmd {
    pub name: String,
    pub spec: &'static CommandSpec,
    pub parent: Option<usize>,
    pub subs: Vec<usize>,
}

/// Commands by index (their bit in a selector), categories and their members.
#[derive(Debug)]
pub(super) struct Catalog {
    pub cmds: Vec<Cmd>,
    by_name: HashMap<String, usize>,
    /// Top-level commands in name order, the order rules are printed in.
    pub top: Vec<usize>,
    pub cat_names: Vec<String>,
    /// Per category, the commands that have it (containers and subcommands alike).
    pub cat_members: Vec<Vec<usize>>,
}

impl Catalog {
    /// Indexes `commands` and their subcommands. Categories outside [`CATEGORIES`] are added
    /// after Redis's; names ACL rules cannot express (empty parts, a second `|`) and
    /// duplicates are left out.
    pub fn new(commands: &'static [CommandSpec]) -> Catalog {
        let mut c = Catalog {
            cmds: Vec::new(),
            by_name: HashMap::new(),
            top: Vec::new(),
            cat_names: CATEGORIES.iter().map(|s| s.to_string()).collect(),
            cat_members: vec![Vec::new(); CATEGORIES.len()],
        };
        // Containers first, so that every subcommand finds its parent.
        let subs = commands
            .iter()
            .flat_map(|p| p.subcommands.iter().map(move |s| (s, Some(p))));
        let entries = commands.iter().map(|p| (p, None)).chain(subs);
        for (spec, parent) in entries {
            let name = spec.name.to_ascii_lowercase();
            let parts: Vec<&str> = name.split('|').collect();
            if parts.iter().any(|p| p.is_empty())
                || parts.len() != 1 + usize::from(parent.is_some())
                || c.by_name.contains_key(&name)
            {
                continue;
            }
            let parent = match parent {
                Some(p) => match c.by_name.get(&p.name.to_ascii_lowercase()) {
                    Some(&i) => Some(i),
                    None => continue,
                },
                None => None,
            };
            let idx = c.add(name, spec, parent);
            for cat in spec.acl_categories {
                let cat = cat.strip_prefix('@').unwrap_or(cat).to_ascii_lowercase();
                if cat.is_empty() {
                    continue;
                }
                let ci = match c.cat_names.iter().position(|n| *n == cat) {
                    Some(i) => i,
                    None => {
                        c.cat_names.push(cat);
                        c.cat_members.push(Vec::new());
                        c.cat_names.len() - 1
                    }
                };
                if !c.cat_members[ci].contains(&idx) {
                    c.cat_members[ci].push(idx);
                }
            }
        }
        let mut top: Vec<usize> = (0..c.cmds.len())
            .filter(|&i| c.cmds[i].parent.is_none())
            .collect();
        top.sort_by(|&a, &b| c.cmds[a].name.cmp(&c.cmds[b].name));
        c.top = top;
        let names: Vec<String> = c.cmds.iter().map(|m| m.name.clone()).collect();
        for m in &mut c.cmds {
            m.subs.sort_by(|&a, &b| names[a].cmp(&names[b]));
        }
        c
    }

    fn add(&mut self, name: String, spec: &'static CommandSpec, parent: Option<usize>) -> usize {
        let idx = self.cmds.len();
        self.by_name.insert(name.clone(), idx);
        self.cmds.push(Cmd {
            name,
            spec,
            parent,
            subs: Vec::new(),
        });
        if let Some(p) = parent {
            self.cmds[p].subs.push(idx);
        }
        idx
    }

    /// Words of a selector's command bits.
    pub fn words(&self) -> usize {
        self.cmds.len().div_ceil(64)
    }

    /// A command by full name, any case (`config|get`).
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let name = std::str::from_utf8(name).ok()?;
        if name.bytes().any(|b| b.is_ascii_uppercase()) {
            self.by_name.get(&name.to_ascii_lowercase()).copied()
        } else {
            self.by_name.get(name).copied()
        }
    }

    /// A category by name, any case.
    pub fn category(&self, name: &[u8]) -> Option<usize> {
        self.cat_names
            .iter()
            .position(|n| n.as_bytes().eq_ignore_ascii_case(name))
    }

    /// Whether the command runs whatever the user's command rules (Redis's `no-auth` flag:
    /// AUTH, HELLO).
    pub fn no_auth(&self, cmd: usize) -> bool {
        self.cmds[cmd].spec.has_flag("no_auth")
    }

    /// The command a command line runs, as Redis's command table resolves it for `ACL DRYRUN`:
    /// a top-level command, or for one with subcommands and at least two arguments, its
    /// subcommand. `None` if there is no such command.
    pub fn resolve(&self, args: &[Bytes]) -> Option<&'static CommandSpec> {
        let name = args.first()?;
        // `config|get` names a subcommand, not a command line's command.
        let mut idx = self
            .lookup(name)
            .filter(|&i| self.cmds[i].parent.is_none())?;
        if let (false, Some(sub)) = (self.cmds[idx].subs.is_empty(), args.get(1)) {
            let mut full = name.to_vec();
            full.push(b'|');
            full.extend_from_slice(sub);
            idx = self.lookup(&full)?;
        }
        Some(self.cmds[idx].spec)
    }
}
