#!/usr/bin/env python3
"""What the live dashboard costs a serving Rialto: GETs per second with the dashboard closed
against open and refreshing in a headless browser.

One `rialto serve` (durable, as deployed, with --metrics-port) holds a store `key` (prefix
`key:`) whose current version has --keys records, `key:000000000000` ... (the 12-digit keys
redis-benchmark's -r reads), with --value-size byte values, loaded by `rialto push` from a CSV
made once under the work directory. A headless chromium (Debian's chromium and chromedriver,
driven by selenium as tests/compat/test_dashboard.py does) runs for the whole benchmark. Each
round measures, in turn (which goes first swaps every round):

  closed  the browser on about:blank;
  open    the browser on the dashboard (`/` on the metrics port), which polls /api/status and
          redraws once a second, its normal refresh; the page must have drawn before the
          measurement starts;
  polled  the browser on about:blank, and this script fetching /api/status once a second, as
          the open page does: the server's whole share of an open dashboard, without the
          browser's rendering on the server's cores (in production the browser runs on an
          operator's desk).

Each measurement is `redis-benchmark -t get -P 16 -c 50 -n N -r KEYS`. Before the rounds one
unmeasured run warms the caches. The browser shares the machine's cores with the server and
redis-benchmark, as it never does in production (it runs on an operator's desk): so besides
GET/s, each measurement reports the server's CPU time per GET and the browser's CPU seconds,
which tell the server's own cost of /api/status from the browser's rendering.

Prints GET/s per round, the medians, and the ratios open/closed and polled/closed, both of
the medians and the median of the rounds' own ratios. The goal (>= 0.98) is the dashboard's
cost to the server, polled/closed; open/closed adds the browser's rendering, which on a
2-core machine takes cores from the server and redis-benchmark, and is shown beside it. Every measurement and the summary are kept as
JSON under the work directory (results/); the data directory is removed at the end.

Usage:
  target/compat-venv/bin/python scripts/bench-dashboard-cost.py [--rounds 5] [--requests 3000000]
      [--keys 1000000] [--value-size 100] [--warmup N] [--settle 2]
Environment:
  RIALTO_BIN           the rialto binary (default: target/release/rialto, built here first)
  BENCH_DIR            work directory (default target/bench-dashboard-cost; on disk, not tmpfs)
  RIALTO_PORT          the server's port (default 7620); the metrics port is RIALTO_PORT + 1
  COMPAT_CHROMIUM, COMPAT_CHROMEDRIVER   the browser and its driver (default: found on PATH)
Needs redis-tools (redis-benchmark), chromium and chromium-driver (apt-get), and selenium: the
venv that `COMPAT_SETUP_ONLY=1 bash scripts/compat-tests.sh` makes (target/compat-venv) has it.
Progress goes to stderr, the results to stdout.
"""

import argparse
import datetime
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_WAIT_S = 30
GOAL = 0.98


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def die(msg):
    log(f"error: {msg}")
    sys.exit(1)


