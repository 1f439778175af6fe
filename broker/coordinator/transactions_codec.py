"""Kafka's `__transaction_state` record formats (sans-I/O), so the topic reads like Apache Kafka's.

Key (TransactionLogKey.json, version 0): version i16 | transactional_id string.
Value (TransactionLogValue.json, version 0, the one Kafka writes for clients of transaction version 1):
version i16 | producer_id i64 | producer_epoch i16 | transaction_timeout_ms i32 | transaction_status i8 |
transaction_partitions nullable array (i32 count, -1 null) of (topic string | partition_ids array of i32) |
last_update_timestamp_ms i64 | start_timestamp_ms i64. A null value is a tombstone (an expired
transactional id). Status bytes are Kafka's TransactionState ids. Strings are i16 length + UTF-8.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from broker.coordinator.offsets_codec import OffsetRecordError, RecordReader, encode_string

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_HEAD = struct.Struct(">hqhib")  # version, producer id, epoch, timeout, status
_TIMES = struct.Struct(">qq")
KEY_VERSION = 0
VALUE_VERSION = 0


class TxnStatus(enum.IntEnum):
    """Kafka's TransactionState, with the ids it writes to the log."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display(self) -> str:
        """The name DescribeTransactions / ListTransactions and kafka-transactions use ("PrepareCommit")."""
        return "".join(part.capitalize() for part in self.name.split("_"))


class TransactionRecordError(OffsetRecordError):
    """A `__transaction_state` record this broker cannot read (truncated, unknown version or status)."""


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    status: TxnStatus
    partitions: tuple[tuple[str, int], ...]
    last_update_ms: int
    start_ms: int


def encode_key(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + encode_string(transactional_id)


def decode_key(data: bytes) -> str:
    reader = RecordReader(data)
    (version,) = reader.take(_I16)
    if version != KEY_VERSION:
        raise TransactionRecordError(f"unknown __transaction_state key version {version}")
    return reader.string() or ""


def encode_value(value: TxnLogValue) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(value.partitions):
        by_topic.setdefault(topic, []).append(partition)
    parts = [_HEAD.pack(VALUE_VERSION, value.producer_id, value.producer_epoch, value.timeout_ms, value.status),
             _I32.pack(len(by_topic))]
    for topic, ids in by_topic.items():
        parts += [encode_string(topic), _I32.pack(len(ids)), *(_I32.pack(i) for i in ids)]
    parts.append(_TIMES.pack(value.last_update_ms, value.start_ms))
    return b"".join(parts)


def decode_value(data: bytes) -> TxnLogValue:
    reader = RecordReader(data)
    version, producer_id, epoch, timeout_ms, status = reader.take(_HEAD)
    if version != VALUE_VERSION:
        # Version 1 (flexible, transaction version 2 clients) is never written by this broker.
        raise TransactionRecordError(f"__transaction_state value version {version} is not 0")
    try:
        state = TxnStatus(status)
    except ValueError:
        raise TransactionRecordError(f"unknown transaction status {status}") from None
    (count,) = reader.take(_I32)
    partitions: list[tuple[str, int]] = []
    for _ in range(max(count, 0)):
        topic = reader.string() or ""
        (ids,) = reader.take(_I32)
        partitions += [(topic, reader.take(_I32)[0]) for _ in range(max(ids, 0))]
    last_update_ms, start_ms = reader.take(_TIMES)
    return TxnLogValue(producer_id, epoch, timeout_ms, state, tuple(partitions), last_update_ms, start_ms)
