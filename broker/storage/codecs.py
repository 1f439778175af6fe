"""Decompression of RecordBatch v2 record sections (codec = attributes & 7), for dumps and the cleaner.

Snappy arrives in two shapes: librdkafka writes raw snappy, the Java producer writes xerial framing
(magic b"\\x82SNAPPY\\x00", version, compat, then [i32 length][raw block]...). LZ4 is the LZ4 frame
format; zstd and gzip are their standard streams. cramjam wraps all of them in one wheel.
"""

from __future__ import annotations

import gzip
import struct

import cramjam

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = 16  # magic (8) + version i32 + compatible version i32


class CodecError(ValueError):
    """A record section that does not decompress with the codec its batch names."""


def _xerial(data: bytes) -> bytes:
    out = bytearray()
    position = _XERIAL_HEADER
    while position < len(data):
        if position + 4 > len(data):
            raise CodecError("truncated xerial snappy block length")
        (size,) = struct.unpack_from(">i", data, position)
        position += 4
        if size < 0 or position + size > len(data):
            raise CodecError("xerial snappy block runs past the batch")
        out += bytes(cramjam.snappy.decompress_raw(data[position : position + size]))
        position += size
    return bytes(out)


def decompress(codec: int, data: bytes) -> bytes:
    """The uncompressed records of a batch whose record section is `data`; CodecError if unreadable."""
    try:
        if codec == NONE:
            return data
        if codec == GZIP:
            return gzip.decompress(data)
        if codec == SNAPPY:
            if data.startswith(_XERIAL_MAGIC):
                return _xerial(data)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except (OSError, EOFError, cramjam.DecompressionError) as error:
        raise CodecError(f"{NAMES[codec]} record section does not decompress: {error}") from error
    raise CodecError(f"unknown compression codec {codec} (Kafka defines 0-4)")
