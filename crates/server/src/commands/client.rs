//! CLIENT ID | SETNAME | GETNAME | LIST | INFO | SETINFO | KILL | HELP

use bytes::Bytes;
use rialto_resp::Reply;

use super::util::is;
use super::{Ctx, Outcome};
use crate::client::ClientHandle;
use crate::reply;

/// Client names and library names: printable ASCII without spaces (Redis's rule).
pub fn valid_name(n: &[u8]) -> bool {
    n.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

/// Names the connection (an empty name clears it), or the error Redis gives for a bad name.
pub fn set_name(client: &crate::client::Client, n: &[u8]) -> Result<(), Reply> {
    if !valid_name(n) {
        return Err(Reply::error(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    client.handle.info.lock().name = (!n.is_empty()).then(|| Bytes::copy_from_slice(n));
    Ok(())
}

fn verbatim(text: String) -> Reply {
    Reply::Verbatim {
        format: *b"txt",
        text: Bytes::from(text),
    }
}

pub fn run(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    let me = &ctx.client.handle;
    Outcome::Reply(if is(sub, "id") {
        Reply::Integer(me.id as i64)
    } else if is(sub, "setname") {
        match set_name(ctx.client, &args[2]) {
            Ok(()) => reply::ok(),
            Err(r) => r,
        }
    } else if is(sub, "getname") {
        me.info.lock().name.clone().map_or(Reply::Null, Reply::Bulk)
    } else if is(sub, "info") {
        verbatim(format!("{}\n", me.describe()))
    } else if is(sub, "list") {
        match list(ctx, args) {
            Ok(r) => r,
            Err(r) => r,
        }
    } else if is(sub, "setinfo") {
        let (attr, v) = (&args[2], &args[3]);
        let field = if is(attr, "lib-name") {
            0
        } else if is(attr, "lib-ver") {
            1
        } else {
            return Outcome::Reply(reply::err_string(format!(
                "ERR Unrecognized option '{}'",
                String::from_utf8_lossy(attr)
            )));
        };
        if !valid_name(v) {
            return Outcome::Reply(reply::err_string(format!(
                "ERR {} cannot contain spaces, newlines or special characters.",
                if field == 0 { "lib-name" } else { "lib-ver" }
            )));
        }
        let v = (!v.is_empty()).then(|| Bytes::copy_from_slice(v));
        let mut info = me.info.lock();
        if field == 0 {
            info.lib_name = v;
        } else {
            info.lib_ver = v;
        }
        reply::ok()
    } else if is(sub, "kill") {
        kill(ctx, args).unwrap_or_else(|e| e)
    } else {
        help()
    })
}

fn list(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Reply, Reply> {
    // Redis's shapes: CLIENT LIST, CLIENT LIST TYPE <t> (exactly), CLIENT LIST ID <id>...
    let mut ids: Option<Vec<u64>> = None;
    if args.len() == 4 && is(&args[2], "type") {
        let t = &args[3];
        if is(t, "normal") {
        } else if is(t, "master") || is(t, "replica") || is(t, "slave") || is(t, "pubsub") {
            // No client of these kinds exists here.
            ids = Some(Vec::new());
        } else {
            return Err(reply::err_string(format!(
                "ERR Unknown client type '{}'",
                String::from_utf8_lossy(t)
            )));
        }
    } else if args.len() > 3 && is(&args[2], "id") {
        let mut v = Vec::new();
        for a in &args[3..] {
            match reply::parse_i64(a) {
                Some(n) if n > 0 => v.push(n as u64),
                _ => return Err(Reply::error("ERR Invalid client ID")),
            }
        }
        ids = Some(v);
    } else if args.len() != 2 {
        return Err(reply::syntax());
    }
    let mut text = String::new();
    for c in ctx.shared.clients.all() {
        if ids.as_ref().is_none_or(|ids| ids.contains(&c.id)) {
            text.push_str(&c.describe());
            text.push('\n');
        }
    }
    Ok(verbatim(text))
}

fn kill(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<Reply, Reply> {
    let me = ctx.client.handle.id;
    let all = ctx.shared.clients.all();
    if args.len() == 3 {
        // Old form: CLIENT KILL addr:port.
        let addr = String::from_utf8_lossy(&args[2]);
        let target = all.iter().find(|c| c.addr.to_string() == addr);
        return match target {
            Some(c) => {
                c.kill();
                Ok(reply::ok())
            }
            None => Err(Reply::error("ERR No such client")),
        };
    }
    if !args.len().is_multiple_of(2) {
        return Err(reply::syntax());
    }
    type Filter = Box<dyn Fn(&ClientHandle) -> bool>;
    let mut filters: Vec<Filter> = Vec::new();
    let mut skipme = true;
    for pair in args[2..].chunks_exact(2) {
        let (k, v) = (&pair[0], pair[1].clone());
        if is(k, "id") {
            let id = match reply::parse_i64(&v) {
                Some(n) if n > 0 => n as u64,
                _ => return Err(Reply::error("ERR client-id should be greater than 0")),
            };
            filters.push(Box::new(move |c| c.id == id));
        } else if is(k, "addr") {
            filters.push(Box::new(move |c| c.addr.to_string().as_bytes() == &v[..]));
        } else if is(k, "laddr") {
            filters.push(Box::new(move |c| c.laddr.to_string().as_bytes() == &v[..]));
        } else if is(k, "user") {
            if ctx.shared.acl.read().user(&v).is_none() {
                return Err(reply::err_string(format!(
                    "ERR No such user '{}'",
                    String::from_utf8_lossy(&v)
                )));
            }
            filters.push(Box::new(move |c| c.info.lock().user.as_bytes() == &v[..]));
        } else if is(k, "type") {
            if is(&v, "normal") {
            } else if is(&v, "master") || is(&v, "replica") || is(&v, "slave") || is(&v, "pubsub") {
                filters.push(Box::new(|_| false));
            } else {
                return Err(reply::err_string(format!(
                    "ERR Unknown client type '{}'",
                    String::from_utf8_lossy(&v)
                )));
            }
        } else if is(k, "skipme") {
            skipme = if is(&v, "yes") {
                true
            } else if is(&v, "no") {
                false
            } else {
                return Err(reply::syntax());
            };
        } else if is(k, "maxage") {
            let age = reply::parse_i64(&v).ok_or_else(reply::syntax)?;
            filters.push(Box::new(move |c| {
                c.created.elapsed().as_secs() as i64 >= age
            }));
        } else {
            return Err(reply::syntax());
        }
    }
    let mut n = 0;
    for c in &all {
        if (skipme && c.id == me) || !filters.iter().all(|f| f(c)) {
            continue;
        }
        c.kill();
        n += 1;
    }
    Ok(Reply::Integer(n))
}

fn help() -> Reply {
    Reply::Array(
        [
            "CLIENT <subcommand> [<arg> ...]:",
            "ID",
            "    This connection's id.",
            "SETNAME <name> | GETNAME",
            "    Names this connection, or returns its name.",
            "LIST [TYPE NORMAL] [ID <id> ...]",
            "    One line per connected client.",
            "INFO",
            "    This connection's line of CLIENT LIST.",
            "SETINFO LIB-NAME|LIB-VER <value>",
            "    Records the client library's name or version.",
            "KILL <addr:port> | KILL [ID <id>] [ADDR <addr:port>] [LADDR <addr:port>] [USER <name>] [TYPE NORMAL] [MAXAGE <secs>] [SKIPME yes|no]",
            "    Closes the matching connections.",
            "HELP",
            "    This text.",
        ]
        .into_iter()
        .map(Reply::simple)
        .collect(),
    )
}
