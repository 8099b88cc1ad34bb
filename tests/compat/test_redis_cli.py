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
