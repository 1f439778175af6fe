"""CreatePartitions on the controller: validate a request to grow a topic and compute its `AddPartitions` record.

Pure (state in, record out) so the checks are tested without a quorum. As in Kafka, new partitions keep the
topic's replication factor, are placed by the same rack-aware ring as new topics (continuing the topic's own
rotation of preferred leaders) unless the client gives `assignments`, and start with leader = first live
replica, ISR = the live replicas, leader epoch 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from broker.controller import records as r
from broker.controller.errors import InvalidPartitions, InvalidReplicaAssignment, UnknownTopic
from broker.controller.placement import assign_replicas, check_assignment, rack_alternating
from broker.controller.state import MetadataState, TopicInfo


def add_partitions(
    state: MetadataState, topic: str, count: int, assignment: Sequence[Sequence[int]] | None = None
) -> r.AddPartitions:
    info = state.topics.get(topic)
    if info is None:
        raise UnknownTopic(f"topic {topic!r} does not exist")
    current = len(info.partitions)
    if count == current:
        raise InvalidPartitions(f"topic {topic!r} already has {current} partition(s)")
    if count < current:
        raise InvalidPartitions(
            f"topic {topic!r} currently has {current} partition(s); {count} would not be an increase"
        )
    rf = len(info.partitions[0].replicas) if info.partitions else 1
    if assignment:
        placed = _explicit(state, info, count - current, rf, assignment)
    else:
        placed = assign_replicas(state.live_brokers(), count, rf, start=_rotation_start(state, info))[current:]
    live = {b.broker_id for b in state.live_brokers()}
    isr = tuple(tuple(b for b in replicas if b in live) for replicas in placed)
    for index, members in enumerate(isr):
        if not members:
            raise InvalidReplicaAssignment(
                f"every broker named for new partition {current + index} ({list(placed[index])}) is fenced"
            )
    return r.AddPartitions(topic, info.topic_id, current, placed, isr)


def _explicit(
    state: MetadataState, info: TopicInfo, added: int, rf: int, assignment: Sequence[Sequence[int]]
) -> tuple[tuple[int, ...], ...]:
    if len(assignment) != added:
        raise InvalidReplicaAssignment(
            f"adding {added} partition(s) to topic {info.name!r} needs {added} assignment(s), got {len(assignment)}"
        )
    placed = check_assignment(assignment, set(state.brokers))
    if len(placed[0]) != rf:
        raise InvalidReplicaAssignment(
            f"the assignment gives {len(placed[0])} replica(s) per partition, but topic {info.name!r} has "
            f"replication factor {rf}"
        )
    return placed


def _rotation_start(state: MetadataState, info: TopicInfo) -> int:
    """Where the topic's partition 0 starts in today's broker ring, so new partitions continue its rotation."""
    ring = rack_alternating(state.live_brokers())
    first = info.partitions[0].replicas[0] if info.partitions and info.partitions[0].replicas else None
    return ring.index(first) if first in ring else 0
