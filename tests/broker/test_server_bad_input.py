"""Bad input over TCP: the offender gets an error or a closed connection, everyone else is served."""

from __future__ import annotations

import socket
import struct
import time

from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsV0Response
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from tests.broker.conftest import BrokerProcess
from tests.broker.kio_wire import frame, produce, read_frame, record_batch, roundtrip


def _still_serving(broker: BrokerProcess) -> None:
    _, response = roundtrip(broker.port, 18, 0, ApiVersionsV0())
    assert response.error_code == ErrorCode.none and response.api_keys


def _closed_after(broker: BrokerProcess, payload: bytes) -> bool:
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        sock.sendall(payload)
        sock.settimeout(10)
        try:
            return sock.recv(1) == b""
        except ConnectionResetError:
            return True


def _wait_for_log(broker: BrokerProcess, text: str) -> None:
    deadline = time.monotonic() + 5
    while text not in broker.log_text():
        assert time.monotonic() < deadline, f"no log line with {text!r}"
        time.sleep(0.05)


def test_oversized_frame_closes_the_connection_with_a_log_line(broker: BrokerProcess) -> None:
    assert _closed_after(broker, struct.pack(">i", 2_000_000) + b"\0" * 100)
    _wait_for_log(broker, "over socket.request.max.bytes=1048576")
    _still_serving(broker)


def test_truncated_and_malformed_bodies_close_only_that_connection(broker: BrokerProcess) -> None:
    header = struct.pack(">hhih", 3, 12, 1, 1) + b"c" + b"\x00"
    huge_array = header + b"\xff\xff\xff\xff\x0f"  # compact array claiming 2**32 topics
    assert _closed_after(broker, struct.pack(">i", len(huge_array)) + huge_array)
    _wait_for_log(broker, "cannot fit")
    assert _closed_after(broker, struct.pack(">i", 3) + b"\x00\x03\x00")
    _still_serving(broker)


def test_unknown_api_key_closes_and_unknown_api_versions_version_gets_v0_error(broker: BrokerProcess) -> None:
    unknown = struct.pack(">hhih", 9999, 0, 3, -1)
    assert _closed_after(broker, struct.pack(">i", len(unknown)) + unknown)
    _wait_for_log(broker, "api key 9999 v0")
    newer = struct.pack(">hhih", 18, 42, 77, -1) + b"\x00\x00\x00"
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(newer)) + newer)
        data = read_frame(sock)
    assert struct.unpack_from(">i", data)[0] == 77
    response, _ = entity_reader(ApiVersionsV0Response)(data, 4)
    assert response.error_code == ErrorCode.unsupported_version
    assert any(entry.api_key == 0 for entry in response.api_keys)


def _produce(broker: BrokerProcess, topic: str, records: bytes) -> tuple[int, str | None]:
    return produce(broker.port, topic, records)


def test_corrupt_batch_and_bad_topic_names_get_kafka_errors(broker: BrokerProcess, topic_name: str) -> None:
    batch = bytearray(record_batch([b"hello"]))
    batch[-1] ^= 0xFF
    code, message = _produce(broker, topic_name, bytes(batch))
    assert code == ErrorCode.corrupt_message and message is not None and "CRC-32C" in message
    code, message = _produce(broker, "bad/topic", record_batch([b"x"]))
    assert code == ErrorCode.invalid_topic_exception and message is not None and "bad/topic" in message
    code, _ = _produce(broker, topic_name, record_batch([b"fine"]))
    assert code == ErrorCode.none


def test_idempotent_sequences_over_the_wire(broker: BrokerProcess, topic_name: str) -> None:
    first = record_batch([b"a", b"b"], producer_id=4242, epoch=0, base_sequence=0)
    assert _produce(broker, topic_name, first)[0] == ErrorCode.none
    assert _produce(broker, topic_name, first)[0] == ErrorCode.none  # a retry: acknowledged, not appended
    gap = record_batch([b"d"], producer_id=4242, epoch=0, base_sequence=3)
    assert _produce(broker, topic_name, gap)[0] == ErrorCode.out_of_order_sequence_number
    assert _produce(broker, topic_name, record_batch([b"c"], producer_id=4242, epoch=0, base_sequence=2))[0] == 0
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "x"})
    assert consumer.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=10) == (0, 3)
    consumer.close()


def test_api_versions_v0_roundtrip_on_a_fresh_socket(broker: BrokerProcess) -> None:
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        sock.sendall(b"".join(frame(18, 0, ApiVersionsV0(), c) for c in (5, 6, 7)))  # pipelined
        correlations = [struct.unpack_from(">i", read_frame(sock))[0] for _ in range(3)]
    assert correlations == [5, 6, 7]  # answered in request order
