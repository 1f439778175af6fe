"""Committed consumer offsets per (group, topic, partition), with an optional journal.

The journal (the `__consumer_offsets` topic, see offsets_topic.py) is written before memory changes,
so an offset is only reported committed once it is in the log; `load` replays the journal at start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str | None

    @classmethod
    def committed(cls, offset: int, leader_epoch: int, metadata: str | None) -> CommittedOffset:
        """An offset as OffsetCommit or TxnOffsetCommit gives it. Kafka keeps a null metadata as "" (the
        metadata of its offset commit record is not nullable: OffsetAndMetadata's NO_METADATA), so OffsetFetch
        answers "" for it; KafkaJS commits every offset with null metadata."""
        return cls(offset, leader_epoch, "" if metadata is None else metadata)


@dataclass(frozen=True, slots=True)
class OffsetChange:
    topic: str
    partition: int
    value: CommittedOffset | None  # None: deleted (a tombstone in the journal)


Journal = Callable[[str, list[OffsetChange]], None]


class OffsetStore:
    def __init__(self, journal: Journal | None = None) -> None:
        self.journal = journal
        self._offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        # TxnOffsetCommit: offsets written under a producer id, waiting for its transaction's marker.
        self._pending: dict[int, dict[str, list[OffsetChange]]] = {}

    def commit_many(self, group: str, changes: list[OffsetChange]) -> None:
        if not changes:
            return
        if self.journal is not None:
            self.journal(group, changes)
        for change in changes:
            self.load(group, change.topic, change.partition, change.value)

    def commit(self, group: str, topic: str, partition: int, value: CommittedOffset) -> None:
        self.commit_many(group, [OffsetChange(topic, partition, value)])

    def load(self, group: str, topic: str, partition: int, value: CommittedOffset | None) -> None:
        """Apply one change to memory only (replay of the journal)."""
        offsets = self._offsets.setdefault(group, {})
        if value is None:
            offsets.pop((topic, partition), None)
            # As Kafka replays a tombstone: the partition's offsets staged by open transactions go too, so that
            # deleting an offset (OffsetDelete, DeleteGroups) is not undone by a later transaction commit.
            for staged in self._pending.values():
                if group in staged:
                    staged[group] = [c for c in staged[group] if (c.topic, c.partition) != (topic, partition)]
        else:
            offsets[(topic, partition)] = value

    def stage(self, producer_id: int, group: str, changes: list[OffsetChange]) -> None:
        """Offsets of an open transaction (already in the journal as a transactional batch)."""
        self._pending.setdefault(producer_id, {}).setdefault(group, []).extend(changes)

    def complete_transaction(self, producer_id: int, commit: bool) -> None:
        """The producer's transaction ended: its staged offsets become committed (COMMIT) or vanish."""
        staged = self._pending.pop(producer_id, {})
        if commit:
            for group, changes in staged.items():
                for change in changes:
                    self.load(group, change.topic, change.partition, change.value)

    def pending_partitions(self, group: str) -> set[tuple[str, int]]:
        """Partitions of `group` whose offsets an open transaction holds (OffsetFetch: UNSTABLE_OFFSET_COMMIT)."""
        return {(c.topic, c.partition) for staged in self._pending.values() for c in staged.get(group, ())}

    def fetch(self, group: str, topic: str, partition: int) -> CommittedOffset | None:
        return self._offsets.get(group, {}).get((topic, partition))

    def has_offsets(self, group: str) -> bool:
        return bool(self._offsets.get(group))

    def partitions(self, group: str) -> list[tuple[str, int]]:
        return sorted(self._offsets.get(group, {}))

    def groups(self) -> list[str]:
        return [group for group, offsets in self._offsets.items() if offsets]

    def delete_group(self, group: str) -> None:
        self.commit_many(group, [OffsetChange(t, p, None) for t, p in self.partitions(group)])
        self._offsets.pop(group, None)

    def delete_topic(self, topic: str) -> None:
        for group in self.groups():
            self.commit_many(group, [OffsetChange(t, p, None) for t, p in self.partitions(group) if t == topic])
