"""Malformed requests over TCP: every array and length of Produce, null where the schema forbids it.

As Apache Kafka does for a request it cannot parse (RequestContext.parseRequest ->
InvalidRequestException), the broker closes that connection without a response and logs one WARNING line
naming the client and the API; a null where the schema allows it (Produce records) gets Kafka's error code.
No ERROR and no traceback in the log, and the broker keeps serving everyone else.
"""

from __future__ import annotations

import socket
import struct
import time

import pytest
from kio.schema.errors import ErrorCode

from tests.broker.conftest import BrokerProcess
from tests.broker.kio_wire import read_frame, record_batch


def _string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _produce_v8(*, topics: int | None = 1, name: str | None = "t", partitions: int | None = 1,
                records: bytes | int | None = b"", transactional_id_length: int = -1) -> bytes:
    """A classic (non-flexible) Produce v8 frame, with any count or length replaced."""
    body = struct.pack(">hhi", transactional_id_length, 1, 5000)
    body += struct.pack(">i", -1 if topics is None else topics)
    if topics:
        body += _string(name) + struct.pack(">i", -1 if partitions is None else partitions)
        if partitions:
            body += struct.pack(">i", 0)
            if isinstance(records, int):
                body += struct.pack(">i", records)
            elif records is None:
                body += struct.pack(">i", -1)
            else:
                body += struct.pack(">i", len(records)) + records
    payload = struct.pack(">hhih", 0, 8, 11, 5) + b"tests" + body
    return struct.pack(">i", len(payload)) + payload


def _produce_v12(*, topics: int = 2, partitions: int = 2, name_length: int = 2) -> bytes:
    """A flexible Produce v12 frame: compact lengths are N+1, 0 meaning null."""
    body = b"\x00" + struct.pack(">hi", 1, 5000) + bytes([topics])
    if topics > 1:
        body += bytes([name_length]) + b"t"[: max(name_length - 1, 0)] + bytes([partitions])
        if partitions > 1:
            body += struct.pack(">i", 0) + b"\x01" + b"\x00"  # index 0, empty records, no tags
        body += b"\x00"
    body += b"\x00"
    payload = struct.pack(">hhih", 0, 12, 11, 5) + b"tests" + b"\x00" + body
    return struct.pack(">i", len(payload)) + payload


def _closed_without_answer(port: int, payload: bytes) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(payload)
        try:
            return sock.recv(1) == b""
        except ConnectionResetError:
            return True


def _new_log(broker: BrokerProcess, since: int, text: str) -> str:
    deadline = time.monotonic() + 5
    while text not in broker.log_text()[since:]:
        assert time.monotonic() < deadline, f"no log line with {text!r}: {broker.log_text()[since:][-2000:]}"
        time.sleep(0.05)
    return broker.log_text()[since:]


@pytest.mark.parametrize(("frame", "field"), [
    (_produce_v8(topics=None), "ProduceRequest.topic_data"),
    (_produce_v8(name=None), "TopicProduceData.name"),
    (_produce_v8(partitions=None), "TopicProduceData.partition_data"),
    (_produce_v8(records=-7), "PartitionProduceData.records has an invalid length -7"),
    (_produce_v8(transactional_id_length=-3), "ProduceRequest.transactional_id has an invalid length -3"),
    (_produce_v8(topics=5000), "array of 5000 elements cannot fit"),
    (_produce_v12(topics=0), "ProduceRequest.topic_data"),
    (_produce_v12(name_length=0), "TopicProduceData.name"),
    (_produce_v12(partitions=0), "TopicProduceData.partition_data"),
], ids=["topics-null", "name-null", "partitions-null", "records-negative", "txn-id-negative", "topics-too-many",
        "v12-topics-null", "v12-name-null", "v12-partitions-null"])
def test_malformed_produce_closes_the_connection_with_one_warning(broker: BrokerProcess, frame: bytes,
                                                                   field: str) -> None:
    since = len(broker.log_text())
    assert _closed_without_answer(broker.port, frame)
    text = _new_log(broker, since, field)
    lines = [line for line in text.splitlines() if field in line]
    assert len(lines) == 1 and '"level":"warning"' in lines[0], lines
    assert "from client 'tests'" in lines[0] and "malformed produce v" in lines[0]
    assert '"level":"error"' not in text and "Traceback" not in text


def test_null_records_get_corrupt_message_and_the_connection_stays(broker: BrokerProcess) -> None:
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        for records in (None, record_batch([b"ok"])):
            sock.sendall(_produce_v8(name="malformed-ok", records=records))
            data = read_frame(sock)
            # correlation id, topics count, name, partitions count, index, error code
            (correlation,) = struct.unpack_from(">i", data, 0)
            offset = 4 + 4 + 2 + len("malformed-ok") + 4 + 4
            (code,) = struct.unpack_from(">h", data, offset)
            assert correlation == 11
            assert code == (ErrorCode.corrupt_message if records is None else ErrorCode.none)
