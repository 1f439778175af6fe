"""Durable Raft state on disk: `state.json` (term, vote), `snapshot-<index>.json` and `log.jsonl`.

Appends are fsynced before returning, so a node never acknowledges or votes on something it
could forget in a crash. Truncation (rare: only after a leader change) rewrites the log file
through a temporary file and an atomic rename.

Snapshots (Raft paper, section 7): `save_snapshot` writes and fsyncs `snapshot-<index>.json`
(atomic rename) before the log is rewritten to the entries after it, then deletes older snapshots.
Each log line carries its index (`i`), so after a crash between the two steps `load` still knows
which lines the snapshot replaced: it takes the newest readable snapshot and the log lines after it,
and drops the whole log when the line at the snapshot's index has another term (the log had
diverged from the committed history the snapshot holds). Lines without `i` (logs written before
snapshots existed) start at index 1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from broker.controller.errors import RaftStorageError
from broker.controller.raft import Entry, Persisted, Snapshot

_SNAPSHOT_PREFIX, _SNAPSHOT_SUFFIX = "snapshot-", ".json"


def _fsync_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    # The rename itself must reach the disk before the caller relies on it (the next step may delete
    # what this file replaces).
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _line(index: int, entry: Entry) -> str:
    return json.dumps({"i": index, "t": entry.term, "d": entry.data}) + "\n"


class FileStorage:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.state_path = self.dir / "state.json"
        self.log_path = self.dir / "log.jsonl"
        self._base = 0  # index of the entry before the first line of log.jsonl
        self._count = 0  # lines in log.jsonl

    def _snapshot_files(self) -> list[tuple[int, Path]]:
        found = []
        for path in self.dir.glob(f"{_SNAPSHOT_PREFIX}*{_SNAPSHOT_SUFFIX}"):
            number = path.name[len(_SNAPSHOT_PREFIX) : -len(_SNAPSHOT_SUFFIX)]
            if number.isdigit():
                found.append((int(number), path))
        return sorted(found, reverse=True)

    def _load_snapshot(self) -> Snapshot | None:
        files = self._snapshot_files()
        for _, path in files:
            try:
                body: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
                return Snapshot(int(body["index"]), int(body["term"]), body["data"])
            except (ValueError, KeyError, TypeError):
                # Written through a temporary file and a rename, so only damage makes one unreadable: an
                # older one plus the log may still cover it (load checks that the log continues it).
                continue
        if files:
            raise RaftStorageError(f"{files[0][1]}: unreadable Raft snapshot; restore it or wipe the dir")
        return None

    def load(self) -> Persisted:
        term, vote = 0, None
        if self.state_path.exists():
            try:
                data: dict[str, Any] = json.loads(self.state_path.read_text(encoding="utf-8"))
                term, vote = int(data["term"]), data["voted_for"]
            except (ValueError, KeyError) as e:
                raise RaftStorageError(
                    f"{self.state_path}: unreadable Raft state ({e}); restore it or wipe the dir"
                ) from e
        for leftover in self.dir.glob("*.tmp"):  # a write a crash interrupted, never renamed into place
            leftover.unlink()
        snapshot = self._load_snapshot()
        first, entries, torn = self._read_log()
        self._base, self._count = first - 1, len(entries)
        if snapshot is None:
            if first != 1:
                raise RaftStorageError(f"{self.log_path}: starts at index {first} but there is no snapshot; "
                                       "restore the snapshot files or wipe the dir")
            if torn:  # later appends must not land behind the torn bytes
                self._write_log(0, entries)
            return Persisted(term, vote, None, entries)
        if first > snapshot.index + 1:
            raise RaftStorageError(f"{self.log_path}: starts at index {first}, after snapshot {snapshot.index} + 1; "
                                   "restore the missing entries or wipe the dir")
        at = snapshot.index - first  # position of the snapshot's last entry in `entries`
        if 0 <= at < len(entries) and entries[at].term != snapshot.term:
            kept: list[Entry] = []  # the log diverged before the snapshot was installed: none of it counts
        else:
            kept = entries[at + 1 :]
        if torn or len(kept) != len(entries):  # finish what a crash interrupted: only what follows, whole lines
            self._write_log(snapshot.index, kept)
        return Persisted(term, vote, snapshot, kept)

    def _read_log(self) -> tuple[int, list[Entry], bool]:
        """The index of the first line (1 when the file is empty or absent), the entries, and whether a torn
        last line was left out."""
        entries: list[Entry] = []
        first = 1
        if not self.log_path.exists():
            return first, entries, False
        lines = self.log_path.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines, 1):
            try:
                item = json.loads(line)
                if n == 1:
                    first = int(item.get("i", 1))
                entries.append(Entry(int(item["t"]), item["d"]))
            except (ValueError, KeyError, AttributeError) as e:
                if n == len(lines):
                    return first, entries, True  # a torn last line from a crash mid-append: never acknowledged
                raise RaftStorageError(f"{self.log_path}:{n}: corrupt Raft log entry ({e})") from e
        return first, entries, False

    def _write_log(self, base: int, entries: list[Entry]) -> None:
        _fsync_write(self.log_path, "".join(_line(base + 1 + k, e) for k, e in enumerate(entries)))
        self._base, self._count = base, len(entries)

    def save_state(self, term: int, voted_for: int | None) -> None:
        _fsync_write(self.state_path, json.dumps({"term": term, "voted_for": voted_for}))

    def truncate_and_append(self, from_index: int, entries: list[Entry]) -> None:
        keep = from_index - 1 - self._base  # lines of log.jsonl that stay
        if keep < self._count:
            kept = self.log_path.read_text(encoding="utf-8").splitlines(keepends=True)[:keep]
            lines = [_line(from_index + k, e) for k, e in enumerate(entries)]
            _fsync_write(self.log_path, "".join(kept + lines))
        else:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.writelines(_line(from_index + k, e) for k, e in enumerate(entries))
                f.flush()
                os.fsync(f.fileno())
        self._count = keep + len(entries)

    def save_snapshot(self, snapshot: Snapshot, entries_after: list[Entry]) -> None:
        path = self.dir / f"{_SNAPSHOT_PREFIX}{snapshot.index}{_SNAPSHOT_SUFFIX}"
        _fsync_write(path, json.dumps({"index": snapshot.index, "term": snapshot.term, "data": snapshot.data}))
        self._write_log(snapshot.index, entries_after)
        for _, older in self._snapshot_files():
            if older != path:
                older.unlink(missing_ok=True)
