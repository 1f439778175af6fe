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

Transactions (Kafka's `ProducerAppendInfo.appendDataBatch` / `appendEndTxnMarker`): a transactional data
batch of a producer without an open transaction here opens one at its base offset
(`current_txn_first_offset`); the producer's marker (a control batch) closes it. An ABORT of a transaction
with records here yields an `AbortedTxn` for the segment's `.txnindex`. A marker leaves the sequence state
alone, except that a marker of a newer epoch (the coordinator bumped it to abort a timed-out or fenced
transaction) takes that epoch and clears the sequences: the producer's next batch starts at sequence 0
(`ProducerStateEntry.maybeUpdateProducerEpoch`). The first offset of the oldest open transaction is the
partition's first unstable offset; consumers reading committed data stop before it.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path

import crc32c

from broker.protocol import records
from broker.protocol.control import Marker
from broker.storage import checkpoint
from broker.storage.txn_index import AbortedTxn


@dataclass(frozen=True, slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int = 0  # lastOffsetDelta of the producer's last batch
    timestamp: int = -1  # maxTimestamp of that batch (or of the producer's last marker)
    coordinator_epoch: int = -1  # of the transaction coordinator that wrote the producer's last marker
    current_txn_first_offset: int = -1  # first offset of the producer's open transaction here; -1: none


MAX_CACHED_BATCHES = 5
UNKNOWN_SEQUENCE = -1
# Completed transactions whose marker may still be above the high watermark are kept (Kafka's
# `unreplicatedTxns`) until a query with the high watermark passes them; past this many the oldest are taken
# as replicated, so a partition nobody fetches (an internal topic on a single node) cannot grow the list.
MAX_UNREPLICATED = 10_000


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
        self._ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._unreplicated: deque[tuple[int, int]] = deque(maxlen=MAX_UNREPLICATED)  # (first, marker offset)

    def update(self, header: records.BatchHeader, marker: Marker | None = None) -> AbortedTxn | None:
        """Apply one appended batch (`marker`: the decoded marker of a control batch). Returns the aborted
        transaction an ABORT marker completes, for the transaction index."""
        if header.producer_id < 0:
            return None
        if header.is_control:
            return None if marker is None else self._end_txn(header, marker)
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
        txn_first = -1 if previous is None else previous.current_txn_first_offset
        if header.is_transactional and txn_first < 0:  # the producer's transaction begins here
            txn_first = self._ongoing[header.producer_id] = header.base_offset
        self.entries[header.producer_id] = ProducerEntry(
            header.producer_id, header.producer_epoch, header.last_sequence, last,
            header.last_offset_delta, header.max_timestamp,
            -1 if previous is None else previous.coordinator_epoch, txn_first)
        return None

    def _end_txn(self, header: records.BatchHeader, marker: Marker) -> AbortedTxn | None:
        producer_id, offset = header.producer_id, header.base_offset
        previous = self.entries.get(producer_id)
        first = self._ongoing.pop(producer_id, -1)
        aborted = None
        if first >= 0:  # a marker of a transaction without records here changes no offsets (as in Kafka)
            self._unreplicated.append((first, offset))
            if not marker.commit:
                # Kafka's ProducerStateManager.lastStableOffset(completedTxn): the oldest other open
                # transaction's start, else right after the marker.
                lso = min(self._ongoing.values(), default=offset + 1)
                aborted = AbortedTxn(producer_id, first, offset, lso)
        if previous is None or header.producer_epoch > previous.epoch:
            self._batches[producer_id] = deque(maxlen=MAX_CACHED_BATCHES)
            self.entries[producer_id] = ProducerEntry(producer_id, header.producer_epoch, UNKNOWN_SEQUENCE, -1, 0,
                                                      header.max_timestamp, marker.coordinator_epoch, -1)
        else:  # an older epoch only reaches a follower (the leader refuses it): the entry keeps its epoch
            self.entries[producer_id] = replace(previous, timestamp=header.max_timestamp,
                                                coordinator_epoch=marker.coordinator_epoch,
                                                current_txn_first_offset=-1)
        return aborted

    @property
    def open_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of its open transaction (a copy)."""
        return dict(self._ongoing)

    def first_unstable_offset(self, high_watermark: int | None = None) -> int | None:
        """The first offset of the oldest open transaction; with `high_watermark`, also of completed ones whose
        marker is not below it yet (Kafka's `firstUnstableOffset`: their outcome could still be truncated)."""
        if high_watermark is None:
            return min(self._ongoing.values(), default=None)
        while self._unreplicated and self._unreplicated[0][1] < high_watermark:
            self._unreplicated.popleft()
        return min([*self._ongoing.values(), *(first for first, _ in self._unreplicated)], default=None)

    def batches(self, producer_id: int) -> tuple[BatchMetadata, ...]:
        """The producer's last batches, oldest first (one of unknown first sequence after a restart)."""
        cached = self._batches.get(producer_id)
        if cached is not None:
            return tuple(cached)
        entry = self.entries.get(producer_id)
        if entry is None or entry.last_sequence == UNKNOWN_SEQUENCE:  # none yet, or cleared by a new epoch
            return ()
        return (BatchMetadata(UNKNOWN_SEQUENCE, entry.last_sequence, UNKNOWN_SEQUENCE, entry.last_offset),)

    def write_snapshot(self, directory: Path, offset: int) -> None:
        rest = _COUNT.pack(len(self.entries)) + b"".join(
            _ENTRY.pack(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp,
                        e.coordinator_epoch, e.current_txn_first_offset)
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
                table._ongoing = {e.producer_id: e.current_txn_first_offset for e in entries
                                  if e.current_txn_first_offset >= 0}
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
    return [ProducerEntry(*row) for row in rows]
