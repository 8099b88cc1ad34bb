"""Starting, waiting for and stopping the servers the compat tests talk to.

Two roles:

  "redis"   the reference: redis-server with `--save '' --appendonly no`.
  "rialto"  the server under test: `$RIALTO_BIN serve --dir DIR --port PORT --bind 127.0.0.1`.
            With COMPAT_TARGET=redis it is another redis-server instead (with an fsync-always
            append-only file, so that restart tests have something durable to check), which is
            how the suite is developed and checked before Rialto's server exists.

Every server gets its own directory under a base temp dir, listens on 127.0.0.1 on a free port
in 20000-32767 (below Linux's ephemeral range, so client sockets never take it), and dies with
the process that started it (PR_SET_PDEATHSIG), so a killed test run leaves nothing behind.

Environment:
  COMPAT_TARGET     rialto (default) | redis
  RIALTO_BIN        the rialto binary (default $CARGO_TARGET_DIR/release/rialto, else target/...)
  RIALTO_ARGS       extra `rialto serve` flags (e.g. "--cache-size 16mb")
  REDIS_SERVER      the redis-server binary (default: redis-server on PATH)
  COMPAT_START_TIMEOUT  seconds to wait for a server's first PONG (default 20)
"""

import ctypes
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
ROLES = ("redis", "rialto")


class ServerError(Exception):
    """A server could not be started, did not answer, or did not stop as expected."""


def target_mode():
    mode = os.environ.get("COMPAT_TARGET", "rialto").strip() or "rialto"
    if mode not in ("rialto", "redis"):
        raise ServerError(f"COMPAT_TARGET must be 'rialto' or 'redis', not {mode!r}")
    return mode


def rialto_bin():
    explicit = os.environ.get("RIALTO_BIN")
    if explicit:
        p = Path(explicit)
        return p if p.is_absolute() else (Path.cwd() / p)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or "target")
    if not target.is_absolute():
        target = REPO / target
    return target / "release" / "rialto"


def redis_bin():
    name = os.environ.get("REDIS_SERVER", "redis-server")
    found = shutil.which(name)
    if not found:
        raise ServerError(
            f"{name} not found; install Redis 7 (apt-get install -y redis-server redis-tools) "
            "or set REDIS_SERVER"
        )
    return found


def redis_version():
    out = subprocess.run([redis_bin(), "--version"], capture_output=True, text=True, check=True).stdout
    # "Redis server v=7.0.15 sha=..."
    for word in out.split():
        if word.startswith("v="):
            return tuple(int(x) for x in word[2:].split(".")[:3])
    raise ServerError(f"cannot parse redis-server --version: {out!r}")


_used_ports = set()


def free_port():
    """A port in 20000-32767 that nothing listens on right now (and this process never handed out)."""
    rng = random.Random()
    for _ in range(1000):
        port = rng.randrange(20000, 32768)
        if port in _used_ports:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((HOST, port))
            except OSError:
                continue
        _used_ports.add(port)
        return port
    raise ServerError("no free port found in 20000-32767")


try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - not Linux
    _libc = None


def _die_with_parent():
    # PR_SET_PDEATHSIG = 1: the server gets SIGKILL when the thread that started it dies, so
    # nothing outlives a test run that was itself killed.
    if _libc is not None:
        _libc.prctl(1, signal.SIGKILL)


class Server:
    """One running server process."""

    def __init__(self, role, impl, name, port, data_dir, log_path, argv, password, proc):
        self.role = role  # "redis" | "rialto" (what the tests asked for)
        self.impl = impl  # "redis-server" | "rialto" (what actually runs)
        self.name = name
        self.host = HOST
        self.port = port
        self.dir = data_dir
        self.log_path = log_path
        self.argv = argv
        self.password = password
        self.proc = proc

    def __repr__(self):
        return f"<{self.name}: {self.impl} on {self.host}:{self.port} pid {self.proc.pid}>"

    @property
    def is_rialto(self):
        return self.impl == "rialto"

    def alive(self):
        return self.proc.poll() is None

    def output(self, limit=6000):
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as e:
            return f"<cannot read {self.log_path}: {e}>"
        if len(text) > limit:
            text = "...\n" + text[-limit:]
        return text

    def describe(self):
        status = "running" if self.alive() else f"exited with status {self.proc.returncode}"
        return (
            f"{self.name} ({self.impl}, port {self.port}, pid {self.proc.pid}, {status})\n"
            f"command: {' '.join(repr(a) if (not a or ' ' in a) else a for a in self.argv)}\n"
            f"output ({self.log_path}):\n{self.output()}"
        )

    def wait_exit(self, timeout=10.0):
        """Waits for the process to exit by itself; returns its status or raises ServerError."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise ServerError(f"{self.name} did not exit within {timeout}s\n{self.describe()}") from None

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        """Sends `sig` (if still running) and waits; SIGKILL after `timeout`. Returns the status."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(sig)
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
            except ProcessLookupError:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        return self.proc.wait()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        return self.proc.wait()

    def client(self, **kwargs):
        """A redis-py client (decode_responses off unless asked)."""
        import redis

        kwargs.setdefault("socket_timeout", 30)
        kwargs.setdefault("socket_connect_timeout", 5)
        if self.password is not None:
            kwargs.setdefault("password", self.password)
        return redis.Redis(host=self.host, port=self.port, **kwargs)

    def conn(self, timeout=10.0):
        """A raw RESP connection (tests/compat/resp.py)."""
        from resp import Connection

        return Connection(self.host, self.port, timeout)


