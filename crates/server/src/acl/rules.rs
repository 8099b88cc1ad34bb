//! ACL rules as `ACL SETUSER` and configuration lines give them: splitting lines and selectors
//! into rules, telling user rules (`on`, `off`, `>pass`, `#hash`, `nopass`, `(...)`, `reset`...)
//! from selector rules (`~pattern`, `%R~pattern`, `&channel`, `+cmd`, `-cmd|sub`, `+@cat`...),
//! and Redis's texts for refused ones. What a rule does is the selector's and the user's.

use std::fmt;

use bytes::Bytes;
use rialto_resp::Reply;
use sha2::{Digest, Sha256};

/// A rule that changes a selector: the root one (rules written at top level) or a `(...)` one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SelectorRule<'a> {
    /// `allkeys`, `~*`.
    AllKeys,
    ResetKeys,
    /// `allchannels`, `&*`.
    AllChannels,
    ResetChannels,
    /// `allcommands`, `+@all`.
    AllCommands,
    /// `nocommands`, `-@all`.
    NoCommands,
    /// `~pattern`, `%R~pattern`, `%W~pattern`, `%RW~pattern`: the whole rule, read by
    /// [`key_pattern`] once applied (after `allkeys`, Redis refuses the rule before reading it).
    Keys(&'a [u8]),
    /// `&pattern`: the pattern.
    Channel(&'a [u8]),
    /// `+cmd`, `+cmd|sub`, `+cmd|firstarg`: the name after the `+`.
    Allow(&'a [u8]),
    /// `-cmd`, `-cmd|sub`: the name after the `-`.
    Deny(&'a [u8]),
    /// `+@cat` or `-@cat`.
    Category {
        name: &'a [u8],
        allow: bool,
    },
}

impl<'a> SelectorRule<'a> {
    /// Reads one selector rule (in the order of Redis's `ACLSetSelector`).
    pub(super) fn parse(op: &'a [u8]) -> Result<Self, RuleError> {
        let is = |s: &str| op.eq_ignore_ascii_case(s.as_bytes());
        let first = op.first().copied().unwrap_or(0);
        let second = op.get(1).copied().unwrap_or(0);
        let rest = |n: usize| op.get(n..).unwrap_or_default();
        Ok(if is("allkeys") || op == b"~*" {
            SelectorRule::AllKeys
        } else if is("resetkeys") {
            SelectorRule::ResetKeys
        } else if is("allchannels") || op == b"&*" {
            SelectorRule::AllChannels
        } else if is("resetchannels") {
            SelectorRule::ResetChannels
        } else if is("allcommands") || is("+@all") {
            SelectorRule::AllCommands
        } else if is("nocommands") || is("-@all") {
            SelectorRule::NoCommands
        } else if first == b'~' || first == b'%' {
            SelectorRule::Keys(op)
        } else if first == b'&' {
            SelectorRule::Channel(rest(1))
        } else if first == b'+' && second != b'@' {
            SelectorRule::Allow(rest(1))
        } else if first == b'-' && second != b'@' {
            SelectorRule::Deny(rest(1))
        } else if (first == b'+' || first == b'-') && second == b'@' {
            SelectorRule::Category {
                name: rest(2),
                allow: first == b'+',
            }
        } else {
            return Err(RuleError::Syntax);
        })
    }
}

/// A key pattern rule read: (needs read permission, needs write permission, pattern). `~p`
/// allows both; `%R~p`, `%W~p`, `%RW~p` what they name.
pub(super) fn key_pattern(op: &[u8]) -> Result<(bool, bool, &[u8]), RuleError> {
    let (mut read, mut write) = (true, true);
    let mut offset = 1;
    if op.first() == Some(&b'%') {
        (read, write) = (false, false);
        while let Some(&c) = op.get(offset) {
            offset += 1;
            match c {
                b'R' | b'r' if !read => read = true,
                b'W' | b'w' if !write => write = true,
                b'~' => break,
                _ => return Err(RuleError::Syntax),
            }
        }
        if !read && !write {
            return Err(RuleError::Syntax);
        }
    }
    Ok((read, write, op.get(offset..).unwrap_or_default()))
}

/// A rule that changes a user (Redis's `ACLSetUser`); anything else is a root selector rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum UserRule<'a> {
    /// An empty rule, which Redis ignores.
    Nothing,
    On,
    Off,
    SkipSanitizePayload,
    SanitizePayload,
    NoPass,
    ResetPass,
    /// `>password` or `#hash`: the digest.
    AddPassword([u8; 32]),
    /// `<password` or `!hash`: the digest.
    RemovePassword([u8; 32]),
    /// `(rule ...)`: what is between the parentheses.
    Selector(&'a [u8]),
    ClearSelectors,
    Reset,
    Root(SelectorRule<'a>),
}

impl<'a> UserRule<'a> {
    /// Reads one user rule.
    pub(super) fn parse(op: &'a [u8]) -> Result<Self, RuleError> {
        let is = |s: &str| op.eq_ignore_ascii_case(s.as_bytes());
        let first = op.first().copied();
        let rest = op.get(1..).unwrap_or_default();
        Ok(if op.is_empty() {
            UserRule::Nothing
        } else if is("on") {
            UserRule::On
        } else if is("off") {
            UserRule::Off
        } else if is("skip-sanitize-payload") {
            UserRule::SkipSanitizePayload
        } else if is("sanitize-payload") {
            UserRule::SanitizePayload
        } else if is("nopass") {
            UserRule::NoPass
        } else if is("resetpass") {
            UserRule::ResetPass
        } else if first == Some(b'>') {
            UserRule::AddPassword(sha256(rest))
        } else if first == Some(b'#') {
            UserRule::AddPassword(parse_hash(rest)?)
        } else if first == Some(b'<') {
            UserRule::RemovePassword(sha256(rest))
        } else if first == Some(b'!') {
            UserRule::RemovePassword(parse_hash(rest)?)
        } else if first == Some(b'(') && op.last() == Some(&b')') && op.len() >= 2 {
            UserRule::Selector(&op[1..op.len() - 1])
        } else if is("clearselectors") {
            UserRule::ClearSelectors
        } else if is("reset") {
            UserRule::Reset
        } else {
            UserRule::Root(SelectorRule::parse(op)?)
        })
    }
}

/// The SHA-256 digest of a password: all a user keeps of it.
pub(super) fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// Lowercase hex digits, as digests are shown and `#` rules give them.
pub fn hex(bytes: &[u8]) -> Vec<u8> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|&b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]])
        .collect()
}

