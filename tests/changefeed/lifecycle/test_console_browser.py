"""The web console in a real headless Chromium (Debian's chromium + chromedriver, driven by Selenium) against
a real `changefeed server` process, MariaDB and our broker: every page loads without a console error, shows
the live changefeed's state and a lag chart that gains points, the sink cluster's topics, the pipeline's
metrics; Pause/Resume change the state in the API, and a refusal by the server (the same rule the CLI hits)
is shown on the page. Screenshots of each page go to docs/console/ (linked from the README).

The pipeline is stood in for by a prometheus_client exporter with the pipeline's metric names: a Spark
run would not fit the test's budget, and the console only reads the Prometheus text.
"""

import datetime
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from changefeed.lifecycle.client import call
from lakefeed_testing import MySQLServer
from lakefeed_testing.net import free_port
from tests.changefeed.lifecycle.conftest import Process, StartServer, insert_rows, source_uri, wait_for

SCREENSHOTS = Path(__file__).resolve().parents[3] / "docs" / "console"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail("chromium and chromedriver are missing: run scripts/setup.sh (apt-get install chromium "
                    "chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000",
                     "--disable-gpu", "--no-first-run"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit chromedriver path: Selenium Manager would otherwise try to download a driver.
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def pipeline_exporter() -> Iterator[tuple[str, Any]]:
    registry = CollectorRegistry()
    batches = Counter("lakefeed_pipeline_batches", "Micro-batches applied", registry=registry)
    freshness = Gauge("lakefeed_pipeline_freshness_seconds", "Now minus the newest commit applied",
                      registry=registry)
    last = Gauge("lakefeed_pipeline_last_batch_timestamp_seconds", "When the last batch ended", registry=registry)
    batches.inc(7)
    freshness.set(3.25)
    last.set(time.time())
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        yield f"http://127.0.0.1:{port}/metrics", batches
    finally:
        server.shutdown()
        thread.join(5)


def state(server: Process, cf_id: str) -> str:
    """The state as the HTTP API (the one the CLI reads) reports it."""
    status, body = call(server.url, "GET", f"/api/v2/changefeeds/{cf_id}")
    assert status == 200, body
    return str(body["state"])


def create(server: Process, **body: str) -> None:
    status, answer = call(server.url, "POST", "/api/v2/changefeeds", body)
    assert status == 201, answer


def severe(driver: webdriver.Chrome) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


# The page redraws every poll, so elements are read in one script call each (no stale references).
def text(driver: webdriver.Chrome, css: str) -> str:
    return str(driver.execute_script("const e = document.querySelector(arguments[0]); return e ? e.innerText : ''",
                                     css))


def points(driver: webdriver.Chrome, css: str) -> int:
    return int(driver.execute_script("const e = document.querySelector(arguments[0]);"
                                     "return e ? Number(e.dataset.points || 0) : 0", css))


def cells(driver: webdriver.Chrome, css: str) -> list[list[str]]:
    rows: list[list[str]] = driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(r => [...r.cells].map(c => c.innerText))", css)
    return rows


def test_console_in_a_real_browser(
    mysql: MySQLServer, database: str, broker: Process, start_server: StartServer,
    pipeline_exporter: tuple[str, Any], browser: webdriver.Chrome,
) -> None:
    metrics_url, batches = pipeline_exporter
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))", database=database)
    server = start_server("s1", None, "--pipeline-metrics-url", metrics_url)
    config = f"filter:\n  rules: ['{database}.*']\n"
    topic = f"cdc-{database}"
    create(server, changefeed_id="orders", source=source_uri(mysql),
           sink_uri=f"kafka://{broker.bootstrap}/{topic}?partition-num=2", config=config)
    # A second changefeed that finishes at a target time: resuming it is refused, as for the CLI.
    target = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=6)
    create(server, changefeed_id="ends", source=source_uri(mysql), sink_uri=f"kafka://{broker.bootstrap}/{topic}-ends",
           config=config, target=target.isoformat())
    insert_rows(mysql, database, range(0, 100))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    wait = WebDriverWait(browser, 60, poll_frequency=0.2)  # a loaded CI machine is slow

    # Overview: the live changefeed's state, and a lag chart that keeps gaining points.
    browser.get(f"{server.url}/?refresh=0.5#/")
    wait.until(lambda d: text(d, "#feeds a.feed-link") == "orders" or text(d, "#feeds").startswith("changefeed"))
    wait.until(lambda d: "normal" in text(d, "#feeds"))
    first = points(browser, "#lag-chart")
    wait.until(lambda d: points(d, "#lag-chart") >= first + 3)
    assert browser.execute_script("return !!document.querySelector('#lag-chart canvas')"), "uPlot drew no canvas"
    browser.save_screenshot(str(SCREENSHOTS / "overview.png"))
    assert severe(browser) == []

    # Changefeed page: per-table rates, the sink cluster's topics with leader and ISR, its own lag chart.
    browser.get(f"{server.url}/?refresh=0.5#/changefeed/orders")
    wait.until(lambda d: f"{database}.t" in text(d, "#tables") and "100" in text(d, "#tables"))
    wait.until(lambda d: topic in text(d, "#topics"))
    rows = cells(browser, "#topics tbody tr")
    mine = [row for row in rows if row[0] == topic]
    # partition-num=2 on one broker: two partitions, each led by broker 1 with ISR [1]
    assert [row[1:] for row in mine] == [["0", "1", "1", "1", "ok"], ["1", "1", "1", "1", "ok"]], rows
    assert "controller" in text(browser, "#cluster")
    first = points(browser, "#lag-chart")
    wait.until(lambda d: points(d, "#lag-chart") >= first + 2)
    browser.set_window_size(1280, 1400)  # the whole page, sink cluster included
    browser.save_screenshot(str(SCREENSHOTS / "changefeed.png"))
    browser.set_window_size(1280, 1000)

    # Pause and Resume: the state changes in the API itself.
    browser.find_element(By.ID, "pause").click()
    wait_for(lambda: state(server, "orders") == "stopped", 10, "paused in the API")
    wait.until(lambda d: text(d, "#feed-state") == "stopped")
    browser.find_element(By.ID, "resume").click()
    wait_for(lambda: state(server, "orders") == "normal", 10, "resumed in the API")
    wait.until(lambda d: text(d, "#feed-state") == "normal" and "resumed" in text(d, "#action-message"))
    assert severe(browser) == []

    # Pipeline page: its batches, freshness and last batch time.
    browser.get(f"{server.url}/?refresh=0.5#/pipeline")
    wait.until(lambda d: "lakefeed_pipeline_batches_total" in text(d, "#pipeline-samples"))
    samples = {row[0]: row[2] for row in cells(browser, "#pipeline-samples tbody tr")}
    assert samples["lakefeed_pipeline_batches_total"] == "7", samples
    assert samples["lakefeed_pipeline_freshness_seconds"] == "3.25", samples
    assert "s ago" in samples["lakefeed_pipeline_last_batch_timestamp_seconds"], samples
    batches.inc()  # the pipeline applies another batch: the page follows
    wait.until(lambda d: "\t8\n" in text(d, "#pipeline-samples"))
    wait.until(lambda d: points(d, "#freshness-chart") >= 2)
    browser.save_screenshot(str(SCREENSHOTS / "pipeline.png"))
    assert severe(browser) == []

    # A refusal: the finished changefeed cannot be resumed; the page shows the server's message.
    time.sleep(max(0.0, (target - datetime.datetime.now(datetime.UTC)).total_seconds()) + 1.0)
    insert_rows(mysql, database, range(100, 110))  # committed after the target: ends its run
    wait_for(lambda: state(server, "ends") == "finished", 20, "ends finished")
    browser.get(f"{server.url}/?refresh=0.5#/changefeed/ends")
    wait.until(lambda d: text(d, "#feed-state") == "finished")
    browser.find_element(By.ID, "resume").click()
    wait.until(lambda d: "is finished; create a new one" in text(d, "#action-message"))
    assert browser.execute_script("return document.getElementById('action-message').className") == "message error"
    assert state(server, "ends") == "finished"
    # The refused POST is the only console error (Chrome logs every 4xx response).
    assert all("/resume" in m and "409" in m for m in severe(browser)), severe(browser)
