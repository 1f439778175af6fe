"""Transaction markers (control batches) in Kafka's layout: ControlRecordType key, EndTransactionMarker value."""

from __future__ import annotations

import struct

import crc32c
import pytest
from kio.schema.errors import ErrorCode

from broker.protocol import records
from broker.protocol.control import Marker, decode_marker, encode_marker
from broker.protocol.errors import KafkaApiError
from broker.storage.record_view import iter_records


def _header(data: bytes) -> records.BatchHeader:
    return next(records.iter_batches(data))  # verifies the CRC-32C


def test_a_marker_is_one_transactional_control_record_in_kafkas_layout() -> None:
    data = encode_marker(4711, 3, True, 9, 1_700_000_000_123)
    header = _header(data)
    assert len(data) == header.length == 78  # the size kafka-dump-log shows for a marker batch
    assert (header.attributes, header.producer_id, header.producer_epoch) == (0x30, 4711, 3)
    assert (header.base_offset, header.base_sequence, header.record_count, header.last_offset_delta) == (0, -1, 1, 0)
    assert header.base_timestamp == header.max_timestamp == 1_700_000_000_123
    (record,) = iter_records(data, header)
    assert record.key == struct.pack(">hh", 0, 1)  # version 0, COMMIT
    assert record.value == struct.pack(">hi", 0, 9)  # version 0, coordinator epoch
    assert decode_marker(data) == Marker(commit=True, coordinator_epoch=9)
    abort = encode_marker(4711, 3, False, 0, 0)
    assert next(iter_records(abort, _header(abort))).key == b"\x00\x00\x00\x00"
    assert decode_marker(abort) == Marker(commit=False, coordinator_epoch=0)


def _patched(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) == 1
    out = bytearray(data.replace(old, new))
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


@pytest.mark.parametrize(("old", "new", "why"), [  # each after its length varint (4 -> 0x08, 6 -> 0x0c)
    (b"\x08" + struct.pack(">hh", 0, 1), b"\x08" + struct.pack(">hh", 0, 5), "control record type 5"),
    (b"\x08" + struct.pack(">hh", 0, 1), b"\x08" + struct.pack(">hh", -1, 1), "key version -1"),
    (b"\x0c" + struct.pack(">hi", 0, 9), b"\x0c" + struct.pack(">hi", -2, 9), "marker version -2"),
])  # fmt: skip
def test_malformed_markers_are_invalid_records(old: bytes, new: bytes, why: str) -> None:
    data = _patched(encode_marker(1, 0, True, 9, 0), old, new)
    with pytest.raises(KafkaApiError) as refused:
        decode_marker(data)
    assert refused.value.code == ErrorCode.invalid_record and why in str(refused.value)


def test_a_data_batch_or_a_short_key_is_no_marker() -> None:
    data = bytearray(encode_marker(1, 0, True, 9, 0))
    struct.pack_into(">h", data, 21, 0x10)  # transactional, not control
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    with pytest.raises(KafkaApiError, match="not a control batch"):
        decode_marker(bytes(data))
    # a 2-byte key: the record's length, key length and batch length all shrink by 2
    short = bytearray(encode_marker(1, 0, True, 9, 0))
    key_at = records.HEADER_SIZE + 1 + 3  # record length varint (1 byte), attributes, two zero varints
    assert short[key_at] == 8  # zigzag varint of 4
    short[key_at] = 4
    del short[key_at + 1 : key_at + 3]
    short[records.HEADER_SIZE] -= 4  # zigzag record length minus 2
    struct.pack_into(">i", short, 8, len(short) - 12)
    struct.pack_into(">I", short, 17, crc32c.crc32c(bytes(short[21:])))
    with pytest.raises(KafkaApiError, match="key of 2 bytes"):
        decode_marker(bytes(short))