/// A `#`/`!` password hash: exactly 64 lowercase hex digits.
fn parse_hash(h: &[u8]) -> Result<[u8; 32], RuleError> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    if h.len() != 64 {
        return Err(RuleError::BadHash);
    }
    let mut out = [0u8; 32];
    for (o, pair) in out.iter_mut().zip(h.chunks_exact(2)) {
        let (Some(hi), Some(lo)) = (digit(pair[0]), digit(pair[1])) else {
            return Err(RuleError::BadHash);
        };
        *o = hi << 4 | lo;
    }
    Ok(out)
}

/// Why a rule was refused; [`message`](Self::message) is Redis's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// No such command, subcommand or category.
    UnknownName,
    /// Not a rule.
    Syntax,
    /// A key pattern after `allkeys`/`~*`.
    KeyAfterAllKeys,
    /// A channel pattern after `allchannels`/`&*`.
    ChannelAfterAllChannels,
    /// `<pass` or `!hash` for a password the user does not have.
    NoSuchPassword,
    /// `#hash`/`!hash` that is not 64 lowercase hex digits.
    BadHash,
    /// `+parent|sub|arg`: first arguments of subcommands cannot be allowed.
    SubcommandFirstArg,
}

impl RuleError {
    /// Redis's text for it.
    pub fn message(self) -> &'static str {
        match self {
            RuleError::UnknownName => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeyAfterAllKeys => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelAfterAllChannels => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// A refused user change; `Display` gives Redis's text without the `ERR ` code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AclError {
    /// A rule failed (for a selector, the whole `(...)` text).
    Rule {
        /// The rule as given.
        rule: Vec<u8>,
        /// Why.
        error: RuleError,
    },
    /// A `(` argument never closed.
    UnmatchedParenthesis {
        /// The argument that opened it.
        rule: Vec<u8>,
    },
    /// A user name with a space, another C `isspace` byte or NUL.
    BadUsername,
    /// `ACL DELUSER default`.
    DefaultUndeletable,
    /// The same user twice in the configuration.
    DuplicateUser {
        /// The name.
        name: Vec<u8>,
    },
    /// A configuration line that is not `user <name> [rule ...]`, or has unbalanced quotes.
    BadUserLine,
}

impl AclError {
    fn text(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            AclError::Rule { rule, error } => {
                out.extend_from_slice(b"Error in ACL SETUSER modifier '");
                out.extend_from_slice(rule);
                out.extend_from_slice(b"': ");
                out.extend_from_slice(error.message().as_bytes());
            }
            AclError::UnmatchedParenthesis { rule } => {
                out.extend_from_slice(b"Unmatched parenthesis in acl selector starting at '");
                out.extend_from_slice(rule);
                out.extend_from_slice(b"'.");
            }
            AclError::BadUsername => {
                out.extend_from_slice(b"Usernames can't contain spaces or null characters")
            }
            AclError::DefaultUndeletable => {
                out.extend_from_slice(b"The 'default' user cannot be removed")
            }
            AclError::DuplicateUser { name } => {
                out.extend_from_slice(
                    b"Duplicate user found. A user can only be defined once in config files: '",
                );
                out.extend_from_slice(name);
                out.push(b'\'');
            }
            AclError::BadUserLine => out.extend_from_slice(
                b"Bad user declaration: expected 'user <username> [rule ...]' with balanced quotes",
            ),
        }
        out
    }

