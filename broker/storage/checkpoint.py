"""Kafka's text checkpoint files ("version\\ncount\\nentries..."), written atomically: temp, fsync, rename."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, text: str | bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as handle:
        handle.write(text.encode() if isinstance(text, str) else text)
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_pairs(path: Path, pairs: list[tuple[int, int]]) -> None:
    """Leader-epoch checkpoint layout: `0`, count, then `epoch startOffset` lines."""
    write_atomic(path, "0\n" + f"{len(pairs)}\n" + "".join(f"{a} {b}\n" for a, b in pairs))


def read_pairs(path: Path) -> list[tuple[int, int]] | None:
    """None when missing or malformed (callers then rebuild from the log)."""
    try:
        lines = path.read_text().split("\n")
        if lines[0] != "0":
            return None
        count = int(lines[1])
        pairs = [(int(a), int(b)) for a, b in (line.split() for line in lines[2 : 2 + count])]
        return pairs if len(pairs) == count else None
    except (OSError, ValueError, IndexError):
        return None


def write_offsets(path: Path, offsets: dict[str, int]) -> None:
    """Partition-state checkpoint: `0`, count, then `name offset` lines (recovery-point etc.)."""
    write_atomic(path, "0\n" + f"{len(offsets)}\n" + "".join(f"{k} {v}\n" for k, v in offsets.items()))


def read_offsets(path: Path) -> dict[str, int]:
    try:
        lines = path.read_text().split("\n")
        count = int(lines[1])
        return {k: int(v) for k, v in (line.split() for line in lines[2 : 2 + count])}
    except (OSError, ValueError, IndexError):
        return {}
