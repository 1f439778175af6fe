"""Spark Structured Streaming's Kafka source (Kafka's Java clients inside Spark) reads from our broker:
batch and streaming, from earliest, latest and a timestamp."""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker.conftest import BrokerProcess

BASE_MS = 1_700_000_000_000
LATER_MS = BASE_MS + 100_000


def _fill(broker: BrokerProcess, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(10)
    _produce(broker, topic, [(f"old-{i}", BASE_MS + i) for i in range(10)])
    _produce(broker, topic, [(f"new-{i}", LATER_MS + i) for i in range(10)])


def _produce(broker: BrokerProcess, topic: str, items: list[tuple[str, int]]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 2})
    for index, (value, stamp) in enumerate(items):
        producer.produce(topic, value.encode(), partition=index % 2, timestamp=stamp)
    assert producer.flush(20) == 0


def _reader(spark: Any, broker: BrokerProcess, topic: str, stream: bool = False, **options: str) -> Any:
    source = (spark.readStream if stream else spark.read).format("kafka")
    source = source.option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic)
    for key, value in options.items():
        source = source.option(key, value)
    return source.load()


def _values(frame: Any) -> list[str]:
    return sorted(row.value.decode() for row in frame.select("value").collect())


def test_batch_reads_earliest_latest_and_by_timestamp(spark: Any, broker: BrokerProcess, topic_name: str) -> None:
    _fill(broker, topic_name)
    everything = _reader(spark, broker, topic_name, startingOffsets="earliest", endingOffsets="latest")
    rows = everything.select("partition", "offset", "timestamp").collect()
    assert len(rows) == 20 and {(r.partition, r.offset) for r in rows} == {(p, o) for p in (0, 1) for o in range(10)}
    assert min(int(r.timestamp.timestamp() * 1000) for r in rows) == BASE_MS
    later = _reader(spark, broker, topic_name, startingTimestamp=str(LATER_MS), endingOffsets="latest")
    assert _values(later) == sorted(f"new-{i}" for i in range(10))
    by_partition = _reader(spark, broker, topic_name, endingOffsets="latest",
                           startingOffsetsByTimestamp=f'{{"{topic_name}": {{"0": {LATER_MS + 4}, "1": 0}}}}')
    got = _values(by_partition)
    # Partition 0 holds old/new 0,2,4,6,8; from LATER_MS+4 it gives new-4, new-6, new-8. Partition 1: all.
    assert got == sorted(["new-4", "new-6", "new-8", *(f"old-{i}" for i in range(1, 10, 2)),
                          *(f"new-{i}" for i in range(1, 10, 2))])


def test_streaming_reads_earliest_latest_and_by_timestamp(
    spark: Any, broker: BrokerProcess, topic_name: str
) -> None:
    _fill(broker, topic_name)
    assert _values(_stream_available_now(spark, broker, topic_name, startingOffsets="earliest")) == sorted(
        [*(f"old-{i}" for i in range(10)), *(f"new-{i}" for i in range(10))])
    assert _values(_stream_available_now(spark, broker, topic_name, startingTimestamp=str(LATER_MS))) == sorted(
        f"new-{i}" for i in range(10))
    # latest: only what arrives after the query started.
    name = f"latest_{uuid.uuid4().hex[:8]}"
    query = (_reader(spark, broker, topic_name, stream=True, startingOffsets="latest").writeStream
             .format("memory").queryName(name).trigger(processingTime="500 milliseconds").start())
    try:
        deadline = time.monotonic() + 60
        while query.lastProgress is None and time.monotonic() < deadline:
            time.sleep(0.2)  # the first micro-batch pins the latest offsets
        assert query.lastProgress is not None, "the streaming query never made progress"
        now = int(time.time() * 1000)
        _produce(broker, topic_name, [(f"live-{i}", now + i) for i in range(6)])
        deadline = time.monotonic() + 60
        while spark.table(name).count() < 6 and time.monotonic() < deadline:
            time.sleep(0.3)
        assert _values(spark.table(name)) == sorted(f"live-{i}" for i in range(6))
    finally:
        query.stop()


def _stream_available_now(spark: Any, broker: BrokerProcess, topic: str, **options: str) -> Any:
    name = f"q_{uuid.uuid4().hex[:8]}"
    query = (_reader(spark, broker, topic, stream=True, **options).writeStream.format("memory").queryName(name)
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    return spark.table(name)


def test_read_committed_skips_aborted_transactions(spark: Any, broker: BrokerProcess, topic_name: str) -> None:
    """Spark's Kafka source with kafka.isolation.level=read_committed: aborted records never appear, and the
    batch ends at the last stable offset while a transaction is open (the Java consumer inside Spark)."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"spark-{topic_name}"})
    producer.init_transactions(30)
    for name, commit in (("kept", True), ("dropped", False), ("also", True)):
        producer.begin_transaction()
        for index in range(6):
            producer.produce(topic_name, f"{name}-{index}".encode(), partition=index % 2)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic_name, b"open-0", partition=0)
    producer.flush(10)
    # Spark's batch read with endingOffsets=latest asks the consumer's (read_committed) end offsets.
    committed = _reader(spark, broker, topic_name, startingOffsets="earliest", endingOffsets="latest",
                        **{"kafka.isolation.level": "read_committed"})
    assert _values(committed) == sorted(f"{n}-{i}" for n in ("kept", "also") for i in range(6))
    producer.commit_transaction(30)
    after = _reader(spark, broker, topic_name, startingOffsets="earliest", endingOffsets="latest",
                    **{"kafka.isolation.level": "read_committed"})
    assert _values(after) == sorted([*(f"{n}-{i}" for n in ("kept", "also") for i in range(6)), "open-0"])
