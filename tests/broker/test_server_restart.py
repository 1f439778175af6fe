"""`broker start` stopped (SIGTERM or kill -9) and started again on the same data dir keeps topics and
their configs, data, committed offsets (from __consumer_offsets) and idempotent producer state."""

from __future__ import annotations

import datetime
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest

from lakefeed_testing.own_broker import OwnBroker
from tests.broker.kio_wire import produce, record_batch, roundtrip

pytestmark = pytest.mark.integration
PRODUCER_ID = 777_000  # a raw idempotent producer, far from the ids the broker hands out


def _stop(broker: OwnBroker, how: str) -> None:
    process = broker.process
    assert process is not None
    if how == "kill":
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        broker.process = None
    else:
        broker.stop()


def _consumer(broker: OwnBroker, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})


def _consume(consumer: Consumer, count: int, timeout: float = 30) -> list[Any]:
    messages: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(messages) < count and time.monotonic() < deadline:
        message = consumer.poll(0.3)
        if message is not None and message.error() is None:
            messages.append(message)
    return messages


def _new_producer_id(broker: OwnBroker) -> int:
    _, response = roundtrip(broker.port, 22, 4, InitProducerIdRequest(
        transactional_id=None, transaction_timeout=datetime.timedelta(seconds=60), producer_id=-1,
        producer_epoch=-1))  # fmt: skip
    assert response.error_code == ErrorCode.none
    return int(response.producer_id)


@pytest.mark.parametrize("how", ["terminate", "kill"])
def test_restart_keeps_topics_data_offsets_and_producer_state(tmp_path: Path, how: str) -> None:
    broker = OwnBroker(tmp_path)
    topic, group = "durable", "g-durable"
    values = [f"m{i}".encode() for i in range(100)]
    broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, 2, 1, config={"retention.ms": "86400000"})])[topic].result(10)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 5})
        for i, value in enumerate(values):
            producer.produce(topic, value, partition=i % 2)
        assert producer.flush(20) == 0
        consumer = _consumer(broker, group)
        consumer.subscribe([topic])
        first = _consume(consumer, 60)
        assert len(first) == 60
        consumer.commit(asynchronous=False)
        committed = {tp.partition: tp.offset for tp in consumer.committed(
            [TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)}  # fmt: skip
        consumer.close()
        batch = record_batch([b"p0", b"p1"], producer_id=PRODUCER_ID, epoch=0, base_sequence=0)
        assert produce(broker.port, "idem", batch) == (ErrorCode.none, None)
        issued = _new_producer_id(broker)
        _stop(broker, how)

        broker.start()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
        configs = admin.describe_configs([resource])[resource].result(10)
        assert configs["retention.ms"].value == "86400000"
        assert sorted(admin.list_topics(topic, timeout=10).topics[topic].partitions) == [0, 1]
        # Committed offsets came back from __consumer_offsets: the group resumes exactly where it was.
        consumer = _consumer(broker, group)
        after = {tp.partition: tp.offset for tp in consumer.committed(
            [TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)}  # fmt: skip
        assert after == committed
        consumer.subscribe([topic])
        rest = _consume(consumer, 40)
        consumer.close()
        assert sorted(m.value() for m in first + rest) == sorted(values)
        assert not {(m.partition(), m.offset()) for m in first} & {(m.partition(), m.offset()) for m in rest}
        # Producer state: a retry of the last batch is acknowledged without a second append, a gap is
        # refused, the next sequence is accepted, and new producer ids are never reused.
        assert produce(broker.port, "idem", batch) == (ErrorCode.none, None)
        gap = record_batch([b"p3"], producer_id=PRODUCER_ID, epoch=0, base_sequence=3)
        assert produce(broker.port, "idem", gap)[0] == ErrorCode.out_of_order_sequence_number
        following = record_batch([b"p2"], producer_id=PRODUCER_ID, epoch=0, base_sequence=2)
        assert produce(broker.port, "idem", following) == (ErrorCode.none, None)
        probe = _consumer(broker, "probe")
        assert probe.get_watermark_offsets(TopicPartition("idem", 0), timeout=10) == (0, 3)
        probe.close()
        assert _new_producer_id(broker) > issued
    finally:
        broker.stop()


def _read_committed(broker: OwnBroker, topic: str, seconds: float = 3.0) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"rc-{time.monotonic_ns()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        message = consumer.poll(0.3)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    return values


def test_kill_9_keeps_open_transactions_and_times_them_out_after_restart(tmp_path: Path) -> None:
    """An open transaction survives kill -9 (producer state snapshots + replay, __transaction_state): its
    records stay invisible to read_committed consumers until its producer commits, and one whose producer
    never comes back is aborted when its timeout passes on the restarted broker."""
    broker = OwnBroker(tmp_path, {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"})
    broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("txn", 1, 1)])["txn"].result(10)
        survivor = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "survivor"})
        survivor.init_transactions(30)
        survivor.begin_transaction()
        survivor.produce("txn", b"kept")
        survivor.flush(10)
        abandoned = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "abandoned",
                              "transaction.timeout.ms": 20000, "message.timeout.ms": 20000})
        abandoned.init_transactions(30)
        abandoned.begin_transaction()
        abandoned.produce("txn", b"dropped")
        abandoned.flush(10)
        _stop(broker, "kill")
        broker.start()
        assert _read_committed(broker, "txn") == []  # both transactions still open after the restart
        survivor.commit_transaction(60)  # the restarted coordinator knows it and its partition
        assert _read_committed(broker, "txn") == [b"kept"]
        # The abandoned transaction holds the last stable offset at its first record until its timeout aborts it.
        probe = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "probe-txn",
                          "isolation.level": "read_committed"})
        stable: list[int] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and stable[-1:] != [4]:
            stable.append(probe.get_watermark_offsets(TopicPartition("txn", 0), timeout=10, cached=False)[1])
            time.sleep(0.5)
        probe.close()
        assert stable[0] == 1 and stable[-1] == 4, stable  # 2 records + 2 markers, all stable
        assert _read_committed(broker, "txn") == [b"kept"]
    finally:
        broker.stop()