    /// The error reply: `-ERR ` and the text.
    pub fn to_reply(&self) -> Reply {
        let mut t = b"ERR ".to_vec();
        t.extend_from_slice(&self.text());
        Reply::Error(Bytes::from(t))
    }
}

impl fmt::Display for AclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.text()))
    }
}

impl std::error::Error for AclError {}

/// C `isspace` in the C locale.
pub(super) fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Splits a line as Redis's `sdssplitargs` does: runs of spaces separate arguments,
/// `"..."` takes `\xHH`, `\n`, `\r`, `\t`, `\b`, `\a` and `\<any>` escapes, `'...'` takes
/// `\'`; a closing quote must be followed by a space or the end. `None` on unbalanced quotes.
/// A NUL ends the line, as in C.
pub(super) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let end = line.iter().position(|&b| b == 0).unwrap_or(line.len());
    let s = &line[..end];
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let hexval = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::new();
    let mut p = 0;
    loop {
        while p < s.len() && is_c_space(s[p]) {
            p += 1;
        }
        if p >= s.len() {
            return Some(out);
        }
        let mut cur = Vec::new();
        let (mut dq, mut sq) = (false, false);
        loop {
            let c = at(p);
            if dq {
                if c == 0 {
                    return None;
                } else if c == b'\\' && at(p + 1) == b'x' {
                    if let (Some(h), Some(l)) = (hexval(at(p + 2)), hexval(at(p + 3))) {
                        cur.push(h << 4 | l);
                        p += 3;
                    } else {
                        // `\x` without two hex digits: an ordinary escape of `x`.
                        cur.push(b'x');
                        p += 1;
                    }
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    cur.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        o => o,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else if sq {
                if c == 0 {
                    return None;
                } else if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break,
                    b'"' => dq = true,
                    b'\'' => sq = true,
                    o => cur.push(o),
                }
            }
            p += 1;
        }
        out.push(cur);
    }
}

