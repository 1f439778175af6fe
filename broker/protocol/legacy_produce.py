"""Produce v0-2, decoded by hand only to be refused with UNSUPPORTED_VERSION.

Kafka 4 removed these versions (KIP-896) and kio has no schema for them, yet the broker still
advertises Produce from v0: librdkafka before 2.8 turns compression off unless the Produce range starts
at 0 (KAFKA-18659), so Apache Kafka 4 does the same and answers v0-2 requests with an error instead
of a dropped connection. Request layout (non-flexible, header v1): acks i16 | timeout i32 |
[topic: name string | [partition i32 | records bytes]]. Response: [topic: name | [partition i32 |
error i16 | base_offset i64 | log_append_time i64 (v2)]] | throttle_time_ms i32 (v1+).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from broker.protocol.errors import MalformedFrame

LEGACY_VERSIONS = range(0, 3)
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class LegacyTopic:
    name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LegacyProduceRequest:
    acks: int
    timeout_ms: int
    topics: tuple[LegacyTopic, ...]


class _Reader:
    def __init__(self, frame: bytes, position: int) -> None:
        self.frame, self.position = frame, position

    def take(self, fmt: struct.Struct) -> int:
        if self.position + fmt.size > len(self.frame):
            raise MalformedFrame(f"Produce v0-2 request truncated at byte {self.position}")
        (value,) = fmt.unpack_from(self.frame, self.position)
        self.position += fmt.size
        return int(value)

    def skip(self, size: int) -> bytes:
        if size < 0 or self.position + size > len(self.frame):
            raise MalformedFrame(f"Produce v0-2 request: length {size} at byte {self.position} runs past the frame")
        data = self.frame[self.position : self.position + size]
        self.position += size
        return data

    def count(self) -> int:
        value = self.take(_I32)
        # Every element takes at least two bytes, so a count the frame cannot hold is malformed.
        if value < 0 or value * 2 > len(self.frame) - self.position:
            raise MalformedFrame(f"Produce v0-2 request: array of {value} cannot fit in the frame")
        return value


def decode_request(frame: bytes, offset: int) -> LegacyProduceRequest:
    """Decode the body starting at `offset` (just after the v1 request header)."""
    reader = _Reader(frame, offset)
    acks = reader.take(_I16)
    timeout = reader.take(_I32)
    topics = []
    for _ in range(reader.count()):
        name = reader.skip(reader.take(_I16)).decode("utf-8", "replace")
        partitions = []
        for _ in range(reader.count()):
            partitions.append(reader.take(_I32))
            reader.skip(max(reader.take(_I32), 0))  # a null (-1) record set is empty
        topics.append(LegacyTopic(name, tuple(partitions)))
    return LegacyProduceRequest(acks, timeout, tuple(topics))


def encode_error_response(version: int, request: LegacyProduceRequest, error_code: int) -> bytes:
    """The response body (no header) giving every partition `error_code` and no offsets."""
    parts = [_I32.pack(len(request.topics))]
    for topic in request.topics:
        name = topic.name.encode()
        parts.append(_I16.pack(len(name)) + name + _I32.pack(len(topic.partitions)))
        for partition in topic.partitions:
            parts.append(_I32.pack(partition) + _I16.pack(error_code) + _I64.pack(-1))
            if version >= 2:
                parts.append(_I64.pack(-1))
    if version >= 1:
        parts.append(_I32.pack(0))
    return b"".join(parts)
