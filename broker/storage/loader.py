"""Opening a partition log's files (Apache Kafka's `LogLoader`): segment recovery, the leader-epoch
cache and the producer state, before `DiskPartitionLog` serves it.

Recovery removes half-written files, validates segments (CRCs of every batch after an unclean shutdown or
beyond the recovery point), truncates at the first bad byte and drops every segment after a damaged one.
Runs in the store's loader threads at start-up (`DiskLogStore.open_all`), never on the event loop.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from broker.protocol import records
from broker.protocol.control import Marker, decode_marker
from broker.protocol.errors import KafkaApiError
from broker.storage import checkpoint
from broker.storage.producer_state import ProducerStateTable
from broker.storage.segment import Segment
from broker.storage.txn_index import AbortedTxn

_log = logging.getLogger("broker.storage")


def recover_segments(directory: Path, index_interval: int, clean: bool, recovery_point: int) -> list[Segment]:
    """The partition's valid segments, oldest first (one empty segment at 0 when there is none)."""
    for tmp in [*directory.glob("*.tmp"), *directory.glob("*.cleaned")]:
        tmp.unlink()  # a half-written checkpoint or index rewrite; the real file is intact
    for stray in directory.glob("*.index"):
        if not stray.with_suffix(".log").exists():
            stray.unlink()  # crash between roll steps: index created, log not
    for stray in [*directory.glob("*.timeindex"), *directory.glob("*.txnindex")]:
        if not stray.with_suffix(".log").exists():
            stray.unlink()
    bases = sorted(int(p.stem) for p in directory.glob("*.log") if p.stem.isdigit())
    # Segments may leave offset gaps (compaction, deleted records) but never overlap. After the
    # first damaged segment nothing is trusted: later segments are removed.
    segments: list[Segment] = []
    expected = 0
    damaged = False
    for base in bases:
        segment = Segment(directory, base, index_interval)
        if damaged or base < expected:
            _log.warning("recovery: %s: removed, it %s", segment.path,
                         "follows a damaged segment" if damaged else f"overlaps offsets before {expected}")
            segment.delete()
            continue
        verify = not clean or segment.base_offset >= recovery_point or base == bases[-1]
        intact = segment.load(verify=verify)
        if segment.size == 0 and base != bases[-1]:
            segment.delete()  # an empty closed segment (e.g. crash mid-roll): nothing to keep
            damaged = damaged or not intact
            continue
        segments.append(segment)
        expected = segment.next_offset
        damaged = not intact
    if not segments:
        segments.append(Segment(directory, 0, index_interval))
    for closed in segments[:-1]:
        closed.release()  # only the active segment keeps write handles
    return segments


def load_epochs(path: Path, segments: list[Segment], clean: bool, recovery_point: int) -> list[tuple[int, int]]:
    """The leader-epoch cache: the checkpoint file, then, after an unclean shutdown, the epochs of the
    batches from the recovery point on (Kafka's `LogSegment.recover` assigns each recovered batch's
    epoch to the cache the same way). The log writes a new epoch to the file only with its next
    checkpoint, which writes the file before it moves the recovery point: so the file holds every epoch
    starting below the recovery point, and the batches say the rest. Entries past the recovered log end
    (their batches were cut by recovery) are dropped."""
    epochs = checkpoint.read_pairs(path) or []
    if clean:
        return epochs
    log_end = segments[-1].next_offset
    epochs = [(e, o) for e, o in epochs if o < log_end]
    for segment in segments:
        if segment.next_offset <= recovery_point:
            continue
        for header in segment.batches():
            if header.base_offset + header.last_offset_delta < recovery_point or header.leader_epoch < 0:
                continue
            if not epochs or header.leader_epoch > epochs[-1][0]:
                epochs.append((header.leader_epoch, header.base_offset))
    return epochs


def load_producers(directory: Path, segments: list[Segment], log_end_offset: int, *,
                   rebuild_txn_indexes: bool = False) -> ProducerStateTable:
    """The newest snapshot at or below the log end, then every batch after it.

    `rebuild_txn_indexes` (opening the log): the `.txnindex` entries of markers from the snapshot's offset on
    are rebuilt by this replay, as Kafka's `LogSegment.recover` rebuilds them with the producer state. Entries
    below it were written before the clean shutdown that wrote the snapshot (which flushed them) and are kept;
    after a clean shutdown the snapshot is at the log end, so every file is trusted as it is."""
    table, offset = ProducerStateTable.load(directory, log_end_offset)
    for segment in segments:
        if segment.next_offset <= offset:
            continue
        kept = [e for e in segment.txn_index.entries if e.last_offset < offset]
        # An abort whose transaction began before the replay's start (no snapshot, and segments deleted by
        # retention) completes nothing in the replayed state: its entry on disk is all that is left of it.
        on_disk = {e.last_offset: e for e in segment.txn_index.entries if e.last_offset >= offset}
        rebuilt: list[AbortedTxn] = []
        for header in segment.batches():
            if header.base_offset + header.last_offset_delta < offset:
                continue
            marker = _marker(segment, header) if header.is_control and header.producer_id >= 0 else None
            aborted = table.update(header, marker)
            known = on_disk.get(header.base_offset)
            if aborted is None and marker is not None and not marker.commit and known is not None \
                    and known.producer_id == header.producer_id:
                aborted = known
            if aborted is not None:
                rebuilt.append(aborted)
        if rebuild_txn_indexes:
            segment.txn_index.replace(kept + rebuilt)
    return table


def _marker(segment: Segment, header: records.BatchHeader) -> Marker | None:
    try:
        return decode_marker(os.pread(segment.fd, header.length, header.position))
    except KafkaApiError as exc:  # CRC-valid but not a marker Kafka could write: it ends no transaction
        _log.warning("recovery: %s: control batch at offset %d ignored: %s", segment.path, header.base_offset, exc)
        return None
