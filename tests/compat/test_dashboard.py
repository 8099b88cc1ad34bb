"""The dashboard on the metrics port, in a real headless browser (Debian's chromium and
chromium-driver, driven by selenium; scripts/compat-tests.sh installs all three).

A `rialto serve` with a metrics port; the page must load and list the stores, show a push in
progress (its phase and records) and then the new current version after the swap, and show a
prefix full of markup as text. Skipped, with the reason, when the browser or selenium is
missing, or when the server under test is a redis-server stand-in.
"""

import json
import os
import shutil
import urllib.request

import pytest

import servers

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
DRIVER_NAMES = ("chromedriver",)
WAIT_S = 20


def _find(names, env):
    explicit = os.environ.get(env)
    if explicit:
        return explicit if os.path.exists(explicit) else None
    for n in names:
        found = shutil.which(n)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def browser():
    if servers.target_mode() != "rialto":
        pytest.skip("the dashboard is Rialto's (COMPAT_TARGET=redis)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (scripts/compat-tests.sh installs it in its venv)")
    chromium = _find(CHROMIUM_NAMES, "COMPAT_CHROMIUM")
    driver_path = _find(DRIVER_NAMES, "COMPAT_CHROMEDRIVER")
    if not chromium or not driver_path:
        pytest.skip(
            "chromium or chromedriver not found: apt-get install -y chromium chromium-driver "
            "(scripts/compat-tests.sh does when it can), or set COMPAT_CHROMIUM and COMPAT_CHROMEDRIVER"
        )
    # Never let selenium look for (and try to download) a driver or a browser of its own.
    os.environ.setdefault("SE_OFFLINE", "true")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--no-first-run", "--window-size=1400,1200"):
        opts.add_argument(arg)
    try:
        driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    except Exception as e:  # noqa: BLE001 - any failure to start the browser is a skip reason
        pytest.skip(f"cannot start headless chromium ({chromium}, {driver_path}): {e}")
    driver.set_page_load_timeout(WAIT_S)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def dashboard_server(start_module_server):
    if servers.target_mode() != "rialto":
        pytest.skip("the dashboard is Rialto's (COMPAT_TARGET=redis)")
    metrics_port = servers.free_port()
    srv = start_module_server("rialto", name="dashboard", args=["--metrics-port", str(metrics_port)])
    srv.metrics_url = f"http://{servers.HOST}:{metrics_port}"
    return srv


def _wait(driver, what, check):
    """Polls `check(driver)` until it returns something truthy; fails with `what` otherwise."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    def guarded(d):
        try:
            return check(d)
        except StaleElementReferenceException:
            return False  # the page redrew between the lookup and the read

    try:
        return WebDriverWait(driver, WAIT_S, poll_frequency=0.1).until(guarded)
    except TimeoutException:
        body = driver.find_element("tag name", "body").text
        pytest.fail(f"the dashboard did not show {what} within {WAIT_S}s; it shows:\n{body}")


def _cell(driver, store, css):
    """The text of `css` in the row of `store`, or None while there is no such row or cell."""
    rows = driver.find_elements("css selector", f'#stores tr[data-store="{store}"]')
    if not rows:
        return None
    cells = rows[0].find_elements("css selector", css)
    return cells[0].text if cells else None


def _status(srv):
    with urllib.request.urlopen(srv.metrics_url + "/api/status", timeout=10) as r:
        assert r.headers["Content-Type"] == "application/json"
        return json.load(r)


def test_status_endpoint_shape(dashboard_server):
    s = _status(dashboard_server)
    assert set(s) == {"server", "stores", "pushes", "io", "merger", "cluster"}
    assert s["server"]["mode"] == "standalone" and s["cluster"] is None
    assert set(s["io"]["totals"]) == {"journal_write", "journal_sync", "flush", "compaction", "ingest"}
    assert s["merger"]["group_sizes"][-1]["le"] is None


def test_dashboard_follows_a_push(browser, dashboard_server):
    c = dashboard_server.client(decode_responses=True)
    c.execute_command("STORE", "CREATE", "feat", "PREFIX", "feat:")
    browser.get(dashboard_server.metrics_url + "/")
    assert browser.title == "Rialto"
    _wait(browser, "the store with its version 1", lambda d: _cell(d, "feat", ".current-version") == "1")
    assert _cell(browser, "feat", ".prefix") == "feat:"

    push_id = c.execute_command("PUSH", "BEGIN", "feat", "MIN-RECORDS", 0, "MAX-SHRINK", 100)
    flat = []
    for i in range(500):
        flat += [f"k{i:04}", f"value-{i}"]
    assert c.execute_command("PUSH", "ADD", push_id, *flat) == 500
    _wait(browser, "the push adding records", lambda d: _cell(d, "feat", ".pushing-phase") == "adding")
    _wait(browser, "the push's 500 records", lambda d: _cell(d, "feat", ".pushing-records") == "500")
    assert _cell(browser, "feat", ".pushing-version") == str(push_id)
    assert _cell(browser, "feat", ".pushing-progress") == "0%"

    c.execute_command("PUSH", "COMMIT", push_id)
    _wait(browser, f"version {push_id} current after the swap",
          lambda d: _cell(d, "feat", ".current-version") == str(push_id))
    _wait(browser, "no push in progress", lambda d: _cell(d, "feat", ".pushing-phase") is None)
    assert _cell(browser, "feat", ".previous-version") == "1"
    totals = browser.find_element("id", "push-totals").text
    assert "1 begun, 1 committed" in totals, totals
    # The ingestion shows on the I/O timeline and in the totals.
    _wait(browser, "the ingestion in the I/O totals",
          lambda d: d.find_element("css selector", '#io-totals tr[data-kind="ingest"] td:nth-child(2)').text == "1")
    assert browser.find_elements("css selector", "#io-timeline rect.k-ingest")
    assert c.get("feat:k0007") == "value-7"
    c.close()


def test_markup_in_a_prefix_stays_text(browser, dashboard_server):
    c = dashboard_server.client(decode_responses=True)
    prefix = '<img src=x id=injected onerror="document.title=1">"&'
    c.execute_command("STORE", "CREATE", "markup", "PREFIX", prefix)
    browser.get(dashboard_server.metrics_url + "/dashboard")
    _wait(browser, "the store with the markup prefix", lambda d: _cell(d, "markup", ".prefix") == prefix)
    assert not browser.find_elements("id", "injected")
    assert browser.title == "Rialto"
    c.close()


def test_an_unchanged_part_is_not_redrawn(browser, dashboard_server):
    """A poll whose data did not change leaves the page's elements as they are (an open page
    costs its browser a fetch a second, not a layout); a change redraws the part it touches."""
    from selenium.common.exceptions import StaleElementReferenceException

    c = dashboard_server.client(decode_responses=True)
    c.execute_command("STORE", "CREATE", "still", "PREFIX", "still:")
    browser.get(dashboard_server.metrics_url + "/")
    _wait(browser, "the store", lambda d: _cell(d, "still", ".prefix") == "still:")
    merger_rows = browser.find_element("css selector", "#group-sizes .bar")
    polls = lambda d: int(d.find_element("id", "poll-state").get_attribute("data-polls") or 0)  # noqa: E731
    seen = polls(browser)
    _wait(browser, "two more polls", lambda d: polls(d) >= seen + 2)
    # Nothing was written: the merger's bars are the same elements.
    merger_rows.text
    c.set("still:k", "v")
    def redrawn(d):
        try:
            merger_rows.text
            return False
        except StaleElementReferenceException:
            return True
    _wait(browser, "the merger's figures redrawn after a write", redrawn)
    c.close()
