"""Cluster clients, unmodified, against a 3-node cluster: Jedis's JedisCluster, Lettuce's
RedisClusterClient (ReadFrom.REPLICA, adaptive topology refresh) and go-redis's ClusterClient
(ReadOnly, RouteByLatency), each given one seed address.

Each client runs two scenarios of the programs under clients/ (`PROGRAM cluster HOST PORT SCENARIO`,
built as in test_clients.py):

  <client>_cluster           SET/GET of many keys over every slot range; MSET/MGET of one hash tag;
                             a pipeline of INCRs over every range, each reply exact; reads checked
                             on the servers (each node process's cmdstat_get) to land where the
                             client routes them: replicas only for Jedis's executeCommandToReplica
                             and Lettuce's ReadFrom.REPLICA, masters only for Jedis's plain reads,
                             and for go-redis's RouteByLatency exactly the addresses it chose, some
                             of them replicas.
  <client>_cluster_failover  the client INCRs one counter; once it prints `ready` this module kills
                             the counter's master with SIGKILL and says `killed` on its stdin; the
                             client goes on until writes are acknowledged again. No acknowledged
                             write may be lost: the final value lies between the acknowledged writes
                             and those plus the failures whose outcome is unknown. The node is then
                             started again.

One cluster (scripts/cluster.sh: 3 Kafka brokers, 3 Rialto nodes, 3 partitions) serves the module,
on ports COMPAT_CLUSTER_CLIENTS_PORT (default 28000; node I serves partition p at PORT + 100 * (I - 1)
+ p) and COMPAT_CLUSTER_CLIENTS_KAFKA_PORT (default 19192, and the next 3), apart from test_cluster.py's.

Skipped with COMPAT_TARGET=redis or COMPAT_CLIENTS=0, without Java and Maven (Kafka's jars come from
Maven Central; Jedis and Lettuce), and for go-redis without Go.
"""

import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
import redis
from redis.crc import key_slot

import servers
from test_clients import go_clients, java_clients  # noqa: F401 - the session's client builds

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "cluster.sh"
BASE = int(os.environ.get("COMPAT_CLUSTER_CLIENTS_PORT", "28000"))
KAFKA = int(os.environ.get("COMPAT_CLUSTER_CLIENTS_KAFKA_PORT", "19192"))
NODES = 3
PARTITIONS = 3

# Seconds. A scenario stops itself after 100 s; these are the backstops.
RUN_TIMEOUT = 120
READY_TIMEOUT = 60

# client -> (program fixture, seed node, counter key of the failover scenario)
CLIENTS = {
    "jedis": ("java_clients", 1, "jedis:failover"),
    "lettuce": ("java_clients", 2, "lettuce:failover"),
    "goredis": ("go_clients", 3, "goredis:failover"),
}

# Scenarios that fail on Rialto for a reason in Rialto, with that reason: an expected failure; once
# it passes, the test fails until it is removed from here.
PENDING_ON_RIALTO = {}

pytestmark = [
    pytest.mark.skipif(servers.target_mode() == "redis", reason="cluster mode is Rialto's (COMPAT_TARGET=redis)"),
    pytest.mark.skipif(not (shutil.which("java") and shutil.which("mvn")),
                       reason="a cluster needs java and mvn on PATH (Kafka's jars come from Maven Central)"),
]


