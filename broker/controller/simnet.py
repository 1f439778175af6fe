"""An in-process simulated network for Raft nodes: a deterministic clock, message drops,
partitions and restarts. Used by tests; also the reference for what a real transport must do
(deliver `Outgoing` messages to `RaftNode.receive` on the addressed node, in any order, maybe never).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from broker.controller.raft import MemoryStorage, Message, Outgoing, RaftNode


@dataclass
class SimNetwork:
    voters: list[int]
    seed: int = 0
    drop_rate: float = 0.0
    now: int = 0
    nodes: dict[int, RaftNode] = field(default_factory=dict)
    storages: dict[int, MemoryStorage] = field(default_factory=dict)
    down: set[int] = field(default_factory=set)
    cut: set[frozenset[int]] = field(default_factory=set)
    queue: list[tuple[int, int, Message]] = field(default_factory=list)  # (deliver_at, to, message)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        for v in self.voters:
            self.storages[v] = MemoryStorage()
            self.start(v)

    def start(self, v: int) -> None:
        self.down.discard(v)
        self.nodes[v] = RaftNode(v, self.voters, self.storages[v], rng=random.Random(self.rng.random()))
        self.nodes[v].tick(self.now)

    def crash(self, v: int) -> None:
        self.down.add(v)

    def partition(self, *groups: set[int]) -> None:
        """Only nodes in the same group can talk to each other."""
        self.cut = {
            frozenset((a, b)) for a in self.voters for b in self.voters
            if a != b and not any(a in g and b in g for g in groups)
        }

    def heal(self) -> None:
        self.cut = set()

    def send(self, src: int, out: list[Outgoing]) -> None:
        for o in out:
            if self.rng.random() < self.drop_rate or frozenset((src, o.to)) in self.cut:
                continue
            self.queue.append((self.now + self.rng.randint(1, 10), o.to, o.message))

    def step(self, ms: int = 1) -> None:
        for _ in range(ms):
            self.now += 1
            due = [q for q in self.queue if q[0] <= self.now]
            self.queue = [q for q in self.queue if q[0] > self.now]
            for _, to, msg in due:
                if to not in self.down:
                    self.send(to, self.nodes[to].receive(msg))
            for v, node in self.nodes.items():
                if v not in self.down:
                    self.send(v, node.tick(self.now))

    def leader(self) -> int | None:
        leaders = [v for v, n in self.nodes.items() if v not in self.down and n.role == "leader"]
        if not leaders:
            return None
        return max(leaders, key=lambda v: self.nodes[v].term)

    def run_until_leader(self, limit_ms: int = 5000) -> int:
        for _ in range(limit_ms):
            self.step()
            lead = self.leader()
            if lead is not None:
                return lead
        raise AssertionError("no leader elected")
