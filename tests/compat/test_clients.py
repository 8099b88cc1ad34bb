"""Real client libraries against the server: Jedis 5 and Lettuce 6 (Java), go-redis v9 (Go).

What these libraries build on -- MULTI/EXEC, WATCH, DISCARD, EXECABORT, pipelining, EVAL/EVALSHA/
SCRIPT LOAD, pub/sub, client-side caching (CLIENT TRACKING + RESP3 invalidation pushes) -- used
the way applications use it, through each library's own API, over RESP2 and RESP3.

The checks live in two small programs under clients/ (java/: a Maven project with Jedis and
Lettuce; go/: a Go module with go-redis), each run as `PROGRAM HOST PORT SCENARIO`, printing `OK`
or `FAIL: reason`. They are built on first use into ${CARGO_TARGET_DIR:-target}/compat-clients/
(Maven fills ~/.m2 and Go its module cache the first time) and rebuilt when their sources change.
Each scenario is one test per server (a fresh redis-server and a fresh Rialto), so a failure names
the library, the feature and the protocol. Every scenario was checked against redis-server 7.0.15.

Skipped, with the reason, when java/mvn (or go) are not installed, or when COMPAT_CLIENTS=0.
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import servers

CLIENTS = Path(__file__).resolve().parent / "clients"
JAVA_PROJECT = CLIENTS / "java"
GO_PROJECT = CLIENTS / "go"

# Seconds. A scenario stops itself after 10 s (and each wait inside it is bounded by 5 s); this is
# the backstop for a program that does not.
RUN_TIMEOUT = 30
BUILD_TIMEOUT = 900

JAVA_MAIN = "rialto.compat.ClientChecks"
# Fewer JIT threads and a small heap: the scenarios are short and the machine is shared.
JVM_FLAGS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-XX:-UsePerfData"]


def _protocols(*names):
    return [f"{n}_resp{p}" for p in (2, 3) for n in names]


# The scenarios, as `PROGRAM list` prints them (test_scenario_lists checks that they agree).
JEDIS = _protocols(
    "jedis_multi",  # MULTI SET/INCR/INCRBY/GET/EXISTS, exec() results and Response<T>s; empty transaction
    "jedis_watch",  # WATCH + a write from another connection: exec() null; UNWATCH; EXEC unwatches
    "jedis_discard",  # DISCARD drops the queue; EXEC/DISCARD without MULTI
    "jedis_execabort",  # wrong-arity / unknown command queued: EXECABORT; runtime error inside EXEC
    "jedis_pipeline",  # 200 pipelined SETs, an error reply mid-pipeline, syncAndReturnAll
    "jedis_scripting",  # EVAL of a 2-key script, SCRIPT LOAD/EXISTS/FLUSH, EVALSHA, NOSCRIPT, conversions
    "jedis_pubsub",  # JedisPubSub on a thread: ordered messages, PSUBSCRIBE, UNSUBSCRIBE, counts
)
LETTUCE = _protocols(
    "lettuce_multi",  # sync multi()/exec(), TransactionResult, queued writes invisible until EXEC
    "lettuce_watch",  # WATCH conflict -> wasDiscarded(); optimistic retry; UNWATCH
    "lettuce_pipeline",  # async, autoflush off: 1000 SETs then 1000 GETs per flushCommands()
    "lettuce_scripting",  # eval/evalsha with MULTI/INTEGER/STATUS/VALUE/BOOLEAN outputs, NOSCRIPT
    "lettuce_pubsub",  # StatefulRedisPubSubConnection + listener: messages, patterns, unsubscribe
) + [
    "lettuce_client_side_caching_resp3",  # ClientSideCaching over CLIENT TRACKING: invalidation pushes
]
GO_REDIS = _protocols(
    "goredis_txpipelined",  # TxPipelined results; runtime error in EXEC; EXECABORT; plain Pipelined
    "goredis_watch",  # Watch: forced TxFailedErr, then 10 goroutines x 10 optimistic increments
    "goredis_scripting",  # Eval/EvalSha/ScriptLoad/ScriptExists, Script.Run falling back to EVAL
    "goredis_pubsub",  # Subscribe/PSubscribe via Channel(), Publish counts, Unsubscribe, Close
)
JAVA_SCENARIOS = JEDIS + LETTUCE
GO_SCENARIOS = GO_REDIS

# Scenarios that need what Rialto does not serve yet, with what is missing. Such a scenario is an
# expected failure on Rialto; once it passes, the test fails until it is removed from here.
PENDING_ON_RIALTO: dict = {}


def _cache_dir():
    target = Path(os.environ.get("CARGO_TARGET_DIR") or "target")
    if not target.is_absolute():
        target = servers.REPO / target
    return target / "compat-clients"


def _source_hash(project, tool_version):
    """A hash of the project's sources (and the toolchain's version): the build is redone when it changes."""
    h = hashlib.sha256(tool_version.encode())
    for p in sorted(project.rglob("*")):
        rel = p.relative_to(project)
        if p.is_file() and rel.parts[0] != "target":
            h.update(str(rel).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def _tool_version(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"<{e}>"
    return (out.stdout + out.stderr).strip()


class _Program:
    """A built client program: `argv(host, port, scenario)` runs one scenario."""

    def __init__(self, prefix, build_seconds, cached):
        self.prefix = prefix
        self.build_seconds = build_seconds
        self.cached = cached

    def argv(self, *args):
        return self.prefix + [str(a) for a in args]


def _build(name, project, tools, tool_version_argv, build_argv, artifact, prefix):
    """Builds `project` into the cache unless an up-to-date build is there; returns a _Program.

    Skips when a tool is missing or COMPAT_CLIENTS=0; fails (once per session, see the fixtures)
    when the build itself fails."""
    if os.environ.get("COMPAT_CLIENTS", "1").strip() in ("0", "no", "off", "false"):
        pytest.skip("client-library tests disabled (COMPAT_CLIENTS=0)")
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{name} client tests need {' and '.join(missing)} on PATH (not found)")
    out = _cache_dir() / name
    out.parent.mkdir(parents=True, exist_ok=True)
    stamp = out / ".source-hash"
    digest = _source_hash(project, _tool_version(tool_version_argv))
    with open(out.parent / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time, across concurrent runs
        if stamp.exists() and stamp.read_text() == digest and artifact(out).exists():
            return _Program(prefix(out), 0.0, cached=True)
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        log = out / "build.log"
        started = time.monotonic()
        try:
            proc = subprocess.run(
                build_argv(out),
                cwd=project,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=BUILD_TIMEOUT,
            )
            output = proc.stdout.decode(errors="replace")
            status = proc.returncode
        except subprocess.TimeoutExpired as e:
            output = (e.output or b"").decode(errors="replace") + f"\n<timed out after {BUILD_TIMEOUT}s>"
            status = "timeout"
        elapsed = time.monotonic() - started
        log.write_text(output)
        if status != 0 or not artifact(out).exists():
            raise RuntimeError(
                f"building the {name} client checks failed (status {status}, {elapsed:.1f}s):\n"
                f"$ {' '.join(build_argv(out))}   (in {project})\n{output[-6000:]}"
            )
        stamp.write_text(digest)
        return _Program(prefix(out), elapsed, cached=False)


_built = {}


def _once(key, builder):
    """Runs `builder` once per session and replays its outcome (a program, a skip or a build failure
    with its output) to every test that needs it."""
    if key not in _built:
        try:
            _built[key] = ("ok", builder())
        except pytest.skip.Exception as e:
            _built[key] = ("skip", str(e))
        except RuntimeError as e:
            _built[key] = ("fail", str(e))
    kind, value = _built[key]
    if kind == "skip":
        pytest.skip(value)
    if kind == "fail":
        pytest.fail(value, pytrace=False)
    return value


@pytest.fixture(scope="session")
def java_clients():
    """The Jedis + Lettuce program (Maven: compile + copy-dependencies into the cache)."""
    return _once(
        "java",
        lambda: _build(
            "java",
            JAVA_PROJECT,
            tools=("java", "mvn"),
            tool_version_argv=["java", "-version"],
            build_argv=lambda out: [
                "mvn", "-B", "-q", "-Dstyle.color=never", "compile", "dependency:copy-dependencies",
                f"-Dcompat.out={out}",
            ],
            artifact=lambda out: out / "classes" / "rialto" / "compat" / "ClientChecks.class",
            prefix=lambda out: ["java", *JVM_FLAGS, "-cp", f"{out / 'classes'}:{out / 'lib'}/*", JAVA_MAIN],
        ),
    )


@pytest.fixture(scope="session")
def go_clients():
    """The go-redis program (go build into the cache)."""
    return _once(
        "go",
        lambda: _build(
            "go",
            GO_PROJECT,
            tools=("go",),
            tool_version_argv=["go", "version"],
            build_argv=lambda out: ["go", "build", "-buildvcs=false", "-o", str(out / "go-clients"), "."],
            artifact=lambda out: out / "go-clients",
            prefix=lambda out: [str(out / "go-clients")],
        ),
    )


def _run(program, server, scenario):
    argv = program.argv(server.host, server.port, scenario)
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(
            f"{scenario} did not finish within {RUN_TIMEOUT}s\n$ {' '.join(argv)}\n"
            f"stdout: {e.stdout!r}\nstderr: {e.stderr!r}\n{server.describe()}",
            pytrace=False,
        )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode == 0 and lines == ["OK"]:
        return
    verdict = lines[-1] if lines else "(no output)"
    detail = [f"{scenario} against {server.impl}: {verdict}", f"$ {' '.join(argv)}  -> exit status {proc.returncode}"]
    if len(lines) > 1:
        detail.append("stdout:\n" + proc.stdout[-3000:])
    if proc.stderr.strip():
        detail.append("stderr:\n" + proc.stderr[-3000:])
    if not server.alive():
        detail.append(server.describe())
    pytest.fail("\n".join(detail), pytrace=False)


# Fixture order matters: the program is built before the server starts.


def _check(program, server, scenario):
    pending = PENDING_ON_RIALTO.get(scenario) if server.is_rialto else None
    if pending is None:
        _run(program, server, scenario)
        return
    try:
        _run(program, server, scenario)
    except pytest.fail.Exception:
        pytest.xfail(pending)
    pytest.fail(f"{scenario} now passes on Rialto: remove it from PENDING_ON_RIALTO", pytrace=False)


@pytest.mark.parametrize("scenario", JAVA_SCENARIOS)
def test_java_client(java_clients, server, scenario):
    _check(java_clients, server, scenario)


@pytest.mark.parametrize("scenario", GO_SCENARIOS)
def test_go_client(go_clients, server, scenario):
    _check(go_clients, server, scenario)


@pytest.mark.parametrize("lang", ["java", "go"])
def test_scenario_lists(request, lang):
    """The scenario lists above are the programs' own (`PROGRAM list`)."""
    program = request.getfixturevalue(f"{lang}_clients")
    want = JAVA_SCENARIOS if lang == "java" else GO_SCENARIOS
    proc = subprocess.run(program.argv("list"), capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == want