def cpu_ticks(pid):
    """User plus system CPU ticks of one process; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def descendants(pid):
    """Every process below `pid` (the browser's renderer, GPU and utility processes)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def port_in_use(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def find_tool(names, env):
    explicit = os.environ.get(env)
    if explicit:
        return explicit if os.path.exists(explicit) else None
    for n in names:
        found = shutil.which(n)
        if found:
            return found
    return None


def rialto_binary():
    b = os.environ.get("RIALTO_BIN")
    if b:
        b = os.path.abspath(b)
        if not os.access(b, os.X_OK):
            die(f"RIALTO_BIN={b} is not an executable")
        return b
    log("== building rialto (release)")
    subprocess.run(["nice", "-n", "10", "cargo", "build", "--release", "--locked", "-p", "rialto"],
                   cwd=REPO, check=True, stdout=sys.stderr)
    return str(REPO / "target" / "release" / "rialto")


def work_dir():
    d = Path(os.environ.get("BENCH_DIR", REPO / "target" / "bench-dashboard-cost")).resolve()
    d.mkdir(parents=True, exist_ok=True)
    fstype = subprocess.run(["df", "--output=fstype", str(d)], text=True,
                            capture_output=True).stdout.split()
    if fstype and fstype[-1] in ("tmpfs", "ramfs"):
        die(f"{d} is on {fstype[-1]}: set BENCH_DIR to a directory on disk (the server syncs)")
    return d


def input_csv(work, keys, value_size):
    """key,value rows for keys 0..keys-1 (12 digits); made once, kept between runs."""
    path = work / f"keys-{keys}-{value_size}.csv"
    if path.exists() and path.stat().st_size > 0:
        return path
    log(f"== writing {path} ({keys:,} records)")
    tmp = path.with_suffix(".tmp")
    value = "v" * value_size
    with open(tmp, "w") as f:
        f.write("key,value\n")
        for i in range(keys):
            f.write(f"{i:012d},{value}\n")
    tmp.rename(path)
    return path


class Server:
    def __init__(self, rialto, data, port, metrics_port):
        self.port, self.metrics_port = port, metrics_port
        self.log_path = data / "server.log"
        self.proc = subprocess.Popen(
            [rialto, "serve", "--dir", str(data / "db"), "--port", str(port),
             "--metrics-port", str(metrics_port)],
            stdout=subprocess.DEVNULL, stderr=open(self.log_path, "w"))
        for _ in range(300):
            if self.proc.poll() is not None:
                die(f"rialto serve exited while starting:\n{self.tail()}")
            if self.cli("ping").strip() == "PONG":
                return
            time.sleep(0.1)
        die("rialto serve did not answer PING within 30 s")

    def cli(self, *args):
        return subprocess.run(["redis-cli", "-p", str(self.port), *args], text=True,
                              capture_output=True).stdout

    def tail(self):
        try:
            return "".join(self.log_path.read_text().splitlines(True)[-20:])
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        die("selenium is missing: run with target/compat-venv/bin/python "
            "(COMPAT_SETUP_ONLY=1 bash scripts/compat-tests.sh makes it)")
    chromium = find_tool(("chromium", "chromium-browser", "google-chrome"), "COMPAT_CHROMIUM")
    driver = find_tool(("chromedriver",), "COMPAT_CHROMEDRIVER")
    if not chromium or not driver:
        die("chromium or chromedriver not found: apt-get install -y chromium chromium-driver, "
            "or set COMPAT_CHROMIUM and COMPAT_CHROMEDRIVER")
    # Never let selenium look for (and try to download) a driver or a browser of its own.
    os.environ.setdefault("SE_OFFLINE", "true")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--no-first-run", "--window-size=1400,1200"):
        opts.add_argument(arg)
    service = Service(executable_path=driver)
    b = webdriver.Chrome(service=service, options=opts)
    b.set_page_load_timeout(PAGE_WAIT_S)
    return b, service.process.pid


def polls(browser):
    """How many times the page has drawn /api/status (its badge's data-polls), 0 if none."""
    els = browser.find_elements("css selector", "#poll-state")
    v = els[0].get_attribute("data-polls") if els else None
    return int(v) if v else 0


def open_dashboard(browser, url):
    browser.get(url)
    deadline = time.time() + PAGE_WAIT_S
    while polls(browser) < 1:
        if time.time() > deadline:
            die(f"the dashboard at {url} did not draw within {PAGE_WAIT_S} s")
        time.sleep(0.1)


def close_dashboard(browser):
    browser.get("about:blank")


class Poller:
    """Fetches `url` once a second on a thread, as the open dashboard does, until stopped."""

    def __init__(self, url):
        self.url = url
        self.done = threading.Event()
        self.fetched = 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done.is_set():
            with urllib.request.urlopen(self.url, timeout=10) as r:
                json.load(r)
            self.fetched += 1
            self.done.wait(1.0)

    def stop(self):
        """Stops; how many times it fetched."""
        self.done.set()
        self.thread.join()
        return self.fetched


def gets(port, requests, keys, clients, pipeline):
    """One redis-benchmark run: GET/s."""
    out = subprocess.run(
        ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-t", "get", "-P", str(pipeline),
         "-c", str(clients), "-n", str(requests), "-r", str(keys), "--csv"],
        text=True, capture_output=True)
    if out.returncode != 0 or "Error" in out.stdout + out.stderr:
        die(f"redis-benchmark failed:\n{(out.stdout + out.stderr)[:2000]}")
    for line in out.stdout.splitlines():
        cells = [c.strip('"') for c in line.split(",")]
        if cells and cells[0] == "GET":
            return float(cells[1])
    die(f"no GET result in redis-benchmark's output:\n{out.stdout[:2000]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=3_000_000, help="GETs per measurement")
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--warmup", type=int, help="GETs of the unmeasured first run (default: --requests)")
    ap.add_argument("--settle", type=float, default=2.0,
                    help="seconds between switching the dashboard and measuring")
    a = ap.parse_args()
    for name in ("rounds", "requests", "keys", "value_size", "clients", "pipeline"):
        if getattr(a, name) < 1:
            die(f"--{name.replace('_', '-')} must be at least 1")
    warmup = a.requests if a.warmup is None else a.warmup
    if not shutil.which("redis-benchmark") or not shutil.which("redis-cli"):
        die("redis-benchmark or redis-cli missing: apt-get install -y redis-tools")
    port = int(os.environ.get("RIALTO_PORT", "7620"))
    metrics_port = port + 1
    for p in (port, metrics_port):
        if port_in_use(p):
            die(f"port {p} is already in use (set RIALTO_PORT)")

    rialto = rialto_binary()
    work = work_dir()
    csv = input_csv(work, a.keys, a.value_size)
    data = Path(tempfile.mkdtemp(prefix="run.", dir=work))
    server = browser = None
    try:
        server = Server(rialto, data, port, metrics_port)
        addr = f"127.0.0.1:{port}"
        subprocess.run([rialto, "store", "create", "key", "--server", addr],
                       check=True, stdout=subprocess.DEVNULL)
        log(f"== loading {a.keys:,} keys")
        subprocess.run([rialto, "push", "--store", "key", "--input", str(csv), "--server", addr,
                        "--no-progress"], check=True, stdout=subprocess.DEVNULL)
        probe = server.cli("get", f"key:{a.keys - 1:012d}").strip()
        if len(probe) != a.value_size:
            die(f"preload check: GET returned {probe[:40]!r}")
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/api/status", timeout=10) as r:
            json.load(r)

        log("== starting headless chromium")
        browser, driver_pid = start_browser()
        url = f"http://127.0.0.1:{metrics_port}/"
        if warmup:
            log(f"== warm-up: {warmup:,} GETs")
            gets(port, warmup, a.keys, a.clients, a.pipeline)

        log(f"== {a.rounds} round(s): redis-benchmark -t get -P {a.pipeline} -c {a.clients} "
            f"-n {a.requests} -r {a.keys}, dashboard closed and open")
        rows = []
        cases = ("closed", "open", "polled")
        for rnd in range(1, a.rounds + 1):
            # Each case first once every three rounds.
            order = cases[(rnd - 1) % 3:] + cases[:(rnd - 1) % 3]
            for case in order:
                if case == "open":
                    open_dashboard(browser, url)
                else:
                    close_dashboard(browser)
                poller = Poller(f"http://127.0.0.1:{metrics_port}/api/status") if case == "polled" else None
                time.sleep(a.settle)
                drawn0 = polls(browser)
                browser_pids = [driver_pid] + descendants(driver_pid)
                s0 = cpu_ticks(server.proc.pid)
                b0 = sum(cpu_ticks(p) for p in browser_pids)
                t0 = time.perf_counter()
                rps = gets(port, a.requests, a.keys, a.clients, a.pipeline)
                secs = time.perf_counter() - t0
                server_us = (cpu_ticks(server.proc.pid) - s0) / CLK_TCK * 1e6 / a.requests
                browser_s = (sum(cpu_ticks(p) for p in browser_pids) - b0) / CLK_TCK
                drawn = polls(browser) - drawn0 if case == "open" else 0
                if poller is not None:
                    drawn = poller.stop()
                if case != "closed" and secs >= 3 and drawn < 1:
                    die("the dashboard did not redraw during the measurement")
                row = {"round": rnd, "case": case, "gets_per_s": rps, "seconds": round(secs, 3),
                       "server_cpu_us_per_get": round(server_us, 3),
                       "browser_cpu_s": round(browser_s, 3), "dashboard_redraws": drawn}
                rows.append(row)
                log(f"round {rnd}/{a.rounds}  {case:<6} {rps:>12,.0f} GET/s  server "
                    f"{server_us:.2f} µs CPU/GET  browser {browser_s:.2f} s CPU  "
                    f"redraws {drawn}")
        close_dashboard(browser)

        by = {c: [r["gets_per_s"] for r in rows if r["case"] == c] for c in cases}
        med = {c: statistics.median(v) for c, v in by.items()}

        def own_ratio(case):
            return statistics.median(
                o["gets_per_s"] / c["gets_per_s"]
                for o, c in zip([r for r in rows if r["case"] == case],
                                [r for r in rows if r["case"] == "closed"]))

        own = {c: own_ratio(c) for c in ("open", "polled")}
        cpu = {c: statistics.median(r["server_cpu_us_per_get"] for r in rows if r["case"] == c)
               for c in cases}
        ratio = {c: med[c] / med["closed"] for c in ("open", "polled")}
        print(f"\n{'GET/s by round':<16} | " + " | ".join(f"{r:>10}" for r in range(1, a.rounds + 1)))
        for c in cases:
            print(f"{'dashboard ' + c:<16} | " + " | ".join(f"{v:>10,.0f}" for v in by[c]))
        print(f"\nmedian GET/s: closed {med['closed']:,.0f}, open {med['open']:,.0f}, "
              f"polled {med['polled']:,.0f}")
        met = min(ratio["polled"], own["polled"]) >= GOAL
        print(f"ratio polled/closed (the server's cost): {ratio['polled']:.3f} of the medians, "
              f"{own['polled']:.3f} median of the rounds' own (goal >= {GOAL}: "
              f"{'met' if met else 'NOT met'})")
        print(f"ratio open/closed (with the browser on the same cores): {ratio['open']:.3f} of the "
              f"medians, {own['open']:.3f} median of the rounds' own")
        print(f"server CPU per GET (median): closed {cpu['closed']:.2f} µs, open {cpu['open']:.2f} µs, "
              f"polled {cpu['polled']:.2f} µs")

        results = work / "results"
        results.mkdir(exist_ok=True)
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        out = results / f"dashboard-cost-{stamp}.json"
        out.write_text(json.dumps({
            "args": vars(a), "rialto": rialto, "rows": rows, "median_gets_per_s": med,
            "ratios_of_medians": ratio, "medians_of_round_ratios": own,
            "median_server_cpu_us_per_get": cpu, "goal": GOAL,
        }, indent=2) + "\n")
        print(f"results kept in {out}")
    finally:
        if browser is not None:
            browser.quit()
        if server is not None:
            server.stop()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
