"""`.index`: sparse 8-byte entries (relative offset i32, position i32), big-endian, ascending."""

from __future__ import annotations

import bisect
import io
import struct
from pathlib import Path
from typing import BinaryIO

ENTRY = struct.Struct(">ii")


class OffsetIndex:
    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.offsets: list[int] = []  # relative
        self.positions: list[int] = []
        path.touch()
        # Opened on the first append and closed when the segment is sealed: a closed segment holds no
        # handle here, so thousands of partitions x segments stay within the process's descriptor limit.
        self._file: BinaryIO | None = None

    def load(self) -> bool:
        """Read the file; False (and empty) when it is missing or not a valid index, so the caller rebuilds."""
        data = self.path.read_bytes() if self.path.exists() else b""
        if len(data) % ENTRY.size:
            return False
        offsets: list[int] = []
        positions: list[int] = []
        for relative, position in ENTRY.iter_unpack(data):
            if (offsets and (relative <= offsets[-1] or position <= positions[-1])) or relative < 0 or position < 0:
                return False
            offsets.append(relative)
            positions.append(position)
        self.offsets, self.positions = offsets, positions
        return True

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        if self.offsets and relative <= self.offsets[-1]:
            return
        self.offsets.append(relative)
        self.positions.append(position)
        self._handle().write(ENTRY.pack(relative, position))

    def lookup(self, offset: int) -> int:
        """Position of the last indexed batch at or before `offset` (0 when none)."""
        i = bisect.bisect_right(self.offsets, offset - self.base_offset) - 1
        return self.positions[i] if i >= 0 else 0

    def truncate_to_position(self, position: int) -> None:
        keep = bisect.bisect_left(self.positions, position)
        self.offsets, self.positions = self.offsets[:keep], self.positions[:keep]
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
        tmp = self.path.with_suffix(".index.tmp")
        tmp.write_bytes(b"".join(ENTRY.pack(o, p) for o, p in zip(self.offsets, self.positions, strict=True)))
        tmp.replace(self.path)

    def __len__(self) -> int:
        return len(self.offsets)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
