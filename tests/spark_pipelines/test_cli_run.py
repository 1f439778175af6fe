"""`spark-pipeline run` end to end against the bundled broker: a catalog target keeps every row across two
`--once` runs (each its own Spark process) and leaves no temporary warehouse behind; a run prints one
line per micro-batch, serves the pipeline metrics and, when a batch fails, its root cause on one line."""

import json
import logging
import os
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from lakefeed_testing.net import free_port
from lakefeed_testing.own_broker import OwnBroker
from spark_pipelines.cli import main as pipeline_cli
from tests.ops.test_ops_live import PIPELINE_METRICS
from tests.spark_pipelines.canal import dml

ES = 1_700_000_000_000


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnBroker]:
    own = OwnBroker(tmp_path_factory.mktemp("pipeline-broker"))
    own.start()
    try:
        yield own
    finally:
        own.stop()


def _topic(broker: OwnBroker) -> str:
    topic = f"cli-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
    return topic


def _produce(broker: OwnBroker, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    for value in values:
        producer.produce(topic, value=value.encode())
    assert producer.flush(30) == 0


def _acct(first: int, last: int) -> list[str]:
    return [dml("acct", "INSERT", {"id": str(i), "owner": f"o{i}"}, es=ES + i) for i in range(first, last + 1)]


def test_catalog_target_keeps_every_row_across_runs(broker: OwnBroker, spark: Any, tmp_path: Path) -> None:
    """Two `spark-pipeline run --once` processes on one catalog target: the second run's table holds the
    first run's rows too (before, each run had its own temporary warehouse and the first 6 rows were
    stranded in it). Nothing is left in the temporary directory."""
    topic = _topic(broker)
    warehouse, scratch = tmp_path / "warehouse", tmp_path / "tmp"
    scratch.mkdir()
    config = tmp_path / "pipeline.yaml"
    config.write_text(yaml.safe_dump({
        "source": {"bootstrap_servers": broker.bootstrap, "topics": [topic]},
        "target": {"database": "lake"},
        "checkpoint": str(tmp_path / "checkpoint"),
        "spark": {"conf": {"spark.sql.warehouse.dir": str(warehouse), "spark.ui.enabled": False,
                           "spark.driver.memory": "1g"}},
    }), encoding="utf-8")
    env = {**os.environ, "TMPDIR": str(scratch)}
    outputs = []
    for first, last in ((1, 6), (7, 7)):
        _produce(broker, topic, _acct(first, last))
        result = subprocess.run([sys.executable, "-m", "spark_pipelines.cli", "run", "--config", str(config),
                                 "--once"], capture_output=True, text=True, timeout=400, env=env)
        assert result.returncode == 0, result.stderr
        outputs.append(result.stderr)
    table = spark.read.format("delta").load(str(warehouse / "lake.db" / "acct"))
    assert sorted(row["id"] for row in table.collect()) == [1, 2, 3, 4, 5, 6, 7]
    assert "shop.acct +6 | offsets behind: " + topic + " 0" in outputs[0]
    assert "shop.acct +1 | offsets behind: " + topic + " 0" in outputs[1]
    # Sized to local[2] by the product's defaults, not Spark's 200 and 10000 and Delta's 50 (the YAML above sets
    # none of them), expressions interpreted.
    started = ("started Spark on local[2]: 2 shuffle partitions, 2 Delta snapshot partitions, file listing in 2 "
               "tasks, expressions NO_CODEGEN")
    assert started in outputs[0]
    assert "resolution report" not in outputs[0] and "INFO py4j" not in outputs[0]  # quiet output
    assert not list(scratch.glob("lakefeed-warehouse-*"))


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_batch_lines_metrics_and_a_failed_batch(broker: OwnBroker, spark: Any, tmp_path: Path,
                                                restore_logging: None) -> None:
    """In-process on the shared session (which the command honours): JSON batch lines, the metrics on
    --metrics-port, then a table without a primary key stops the query with its root cause on one line."""
    topic = _topic(broker)
    config = tmp_path / "pipeline.yaml"
    config.write_text(yaml.safe_dump({
        "source": {"bootstrap_servers": broker.bootstrap, "topics": [topic]},
        "target": {"path": str(tmp_path / "delta")}, "checkpoint": str(tmp_path / "checkpoint"),
    }), encoding="utf-8")
    _produce(broker, topic, _acct(1, 3))
    port = free_port()
    result = CliRunner().invoke(pipeline_cli, ["run", "--config", str(config), "--once", "--log-format", "json",
                                               "--metrics-port", str(port)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    batches = [line for line in lines if line["logger"] == "spark_pipelines.batches"]
    assert len(batches) == 1, result.stderr
    batch = batches[0]
    assert batch["level"] == "info" and batch["ts"].endswith("Z")
    assert (batch["batch_id"], batch["rows"], batch["offsets_behind"]) == (0, {"shop.acct": 3}, {topic: 0})
    assert batch["freshness_s"] > 0 and batch["duration_s"] > 0
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        metrics = response.read().decode()
    for sample in ("lakefeed_pipeline_batches_total 1.0", 'lakefeed_pipeline_rows_applied_total{table="shop.acct"} 3.0',
                   f'lakefeed_pipeline_offsets_behind{{topic="{topic}"}} 0.0',
                   "lakefeed_pipeline_batch_duration_seconds_count 1.0", "lakefeed_pipeline_freshness_seconds ",
                   "lakefeed_pipeline_last_batch_timestamp_seconds "):
        assert sample in metrics, sample
    # ops/'s dashboard and alerts use these (tests/ops/test_ops_live.py checks ops/ against this list)
    served = {line.split("{")[0].split(" ")[0] for line in metrics.splitlines() if not line.startswith("#")}
    assert served >= PIPELINE_METRICS, sorted(PIPELINE_METRICS - served)

    _produce(broker, topic, [dml("nopk", "INSERT", {"id": "1", "owner": "x"}, pk=(), es=ES + 10)])
    failed = CliRunner().invoke(pipeline_cli, ["run", "--config", str(config), "--once"])
    assert failed.exit_code == 1
    errors = [line for line in failed.stderr.splitlines() if "error" in line.lower()]
    assert errors == ["error: the pipeline stopped: SchemaError: table shop.nopk has no primary key and no unique "
                      "key on NOT NULL columns (pkNames and the message key name none), so its rows cannot be "
                      "identified; add a primary key in MySQL, or exclude the table (tables.exclude), or send "
                      "message-key=handle-key"], failed.stderr
    assert "Python Proxy" not in failed.stderr and "Traceback" not in failed.stderr


def test_run_once_under_merge_on_read_ends_with_the_buffer_merged(broker: OwnBroker, spark: Any, tmp_path: Path,
                                                                   restore_logging: None) -> None:
    """`target.merge_every_seconds` far longer than the run: the batch waits in the change buffer, and the
    command merges it before it exits, so the plain Delta table holds every change after each `--once`."""
    from spark_pipelines.config import load_config
    from spark_pipelines.io.change_buffer import buffer_location, pending_messages
    from spark_pipelines.io.delta import live_rows

    topic = _topic(broker)
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump({
        "source": {"bootstrap_servers": broker.bootstrap, "topics": [topic]},
        "target": {"path": str(tmp_path / "delta"), "merge_every_seconds": 3600},
        "checkpoint": str(tmp_path / "checkpoint"),
    }), encoding="utf-8")
    config = load_config(path)
    table = config.table_path("shop", "acct")
    for first, last in ((1, 3), (4, 5)):
        _produce(broker, topic, _acct(first, last))
        result = CliRunner().invoke(pipeline_cli, ["run", "--config", str(path), "--once"])
        assert result.exit_code == 0, result.output
        assert pending_messages(spark, buffer_location(str(tmp_path / "delta"))) is None
        assert sorted(tuple(r) for r in live_rows(spark, table).collect()) == \
            [(i, f"o{i}") for i in range(1, last + 1)]
