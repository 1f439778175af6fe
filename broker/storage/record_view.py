"""Records inside a RecordBatch v2 (compressed ones decompressed first), for the cleaner and dumps."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from broker.protocol import records
from broker.storage import codecs


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    header_keys: tuple[str, ...]
    raw: bytes  # the record exactly as stored (length varint included), to copy without re-encoding


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def varint(self) -> int:
        shift = result = 0
        while True:
            if self.pos >= len(self.data) or shift > 63:
                raise ValueError("truncated or oversized varint in a record")
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7

    def blob(self) -> bytes | None:
        size = self.varint()
        if size < 0:
            return None
        value = self.data[self.pos : self.pos + size]
        self.pos += size
        return value


def iter_records(batch: bytes, header: records.BatchHeader) -> Iterator[Record]:
    """`batch` is the whole batch (from its baseOffset field); raises ValueError on malformed records
    (codecs.CodecError, a ValueError, when a compressed record section does not decompress). For a
    compressed batch `raw` holds the record as it is inside the decompressed section."""
    if header.compression:
        batch = batch[: records.HEADER_SIZE] + codecs.decompress(header.compression, batch[records.HEADER_SIZE :])
    reader = _Reader(batch)
    reader.pos = records.HEADER_SIZE
    for _ in range(header.record_count):
        start = reader.pos
        length = reader.varint()
        end = reader.pos + length
        reader.pos += 1  # attributes
        timestamp = header.base_timestamp + reader.varint()
        offset = header.base_offset + reader.varint()
        key, value = reader.blob(), reader.blob()
        names = []
        for _ in range(reader.varint()):
            names.append((reader.blob() or b"").decode("utf-8", "replace"))
            reader.blob()
        yield Record(offset, timestamp, key, value, tuple(names), batch[start:end])
        reader.pos = end
