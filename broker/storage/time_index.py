"""`.timeindex`: 12-byte entries (timestamp i64, relative offset i32), both non-decreasing."""

from __future__ import annotations

import bisect
import io
import struct
from pathlib import Path
from typing import BinaryIO

ENTRY = struct.Struct(">qi")


class TimeIndex:
    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.timestamps: list[int] = []
        self.offsets: list[int] = []  # relative
        path.touch()
        # Opened on the first append and closed when the segment is sealed: a closed segment holds no
        # handle here, so thousands of partitions x segments stay within the process's descriptor limit.
        self._file: BinaryIO | None = None

    def load(self) -> bool:
        data = self.path.read_bytes() if self.path.exists() else b""
        if len(data) % ENTRY.size:
            return False
        stamps: list[int] = []
        offsets: list[int] = []
        for stamp, relative in ENTRY.iter_unpack(data):
            if stamps and (stamp <= stamps[-1] or relative < offsets[-1]):
                return False
            stamps.append(stamp)
            offsets.append(relative)
        self.timestamps, self.offsets = stamps, offsets
        return True

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Kafka only records a new entry when the segment's max timestamp grows."""
        if self.timestamps and timestamp <= self.timestamps[-1]:
            return
        self.timestamps.append(timestamp)
        self.offsets.append(offset - self.base_offset)
        self._handle().write(ENTRY.pack(timestamp, offset - self.base_offset))

    def lookup(self, timestamp: int) -> int:
        """The offset to start scanning from for the first record with timestamp >= `timestamp`."""
        i = bisect.bisect_left(self.timestamps, timestamp) - 1
        return self.base_offset + (self.offsets[i] if i >= 0 else 0)

    def truncate_to_offset(self, offset: int) -> None:
        keep = bisect.bisect_left(self.offsets, offset - self.base_offset)
        self.timestamps, self.offsets = self.timestamps[:keep], self.offsets[:keep]
        self.rewrite()

    def detach(self) -> None:
        """Keep later appends in memory only, until `rewrite` or `close`: a recovery walk rebuilds the entries
        and writes the file only if they differ from it."""
        self.close()
        self._file = io.BytesIO()

    def _handle(self) -> BinaryIO:
        if self._file is None:
            self._file = self.path.open("ab")
        return self._file

    def rewrite(self) -> None:
        self.close()
        tmp = self.path.with_suffix(".timeindex.tmp")
        tmp.write_bytes(b"".join(ENTRY.pack(t, o) for t, o in zip(self.timestamps, self.offsets, strict=True)))
        tmp.replace(self.path)

    def __len__(self) -> int:
        return len(self.timestamps)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
