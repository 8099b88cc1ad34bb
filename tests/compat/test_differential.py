"""A short run of differential.py: seeded random command streams, Redis vs the server under test,
replies compared byte for byte (RESP2, and RESP3 after HELLO 3).

COMPAT_DIFF_SEEDS (default "1,2,3,4") and COMPAT_DIFF_COMMANDS (default 10000) scale it; for long runs
use the CLI (`differential.py --seed N --commands 100000 --redis-port P --rialto-port Q`).

The last test checks the harness itself: a proxy that plants a bug (SET of k3 lands on another
key) must be caught and shrunk to a reproducer of a few commands.
"""

import os
import socket
import threading

import pytest

import differential
import servers
from resp import Reader, encode_command

SEEDS = [int(s) for s in os.environ.get("COMPAT_DIFF_SEEDS", "1,2,3,4").split(",") if s.strip()]
COMMANDS = int(os.environ.get("COMPAT_DIFF_COMMANDS", "10000"))


@pytest.fixture(scope="module")
def diff_servers(start_module_server):
    return start_module_server("redis"), start_module_server("rialto")


@pytest.mark.parametrize("stream", ["resp2", "resp3"])
@pytest.mark.parametrize("seed", SEEDS)
def test_differential(diff_servers, seed, stream):
    ref, tgt = diff_servers
    lines = []
    found = differential.run_differential(
        seed, COMMANDS, (ref.host, ref.port), (tgt.host, tgt.port), [stream], log=lines.append, budget_seconds=60
    )
    for s in (ref, tgt):
        assert s.alive(), f"server died during the differential run\n{s.describe()}"
    assert not found, "\n".join(lines)


class RewritingProxy:
    """TCP proxy to a server that rewrites each request with `rewrite(args) -> args`."""

    def __init__(self, port, rewrite):
        self.target_port, self.rewrite = port, rewrite
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((servers.HOST, 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.closing = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closing:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection((servers.HOST, self.target_port))
            threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._replies, args=(upstream, client), daemon=True).start()

    def _requests(self, client, upstream):
        reader = Reader()
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                reader.feed(data)
                out = []
                while (got := reader.next()) is not None:
                    args = [a.value for a in got[1].value]
                    out.append(encode_command(self.rewrite(args)))
                upstream.sendall(b"".join(out))
        except OSError:
            pass
        finally:
            _shut(upstream)

    def _replies(self, upstream, client):
        try:
            while data := upstream.recv(65536):
                client.sendall(data)
        except OSError:
            pass
        finally:
            _shut(client)

    def close(self):
        self.closing = True
        self.listener.close()


def _shut(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


def test_harness_catches_and_shrinks_a_planted_bug(start_server):
    ref, other = start_server("redis"), start_server("redis")

    def plant(args):
        if args[0].upper() == b"SET" and len(args) > 1 and args[1] == b"k3":
            return [args[0], b"planted"] + args[2:]
        return args

    proxy = RewritingProxy(other.port, plant)
    lines = []
    try:
        found = differential.run_differential(
            1, 3000, (ref.host, ref.port), (servers.HOST, proxy.port), ["resp2"], log=lines.append, budget_seconds=60
        )
    finally:
        proxy.close()
    report = "\n".join(lines)
    assert found, "the planted bug went unnoticed:\n" + report
    _, mismatch, repro = found[0]
    assert "MISMATCH seed=1 stream=resp2 command #" in report
    assert repro is not None and 1 <= len(repro) <= 3, report
    assert any(c[0].upper() == b"SET" and c[1] == b"k3" for c in repro), report
