"""The shipped Grafana dashboard and Prometheus alert rules (ops/) against real processes: every metric they
use is served by a live `broker start --metrics-port` and a live `changefeed server` running a changefeed
from MariaDB (snapshot, then binlog) into that broker, read by a committing consumer group. The changefeed
server's new families carry values that follow what happened, and removing the changefeed drops its series.

The Spark pipeline's metrics are checked against `PIPELINE_METRICS` (the names docs/spark-pipelines.md
promises) until a live pipeline is cheap enough for this module."""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from lakefeed_testing import MySQLServer
from lakefeed_testing.net import free_port, port_open, wait_until
from lakefeed_testing.prometheus import Scrape, scrape
from tests.changefeed.lifecycle.conftest import (
    FAST,
    Process,
    TopicReader,
    _spawn,
    cli,
    cli_json,
    insert_rows,
    source_uri,
    wait_for,
)

pytestmark = pytest.mark.integration

OPS = Path(__file__).resolve().parents[2] / "ops"
DASHBOARD = OPS / "grafana" / "lakefeed-dashboard.json"
ALERTS = OPS / "prometheus" / "alerts.yaml"
PIPELINE_METRICS = frozenset({
    "lakefeed_pipeline_batches_total",
    "lakefeed_pipeline_batch_duration_seconds_bucket",
    "lakefeed_pipeline_rows_applied_total",
    "lakefeed_pipeline_offsets_behind",
    "lakefeed_pipeline_freshness_seconds",
    "lakefeed_pipeline_last_batch_timestamp_seconds",
})
_METRIC = re.compile(r"\b((?:kafka|changefeed|lakefeed)_[a-z0-9_]+)")


@dataclass(frozen=True)
class Live:
    broker_metrics: str
    server: Process
    changefeed: str
    database: str
    topic: str

    @property
    def server_metrics(self) -> str:
        return f"{self.server.url}/metrics"


@pytest.fixture(scope="module")
def live(mysql: MySQLServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("ops")
    database = f"ops_{uuid.uuid4().hex[:8]}"
    mysql.execute(f"CREATE DATABASE `{database}`", f"CREATE TABLE `{database}`.t (id INT PRIMARY KEY, v VARCHAR(40))")
    insert_rows(mysql, database, range(0, 50))  # before the changefeed: the snapshot reads them
    started: list[Process] = []
    try:
        port, metrics_port = free_port(), free_port()
        broker = _spawn("broker", [sys.executable, "-m", "broker.cli", "start", "--data-dir", str(root / "broker"),
                                   "--listeners", f"PLAINTEXT://127.0.0.1:{port}", "--metrics-port", str(metrics_port),
                                   "--set", "group.initial.rebalance.delay.ms=0"], root / "broker.log", port)
        started.append(broker)
        wait_until(lambda: port_open(metrics_port), timeout=10, what="broker metrics")
        server_port = free_port()
        server = _spawn("changefeed server", [
            sys.executable, "-m", "changefeed.cli", "server", "--data-dir", str(root / "server"),
            "--listen", f"127.0.0.1:{server_port}", "--server-id", "ops", *FAST, "--binlog-probe-interval", "0.5",
            "--log-format", "json"], root / "server.log", server_port)
        started.append(server)
        config = root / "cf.yaml"
        config.write_text(f"snapshot-mode: initial\nfilter:\n  rules: ['{database}.*']\n")
        topic = f"ops-{database}"
        cli_json(server, "create", "--changefeed-id", "ops", "--source", source_uri(mysql),
                 "--sink-uri", f"kafka://{broker.bootstrap}/{topic}?partition-num=1", "--config", str(config))
        reader = TopicReader(broker.bootstrap, topic)
        try:
            reader.wait_ids(set(range(50)), timeout=60)
            insert_rows(mysql, database, range(50, 100))  # through the binlog
            reader.wait_ids(set(range(100)), timeout=60)
            reader.consumer.commit(asynchronous=False)  # a group with committed offsets: consumer-group lag
        finally:
            reader.close()
        yield Live(f"http://127.0.0.1:{metrics_port}/metrics", server, "ops", database, topic)
    finally:
        for proc in reversed(started):
            proc.stop()
        mysql.execute(f"DROP DATABASE IF EXISTS `{database}`")


def _exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    alerts = yaml.safe_load(ALERTS.read_text())
    exprs += [rule["expr"] for group in alerts["groups"] for rule in group["rules"]]
    return exprs


def test_changefeed_server_metrics_follow_the_run(live: Live) -> None:
    table = f"{live.database}.t"

    def settled() -> Scrape | None:
        metrics = scrape(live.server_metrics)
        rows = metrics.value("changefeed_rows_total", changefeed="ops", table=table) or 0
        behind = metrics.value("changefeed_source_binlog_behind_bytes", changefeed="ops")
        return metrics if rows >= 100 and behind is not None else None

    metrics = wait_for(settled, 30, "the server to report 100 rows and the binlog distance")
    assert metrics.value("changefeed_source_connected", changefeed="ops") == 1
    assert metrics.value("changefeed_state", changefeed="ops", state="normal") == 1
    # one observation per delivered batch (a transaction's messages): the snapshot and the later writes
    assert (metrics.value("changefeed_delivery_latency_seconds_count", changefeed="ops") or 0) >= 2
    assert metrics.value("changefeed_snapshot_rows_read", changefeed="ops", table=table) == 50
    assert metrics.value("changefeed_snapshot_table_done", changefeed="ops", table=table) == 1
    assert metrics.value("changefeed_memory_quota_bytes", changefeed="ops") == 64 * 1024 * 1024
    assert metrics.value("changefeed_memory_quota_used_bytes", changefeed="ops") == 0  # all acknowledged
    # idle after the inserts: the checkpoint reaches (about) the head; other tests' writes may follow it
    assert 0 <= (metrics.value("changefeed_source_binlog_behind_bytes", changefeed="ops") or 0) < 1_000_000
    assert 0 <= (metrics.value("changefeed_checkpoint_lag_seconds", changefeed="ops") or -1) < 3600
    assert (metrics.value("changefeed_checkpoint_timestamp_seconds", changefeed="ops") or 0) > 1.7e9


def test_dashboard_and_alerts_use_only_metrics_the_processes_serve(live: Live) -> None:
    used = {name for expr in _exprs() for name in _METRIC.findall(expr)}
    assert len(used) > 30, used
    served = scrape(live.broker_metrics).names() | scrape(live.server_metrics).names() | PIPELINE_METRICS
    missing = sorted(used - served)
    assert missing == [], f"ops/ uses metrics no live process serves: {missing}"


def test_removed_changefeed_leaves_the_live_metrics(live: Live) -> None:
    assert scrape(live.server_metrics).with_label("changefeed", "ops")
    result = cli(live.server, "remove", "--changefeed-id", "ops")
    assert result.returncode == 0, result.stderr
    wait_for(lambda: not scrape(live.server_metrics).with_label("changefeed", "ops"), 10,
             "the removed changefeed's series to leave /metrics")


def test_server_log_is_json_lines_with_iso_timestamps(live: Live) -> None:
    lines = [line for line in live.server.log().splitlines() if line.startswith("{")]
    assert lines, live.server.log()[-2000:]
    entry = json.loads(lines[0])
    assert {"ts", "level", "logger", "msg"} <= entry.keys()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["ts"]), entry
    assert not [line for line in live.server.log().splitlines() if re.match(r"%\d\|", line)], "raw librdkafka lines"
