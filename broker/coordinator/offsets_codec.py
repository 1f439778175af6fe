"""Kafka's `__consumer_offsets` record formats (sans-I/O), so the topic reads like Apache Kafka's.

Key (big-endian): version i16, then for offset commits (version 0/1) group string | topic string |
partition i32, and for group metadata (version 2) group string. Offset commit value version 3:
version i16 | offset i64 | leader_epoch i32 | metadata string | commit_timestamp i64. A null value is a
tombstone: compaction then drops the key. Strings are i16 length + UTF-8 (null is length -1).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_COMMIT_VALUE = struct.Struct(">hqi")
_I64 = struct.Struct(">q")
COMMIT_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
COMMIT_VALUE_VERSION = 3


class OffsetRecordError(ValueError):
    """A `__consumer_offsets` record this broker cannot read (truncated, unknown version)."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp: int


def _string(value: str | None) -> bytes:
    if value is None:
        return _I16.pack(-1)
    data = value.encode()
    return _I16.pack(len(data)) + data


def encode_key(key: OffsetKey) -> bytes:
    return _I16.pack(COMMIT_KEY_VERSION) + _string(key.group) + _string(key.topic) + _I32.pack(key.partition)


def encode_value(value: OffsetValue) -> bytes:
    head = _COMMIT_VALUE.pack(COMMIT_VALUE_VERSION, value.offset, value.leader_epoch)
    return head + _string(value.metadata) + _I64.pack(value.commit_timestamp)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.position = data, 0

    def take(self, fmt: struct.Struct) -> tuple[int, ...]:
        if self.position + fmt.size > len(self.data):
            raise OffsetRecordError(f"record truncated at byte {self.position} of {len(self.data)}")
        values = fmt.unpack_from(self.data, self.position)
        self.position += fmt.size
        return tuple(int(v) for v in values)

    def string(self) -> str | None:
        (length,) = self.take(_I16)
        if length < 0:
            return None
        if self.position + length > len(self.data):
            raise OffsetRecordError(f"string of {length} bytes runs past the record")
        text = self.data[self.position : self.position + length].decode("utf-8", "replace")
        self.position += length
        return text


def decode_key(data: bytes) -> OffsetKey | str:
    """An offset commit key, or the group name of a group metadata key."""
    reader = _Reader(data)
    (version,) = reader.take(_I16)
    if version in (0, 1):
        group, topic = reader.string(), reader.string()
        (partition,) = reader.take(_I32)
        return OffsetKey(group or "", topic or "", partition)
    if version == GROUP_KEY_VERSION:
        return reader.string() or ""
    raise OffsetRecordError(f"unknown __consumer_offsets key version {version}")


def decode_value(data: bytes) -> OffsetValue:
    reader = _Reader(data)
    (version,) = reader.take(_I16)
    if version not in (1, 2, 3):  # v4 (flexible) is never written here
        raise OffsetRecordError(f"offset commit value version {version} is not one of 1-3")
    (offset,) = reader.take(_I64)
    leader_epoch = reader.take(_I32)[0] if version >= 3 else -1
    metadata = reader.string()
    (timestamp,) = reader.take(_I64)
    return OffsetValue(offset, leader_epoch, metadata, timestamp)
