"""Committed offsets kept in the internal compacted topic `__consumer_offsets`, as Kafka keeps them.

Each OffsetCommit appends one record batch (a record per partition, key group/topic/partition) to the
partition `abs(javaHashCode(group)) % partitions`; deletes append tombstones. On start the broker
replays every partition into the in-memory `OffsetStore`, so offsets survive a restart with any
`LogStore` that persists (the disk store), and compaction keeps the topic small.
"""

from __future__ import annotations

import datetime
import io
import logging
import struct
from collections.abc import Callable, Iterator

from kio.records.readers import read_batch
from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64

from broker.coordinator.offsets import CommittedOffset, OffsetChange, OffsetStore
from broker.coordinator.offsets_codec import (
    GroupMetadataValue,
    OffsetKey,
    OffsetRecordError,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_value,
    encode_group_key,
    encode_group_value,
    encode_key,
    encode_value,
)
from broker.log_store import PartitionLog, materialize
from broker.protocol.control import decode_marker
from broker.protocol.errors import KafkaApiError
from broker.protocol.records import CONTROL_FLAG, TRANSACTIONAL_FLAG

OFFSETS_TOPIC = "__consumer_offsets"
# offsets.topic.segment.bytes default; compaction needs closed segments, so not 1 GiB.
OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600"}
_READ_BYTES = 1 << 20
_BATCH_PREFIX = struct.Struct(">qi11xi")
_MARKER_TYPE = struct.Struct(">h")  # a control record's key: version i16, type i16 (0 ABORT, 1 COMMIT)
_COMMIT = 1  # base offset, batch length, (epoch magic crc attributes), last delta

log = logging.getLogger("broker.offsets")


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (int32 over UTF-16 code units)."""
    value = 0
    data = text.encode("utf-16-be")
    for index in range(0, len(data), 2):
        value = (31 * value + (data[index] << 8 | data[index + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def partition_for(group: str, partitions: int) -> int:
    """Kafka's `Utils.abs(groupId.hashCode) % offsets.topic.num.partitions`."""
    code = java_string_hash(group)
    return (0 if code == -(1 << 31) else abs(code)) % partitions


def encode_batch(group: str, changes: list[OffsetChange], now_ms: int, producer_id: int = -1,
                 producer_epoch: int = -1) -> bytes:
    return encode_records([
        (encode_key(OffsetKey(group, change.topic, change.partition)),
         None if change.value is None else encode_value(
             OffsetValue(change.value.offset, change.value.leader_epoch, change.value.metadata, now_ms)))
        for change in changes
    ], now_ms, producer_id, producer_epoch)  # fmt: skip


def encode_group_batch(group: str, value: GroupMetadataValue | None, now_ms: int) -> bytes:
    """One record: the group's metadata, or a tombstone when the group is deleted."""
    return encode_records([(encode_group_key(group), None if value is None else encode_group_value(value))], now_ms)


def encode_records(pairs: list[tuple[bytes, bytes | None]], now_ms: int, producer_id: int = -1,
                   producer_epoch: int = -1) -> bytes:
    """One record batch of (key, value) records; with a producer id it is a transactional batch (a
    TxnOffsetCommit's offsets, which count only once the transaction's COMMIT marker follows)."""
    stamp = TZAwareMicros.parse(datetime.datetime.fromtimestamp(now_ms / 1000, datetime.UTC))
    records = tuple(
        Record(attributes=i8(0), timestamp=stamp, offset=i64(index), key=key, value=value, headers=())
        for index, (key, value) in enumerate(pairs)
    )
    attributes = TRANSACTIONAL_FLAG if producer_id >= 0 else 0
    buffer = io.BytesIO()
    write_new_batch(buffer, NewRecordBatch(producer_id=i64(producer_id), producer_epoch=i16(producer_epoch),
                                           base_sequence=i32(-1), records=records, attributes=i16(attributes)))
    return buffer.getvalue()


def read_batches(plog: PartitionLog) -> Iterator[bytes]:
    """Every whole record batch from the log start to its end; file ranges are read with pread."""
    offset, max_bytes = plog.log_start_offset, _READ_BYTES
    while offset < plog.log_end_offset:
        data = materialize(plog.read(offset, max_bytes).chunks)
        position, progressed = 0, False
        while position + _BATCH_PREFIX.size <= len(data):
            base, length, last_delta = _BATCH_PREFIX.unpack_from(data, position)
            end = position + 12 + length
            if length < 0 or end > len(data):
                break  # a read cut inside a batch: the next read starts at it
            if base + last_delta >= offset:
                yield data[position:end]
            offset, progressed, position = max(offset, base + last_delta + 1), True, end
        if not progressed:
            if not data or max_bytes >= 1 << 30:
                return
            max_bytes *= 2  # one batch larger than a read


ApplyGroup = Callable[[str, GroupMetadataValue | None], None]


def replay(plog: PartitionLog, offsets: OffsetStore, apply_group: ApplyGroup) -> int:
    """Feed every record of one partition to `offsets` (commits) or `apply_group(group, metadata)` (group
    metadata), in log order (later records win); returns how many were applied. Unreadable records are
    skipped with a log line, never fatal: a broker that cannot read one record still starts."""
    return sum(apply_batch(data, offsets, apply_group) for data in read_batches(plog))


def apply_batch(data: bytes, offsets: OffsetStore, apply_group: ApplyGroup) -> int:
    """Feed the records of one record batch to `offsets`/`apply_group` (also what a follower replica does).

    A transactional batch (TxnOffsetCommit) is staged under its producer id and counts only when that
    producer's COMMIT marker follows; an ABORT marker drops it (Kafka's GroupMetadataManager does the same
    with its pendingTransactionalOffsetCommits)."""
    applied = 0
    try:
        batch, _ = read_batch(data, 0)
    except ValueError as exc:  # bad CRC, compressed or malformed records
        log.warning("skipping an unreadable %s batch: %s", OFFSETS_TOPIC, exc)
        return 0
    if batch.attributes & CONTROL_FLAG:
        try:
            commit = decode_marker(data).commit
        except KafkaApiError as exc:
            log.warning("skipping an unreadable %s transaction marker: %s", OFFSETS_TOPIC, exc)
            return 0
        offsets.complete_transaction(batch.producer_id, commit)
        return 0
    transactional = bool(batch.attributes & TRANSACTIONAL_FLAG)
    for record in batch.records:
        try:
            if record.key is None:
                continue
            key = decode_key(record.key)
            if isinstance(key, str):
                apply_group(key, None if record.value is None else decode_group_value(record.value))
                applied += 1
                continue
            value = None if record.value is None else decode_value(record.value)
        except OffsetRecordError as exc:
            log.warning("skipping unreadable %s record at offset %d: %s", OFFSETS_TOPIC, record.offset, exc)
            continue
        committed = None if value is None else CommittedOffset(value.offset, value.leader_epoch, value.metadata)
        change = OffsetChange(key.topic, key.partition, committed)
        if transactional:
            offsets.stage(batch.producer_id, key.group, [change])
        else:
            offsets.load(key.group, key.topic, key.partition, committed)
        applied += 1
    return applied
