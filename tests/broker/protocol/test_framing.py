"""Sans-I/O framing: partial and pipelined frames, header versions, limits, malformed input."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v1.request import MetadataRequest as MetadataV1
from kio.schema.metadata.v12.request import MetadataRequest as MetadataV12
from kio.schema.metadata.v12.request import MetadataRequestTopic

from broker.handlers.api_versions import api_versions_response
from broker.protocol.errors import FrameTooLarge, KafkaApiError, MalformedFrame, ProtocolError, error_class
from broker.protocol.framing import RequestReceived, UnsupportedRequest, decode_request, encode_response, frame_size
from tests.broker.kio_wire import frame


def _decode(data: bytes) -> list[RequestReceived | UnsupportedRequest]:
    """Split pipelined frames as the server does: size prefix, then that many bytes."""
    events = []
    while data:
        size = frame_size(data[:4])
        events.append(decode_request(data[4 : 4 + size]))
        data = data[4 + size :]
    return events


def test_pipelined_frames_decode_in_order() -> None:
    data = frame(18, 3, ApiVersionsRequest(client_software_name="x", client_software_version="1"), 1) + frame(
        3, 12, MetadataV12(topics=(MetadataRequestTopic(topic_id=None, name="a"),), allow_auto_topic_creation=True,
                           include_topic_authorized_operations=False), 2
    )
    events = _decode(data)
    assert [e.header.correlation_id for e in events] == [1, 2]
    request = events[1]
    assert isinstance(request, RequestReceived)
    assert request.header.client_id == "tests"  # v2 header keeps the classic client_id
    assert request.body.topics[0].name == "a"


def test_non_flexible_request_uses_header_v1() -> None:
    events = _decode(frame(3, 1, MetadataV1(topics=None), 9))
    assert isinstance(events[0], RequestReceived)
    assert events[0].header.api_version == 1 and events[0].body.topics is None


def test_unknown_key_and_version_are_reported_not_decoded() -> None:
    header = struct.pack(">hhih", 18, 99, 5, 2) + b"id"
    events = _decode(struct.pack(">i", len(header)) + header)
    assert events == [UnsupportedRequest(events[0].header, len(header))]
    assert (events[0].header.api_version, events[0].header.client_id) == (99, "id")
    header = struct.pack(">hhih", 5000, 0, 6, -1)
    (event,) = _decode(struct.pack(">i", len(header)) + header)
    assert isinstance(event, UnsupportedRequest) and event.header.client_id is None


def test_oversized_negative_and_garbage_frames_raise() -> None:
    with pytest.raises(FrameTooLarge, match=r"socket.request.max.bytes=1000"):
        frame_size(struct.pack(">i", 1001), 1000)
    with pytest.raises(MalformedFrame):
        frame_size(struct.pack(">i", -5))
    body = struct.pack(">hhih", 3, 12, 1, 0) + b"\x00" + b"\xff\xff\xff\xff\xff\xff"
    with pytest.raises(MalformedFrame, match="metadata v12 request from client ''"):
        decode_request(body)


def test_api_versions_response_header_is_always_v0() -> None:
    data = encode_response(42, api_versions_response(3))
    size, correlation = struct.unpack_from(">ii", data)
    assert (size, correlation) == (len(data) - 4, 42)
    assert data[8:10] == b"\x00\x00"  # error code right after the correlation id: no tagged fields


def test_error_classes_carry_code_and_retriable() -> None:
    assert error_class(6).__name__ == "NotLeaderOrFollowerError"
    assert error_class(6).retriable is True and error_class(10).retriable is False
    error = error_class(10)(None, "too big")
    assert isinstance(error, KafkaApiError) and isinstance(error, ProtocolError) and error.code == 10
    assert error_class(-9999) is error_class(-1)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([(0, 9), (1, 12), (3, 12), (11, 5), (8, 8), (19, 7), (2, 8)]), st.binary(max_size=200))
def test_fuzzed_bodies_of_real_apis_decode_or_fail_cleanly(api: tuple[int, int], body: bytes) -> None:
    header = struct.pack(">hhih", api[0], api[1], 1, 1) + b"c" + (b"\x00" if api[1] >= 9 else b"")
    payload = header + body
    with contextlib.suppress(MalformedFrame):
        decode_request(payload)
