"""KafkaSink with `transactional-id`: a source transaction is one Kafka transaction, acknowledged only once
committed, and a crashed sink's open transaction is aborted by the next instance (init_transactions fences
it): read_committed consumers see whole source transactions or nothing. Against our broker and Apache Kafka."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from lakefeed_testing.own_broker import OwnBroker
from sink.errors import SinkConfigError
from sink.kafka import KafkaSink, prepare_topic
from sink.message import Message, MessageBatch
from sink.uri import parse_sink_uri
from tests.sink.kafka.test_producer import Acks


@pytest.fixture(scope="module")
def own_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnBroker]:
    broker = OwnBroker(Path(tmp_path_factory.mktemp("txn-sink")))
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(params=["lakefeed", "kafka"])
def bootstrap(request: pytest.FixtureRequest) -> str:
    if request.param == "lakefeed":
        return str(request.getfixturevalue("own_broker").bootstrap)
    return str(request.getfixturevalue("kafka").bootstrap_servers)


def _read(bootstrap: str, topic: str, isolation: str, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "isolation.level": isolation})
    consumer.subscribe([topic])
    seen: list[bytes] = []
    try:
        for _ in range(8):
            for record in consumer.consume(500, timeout=1.0):
                assert record.error() is None
                seen.append(record.value())
            if len(seen) >= expected:
                for record in consumer.consume(500, timeout=1.5):  # anything beyond is an error
                    seen.append(record.value())
                break
    finally:
        consumer.close()
    return seen


def _batch(topic: str, name: str, count: int) -> MessageBatch:
    return MessageBatch.of([Message(topic, i % 3, f"k{i}".encode(), f"{name}-{i}".encode()) for i in range(count)])


def test_a_crashed_sinks_open_transaction_is_never_visible(bootstrap: str) -> None:
    topic = f"txs-{uuid.uuid4().hex[:8]}"
    transactional_id = f"cdc-{topic}"
    config = parse_sink_uri(f"kafka://{bootstrap}/{topic}?partition-num=3&transactional-id={transactional_id}")
    info = prepare_topic(config)
    sink = KafkaSink(config, message_limit=info.max_message_bytes)
    acks = Acks()
    sink.send_batch(_batch(topic, "a1", 30), acks)  # source transaction A, in two batches
    sink.send_batch(_batch(topic, "a2", 20), acks)
    assert sink.flush(30) == 0
    assert acks.results == [], "acknowledged before the commit: the checkpoint could pass an aborted transaction"
    sink.transaction_done()
    assert acks.results == [None, None]
    sink.send_batch(_batch(topic, "b", 25), acks)  # B: sent, never committed (the changefeed dies)
    assert sink.flush(30) == 0
    successor = KafkaSink(config, message_limit=info.max_message_bytes)  # fences `sink`, aborting B
    sink.close()
    successor.send_batch(_batch(topic, "c", 10), acks)
    successor.transaction_done()
    successor.close()
    assert acks.results[:2] == [None, None] and acks.results[2:].count(None) == 1  # C's; B never succeeded
    committed = _read(bootstrap, topic, "read_committed", 60)
    assert sorted(committed) == sorted(m.value for n, c in (("a1", 30), ("a2", 20), ("c", 10))
                                       for m in _batch(topic, n, c).messages)
    assert len(_read(bootstrap, topic, "read_uncommitted", 85)) == 85  # B's records are in the log, aborted


def test_transactional_id_needs_acks_all() -> None:
    with pytest.raises(SinkConfigError, match="required-acks=-1"):
        parse_sink_uri("kafka://127.0.0.1:9092/t?transactional-id=x&required-acks=1")
