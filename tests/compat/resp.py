"""Minimal RESP2/RESP3 client plumbing for the compat tests: request encoding and a reply reader
that returns both the exact bytes of each reply and a decoded value.

Decoded values are `Reply(kind, value)` where `kind` is the RESP type byte as a one-character
string and `value` is:

    '+' '-' '(' '!' '='  bytes (blob error / verbatim text include their headers, e.g. b"txt:...")
    ':'                  int
    '$'                  bytes, or None for the RESP2 null bulk ($-1)
    '*' '~' '>'          list of Reply, or None for the RESP2 null array (*-1)
    '%' '|'              list of (Reply, Reply) pairs
    '_'                  None
    ','                  bytes (the double exactly as sent)
    '#'                  bool

No dependency beyond the standard library, so differential.py runs with any python3.
"""

import socket

CRLF = b"\r\n"


class ProtocolError(Exception):
    """The peer sent something that is not RESP."""


class ConnectionClosed(Exception):
    """The peer closed the connection (possibly in the middle of a reply)."""


class Reply:
    __slots__ = ("kind", "value")

    def __init__(self, kind, value):
        self.kind = kind
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Reply) and (self.kind, self.value) == (other.kind, other.value)

    def __hash__(self):
        return hash((self.kind, repr(self.value)))

    def __repr__(self):
        return f"Reply({self.kind!r}, {self.value!r})"

    @property
    def is_error(self):
        return self.kind in ("-", "!")

    @property
    def is_null(self):
        return self.kind == "_" or (self.kind in ("$", "*") and self.value is None)

    def text(self):
        """The payload of a string-like reply as bytes; verbatim strings lose their `xxx:`."""
        if self.kind == "=":
            return self.value[4:]
        return self.value


def encode_command(args):
    """Encodes one command (a list of bytes/str/int) as a RESP multibulk request."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n" % len(a))
        out.append(a)
        out.append(CRLF)
    return b"".join(out)


class _Incomplete(Exception):
    pass


class Reader:
    """Parses replies out of a growing buffer; `feed` bytes, then `next()` until it returns None."""

    def __init__(self):
        self.buf = bytearray()
        self.pos = 0

    def feed(self, data):
        if self.pos and self.pos == len(self.buf):
            self.buf.clear()
            self.pos = 0
        self.buf += data

    def next(self):
        """Returns (raw_bytes, Reply) for the next complete reply, or None if more bytes are needed."""
        start = self.pos
        try:
            reply, end = self._parse(start)
        except _Incomplete:
            return None
        self.pos = end
        raw = bytes(self.buf[start:end])
        if end > (1 << 20) and end == len(self.buf):
            self.buf.clear()
            self.pos = 0
        return raw, reply

    def _line(self, pos):
        end = self.buf.find(CRLF, pos)
        if end < 0:
            if len(self.buf) - pos > (1 << 20):
                raise ProtocolError("line longer than 1 MiB without CRLF")
            raise _Incomplete
        return bytes(self.buf[pos:end]), end + 2

    def _int(self, text):
        try:
            return int(text)
        except ValueError:
            raise ProtocolError(f"bad integer {text!r}") from None

    def _bulk(self, pos, n):
        if len(self.buf) < pos + n + 2:
            raise _Incomplete
        if self.buf[pos + n : pos + n + 2] != CRLF:
            raise ProtocolError("bulk payload not followed by CRLF")
        return bytes(self.buf[pos : pos + n]), pos + n + 2

    def _parse(self, pos):
        if pos >= len(self.buf):
            raise _Incomplete
        kind = chr(self.buf[pos])
        line, pos = self._line(pos + 1)
        if kind in "+-(":
            return Reply(kind, line), pos
        if kind == ",":
            return Reply(kind, line), pos
        if kind == ":":
            return Reply(kind, self._int(line)), pos
        if kind == "_":
            if line:
                raise ProtocolError("null with payload")
            return Reply(kind, None), pos
        if kind == "#":
            if line not in (b"t", b"f"):
                raise ProtocolError(f"bad boolean {line!r}")
            return Reply(kind, line == b"t"), pos
        if kind in "$!=":
            n = self._int(line)
            if n < 0:
                if kind == "$" and n == -1:
                    return Reply(kind, None), pos
                raise ProtocolError(f"bad length {n}")
            data, pos = self._bulk(pos, n)
            return Reply(kind, data), pos
        if kind in "*~>":
            n = self._int(line)
            if n < 0:
                if kind == "*" and n == -1:
                    return Reply(kind, None), pos
                raise ProtocolError(f"bad count {n}")
            items = []
            for _ in range(n):
                item, pos = self._parse(pos)
                items.append(item)
            return Reply(kind, items), pos
        if kind in "%|":
            n = self._int(line)
            if n < 0:
                raise ProtocolError(f"bad count {n}")
            pairs = []
            for _ in range(n):
                k, pos = self._parse(pos)
                v, pos = self._parse(pos)
                pairs.append((k, v))
            if kind == "|":
                # An attribute precedes the reply it annotates; keep both.
                inner, pos = self._parse(pos)
                return Reply("|", (pairs, inner)), pos
            return Reply(kind, pairs), pos
        raise ProtocolError(f"unknown reply type byte {kind!r}")


class Connection:
    """One blocking TCP connection that sends raw commands and reads (raw, Reply) pairs."""

    def __init__(self, host, port, timeout=10.0):
        self.host, self.port, self.timeout = host, port, timeout
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = Reader()
        self.closed = False

    def send(self, data):
        self.sock.sendall(data)

    def send_command(self, args):
        self.send(encode_command(args))

    def read_reply(self):
        """Returns (raw, Reply). Raises ConnectionClosed, socket.timeout or ProtocolError."""
        while True:
            got = self.reader.next()
            if got is not None:
                return got
            try:
                chunk = self.sock.recv(1 << 20)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.closed = True
                raise ConnectionClosed(
                    "connection closed"
                    + (f" with {len(self.reader.buf) - self.reader.pos} unparsed bytes" if len(self.reader.buf) > self.reader.pos else "")
                )
            self.reader.feed(chunk)

    def call(self, *args):
        self.send_command(list(args))
        return self.read_reply()[1]

    def wait_closed(self, timeout=2.0):
        """True if the peer closes the connection (sending nothing more) within `timeout`."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False
        finally:
            self.sock.settimeout(self.timeout)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
        self.closed = True
