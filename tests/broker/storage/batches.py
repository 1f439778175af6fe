"""Build RecordBatch v2 bytes for tests (layout from the Kafka protocol guide), optionally compressed."""

from __future__ import annotations

import gzip
import struct

import cramjam
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
    producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1, compression: str = "none",
    transactional: bool = False,
) -> bytes:
    """`entries` are (key, value); record i gets timestamp base_timestamp + i. `compression`: none, gzip,
    snappy (raw, as librdkafka writes it), xerial (snappy framed as the Java producer writes it), lz4, zstd.
    `transactional` sets the batch's transactional attribute (0x10)."""
    body = bytearray()
    for i, (key, value) in enumerate(entries):
        record = b"\x00" + _varint(i) + _varint(i) + _bytes(key) + _bytes(value) + _varint(0)
        body += _varint(len(record)) + record
    codec, section = _compress(compression, bytes(body))
    after_crc = struct.pack(
        ">hiqqqhii", codec | (0x10 if transactional else 0), len(entries) - 1, base_timestamp,
        base_timestamp + len(entries) - 1, producer_id, producer_epoch, base_sequence, len(entries),
    ) + section
    crc = crc32c.crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", 0, length, 0, 2, crc) + after_crc


def _compress(compression: str, body: bytes) -> tuple[int, bytes]:
    if compression == "none":
        return 0, body
    if compression == "gzip":
        return 1, gzip.compress(body)
    if compression == "snappy":
        return 2, bytes(cramjam.snappy.compress_raw(body))
    if compression == "xerial":
        block = bytes(cramjam.snappy.compress_raw(body))
        return 2, b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block
    if compression == "lz4":  # Kafka reads LZ4 frames with independent blocks only
        compressor = cramjam.lz4.Compressor(block_linked=False)
        compressor.compress(body)
        return 3, bytes(compressor.finish())
    if compression == "zstd":
        return 4, bytes(cramjam.zstd.compress(body))
    raise ValueError(f"unknown compression {compression!r}")
