//! The operations HTTP endpoint: `GET /metrics`, `GET /livez`, `GET /readyz`, the dashboard
//! (`GET /` or `/dashboard`, its script and style sheet) and its data (`GET /api/status`), and
//! `HEAD` of each.
//!
//! A deliberately small HTTP/1.1 server on tokio rather than a framework: it only ever answers
//! a few fixed paths, and it must stay up whatever a scanner, a broken proxy or a slow client
//! sends. Each request head is limited to [`MAX_HEADER_BYTES`] and must arrive within
//! [`READ_TIMEOUT`] of when the server started waiting for it (a deadline for the whole head,
//! not per read, so a client trickling one byte at a time cannot hold a connection). At most
//! [`MAX_CONNECTIONS`] connections are served at once; more are answered 503 and closed.
//! Keep-alive and pipelining follow HTTP/1.1 (HTTP/1.0 closes unless it asks to keep alive).

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tokio::time::{timeout, timeout_at, Instant};

/// What the endpoint reports; implemented by the server.
///
/// The methods run on the async runtime, so they must be quick and must not block.
pub trait OpsState: Send + Sync + 'static {
    /// The scrape body, in the Prometheus text format (see `crate::prom::PromWriter`).
    fn metrics(&self) -> String;
    /// Whether the process works at all; `false` makes `/livez` answer 503.
    fn live(&self) -> bool;
    /// Whether the server should get traffic; `Err(reason)` makes `/readyz` answer 503 with it.
    fn ready(&self) -> Result<(), String>;
    /// The dashboard's data, a JSON document (see `crate::status`).
    fn status(&self) -> String;
}

/// The dashboard: static files compiled into the binary. They build every element with
/// `textContent`, never from markup, so nothing the server reports can become markup.
const DASHBOARD_HTML: &str = include_str!("dashboard/index.html");
const DASHBOARD_JS: &str = include_str!("dashboard/dashboard.js");
const DASHBOARD_CSS: &str = include_str!("dashboard/dashboard.css");
/// The page loads only its own script, style and data: a second line of defence should an
/// element ever be built from markup.
const DASHBOARD_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                             connect-src 'self'; img-src 'self'; base-uri 'none'; \
                             form-action 'none'; frame-ancestors 'none'";

/// The largest request head (request line and headers) accepted; larger ones get 431.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;
/// How long a request head (or an idle keep-alive connection) may take before the connection
/// is closed, with 408 when part of a request had arrived.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; further ones are answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 64;

/// Request bodies are never used, only skipped to keep pipelining in step; larger ones get 413.
const MAX_BODY_BYTES: u64 = 64 * 1024;
/// How long writing one response may take (a client that never reads must not hold a slot).
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long to drain a closing connection so that the kernel sends FIN rather than RST,
/// which could discard the final response before the client reads it.
const LINGER: Duration = Duration::from_secs(1);
/// How much to drain at most while lingering.
const LINGER_BYTES: usize = 64 * 1024;
/// Over-limit connections being answered 503 at once; beyond this they are just dropped.
const MAX_REJECTING: usize = 64;
/// How long `serve` lets in-flight requests finish after shutdown before aborting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);
/// Pause after a failed accept (for example EMFILE), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves the endpoint on `listener` until `shutdown` becomes `true` (or its sender is
/// dropped). Then it stops accepting and closes the listener at once, lets requests in
/// progress finish for up to a second, closes idle keep-alive connections, and returns.
pub async fn serve(
    listener: TcpListener,
    state: Arc<dyn OpsState>,
    mut shutdown: watch::Receiver<bool>,
) {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "ops endpoint listening");
    }
    let serving = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let rejecting = Arc::new(Semaphore::new(MAX_REJECTING));
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            _ = wait_shutdown(&mut shutdown) => break,
            Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                if let Err(e) = done {
                    if e.is_panic() {
                        tracing::error!("ops connection task panicked");
                    }
                }
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if let Ok(permit) = Arc::clone(&serving).try_acquire_owned() {
                        let state = Arc::clone(&state);
                        let shutdown = shutdown.clone();
                        tasks.spawn(async move {
                            connection(stream, state, shutdown).await;
                            drop(permit);
                        });
                    } else if let Ok(permit) = Arc::clone(&rejecting).try_acquire_owned() {
                        tracing::debug!(%peer, "too many ops connections, answering 503");
                        tasks.spawn(async move {
                            reject_busy(stream).await;
                            drop(permit);
                        });
                    } else {
                        tracing::debug!(%peer, "too many ops connections, dropping");
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "ops endpoint accept failed");
                    tokio::select! {
                        _ = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                        _ = wait_shutdown(&mut shutdown) => break,
                    }
                }
            },
        }
    }
    drop(listener);
    tracing::info!("ops endpoint stopped accepting");
    let _ = timeout(SHUTDOWN_GRACE, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.shutdown().await;
}

