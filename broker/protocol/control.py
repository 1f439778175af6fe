"""Transaction markers: the control batches that end a transaction in each of its partitions (sans-I/O).

A marker is a RecordBatch v2 with attributes TRANSACTIONAL|CONTROL, the producer's id and epoch, base
sequence -1 (markers take no sequence number) and one record. Its key is Kafka's `ControlRecordType`
(i16 version 0, i16 type: 0 ABORT, 1 COMMIT), its value Kafka's `EndTransactionMarker` (i16 version 0,
i32 coordinator epoch), the `ControlRecordTypeSchema` / `EndTxnMarker` message specs. Only the transaction
coordinator writes them (clients get INVALID_RECORD), and consumers drop them from what they return.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c
from kio.schema.errors import ErrorCode

from broker.protocol import records
from broker.protocol.errors import KafkaApiError

ABORT, COMMIT = 0, 1
_KEY = struct.Struct(">hh")  # version, type
_VALUE = struct.Struct(">hi")  # version, coordinator epoch
_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. recordCount
_BEFORE_CRC = struct.Struct(">qiibI")  # baseOffset, batchLength, partitionLeaderEpoch, magic, crc
MARKER_ATTRIBUTES = records.TRANSACTIONAL_FLAG | records.CONTROL_FLAG


@dataclass(frozen=True, slots=True)
class Marker:
    commit: bool
    coordinator_epoch: int


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def encode_marker(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                  timestamp_ms: int) -> bytes:
    """One marker batch at base offset 0 (the log assigns its offset and leader epoch on append)."""
    key = _KEY.pack(0, COMMIT if commit else ABORT)
    value = _VALUE.pack(0, coordinator_epoch)
    # attributes i8, timestampDelta, offsetDelta, key, value, header count: all deltas are 0 (one record)
    body = b"\x00" + _varint(0) + _varint(0) + _varint(len(key)) + key + _varint(len(value)) + value + _varint(0)
    record = _varint(len(body)) + body
    after_crc = _AFTER_CRC.pack(MARKER_ATTRIBUTES, 0, timestamp_ms, timestamp_ms, producer_id, producer_epoch,
                                -1, 1) + record
    length = records.HEADER_SIZE - records.LOG_OVERHEAD + len(record)
    return _BEFORE_CRC.pack(0, length, -1, 2, crc32c.crc32c(after_crc)) + after_crc


def _invalid(message: str) -> KafkaApiError:
    return KafkaApiError(ErrorCode.invalid_record, f"malformed transaction marker: {message}")


def decode_marker(batch: bytes | bytearray | memoryview) -> Marker:
    """The marker of one control batch (the whole batch, from its baseOffset field; uncompressed as Kafka
    writes them). Raises KafkaApiError(INVALID_RECORD) naming what is wrong."""
    view = memoryview(batch)
    header = next(records.iter_batches(view, verify_crc=False), None)
    if header is None or not header.is_control:
        raise _invalid("not a control batch")
    if header.compression or header.record_count != 1:
        raise _invalid(f"expected one uncompressed record, got {header.record_count} (codec {header.compression})")
    position = records.HEADER_SIZE
    try:
        _, position = records.read_varint(view, position)  # record length
        position += 1  # record attributes
        _, position = records.read_varint(view, position)  # timestamp delta
        _, position = records.read_varint(view, position)  # offset delta
        key_length, position = records.read_varint(view, position)
        key = bytes(view[position : position + max(key_length, 0)])
        position += max(key_length, 0)
        value_length, position = records.read_varint(view, position)
        value = bytes(view[position : position + max(value_length, 0)])
    except KafkaApiError as exc:
        raise _invalid(str(exc)) from None
    if key_length < _KEY.size or len(key) < _KEY.size:
        raise _invalid(f"control record key of {key_length} bytes, expected at least {_KEY.size}")
    key_version, kind = _KEY.unpack_from(key)
    if key_version < 0:
        raise _invalid(f"control record key version {key_version}")
    if kind not in (ABORT, COMMIT):
        raise _invalid(f"control record type {kind} is neither ABORT (0) nor COMMIT (1)")
    # Like Kafka's EndTransactionMarker, a newer value version is read as version 0 (fields only get added).
    if value_length < _VALUE.size or len(value) < _VALUE.size:
        raise _invalid(f"end transaction marker value of {value_length} bytes, expected at least {_VALUE.size}")
    value_version, coordinator_epoch = _VALUE.unpack_from(value)
    if value_version < 0:
        raise _invalid(f"end transaction marker version {value_version}")
    return Marker(kind == COMMIT, coordinator_epoch)
