"""`BrokerState`: the core the handlers adapt requests to: configuration, topics, partition logs,
coordinators, and the broker's `ClusterRole` (a single node or a cluster member).

It never asks which kind of broker it is: what differs goes through `role` (broker/core/role.py), as
Apache Kafka's request handlers go through its ReplicaManager whether or not other brokers exist.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from broker.config import BrokerConfig
from broker.config_catalog import topic_entry
from broker.coordinator.groups import GroupCoordinator
from broker.coordinator.internal_topics import GROUP, OFFSETS, TRANSACTIONS, InternalTopic
from broker.coordinator.offsets import OffsetChange, OffsetStore
from broker.coordinator.offsets_codec import GroupMetadataValue
from broker.coordinator.offsets_topic import (
    OFFSETS_TOPIC,
    encode_batch,
    encode_group_batch,
    partition_for,
    replay,
)
from broker.coordinator.producers import ProducerIdAllocator
from broker.coordinator.transactions import TransactionCoordinator
from broker.coordinator.transactions_topic import replay as replay_transactions
from broker.core.notifier import DataNotifier
from broker.core.partitions import PartitionManager
from broker.core.role import ClusterRole
from broker.log_store import LogConfig, LogStore, PartitionLog
from broker.protocol.errors import KafkaApiError
from broker.topics import Topic, TopicRegistry


@dataclass
class BrokerState:
    config: BrokerConfig
    topics: TopicRegistry
    store: LogStore
    groups: GroupCoordinator
    offsets: OffsetStore
    producer_ids: ProducerIdAllocator  # a single node's; a cluster member's come from the controller
    notifier: DataNotifier = field(default_factory=DataNotifier)
    partitions: PartitionManager = field(init=False)
    # Set right after construction (its effects need the state): broker/server.py build_state.
    transactions: TransactionCoordinator = field(init=False)

    def __post_init__(self) -> None:
        self.partitions = PartitionManager(self.store, self.notifier, self.log_config)

    @property
    def role(self) -> ClusterRole:
        """SingleNode, or ClusterMember on a cluster member; set right after construction (it needs the state)."""
        return self.partitions.role

    @role.setter
    def role(self, role: ClusterRole) -> None:
        self.partitions.role = role

    # --- replication -----------------------------------------------------------------------------
    def check_leader(self, topic: str, partition: int, current_leader_epoch: int = -1) -> None:
        """NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH unless this broker leads the partition."""
        self.role.check_leader((topic, partition), current_leader_epoch)

    def check_coordinator(self, key: str, key_type: int = GROUP) -> None:
        """NOT_COORDINATOR unless this broker coordinates the group (or transactional id)."""
        self.role.check_coordinator(key, key_type)

    def high_watermark(self, topic: str, partition: int, plog: PartitionLog) -> int:
        return self.role.high_watermark((topic, partition), plog)

    async def wait_for_offsets_replicated(self, group: str, timeout_ms: int) -> None:
        """An offset commit is answered once the ISR has it (Kafka commits with acks=all)."""
        topic = self.offsets_topic()
        index = partition_for(group, topic.partitions)
        end = self.partitions.log(topic, index).log_end_offset
        await self.role.wait_for_isr((OFFSETS_TOPIC, index), end, timeout_ms)

    def topic_config(self, topic: Topic, key: str) -> str:
        if key in topic.configs:
            return topic.configs[key]
        return topic_entry(self.config, topic.configs, key).value or ""

    def log_config(self, topic: Topic) -> LogConfig:
        return LogConfig(
            max_message_bytes=int(self.topic_config(topic, "max.message.bytes")),
            segment_bytes=int(self.topic_config(topic, "segment.bytes")),
            timestamp_type_log_append=self.topic_config(topic, "message.timestamp.type") == "LogAppendTime",
            segment_ms=int(self.topic_config(topic, "segment.ms")),
            retention_ms=int(self.topic_config(topic, "retention.ms")),
            retention_bytes=int(self.topic_config(topic, "retention.bytes")),
            cleanup_policy=frozenset(p.strip() for p in self.topic_config(topic, "cleanup.policy").split(",")),
            delete_retention_ms=int(self.topic_config(topic, "delete.retention.ms")),
            flush_messages=int(self.topic_config(topic, "flush.messages")),
            flush_ms=int(self.topic_config(topic, "flush.ms")),
        )

    def load_logs(self) -> int:
        """Open every partition's log at start-up, recovering them in parallel threads (Kafka's
        `LogManager.loadLogs`), so retention and compaction also reach partitions no request touches;
        returns how many were opened. Producer ids the logs hold are never handed out again."""
        opened = self.partitions.load_all(self.topics.all())
        for plog in opened:
            self.producer_ids.seen(plog.producers.entries)
        return len(opened)

    def require_topic(self, name: str) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            raise KafkaApiError(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")
        return topic

    def create_topic(
        self, name: str, partitions: int, configs: dict[str, str], topic_id: uuid.UUID | None = None
    ) -> Topic:
        if partitions == -1:
            partitions = self.config.int("num.partitions")
        topic = self.topics.create(name, partitions, configs, topic_id)
        for index in range(topic.partitions):
            self.partitions.log(topic, index)
        return topic

    def auto_create(self, name: str) -> Topic | bool:
        """Create `name` with the broker defaults when auto.create.topics.enable allows it: the topic when
        created here, True when the controller is creating it (clients retry), False when not allowed."""
        return self.role.auto_create(name)

    # --- committed offsets in __consumer_offsets ----------------------------------------------

    def internal_topic(self, spec: InternalTopic) -> Topic:
        topic = self.topics.get(spec.name)
        return topic if topic is not None else self.role.internal_topic_missing(spec)

    def offsets_topic(self) -> Topic:
        return self.internal_topic(OFFSETS)

    def write_offsets(self, group: str, changes: list[OffsetChange]) -> None:
        """The OffsetStore's journal: one record batch per commit, in the group's partition."""
        topic = self.offsets_topic()
        self.partitions.append_records(topic, partition_for(group, topic.partitions),
                                       encode_batch(group, changes, int(time.time() * 1000)))

    async def write_group(self, group: str, value: GroupMetadataValue | None) -> None:
        """The GroupCoordinator's journal: the group's metadata record, answered once the ISR has it."""
        topic = self.offsets_topic()
        self.partitions.append_records(topic, partition_for(group, topic.partitions),
                                       encode_group_batch(group, value, int(time.time() * 1000)))
        await self.wait_for_offsets_replicated(group, 5000)

    async def write_marker(self, tp: tuple[str, int], producer_id: int, epoch: int, commit: bool,
                           coordinator_epoch: int, timeout_ms: int) -> None:
        """A transaction's COMMIT/ABORT marker in one partition this broker leads, answered once the ISR
        has it; in `__consumer_offsets` it also ends the producer's staged TxnOffsetCommit offsets."""
        topic = self.require_topic(tp[0])
        self.partitions.write_marker(topic, tp[1], producer_id, epoch, commit, coordinator_epoch)
        if tp[0] == OFFSETS_TOPIC:
            self.offsets.complete_transaction(producer_id, commit)
        end = self.partitions.log(topic, tp[1]).log_end_offset
        await self.role.wait_for_isr(tp, end, timeout_ms)

    async def write_txn_offsets(self, group: str, producer_id: int, epoch: int, changes: list[OffsetChange],
                                timeout_ms: int) -> None:
        """TxnOffsetCommit: the offsets as a transactional batch in the group's partition, staged until the
        producer's marker; answered once the ISR has it, as an offset commit."""
        topic = self.offsets_topic()
        self.partitions.append_records(topic, partition_for(group, topic.partitions),
                                       encode_batch(group, changes, int(time.time() * 1000), producer_id, epoch))
        self.offsets.stage(producer_id, group, changes)
        await self.wait_for_offsets_replicated(group, timeout_ms)

    def load_offsets(self) -> int:
        """Replay __consumer_offsets (offsets and group metadata) into memory at start; returns the number of
        records applied."""
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return 0
        return sum(replay(self.partitions.log(topic, index), self.offsets, self.groups.store.load_group)
                   for index in range(topic.partitions))

    def load_transactions(self) -> int:
        """Replay __transaction_state into the transaction coordinator at start; returns the records applied."""
        topic = self.topics.get(TRANSACTIONS.name)
        if topic is None:
            return 0
        return sum(replay_transactions(self.partitions.log(topic, index), self.transactions.load)
                   for index in range(topic.partitions))

    def delete_topic(self, name: str) -> None:
        self.partitions.delete(self.topics.delete(name))

    def alter_topic_configs(self, topic: Topic, configs: dict[str, str], replicate: bool = True) -> Topic:
        """Replace the topic's overrides; open logs take the new settings at once when the store can.

        In a cluster the change also goes to the controller, which spreads it to every broker."""
        if replicate:
            self.role.propose_configs(topic.name, dict(topic.configs), dict(configs))
        updated = self.topics.update(topic, configs=dict(configs))
        self.partitions.reconfigure(updated)
        return updated

    def add_partitions(self, topic: Topic, count: int) -> Topic:
        updated = self.topics.update(topic, partitions=count)
        for index in range(topic.partitions, count):
            self.partitions.log(updated, index)
        return updated
