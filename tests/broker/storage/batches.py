"""Build uncompressed RecordBatch v2 bytes for tests (layout from the Kafka protocol guide)."""

from __future__ import annotations

import struct

import crc32c


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = zigzag & 0x7F
        zigzag >>= 7
        if zigzag:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _bytes(value: bytes | None) -> bytes:
    return _varint(-1) if value is None else _varint(len(value)) + value


def record_batch(
    entries: list[tuple[bytes | None, bytes | None]], base_timestamp: int = 1_700_000_000_000,
    producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
) -> bytes:
    """`entries` are (key, value); record i gets timestamp base_timestamp + i."""
    body = bytearray()
    for i, (key, value) in enumerate(entries):
        record = b"\x00" + _varint(i) + _varint(i) + _bytes(key) + _bytes(value) + _varint(0)
        body += _varint(len(record)) + record
    after_crc = struct.pack(
        ">hiqqqhii", 0, len(entries) - 1, base_timestamp, base_timestamp + len(entries) - 1,
        producer_id, producer_epoch, base_sequence, len(entries),
    ) + bytes(body)
    crc = crc32c.crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", 0, length, 0, 2, crc) + after_crc
