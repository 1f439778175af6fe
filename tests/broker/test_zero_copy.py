"""Fetch sends segment data with sendfile on plain TCP (Kafka's zero-copy transfer), and consumers get exactly
what was produced: a real BrokerServer on the disk store in this process, confluent-kafka clients over TCP."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from broker.config import BrokerConfig
from broker.server import BrokerServer
from broker.storage.store import DiskLogStore
from lakefeed_testing.net import free_port


def _produce(bootstrap: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 150_000})
    for value in values:
        producer.produce("zc", value)
    assert producer.flush(20) == 0


def _consume(bootstrap: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "zc", "enable.auto.commit": False,
                         "fetch.max.bytes": 4 << 20, "max.partition.fetch.bytes": 4 << 20})
    consumer.assign([TopicPartition("zc", 0, 0)])
    out: list[bytes] = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                out.append(message.value())
            if len(out) >= count:
                break
    finally:
        consumer.close()
    return out


def test_fetch_sends_segment_bytes_with_sendfile(tmp_path: Path) -> None:
    values = [i.to_bytes(4, "big") * 250 for i in range(600)]  # 1000 B each, ~600 kB in several batches

    async def main() -> tuple[list[bytes], list[int]]:
        port = free_port()
        config = BrokerConfig().with_overrides({"log.dirs": str(tmp_path), "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                                                "num.partitions": "1"})
        server = BrokerServer(config, DiskLogStore(config.data_dir))
        loop = asyncio.get_running_loop()
        sent: list[int] = []
        original = loop.sendfile

        async def counting(transport: Any, file: Any, offset: int = 0, count: int | None = None,
                           *, fallback: bool = True) -> int:
            done = await original(transport, file, offset, count, fallback=fallback)
            sent.append(done)
            return done

        loop.sendfile = counting  # type: ignore[method-assign]
        await server.start()
        try:
            bootstrap = f"127.0.0.1:{port}"
            await asyncio.to_thread(_produce, bootstrap, values)
            got = await asyncio.to_thread(_consume, bootstrap, len(values))
        finally:
            await server.close()
        return got, sent

    got, sent = asyncio.run(main())
    assert got == values
    assert sent and sum(sent) >= 500_000, f"sendfile carried {sum(sent)} bytes of the ~600 kB consumed"
