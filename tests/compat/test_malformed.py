"""crates/resp/tests/malformed.txt over TCP: malformed and odd request streams, exact reply bytes
and whether the connection closes, against both servers.

The table and the replay logic are crates/resp/tests/redis_replay.py's own (imported, not copied):
each case connects, sends its bytes in one write, reads until the close or 300 ms of silence.
Cases marked `auth: required` go to a second server started with a password (`--requirepass`).
The cases run concurrently (each has its own connection and sends only PING/ECHO), so the 300 ms
waits overlap; every case still reports as its own test.
"""

import importlib.util
from concurrent.futures import ThreadPoolExecutor

import pytest

import servers

REPLAY = servers.REPO / "crates" / "resp" / "tests" / "redis_replay.py"
TABLE = REPLAY.with_name("malformed.txt")
PASSWORD = "secret"


def _load_replay():
    spec = importlib.util.spec_from_file_location("redis_replay", REPLAY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


replay = _load_replay()
CASES = replay.parse_table(str(TABLE))


def test_table_is_not_empty():
    assert len(CASES) > 50
    assert len({c["name"] for c in CASES}) == len(CASES), "case names must be unique"
    assert any(c["auth"] for c in CASES)


@pytest.fixture(scope="module", params=servers.ROLES)
def replayed(request, start_module_server):
    """{case name: (reply bytes, closed)} for every case, against one kind of server."""
    plain = start_module_server(request.param)
    locked = start_module_server(request.param, password=PASSWORD)

    def run(case):
        port = locked.port if case["auth"] else plain.port
        return case["name"], replay.run_case(plain.host, port, case["input"])

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = dict(pool.map(run, CASES))
    for s in (plain, locked):
        assert s.alive(), f"the server died during the malformed-input replay\n{s.describe()}"
    return results


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_malformed(replayed, case):
    got, closed = replayed[case["name"]]
    want, want_closed = case["reply"], case["close"]
    assert (got, closed) == (want, want_closed), (
        f"{case['name']}: sent {case['input'][:200]!r}{'...' if len(case['input']) > 200 else ''}\n"
        f"  want {want!r} close={want_closed}\n"
        f"  got  {got!r} close={closed}"
    )
