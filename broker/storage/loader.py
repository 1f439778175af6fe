"""Opening a partition log's files (Apache Kafka's `LogLoader`): segment recovery, the leader-epoch
cache and the producer state, before `DiskPartitionLog` serves it.

Recovery removes half-written files, validates segments (CRCs of every batch after an unclean shutdown or
beyond the recovery point), truncates at the first bad byte and drops every segment after a damaged one.
Runs in the store's loader threads at start-up (`DiskLogStore.open_all`), never on the event loop.
"""

from __future__ import annotations

import logging
from pathlib import Path

from broker.storage import checkpoint
from broker.storage.producer_state import ProducerStateTable
from broker.storage.segment import Segment

_log = logging.getLogger("broker.storage")


def recover_segments(directory: Path, index_interval: int, clean: bool, recovery_point: int) -> list[Segment]:
    """The partition's valid segments, oldest first (one empty segment at 0 when there is none)."""
    for tmp in [*directory.glob("*.tmp"), *directory.glob("*.cleaned")]:
        tmp.unlink()  # a half-written checkpoint or index rewrite; the real file is intact
    for stray in directory.glob("*.index"):
        if not stray.with_suffix(".log").exists():
            stray.unlink()  # crash between roll steps: index created, log not
    for stray in directory.glob("*.timeindex"):
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


def load_epochs(path: Path, unclean: bool, log_end_offset: int) -> list[tuple[int, int]]:
    """The leader-epoch checkpoint; after an unclean shutdown without epochs past the recovered log end."""
    epochs = checkpoint.read_pairs(path)
    if epochs is None or not unclean:
        return epochs or []
    return [(e, o) for e, o in epochs if o < log_end_offset]


def load_producers(directory: Path, segments: list[Segment], log_end_offset: int) -> ProducerStateTable:
    """The newest snapshot at or below the log end, then every batch after it."""
    table, offset = ProducerStateTable.load(directory, log_end_offset)
    for segment in segments:
        if segment.next_offset > offset:
            for header in segment.batches():
                if header.base_offset + header.last_offset_delta >= offset:
                    table.update(header)
    return table
