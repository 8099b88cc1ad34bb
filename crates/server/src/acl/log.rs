//! The ACL log (ACL LOG): the latest requests the ACL refused and the failed authentications,
//! as Redis 7.0 keeps them. Newest first, at most `acllog-max-len` entries; a refusal like one
//! of the 10 newest (same reason, context, object and user, within a minute of it) bumps that
//! entry's count, time and client instead of adding one, and moves it to the front.

use std::collections::VecDeque;

use bytes::Bytes;
use rialto_resp::Reply;

use super::users::Denied;

/// Redis's `ACL_LOG_GROUPING_MAX_TIME_DELTA`.
const GROUPING_MS: i64 = 60_000;
/// How many of the newest entries a refusal is compared with.
const GROUPING_SCAN: usize = 10;
/// Entries ACL LOG lists without a count.
pub const DEFAULT_LISTED: usize = 10;

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    /// A wrong password or an unknown or disabled user (AUTH, HELLO AUTH).
    Auth,
}

impl Reason {
    fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused request was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// Sent by the client.
    Toplevel,
    /// Queued in MULTI, or found refused at EXEC.
    Multi,
    /// Called by a script.
    Lua,
}

impl Context {
    fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// A refusal to log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub reason: Reason,
    pub context: Context,
    /// The command's full name, the key, the channel, or for AUTH the command as typed.
    pub object: Bytes,
    /// The user refused (for AUTH: the user named).
    pub username: Bytes,
}

impl Event {
    /// A request `user` was refused for `denied`.
    pub fn denied(denied: &Denied, context: Context, username: &[u8]) -> Event {
        let (reason, object) = match denied {
            Denied::Command(c) => (Reason::Command, Bytes::copy_from_slice(c.as_bytes())),
            Denied::Key(k) => (Reason::Key, k.clone()),
            Denied::Channel(c) => (Reason::Channel, c.clone()),
        };
        Event {
            reason,
            context,
            object,
            username: Bytes::copy_from_slice(username),
        }
    }

    /// A failed authentication as `username` by the command `command` (as typed).
    pub fn auth(command: &[u8], username: &[u8]) -> Event {
        Event {
            reason: Reason::Auth,
            context: Context::Toplevel,
            object: Bytes::copy_from_slice(command),
            username: Bytes::copy_from_slice(username),
        }
    }
}

struct Entry {
    event: Event,
    count: u64,
    /// Unix milliseconds of the last refusal it counts.
    at_ms: i64,
    /// CLIENT INFO of the client refused last.
    client_info: String,
}

/// The entries, newest first.
pub struct AclLog {
    entries: VecDeque<Entry>,
    max_len: usize,
}

impl AclLog {
    pub fn new(max_len: usize) -> AclLog {
        AclLog {
            entries: VecDeque::new(),
            max_len,
        }
    }

    /// Applies `acllog-max-len`; as in Redis, a longer log is cut at its next entry.
    pub fn set_max_len(&mut self, max_len: usize) {
        self.max_len = max_len;
    }

    /// Logs `event` of the client described by `client_info`, at `now_ms`.
    pub fn add(&mut self, event: Event, client_info: String, now_ms: i64) {
        let similar = self
            .entries
            .iter()
            .take(GROUPING_SCAN)
            .position(|e| e.event == event && (e.at_ms - now_ms).abs() <= GROUPING_MS);
        if let Some(entry) = similar.and_then(|i| self.entries.remove(i)) {
            self.entries.push_front(Entry {
                count: entry.count + 1,
                at_ms: now_ms,
                client_info,
                event: entry.event,
            });
            return;
        }
        self.entries.push_front(Entry {
            event,
            count: 1,
            at_ms: now_ms,
            client_info,
        });
        self.entries.truncate(self.max_len);
    }

