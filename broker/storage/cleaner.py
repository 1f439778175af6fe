"""cleanup.policy=compact: keep the latest record per key in the closed segments.

Like Kafka, a retained batch keeps its baseOffset and lastOffsetDelta (so offsets never change) and its
kept records are copied byte for byte; only recordCount, length and CRC are recomputed. Tombstones
(null value) are dropped once older than delete.retention.ms. A compressed batch that loses records is
written back uncompressed (its compression bits cleared): valid for every reader, and it spares
re-encoding with each codec. The active segment is never cleaned.

It runs in the store's maintenance thread while requests append on the event loop: it reads a snapshot
of the segment list without the log's lock and hands each rewritten segment to `replace_segment`, which
swaps it under the lock unless the log was truncated meanwhile.
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass

import crc32c

from broker.protocol import records
from broker.storage.log import DiskPartitionLog
from broker.storage.record_view import iter_records
from broker.storage.segment import Segment


@dataclass(frozen=True, slots=True)
class CleanResult:
    segments: int
    records_removed: int


def _latest_offsets(log: DiskPartitionLog, segments: list[Segment]) -> dict[bytes, int]:
    latest: dict[bytes, int] = {}
    for segment in segments:
        for header in segment.batches():
            if header.is_control:
                continue
            data = os.pread(segment.fd, header.length, header.position)
            for record in iter_records(data, header):
                if record.key is not None:
                    latest[record.key] = record.offset
    return latest


def _filtered(data: bytes, header: records.BatchHeader, latest: dict[bytes, int], horizon: int) -> tuple[bytes, int]:
    kept, removed = [], 0
    for record in iter_records(data, header):
        stale = record.key is not None and latest.get(record.key, record.offset) != record.offset
        expired_tombstone = record.value is None and header.max_timestamp < horizon
        if stale or expired_tombstone:
            removed += 1
        else:
            kept.append(record.raw)
    if not kept:
        return b"", removed
    if not removed:
        return data, 0
    body = bytearray(data[: records.HEADER_SIZE]) + b"".join(kept)
    struct.pack_into(">h", body, 21, header.attributes & ~records.COMPRESSION_MASK)
    struct.pack_into(">i", body, 8, len(body) - records.LOG_OVERHEAD)
    struct.pack_into(">i", body, 57, len(kept))
    struct.pack_into(">I", body, 17, crc32c.crc32c(bytes(body[21:])))
    return bytes(body), removed


def clean(log: DiskPartitionLog, delete_retention_ms: int, now_ms: int | None = None) -> CleanResult:
    now = int(time.time() * 1000) if now_ms is None else now_ms
    with log.lock:
        generation, segments, high = log.generation, list(log.segments), log.high_watermark
    closed = [s for s in segments[:-1] if s.next_offset <= high]
    latest = _latest_offsets(log, segments)  # newer values in the active segment count too
    removed_total = 0
    for segment in closed:
        out = bytearray()
        removed = 0
        for header in segment.batches():
            data = os.pread(segment.fd, header.length, header.position)
            if header.is_control:
                out += data
                continue
            kept, dropped = _filtered(data, header, latest, now - delete_retention_ms)
            out += kept
            removed += dropped
        if removed and log.replace_segment(segment, bytes(out), generation):
            removed_total += removed
    return CleanResult(len(closed), removed_total)
