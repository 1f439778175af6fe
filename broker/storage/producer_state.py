"""Per-producer state (epoch, last sequence, last offset) kept with the log, with `<offset>.snapshot` files.

The partition's one producer-state store, as Kafka's per-log `ProducerStateManager`: every append (a
leader's or a follower's) updates it, truncation rebuilds it, and the idempotence rules
(broker/coordinator/producers.py `check`) read it. In memory each producer also keeps the metadata of its
last five batches (Kafka's `ProducerStateEntry.batchMetadata`), so a retry of any of them is recognised;
a snapshot keeps only the last one, which is what a retry of that batch and the next sequence check need.

Snapshots use Kafka's binary layout (version i16 = 1, CRC-32C u32 over the rest, then an i32 count of
entries: producerId i64, producerEpoch i16, lastSequence i32, lastOffset i64, offsetDelta i32,
timestamp i64, coordinatorEpoch i32, currentTxnFirstOffset i64), so kafka-dump-log reads ours and we
read Kafka's. A missing or unreadable one (a torn write, a bad CRC) is ignored and the state rebuilt
from batch headers after the newest readable snapshot.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import crc32c

from broker.protocol import records
from broker.storage import checkpoint


@dataclass(frozen=True, slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int = 0  # lastOffsetDelta of the producer's last batch
    timestamp: int = -1  # maxTimestamp of that batch


MAX_CACHED_BATCHES = 5
UNKNOWN_SEQUENCE = -1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_sequence: int  # UNKNOWN_SEQUENCE when restored from a snapshot (only the last batch's end is kept)
    last_sequence: int
    base_offset: int
    last_offset: int


_HEAD = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
_VERSION = 1


class ProducerStateTable:
    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}
        self._batches: dict[int, deque[BatchMetadata]] = {}

    def update(self, header: records.BatchHeader) -> None:
        if header.producer_id < 0:
            return
        last = header.base_offset + header.last_offset_delta
        previous = self.entries.get(header.producer_id)
        if previous is None or header.producer_epoch > previous.epoch:
            cached: deque[BatchMetadata] = deque(maxlen=MAX_CACHED_BATCHES)  # a new producer or epoch
        elif header.producer_id in self._batches:
            cached = self._batches[header.producer_id]
        else:  # restored from a snapshot: start from the last batch it kept
            cached = deque(self.batches(header.producer_id), maxlen=MAX_CACHED_BATCHES)
        cached.append(BatchMetadata(header.base_sequence, header.last_sequence, header.base_offset, last))
        self._batches[header.producer_id] = cached
        self.entries[header.producer_id] = ProducerEntry(
            header.producer_id, header.producer_epoch, header.last_sequence, last,
            header.last_offset_delta, header.max_timestamp)

    def batches(self, producer_id: int) -> tuple[BatchMetadata, ...]:
        """The producer's last batches, oldest first (one of unknown first sequence after a restart)."""
        cached = self._batches.get(producer_id)
        if cached is not None:
            return tuple(cached)
        entry = self.entries.get(producer_id)
        if entry is None:
            return ()
        return (BatchMetadata(UNKNOWN_SEQUENCE, entry.last_sequence, UNKNOWN_SEQUENCE, entry.last_offset),)

    def write_snapshot(self, directory: Path, offset: int) -> None:
        rest = _COUNT.pack(len(self.entries)) + b"".join(
            _ENTRY.pack(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp, -1, -1)
            for e in self.entries.values())
        body = _HEAD.pack(_VERSION, crc32c.crc32c(rest)) + rest
        checkpoint.write_atomic(directory / f"{offset:020d}.snapshot", body)
        for old in directory.glob("*.snapshot"):
            if old.stem.isdigit() and int(old.stem) < offset:
                old.unlink()

    @classmethod
    def load(cls, directory: Path, max_offset: int) -> tuple[ProducerStateTable, int]:
        """The newest readable snapshot at or below `max_offset`, and its offset (0 when none)."""
        table = cls()
        candidates = sorted((int(p.stem), p) for p in directory.glob("*.snapshot") if p.stem.isdigit())
        for offset, path in reversed(candidates):
            if offset > max_offset:
                path.unlink()  # beyond the recovered log end: stale
                continue
            entries = _parse(path.read_bytes())
            if entries is not None:
                table.entries = {e.producer_id: e for e in entries}
                return table, offset
        return table, 0


def snapshot_rows(data: bytes) -> list[tuple[int, ...]] | None:
    """Raw entries (producerId, epoch, lastSequence, lastOffset, offsetDelta, timestamp, coordinatorEpoch,
    currentTxnFirstOffset) of a snapshot, or None when it is not one (short, other version, bad CRC)."""
    if len(data) < _HEAD.size + _COUNT.size:
        return None
    version, crc = _HEAD.unpack_from(data)
    rest = data[_HEAD.size :]
    if version != _VERSION or crc32c.crc32c(rest) != crc:
        return None
    (count,) = _COUNT.unpack_from(rest)
    if count < 0 or len(rest) != _COUNT.size + count * _ENTRY.size:
        return None
    return list(_ENTRY.iter_unpack(rest[_COUNT.size :]))


def _parse(data: bytes) -> list[ProducerEntry] | None:
    rows = snapshot_rows(data)
    if rows is None:
        return None
    return [ProducerEntry(*row[:6]) for row in rows]
