"""Replica assignment: spread replicas and preferred leaders over brokers and racks.

The live brokers are ordered so racks alternate (rack A, rack B, rack C, rack A, ...); partition p
takes `rf` consecutive brokers of that ring starting at p. Consecutive entries sit in different
racks whenever the racks are balanced, and the preferred leader (first replica) rotates over all
brokers. Deterministic: the same brokers give the same assignment.
"""

from __future__ import annotations

from collections.abc import Sequence

from broker.controller.errors import InvalidPartitions, InvalidReplicaAssignment, InvalidReplicationFactor
from broker.controller.state import BrokerInfo


def rack_alternating(brokers: Sequence[BrokerInfo]) -> list[int]:
    by_rack: dict[str, list[int]] = {}
    for b in sorted(brokers, key=lambda b: b.broker_id):
        by_rack.setdefault(b.rack or "", []).append(b.broker_id)
    racks = sorted(by_rack)
    ring: list[int] = []
    depth = max((len(v) for v in by_rack.values()), default=0)
    for i in range(depth):
        for rack in racks:
            if i < len(by_rack[rack]):
                ring.append(by_rack[rack][i])
    return ring


def assign_replicas(
    live_brokers: Sequence[BrokerInfo], partitions: int, replication_factor: int, start: int = 0
) -> tuple[tuple[int, ...], ...]:
    if partitions < 1:
        raise InvalidPartitions(f"number of partitions must be at least 1, got {partitions}")
    if replication_factor < 1:
        raise InvalidReplicationFactor(f"replication factor must be at least 1, got {replication_factor}")
    if replication_factor > len(live_brokers):
        raise InvalidReplicationFactor(
            f"replication factor {replication_factor} is larger than the {len(live_brokers)} live brokers; "
            "start more brokers or lower the replication factor"
        )
    ring = rack_alternating(live_brokers)
    n = len(ring)
    out = []
    for p in range(partitions):
        first = (start + p) % n
        out.append(tuple(ring[(first + i) % n] for i in range(replication_factor)))
    return tuple(out)


def check_assignment(assignment: Sequence[Sequence[int]], known: set[int]) -> tuple[tuple[int, ...], ...]:
    """A replica assignment given by the client (CreateTopics/CreatePartitions `assignments`), checked as Kafka
    does: every partition the same, non-zero number of replicas, no broker twice, only registered brokers."""
    sizes = {len(replicas) for replicas in assignment}
    if len(sizes) != 1 or 0 in sizes:
        raise InvalidReplicaAssignment(f"every partition needs the same, non-zero number of replicas: {assignment}")
    for replicas in assignment:
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignment(f"replica list {list(replicas)} names a broker twice")
        unknown = set(replicas) - known
        if unknown:
            raise InvalidReplicaAssignment(f"replica list {list(replicas)} names unknown brokers {sorted(unknown)}")
    return tuple(tuple(replicas) for replicas in assignment)
