"""DescribeLogDirs through Kafka's own `kafka-log-dirs --describe` (the Java AdminClient): the broker's log dir,
each partition's size on disk and its offset lag (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from lakefeed_testing.kafka_reference import run_kafka_tool
from tests.broker.conftest import BrokerProcess


def log_dirs(bootstrap: str, topic: str, *extra: str) -> dict[int, dict[str, Any]]:
    """broker id -> {"logDir": ..., "partitions": {"<topic>-<p>": {"size":, "offsetLag":, ...}}} from the tool."""
    result = run_kafka_tool("kafka-log-dirs", "--bootstrap-server", bootstrap, "--describe", "--topic-list", topic,
                            *extra, timeout=90)
    assert result.returncode == 0, f"kafka-log-dirs failed:\n{result.stdout}\n{result.stderr[-3000:]}"
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("{")]
    answer: dict[int, dict[str, Any]] = {}
    for broker in json.loads(line)["brokers"]:
        (log_dir,) = broker["logDirs"]
        assert log_dir["error"] is None, log_dir
        answer[broker["broker"]] = {"logDir": log_dir["logDir"],
                                    "partitions": {p["partition"]: p for p in log_dir["partitions"]}}
    return answer


def segment_bytes(partition_dir: Path) -> int:
    """What Kafka reports as a partition's size: its segment (.log) files, not the indexes."""
    return sum(f.stat().st_size for f in partition_dir.glob("*.log"))


def test_kafka_log_dirs_shows_sizes_and_lag(broker: BrokerProcess, topic_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic_name, num_partitions=2, replication_factor=1)])[topic_name].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(50):
        producer.produce(topic_name, value=b"x" * 200 + str(i).encode(), partition=0)
        producer.flush(10)  # one batch each: the size grows by 50 batches
    ((node, described),) = log_dirs(broker.bootstrap, topic_name).items()
    assert node == 1
    assert Path(described["logDir"]) == broker.data_dir.resolve()
    parts = described["partitions"]
    assert set(parts) == {f"{topic_name}-0", f"{topic_name}-1"}
    written = segment_bytes(broker.data_dir / f"{topic_name}-0")
    assert written > 50 * 200
    assert (parts[f"{topic_name}-0"]["size"], parts[f"{topic_name}-1"]["size"]) == (written, 0)
    assert all(p["offsetLag"] == 0 and p["isFuture"] is False for p in parts.values()), parts
