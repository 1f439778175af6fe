"""Source and trigger options through real Spark and Apache Kafka: `starting_offsets: latest` skips what the
topic held before the first start, and a processing-time trigger keeps applying what arrives later."""

import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from lakefeed_testing import KafkaReference
from spark_pipelines.config import parse_config
from spark_pipelines.io.delta import exists, live_rows
from spark_pipelines.io.kafka import read_stream
from spark_pipelines.jobs.apply import start_query
from tests.spark_pipelines.canal import dml

ES = 1_700_000_000_000


def _wait(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"{what}: not after {timeout:.0f} s")


def test_latest_offsets_and_processing_time_trigger(kafka: KafkaReference, spark: Any, tmp_path: Path) -> None:
    topic = f"latest-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": "all"})
    producer.produce(topic, value=dml("acct", "INSERT", {"id": "1", "owner": "before start"}, es=ES).encode())
    assert producer.flush(30) == 0

    config = parse_config({
        "source": {"bootstrap_servers": kafka.bootstrap_servers, "topics": [topic], "starting_offsets": "latest"},
        "target": {"path": str(tmp_path / "delta")},
        "checkpoint": str(tmp_path / "checkpoint"),
        "trigger": {"processing_time": "1 second"},
    })
    path = config.table_path("shop", "acct")
    query = start_query(spark, read_stream(spark, config.source), config)
    try:
        # The first batch fixes the starting offsets at the end of the topic; then new records arrive.
        _wait(lambda: query.lastProgress is not None, 120, "the first micro-batch")
        for key, es in (("2", ES + 1), ("3", ES + 2)):
            producer.produce(topic, value=dml("acct", "INSERT", {"id": key, "owner": "after"}, es=es).encode())
            assert producer.flush(30) == 0
        _wait(lambda: exists(spark, path) and live_rows(spark, path).count() == 2, 120, "rows sent after the start")
        assert query.isActive, query.exception()  # still running: a processing-time trigger, not availableNow
    finally:
        query.stop()
    assert sorted(tuple(row) for row in live_rows(spark, path).select("id", "owner").collect()) == [
        (2, "after"), (3, "after")]
