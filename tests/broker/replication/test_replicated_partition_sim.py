"""A three-replica partition driven through random appends, follower fetches, crashes and
restarts, with leaders elected by the controller's rules and followers truncating by leader
epochs: every offset acknowledged under acks=all stays in every later leader's log."""

from __future__ import annotations

from hypothesis import given, settings
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

    def _leader_state(self) -> PartitionReplication:
        p = PartitionReplication(self.info.leader, self.info.leader_epoch, REPLICAS, self.info.isr,
                                 min_insync_replicas=2, replica_lag_time_max_ms=1000)
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
            self.part.apply_leader_and_isr(new.leader_epoch, new.isr)
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
        self.now += 300
        if self.info.leader != -1:
            new_isr = self.part.pending_isr(self.now)
            if new_isr is not None:
                i = self.info
                self.change(PartitionInfo(i.replicas, i.leader, i.leader_epoch, new_isr, i.partition_epoch + 1))

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


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["produce", "fetch", "tick", "crash", "restart"]), st.integers(1, 3)),
                min_size=10, max_size=80))
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
    sim.check()
    leader = sim.info.leader
    for r in REPLICAS:
        assert [v for _, v in sim.logs[r]] == [v for _, v in sim.logs[leader]]
