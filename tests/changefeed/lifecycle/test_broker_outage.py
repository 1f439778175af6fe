"""A broker outage shows as warning (with the error, its time and the next retry, backing off), then the
changefeed goes back to normal by itself and delivers what was written meanwhile. Metrics show it too."""

import time
import urllib.request
from pathlib import Path

import pytest

from lakefeed_testing import MySQLServer
from tests.changefeed.lifecycle.conftest import (
    Process,
    StartServer,
    TopicReader,
    cli_json,
    insert_rows,
    source_uri,
    start_broker,
    wait_for,
)


def _metrics(server: Process) -> str:
    with urllib.request.urlopen(f"{server.url}/metrics", timeout=10) as response:
        return str(response.read().decode())


def test_outage_warning_with_backoff_then_normal(
    mysql: MySQLServer, database: str, start_server: StartServer, processes: list[Process], tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))", database=database)
    other_db = f"{database}_o"
    mysql.execute(f"CREATE DATABASE `{other_db}`")
    request.addfinalizer(lambda: mysql.execute(f"DROP DATABASE IF EXISTS `{other_db}`"))
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))", database=other_db)
    broker = start_broker(tmp_path / "b1")
    healthy = start_broker(tmp_path / "healthy")
    processes.extend([broker, healthy])
    server = start_server()
    topic = f"out-{database}"
    for cf_id, db, bootstrap in (("out", database, broker.bootstrap), ("other", other_db, healthy.bootstrap)):
        config = tmp_path / f"{cf_id}.yaml"
        config.write_text(f"filter:\n  rules: ['{db}.*']\n")
        cli_json(server, "create", "--changefeed-id", cf_id, "--source", source_uri(mysql),
                 "--sink-uri", f"kafka://{bootstrap}/{topic}", "--config", str(config))
    insert_rows(mysql, database, range(0, 50))
    reader = TopicReader(broker.bootstrap, topic)
    try:
        reader.wait_ids(set(range(50)), timeout=60)
    finally:
        reader.close()

    broker.stop()
    insert_rows(mysql, database, range(50, 100))
    warned = wait_for(lambda: (q := cli_json(server, "query", "-c", "out"))["state"] == "warning" and q, 40,
                      "state warning while the broker is down")
    assert warned["error"]["message"] and warned["error"]["time"] and warned["next_retry"]
    retries = wait_for(lambda: (q := cli_json(server, "query", "-c", "out"))["retry_count"] >= 2 and q, 40,
                       "a second retry (backing off)")
    assert retries["state"] in ("warning", "normal")
    assert 'changefeed_state{changefeed="out",state="warning"} 1.0' in _metrics(server)
    # Another changefeed of the same server keeps delivering during the outage.
    insert_rows(mysql, other_db, range(0, 30))
    reader = TopicReader(healthy.bootstrap, topic)
    try:
        reader.wait_ids(set(range(30)), timeout=30)
    finally:
        reader.close()
    assert cli_json(server, "query", "-c", "other")["state"] == "normal"

    restarted = start_broker(tmp_path / "b2", broker.port)  # same address, fresh (the broker keeps memory only)
    processes.append(restarted)
    wait_for(lambda: cli_json(server, "query", "-c", "out")["state"] == "normal", 60, "normal again by itself")
    reader = TopicReader(restarted.bootstrap, topic)
    try:
        reader.wait_ids(set(range(50, 100)), timeout=60)  # written during the outage: delivered after it
    finally:
        reader.close()
    metrics = _metrics(server)
    assert 'changefeed_state{changefeed="out",state="normal"} 1.0' in metrics
    assert 'changefeed_retries_total{changefeed="out"}' in metrics
    assert "changefeed_checkpoint_lag_seconds" in metrics and f'table="{database}.t"' in metrics
    query = cli_json(server, "query", "-c", "out", "--simple")
    assert query["state"] == "normal" and query["error"] is None

    # Pausing during an outage cancels retries and closes the producer within a second.
    restarted.stop()
    insert_rows(mysql, database, range(100, 110))
    time.sleep(1)
    started = time.monotonic()
    assert cli_json(server, "pause", "-c", "out")["state"] == "stopped"
    wait_for(lambda: "changefeed out: runner stopped in" in server.log().split("stopped; stopping its runner")[-1],
             5, "the runner to stop")
    assert time.monotonic() - started < 5
    stopped_in = float(server.log().rsplit("changefeed out: runner stopped in ", 1)[1].split(" s")[0])
    assert stopped_in <= 1.2
