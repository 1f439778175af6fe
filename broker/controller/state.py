"""The cluster metadata as a deterministic state machine over metadata records.

`MetadataState.apply` is pure with respect to its input: no clock, no randomness, so every
controller replaying the same committed log reaches the same state. Time enters only through
`BrokerHeartbeat.now_ms` records; `expired_brokers` lets the active controller decide which
brokers to fence (it then appends `FenceBroker` records).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from broker.controller import records as r

FIRST_PRODUCER_ID = 1000  # as a single-node broker starts, so ids read the same on both
PRODUCER_IDS_BLOCK_SIZE = 1000  # Kafka's block size


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    host: str
    port: int
    rack: str | None
    incarnation: str
    fenced: bool
    last_heartbeat_ms: int
    endpoints: tuple[tuple[str, str, int], ...] = ()  # (listener, host, port); host/port: the inter-broker one

    def address(self, listener: str) -> tuple[str, int]:
        """Where to reach this broker through `listener` (the inter-broker address when it has no such one)."""
        return next(((host, port) for name, host, port in self.endpoints if name == listener), (self.host, self.port))


@dataclass(frozen=True)
class PartitionInfo:
    replicas: tuple[int, ...]
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: str
    partitions: tuple[PartitionInfo, ...]
    configs: tuple[tuple[str, str], ...]


@dataclass
class MetadataState:
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    applied: int = 0  # number of records applied; the "metadata offset" brokers report
    next_producer_id: int = FIRST_PRODUCER_ID
    producer_id_blocks: dict[int, int] = field(default_factory=dict)  # broker id -> first id of its latest block
    # user -> mechanism -> the credential's record (base64 salt and keys, iterations)
    scram: dict[str, dict[str, r.ScramCredentialChange]] = field(default_factory=dict)
    # Every ACL binding, in the order added. A tuple replaced on each change: readers (the authorizer) may keep
    # what they derived from it while it is the same object.
    acls: tuple[r.AclChange, ...] = ()

    def apply(self, record: r.Record) -> None:
        self.applied += 1
        if isinstance(record, r.RegisterBroker):
            self.brokers[record.broker_id] = BrokerInfo(
                record.broker_id, record.host, record.port, record.rack, record.incarnation, record.fenced, 0,
                record.endpoints,
            )
        elif isinstance(record, r.BrokerHeartbeat):
            b = self.brokers.get(record.broker_id)
            if b is not None:
                self.brokers[b.broker_id] = replace(b, last_heartbeat_ms=max(b.last_heartbeat_ms, record.now_ms))
        elif isinstance(record, r.FenceBroker | r.UnfenceBroker):
            b = self.brokers.get(record.broker_id)
            if b is not None:
                self.brokers[b.broker_id] = replace(b, fenced=isinstance(record, r.FenceBroker))
        elif isinstance(record, r.CreateTopic):
            if record.name in self.topics:
                return  # the first create of a name wins, on every replica and on every replay
            parts = tuple(
                PartitionInfo(
                    replicas=reps, leader=reps[0] if reps else -1, leader_epoch=0, isr=reps, partition_epoch=0
                )
                for reps in record.assignment
            )
            self.topics[record.name] = TopicInfo(record.name, record.topic_id, parts, record.configs)
        elif isinstance(record, r.AddPartitions):
            self._apply_add_partitions(record)
        elif isinstance(record, r.DeleteTopic):
            self.topics.pop(record.name, None)
            self.configs.pop(f"topic:{record.name}", None)
        elif isinstance(record, r.PartitionChange):
            self._apply_partition_change(record)
        elif isinstance(record, r.ProducerIdsBlock):
            self.next_producer_id = max(self.next_producer_id, record.first_id + record.size)
            self.producer_id_blocks[record.broker_id] = record.first_id
        elif isinstance(record, r.ScramCredentialChange):
            self._apply_scram(record)
        elif isinstance(record, r.AclChange):
            kept = tuple(a for a in self.acls if a.binding() != record.binding())
            self.acls = kept if record.remove else (*kept, replace(record, remove=False))
        elif isinstance(record, r.ConfigChange):
            entries = self.configs.setdefault(record.resource, {})
            if record.value is None:
                entries.pop(record.key, None)
                if not entries:  # no empty resources left behind: a snapshot could not say they exist
                    del self.configs[record.resource]
            else:
                entries[record.key] = record.value

    def _apply_scram(self, record: r.ScramCredentialChange) -> None:
        if not record.remove:
            self.scram.setdefault(record.user, {})[record.mechanism] = record
            return
        mechanisms = self.scram.get(record.user, {})
        mechanisms.pop(record.mechanism, None)
        if not mechanisms:  # no user without credentials left behind: a snapshot could not say it exists
            self.scram.pop(record.user, None)

    def _apply_add_partitions(self, record: r.AddPartitions) -> None:
        topic = self.topics.get(record.topic)
        if topic is None or topic.topic_id != record.topic_id or len(topic.partitions) != record.first_partition:
            return  # proposed against a topic that has changed since: ignored, the same way on every replay
        added = tuple(
            PartitionInfo(replicas=reps, leader=isr[0] if isr else -1, leader_epoch=0, isr=isr, partition_epoch=0)
            for reps, isr in zip(record.assignment, record.isr, strict=True)
        )
        self.topics[record.topic] = replace(topic, partitions=topic.partitions + added)

    def _apply_partition_change(self, record: r.PartitionChange) -> None:
        topic = self.topics.get(record.topic)
        if topic is None or not 0 <= record.partition < len(topic.partitions):
            return  # the topic was deleted after the change was proposed: nothing to do
        old = topic.partitions[record.partition]
        if record.partition_epoch <= old.partition_epoch:
            return  # a stale change (raced with a newer one) is ignored, deterministically
        new = PartitionInfo(old.replicas, record.leader, record.leader_epoch, record.isr, record.partition_epoch)
        parts = list(topic.partitions)
        parts[record.partition] = new
        self.topics[record.topic] = replace(topic, partitions=tuple(parts))

    def live_brokers(self) -> list[BrokerInfo]:
        return sorted((b for b in self.brokers.values() if not b.fenced), key=lambda b: b.broker_id)

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= partition < len(t.partitions):
            return None
        return t.partitions[partition]

    def snapshot(self) -> tuple[object, ...]:
        """A hashable, comparable view used by tests to check replay determinism."""
        return (
            tuple(sorted(self.brokers.items())),
            tuple(sorted(self.topics.items())),
            tuple(sorted((k, tuple(sorted(v.items()))) for k, v in self.configs.items())),
            self.next_producer_id,
            tuple(sorted((u, tuple(sorted(m.items()))) for u, m in self.scram.items())),
            self.acls,
        )


def replay(log: list[r.Record]) -> MetadataState:
    state = MetadataState()
    for record in log:
        state.apply(record)
    return state
