"""Kafka's `__consumer_offsets` record formats (sans-I/O), so the topic reads like Apache Kafka's.

Key (big-endian): version i16, then for offset commits (version 0/1) group string | topic string |
partition i32, and for group metadata (version 2) group string. Offset commit value version 3:
version i16 | offset i64 | leader_epoch i32 | metadata string | commit_timestamp i64. Group metadata value
version 3 (Kafka's GroupMetadataValue.json, written on every completed rebalance): version i16 |
protocol_type string | generation i32 | protocol string | leader string | current_state_timestamp i64 |
members array (i32 count) of member_id string | group_instance_id string | client_id string |
client_host string | rebalance_timeout i32 | session_timeout i32 | subscription bytes | assignment bytes.
A null value is a tombstone: compaction then drops the key. Strings are i16 length + UTF-8 (null is
length -1); bytes are i32 length + data.
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
GROUP_VALUE_VERSION = 3  # the newest non-flexible version; Kafka reads versions 0-4


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


@dataclass(frozen=True, slots=True)
class StoredMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """A classic group as its coordinator last stored it: what a new coordinator loads so that members keep
    their generation (Kafka's GroupMetadataManager.storeGroup / loadGroupsAndOffsets)."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_timestamp: int
    members: tuple[StoredMember, ...]


def encode_string(value: str | None) -> bytes:
    if value is None:
        return _I16.pack(-1)
    data = value.encode()
    return _I16.pack(len(data)) + data


def encode_key(key: OffsetKey) -> bytes:
    return (_I16.pack(COMMIT_KEY_VERSION) + encode_string(key.group) + encode_string(key.topic)
            + _I32.pack(key.partition))


def encode_value(value: OffsetValue) -> bytes:
    head = _COMMIT_VALUE.pack(COMMIT_VALUE_VERSION, value.offset, value.leader_epoch)
    return head + encode_string(value.metadata) + _I64.pack(value.commit_timestamp)


def encode_group_key(group: str) -> bytes:
    return _I16.pack(GROUP_KEY_VERSION) + encode_string(group)


def _bytes(value: bytes) -> bytes:
    return _I32.pack(len(value)) + value


def encode_group_value(value: GroupMetadataValue) -> bytes:
    parts = [_I16.pack(GROUP_VALUE_VERSION), encode_string(value.protocol_type), _I32.pack(value.generation),
             encode_string(value.protocol), encode_string(value.leader), _I64.pack(value.state_timestamp),
             _I32.pack(len(value.members))]
    for m in value.members:
        parts += [encode_string(m.member_id), encode_string(m.group_instance_id), encode_string(m.client_id),
                  encode_string(m.client_host),
                  _I32.pack(m.rebalance_timeout_ms), _I32.pack(m.session_timeout_ms), _bytes(m.subscription),
                  _bytes(m.assignment)]
    return b"".join(parts)


class RecordReader:
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

    def bytes(self) -> bytes:
        (length,) = self.take(_I32)
        if length < 0 or self.position + length > len(self.data):
            raise OffsetRecordError(f"bytes field of {length} bytes runs past the record")
        data = self.data[self.position : self.position + length]
        self.position += length
        return data


def decode_key(data: bytes) -> OffsetKey | str:
    """An offset commit key, or the group name of a group metadata key."""
    reader = RecordReader(data)
    (version,) = reader.take(_I16)
    if version in (0, 1):
        group, topic = reader.string(), reader.string()
        (partition,) = reader.take(_I32)
        return OffsetKey(group or "", topic or "", partition)
    if version == GROUP_KEY_VERSION:
        return reader.string() or ""
    raise OffsetRecordError(f"unknown __consumer_offsets key version {version}")


def decode_value(data: bytes) -> OffsetValue:
    reader = RecordReader(data)
    (version,) = reader.take(_I16)
    if version not in (1, 2, 3):  # v4 (flexible) is never written here
        raise OffsetRecordError(f"offset commit value version {version} is not one of 1-3")
    (offset,) = reader.take(_I64)
    leader_epoch = reader.take(_I32)[0] if version >= 3 else -1
    metadata = reader.string()
    (timestamp,) = reader.take(_I64)
    return OffsetValue(offset, leader_epoch, metadata, timestamp)


def decode_group_value(data: bytes) -> GroupMetadataValue:
    """Group metadata value versions 0-3 (the non-flexible ones; version 4 is not read yet)."""
    reader = RecordReader(data)
    (version,) = reader.take(_I16)
    if version not in (0, 1, 2, 3):
        raise OffsetRecordError(f"group metadata value version {version} is not one of 0-3")
    protocol_type = reader.string() or ""
    (generation,) = reader.take(_I32)
    protocol, leader = reader.string(), reader.string()
    state_timestamp = reader.take(_I64)[0] if version >= 2 else -1
    (count,) = reader.take(_I32)
    members = []
    for _ in range(max(count, 0)):
        member_id = reader.string() or ""
        instance_id = reader.string() if version >= 3 else None
        client_id, client_host = reader.string() or "", reader.string() or ""
        (rebalance,) = reader.take(_I32) if version >= 1 else (0,)
        (session,) = reader.take(_I32)
        members.append(StoredMember(member_id, instance_id, client_id, client_host, rebalance or session, session,
                                    reader.bytes(), reader.bytes()))
    return GroupMetadataValue(protocol_type, generation, protocol, leader, state_timestamp, tuple(members))
