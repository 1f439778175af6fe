"""Memory held by requests being read: bounded broker-wide (queued.max.request.bytes), given back after.

Real broker processes; RSS read from /proc/PID/status.
"""

from __future__ import annotations

import datetime
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.serial import entity_reader

from broker.protocol.apis import response_class
from lakefeed_testing.net import free_port, port_open, wait_until
from tests.broker.kio_wire import frame, read_frame, record_batch

MB = 1024 * 1024


@contextmanager
def _broker(tmp_path: Path, *settings: str) -> Iterator[tuple[int, int]]:
    port = free_port()
    command = [sys.executable, "-m", "broker.cli", "start", "--data-dir", str(tmp_path / "data"),
               "--listeners", f"PLAINTEXT://127.0.0.1:{port}"]
    for setting in settings:
        command += ["--set", setting]
    with (tmp_path / "broker.log").open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: port_open(port), timeout=20, what="broker", alive=lambda: process.poll() is None)
        yield port, process.pid
    finally:
        process.terminate()
        process.wait(timeout=15)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _produce_frame(topic: str, value_bytes: int, correlation_id: int = 1) -> bytes:
    request = ProduceRequest(
        transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=10),
        topic_data=(TopicProduceData(name=topic, partition_data=(
            PartitionProduceData(index=0, records=record_batch([os.urandom(value_bytes)])),)),),
    )  # fmt: skip
    return frame(0, 9, request, correlation_id)


def _produce_error(data: bytes) -> int:
    response, _ = entity_reader(response_class(0, 9))(data, 5)  # correlation id, tagged fields, body
    return int(response.responses[0].partition_responses[0].error_code)


def test_stalled_half_sent_requests_hold_at_most_the_cap(tmp_path: Path) -> None:
    """80 clients each announce a 6 MB request and send 1.5 MB of it, then stall. Without a cap the
    broker buffers all of it (~120 MB); with queued.max.request.bytes=4MB it reads one request and mutes
    the other sockets (the bytes wait in the kernel, the clients feel TCP back-pressure)."""
    with _broker(tmp_path, "queued.max.request.bytes=4194304", "socket.request.max.bytes=8388608") as (port, pid):
        time.sleep(0.5)
        before = _rss_mb(pid)
        with ExitStack() as stack:
            for _ in range(80):
                sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=10))
                sock.setblocking(False)
                chunk = struct.pack(">i", 6 * MB) + b"\0" * (3 * MB // 2)
                with suppress(BlockingIOError):  # as much as the kernel takes: a muted socket fills up
                    sock.send(chunk)
            time.sleep(2)
            grown = _rss_mb(pid) - before
            # Served meanwhile? A new client's small request waits too (the pool is spent) - that is the point;
            # it is served once the stalled clients go away.
        assert grown < 45, f"RSS grew {grown:.0f} MB holding stalled requests"
        late = _produce_frame("after-stall", 1000)
        with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
            sock.sendall(late)
            assert _produce_error(read_frame(sock)) == 0


def test_reading_resumes_when_memory_is_freed(tmp_path: Path) -> None:
    """One client holds the whole budget with a half-sent request; another client's complete request
    is not read until the first goes away, then it is answered."""
    with _broker(tmp_path, "queued.max.request.bytes=1048576", "message.max.bytes=4194304") as (port, _pid):
        holder = socket.create_connection(("127.0.0.1", port), timeout=10)
        holder.sendall(struct.pack(">i", 2 * MB) + b"\0" * 1000)  # reserves 2 MB (> the 1 MB budget)
        time.sleep(0.3)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as waiting:
            waiting.sendall(_produce_frame("resume", 1000, correlation_id=5))
            waiting.settimeout(1.5)
            try:
                waiting.recv(1)
                raise AssertionError("a request was read while the memory budget was spent")
            except TimeoutError:
                pass
            holder.close()  # its reservation is released
            waiting.settimeout(10)
            data = read_frame(waiting)
            assert struct.unpack_from(">i", data)[0] == 5 and _produce_error(data) == 0


def test_memory_of_a_refused_large_produce_is_given_back(tmp_path: Path) -> None:
    """A 50 MB produce over message.max.bytes is refused with MESSAGE_TOO_LARGE; RSS returns to where it was."""
    big = _produce_frame("big", 50 * MB)
    with _broker(tmp_path) as (port, pid):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:  # warm-up: topic, code paths
            sock.sendall(_produce_frame("big", 1000))
            read_frame(sock)
        time.sleep(0.5)
        before = _rss_mb(pid)
        for _ in range(2):
            with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
                sock.sendall(big)
                assert _produce_error(read_frame(sock)) == 10  # MESSAGE_TOO_LARGE
        # The buffers go when the connections' tasks end, a moment after the answers: wait up to 5 s for that.
        deadline = time.monotonic() + 5
        while (grown := _rss_mb(pid) - before) >= 20 and time.monotonic() < deadline:
            time.sleep(0.25)
        assert grown < 20, f"RSS stayed {grown:.0f} MB higher after refused 50 MB requests"
