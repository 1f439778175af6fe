"""`spark-pipeline run` refuses bad config before Spark starts: exit 2 and one stderr line naming the key
and how to fix it (the CLI as a subprocess, as a user runs it; each case takes about a second because
no JVM starts)."""

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

GOOD: dict[str, Any] = {
    "source": {"bootstrap_servers": "127.0.0.1:9092", "topics": ["cdc"]},
    "target": {"path": "/data/delta"},
    "checkpoint": "/data/ckpt",
}


def _run(tmp_path: Path, document: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "pipeline.yaml"
    config.write_text(yaml.safe_dump(document), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "spark_pipelines.cli", "run", "--config", str(config), *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"trigger": {"processing_time": "fast"}},
         "trigger.processing_time: 'fast' is not an interval; write it as '<n> seconds'"),
        ({"source": {**GOOD["source"], "topics": [], "topic_pattern": "cdc-(["}},
         "source.topic_pattern: 'cdc-([' is not a valid regular expression"),
        ({"source_time_zone": "Mars/Olympus"},
         "source_time_zone: 'Mars/Olympus' is not a time zone; use an IANA name such as 'UTC'"),
        ({"source": {**GOOD["source"], "bootstrap_servers": "localhost"}},
         "source.bootstrap_servers: 'localhost' is not host:port"),
        ({"spark": {"conf": {"driver.memory": "1g"}}}, "spark.conf.driver.memory: Spark settings start with 'spark.'"),
        ({"source": {**GOOD["source"], "options": {"kafka.group.id": "g"}}},
         "source.options.kafka.group.id: Spark's Kafka source does not accept it"),
        ({"source": {**GOOD["source"], "options": {"subscribe": "x"}}},
         "source.options.subscribe: the pipeline sets this itself; use source.topics"),
        ({"source": {**GOOD["source"], "options": {"security.protocol": "SSL"}}},
         "source.options.security.protocol: not a Kafka source option; Kafka client settings take the 'kafka.'"),
        # A catalog target in a session we would start, without a warehouse: refused before the JVM starts.
        ({"target": {"database": "lake"}},
         "target.database: a catalog target keeps its tables under the warehouse; set "
         "spark.conf.spark.sql.warehouse.dir"),
    ],
)
def test_bad_config_exits_2_with_one_line(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    started = time.monotonic()
    result = _run(tmp_path, {**GOOD, **change}, "--once")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [f"error: {result.stderr.strip().removeprefix('error: ')}"]
    assert message in result.stderr
    assert "Ivy" not in result.stderr and "py4j" not in result.stderr
    assert time.monotonic() - started < 20  # no Spark start-up (about 15 s on this machine) happened


def test_busy_metrics_port_exits_2_before_spark(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _run(tmp_path, GOOD, "--metrics-port", str(port))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: --metrics-port {port}: cannot listen on 127.0.0.1 (Address already in use); choose a free port"]
