"""The storage interface the protocol handlers need, and an in-memory implementation.

It mirrors broker/storage's `PartitionLog` one to one (open/append/read/offsets/truncate/close) so the
real segment store drops in at merge time: `LogStore.open(topic, partition, config)` becomes
`PartitionLog.open(dir, LogConfig)`. Reads return `chunks` that are either bytes or `FileRange`s; the
server sends file ranges with sendfile, bytes with a plain write.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from broker.protocol import records
from broker.protocol.control import decode_marker
from broker.storage import txn_index
from broker.storage.producer_state import ProducerStateTable
from broker.storage.txn_index import AbortedTxn


@dataclass(frozen=True, slots=True)
class LogConfig:
    max_message_bytes: int = 1048588
    segment_bytes: int = 1 << 30
    timestamp_type_log_append: bool = False
    segment_ms: int = 7 * 24 * 3600 * 1000
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    cleanup_policy: frozenset[str] = frozenset({"delete"})  # delete, compact, or both
    delete_retention_ms: int = 24 * 3600 * 1000
    flush_messages: int = (1 << 63) - 1
    flush_ms: int = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int
    last_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class FileRange:
    path: str
    position: int
    size: int
    # The segment's open descriptor (a `SegmentFile`): while the range is in flight the bytes stay
    # readable even if compaction or retention replaces the file at `path`.
    file: HasFd | None = field(default=None, compare=False)

    def read(self) -> bytes:
        """The bytes of the range (the in-memory path; plain TCP sends ranges with sendfile instead)."""
        if self.file is not None:
            return os.pread(self.file.fd, self.size, self.position)
        descriptor = os.open(self.path, os.O_RDONLY)
        try:
            return os.pread(descriptor, self.size, self.position)
        finally:
            os.close(descriptor)


class HasFd(Protocol):
    fd: int


def materialize(chunks: tuple[bytes | FileRange, ...]) -> bytes:
    """A read's chunks as one bytes object."""
    return b"".join(chunk.read() if isinstance(chunk, FileRange) else chunk for chunk in chunks)


@dataclass(frozen=True, slots=True)
class ReadResult:
    chunks: tuple[bytes | FileRange, ...]
    size: int


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    timestamp: int
    offset: int


class PartitionLog(Protocol):
    # The partition's one producer-state store, updated by every append and rebuilt by truncation.
    producers: ProducerStateTable

    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction; None when none is open."""
    def aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions with lastOffset >= start_offset and firstOffset < upper_bound_offset."""
    def append(self, batch_bytes: bytes, leader_epoch: int, client: bool = True) -> AppendResult:
        """`client`: from a producer's request (validated as such), else a coordinator's own batch."""
    def append_replicated(self, batch_bytes: bytes) -> AppendResult:
        """A follower's append: the leader's batches as they are (offsets, epochs, append times kept)."""
    def read(self, offset: int, max_bytes: int) -> ReadResult: ...
    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None: ...
    def max_timestamp(self) -> TimestampOffset | None: ...
    def delete_records_before(self, offset: int) -> int: ...
    def truncate_to(self, offset: int) -> None: ...
    def restart_at(self, offset: int) -> None:
        """Drop every record and continue at `offset` (a follower behind the leader's log start)."""
    def close(self) -> None: ...


class LogStore(Protocol):
    def open(self, topic: str, partition: int, config: LogConfig) -> PartitionLog: ...
    def open_all(
        self, partitions: Iterable[tuple[str, int, LogConfig]], workers: int | None = None
    ) -> dict[tuple[str, int], PartitionLog]:
        """Open (and recover) many logs at start-up, in parallel where the store can."""
    def delete(self, topic: str, partition: int) -> None: ...
    def maintain(self, now_ms: int | None = None) -> None:
        """Retention and compaction of every open log, as each one's cleanup.policy says."""
    def close(self) -> None: ...


@dataclass(slots=True)
class _Batch:
    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


