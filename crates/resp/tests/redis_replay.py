#!/usr/bin/env python3
"""Replays tests/malformed.txt against a running server over TCP and checks each reply.

Usage:
    redis_replay.py [--host 127.0.0.1] --port P --auth-port Q [--table malformed.txt]

P serves the cases without `auth:`; Q must have a password set (requirepass) and serves the
`auth: required` cases. For redis-server:

    redis-server --port 7777 --save '' --appendonly no --daemonize yes
    redis-server --port 7778 --save '' --appendonly no --daemonize yes --requirepass secret

Each case: connect, send the input in one write, read until the server closes or stays silent
for 300 ms, compare the bytes and whether the connection was closed. Exits non-zero on any
mismatch. Only loopback addresses are meant to be used.
"""

import argparse
import re
import socket
import sys
import time

QUIET_SECONDS = 0.3


def unescape(text, where):
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        nxt = text[i + 1 : i + 2]
        if nxt in ("r", "n", "t", "\\"):
            out += {"r": b"\r", "n": b"\n", "t": b"\t", "\\": b"\\"}[nxt]
            i += 2
        elif nxt == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", text[i + 2 : i + 4]):
            out.append(int(text[i + 2 : i + 4], 16))
            i += 4
        else:
            raise ValueError(f"{where}: bad escape at {text[i:i + 4]!r}")
    return bytes(out)


def parse_table(path):
    cases, case = [], None
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines + [""], 1):
        where = f"{path}:{number}"
        if line.startswith("#"):
            continue
        if line == "":
            if case:
                cases.append(case)
            case = None
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"{where}: expected `key: value`")
        value = value[1:] if value.startswith(" ") else value
        if case is None:
            case = {"input": b"", "auth": False}
        if key == "name":
            case["name"] = value
        elif key == "auth":
            case["auth"] = value == "required"
        elif key == "input":
            case["input"] += unescape(value, where)
        elif key == "repeat":
            count, _, text = value.partition(" ")
            case["input"] += unescape(text, where) * int(count)
        elif key == "reply":
            case["reply"] = unescape(value, where)
        elif key == "after":
            case["close"] = {"close": True, "open": False}[value]
        else:
            raise ValueError(f"{where}: unknown key {key!r}")
    return cases


def run_case(host, port, data):
    sock = socket.create_connection((host, port), timeout=5)
    sock.sendall(data)
    sock.settimeout(QUIET_SECONDS)
    got, closed = b"", False
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        got += chunk
    sock.close()
    return got, closed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--auth-port", type=int, required=True)
    ap.add_argument("--table", default=__file__.replace("redis_replay.py", "malformed.txt"))
    args = ap.parse_args()
    failures = 0
    cases = parse_table(args.table)
    for case in cases:
        port = args.auth_port if case["auth"] else args.port
        got, closed = run_case(args.host, port, case["input"])
        ok = got == case["reply"] and closed == case["close"]
        failures += not ok
        status = "ok  " if ok else "FAIL"
        print(f"{status} {case['name']}")
        if not ok:
            print(f"     want {case['reply']!r} close={case['close']}")
            print(f"     got  {got!r} close={closed}")
    print(f"{len(cases) - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
