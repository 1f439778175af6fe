"""KafkaSink against the Apache Kafka reference: acknowledged delivery, size limits, fast close."""

import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer

from lakefeed_testing import KafkaReference
from lakefeed_testing.net import free_port
from sink.errors import MessageTooLargeError, SinkClosedError, SinkError
from sink.kafka import KafkaSink, prepare_topic
from sink.message import Message, MessageBatch
from sink.uri import parse_sink_uri


class Acks:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.results: list[SinkError | None] = []

    def __call__(self, error: SinkError | None) -> None:
        with self.lock:
            self.results.append(error)


def _consume_all(kafka: KafkaReference, topic: str, expected: int) -> list[tuple[int, bytes, bytes]]:
    consumer = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    seen: list[tuple[int, bytes, bytes]] = []
    try:
        for _ in range(60):
            for record in consumer.consume(500, timeout=1.0):
                assert record.error() is None
                seen.append((record.partition(), record.key(), record.value()))
            if len(seen) >= expected:
                break
    finally:
        consumer.close()
    return seen


def test_every_message_is_acknowledged_and_kept_in_order_per_partition(kafka: KafkaReference) -> None:
    config = parse_sink_uri(f"kafka://{kafka.bootstrap_servers}/p-{uuid.uuid4().hex[:8]}?partition-num=3")
    info = prepare_topic(config)
    sink = KafkaSink(config, message_limit=info.max_message_bytes, memory_quota=64 * 1024)
    acks = Acks()
    sent = [Message(config.topic, i % 3, f"k{i % 7}".encode(), f"v{i}".encode() * 50) for i in range(600)]
    for start in range(0, 600, 40):  # 15 batches of 40 messages; the quota holds only a few at a time
        sink.send_batch(MessageBatch.of(sent[start:start + 40]), acks)
    assert sink.flush(30) == 0
    sink.close()
    assert acks.results == [None] * 15, "one acknowledgement per batch"
    received = _consume_all(kafka, config.topic, 600)
    for partition in range(3):
        assert [v for p, _, v in received if p == partition] == [
            m.value for m in sent if m.partition == partition
        ]


def test_message_over_the_limit_is_refused_before_sending(kafka: KafkaReference) -> None:
    config = parse_sink_uri(f"kafka://{kafka.bootstrap_servers}/big-{uuid.uuid4().hex[:8]}")
    sink = KafkaSink(config, message_limit=2048)
    with pytest.raises(MessageTooLargeError, match="exceeds the limit of 2048 bytes"):
        sink.send_batch(MessageBatch.of([Message(config.topic, 0, b"k", b"x" * 4096)]), Acks())
    sink.close()


def test_close_while_broker_is_down_returns_within_a_second() -> None:
    config = parse_sink_uri(f"kafka://127.0.0.1:{free_port()}/down?partition-num=1")
    sink = KafkaSink(config, delivery_timeout_ms=300_000)
    acks = Acks()
    for i in range(5):
        sink.send_batch(MessageBatch.of([Message("down", 0, None, f"v{i}-{j}".encode()) for j in range(10)]), acks)
    time.sleep(0.5)
    started = time.monotonic()
    sink.close()
    assert time.monotonic() - started < 1.0
    assert len(acks.results) == 5, "each batch reports its first error once"
    assert all(isinstance(error, SinkClosedError) for error in acks.results)
    with pytest.raises(SinkClosedError):
        sink.send_batch(MessageBatch.of([Message("down", 0, None, b"late")]), acks)