/// Resolves once shutdown is requested; a dropped sender counts as a request.
async fn wait_shutdown(rx: &mut watch::Receiver<bool>) {
    loop {
        if *rx.borrow_and_update() {
            return;
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}

async fn connection(
    mut stream: TcpStream,
    state: Arc<dyn OpsState>,
    mut shutdown: watch::Receiver<bool>,
) {
    // Responses are small and written whole; Nagle would only delay pipelined answers.
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::with_capacity(1024);
    loop {
        let deadline = Instant::now() + READ_TIMEOUT;
        let request = match read_head(&mut stream, &mut buf, deadline, &mut shutdown).await {
            Read::Request(r) => r,
            Read::Close => return,
            Read::Reject(status) => return fail(stream, status).await,
        };
        if let Err(status) =
            skip_body(&mut stream, &mut buf, request.content_length, deadline).await
        {
            return fail(stream, status).await;
        }
        let close = !request.keep_alive || *shutdown.borrow();
        let response = respond(&*state, &request, close);
        if !write(&mut stream, &response).await {
            return;
        }
        if close {
            return linger_close(stream).await;
        }
    }
}

enum Read {
    Request(Request),
    /// End the connection without a response: EOF, an I/O error, or idle timeout/shutdown
    /// with nothing of a request received.
    Close,
    /// Answer with this status and close.
    Reject(u16),
}

/// Reads until `buf` holds a whole request head, parses it and removes it from `buf` (bytes
/// after it, such as pipelined requests, stay).
async fn read_head(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    deadline: Instant,
    shutdown: &mut watch::Receiver<bool>,
) -> Read {
    let mut chunk = [0u8; 4096];
    let mut scanned = 0;
    loop {
        // RFC 9112 2.2: ignore empty lines before a request line.
        let blank = leading_blank_lines(buf);
        if blank > 0 {
            buf.drain(..blank);
            scanned = 0;
        }
        if let Some(end) = find_head_end(buf, scanned) {
            if end > MAX_HEADER_BYTES {
                return Read::Reject(431);
            }
            let parsed = parse_head(&buf[..end]);
            buf.drain(..end);
            return match parsed {
                Ok(r) => Read::Request(r),
                Err(status) => Read::Reject(status),
            };
        }
        if buf.len() >= MAX_HEADER_BYTES {
            return Read::Reject(431);
        }
        // A terminator can straddle the previous end by up to two bytes.
        scanned = buf.len().saturating_sub(2);
        let read = if buf.is_empty() {
            // Idle between requests: shutdown may close the connection now.
            tokio::select! {
                r = timeout_at(deadline, stream.read(&mut chunk)) => r,
                _ = wait_shutdown(shutdown) => return Read::Close,
            }
        } else {
            timeout_at(deadline, stream.read(&mut chunk)).await
        };
        match read {
            Err(_elapsed) if buf.is_empty() => return Read::Close,
            Err(_elapsed) => return Read::Reject(408),
            Ok(Ok(0)) => return Read::Close,
            Ok(Ok(n)) => buf.extend_from_slice(chunk.get(..n).unwrap_or_default()),
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "ops connection read failed");
                return Read::Close;
            }
        }
    }
}

/// Discards a request body of `len` bytes, first from `buf`, then from the socket.
async fn skip_body(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    len: u64,
    deadline: Instant,
) -> Result<(), u16> {
    let from_buf = usize::try_from(len).unwrap_or(usize::MAX).min(buf.len());
    buf.drain(..from_buf);
    let mut left = len - from_buf as u64;
    let mut chunk = [0u8; 4096];
    while left > 0 {
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(chunk.len());
        match timeout_at(deadline, stream.read(&mut chunk[..want])).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Err(400),
            Ok(Ok(n)) => left -= n as u64,
            Err(_elapsed) => return Err(408),
        }
    }
    Ok(())
}

async fn write(stream: &mut TcpStream, bytes: &[u8]) -> bool {
    match timeout(WRITE_TIMEOUT, stream.write_all(bytes)).await {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "ops connection write failed");
            false
        }
        Err(_elapsed) => {
            tracing::debug!("ops connection write timed out");
            false
        }
    }
}

/// Answers a request that cannot be served with `status` and closes the connection.
async fn fail(mut stream: TcpStream, status: u16) {
    let body = format!("{}\n", reason(status).to_ascii_lowercase());
    let response = render(status, TEXT, &[], body.as_bytes(), false, true);
    if write(&mut stream, &response).await {
        linger_close(stream).await;
    }
}

/// The answer to a connection over [`MAX_CONNECTIONS`].
async fn reject_busy(mut stream: TcpStream) {
    let response = render(
        503,
        TEXT,
        &[("Retry-After", "1")],
        b"too many connections\n",
        false,
        true,
    );
    if timeout(LINGER, stream.write_all(&response)).await.is_ok() {
        linger_close(stream).await;
    }
}