/// Joins `(` ... `)` arguments into single selector rules, as Redis does before applying
/// them. An argument starting with `(` while one is open starts over, as in Redis.
pub(super) fn merge_selector_args(rules: &[&[u8]]) -> Result<Vec<Vec<u8>>, AclError> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, &op) in rules.iter().enumerate() {
        let closes = op.last() == Some(&b')');
        if op.first() == Some(&b'(') && !closes {
            open = Some((i, op.to_vec()));
            continue;
        }
        if let Some((_, sel)) = open.as_mut() {
            sel.push(b' ');
            sel.extend_from_slice(op);
            if closes {
                if let Some((_, sel)) = open.take() {
                    out.push(sel);
                }
            }
            continue;
        }
        out.push(op.to_vec());
    }
    match open {
        Some((i, _)) => Err(AclError::UnmatchedParenthesis {
            rule: rules[i].to_vec(),
        }),
        None => Ok(out),
    }
}

pub(super) fn valid_username(name: &[u8]) -> bool {
    !name.iter().any(|&b| is_c_space(b) || b == 0)
}

/// Splits a configuration line `user <name> [rule ...]` (quotes as in Redis config files)
/// into the name and its rules. Quoted `\x` escapes that make invalid UTF-8 are refused.
pub fn parse_user_line(line: &str) -> Result<(String, Vec<String>), AclError> {
    let mut args = split_args(line.as_bytes()).ok_or(AclError::BadUserLine)?;
    if args.len() < 2 || !args[0].eq_ignore_ascii_case(b"user") {
        return Err(AclError::BadUserLine);
    }
    let rules = args.split_off(2);
    let name = args.pop().unwrap_or_default();
    let text = |v: Vec<u8>| String::from_utf8(v).map_err(|_| AclError::BadUserLine);
    Ok((
        text(name)?,
        rules.into_iter().map(text).collect::<Result<_, _>>()?,
    ))
}

/// Like [`parse_user_line`] without the leading `user` keyword: `<name> [rule ...]`, the
/// form of Rialto's `user` configuration key.
pub fn parse_user_spec(spec: &str) -> Result<(String, Vec<String>), AclError> {
    parse_user_line(&format!("user {spec}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_args_like_redis() {
        let v = split_args(b" a \"b c\" 'd\\'e' \"\\x41\\n\"").expect("split");
        assert_eq!(
            v,
            vec![
                b"a".to_vec(),
                b"b c".to_vec(),
                b"d'e".to_vec(),
                b"A\n".to_vec()
            ]
        );
        assert!(split_args(b"\"a\"b").is_none());
        assert!(split_args(b"'a").is_none());
    }

    #[test]
    fn rules_are_told_apart() {
        assert_eq!(UserRule::parse(b"ON"), Ok(UserRule::On));
        assert_eq!(
            UserRule::parse(b"+@read"),
            Ok(UserRule::Root(SelectorRule::Category {
                name: b"read",
                allow: true
            }))
        );
        assert_eq!(
            UserRule::parse(b"(~a +get)"),
            Ok(UserRule::Selector(b"~a +get"))
        );
        assert_eq!(UserRule::parse(b"#abc"), Err(RuleError::BadHash));
        assert_eq!(UserRule::parse(b"bogus"), Err(RuleError::Syntax));
        assert_eq!(SelectorRule::parse(b"on"), Err(RuleError::Syntax));
        assert_eq!(key_pattern(b"%RW~k*"), Ok((true, true, &b"k*"[..])));
        assert_eq!(key_pattern(b"%R~k"), Ok((true, false, &b"k"[..])));
        assert_eq!(key_pattern(b"%X~k"), Err(RuleError::Syntax));
        assert_eq!(key_pattern(b"%RR~k"), Err(RuleError::Syntax));
    }
}
