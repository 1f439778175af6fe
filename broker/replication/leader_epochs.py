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


def truncate_on_diverging(follower: LeaderEpochCache, follower_leo: int, answer: EpochEnd) -> int:
    """Where a follower truncates when the leader answered its fetch with a diverging epoch (`answer`: the
    leader's largest epoch <= the one we asked about, and where it ends there). The rule of Kafka's
    `AbstractFetcherThread.getOffsetTruncationState`:
    - we had that epoch too: truncate to the smaller end (the leader's or ours);
    - we never had it: truncate to our own end of the largest epoch below it, and ask again from there;
    - we have no epoch that old: every record we hold is from epochs the leader never had, so none is
      kept (Kafka truncates to the leader's end here, a rule for logs older than leader epochs; it would
      keep a divergent record, as the property test in tests/broker/replication shows).
    The fetcher (broker/cluster/fetcher.py) runs this; `truncation_offset` repeats it as the fetch rounds do."""
    mine = follower.end_offset_for(answer.epoch, follower_leo)
    if mine.epoch == UNDEFINED_EPOCH:
        return min(follower.entries[0].start_offset if follower.entries else 0, follower_leo)
    if mine.epoch != answer.epoch:
        return min(mine.end_offset, follower_leo)
    return min(answer.end_offset, mine.end_offset, follower_leo)


def truncation_offset(follower: LeaderEpochCache, follower_leo: int, leader: LeaderEpochCache, leader_leo: int) -> int:
    """Where a follower's log ends once it stops diverging from the leader's: the fetch rounds played out.

    Each round is what production runs: the leader answers a fetch (last fetched epoch, fetch offset) with
    `diverging_epoch`, the follower truncates with `truncate_on_diverging` and fetches again. A leader that
    knows none of our epochs answers the undefined epoch: nothing is known in common (0).
    """
    end = follower_leo
    while follower.latest_epoch() != UNDEFINED_EPOCH:
        answer = diverging_epoch(leader, leader_leo, follower.latest_epoch(), end)
        if answer is None:
            return end
        if answer.epoch == UNDEFINED_EPOCH:
            return 0
        cut = truncate_on_diverging(follower, end, answer)
        if cut >= end:
            return end  # no progress: what is left is common
        end = cut
        follower = follower.truncate_from_end(end)
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