/// Sends FIN and drains what the client still sends for a moment before closing, so that
/// closing with unread data does not turn into an RST that destroys the response in flight.
async fn linger_close(mut stream: TcpStream) {
    let _ = timeout(LINGER, async {
        let _ = stream.shutdown().await;
        let mut sink = [0u8; 4096];
        let mut drained = 0;
        while drained < LINGER_BYTES {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    })
    .await;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Get,
    Head,
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Metrics,
    Livez,
    Readyz,
    Dashboard,
    DashboardJs,
    DashboardCss,
    Status,
    NotFound,
}

#[derive(Debug, PartialEq, Eq)]
struct Request {
    method: Method,
    route: Route,
    keep_alive: bool,
    content_length: u64,
}

const TEXT: &str = "text/plain; charset=utf-8";

fn respond(state: &dyn OpsState, req: &Request, close: bool) -> Vec<u8> {
    let head_only = req.method == Method::Head;
    let text =
        |status: u16, body: &str| render(status, TEXT, &[], body.as_bytes(), head_only, close);
    let asset = |content_type: &str, body: &str| {
        render(
            200,
            content_type,
            &[
                ("Content-Security-Policy", DASHBOARD_CSP),
                ("X-Content-Type-Options", "nosniff"),
                ("Referrer-Policy", "no-referrer"),
            ],
            body.as_bytes(),
            head_only,
            close,
        )
    };
    match (req.route, req.method) {
        (Route::NotFound, _) => text(404, "not found\n"),
        (_, Method::Other) => render(
            405,
            TEXT,
            &[("Allow", "GET, HEAD")],
            b"method not allowed\n",
            false,
            close,
        ),
        (Route::Metrics, _) => render(
            200,
            crate::prom::CONTENT_TYPE,
            &[],
            state.metrics().as_bytes(),
            head_only,
            close,
        ),
        (Route::Livez, _) if state.live() => text(200, "ok\n"),
        (Route::Livez, _) => text(503, "not live\n"),
        (Route::Readyz, _) => match state.ready() {
            Ok(()) => text(200, "ok\n"),
            Err(why) => text(503, &format!("{why}\n")),
        },
        (Route::Dashboard, _) => asset("text/html; charset=utf-8", DASHBOARD_HTML),
        (Route::DashboardJs, _) => asset("text/javascript; charset=utf-8", DASHBOARD_JS),
        (Route::DashboardCss, _) => asset("text/css; charset=utf-8", DASHBOARD_CSS),
        (Route::Status, _) => render(
            200,
            "application/json",
            &[("X-Content-Type-Options", "nosniff")],
            state.status().as_bytes(),
            head_only,
            close,
        ),
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// A whole response. `head_only` (HEAD) keeps `Content-Length` but leaves the body out.
fn render(
    status: u16,
    content_type: &str,
    extra: &[(&str, &str)],
    body: &[u8],
    head_only: bool,
    close: bool,
) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n",
        reason(status),
        body.len()
    );
    for (name, value) in extra {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str(if close {
        "Connection: close\r\n\r\n"
    } else {
        "Connection: keep-alive\r\n\r\n"
    });
    let mut out = head.into_bytes();
    if !head_only {
        out.extend_from_slice(body);
    }
    out
}

/// Bytes of empty lines (CRLF or LF) at the start of `buf`.
fn leading_blank_lines(buf: &[u8]) -> usize {
    let mut i = 0;
    loop {
        match buf.get(i..i + 2) {
            Some(b"\r\n") => i += 2,
            _ if buf.get(i) == Some(&b'\n') => i += 1,
            _ => return i,
        }
    }
}

/// The end (exclusive) of the first head in `buf`: an empty line, CRLF or bare LF
/// (RFC 9112 2.2 lets a recipient accept LF alone). The search starts at `from`.
fn find_head_end(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    loop {
        let nl = i + buf.get(i..)?.iter().position(|&b| b == b'\n')?;
        match (buf.get(nl + 1), buf.get(nl + 2)) {
            (Some(b'\n'), _) => return Some(nl + 2),
            (Some(b'\r'), Some(b'\n')) => return Some(nl + 3),
            _ => i = nl + 1,
        }
    }
}

/// Parses a request head (request line, headers, blank line) into what the server needs, or
/// the error status to answer with.
fn parse_head(head: &[u8]) -> Result<Request, u16> {
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let request_line = lines.next().ok_or(400u16)?;
    let mut parts = request_line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(400);
    };
    if method.is_empty() || method.len() > 32 || !method.iter().all(|&b| is_tchar(b)) {
        return Err(400);
    }
    let http11 = match version {
        b"HTTP/1.1" => true,
        b"HTTP/1.0" => false,
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            return Err(505)
        }
        _ => return Err(400),
    };
    let route = route(target)?;

    let (mut close, mut keep_alive, mut chunked) = (false, false, false);
    let mut content_length: Option<u64> = None;
    for line in lines {
        if line.is_empty() {
            break;
        }
        // Obsolete line folding is an error for a server (RFC 9112 5.2).
        if line[0] == b' ' || line[0] == b'\t' {
            return Err(400);
        }
        let colon = line.iter().position(|&b| b == b':').ok_or(400u16)?;
        let (name, value) = (&line[..colon], trim_ows(&line[colon + 1..]));
        if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
            return Err(400);
        }
        if !value
            .iter()
            .all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
        {
            return Err(400);
        }
        if name.eq_ignore_ascii_case(b"connection") {
            for token in value.split(|&b| b == b',').map(trim_ows) {
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case(b"content-length") {
            let n = parse_content_length(value).ok_or(400u16)?;
            // Differing lengths are a request-smuggling signal (RFC 9112 6.3).
            if content_length.is_some_and(|prev| prev != n) {
                return Err(400);
            }
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            chunked = true;
        }
    }
    if chunked {
        // No endpoint takes a body, so chunked decoding is not worth having.
        return Err(501);
    }
    let content_length = content_length.unwrap_or(0);
    if content_length > MAX_BODY_BYTES {
        return Err(413);
    }
    let method = match method {
        b"GET" => Method::Get,
        b"HEAD" => Method::Head,
        _ => Method::Other,
    };
    Ok(Request {
        method,
        route,
        keep_alive: !close && (http11 || keep_alive),
        content_length,
    })
}

/// Maps a request target (origin form, or absolute form from a proxy) to a route; the query
/// and fragment are ignored.
fn route(target: &[u8]) -> Result<Route, u16> {
    if target.is_empty() || !target.iter().all(|&b| (0x21..=0x7e).contains(&b)) {
        return Err(400);
    }
    let path = if target.first() == Some(&b'/') {
        target
    } else if let Some(rest) = strip_prefix_ignore_case(target, b"http://")
        .or_else(|| strip_prefix_ignore_case(target, b"https://"))
    {
        match rest.iter().position(|&b| b == b'/') {
            Some(i) => &rest[i..],
            None => b"/",
        }
    } else if target == b"*" {
        return Ok(Route::NotFound);
    } else {
        return Err(400);
    };
    let end = path
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(path.len());
    Ok(match &path[..end] {
        b"/metrics" => Route::Metrics,
        b"/livez" => Route::Livez,
        b"/readyz" => Route::Readyz,
        b"/" | b"/dashboard" => Route::Dashboard,
        b"/dashboard.js" => Route::DashboardJs,
        b"/dashboard.css" => Route::DashboardCss,
        b"/api/status" => Route::Status,
        _ => Route::NotFound,
    })
}

fn strip_prefix_ignore_case<'a>(s: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

fn parse_content_length(value: &[u8]) -> Option<u64> {
    if value.is_empty() || value.len() > 19 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// RFC 9110 5.6.2 token characters (methods, header names).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;
    use tokio::task::JoinHandle;

    struct TestState {
        live: AtomicBool,
        ready: Mutex<Result<(), String>>,
    }

    impl OpsState for TestState {
        fn metrics(&self) -> String {
            let mut w = crate::prom::PromWriter::new();
            w.gauge("rialto_up", "Whether Rialto is up.", &[], 1u64);
            w.finish()
        }
        fn live(&self) -> bool {
            self.live.load(Ordering::SeqCst)
        }
        fn ready(&self) -> Result<(), String> {
            self.ready.lock().map_or(Ok(()), |r| r.clone())
        }
        fn status(&self) -> String {
            STATUS_BODY.into()
        }
    }

    const STATUS_BODY: &str = r#"{"stores":[]}"#;

    const METRICS_BODY: &str =
        "# HELP rialto_up Whether Rialto is up.\n# TYPE rialto_up gauge\nrialto_up 1\n";

    struct Server {
        addr: SocketAddr,
        state: Arc<TestState>,
        stop: watch::Sender<bool>,
        task: JoinHandle<()>,
    }

    async fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(TestState {
            live: AtomicBool::new(true),
            ready: Mutex::new(Ok(())),
        });
        let (stop, rx) = watch::channel(false);
        let task = tokio::spawn(serve(listener, state.clone(), rx));
        Server {
            addr,
            state,
            stop,
            task,
        }
    }

    #[derive(Debug)]
    struct Response {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    }

    impl Response {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }
    }

    /// Reads one response from `stream`, keeping extra bytes in `buf`; `None` on EOF first.
    async fn read_response(
        stream: &mut TcpStream,
        buf: &mut Vec<u8>,
        head_only: bool,
    ) -> Option<Response> {
        let end = loop {
            if let Some(end) = find_head_end(buf, 0) {
                break end;
            }
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                assert!(buf.is_empty(), "EOF inside a response head: {buf:?}");
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8(buf.drain(..end).collect()).unwrap();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        let status = status_line[9..12].parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (n, v) = l.split_once(": ").unwrap();
                (n.to_string(), v.to_string())
            })
            .collect();
        let mut response = Response {
            status,
            headers,
            body: String::new(),
        };
        let len: usize = response.header("content-length").unwrap().parse().unwrap();
        if !head_only {
            while buf.len() < len {
                let mut chunk = [0u8; 4096];
                let n = stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "EOF inside a response body");
                buf.extend_from_slice(&chunk[..n]);
            }
            response.body = String::from_utf8(buf.drain(..len).collect()).unwrap();
        }
        Some(response)
    }

    /// Sends `raw` on a new connection and reads one response.
    async fn exchange(addr: SocketAddr, raw: &[u8]) -> Response {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(raw).await.unwrap();
        let head_only = raw.starts_with(b"HEAD ");
        read_response(&mut s, &mut Vec::new(), head_only)
            .await
            .unwrap()
    }

    async fn get(addr: SocketAddr, path: &str) -> Response {
        exchange(
            addr,
            format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes(),
        )
        .await
    }

    /// Asserts that the server closes `s` (EOF, or a reset) without sending anything more.
    async fn assert_closed(s: &mut TcpStream) {
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest).await;
        assert!(rest.is_empty(), "unexpected bytes: {rest:?}");
    }

    #[tokio::test]
    async fn metrics_livez_readyz() {
        let srv = start().await;
        let r = get(srv.addr, "/metrics").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some("text/plain; version=0.0.4"));
        assert_eq!(r.body, METRICS_BODY);
        assert_eq!(r.header("connection"), Some("keep-alive"));

        let r = get(srv.addr, "/livez").await;
        assert_eq!((r.status, r.body.as_str()), (200, "ok\n"));
        srv.state.live.store(false, Ordering::SeqCst);
        let r = get(srv.addr, "/livez").await;
        assert_eq!((r.status, r.body.as_str()), (503, "not live\n"));

        let r = get(srv.addr, "/readyz").await;
        assert_eq!((r.status, r.body.as_str()), (200, "ok\n"));
        *srv.state.ready.lock().unwrap() = Err("loading the dataset".into());
        let r = get(srv.addr, "/readyz").await;
        assert_eq!((r.status, r.body.as_str()), (503, "loading the dataset\n"));

        // Query strings are ignored; absolute-form targets (from proxies) are understood.
        assert_eq!(get(srv.addr, "/metrics?name[]=x").await.status, 200);
        assert_eq!(get(srv.addr, "http://host:9/metrics").await.status, 200);
    }

    #[tokio::test]
    async fn not_found_method_not_allowed_bad_request() {
        let srv = start().await;
        for path in ["/index.html", "/metricsx", "/metrics/", "/../metrics", "*"] {
            assert_eq!(get(srv.addr, path).await.status, 404, "{path}");
        }
        for method in ["POST", "PUT", "DELETE", "OPTIONS", "PATCH", "BREW"] {
            let raw = format!("{method} /metrics HTTP/1.1\r\n\r\n");
            let r = exchange(srv.addr, raw.as_bytes()).await;
            assert_eq!(r.status, 405, "{method}");
            assert_eq!(r.header("allow"), Some("GET, HEAD"));
        }
        let bad: &[&[u8]] = &[
            b"GET\r\n\r\n",
            b"GET /metrics\r\n\r\n",
            b"GET  /metrics HTTP/1.1\r\n\r\n",
            b"GET /metrics HTTP/1.1 extra\r\n\r\n",
            b"GET metrics HTTP/1.1\r\n\r\n",
            b"GET /metrics HTTX/1.1\r\n\r\n",
            b"G(T /metrics HTTP/1.1\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nNo colon here\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nBad Name: x\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\n: empty\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nA: nul\0byte\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nA: bare\rcr\r\n\r\n",
            b"GET /m\xc3\xa9trics HTTP/1.1\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
        ];
        for raw in bad {
            let mut s = TcpStream::connect(srv.addr).await.unwrap();
            s.write_all(raw).await.unwrap();
            let r = read_response(&mut s, &mut Vec::new(), false).await.unwrap();
            assert_eq!(r.status, 400, "{:?}", String::from_utf8_lossy(raw));
            assert_eq!(r.header("connection"), Some("close"));
            assert_closed(&mut s).await;
        }
        let r = exchange(srv.addr, b"GET /metrics HTTP/2.0\r\n\r\n").await;
        assert_eq!(r.status, 505);
        let r = exchange(
            srv.addr,
            b"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        )
        .await;
        assert_eq!(r.status, 501);
        let r = exchange(
            srv.addr,
            b"POST /metrics HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n",
        )
        .await;
        assert_eq!(r.status, 413);
        // The server is still fine afterwards.
        assert_eq!(get(srv.addr, "/livez").await.status, 200);
    }

    #[tokio::test]
    async fn dashboard_and_status() {
        let srv = start().await;
        for path in ["/", "/dashboard", "/dashboard?x=1"] {
            let r = get(srv.addr, path).await;
            assert_eq!(r.status, 200, "{path}");
            assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
            assert!(r
                .header("content-security-policy")
                .is_some_and(|c| c.contains("script-src 'self'")));
            assert!(r.body.contains("dashboard.js"));
        }
        let r = get(srv.addr, "/dashboard.js").await;
        assert_eq!(
            r.header("content-type"),
            Some("text/javascript; charset=utf-8")
        );
        assert_eq!(r.body, DASHBOARD_JS);
        // The page never builds elements from markup (store names and prefixes are user input).
        assert!(!DASHBOARD_JS.contains("innerHTML") && !DASHBOARD_JS.contains("outerHTML"));
        assert!(!DASHBOARD_JS.contains("insertAdjacentHTML"));
        let r = get(srv.addr, "/dashboard.css").await;
        assert_eq!(r.header("content-type"), Some("text/css; charset=utf-8"));
        let r = get(srv.addr, "/api/status").await;
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("cache-control"), Some("no-store"));
        assert_eq!(r.body, STATUS_BODY);
        let r = exchange(srv.addr, b"POST /api/status HTTP/1.1\r\n\r\n").await;
        assert_eq!(r.status, 405);
        assert_eq!(get(srv.addr, "/api/nope").await.status, 404);
    }

    #[tokio::test]
    async fn head_sends_headers_only() {
        let srv = start().await;
        let mut s = TcpStream::connect(srv.addr).await.unwrap();
        // A HEAD then a GET on one connection: had HEAD sent a body, the GET would misparse.
        s.write_all(b"HEAD /metrics HTTP/1.1\r\n\r\nGET /livez HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut buf = Vec::new();
        let r = read_response(&mut s, &mut buf, true).await.unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(
            r.header("content-length"),
            Some(METRICS_BODY.len().to_string().as_str())
        );
        let r = read_response(&mut s, &mut buf, false).await.unwrap();
        assert_eq!((r.status, r.body.as_str()), (200, "ok\n"));
        let r = exchange(srv.addr, b"HEAD /nope HTTP/1.1\r\n\r\n").await;
        assert_eq!(r.status, 404);
    }

    #[tokio::test]
    async fn pipelined_keep_alive_requests() {
        let srv = start().await;
        let mut s = TcpStream::connect(srv.addr).await.unwrap();
        // Leading blank lines, a bare-LF request, a body to skip, and a final close.
        let raw = b"\r\nGET /metrics HTTP/1.1\r\nHost: a\r\n\r\n\
                    GET /livez HTTP/1.1\n\n\
                    POST /readyz HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello\
                    GET /nope HTTP/1.1\r\n\r\n\
                    GET /readyz HTTP/1.1\r\nConnection: close\r\n\r\n";
        // Sent in small pieces so requests straddle reads.
        for piece in raw.chunks(7) {
            s.write_all(piece).await.unwrap();
        }
        let mut buf = Vec::new();
        let mut statuses = Vec::new();
        while let Some(r) = read_response(&mut s, &mut buf, false).await {
            statuses.push(r.status);
        }
        assert_eq!(statuses, [200, 200, 405, 404, 200]);

        // Several requests in one write; the connection stays open afterwards.
        let mut s = TcpStream::connect(srv.addr).await.unwrap();
        s.write_all(&b"GET /livez HTTP/1.1\r\n\r\n".repeat(20))
            .await
            .unwrap();
        let mut buf = Vec::new();
        for _ in 0..20 {
            let r = read_response(&mut s, &mut buf, false).await.unwrap();
            assert_eq!((r.status, r.body.as_str()), (200, "ok\n"));
        }
        s.write_all(b"GET /readyz HTTP/1.1\r\n\r\n").await.unwrap();
        let r = read_response(&mut s, &mut buf, false).await.unwrap();
        assert_eq!(r.status, 200);
    }

    #[tokio::test]
    async fn http10_closes_unless_keep_alive() {
        let srv = start().await;
        let mut s = TcpStream::connect(srv.addr).await.unwrap();
        s.write_all(b"GET /livez HTTP/1.0\r\n\r\n").await.unwrap();
        let r = read_response(&mut s, &mut Vec::new(), false).await.unwrap();
        assert_eq!((r.status, r.header("connection")), (200, Some("close")));
        assert_closed(&mut s).await;

        let mut s = TcpStream::connect(srv.addr).await.unwrap();
        s.write_all(
            b"GET /livez HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\nGET /livez HTTP/1.0\r\n\r\n",
        )
        .await
        .unwrap();
        let mut buf = Vec::new();
        let r = read_response(&mut s, &mut buf, false).await.unwrap();
        assert_eq!(r.header("connection"), Some("keep-alive"));
        let r = read_response(&mut s, &mut buf, false).await.unwrap();
        assert_eq!(r.header("connection"), Some("close"));
        assert!(read_response(&mut s, &mut buf, false).await.is_none());
    }

    #[tokio::test]
    async fn oversized_headers_get_431() {
        let srv = start().await;
        // One long header, and many short ones; each over 8 KiB, sent without a terminator
        // and with one.
        let long = format!(
            "GET /metrics HTTP/1.1\r\nX-Long: {}\r\n\r\n",
            "a".repeat(MAX_HEADER_BYTES)
        );
        let many = format!(
            "GET /metrics HTTP/1.1\r\n{}\r\n",
            "X-Short: 0123456789\r\n".repeat(500)
        );
        let endless = "GET /metrics HTTP/1.1\r\n".to_string() + &"X: y\r\n".repeat(3000);
        for raw in [long, many, endless] {
            let mut s = TcpStream::connect(srv.addr).await.unwrap();
            s.write_all(raw.as_bytes()).await.unwrap();
            let r = read_response(&mut s, &mut Vec::new(), false).await.unwrap();
            assert_eq!(r.status, 431);
            assert_eq!(r.header("connection"), Some("close"));
            assert_closed(&mut s).await;
        }
        // Just under the limit is fine.
        let base = "GET /livez HTTP/1.1\r\nX: \r\n\r\n".len();
        let fits = format!(
            "GET /livez HTTP/1.1\r\nX: {}\r\n\r\n",
            "b".repeat(MAX_HEADER_BYTES - base)
        );
        assert_eq!(fits.len(), MAX_HEADER_BYTES);
        assert_eq!(exchange(srv.addr, fits.as_bytes()).await.status, 200);
    }

    #[tokio::test]
    async fn garbage_never_hurts_the_server() {
        let srv = start().await;
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for i in 0..64 {
            let len = (next() % 300) as usize;
            let mut raw: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if i % 2 == 0 {
                raw.extend_from_slice(b"\r\n\r\n");
            }
            let mut s = TcpStream::connect(srv.addr).await.unwrap();
            let _ = s.write_all(&raw).await;
            let _ = s.shutdown().await;
            // Whatever comes back must be a well-formed response or nothing.
            let mut buf = Vec::new();
            if let Some(r) = read_response(&mut s, &mut buf, false).await {
                assert!([400, 404, 405, 431, 505].contains(&r.status), "{r:?}");
            }
        }
        assert_eq!(get(srv.addr, "/metrics").await.body, METRICS_BODY);
    }

    #[test]
    fn parser_survives_random_and_mutated_input() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let valid = b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close\r\nContent-Length: 3\r\n\r\n";
        let alphabet = b" \r\n:\t/?#GETHP1.0,;\x00\x7f\xff";
        for _ in 0..200_000 {
            let mut input = valid.to_vec();
            for _ in 0..(next() % 6) {
                let pos = (next() as usize) % (input.len() + 1);
                let byte = match next() % 3 {
                    0 => next() as u8,
                    _ => alphabet[(next() as usize) % alphabet.len()],
                };
                match next() % 3 {
                    0 if pos < input.len() => input[pos] = byte,
                    1 if pos < input.len() => {
                        input.remove(pos);
                    }
                    _ => input.insert(pos, byte),
                }
            }
            let skip = leading_blank_lines(&input);
            let from = (next() as usize) % (input.len() + 2);
            let _ = find_head_end(&input, from);
            if let Some(end) = find_head_end(&input[skip..], 0) {
                let _ = parse_head(&input[skip..skip + end]);
            }
            let _ = parse_head(&input);
        }
    }

    #[test]
    fn parse_head_details() {
        let r = parse_head(b"GET /readyz#frag HTTP/1.1\r\nconnection: upgrade, CLOSE\r\n\r\n");
        assert_eq!(
            r,
            Ok(Request {
                method: Method::Get,
                route: Route::Readyz,
                keep_alive: false,
                content_length: 0
            })
        );
        let r =
            parse_head(b"HEAD /livez HTTP/1.1\r\nContent-Length:  7 \r\ncontent-length: 7\r\n\r\n");
        assert_eq!(
            r.map(|r| (r.method, r.content_length)),
            Ok((Method::Head, 7))
        );
        assert_eq!(find_head_end(b"GET / HTTP/1.1\r\n\r", 0), None);
        assert_eq!(find_head_end(b"GET / HTTP/1.1\r\n\r\n", 0), Some(18));
        assert_eq!(find_head_end(b"GET / HTTP/1.1\n\nGET", 0), Some(16));
        assert_eq!(leading_blank_lines(b"\r\n\n\r\nGET"), 5);
        assert_eq!(leading_blank_lines(b"\r"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn slowloris_is_cut_off_at_the_deadline() {
        let srv = start().await;
        let mut s = TcpStream::connect(srv.addr).await.unwrap();
        let started = Instant::now();
        let raw = b"GET /metrics HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
        // One byte every two seconds: each read is quick, the head as a whole is not. The
        // client stops as soon as the server answers.
        let mut buf = Vec::new();
        let mut sent = 0;
        for &b in raw.iter() {
            s.write_all(&[b]).await.unwrap();
            sent += 1;
            let mut chunk = [0u8; 1024];
            match timeout(Duration::from_secs(2), s.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => {
                    buf.extend_from_slice(&chunk[..n]);
                    break;
                }
                Ok(other) => panic!("closed without a response: {other:?}"),
                Err(_elapsed) => {}
            }
        }
        assert!(sent < raw.len());
        let r = read_response(&mut s, &mut buf, false).await.unwrap();
        assert_eq!(r.status, 408);
        let elapsed = started.elapsed();
        assert!(elapsed >= READ_TIMEOUT, "{elapsed:?}");
        assert!(
            elapsed <= READ_TIMEOUT + Duration::from_secs(5),
            "{elapsed:?}"
        );
        drop(s);
        assert_eq!(get(srv.addr, "/livez").await.status, 200);
    }

    #[tokio::test(start_paused = true)]
    async fn idle_connection_closes_after_timeout() {
        let srv = start().await;
        let mut s = TcpStream::connect(srv.addr).await.unwrap();
        s.write_all(b"GET /livez HTTP/1.1\r\n\r\n").await.unwrap();
        let mut buf = Vec::new();
        assert_eq!(
            read_response(&mut s, &mut buf, false).await.unwrap().status,
            200
        );
        let idle_from = Instant::now();
        // Silent close (no 408): nothing of a new request had arrived.
        assert!(read_response(&mut s, &mut buf, false).await.is_none());
        let idle = idle_from.elapsed();
        assert!(
            idle >= READ_TIMEOUT && idle < READ_TIMEOUT + Duration::from_secs(1),
            "{idle:?}"
        );
    }

    #[tokio::test]
    async fn connections_over_the_limit_get_503() {
        let srv = start().await;
        let mut held = Vec::new();
        for _ in 0..MAX_CONNECTIONS {
            let mut s = TcpStream::connect(srv.addr).await.unwrap();
            // A request on each proves it is being served (and holds its slot open).
            s.write_all(b"GET /livez HTTP/1.1\r\n\r\n").await.unwrap();
            let r = read_response(&mut s, &mut Vec::new(), false).await.unwrap();
            assert_eq!(r.status, 200);
            held.push(s);
        }
        let mut extra = TcpStream::connect(srv.addr).await.unwrap();
        extra
            .write_all(b"GET /livez HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let r = read_response(&mut extra, &mut Vec::new(), false)
            .await
            .unwrap();
        assert_eq!(r.status, 503);
        assert_eq!(r.header("retry-after"), Some("1"));
        assert_eq!(r.body, "too many connections\n");
        assert_closed(&mut extra).await;

        // Freeing a slot lets new connections in again (once the server has seen the close).
        held.pop();
        let mut served = false;
        for _ in 0..100 {
            if get(srv.addr, "/livez").await.status == 200 {
                served = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(served);
    }

    #[tokio::test]
    async fn shutdown_stops_accepting_and_closes_idle_connections() {
        let srv = start().await;
        let mut idle = TcpStream::connect(srv.addr).await.unwrap();
        idle.write_all(b"GET /livez HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut buf = Vec::new();
        assert_eq!(
            read_response(&mut idle, &mut buf, false)
                .await
                .unwrap()
                .status,
            200
        );

        srv.stop.send(true).unwrap();
        timeout(Duration::from_secs(5), srv.task)
            .await
            .expect("serve returns promptly")
            .unwrap();
        assert!(read_response(&mut idle, &mut buf, false).await.is_none());
        assert!(TcpStream::connect(srv.addr).await.is_err());
    }

    #[tokio::test]
    async fn shutdown_before_start_and_dropped_sender() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let state: Arc<dyn OpsState> = Arc::new(TestState {
            live: AtomicBool::new(true),
            ready: Mutex::new(Ok(())),
        });
        let (tx, rx) = watch::channel(true);
        timeout(Duration::from_secs(5), serve(listener, state.clone(), rx))
            .await
            .unwrap();
        drop(tx);

        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (tx, rx) = watch::channel(false);
        drop(tx);
        timeout(Duration::from_secs(5), serve(listener, state, rx))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn shutdown_mid_request_answers_then_closes() {
        let srv = start().await;
        let mut s = TcpStream::connect(srv.addr).await.unwrap();
        s.write_all(b"GET /livez HTTP/1.1\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        srv.stop.send(true).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        s.write_all(b"\r\n").await.unwrap();
        let mut buf = Vec::new();
        let r = read_response(&mut s, &mut buf, false).await.unwrap();
        assert_eq!((r.status, r.header("connection")), (200, Some("close")));
        assert!(read_response(&mut s, &mut buf, false).await.is_none());
        timeout(Duration::from_secs(5), srv.task)
            .await
            .unwrap()
            .unwrap();
    }
}
