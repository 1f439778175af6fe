"""One segment: `<20-digit base>.log` plus its `.index`, `.timeindex` and (once it has an entry) `.txnindex`."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import crc32c

from broker.protocol import records
from broker.storage.offset_index import OffsetIndex
from broker.storage.time_index import TimeIndex
from broker.storage.txn_index import TransactionIndex

_log = logging.getLogger("broker.storage")


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


_MAX_RELATIVE_OFFSET = 0x7FFFFFFF  # an index entry holds offset - segment base in 4 bytes, as Kafka's


def scan(
    fd: int, start: int, end: int, *, verify: bool, first_offset: int | None = None
) -> Iterator[records.BatchHeader]:
    """Batch headers from `start`; stops (without raising) at the first incomplete or invalid batch.

    With `first_offset` (recovery: the segment's base offset), a batch must also start after the previous one
    ends and stay within the segment's offset range: the CRC does not cover the base offset, so a flipped bit
    there passes it (Kafka's LogSegment.recover checks the range too). Kept, such a batch would be a hole in the
    log that followers never fetch again."""
    position = start
    next_offset = first_offset or 0  # the lowest base offset the next batch may have (with `first_offset`)
    while end - position >= records.HEADER_SIZE:
        raw = os.pread(fd, records.HEADER_SIZE, position)
        fields = records.HEADER.unpack(raw)
        length = fields[1] + records.LOG_OVERHEAD
        if fields[3] != 2 or length < records.HEADER_SIZE or position + length > end:
            return
        header = records.BatchHeader(position, fields[0], length, *fields[2:])
        if header.last_offset_delta < 0 or header.record_count < 0:
            return
        if first_offset is not None:
            last = header.base_offset + header.last_offset_delta
            if header.base_offset < next_offset or last - first_offset > _MAX_RELATIVE_OFFSET:
                return
            next_offset = last + 1
        if verify:
            body = os.pread(fd, length - 21, position + 21)
            if len(body) != length - 21 or crc32c.crc32c(body) != header.crc:
                return
        yield header
        position += length


def why_invalid(fd: int, position: int, end: int, next_offset: int) -> str:
    """Why `scan` stopped at `position` before `end` (where a batch from `next_offset` on was due): the words
    recovery logs for what it cut."""
    if end - position < records.HEADER_SIZE:
        return f"a torn batch header ({end - position} bytes)"
    fields = records.HEADER.unpack(os.pread(fd, records.HEADER_SIZE, position))
    length = fields[1] + records.LOG_OVERHEAD
    if fields[3] != 2 or length < records.HEADER_SIZE or fields[6] < 0 or fields[12] < 0:
        return f"no valid batch header (magic {fields[3]}, length {fields[1]})"
    if position + length > end:
        return f"a torn batch ({end - position} of its {length} bytes)"
    if fields[0] < next_offset:
        return f"a batch whose base offset {fields[0]} goes back before {next_offset}"
    return "a batch whose CRC does not match its contents, or whose offsets leave the segment's range"


class SegmentFile:
    """A segment's read descriptor, closed when its last holder lets go (CPython frees it at once).

    A `FileRange` in flight holds it, so the bytes it names stay readable after compaction swaps the
    segment or retention deletes it; Apache Kafka delays segment deletion (`file.delete.delay.ms`) for the
    same reason."""

    __slots__ = ("fd",)

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def __del__(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


class Segment:
    def __init__(self, directory: Path, base_offset: int, index_interval: int) -> None:
        self.base_offset = base_offset
        self.path = directory / f"{segment_name(base_offset)}.log"
        self.path.touch()
        # The append handle is opened on the first append and closed by `release` (a sealed segment keeps
        # only its read descriptor: Kafka too keeps one channel per segment).
        self._file: BinaryIO | None = None
        self.file = SegmentFile(self.path)
        self.fd = self.file.fd
        self.size = os.fstat(self.fd).st_size
        stem = directory / segment_name(base_offset)
        self._had_indexes = all(stem.with_suffix(suffix).exists() for suffix in (".index", ".timeindex"))
        self.index = OffsetIndex(directory / f"{segment_name(base_offset)}.index", base_offset)
        self.time_index = TimeIndex(directory / f"{segment_name(base_offset)}.timeindex", base_offset)
        # Entries are added by the log (they need the partition's producer state), and rebuilt by its loader.
        self.txn_index = TransactionIndex(directory / f"{segment_name(base_offset)}.txnindex")
        self.index_interval = index_interval
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.created_ms = int(time.time() * 1000)
        self._since_index = 0
        self._max_ts_offset = base_offset

    def load(self, *, verify: bool, trusted: bool = False) -> bool:
        """Walk the log, rebuilding indexes if needed; truncate at the first bad byte. True if it was clean.

        `trusted`: the file was just written and fsynced by this process (the cleaner's output), so a
        missing index is rebuilt from batch headers without CRC checks."""
        indexes_ok = self._had_indexes and self.index.load() and self.time_index.load()
        if indexes_ok and not len(self.index) and self.size > 2 * self.index_interval:
            indexes_ok = False  # an index emptied by damage: a log this long must have entries
        if indexes_ok and not verify and self._load_from_indexes():
            return True
        valid_end = 0
        loaded = (self.index.offsets, self.index.positions, self.time_index.timestamps, self.time_index.offsets)
        self.index.offsets, self.index.positions = [], []
        self.time_index.timestamps, self.time_index.offsets = [], []
        self._since_index, self.max_timestamp, self.next_offset = 0, -1, self.base_offset
        self.index.detach()
        self.time_index.detach()
        for header in scan(self.fd, 0, self.size, verify=not trusted, first_offset=self.base_offset):
            self._track(header, header.position)
            valid_end = header.position + header.length
        clean = valid_end == self.size
        # Files that already say what the walk found stay as they are: after a crash every segment is
        # walked, and rewriting its two unchanged indexes (temp file + rename each) was most of the file
        # system work of recovering 1,000 partitions x 10 segments (bench/restart.py).
        if not (indexes_ok and clean and (self.index.offsets, self.index.positions) == loaded[:2]):
            self.index.rewrite()
        else:
            self.index.close()
        if indexes_ok and clean and self._time_index_agrees(loaded[2], loaded[3]):
            self.time_index.timestamps, self.time_index.offsets = loaded[2], loaded[3]
            self.time_index.close()
        else:
            self.time_index.rewrite()
        if not clean:
            _log.warning(
                "recovery: %s: %s at byte %d (offset %d); truncating %d bytes, every record from offset %d on",
                self.path, why_invalid(self.fd, valid_end, self.size, self.next_offset), valid_end, self.next_offset,
                self.size - valid_end, self.next_offset,
            )
            self.truncate_to_position(valid_end)
        return clean

    def _time_index_agrees(self, timestamps: list[int], offsets: list[int]) -> bool:
        """The time index on disk is the one the walk rebuilt, or that plus the entry `seal` adds for the
        segment's max timestamp (Kafka's `onBecomeInactiveSegment`)."""
        rebuilt = list(zip(self.time_index.timestamps, self.time_index.offsets, strict=True))
        on_disk = list(zip(timestamps, offsets, strict=True))
        sealed = [*rebuilt, (self.max_timestamp, self._max_ts_offset - self.base_offset)]
        return on_disk == rebuilt or (self.max_timestamp >= 0 and on_disk == sealed)

    def _load_from_indexes(self) -> bool:
        # Only the tail after the last index entry needs a walk to find the next offset.
        start = self.index.positions[-1] if len(self.index) else 0
        if len(self.time_index):
            self.max_timestamp = self.time_index.timestamps[-1]
            self._max_ts_offset = self.base_offset + self.time_index.offsets[-1]
        if start >= self.size and self.size:
            return False  # the index points past the end of the log: rebuild
        end = start
        for header in scan(self.fd, start, self.size, verify=False):
            self.next_offset = header.base_offset + header.last_offset_delta + 1
            end = header.position + header.length
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp, self._max_ts_offset = header.max_timestamp, self.next_offset - 1
        return end == self.size  # a torn tail means a full, verifying walk

    def _track(self, header: records.BatchHeader, position: int) -> None:
        # Kafka's rule: index a batch (by its last offset) once more than index.interval.bytes were
        # written since the previous entry; the time index gets the max timestamp seen so far then.
        last = header.base_offset + header.last_offset_delta
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self._max_ts_offset = last
        if self._since_index > self.index_interval:
            self.index.append(last, position)
            self.time_index.maybe_append(self.max_timestamp, self._max_ts_offset)
            self._since_index = 0
        self._since_index += header.length
        self.next_offset = last + 1

    def seal(self) -> None:
        """On roll or clean close Kafka writes a final time index entry for the segment's max timestamp."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self._max_ts_offset)
        self.release()

    def release(self) -> None:
        """Close the write handles (data written so far stays in the page cache; `flush(True)` fsyncs it)."""
        self.flush(False)
        if self._file is not None:
            self._file.close()
            self._file = None
        self.index.close()
        self.time_index.close()
        self.txn_index.close()

    def append(self, data: bytes | bytearray, headers: list[records.BatchHeader]) -> None:
        start = self.size
        if self._file is None:
            self._file = self.path.open("ab")
        self._file.write(data)
        self._file.flush()
        for header in headers:
            self._track(header, start + header.position)
        self.size += len(data)

    def batches(self, start: int = 0) -> Iterator[records.BatchHeader]:
        return scan(self.fd, start, self.size, verify=False)

    def position_of(self, offset: int) -> tuple[int, int] | None:
        """(position, size) of the batch holding `offset` or the first one after it."""
        for header in self.batches(self.index.lookup(offset)):
            if header.base_offset + header.last_offset_delta >= offset:
                return header.position, header.length
        return None

    def truncate_to_position(self, position: int) -> None:
        if self._file is not None:
            self._file.flush()
        os.truncate(self.path, position)
        self.size = position
        self.index.truncate_to_position(position)
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        for header in self.batches():
            self.next_offset = header.base_offset + header.last_offset_delta + 1
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp, self._max_ts_offset = header.max_timestamp, self.next_offset - 1
        self.time_index.truncate_to_offset(self.next_offset)

    def flush(self, fsync: bool) -> None:
        if self._file is not None:
            self._file.flush()
        self.index.flush()
        self.time_index.flush()
        self.txn_index.flush(fsync)
        if fsync:
            os.fsync(self.fd)  # the read descriptor reaches the same file: what was written gets to disk

    def close(self) -> None:
        self.release()  # the read descriptor closes with its last holder (SegmentFile)

    def delete(self) -> None:
        self.close()
        for path in (self.path, self.index.path, self.time_index.path, self.txn_index.path):
            path.unlink(missing_ok=True)
