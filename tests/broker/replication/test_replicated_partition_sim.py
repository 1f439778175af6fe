"""A three-replica partition driven through random appends, follower fetches, crashes and
restarts, with leaders elected by the controller's rules and followers truncating by leader
epochs: every offset acknowledged under acks=all stays in every later leader's log.

ISR changes go to the controller as proposals that it applies later ("commit"), as AlterPartition
does: a follower the controller lets in may be elected, so the leader must count it before it knows.
(This found a loss: the high watermark waited for the committed ISR only, acknowledged a write the
joining follower lacked, and the joiner was elected when the leader crashed.)"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from broker.controller.election import elect_leader
from broker.controller.state import PartitionInfo
from broker.replication.errors import NotEnoughReplicas, NotEnoughReplicasAfterAppend
from broker.replication.leader_epochs import LeaderEpochCache, truncation_offset
from broker.replication.partition import PartitionReplication

REPLICAS = (1, 2, 3)


def cache_of(log: list[tuple[int, int]]) -> LeaderEpochCache:
    c = LeaderEpochCache()
    for offset, (epoch, _) in enumerate(log):
        c = c.assign(epoch, offset)
    return c


class Sim:
    def __init__(self) -> None:
        self.logs: dict[int, list[tuple[int, int]]] = {r: [] for r in REPLICAS}
        self.up = set(REPLICAS)
        self.info = PartitionInfo(REPLICAS, 1, 0, REPLICAS, 0)
        self.now = 0
        self.part = self._leader_state()
        self.acked: dict[int, int] = {}  # offset -> value acknowledged to the producer
        self.waiting: list[tuple[int, int]] = []  # (offset, value) of acks=all produces in purgatory
        self.after_append_errors = 0
        self.proposal: tuple[tuple[int, ...], int] | None = None  # (ISR, partition epoch) sent to the controller

    def _leader_state(self) -> PartitionReplication:
        p = PartitionReplication(self.info.leader, self.info.leader_epoch, REPLICAS, self.info.isr,
                                 min_insync_replicas=2, replica_lag_time_max_ms=1000,
                                 partition_epoch=self.info.partition_epoch)
        for r in REPLICAS:
            p.replica_state[r].last_caught_up_ms = self.now
        p.on_leader_append(len(self.logs[self.info.leader]), self.now)
        return p

    def change(self, new: PartitionInfo) -> None:
        leader_changed = new.leader != self.info.leader
        self.info = new
        if new.leader == -1:
            self.waiting.clear()  # producers get an error: nothing acknowledged
            return
        if leader_changed:
            self.waiting.clear()
            self.part = self._leader_state()
        else:
            self.part.apply_leader_and_isr(new.leader_epoch, new.isr, new.partition_epoch)
        self._complete()

    def _complete(self) -> None:
        for offset, value in list(self.waiting):
            try:
                if not self.part.acks_all_done(offset + 1):
                    continue
                self.acked[offset] = value
            except NotEnoughReplicasAfterAppend:
                self.after_append_errors += 1  # the producer gets an error, not an acknowledgement
            self.waiting.remove((offset, value))

    def produce(self, value: int) -> None:
        leader = self.info.leader
        if leader == -1:
            return
        try:
            self.part.check_produce(-1)
        except NotEnoughReplicas:
            return
        self.logs[leader].append((self.info.leader_epoch, value))
        self.waiting.append((len(self.logs[leader]) - 1, value))
        self.part.on_leader_append(len(self.logs[leader]), self.now)
        self._complete()

    def fetch(self, r: int) -> None:
        leader = self.info.leader
        if leader in (-1, r) or r not in self.up:
            return
        lead_log, log = self.logs[leader], self.logs[r]
        cut = truncation_offset(cache_of(log), len(log), cache_of(lead_log), len(lead_log))
        del log[cut:]
        self.part.on_follower_fetch(r, len(log), self.now)
        log.extend(lead_log[len(log) : len(log) + 3])
        self._complete()

    def tick(self) -> None:
        """Time passes; the leader sends the ISR change it wants (or its unresolved one again)."""
        self.now += 300
        if self.info.leader != -1:
            wanted = self.part.proposed_isr or self.part.pending_isr(self.now)
            if wanted is not None:
                self.part.propose_isr(wanted)
                self.proposal = (wanted, self.info.partition_epoch)

    def commit(self) -> None:
        """The controller handles the proposal: applied if the partition did not change since, refused
        outright if it lets a down (fenced) replica in, else stale (the leader learns from the new state)."""
        if self.proposal is None or self.info.leader == -1:
            return
        (isr, epoch), self.proposal = self.proposal, None
        i = self.info
        if epoch != i.partition_epoch:
            return
        if any(r not in self.up for r in set(isr) - set(i.isr)):
            self.part.proposal_refused()
            return
        self.change(PartitionInfo(i.replicas, i.leader, i.leader_epoch, isr, i.partition_epoch + 1))

    def crash(self, r: int) -> None:
        if len(self.up) == 1 or r not in self.up:
            return
        self.up.discard(r)
        i = self.info
        shrunk = tuple(x for x in i.isr if x != r) or i.isr
        staged = PartitionInfo(i.replicas, i.leader, i.leader_epoch, shrunk, i.partition_epoch)
        ch = elect_leader("t", 0, staged, self.up)
        if ch is None:
            self.change(PartitionInfo(i.replicas, i.leader, i.leader_epoch, shrunk, i.partition_epoch + 1))
        else:
            self.change(PartitionInfo(i.replicas, ch.leader, ch.leader_epoch, ch.isr, ch.partition_epoch))

    def restart(self, r: int) -> None:
        if r in self.up:
            return
        self.up.add(r)
        ch = elect_leader("t", 0, self.info, self.up)
        if ch is not None and ch.leader != -1:
            i = self.info
            self.change(PartitionInfo(i.replicas, ch.leader, ch.leader_epoch, ch.isr, ch.partition_epoch))

    def check(self) -> None:
        leader = self.info.leader
        if leader == -1:
            return
        for offset, value in self.acked.items():
            assert offset < len(self.logs[leader]) and self.logs[leader][offset][1] == value, (
                f"acknowledged offset {offset} lost on leader {leader}"
            )


# The loss the proposals found: 1 rejoins while 2 leads, a write is acknowledged by 2 and 3 before the
# controller applies the ISR with 1, then 2 dies and 1 (first in the replica order) is elected.
_JOINER_ELECTED = [("crash", 1), ("restart", 1), ("fetch", 1), ("tick", 1), ("produce", 1), ("fetch", 3),
                   ("fetch", 3), ("commit", 1), ("crash", 2)]


@settings(max_examples=300, deadline=None)
@example(_JOINER_ELECTED)
@given(st.lists(st.tuples(st.sampled_from(["produce", "fetch", "tick", "commit", "crash", "restart"]),
                          st.integers(1, 3)), min_size=10, max_size=80))
def test_acknowledged_offsets_survive_leader_failures(ops: list[tuple[str, int]]) -> None:
    sim = Sim()
    value = 0
    for kind, r in ops:
        if kind == "produce":
            value += 1
            sim.produce(value)
        elif kind == "fetch":
            sim.fetch(r)
        elif kind == "tick":
            sim.tick()
        elif kind == "commit":
            sim.commit()
        elif kind == "crash":
            sim.crash(r)
        else:
            sim.restart(r)
        sim.check()
    # Heal: everyone up, followers catch up; the final leader still has every acknowledged offset.
    for r in REPLICAS:
        sim.restart(r)
    for _ in range(30):
        for r in REPLICAS:
            sim.fetch(r)
        sim.tick()
        sim.commit()
    sim.check()
    leader = sim.info.leader
    for r in REPLICAS:
        assert [v for _, v in sim.logs[r]] == [v for _, v in sim.logs[leader]]
