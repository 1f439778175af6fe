"""Per-producer state (epoch, last sequence, last offset) kept with the log, with `<offset>.snapshot` files.

Snapshots are JSON (not Kafka's binary layout); a missing or unreadable one (Kafka's own, a torn write)
is ignored and the state rebuilt from batch headers after the newest readable snapshot.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from broker.protocol import records
from broker.storage import checkpoint


@dataclass(frozen=True, slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int


class ProducerStateTable:
    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}

    def update(self, header: records.BatchHeader) -> None:
        if header.producer_id < 0:
            return
        last = header.base_offset + header.last_offset_delta
        self.entries[header.producer_id] = ProducerEntry(
            header.producer_id, header.producer_epoch, header.last_sequence, last)

    def write_snapshot(self, directory: Path, offset: int) -> None:
        body = json.dumps([[e.producer_id, e.epoch, e.last_sequence, e.last_offset] for e in self.entries.values()])
        checkpoint.write_atomic(directory / f"{offset:020d}.snapshot", body)
        for old in directory.glob("*.snapshot"):
            if old.stem.isdigit() and int(old.stem) < offset:
                old.unlink()

    @classmethod
    def load(cls, directory: Path, max_offset: int) -> tuple[ProducerStateTable, int]:
        """The newest readable snapshot at or below `max_offset`, and its offset (0 when none)."""
        table = cls()
        candidates = sorted((int(p.stem), p) for p in directory.glob("*.snapshot") if p.stem.isdigit())
        for offset, path in reversed(candidates):
            if offset > max_offset:
                path.unlink()  # beyond the recovered log end: stale
                continue
            try:
                rows = json.loads(path.read_text())
                table.entries = {int(r[0]): ProducerEntry(*(int(x) for x in r)) for r in rows}
                return table, offset
            except (ValueError, TypeError, IndexError, UnicodeDecodeError):
                continue
        return table, 0
