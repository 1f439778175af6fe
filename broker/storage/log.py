"""A partition log on disk: segments, offsets, reads as file ranges, truncation; recovery on open is
broker/storage/loader.py's (Kafka's LogLoader).

Threads: requests use the log on the event loop; the store's background threads fsync rolled segments
(`flush_sealed`), and run retention and compaction. `lock` guards the segment list and the checkpoint
files; the slow parts (fsync of a sealed segment, reading and rewriting segments for compaction) run
without it, so the event loop never waits for them. Apache Kafka flushes rolled segments asynchronously
too (`UnifiedLog.roll` schedules `flushUptoOffsetExclusive`) and swaps cleaned segments under the log lock.
"""

from __future__ import annotations

import bisect
import functools
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from broker.log_store import AppendResult, FileRange, ReadResult, TimestampOffset
from broker.protocol import records
from broker.protocol.control import Marker, decode_marker
from broker.storage import checkpoint, txn_index
from broker.storage.config import StorageConfig
from broker.storage.loader import load_epochs, load_producers, recover_segments
from broker.storage.record_view import iter_records
from broker.storage.segment import Segment
from broker.storage.txn_index import AbortedTxn
from broker.storage.validation import validate_batches

_log = logging.getLogger("broker.storage")

CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
STATE = "partition-state-checkpoint"  # recovery-point, log-start-offset, high-watermark
EPOCHS = "leader-epoch-checkpoint"

_F = TypeVar("_F", bound=Callable[..., Any])