def _ping(port, timeout=0.5):
    """True once the server answers PING with +PONG (or -NOAUTH: it is up, just locked)."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as s:
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            data = b""
            while not data.endswith(b"\r\n"):
                chunk = s.recv(256)
                if not chunk:
                    return False
                data += chunk
            return data.startswith(b"+PONG") or data.startswith(b"-NOAUTH")
    except OSError:
        return False


def _argv(impl, role, port, data_dir, password, args=()):
    if impl == "rialto":
        binary = rialto_bin()
        if not binary.exists():
            raise ServerError(
                f"rialto binary {binary} does not exist: build it (cargo build --release -p rialto), "
                "set RIALTO_BIN, or run against Redis only with COMPAT_TARGET=redis"
            )
        argv = [str(binary), "serve", "--dir", str(data_dir), "--port", str(port), "--bind", HOST]
        if password is not None:
            argv += ["--requirepass", password]
        return argv + list(args) + shlex.split(os.environ.get("RIALTO_ARGS", ""))
    argv = [redis_bin(), "--port", str(port), "--bind", HOST, "--dir", str(data_dir), "--save", ""]
    argv += ["--daemonize", "no", "--logfile", "", "--protected-mode", "no"]
    if role == "rialto":
        # Standing in for Rialto, which is always durable: fsync every write to the AOF, so
        # SHUTDOWN/SIGTERM + restart keeps every key and TTL.
        argv += ["--appendonly", "yes", "--appendfsync", "always"]
    else:
        argv += ["--appendonly", "no"]
    if password is not None:
        argv += ["--requirepass", password]
    return argv


_counter = 0


def start(role, base_dir, data_dir=None, password=None, name=None, timeout=None, args=()):
    """Starts a server for `role` ("redis" or "rialto") and waits until it answers PING.

    `data_dir` reuses a directory (restart tests); otherwise a fresh one is made under base_dir.
    `args` are extra `rialto serve` flags (not given to redis-server).
    Raises ServerError, with the server's output, if it exits or stays silent.
    """
    global _counter
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, not {role!r}")
    impl = "rialto" if role == "rialto" and target_mode() == "rialto" else "redis-server"
    if timeout is None:
        timeout = float(os.environ.get("COMPAT_START_TIMEOUT", "20"))
    _counter += 1
    name = name or f"{role}-{_counter}"
    base_dir = Path(base_dir)
    if data_dir is None:
        data_dir = base_dir / name / "data"
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    last_error = None
    for attempt in range(3):
        port = free_port()
        argv = _argv(impl, role, port, data_dir, password, args)
        log_path = data_dir.parent / f"{name}.{attempt}.{port}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=str(data_dir.parent),
                preexec_fn=_die_with_parent,
                start_new_session=True,
            )
        server = Server(role, impl, name, port, data_dir, log_path, argv, password, proc)
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                out = server.output()
                if "in use" in out.lower() and attempt < 2:
                    last_error = ServerError(f"port {port} taken:\n{server.describe()}")
                    break  # retry on another port
                raise ServerError(f"{name} exited before answering PING\n{server.describe()}")
            if _ping(port):
                return server
            if time.monotonic() > deadline:
                server.kill()
                raise ServerError(f"{name} did not answer PING on {HOST}:{port} within {timeout:.0f}s\n{server.describe()}")
            time.sleep(0.02)
    raise last_error
