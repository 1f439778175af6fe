"""The running broker applies each topic's cleanup.policy by itself: retention by size moves the log
start offset forward (whole segments only), and compaction leaves the newest value per key."""

import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker.conftest import BrokerProcess


def _create(broker: BrokerProcess, name: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=configs)])[name].result(timeout=10)


def _produce(broker: BrokerProcess, topic: str, items: list[tuple[bytes, bytes]], compression: str = "none") -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "batch.num.messages": 1,
                         "compression.type": compression})
    for key, value in items:
        producer.produce(topic, value, key)
        producer.flush(10)  # one batch each, so segments roll on the small segment.bytes
    assert producer.flush(10) == 0


def _low_watermark(broker: BrokerProcess, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": uuid.uuid4().hex})
    try:
        low, _ = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(low)
    finally:
        consumer.close()


def _read_all(broker: BrokerProcess, topic: str) -> list[tuple[int, bytes, bytes]]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": uuid.uuid4().hex,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[tuple[int, bytes, bytes]] = []
    try:
        idle = 0
        while idle < 4:
            message = consumer.poll(0.5)
            if message is None or message.error():
                idle += 1
                continue
            out.append((message.offset(), message.key(), message.value()))
    finally:
        consumer.close()
    return out


def _wait_for(condition: object, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


def test_retention_bytes_deletes_old_segments(broker: BrokerProcess, topic_name: str) -> None:
    _create(broker, topic_name, {"segment.bytes": "2048", "retention.bytes": "4096"})
    _produce(broker, topic_name, [(b"k", b"v" * 500) for _ in range(40)])
    assert _wait_for(lambda: _low_watermark(broker, topic_name) > 0), "retention never moved the log start"
    remaining = _read_all(broker, topic_name)
    assert remaining and remaining[-1][0] == 39  # the newest records stay
    assert remaining[0][0] == _low_watermark(broker, topic_name)


@pytest.mark.parametrize("compression", ["none", "zstd"])  # the cleaner decodes compressed batches
def test_compaction_keeps_the_newest_value_per_key(broker: BrokerProcess, topic_name: str, compression: str) -> None:
    _create(broker, topic_name, {"cleanup.policy": "compact", "segment.bytes": "1024",
                                 "delete.retention.ms": "0"})
    items = [(f"k{i % 5}".encode(), f"v{i}".encode() * 20) for i in range(60)]
    _produce(broker, topic_name, items, compression)
    newest = {key: value for key, value in items}

    def compacted() -> bool:
        return len(_read_all(broker, topic_name)) < 30

    assert _wait_for(compacted), "the cleaner never ran"
    records = _read_all(broker, topic_name)
    latest_read: dict[bytes, bytes] = {}
    for _, key, value in records:
        latest_read[key] = value
    assert latest_read == newest  # nothing newest is lost, offsets keep their order
    assert [o for o, _, _ in records] == sorted(o for o, _, _ in records)