@dataclass
class MemoryPartitionLog:
    """Batches in a list; single node, so the high watermark is the log end offset."""

    config: LogConfig
    _batches: list[_Batch] = field(default_factory=list)
    _bases: list[int] = field(default_factory=list)
    _start: int = 0
    _end: int = 0
    producers: ProducerStateTable = field(default_factory=ProducerStateTable)
    _aborted: list[AbortedTxn] = field(default_factory=list)  # the disk log's .txnindex entries, in one list

    @property
    def log_start_offset(self) -> int:
        return self._start

    @property
    def log_end_offset(self) -> int:
        return self._end

    @property
    def high_watermark(self) -> int:
        return self._end

    @property
    def first_unstable_offset(self) -> int | None:
        return self.producers.first_unstable_offset()

    def aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        return txn_index.collect(self._aborted, start_offset, upper_bound_offset)[0]

    def _update_producers(self, header: records.BatchHeader, batch: bytes) -> None:
        marker = decode_marker(batch) if header.is_control and header.producer_id >= 0 else None
        aborted = self.producers.update(header, marker)
        if aborted is not None:
            self._aborted.append(aborted)

    def append(self, batch_bytes: bytes, leader_epoch: int, client: bool = True) -> AppendResult:
        buffer = bytearray(batch_bytes)
        headers = list(records.iter_batches(buffer))
        for header in headers:  # a bad marker refuses the append before anything is kept
            if header.is_control:
                decode_marker(memoryview(buffer)[header.position : header.position + header.length])
        base = self._end
        append_time = int(time.time() * 1000) if self.config.timestamp_type_log_append else -1
        for header in headers:
            records.patch_batch(buffer, header, self._end, leader_epoch)
            if append_time >= 0:
                records.patch_log_append_time(buffer, header, append_time)
            last = self._end + header.last_offset_delta
            stamp = append_time if append_time >= 0 else header.max_timestamp
            chunk = bytes(buffer[header.position : header.position + header.length])
            self._batches.append(_Batch(self._end, last, stamp, chunk))
            self._bases.append(self._end)
            self._update_producers(dataclasses.replace(header, base_offset=self._end), chunk)
            self._end = last + 1
        return AppendResult(base, self._end - 1, append_time, self._start)

    def append_replicated(self, batch_bytes: bytes) -> AppendResult:
        base = self._end
        for header in records.iter_batches(batch_bytes):
            if header.base_offset != self._end:
                raise ValueError(f"replicated batch at offset {header.base_offset}, the log ends at {self._end}")
            last = header.base_offset + header.last_offset_delta
            chunk = bytes(batch_bytes[header.position : header.position + header.length])
            self._batches.append(_Batch(header.base_offset, last, header.max_timestamp, chunk))
            self._bases.append(header.base_offset)
            self._update_producers(header, chunk)
            self._end = last + 1
        return AppendResult(base, self._end - 1, -1, self._start)

    def read(self, offset: int, max_bytes: int) -> ReadResult:
        index = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        chunks: list[bytes | FileRange] = []
        size = 0
        for batch in self._batches[index:]:
            if batch.last_offset < offset:
                continue
            # Like Kafka: the first batch is returned whole even when over max_bytes.
            if chunks and size + len(batch.data) > max_bytes:
                break
            chunks.append(batch.data)
            size += len(batch.data)
            if size >= max_bytes:
                break
        return ReadResult(tuple(chunks), size)

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        for batch in self._batches:
            if batch.max_timestamp < timestamp or batch.last_offset < self._start:
                continue
            header = next(records.iter_batches(batch.data, verify_crc=False))
            if header.compression or header.attributes & records.LOG_APPEND_TIME_FLAG:
                return TimestampOffset(batch.max_timestamp, max(batch.base_offset, self._start))
            for delta, stamp in records.record_timestamps(batch.data, header):
                offset = batch.base_offset + delta
                if stamp >= timestamp and offset >= self._start:
                    return TimestampOffset(stamp, offset)
        return None

    def max_timestamp(self) -> TimestampOffset | None:
        best: TimestampOffset | None = None
        for batch in self._batches:
            if best is None or batch.max_timestamp > best.timestamp:
                best = TimestampOffset(batch.max_timestamp, batch.last_offset)
        return best

    def delete_records_before(self, offset: int) -> int:
        self._start = max(self._start, min(offset, self._end))
        while self._batches and self._batches[0].last_offset < self._start:
            self._batches.pop(0)
            self._bases.pop(0)
        return self._start

    def truncate_to(self, offset: int) -> None:
        while self._batches and self._batches[-1].base_offset >= offset:
            self._batches.pop()
            self._bases.pop()
        self._end = min(self._end, offset)
        kept = [entry for entry in self._aborted if entry.last_offset < self._end]
        self._rebuild_producers()
        self._aborted = kept  # the replay cannot rebuild aborts of transactions begun before the log start

    def _rebuild_producers(self) -> None:
        self.producers = ProducerStateTable()
        self._aborted = []
        for batch in self._batches:
            for header in records.iter_batches(batch.data, verify_crc=False):
                self._update_producers(header, batch.data)

    def restart_at(self, offset: int) -> None:
        self._batches.clear()
        self._bases.clear()
        self._start = self._end = offset
        self.producers = ProducerStateTable()
        self._aborted = []

    def close(self) -> None:
        pass


class MemoryLogStore:
    def __init__(self) -> None:
        self._logs: dict[tuple[str, int], MemoryPartitionLog] = {}

    def open(self, topic: str, partition: int, config: LogConfig) -> PartitionLog:
        log = self._logs.get((topic, partition))
        if log is None:
            log = self._logs[(topic, partition)] = MemoryPartitionLog(config)
        return log

    def open_all(
        self, partitions: Iterable[tuple[str, int, LogConfig]], workers: int | None = None
    ) -> dict[tuple[str, int], PartitionLog]:
        return {(topic, partition): self.open(topic, partition, config) for topic, partition, config in partitions}

    def delete(self, topic: str, partition: int) -> None:
        self._logs.pop((topic, partition), None)

    def reconfigure(self, topic: str, partition: int, config: LogConfig) -> None:
        log = self._logs.get((topic, partition))
        if log is not None:
            log.config = config

    def maintain(self, now_ms: int | None = None) -> None:
        pass  # memory logs are for tests; nothing ages out

    def close(self) -> None:
        self._logs.clear()
