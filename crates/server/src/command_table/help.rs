//! The `HELP` text of a command with subcommands, written from its declarations: a usage line
//! per subcommand from its documented arguments, and its summary below it.

use rialto_resp::Reply;

use super::{Arg, ArgType, CommandSpec};

/// Columns of a description line, indentation included.
const WIDTH: usize = 96;

/// `<CMD> HELP` as Redis shapes it: status lines, the usage line first, `HELP` last.
pub fn reply(parent: &CommandSpec) -> Reply {
    Reply::Array(
        lines(parent)
            .into_iter()
            .map(|l| Reply::Simple(l.into()))
            .collect(),
    )
}

/// The lines of [`reply`]. A command that runs without a subcommand (COMMAND) describes that
/// first, as `(no subcommand)`.
pub fn lines(parent: &CommandSpec) -> Vec<String> {
    let upper = parent.name.to_ascii_uppercase();
    let mut out = vec![format!(
        "{upper} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    )];
    if super::check_arity(parent, 1) {
        out.push("(no subcommand)".to_string());
        describe(parent.docs.summary, &mut out);
    }
    for sub in parent.subcommands {
        let name = sub.name.rsplit('|').next().unwrap_or_default();
        let mut usage = name.to_ascii_uppercase();
        for a in sub.docs.arguments {
            usage.push(' ');
            usage.push_str(&syntax(a));
        }
        out.push(usage);
        describe(sub.docs.summary, &mut out);
    }
    out
}

/// The summary, indented and wrapped at [`WIDTH`].
fn describe(summary: &str, out: &mut Vec<String>) {
    let mut line = String::from("   ");
    for word in summary.split_whitespace() {
        if line.len() > 4 && line.len() + 1 + word.len() > WIDTH {
            out.push(std::mem::replace(&mut line, String::from("   ")));
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push(line);
}

/// An argument as usage lines write it: `<value>`, `TOKEN <value>`, `[optional]`,
/// `<repeated> [<repeated> ...]` (`<long group> [...]`), `a | b` for alternatives.
fn syntax(a: &Arg) -> String {
    let inner = match a.kind {
        ArgType::PureToken => a.token.unwrap_or(a.name).to_string(),
        ArgType::OneOf => {
            let alts: Vec<String> = a.arguments.iter().map(syntax).collect();
            let alts = alts.join(" | ");
            match (a.token, a.flags.optional) {
                (Some(t), _) => format!("{t} <{alts}>"),
                (None, true) => alts,
                (None, false) => format!("<{alts}>"),
            }
        }
        ArgType::Block => {
            let parts: Vec<String> = a.arguments.iter().map(syntax).collect();
            let parts = parts.join(" ");
            match a.token {
                Some(t) => format!("{t} {parts}"),
                None => parts,
            }
        }
        _ => match a.token {
            Some(t) => format!("{t} <{}>", a.name),
            None => format!("<{}>", a.name),
        },
    };
    let repeated = match (a.flags.multiple_token || a.flags.multiple, inner.len()) {
        (false, _) => inner,
        // A long group is not written out twice.
        (true, 0..=30) => format!("{inner} [{inner} ...]"),
        (true, _) => format!("{inner} [...]"),
    };
    if a.flags.optional {
        format!("[{repeated}]")
    } else {
        repeated
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command_table::{all, lookup, lookup_sub};

    fn containers() -> impl Iterator<Item = &'static CommandSpec> {
        all().iter().filter(|c| !c.subcommands.is_empty())
    }

    #[test]
    fn usage_lines_follow_the_documented_arguments() {
        let config = lookup(b"config").expect("config");
        let lines = lines(config);
        assert_eq!(
            lines[0],
            "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
        );
        assert!(lines.contains(&"GET <parameter> [<parameter> ...]".to_string()));
        assert!(lines.contains(&"SET <parameter> <value> [<parameter> <value> ...]".to_string()));
        let command = lines_of(b"command");
        assert_eq!(command[1], "(no subcommand)");
        assert!(command.contains(
            &"LIST [FILTERBY <MODULE <module-name> | ACLCAT <category> | PATTERN <pattern>>]"
                .to_string()
        ));
        let set = lookup(b"set").expect("set");
        let set: Vec<String> = set.docs.arguments.iter().map(syntax).collect();
        assert_eq!(set[2], "[NX | XX]");
        assert_eq!(set[3], "[GET]");
    }

    fn lines_of(name: &[u8]) -> Vec<String> {
        lines(lookup(name).expect("known"))
    }

    #[test]
    fn every_subcommand_is_listed_once_and_help_last() {
        for c in containers() {
            let lines = lines(c);
            let usage: Vec<&String> = lines[1..]
                .iter()
                .filter(|l| !l.starts_with(' ') && *l != "(no subcommand)")
                .collect();
            assert_eq!(usage.len(), c.subcommands.len(), "{}", c.name);
            for (line, sub) in usage.iter().zip(c.subcommands) {
                let word = line.split(' ').next().unwrap_or_default();
                let found = lookup_sub(c, word.as_bytes()).expect("declared");
                assert!(std::ptr::eq(found, sub), "{line}");
            }
            assert_eq!(lines[lines.len() - 2], "HELP", "{}", c.name);
            assert!(lines
                .iter()
                .all(|l| l.len() <= WIDTH || !l.starts_with(' ')));
        }
    }
}