def _locked(method: _F) -> _F:
    @functools.wraps(method)
    def wrapper(self: DiskPartitionLog, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class DiskPartitionLog:
    def __init__(self, directory: Path, config: StorageConfig) -> None:
        self.directory = directory
        self.config = config
        self.lock = threading.RLock()
        # Runs `flush_sealed` after a roll; None: at once, in the caller (tools and tests use the log alone).
        self.background: Callable[[Callable[[], None]], object] | None = None
        # Bumped whenever records may disappear from the tail (truncation): compaction planned against an
        # older generation is dropped, since its view of the newest value per key may be gone.
        self.generation = 0
        self._sealed: list[Segment] = []  # rolled, not yet fsynced
        directory.mkdir(parents=True, exist_ok=True)
        state = checkpoint.read_offsets(directory / STATE)
        clean = (directory / CLEAN_SHUTDOWN).exists()
        self.recovered_unclean = not clean
        self._segments = recover_segments(directory, config.index_interval_bytes, clean,
                                          state.get("recovery-point", 0))
        self._start = max(state.get("log-start-offset", 0), self._segments[0].base_offset)
        self._start = min(self._start, self.log_end_offset)
        self._epochs = load_epochs(directory / EPOCHS, self._segments, clean, state.get("recovery-point", 0))
        self.producers = load_producers(directory, self._segments, self.log_end_offset, rebuild_txn_indexes=True)
        self._unflushed = 0
        self._last_flush = time.monotonic()
        self._closed = False
        self.recovery_point = self.log_end_offset
        (directory / CLEAN_SHUTDOWN).unlink(missing_ok=True)
        # After a clean shutdown the checkpoints already say all this: skip their fsyncs (4 per partition,
        # most of a restart's time with thousands of partitions).
        unchanged = clean and state == {"recovery-point": self.recovery_point, "log-start-offset": self._start,
                                        "high-watermark": self.high_watermark}
        if not unchanged:
            self._checkpoint()

    def _checkpoint(self) -> None:
        # Under `lock` (callers hold it): the background flusher writes the same files. The epochs first:
        # a recovery point on disk must never cover an epoch the epoch file lacks, since recovery
        # rebuilds epochs only from the batches past the recovery point (loader.load_epochs).
        checkpoint.write_pairs(self.directory / EPOCHS, self._epochs)
        checkpoint.write_offsets(self.directory / STATE, {
            "recovery-point": self.recovery_point,
            "log-start-offset": self._start,
            "high-watermark": self.high_watermark,
        })

    # -- offsets ----------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self._start

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset  # single replica: everything appended is committed

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def segments(self) -> list[Segment]:
        return self._segments

    @property
    def leader_epochs(self) -> list[tuple[int, int]]:
        return list(self._epochs)

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction (None: none is open)."""
        return self.producers.first_unstable_offset()

    @_locked
    def aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start_offset, upper_bound_offset) (Kafka's
        `UnifiedLog.collectAbortedTransactions`): from the segment holding `start_offset` on, since a marker
        at or after it can only be there or later, until an entry's LSO shows no later one can overlap."""
        found: list[AbortedTxn] = []
        for segment in self._segments[self._segment_for(start_offset):]:
            entries, complete = txn_index.collect(segment.txn_index.entries, start_offset, upper_bound_offset)
            found += entries
            if complete:
                break
        return found

    # -- append -----------------------------------------------------------------------------
    @_locked
    def append(self, batch_bytes: bytes, leader_epoch: int, client: bool = True) -> AppendResult:
        headers = validate_batches(batch_bytes, self.config.max_message_bytes, client)
        markers = _markers(batch_bytes, headers)  # before anything is written: a bad marker refuses the append
        buffer = bytearray(batch_bytes)
        base = next_offset = self.log_end_offset
        append_time = int(time.time() * 1000) if self.config.timestamp_type_log_append else -1
        patched: list[records.BatchHeader] = []
        for header in headers:
            records.patch_batch(buffer, header, next_offset, leader_epoch)
            if append_time >= 0:
                records.patch_log_append_time(buffer, header, append_time)
            patched.append(next(records.iter_batches(
                memoryview(buffer)[header.position : header.position + header.length], verify_crc=False)))
            next_offset += header.last_offset_delta + 1
        self._maybe_roll(len(buffer))
        # A new epoch is written to the epoch file with the next checkpoint (flush, roll, close), not here:
        # two fsyncs on the produce path for each partition's first write after an election. Until then a
        # crash leaves the batch itself to say its epoch (loader.load_epochs).
        if not self._epochs or self._epochs[-1][0] < leader_epoch:
            self._epochs.append((leader_epoch, base))
        active = self._segments[-1]
        # headers are relative to the slice they came from; shift them to their place in `buffer`
        active.append(buffer, [_at(h, g.position) for h, g in zip(patched, headers, strict=True)])
        self._update_producers(active, patched, markers)
        self._unflushed += next_offset - base
        self._maybe_flush()
        return AppendResult(base, next_offset - 1, append_time, self._start)

    @_locked
    def append_replicated(self, batch_bytes: bytes) -> AppendResult:
        """A follower's append (Kafka's `UnifiedLog.appendAsFollower`): the leader's batches byte for byte,
        with the offsets, leader epochs and append times the leader gave them. They must continue this log."""
        headers = validate_batches(batch_bytes, self.config.max_message_bytes, client=False)
        markers = _markers(batch_bytes, headers)
        base = next_offset = self.log_end_offset
        for header in headers:
            if header.base_offset != next_offset:
                raise ValueError(f"{self.directory.name}: replicated batch at offset {header.base_offset}, the log"
                                 f" ends at {next_offset}")
            next_offset += header.last_offset_delta + 1
        self._maybe_roll(len(batch_bytes))
        for header in headers:  # written with the next checkpoint, as on the leader's path
            if not self._epochs or self._epochs[-1][0] < header.leader_epoch:
                self._epochs.append((header.leader_epoch, header.base_offset))
        self._segments[-1].append(batch_bytes, headers)
        self._update_producers(self._segments[-1], headers, markers)
        self._unflushed += next_offset - base
        self._maybe_flush()
        return AppendResult(base, next_offset - 1, -1, self._start)

    def _update_producers(self, active: Segment, headers: list[records.BatchHeader],
                          markers: dict[int, Marker]) -> None:
        """Producer state, and the aborted transactions into the segment holding their ABORT markers (the active
        one: the appended batches are all there)."""
        for index, header in enumerate(headers):
            aborted = self.producers.update(header, markers.get(index))
            if aborted is not None:
                active.txn_index.append(aborted)

    def _maybe_roll(self, incoming: int) -> None:
        active = self._segments[-1]
        if active.size == 0:
            return
        age_ms = int(time.time() * 1000) - active.created_ms
        if (active.size + incoming > self.config.segment_bytes or age_ms > self.config.segment_ms
                or len(active.index) >= self.config.max_index_entries - 1):
            self.roll()

    @_locked
    def roll(self) -> None:
        # The sealed segment is fsynced afterwards, off the event loop; the recovery point moves only once
        # it is on disk. A crash before that is an unclean shutdown: recovery then verifies every segment.
        active = self._segments[-1]
        active.seal()
        self._segments.append(Segment(self.directory, active.next_offset, self.config.index_interval_bytes))
        self._sealed.append(active)
        if self.background is None:
            self.flush_sealed()
        else:
            self.background(self.flush_sealed)

    def flush_sealed(self) -> None:
        """fsync the segments rolled since the last call, then advance the recovery point past them."""
        with self.lock:
            pending, self._sealed = self._sealed, []
        flushed = -1
        for segment in pending:
            try:
                segment.flush(True)  # without the lock: a sealed segment is never written again
            except (OSError, ValueError):
                continue  # deleted or truncated away meanwhile: nothing of it to keep
            flushed = max(flushed, segment.next_offset)
        with self.lock:
            if flushed > self.recovery_point and not self._closed:
                self.recovery_point = min(flushed, self.log_end_offset)
                self._checkpoint()

    def _maybe_flush(self) -> None:
        now = time.monotonic()
        due = (self.config.fsync_every_append or self._unflushed >= self.config.flush_messages
               or (now - self._last_flush) * 1000 >= self.config.flush_ms)
        if due:
            self.flush()

    @_locked
    def flush(self) -> None:
        for segment in self._segments:
            if segment.next_offset > self.recovery_point or segment is self._segments[-1]:
                segment.flush(True)
        self.recovery_point = self.log_end_offset
        self._unflushed = 0
        self._last_flush = time.monotonic()
        self._checkpoint()

    # -- read -------------------------------------------------------------------------------
    def _segment_for(self, offset: int) -> int:
        return max(bisect.bisect_right([s.base_offset for s in self._segments], offset) - 1, 0)

    @_locked
    def read(self, offset: int, max_bytes: int) -> ReadResult:
        if offset < self._start or offset >= self.log_end_offset:
            return ReadResult((), 0)
        for segment in self._segments[self._segment_for(offset):]:
            found = segment.position_of(offset)
            if found is None:
                continue
            position, first = found
            size = first
            # Whole batches only; the first one even above max_bytes (like Kafka).
            if size < max_bytes:
                for header in segment.batches(position + first):
                    if size + header.length > max_bytes:
                        break
                    size += header.length
            return ReadResult((FileRange(str(segment.path), position, size, segment.file),), size)
        return ReadResult((), 0)

    @_locked
    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        for segment in self._segments:
            if segment.max_timestamp < timestamp:
                continue
            start = segment.index.lookup(segment.time_index.lookup(timestamp))
            for header in segment.batches(start):
                last = header.base_offset + header.last_offset_delta
                if header.max_timestamp < timestamp or last < self._start:
                    continue
                if header.attributes & records.LOG_APPEND_TIME_FLAG:
                    return TimestampOffset(header.max_timestamp, max(header.base_offset, self._start))
                # Like Kafka, compressed batches are decoded so the answer is the exact record.
                for record in iter_records(_pread(segment, header.position, header.length), header):
                    if record.timestamp >= timestamp and record.offset >= self._start:
                        return TimestampOffset(record.timestamp, record.offset)
        return None

    @_locked
    def max_timestamp(self) -> TimestampOffset | None:
        best: TimestampOffset | None = None
        for segment in self._segments:
            if segment.max_timestamp >= 0 and (best is None or segment.max_timestamp > best.timestamp):
                best = TimestampOffset(segment.max_timestamp, segment._max_ts_offset)
        return best

    # -- deletion ---------------------------------------------------------------------------
    @_locked
    def delete_records_before(self, offset: int) -> int:
        self._start = max(self._start, min(offset, self.high_watermark))
        while len(self._segments) > 1 and self._segments[1].base_offset <= self._start:
            self._segments.pop(0).delete()
        self._checkpoint()
        return self._start

    def replace_segment(self, segment: Segment, content: bytes, generation: int | None = None) -> bool:
        """Swap a closed segment's content (the cleaner's output): write `.cleaned`, fsync, rename over.

        The write runs without the lock; the swap is skipped (False) when the segment left the log or the
        log was truncated since `generation`, the state the content was computed from."""
        cleaned = segment.path.with_name(segment.path.name + ".cleaned")
        with cleaned.open("wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        with self.lock:
            stale = generation is not None and generation != self.generation
            if stale or self._closed or segment not in self._segments:
                cleaned.unlink(missing_ok=True)
                return False
            self._swap(segment, cleaned)
            return True

    def _swap(self, segment: Segment, cleaned: Path) -> None:
        index = self._segments.index(segment)
        segment.close()
        segment.index.path.unlink(missing_ok=True)
        segment.time_index.path.unlink(missing_ok=True)
        cleaned.replace(segment.path)
        fresh = Segment(self.directory, segment.base_offset, self.config.index_interval_bytes)
        fresh.load(verify=False, trusted=True)
        fresh.seal()
        self._segments[index] = fresh

    @_locked
    def delete_segments(self, count: int) -> None:
        """Used by retention: drop the `count` oldest segments, moving the log start offset."""
        for _ in range(count):
            self._segments.pop(0).delete()
        self._start = max(self._start, self._segments[0].base_offset)
        self._checkpoint()

    @_locked
    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= `offset` (like Kafka, the whole batch holding it)."""
        if offset >= self.log_end_offset:
            return
        self.generation += 1
        if offset <= self._segments[0].base_offset:
            for segment in self._segments:  # nothing left: start over at `offset`
                segment.delete()
            self._segments = [Segment(self.directory, offset, self.config.index_interval_bytes)]
            self._start = offset
        while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
            self._segments.pop().delete()
        segment = self._segments[-1]
        cut = segment.position_of(offset)
        if cut is not None:
            segment.truncate_to_position(cut[0])
        segment.txn_index.truncate_to(self.log_end_offset)  # aborts whose markers are gone: open again below
        self._start = min(self._start, self.log_end_offset)
        self._epochs = [(e, o) for e, o in self._epochs if o < self.log_end_offset]
        self.producers = load_producers(self.directory, self._segments, self.log_end_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self._checkpoint()

    @_locked
    def restart_at(self, offset: int) -> None:
        """Drop every record and continue at `offset` (Kafka's truncateFullyAndStartAt): a follower whose
        log ends before the leader's log start can never fetch the records in between."""
        self.generation += 1
        for segment in self._segments:
            segment.delete()
        for snapshot in self.directory.glob("*.snapshot"):
            snapshot.unlink()  # producer state of records that are gone
        self._segments = [Segment(self.directory, offset, self.config.index_interval_bytes)]
        self._start = offset
        self._epochs = []
        self.producers = load_producers(self.directory, self._segments, self.log_end_offset)
        self.recovery_point = offset
        self._checkpoint()

    @_locked
    def close(self) -> None:
        if self._closed:
            return  # callers may close through the handler and again through the store
        self._closed = True
        self._segments[-1].seal()
        self.flush()
        self.producers.write_snapshot(self.directory, self.log_end_offset)
        for segment in self._segments:
            segment.close()
        checkpoint.write_atomic(self.directory / CLEAN_SHUTDOWN, "")


def _markers(data: bytes | bytearray | memoryview, headers: list[records.BatchHeader]) -> dict[int, Marker]:
    """The decoded markers of the control batches among `headers`, by index; INVALID_RECORD for a malformed one."""
    return {index: decode_marker(memoryview(data)[h.position : h.position + h.length])
            for index, h in enumerate(headers) if h.is_control and h.producer_id >= 0}


def _at(header: records.BatchHeader, position: int) -> records.BatchHeader:
    return replace(header, position=position)


def _pread(segment: Segment, position: int, length: int) -> bytes:
    return os.pread(segment.fd, length, position)
