"""A segment's aborted-transaction index, `<20-digit base offset>.txnindex` (Kafka's TransactionIndex, AbortedTxn).

One 34-byte entry per transaction aborted by an ABORT marker in the segment, in marker order: version i16 (0),
producerId i64, firstOffset i64 (the transaction's first record here), lastOffset i64 (the marker's offset),
lastStableOffset i64 (the partition's LSO right after the abort), all big-endian. read_committed fetches ask
which aborted transactions overlap the data they return (`UnifiedLog.collectAbortedTransactions`), so that
consumers drop those records.

As in Kafka the file exists only once the segment has an entry: logs without transactions have none. The
entries are also kept in memory (aborts are rare), so queries never read the file.
"""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from broker.storage import checkpoint

_log = logging.getLogger("broker.storage")

ENTRY = struct.Struct(">hqqqq")  # 34 bytes
VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset
    last_stable_offset: int  # the LSO once the abort was appended: no later entry starts before it

    def pack(self) -> bytes:
        return ENTRY.pack(VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)


def parse(data: bytes) -> tuple[list[AbortedTxn], bool]:
    """The entries of a `.txnindex` file up to the first bad one, and whether the whole file was good."""
    entries: list[AbortedTxn] = []
    whole = len(data) - len(data) % ENTRY.size
    for version, *fields in ENTRY.iter_unpack(data[:whole]):
        if version != VERSION:
            return entries, False
        entries.append(AbortedTxn(*fields))
    return entries, whole == len(data)


def collect(entries: list[AbortedTxn], start_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
    """Entries overlapping [start_offset, upper_bound_offset), and whether later segments can hold no more
    (an entry's lastStableOffset at or past the bound: every later transaction starts after it)."""
    found = []
    for entry in entries:
        if entry.last_offset >= start_offset and entry.first_offset < upper_bound_offset:
            found.append(entry)
        if entry.last_stable_offset >= upper_bound_offset:
            return found, True
    return found, False


class TransactionIndex:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[AbortedTxn] = []
        self._file: BinaryIO | None = None
        self._unsynced = False  # appended since the last fsync (the handle may be closed by then: a sealed segment)
        if path.exists():
            data = path.read_bytes()
            self.entries, intact = parse(data)
            if not intact:  # a torn append (crash): recovery replays the log after the last snapshot anyway
                _log.warning("recovery: %s: %d bytes after the last whole, version-0 entry; dropped", path,
                             len(data) - len(self.entries) * ENTRY.size)
                self._write(self.entries)

    def append(self, entry: AbortedTxn) -> None:
        if self.entries and entry.last_offset <= self.entries[-1].last_offset:
            raise ValueError(f"{self.path}: aborted transaction ending at {entry.last_offset} appended after one"
                             f" ending at {self.entries[-1].last_offset}")
        if self._file is None:
            self._file = self.path.open("ab")
        self._file.write(entry.pack())
        self._file.flush()  # into the page cache: a dump sees it; fsync comes with the segment's
        self._unsynced = True
        self.entries.append(entry)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries of markers at or after `offset` (their records are being truncated away)."""
        kept = [e for e in self.entries if e.last_offset < offset]
        if len(kept) != len(self.entries):
            self._write(kept)

    def replace(self, entries: list[AbortedTxn]) -> None:
        """Recovery's rebuilt entries; the file is rewritten only when they differ from it."""
        if entries != self.entries:
            self._write(entries)

    def _write(self, entries: list[AbortedTxn]) -> None:
        self.close()
        if entries:
            checkpoint.write_atomic(self.path, b"".join(e.pack() for e in entries))
        else:
            self.path.unlink(missing_ok=True)
        self.entries = list(entries)
        self._unsynced = False  # write_atomic fsyncs

    def flush(self, fsync: bool) -> None:
        if self._file is not None:
            self._file.flush()
        if fsync and self._unsynced and self.path.exists():
            descriptor = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
        if fsync:
            self._unsynced = False

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
