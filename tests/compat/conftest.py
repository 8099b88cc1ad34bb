"""Fixtures for the Redis-compatibility suite (run it with scripts/compat-tests.sh).

Every test that takes `server` (or a client built on it) runs twice, against a fresh redis-server
("redis") and a fresh Rialto ("rialto"), each in its own temp dir on its own free port; tests that
take `r` run for RESP2 and RESP3 clients too. `pair` gives a reference Redis and the server under
test side by side, for tests that compare results. With COMPAT_TARGET=redis the "rialto" side is
another redis-server (see servers.py), so the whole suite runs before Rialto's server exists.
"""

import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

sys.dont_write_bytecode = True  # no __pycache__ in the tree (nor beside crates/resp/tests/redis_replay.py)
sys.path.insert(0, str(Path(__file__).resolve().parent))

import servers  # noqa: E402

PROTOCOLS = (2, 3)


def _terminate(signum, frame):
    # SIGTERM (scripts/compat-tests.sh's cleanup) stops the run like Ctrl-C: fixtures tear down and
    # kill their servers.
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config):
    signal.signal(signal.SIGTERM, _terminate)


def pytest_report_header(config):
    mode = servers.target_mode()
    try:
        redis_v = ".".join(map(str, servers.redis_version()))
    except Exception as e:  # noqa: BLE001 - reported in the header, fails later with a clear error
        redis_v = f"unavailable ({e})"
    rialto = "redis-server stand-in (COMPAT_TARGET=redis)" if mode == "redis" else str(servers.rialto_bin())
    return [f"compat: reference redis-server {redis_v}; server under test: {rialto}"]


def pytest_sessionstart(session):
    try:
        version = servers.redis_version()
        mode = servers.target_mode()
    except Exception as e:  # noqa: BLE001
        pytest.exit(f"error: compat tests need redis-server 7: {e}", returncode=2)
    if version[0] < 7:
        pytest.exit(f"error: compat tests need redis-server 7, found {'.'.join(map(str, version))}", returncode=2)
    if mode == "rialto" and not servers.rialto_bin().exists():
        pytest.exit(
            f"error: rialto binary {servers.rialto_bin()} does not exist: build it with "
            "`cargo build --release -p rialto`, set RIALTO_BIN, or set COMPAT_TARGET=redis "
            "to run both sides against redis-server",
            returncode=2,
        )
    if mode == "rialto":
        # One trial start, so that a server that cannot start fails the run once, with its output,
        # rather than every test.
        probe_dir = tempfile.mkdtemp(prefix="rialto-compat-probe-", dir=os.environ.get("COMPAT_TMPDIR") or None)
        try:
            servers.start("rialto", probe_dir, name="startup-check").kill()
        except servers.ServerError as e:
            pytest.exit(f"error: the server under test does not start:\n{e}", returncode=2)
        finally:
            shutil.rmtree(probe_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def base_dir():
    """One temp dir per session holding every server's data dir and log."""
    parent = os.environ.get("COMPAT_TMPDIR") or None
    d = Path(tempfile.mkdtemp(prefix="rialto-compat-", dir=parent))
    yield d
    if not os.environ.get("COMPAT_KEEP_TMP"):
        shutil.rmtree(d, ignore_errors=True)


class _Servers:
    """Starts servers for one test or module and stops them all at teardown."""

    def __init__(self, base_dir):
        self.base_dir = base_dir
        self.started = []

    def __call__(self, role, data_dir=None, password=None, name=None, args=()):
        try:
            s = servers.start(role, self.base_dir, data_dir=data_dir, password=password, name=name, args=args)
        except servers.ServerError as e:
            pytest.fail(str(e), pytrace=False)
        self.started.append(s)
        return s

    def stop_all(self):
        # The tests are done with their data: SIGKILL is quickest (and the restart tests stop
        # their servers themselves, with SHUTDOWN or SIGTERM).
        for s in self.started:
            s.kill()


@pytest.fixture
def start_server(base_dir):
    """Factory: start_server("redis"|"rialto", data_dir=None, password=None) -> servers.Server.

    Waits until PING answers (failing the test with the server's output if it does not); every
    server it started is stopped when the test ends."""
    pool = _Servers(base_dir)
    yield pool
    pool.stop_all()


@pytest.fixture(scope="module")
def start_module_server(base_dir):
    """Like start_server, for module-scoped servers."""
    pool = _Servers(base_dir)
    yield pool
    pool.stop_all()


@pytest.fixture(params=servers.ROLES)
def target(request):
    """"redis" or "rialto": which server the test runs against."""
    return request.param


@pytest.fixture
def server(target, start_server):
    """A fresh server of the parametrised kind."""
    return start_server(target)


@pytest.fixture(params=PROTOCOLS, ids=lambda p: f"resp{p}")
def protocol(request):
    return request.param


@pytest.fixture
def r(server, protocol):
    """A redis-py client (bytes replies) speaking RESP2 or RESP3 to a fresh server."""
    client = server.client(protocol=protocol)
    yield client
    client.close()


@pytest.fixture
def pair(start_server, protocol):
    """(reference Redis client, server-under-test client), same protocol, both fresh."""
    ref = start_server("redis").client(protocol=protocol)
    tgt = start_server("rialto").client(protocol=protocol)
    yield ref, tgt
    ref.close()
    tgt.close()
