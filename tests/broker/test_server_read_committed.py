"""A real client over TCP reads transactions by isolation level: librdkafka's read_committed consumer drops the
records of aborted transactions, stops before an open one and reads it once committed; read_uncommitted
reads every data record. A BrokerServer on the disk store in this process; the transactional batches go in by
the leader append path and the markers by PartitionManager.write_marker (the coordinator's way)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from broker.config import BrokerConfig
from broker.server import BrokerServer
from broker.storage.store import DiskLogStore
from lakefeed_testing.net import free_port
from tests.broker.storage.batches import record_batch

A, B, C = 2001, 2002, 2003


def _txn(pid: int, values: list[bytes]) -> bytes:
    return record_batch([(None, v) for v in values], producer_id=pid, producer_epoch=0, base_sequence=0,
                        transactional=True)


def _consume(bootstrap: str, isolation: str, count: int, quiet: float) -> tuple[list[bytes], tuple[int, int]]:
    """The values read from offset 0: `count` of them, then nothing more for `quiet` seconds."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"tx-{isolation}", "enable.auto.commit": False,
                         "isolation.level": isolation, "enable.partition.eof": False})
    consumer.assign([TopicPartition("tx", 0, 0)])
    out: list[bytes] = []
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(out) < count:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                out.append(message.value())
        end = time.monotonic() + quiet
        while time.monotonic() < end:  # and nothing beyond
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                out.append(message.value())
        watermarks = consumer.get_watermark_offsets(TopicPartition("tx", 0), timeout=10)
    finally:
        consumer.close()
    return out, watermarks


def test_read_committed_consumers_see_committed_records_only_and_stop_at_open_transactions(tmp_path: Path) -> None:
    async def main() -> dict[str, tuple[list[bytes], tuple[int, int]]]:
        port = free_port()
        config = BrokerConfig().with_overrides({"log.dirs": str(tmp_path), "listeners": f"PLAINTEXT://127.0.0.1:{port}"})
        server = BrokerServer(config, DiskLogStore(config.data_dir))
        await server.start()
        bootstrap = f"127.0.0.1:{port}"
        seen = {}
        try:
            state = server.state
            topic = state.create_topic("tx", 1, {})
            for data, marker in ((record_batch([(None, b"p0")]), None), (_txn(A, [b"a1", b"a2"]), (A, False)),
                                 (_txn(B, [b"b1"]), (B, True)), (record_batch([(None, b"p1")]), None),
                                 (_txn(C, [b"c1"]), None), (record_batch([(None, b"p2")]), None)):
                state.partitions.append_as_leader(topic, 0, data, 1 << 20)
                if marker is not None:
                    state.partitions.write_marker(topic, 0, marker[0], 0, commit=marker[1], coordinator_epoch=0)
            # offsets: p0 0, a1-a2 1-2, ABORT 3, b1 4, COMMIT 5, p1 6, c1 7 (open), p2 8
            seen["open, committed"] = await asyncio.to_thread(_consume, bootstrap, "read_committed", 3, 2.0)
            seen["open, uncommitted"] = await asyncio.to_thread(_consume, bootstrap, "read_uncommitted", 7, 0.5)
            state.partitions.write_marker(topic, 0, C, 0, commit=True, coordinator_epoch=0)  # offset 9
            seen["done, committed"] = await asyncio.to_thread(_consume, bootstrap, "read_committed", 5, 0.5)
        finally:
            await server.close()
        return seen

    seen = asyncio.run(main())
    assert seen["open, committed"] == ([b"p0", b"b1", b"p1"], (0, 7))  # high offset: the LSO
    assert seen["open, uncommitted"] == ([b"p0", b"a1", b"a2", b"b1", b"p1", b"c1", b"p2"], (0, 9))
    assert seen["done, committed"] == ([b"p0", b"b1", b"p1", b"c1", b"p2"], (0, 10))
