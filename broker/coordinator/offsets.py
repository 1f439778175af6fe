"""Committed consumer offsets per (group, topic, partition)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str | None


class OffsetStore:
    def __init__(self) -> None:
        self._offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}

    def commit(self, group: str, topic: str, partition: int, value: CommittedOffset) -> None:
        self._offsets.setdefault(group, {})[(topic, partition)] = value

    def fetch(self, group: str, topic: str, partition: int) -> CommittedOffset | None:
        return self._offsets.get(group, {}).get((topic, partition))

    def partitions(self, group: str) -> list[tuple[str, int]]:
        return sorted(self._offsets.get(group, {}))

    def groups(self) -> list[str]:
        return [group for group, offsets in self._offsets.items() if offsets]

    def delete_group(self, group: str) -> None:
        self._offsets.pop(group, None)

    def delete_topic(self, topic: str) -> None:
        for offsets in self._offsets.values():
            for key in [key for key in offsets if key[0] == topic]:
                del offsets[key]