class Cluster:
    def __init__(self, d):
        self.dir = d

    def run(self, *args, check=True):
        return subprocess.run(["bash", str(SCRIPT), *args, "--dir", self.dir], check=check,
                              capture_output=True, text=True, timeout=300)

    @staticmethod
    def port(node, partition=0):
        return BASE + 100 * (node - 1) + partition

    @staticmethod
    def node_of(port):
        return (port - BASE) // 100 + 1

    def slots(self, node):
        c = redis.Redis(port=self.port(node), socket_timeout=5)
        try:
            return sorted((lo, hi, m[1], sorted(r[1] for r in rs))
                          for lo, hi, m, *rs in c.execute_command("CLUSTER SLOTS"))
        finally:
            c.close()

    def master_node(self, key, ask=1):
        slot = key_slot(key.encode())
        return next(self.node_of(m) for lo, hi, m, _ in self.slots(ask) if lo <= slot <= hi)

    def settled(self, nodes=(1, 2, 3), timeout=60.0):
        """Waits until `nodes` agree on slots that cover 0-16383, each with a master and a replica
        on every other live node, and still do a second later."""
        end = time.time() + timeout
        last = None
        while time.time() < end:
            try:
                views = [self.slots(n) for n in nodes]
                ok = (all(v == views[0] for v in views)
                      and [(lo, hi) for lo, hi, _, _ in views[0]] == [(0, 5460), (5461, 10921), (10922, 16383)]
                      and all(len(rs) == len(nodes) - 1 for _, _, _, rs in views[0]))
            except redis.RedisError:
                ok = False
                views = None
            if ok and views[0] == last:
                return
            last = views[0] if ok else None
            time.sleep(1.0 if ok else 0.2)
        raise AssertionError(f"the cluster did not settle in {timeout:.0f} s: {last or views}")


@pytest.fixture(scope="module")
def cluster():
    d = tempfile.mkdtemp(prefix="rialto-cluster-clients.", dir=os.environ.get("COMPAT_TMPDIR") or None)
    c = Cluster(d)
    try:
        out = c.run("up", "--nodes", str(NODES), "--partitions", str(PARTITIONS), "--base-port", str(BASE),
                    "--kafka-port", str(KAFKA), "--bin", str(servers.rialto_bin()))
    except subprocess.CalledProcessError as e:
        c.run("down", check=False)
        pytest.fail(f"cluster.sh up failed:\n{e.stderr[-3000:]}", pytrace=False)
    assert out.stdout.split() == [f"127.0.0.1:{c.port(i)}" for i in (1, 2, 3)]
    yield c
    c.run("down", check=False)
    if not os.environ.get("COMPAT_KEEP_TMP"):
        shutil.rmtree(d, ignore_errors=True)


def _describe(argv, proc_out, proc_err, rc):
    detail = [f"$ {' '.join(map(str, argv))}  -> exit status {rc}"]
    if proc_out.strip():
        detail.append("stdout:\n" + proc_out[-3000:])
    if proc_err.strip():
        detail.append("stderr:\n" + proc_err[-3000:])
    return "\n".join(detail)


def _pending(client, scenario, run):
    """Runs `run()`; a scenario listed in PENDING_ON_RIALTO must fail, and becomes an xfail."""
    pending = PENDING_ON_RIALTO.get(scenario)
    if pending is None:
        return run()
    try:
        run()
    except (pytest.fail.Exception, AssertionError):
        pytest.xfail(pending)
    pytest.fail(f"{scenario} now passes on Rialto: remove it from PENDING_ON_RIALTO", pytrace=False)


@pytest.mark.parametrize("client", list(CLIENTS))
def test_cluster_scenario(request, client):
    """SET/GET over every slot range, a hash tag's MSET/MGET, INCRs in a pipeline, where reads land."""
    fixture, seed, _ = CLIENTS[client]
    program = request.getfixturevalue(fixture)
    cluster = request.getfixturevalue("cluster")
    cluster.settled()
    scenario = f"{client}_cluster"
    argv = program.argv("cluster", "127.0.0.1", cluster.port(seed, seed - 1), scenario)

    def run():
        started = time.monotonic()
        try:
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"{scenario} did not finish within {RUN_TIMEOUT}s\n"
                        + _describe(argv, e.stdout or "", e.stderr or "", "timeout"), pytrace=False)
        lines = proc.stdout.strip().splitlines()
        print(f"{scenario}: {time.monotonic() - started:.1f} s; {' | '.join(lines)}")
        if proc.returncode != 0 or lines[-1:] != ["OK"]:
            verdict = lines[-1] if lines else "(no output)"
            pytest.fail(f"{scenario}: {verdict}\n" + _describe(argv, proc.stdout, proc.stderr, proc.returncode),
                        pytrace=False)

    _pending(client, scenario, run)