    /// ACL LOG RESET.
    pub fn reset(&mut self) {
        self.entries.clear();
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// ACL LOG [count]: the newest `count` entries, each Redis's map of seven fields.
    pub fn reply(&self, count: usize, now_ms: i64) -> Reply {
        let field = |name: &'static str, value: Reply| (Reply::bulk(name), value);
        Reply::Array(
            self.entries
                .iter()
                .take(count)
                .map(|e| {
                    Reply::Map(vec![
                        field("count", Reply::Integer(e.count as i64)),
                        field("reason", Reply::bulk(e.event.reason.name())),
                        field("context", Reply::bulk(e.event.context.name())),
                        field("object", Reply::Bulk(e.event.object.clone())),
                        field("username", Reply::Bulk(e.event.username.clone())),
                        field(
                            "age-seconds",
                            Reply::Double((now_ms - e.at_ms) as f64 / 1000.0),
                        ),
                        field("client-info", Reply::bulk(&e.client_info)),
                    ])
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(r: &Reply, i: usize) -> Vec<(String, String)> {
        let Reply::Array(entries) = r else {
            panic!("array")
        };
        let Reply::Map(pairs) = &entries[i] else {
            panic!("map")
        };
        pairs
            .iter()
            .map(|(k, v)| {
                let text = |r: &Reply| match r {
                    Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
                    Reply::Integer(n) => n.to_string(),
                    Reply::Double(d) => d.to_string(),
                    other => format!("{other:?}"),
                };
                (text(k), text(v))
            })
            .collect()
    }

    fn get(r: &Reply, i: usize, name: &str) -> String {
        fields(r, i)
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
            .unwrap_or_default()
    }

    #[test]
    fn similar_refusals_share_an_entry_within_a_minute() {
        let mut log = AclLog::new(128);
        let get_cmd = Denied::Command("get".into());
        for t in [0, 10, 20] {
            log.add(
                Event::denied(&get_cmd, Context::Toplevel, b"antirez"),
                "c".into(),
                t,
            );
        }
        assert_eq!(log.len(), 1);
        let r = log.reply(DEFAULT_LISTED, 1020);
        assert_eq!(get(&r, 0, "count"), "3");
        assert_eq!(get(&r, 0, "age-seconds"), "1");
        // Another context, another user, or a minute later: a new entry, in front.
        log.add(
            Event::denied(&get_cmd, Context::Multi, b"antirez"),
            "c".into(),
            30,
        );
        log.add(
            Event::denied(&get_cmd, Context::Toplevel, b"other"),
            "c".into(),
            40,
        );
        log.add(
            Event::denied(&get_cmd, Context::Toplevel, b"antirez"),
            "c".into(),
            70_021,
        );
        assert_eq!(log.len(), 4);
        let r = log.reply(2, 70_021);
        let Reply::Array(two) = &r else { panic!() };
        assert_eq!(two.len(), 2);
        assert_eq!(get(&r, 0, "count"), "1");
        assert_eq!(get(&r, 1, "username"), "other");
    }

    #[test]
    fn a_repeated_refusal_moves_its_entry_to_the_front() {
        let mut log = AclLog::new(128);
        let key = Denied::Key(Bytes::from_static(b"k"));
        log.add(
            Event::denied(&key, Context::Toplevel, b"u"),
            "first".into(),
            0,
        );
        log.add(Event::auth(b"AUTH", b"u"), "x".into(), 1);
        log.add(
            Event::denied(&key, Context::Toplevel, b"u"),
            "second".into(),
            2,
        );
        let r = log.reply(DEFAULT_LISTED, 2);
        assert_eq!(
            fields(&r, 0),
            [
                ("count", "2"),
                ("reason", "key"),
                ("context", "toplevel"),
                ("object", "k"),
                ("username", "u"),
                ("age-seconds", "0"),
                ("client-info", "second"),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        assert_eq!(get(&r, 1, "reason"), "auth");
        assert_eq!(get(&r, 1, "object"), "AUTH");
    }

    #[test]
    fn the_log_keeps_the_newest_max_len_and_resets() {
        let mut log = AclLog::new(5);
        for j in 0..10 {
            let key = Denied::Key(Bytes::from(format!("obj:{j}")));
            log.add(
                Event::denied(&key, Context::Toplevel, b"u"),
                String::new(),
                j,
            );
        }
        assert_eq!(log.len(), 5);
        assert_eq!(get(&log.reply(1, 9), 0, "object"), "obj:9");
        log.set_max_len(0);
        log.add(Event::auth(b"AUTH", b"u"), String::new(), 10);
        assert_eq!(log.len(), 0);
        log.set_max_len(5);
        log.add(Event::auth(b"AUTH", b"u"), String::new(), 11);
        log.reset();
        assert_eq!(log.len(), 0);
    }
}
