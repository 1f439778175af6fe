"""Durable Raft state on disk: `state.json` (term, vote; replaced atomically) and `log.jsonl`.

Appends are fsynced before returning, so a node never acknowledges or votes on something it
could forget in a crash. Truncation (rare: only after a leader change) rewrites the log file
through a temporary file and an atomic rename.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from broker.controller.errors import RaftStorageError
from broker.controller.raft import Entry


def _fsync_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class FileStorage:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.state_path = self.dir / "state.json"
        self.log_path = self.dir / "log.jsonl"
        self._count = 0

    def load(self) -> tuple[int, int | None, list[Entry]]:
        term, vote = 0, None
        if self.state_path.exists():
            try:
                data: dict[str, Any] = json.loads(self.state_path.read_text(encoding="utf-8"))
                term, vote = int(data["term"]), data["voted_for"]
            except (ValueError, KeyError) as e:
                raise RaftStorageError(
                    f"{self.state_path}: unreadable Raft state ({e}); restore it or wipe the dir"
                ) from e
        entries: list[Entry] = []
        if self.log_path.exists():
            lines = self.log_path.read_text(encoding="utf-8").splitlines()
            for n, line in enumerate(lines, 1):
                try:
                    item = json.loads(line)
                    entries.append(Entry(int(item["t"]), item["d"]))
                except (ValueError, KeyError) as e:
                    if n == len(lines):
                        break  # a torn last line from a crash mid-append was never acknowledged
                    raise RaftStorageError(f"{self.log_path}:{n}: corrupt Raft log entry ({e})") from e
        self._count = len(entries)
        return term, vote, entries

    def save_state(self, term: int, voted_for: int | None) -> None:
        _fsync_write(self.state_path, json.dumps({"term": term, "voted_for": voted_for}))

    def truncate_and_append(self, from_index: int, entries: list[Entry]) -> None:
        lines = [json.dumps({"t": e.term, "d": e.data}) + "\n" for e in entries]
        if from_index - 1 < self._count:
            kept = self.log_path.read_text(encoding="utf-8").splitlines(keepends=True)[: from_index - 1]
            _fsync_write(self.log_path, "".join(kept + lines))
        else:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.writelines(lines)
                f.flush()
                os.fsync(f.fileno())
        self._count = from_index - 1 + len(entries)
