"""cleanup.policy=compact: keep the latest record per key in the closed segments.

Like Kafka, a retained batch keeps its baseOffset and lastOffsetDelta (so offsets never change) and its
kept records are copied byte for byte; only recordCount, length and CRC are recomputed. Tombstones
(null value) are dropped once older than delete.retention.ms. A compressed batch that loses records is
written back uncompressed (its compression bits cleared): valid for every reader, and it spares
re-encoding with each codec. The active segment is never cleaned.

Transactions: control batches (markers) are always kept, and so are, untouched, the batches of open
transactions (their outcome is unknown) and of aborted ones (consumers drop them with the `.txnindex` entries,
which stay valid since the markers stay). Neither kind counts as a key's latest value, so an open or aborted
write never removes the committed value before it. Committed transactional records are compacted like any
others. Kafka goes further (it removes aborted records, and markers after delete.retention.ms); we keep them
for now: correct for every reader, only less compact.

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


@dataclass(frozen=True, slots=True)
class _Transactions:
    """What the cleaner must leave alone: open transactions (producer -> first offset) and aborted ones."""

    open: dict[int, int]
    aborted: dict[int, list[tuple[int, int]]]  # producer -> (first offset, marker offset)

    @classmethod
    def of(cls, log: DiskPartitionLog) -> _Transactions:
        aborted: dict[int, list[tuple[int, int]]] = {}
        for entry in log.aborted_transactions(log.log_start_offset, log.log_end_offset):
            aborted.setdefault(entry.producer_id, []).append((entry.first_offset, entry.last_offset))
        return cls(log.producers.open_transactions, aborted)

    def kept_whole(self, header: records.BatchHeader) -> bool:
        if header.is_control:
            return True
        if not header.is_transactional:
            return False
        first = self.open.get(header.producer_id)
        if first is not None and header.base_offset >= first:
            return True
        return any(first <= header.base_offset <= last for first, last in self.aborted.get(header.producer_id, ()))


def _latest_offsets(segments: list[Segment], transactions: _Transactions) -> dict[bytes, int]:
    latest: dict[bytes, int] = {}
    for segment in segments:
        for header in segment.batches():
            if transactions.kept_whole(header):
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
        transactions = _Transactions.of(log)
    closed = [s for s in segments[:-1] if s.next_offset <= high]
    latest = _latest_offsets(segments, transactions)  # newer values in the active segment count too
    removed_total = 0
    for segment in closed:
        out = bytearray()
        removed = 0
        for header in segment.batches():
            data = os.pread(segment.fd, header.length, header.position)
            if transactions.kept_whole(header):
                out += data
                continue
            kept, dropped = _filtered(data, header, latest, now - delete_retention_ms)
            out += kept
            removed += dropped
        if removed and log.replace_segment(segment, bytes(out), generation):
            removed_total += removed
    return CleanResult(len(closed), removed_total)
