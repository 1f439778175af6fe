"""Answers to pipelined requests: those already read go out in one write, in order, and none waits behind a
request that waits (a long-polling Fetch). A real BrokerServer in this process on both event loops, a raw
socket client that sends several requests before reading any answer (as Kafka's clients do, up to
max.in.flight.requests.per.connection)."""

from __future__ import annotations

import asyncio
import datetime
import socket
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.static.primitive import i8, i32, i64

from lakefeed_testing.net import wait_until
from tests.broker.conftest import Target
from tests.broker.in_process import serve_in_process
from tests.broker.kio_wire import frame, read_frame, roundtrip


def _correlation(data: bytes) -> int:
    return int(struct.unpack_from(">i", data, 0)[0])


@pytest.mark.parametrize("loop_name", ["asyncio", "uvloop"])
def test_requests_read_together_are_answered_in_order_with_one_write(tmp_path: Path, loop_name: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[int] = []
    original = asyncio.StreamWriter.writelines

    def counting(self: asyncio.StreamWriter, data: Any) -> None:
        data = list(data)
        writes.append(len(data))
        original(self, data)

    monkeypatch.setattr(asyncio.StreamWriter, "writelines", counting)
    requests = 40

    def client(port: int) -> list[int]:
        pipelined = b"".join(frame(18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                                   correlation_id=n) for n in range(requests))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(pipelined)  # one segment of a few kB: the broker reads all of it at once
            return [_correlation(read_frame(sock)) for _ in range(requests)]

    assert serve_in_process(tmp_path, loop_name, client) == list(range(requests))
    assert sum(writes) == requests
    assert len(writes) <= 3, f"{requests} answers in {len(writes)} writes (sizes {writes}): none were held together"


def _fetch(topic: str, wait_ms: int) -> FetchRequest:
    return FetchRequest(
        replica_id=i32(-1), max_wait=datetime.timedelta(milliseconds=wait_ms), min_bytes=i32(1),  # type: ignore[arg-type]
        max_bytes=i32(1 << 20), isolation_level=i8(0),
        topics=(FetchTopic(topic=topic, partitions=(FetchPartition(
            partition=i32(0), fetch_offset=i64(0), log_start_offset=i64(-1), partition_max_bytes=i32(1 << 20),
        ),)),),
        forgotten_topics_data=(),
    )  # fmt: skip


def _fetch_error(port: int, fetch: FetchRequest) -> ErrorCode:
    _, response = roundtrip(port, 1, 12, fetch)
    return ErrorCode(response.responses[0].partitions[0].error_code)


def _answers_around_a_waiting_fetch(bootstrap: str, topic: str, wait_ms: int) -> tuple[float, float, list[int]]:
    """Send ApiVersions, a Fetch that waits `wait_ms` on an empty partition, ApiVersions, all before reading:
    (seconds to the first answer, seconds to all three, their correlation ids in arrival order)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)
    host, port = bootstrap.rsplit(":", 1)
    # Apache Kafka answers NOT_LEADER_OR_FOLLOWER at once until the new partition's leader is in place.
    wait_until(lambda: _fetch_error(int(port), _fetch(topic, 0)) == ErrorCode.none, timeout=20,
               what=f"{topic}[0] served by its leader")
    fetch = _fetch(topic, wait_ms)
    versions = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(frame(18, 3, versions, correlation_id=1) + frame(1, 12, fetch, correlation_id=2)
                     + frame(18, 3, versions, correlation_id=3))
        first = read_frame(sock)
        first_at = time.monotonic() - started
        second, third = read_frame(sock), read_frame(sock)
        return first_at, time.monotonic() - started, [_correlation(d) for d in (first, second, third)]


def _check_not_held(got: tuple[float, float, list[int]], wait_ms: int) -> None:
    first_at, all_at, order = got
    assert order == [1, 2, 3]
    # The Fetch waits its max_wait for data that never comes; the answer read before it goes out at once.
    assert first_at < 1.0, f"the first answer came after {first_at:.2f} s, behind the waiting Fetch"
    assert all_at >= wait_ms / 1000 * 0.9


@pytest.mark.parametrize("loop_name", ["asyncio", "uvloop"])
def test_an_answer_is_not_held_behind_a_fetch_that_waits_for_data(tmp_path: Path, loop_name: str) -> None:
    got = serve_in_process(tmp_path, loop_name,
                           lambda port: _answers_around_a_waiting_fetch(f"127.0.0.1:{port}", "empty", 3000))
    _check_not_held(got, 3000)


def test_answers_around_a_waiting_fetch_come_as_apache_kafka_sends_them(target: Target, topic_name: str) -> None:
    """The same pipelined requests against `broker start` (its default loop) and Apache Kafka 4.3."""
    _check_not_held(_answers_around_a_waiting_fetch(target.bootstrap, topic_name, 3000), 3000)
