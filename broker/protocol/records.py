"""RecordBatch v2 headers: parse and validate what producers send, patch offsets for appends.

Layout (Kafka protocol guide, "Record Batch"):
baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 | crc u32 |
attributes i16 | lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 | producerId i64 |
producerEpoch i16 | baseSequence i32 | recordCount i32 | records...
The CRC (CRC-32C) covers attributes..end, so patching baseOffset and the leader epoch keeps it valid.
Only the header is read: record bodies (possibly compressed) are kept exactly as received.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c
from kio.schema.errors import ErrorCode

from broker.protocol.errors import KafkaApiError

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength
_CRC_START = 21  # attributes begin here
_EPOCH_OFFSET = 12
COMPRESSION_MASK = 0x07
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
LOG_APPEND_TIME_FLAG = 0x08


@dataclass(frozen=True, slots=True)
class BatchHeader:
    position: int
    base_offset: int
    length: int  # whole batch, including the 12-byte log overhead
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)


def _corrupt(message: str) -> KafkaApiError:
    return KafkaApiError(ErrorCode.corrupt_message, message)


def iter_batches(data: bytes | bytearray | memoryview, *, verify_crc: bool = True) -> Iterator[BatchHeader]:
    """Every batch header in `data`; raises CORRUPT_MESSAGE (or UNSUPPORTED_FOR_MESSAGE_FORMAT for
    magic < 2) naming the problem. Trailing partial batches are errors: producers never send them."""
    view = memoryview(data)
    position = 0
    while position < len(view):
        if len(view) - position < HEADER_SIZE:
            raise _corrupt(f"truncated record batch header at byte {position}")
        fields = HEADER.unpack_from(view, position)
        length = fields[1] + LOG_OVERHEAD
        magic = fields[3]
        if magic != 2:
            raise KafkaApiError(
                ErrorCode.unsupported_for_message_format,
                f"record batch magic {magic}: only RecordBatch v2 (magic 2, Produce v3+) is accepted",
            )
        if length < HEADER_SIZE or position + length > len(view):
            raise _corrupt(f"record batch at byte {position} declares length {fields[1]} beyond the data")
        header = BatchHeader(position, fields[0], length, *fields[2:])
        if header.record_count < 0 or header.last_offset_delta < 0:
            raise _corrupt(f"record batch at byte {position} has negative record count or offset delta")
        if verify_crc:
            actual = crc32c.crc32c(view[position + _CRC_START : position + length])
            if actual != header.crc:
                raise _corrupt(f"record batch at byte {position}: CRC-32C {actual:#x} != {header.crc:#x}")
        yield header
        position += length


def patch_batch(buffer: bytearray, header: BatchHeader, base_offset: int, leader_epoch: int) -> None:
    """Assign the batch its log offsets and the leader epoch (outside the CRC, so no recompute)."""
    struct.pack_into(">q", buffer, header.position, base_offset)
    struct.pack_into(">i", buffer, header.position + _EPOCH_OFFSET, leader_epoch)


def patch_log_append_time(buffer: bytearray, header: BatchHeader, timestamp: int) -> None:
    """For topics with message.timestamp.type=LogAppendTime: set the flag and maxTimestamp, re-CRC."""
    attributes = header.attributes | LOG_APPEND_TIME_FLAG
    struct.pack_into(">h", buffer, header.position + _CRC_START, attributes)
    struct.pack_into(">q", buffer, header.position + 35, timestamp)
    crc = crc32c.crc32c(memoryview(buffer)[header.position + _CRC_START : header.position + header.length])
    struct.pack_into(">I", buffer, header.position + 17, crc)


def read_varint(view: memoryview, position: int) -> tuple[int, int]:
    """The zigzag varint at `position` and the position after it (CORRUPT_MESSAGE when truncated)."""
    shift = result = 0
    while True:
        if position >= len(view) or shift > 63:
            raise _corrupt("truncated or oversized varint in a record")
        byte = view[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), position
        shift += 7


def record_timestamps(data: bytes | memoryview, header: BatchHeader) -> Iterator[tuple[int, int]]:
    """(offset delta, timestamp) of each record of an uncompressed batch, for timestamp lookups."""
    if header.compression:
        raise ValueError("record_timestamps needs an uncompressed batch")
    view = memoryview(data)[header.position : header.position + header.length]
    position = HEADER_SIZE
    for _ in range(header.record_count):
        length, position = read_varint(view, position)
        body_start = position
        position += 1  # record attributes
        timestamp_delta, position = read_varint(view, position)
        offset_delta, position = read_varint(view, position)
        yield offset_delta, header.base_timestamp + timestamp_delta
        position = body_start + length
