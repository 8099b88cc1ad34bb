"""redis-cli, unchanged, against the server: one-shot commands, RESP3, mass insertion with
--pipe, and --scan, each compared with what redis-server gives."""

import subprocess


def cli(server, *args, stdin=None):
    out = subprocess.run(
        ["redis-cli", "-h", server.host, "-p", str(server.port), *args],
        input=stdin,
        capture_output=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_one_shot_commands(server):
    assert cli(server, "set", "a", "b") == b"OK\n"
    assert cli(server, "get", "a") == b"b\n"
    assert cli(server, "incr", "n") == b"1\n"
    assert cli(server, "get", "nothing") == b"\n"
    assert cli(server, "--no-raw", "get", "nothing") == b"(nil)\n"
    err = cli(server, "incr", "a")
    assert b"ERR value is not an integer or out of range" in err


def test_resp3(server):
    assert cli(server, "-3", "set", "k", "v") == b"OK\n"
    assert cli(server, "-3", "get", "k") == b"v\n"


def test_pipe_mass_insertion_and_scan(server):
    n = 20000
    data = b"".join(
        b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nx\r\n" % (len(k), k)
        for k in (b"key:%06d" % i for i in range(n))
    )
    out = cli(server, "--pipe", stdin=data)
    assert b"errors: 0, replies: %d" % n in out, out
    keys = cli(server, "--scan", "--pattern", "key:00001*").split()
    assert sorted(keys) == [b"key:%06d" % i for i in range(10, 20)]
    assert cli(server, "dbsize") == b"%d\n" % n


def test_stat_reads_memory_and_clients(server):
    # --stat prints a line per interval from INFO: keys, memory, clients, requests.
    proc = subprocess.Popen(
        ["redis-cli", "-h", server.host, "-p", str(server.port), "--stat", "-i", "0.2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
    finally:
        proc.kill()
        proc.wait()
    data = lines[-1].split()
    assert b"-" not in data[1], lines  # the memory column: never the negative of a missing field
    assert data[1][-1:] in (b"B", b"K", b"M", b"G"), lines


def test_info_memory_and_cpu_sections_and_maxmemory(server):
    info = cli(server, "info", "memory").decode()
    for field in ("used_memory:", "used_memory_human:", "used_memory_rss:", "used_memory_peak:",
                  "total_system_memory:", "maxmemory:", "maxmemory_policy:", "mem_fragmentation_ratio:"):
        assert field in info, (field, info)
    cpu = cli(server, "info", "cpu").decode()
    assert "used_cpu_user:" in cpu and "used_cpu_sys:" in cpu
    assert cli(server, "config", "get", "maxmemory").split(b"\n")[0] == b"maxmemory"
    assert cli(server, "config", "get", "maxmemory-policy") == b"maxmemory-policy\nnoeviction\n"
