"""Partition leader election and ISR maintenance as pure functions producing `PartitionChange`s.

Rules (as Kafka's KRaft controller):
- A new leader comes from the ISR among live (unfenced) brokers, preferring replica order.
- If no ISR member is live, the partition goes offline (leader -1) and keeps its last ISR member,
  unless unclean election is enabled: then any live replica may lead (data loss possible).
- A fenced broker leaves every ISR, except that the ISR never becomes empty (the last member stays
  so it can lead again without losing acknowledged data).
- Every leader change bumps the leader epoch; every change bumps the partition epoch.
"""

from __future__ import annotations

from collections.abc import Iterable

from broker.controller.errors import StaleEpoch, StalePartitionEpoch, UnknownTopic
from broker.controller.records import PartitionChange
from broker.controller.state import MetadataState, PartitionInfo


def _change(topic: str, partition: int, old: PartitionInfo, leader: int, isr: tuple[int, ...]) -> PartitionChange:
    epoch = old.leader_epoch + 1 if leader != old.leader else old.leader_epoch
    return PartitionChange(topic, partition, leader, isr, epoch, old.partition_epoch + 1)


def elect_leader(
    topic: str, partition: int, info: PartitionInfo, live: set[int], unclean: bool = False
) -> PartitionChange | None:
    """Choose a leader if the current one is not live; None when nothing changes."""
    if info.leader in live and info.leader in info.isr:
        return None
    for replica in info.replicas:
        if replica in live and replica in info.isr:
            return _change(topic, partition, info, replica, info.isr)
    if unclean:
        for replica in info.replicas:
            if replica in live:
                return _change(topic, partition, info, replica, (replica,))
    if info.leader == -1:
        return None
    return _change(topic, partition, info, -1, info.isr)


def on_broker_fenced(state: MetadataState, broker_id: int, unclean: bool = False) -> list[PartitionChange]:
    """Changes that remove a fenced broker from ISRs and move leadership away from it."""
    live = {b.broker_id for b in state.live_brokers()} - {broker_id}
    out: list[PartitionChange] = []
    for name in sorted(state.topics):
        for p, info in enumerate(state.topics[name].partitions):
            if broker_id not in info.isr and info.leader != broker_id:
                continue
            shrunk = tuple(x for x in info.isr if x != broker_id) or info.isr
            staged = PartitionInfo(info.replicas, info.leader, info.leader_epoch, shrunk, info.partition_epoch)
            change = elect_leader(name, p, staged, live, unclean)
            if change is None:
                change = _change(name, p, info, info.leader, shrunk)
            out.append(change)
    return out


def on_broker_unfenced(state: MetadataState, broker_id: int) -> list[PartitionChange]:
    """Offline partitions whose surviving ISR member came back get it as leader again."""
    live = {b.broker_id for b in state.live_brokers()} | {broker_id}
    out = []
    for name in sorted(state.topics):
        for p, info in enumerate(state.topics[name].partitions):
            if info.leader == -1 and broker_id in info.replicas:
                change = elect_leader(name, p, info, live)
                if change is not None and change.leader != -1:
                    out.append(change)
    return out


def preferred_leader_changes(state: MetadataState, topics: Iterable[str] | None = None) -> list[PartitionChange]:
    """Move leadership back to the first replica where it is live and in the ISR."""
    live = {b.broker_id for b in state.live_brokers()}
    out = []
    for name in sorted(topics if topics is not None else state.topics):
        topic = state.topics.get(name)
        if topic is None:
            raise UnknownTopic(f"topic {name!r} does not exist")
        for p, info in enumerate(topic.partitions):
            preferred = info.replicas[0] if info.replicas else -1
            if preferred != info.leader and preferred in live and preferred in info.isr:
                out.append(_change(name, p, info, preferred, info.isr))
    return out


def alter_isr(
    state: MetadataState, topic: str, partition: int, leader: int, leader_epoch: int, partition_epoch: int,
    new_isr: tuple[int, ...],
) -> PartitionChange:
    """Validate a leader's ISR change request (Kafka's AlterPartition) and turn it into a record.

    The request names the partition epoch it was made against: once anything changed the partition (an
    election, a fenced broker's removal, an earlier proposal of this leader), it is refused, as Kafka's
    INVALID_UPDATE_VERSION; a late copy of an old proposal can never overwrite a newer state."""
    info = state.partition(topic, partition)
    if info is None:
        raise UnknownTopic(f"unknown partition {topic}-{partition}")
    if leader != info.leader or leader_epoch != info.leader_epoch:
        raise StaleEpoch(
            f"{topic}-{partition}: request from leader {leader} epoch {leader_epoch}, "
            f"but the leader is {info.leader} at epoch {info.leader_epoch}"
        )
    if partition_epoch != info.partition_epoch:
        raise StalePartitionEpoch(
            f"{topic}-{partition}: ISR change made against partition epoch {partition_epoch}, "
            f"but the partition is at {info.partition_epoch}"
        )
    if leader not in new_isr:
        raise ValueError(f"{topic}-{partition}: the leader {leader} must stay in its own ISR {new_isr}")
    unknown = set(new_isr) - set(info.replicas)
    if unknown:
        raise ValueError(f"{topic}-{partition}: ISR members {sorted(unknown)} are not replicas {info.replicas}")
    # Kafka's INELIGIBLE_REPLICA: a fenced broker (dead, or restarted and not yet heard from) may not join.
    fenced = sorted(b for b in set(new_isr) - set(info.isr) if b not in state.brokers or state.brokers[b].fenced)
    if fenced:
        raise ValueError(f"{topic}-{partition}: brokers {fenced} are fenced and cannot join the ISR")
    return _change(topic, partition, info, leader, tuple(new_isr))
