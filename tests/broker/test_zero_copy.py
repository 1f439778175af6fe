"""Fetch sends segment data with sendfile on plain TCP (Kafka's zero-copy transfer), and consumers get exactly
what was produced: a real BrokerServer on the disk store in this process, confluent-kafka clients over TCP."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from broker.log_store import FileRange
from broker.zero_copy import send_parts
from tests.broker.in_process import RUNNERS, serve_in_process


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


@pytest.fixture
def sendfile_counts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bytes each `os.sendfile` call of this test sent, in order."""
    counts: list[int] = []
    original = os.sendfile

    def counting(out_fd: int, in_fd: int, offset: int | None, count: int) -> int:
        done = original(out_fd, in_fd, offset, count)
        counts.append(done)
        return done

    monkeypatch.setattr(os, "sendfile", counting)
    return counts


@contextlib.contextmanager
def _whole_file_range(path: Path) -> Iterator[FileRange]:
    """A range over all of `path`, holding its descriptor open as a segment does."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        yield FileRange(str(path), 0, path.stat().st_size, SimpleNamespace(fd=descriptor))
    finally:
        os.close(descriptor)


@pytest.mark.parametrize("loop_name", ["asyncio", "uvloop"])
def test_fetch_sends_segment_bytes_with_sendfile(tmp_path: Path, sendfile_counts: list[int], loop_name: str) -> None:
    """On both event loops the broker runs on (uvloop by default, asyncio's where uvloop is missing)."""
    values = [i.to_bytes(4, "big") * 250 for i in range(600)]  # 1000 B each, ~600 kB in several batches

    def client(port: int) -> list[bytes]:
        bootstrap = f"127.0.0.1:{port}"
        _produce(bootstrap, values)
        return _consume(bootstrap, len(values))

    got = serve_in_process(tmp_path, loop_name, client)
    assert got == values
    sent = sum(sendfile_counts)
    assert sent >= 500_000, f"sendfile carried {sent} bytes of the ~600 kB consumed"


def test_a_socket_that_fills_up_takes_the_rest_of_the_range_when_it_drains(tmp_path: Path,
                                                                          sendfile_counts: list[int]) -> None:
    """A range larger than the socket's buffer: sendfile stops at EAGAIN and goes on once the peer reads,
    on both loops, and the bytes arrive whole and in order after the bytes written before them."""
    data = os.urandom(8 << 20)
    (tmp_path / "segment").write_bytes(data)

    async def main() -> bytes:
        received = bytearray()
        done = asyncio.Event()

        async def reader_side(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await asyncio.sleep(0.3)  # let the sender hit a full socket first
            while len(received) < 4 + len(data):
                chunk = await reader.read(1 << 16)
                if not chunk:
                    break
                received.extend(chunk)
            done.set()
            writer.close()

        server = await asyncio.start_server(reader_side, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            with _whole_file_range(tmp_path / "segment") as part:
                await send_parts(writer, [b"head", part], zero_copy=True)
                await asyncio.wait_for(done.wait(), 30)
        finally:
            writer.close()
            server.close()
        return bytes(received)

    for run in RUNNERS.values():
        sendfile_counts.clear()
        assert run(main()) == b"head" + data
        assert len(sendfile_counts) > 1, "the socket never filled up: the test did not reach the wait for it to drain"


@pytest.mark.parametrize("loop_name", ["asyncio", "uvloop"])
def test_a_peer_that_resets_while_the_socket_is_full_ends_the_send(tmp_path: Path, loop_name: str) -> None:
    """A consumer that stops reading and then resets its connection: the send fails with a connection error
    (which ends the connection quietly) instead of waiting forever on a socket nobody will drain."""
    (tmp_path / "segment").write_bytes(os.urandom(16 << 20))

    async def main() -> BaseException | None:
        accepted: asyncio.Queue[asyncio.StreamWriter] = asyncio.Queue()

        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await accepted.put(writer)

        server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        broker_side = await accepted.get()
        with _whole_file_range(tmp_path / "segment") as part:
            sending = asyncio.ensure_future(send_parts(broker_side, [part], True))
            try:
                await asyncio.sleep(0.5)  # the socket fills up: nobody reads
                assert not sending.done()
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()  # RST
                done, _ = await asyncio.wait([sending], timeout=10)
                assert done, "the send still waits for a socket whose peer reset it"
                return sending.exception()
            finally:
                sending.cancel()
                broker_side.close()
                server.close()

    error = RUNNERS[loop_name](main())
    assert isinstance(error, ConnectionError), error