def _lines(stream, q):
    for line in stream:
        q.put(line.rstrip("\n"))
    q.put(None)


@pytest.mark.parametrize("client", list(CLIENTS))
def test_kill_minus_nine_of_a_master_loses_no_acknowledged_write(request, client):
    """The counter's master is killed with SIGKILL mid-run; every acknowledged INCR survives."""
    fixture, seed, key = CLIENTS[client]
    program = request.getfixturevalue(fixture)
    cluster = request.getfixturevalue("cluster")
    cluster.settled()
    scenario = f"{client}_cluster_failover"
    argv = program.argv("cluster", "127.0.0.1", cluster.port(seed), scenario)

    def run():
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, bufsize=1)
        out, err = queue.Queue(), queue.Queue()
        threading.Thread(target=_lines, args=(proc.stdout, out), daemon=True).start()
        threading.Thread(target=_lines, args=(proc.stderr, err), daemon=True).start()
        lines, victim = [], None

        def drain(until, deadline):
            while time.monotonic() < deadline:
                try:
                    line = out.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if line is None:
                    return None
                lines.append(line)
                if line == until:
                    return line
            return "timeout"

        def failure(what):
            proc.kill()
            proc.wait()
            stderr = []
            while not err.empty():
                stderr.append(err.get() or "")
            return f"{scenario}: {what}\n" + _describe(argv, "\n".join(lines), "\n".join(stderr), proc.returncode)

        try:
            got = drain("ready", time.monotonic() + READY_TIMEOUT)
            if got != "ready":
                pytest.fail(failure(f"no `ready` ({'exited' if got is None else 'timed out'})"), pytrace=False)
            # Kill the master of the counter's slot as the servers see it now.
            victim = cluster.master_node(key, ask=seed)
            cluster.run("kill-node", str(victim), "--signal", "KILL")
            killed = time.monotonic()
            proc.stdin.write("killed\n")
            proc.stdin.flush()
            got = drain(None, time.monotonic() + RUN_TIMEOUT)
            if got == "timeout":
                pytest.fail(failure(f"did not finish within {RUN_TIMEOUT}s of the kill"), pytrace=False)
            rc = proc.wait(timeout=10)
            result = next((l for l in lines if l.startswith("result ")), "")
            print(f"{scenario}: node {victim} killed; {time.monotonic() - started:.1f} s in all, "
                  f"{time.monotonic() - killed:.1f} s after the kill; {' | '.join(lines[1:])}")
            if rc != 0 or lines[-1:] != ["OK"]:
                pytest.fail(failure(lines[-1] if lines else "(no output)"), pytrace=False)
            # The program checked the bounds; check them here too.
            n = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(-?\d+)", result))
            assert n["acked"] <= n["final"] <= n["acked"] + n["ambiguous"], result
            assert n["final"] >= n["last"], result
            others = [i for i in (1, 2, 3) if i != victim]
            assert cluster.master_node(key, ask=others[0]) != victim, "the killed node still masters the counter"
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if victim is not None:
                # The node comes back (for the next test) and catches up from its stored position.
                cluster.run("start-node", str(victim))
                cluster.settled()

    _pending(client, scenario, run)


@pytest.mark.parametrize("lang", ["java", "go"])
def test_cluster_scenario_lists(request, lang):
    """The scenarios above are the programs' own (`PROGRAM cluster list`)."""
    program = request.getfixturevalue(f"{lang}_clients")
    want = sorted(f"{c}_cluster{s}" for c, (f, _, _) in CLIENTS.items() if f == f"{lang}_clients"
                  for s in ("", "_failover"))
    proc = subprocess.run(program.argv("cluster", "list"), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == want
