"""The leader-epoch cache and the follower truncation rules built on it (pure functions).

The cache is Kafka's `leader-epoch-checkpoint`: an ordered list of (epoch, start_offset), the
first offset written in each epoch. OffsetForLeaderEpoch answers "where does epoch E end?" with
the start of the next higher epoch (or the LEO for the latest one); a follower truncates to the
minimum of that end offset and its own end for that epoch, which removes any divergent suffix.
"""

from __future__ import annotations

from dataclasses import dataclass

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass(frozen=True)
class EpochEntry:
    epoch: int
    start_offset: int


@dataclass(frozen=True)
class EpochEnd:
    epoch: int
    end_offset: int


@dataclass(frozen=True)
class LeaderEpochCache:
    entries: tuple[EpochEntry, ...] = ()

    def assign(self, epoch: int, start_offset: int) -> LeaderEpochCache:
        """Record that `epoch` starts at `start_offset` (a new leader's first append)."""
        if self.entries and epoch < self.entries[-1].epoch:
            raise ValueError(f"epoch {epoch} is older than the latest cached epoch {self.entries[-1].epoch}")
        if self.entries and self.entries[-1].epoch == epoch:
            return self
        kept = tuple(e for e in self.entries if e.start_offset < start_offset)
        return LeaderEpochCache((*kept, EpochEntry(epoch, start_offset)))

    def latest_epoch(self) -> int:
        return self.entries[-1].epoch if self.entries else UNDEFINED_EPOCH

    def end_offset_for(self, epoch: int, log_end_offset: int) -> EpochEnd:
        """OffsetForLeaderEpoch: the largest epoch <= `epoch` and the offset where it ends."""
        if not self.entries or epoch < self.entries[0].epoch:
            return EpochEnd(UNDEFINED_EPOCH, UNDEFINED_OFFSET)
        if epoch >= self.entries[-1].epoch:
            last = self.entries[-1]
            return EpochEnd(last.epoch, log_end_offset)
        for i, e in enumerate(self.entries):
            if e.epoch > epoch:
                prev = self.entries[i - 1]
                return EpochEnd(prev.epoch, e.start_offset)
        raise AssertionError("unreachable: epoch is below the latest entry")

    def truncate_from_end(self, end_offset: int) -> LeaderEpochCache:
        """Drop epochs that start at or after `end_offset` (after the log was truncated there)."""
        return LeaderEpochCache(tuple(e for e in self.entries if e.start_offset < end_offset))


def truncation_offset(follower: LeaderEpochCache, follower_leo: int, leader: LeaderEpochCache, leader_leo: int) -> int:
    """Where a follower must truncate its log before fetching from the leader.

    The follower asks the leader for the end of its own latest epoch; if the leader has an older
    epoch only, the follower asks again for that one (its own end for that epoch bounds the answer).
    """
    epoch = follower.latest_epoch()
    end = follower_leo
    while epoch != UNDEFINED_EPOCH:
        answer = leader.end_offset_for(epoch, leader_leo)
        if answer.epoch == UNDEFINED_EPOCH:
            return 0  # the leader knows none of our epochs: nothing in common
        mine = follower.end_offset_for(answer.epoch, follower_leo)
        if mine.epoch == answer.epoch:
            return min(answer.end_offset, mine.end_offset, end)
        # We never had the leader's epoch: drop ours above it and ask again for our older one.
        end = min(end, max(mine.end_offset, 0))
        epoch = mine.epoch
    return 0


def diverging_epoch(leader: LeaderEpochCache, leader_leo: int, fetch_epoch: int, fetch_offset: int) -> EpochEnd | None:
    """Fetch v12+: when a follower's (last fetched epoch, fetch offset) is ahead of where the
    leader's copy of that epoch ends, answer with the diverging epoch and its end offset."""
    if fetch_epoch == UNDEFINED_EPOCH:
        return None
    answer = leader.end_offset_for(fetch_epoch, leader_leo)
    if answer.epoch != fetch_epoch or answer.end_offset < fetch_offset:
        return answer
    return None


def epoch_cache(plog: object) -> LeaderEpochCache:
    """The cache of a partition log that keeps Kafka's leader-epoch-checkpoint (`leader_epochs` pairs)."""
    pairs: list[tuple[int, int]] = getattr(plog, "leader_epochs", [])
    return LeaderEpochCache(tuple(EpochEntry(e, o) for e, o in pairs))
