"""A sans-I/O Raft core for the controller quorum's metadata log.

`RaftNode` never touches sockets or clocks: callers feed it messages (`receive`) and time
(`tick(now_ms)`), and it returns the messages to send. Persistence goes through `RaftStorage`
(term, vote and log entries are saved before any message that depends on them leaves the node).
Implements leader election with randomised timeouts and a pre-vote round (Raft thesis 9.6: a node
asks "would you vote for me?" before raising its term, so a voter that was paused or cut off cannot
depose a healthy leader when it comes back), log replication with the log-matching check, commit
only of entries from the leader's current term once a majority stores them, and step-down on any
higher term.

Log compaction follows the Raft paper, section 7: `compact(index, data)` replaces the applied prefix up
to `index` with a snapshot of the state machine (`data`), remembering the last included entry's index and
term; a leader whose follower needs an entry that is gone sends it the snapshot (InstallSnapshot) instead.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Entry:
    term: int
    data: Any  # a JSON-serialisable value (a metadata record's dict); None for the leader's no-op


@dataclass(frozen=True)
class RequestVote:
    term: int
    candidate: int
    last_log_index: int
    last_log_term: int
    pre_vote: bool = False  # `term` is the one the candidate would use; nobody's term changes


@dataclass(frozen=True)
class VoteReply:
    term: int
    voter: int
    granted: bool
    pre_vote: bool = False


@dataclass(frozen=True)
class AppendEntries:
    term: int
    leader: int
    prev_index: int
    prev_term: int
    entries: tuple[Entry, ...]
    commit: int


@dataclass(frozen=True)
class AppendReply:
    term: int
    follower: int
    success: bool
    match_index: int  # on success: last index known to match; on failure: a hint for next_index - 1


@dataclass(frozen=True)
class InstallSnapshot:
    """The leader's snapshot for a follower that needs entries the leader has compacted away (Raft paper,
    section 7). Sent whole in one message: the metadata state is small. Answered with an `AppendReply`
    whose `match_index` is `last_index`."""

    term: int
    leader: int
    last_index: int  # the last log entry the snapshot replaces
    last_term: int
    data: Any


@dataclass(frozen=True)
class Snapshot:
    index: int  # last included entry
    term: int  # its term
    data: Any  # the state machine's image, JSON-serialisable


Message = RequestVote | VoteReply | AppendEntries | AppendReply | InstallSnapshot


@dataclass(frozen=True)
class Persisted:
    """What a node restarts from: term, vote, the newest snapshot (if any) and the log entries after it."""

    term: int
    voted_for: int | None
    snapshot: Snapshot | None
    entries: list[Entry]


@dataclass(frozen=True)
class Outgoing:
    to: int
    message: Message


class RaftStorage(Protocol):
    def load(self) -> Persisted: ...
    def save_state(self, term: int, voted_for: int | None) -> None: ...
    def truncate_and_append(self, from_index: int, entries: list[Entry]) -> None:
        """Drop entries at index >= from_index (1-based, absolute) and append `entries` after them."""
        ...
    def save_snapshot(self, snapshot: Snapshot, entries_after: list[Entry]) -> None:
        """Make `snapshot` durable, then replace the log by `entries_after` (indices snapshot.index + 1, ...).
        A crash in between must leave the snapshot and a log consistent with it."""
        ...


@dataclass
class MemoryStorage:
    """In-memory storage: survives a simulated restart because tests keep the object."""

    term: int = 0
    voted_for: int | None = None
    log: list[Entry] = field(default_factory=list)  # the entries after `snapshot`
    snapshot: Snapshot | None = None

    def load(self) -> Persisted:
        return Persisted(self.term, self.voted_for, self.snapshot, list(self.log))

    def save_state(self, term: int, voted_for: int | None) -> None:
        self.term, self.voted_for = term, voted_for

    def truncate_and_append(self, from_index: int, entries: list[Entry]) -> None:
        base = self.snapshot.index if self.snapshot else 0
        del self.log[from_index - 1 - base :]
        self.log.extend(entries)

    def save_snapshot(self, snapshot: Snapshot, entries_after: list[Entry]) -> None:
        self.snapshot, self.log = snapshot, list(entries_after)


class NotLeader(Exception):
    retriable = True

    def __init__(self, leader: int | None) -> None:
        super().__init__(f"not the Raft leader; the leader is {leader if leader is not None else 'unknown'}")
        self.leader = leader


FOLLOWER, CANDIDATE, LEADER = "follower", "candidate", "leader"


class RaftNode:
    def __init__(
        self,
        node_id: int,
        voters: list[int],
        storage: RaftStorage,
        *,
        election_timeout_ms: tuple[int, int] = (150, 300),
        heartbeat_ms: int = 50,
        max_batch: int = 64,
        rng: random.Random | None = None,
    ) -> None:
        if node_id not in voters:
            raise ValueError(f"node {node_id} is not among the voters {voters}")
        self.id = node_id
        self.voters = sorted(voters)
        self.storage = storage
        saved = storage.load()
        self.term, self.voted_for, self.log = saved.term, saved.voted_for, saved.entries
        # The snapshot replaces entries 1..snapshot_index, which were committed and applied when it was
        # taken: the node starts from it (the state machine loads it through `snapshot_to_load`).
        self.snapshot = saved.snapshot
        self.snapshot_index = saved.snapshot.index if saved.snapshot else 0
        self.snapshot_term = saved.snapshot.term if saved.snapshot else 0
        self._snapshot_to_apply = saved.snapshot
        self.role = FOLLOWER
        self.leader: int | None = None
        self.commit_index = self.snapshot_index
        self.last_applied = self.snapshot_index
        # Index of this node's no-op of its current term as leader: once it is applied, so is every entry of
        # earlier terms (Raft section 5.4.2), and the state machine is the whole committed log.
        self.term_start_index = 0
        self._timeout_range = election_timeout_ms
        self._heartbeat_ms = heartbeat_ms
        self._max_batch = max_batch
        self._rng = rng or random.Random()
        self._now = 0
        self._deadline = 0
        self._votes: set[int] = set()
        self._pre_votes: set[int] | None = None  # granted pre-votes while a pre-vote round is open
        self._leader_contact = -(10**9)  # when a leader's AppendEntries last arrived
        self.next_index: dict[int, int] = {}
        self.match_index: dict[int, int] = {}
        self._last_sent: dict[int, int] = {}
        self._sent_upto: dict[int, int] = {}
        self._reset_election_deadline()

    # --- helpers -------------------------------------------------------------------------------
    @property
    def last_index(self) -> int:
        return self.snapshot_index + len(self.log)

    def term_at(self, index: int) -> int:
        """The term of entry `index`; 0 when there is none, or when a snapshot has replaced it."""
        if index == self.snapshot_index:
            return self.snapshot_term
        pos = index - self.snapshot_index
        return self.log[pos - 1].term if 1 <= pos <= len(self.log) else 0

    def entry(self, index: int) -> Entry:
        """Entry `index` (1-based); only for snapshot_index < index <= last_index."""
        if not self.snapshot_index < index <= self.last_index:
            raise IndexError(f"entry {index} is not in the log ({self.snapshot_index + 1}..{self.last_index})")
        return self.log[index - self.snapshot_index - 1]

    def entries(self, first: int, last: int) -> list[Entry]:
        """Entries `first`..`last` (inclusive) that the log still holds."""
        lo = max(first, self.snapshot_index + 1) - self.snapshot_index - 1
        return self.log[lo : max(lo, last - self.snapshot_index)]

    def _majority(self) -> int:
        return len(self.voters) // 2 + 1

    def _peers(self) -> list[int]:
        return [v for v in self.voters if v != self.id]

    def _reset_election_deadline(self) -> None:
        lo, hi = self._timeout_range
        self._deadline = self._now + self._rng.randint(lo, hi)

    def _become_follower(self, term: int, leader: int | None) -> None:
        if term > self.term:
            self.term, self.voted_for = term, None
            self.storage.save_state(self.term, self.voted_for)
        self.role = FOLLOWER
        self.leader = leader
        self._pre_votes = None

    # --- inputs --------------------------------------------------------------------------------
    def tick(self, now_ms: int) -> list[Outgoing]:
        self._now = now_ms
        if self.role == LEADER:
            # Heartbeat when due; send at once when new entries were proposed since the last append.
            return [
                self._append_for(p)
                for p in self._peers()
                if now_ms - self._last_sent.get(p, -(10**9)) >= self._heartbeat_ms
                or self._sent_upto.get(p, 0) < self.last_index
            ]
        if now_ms >= self._deadline:
            return self._start_pre_vote()
        return []

    def propose(self, data: Any) -> int:
        """Append `data` to the leader's log; returns its index. Raises NotLeader elsewhere."""
        if self.role != LEADER:
            raise NotLeader(self.leader)
        self.log.append(Entry(self.term, data))
        self.storage.truncate_and_append(self.last_index, [self.log[-1]])
        self.match_index[self.id] = self.last_index
        self._advance_commit()
        return self.last_index

    def flush(self) -> list[Outgoing]:
        """Send pending entries to every peer now instead of waiting for the heartbeat."""
        if self.role != LEADER:
            return []
        return [self._append_for(p) for p in self._peers()]

    def receive(self, message: Message) -> list[Outgoing]:
        hypothetical = isinstance(message, RequestVote) and message.pre_vote
        if message.term > self.term and not hypothetical:
            self._become_follower(message.term, None)
        if isinstance(message, RequestVote):
            return self._on_request_vote(message)
        if isinstance(message, VoteReply):
            return self._on_vote_reply(message)
        if isinstance(message, AppendEntries):
            return self._on_append(message)
        if isinstance(message, InstallSnapshot):
            return self._on_install_snapshot(message)
        return self._on_append_reply(message)

    def snapshot_to_load(self) -> Snapshot | None:
        """A snapshot the state machine must load before applying `committed_entries` (the one this node
        started from, or one a leader installed); None when there is none new. Returned once."""
        snap, self._snapshot_to_apply = self._snapshot_to_apply, None
        return snap

    def committed_entries(self) -> list[tuple[int, Entry]]:
        """Entries committed since the last call, in order (for applying to the state machine)."""
        out = [(i, self.entry(i)) for i in range(self.last_applied + 1, self.commit_index + 1)]
        self.last_applied = self.commit_index
        return out

    def compact(self, index: int, data: Any) -> None:
        """Replace entries 1..`index` by `data`, the state machine's image after applying them (Raft paper,
        section 7). Only applied entries can be compacted: they are committed, so no leader ever needs
        this node to hold them again except through the snapshot."""
        if index > self.last_applied:
            raise ValueError(f"cannot compact to {index}: only entries up to {self.last_applied} are applied")
        if index <= self.snapshot_index:
            return
        snap = Snapshot(index, self.term_at(index), data)
        kept = self.log[index - self.snapshot_index :]
        # Durable first: a crash after this leaves the snapshot and a log that still matches it.
        self.storage.save_snapshot(snap, kept)
        self.snapshot, self.snapshot_index, self.snapshot_term, self.log = snap, snap.index, snap.term, kept

    # --- elections -----------------------------------------------------------------------------
    def _start_pre_vote(self) -> list[Outgoing]:
        self._reset_election_deadline()
        self._pre_votes = {self.id}
        if len(self._pre_votes) >= self._majority():
            return self._start_election()
        req = RequestVote(self.term + 1, self.id, self.last_index, self.term_at(self.last_index), pre_vote=True)
        return [Outgoing(p, req) for p in self._peers()]

    def _on_pre_vote(self, m: RequestVote, up_to_date: bool) -> list[Outgoing]:
        # Refused while this node still hears from a leader: the candidate is the one cut off.
        leader_alive = self.role == LEADER or (
            self.leader is not None and self._now - self._leader_contact < self._timeout_range[0]
        )
        granted = m.term > self.term and up_to_date and not leader_alive
        return [Outgoing(m.candidate, VoteReply(self.term, self.id, granted, pre_vote=True))]

    def _start_election(self) -> list[Outgoing]:
        self._pre_votes = None
        self.role = CANDIDATE
        self.term += 1
        self.voted_for = self.id
        self.leader = None
        self.storage.save_state(self.term, self.voted_for)
        self._votes = {self.id}
        self._reset_election_deadline()
        if len(self._votes) >= self._majority():
            return self._become_leader()
        req = RequestVote(self.term, self.id, self.last_index, self.term_at(self.last_index))
        return [Outgoing(p, req) for p in self._peers()]

    def _on_request_vote(self, m: RequestVote) -> list[Outgoing]:
        up_to_date = (m.last_log_term, m.last_log_index) >= (self.term_at(self.last_index), self.last_index)
        if m.pre_vote:
            return self._on_pre_vote(m, up_to_date)
        granted = m.term == self.term and self.voted_for in (None, m.candidate) and up_to_date
        if granted:
            self.voted_for = m.candidate
            self.storage.save_state(self.term, self.voted_for)
            self._reset_election_deadline()
        return [Outgoing(m.candidate, VoteReply(self.term, self.id, granted))]

    def _on_vote_reply(self, m: VoteReply) -> list[Outgoing]:
        if m.pre_vote:
            if self.role == LEADER or self._pre_votes is None or not m.granted:
                return []
            self._pre_votes.add(m.voter)
            return self._start_election() if len(self._pre_votes) >= self._majority() else []
        if self.role != CANDIDATE or m.term != self.term or not m.granted:
            return []
        self._votes.add(m.voter)
        if len(self._votes) >= self._majority():
            return self._become_leader()
        return []

    def _become_leader(self) -> list[Outgoing]:
        self.role = LEADER
        self.leader = self.id
        self.next_index = {p: self.last_index + 1 for p in self.voters}
        self.match_index = {p: 0 for p in self.voters}
        self._last_sent = {}
        self._sent_upto = {}
        # A no-op entry of the new term lets earlier-term entries commit (Raft section 5.4.2).
        self.term_start_index = self.propose(None)
        return self.flush()

    # --- replication ---------------------------------------------------------------------------
    def _append_for(self, peer: int) -> Outgoing:
        nxt = self.next_index.get(peer, self.last_index + 1)
        self._last_sent[peer] = self._now
        if nxt <= self.snapshot_index and self.snapshot is not None:
            # The entries this follower needs are compacted away: it gets the snapshot. Counted as sent up to
            # the end of the log, so it is not sent again before its answer or the next heartbeat.
            self._sent_upto[peer] = self.last_index
            snap = self.snapshot
            return Outgoing(peer, InstallSnapshot(self.term, self.id, snap.index, snap.term, snap.data))
        prev = nxt - 1
        entries = tuple(self.entries(nxt, prev + self._max_batch))
        self._sent_upto[peer] = max(self._sent_upto.get(peer, 0), prev + len(entries))
        return Outgoing(peer, AppendEntries(self.term, self.id, prev, self.term_at(prev), entries, self.commit_index))

    def _on_append(self, m: AppendEntries) -> list[Outgoing]:
        if m.term < self.term:
            return [Outgoing(m.leader, AppendReply(self.term, self.id, False, self.last_index))]
        self._become_follower(m.term, m.leader)
        self._leader_contact = self._now
        self._reset_election_deadline()
        if m.prev_index < self.snapshot_index:
            # Entries up to snapshot_index are committed here, so they match the leader's: skip them.
            skip = self.snapshot_index - m.prev_index
            m = AppendEntries(m.term, m.leader, self.snapshot_index, self.snapshot_term, m.entries[skip:], m.commit)
        if m.prev_index > self.last_index or self.term_at(m.prev_index) != m.prev_term:
            hint = min(m.prev_index - 1, self.last_index)
            return [Outgoing(m.leader, AppendReply(self.term, self.id, False, hint))]
        # Log matching: skip entries we already hold, truncate at the first conflict, append the rest.
        index = m.prev_index
        for i, entry in enumerate(m.entries):
            index = m.prev_index + 1 + i
            if index <= self.last_index and self.term_at(index) == entry.term:
                continue
            new = list(m.entries[i:])
            del self.log[index - self.snapshot_index - 1 :]
            self.log.extend(new)
            self.storage.truncate_and_append(index, new)
            break
        match = m.prev_index + len(m.entries)
        if m.commit > self.commit_index:
            self.commit_index = min(m.commit, match)
        return [Outgoing(m.leader, AppendReply(self.term, self.id, True, match))]

    def _on_install_snapshot(self, m: InstallSnapshot) -> list[Outgoing]:
        if m.term < self.term:
            return [Outgoing(m.leader, AppendReply(self.term, self.id, False, self.last_index))]
        self._become_follower(m.term, m.leader)
        self._leader_contact = self._now
        self._reset_election_deadline()
        if m.last_index > self.commit_index:  # else this node already holds (and applied) all of it
            snap = Snapshot(m.last_index, m.last_term, m.data)
            # Raft paper, section 7: a log entry matching the snapshot's last one keeps what follows it;
            # otherwise the whole log is discarded (it conflicts with, or lacks, committed entries).
            kept = self.log[m.last_index - self.snapshot_index :] if self.term_at(m.last_index) == m.last_term else []
            self.storage.save_snapshot(snap, kept)
            self.snapshot, self.snapshot_index, self.snapshot_term, self.log = snap, snap.index, snap.term, kept
            self.commit_index = self.last_applied = m.last_index
            self._snapshot_to_apply = snap
        return [Outgoing(m.leader, AppendReply(self.term, self.id, True, m.last_index))]

    def _on_append_reply(self, m: AppendReply) -> list[Outgoing]:
        if self.role != LEADER or m.term != self.term:
            return []
        if m.success:
            self.match_index[m.follower] = max(self.match_index.get(m.follower, 0), m.match_index)
            self.next_index[m.follower] = self.match_index[m.follower] + 1
            committed = self.commit_index
            self._advance_commit()
            if self.commit_index > committed:
                # Tell every follower at once: brokers read the metadata from their local quorum
                # member, so the new commit index should not wait for the next heartbeat.
                return [self._append_for(peer) for peer in self._peers()]
            if self.next_index[m.follower] <= self.last_index:
                return [self._append_for(m.follower)]
            return []
        self.next_index[m.follower] = max(1, min(self.next_index.get(m.follower, 1) - 1, m.match_index + 1))
        return [self._append_for(m.follower)]

    def _advance_commit(self) -> None:
        for n in range(self.last_index, self.commit_index, -1):
            # Only entries of the current term are committed by counting replicas (Raft figure 8).
            if self.term_at(n) != self.term:
                break
            if sum(1 for v in self.voters if self.match_index.get(v, 0) >= n) >= self._majority():
                self.commit_index = n
                break
