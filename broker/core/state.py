"""`BrokerState`: the core the handlers adapt requests to: configuration, topics, partition logs,
coordinators, and the broker's `ClusterRole` (a single node or a cluster member).

It never asks which kind of broker it is: what differs goes through `role` (broker/core/role.py), as
Apache Kafka's request handlers go through its ReplicaManager whether or not other brokers exist.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from kio.schema.errors import ErrorCode

from broker.config import BrokerConfig
from broker.config_catalog import topic_entry
from broker.coordinator.groups import GroupCoordinator
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
from broker.core.notifier import DataNotifier
from broker.core.role import ClusterRole
from broker.log_store import AppendResult, LogConfig, LogStore, PartitionLog
from broker.protocol.errors import KafkaApiError
from broker.topics import Topic, TopicRegistry


@runtime_checkable
class ReconfigurableStore(Protocol):
    """A store that can take new topic configs for an open log (retention, segments, timestamp type)."""

    def reconfigure(self, topic: str, partition: int, config: LogConfig) -> None: ...


@dataclass
class BrokerState:
    config: BrokerConfig
    topics: TopicRegistry
    store: LogStore
    groups: GroupCoordinator
    offsets: OffsetStore
    producer_ids: ProducerIdAllocator  # a single node's; a cluster member's come from the controller
    notifier: DataNotifier = field(default_factory=DataNotifier)
    # Set right after construction (it needs the state): SingleNode, or ClusterMember for a cluster member.
    role: ClusterRole = field(init=False)
    _logs: dict[tuple[str, int], PartitionLog] = field(default_factory=dict)

    # --- replication -----------------------------------------------------------------------------
    def check_leader(self, topic: str, partition: int, current_leader_epoch: int = -1) -> None:
        """NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH unless this broker leads the partition."""
        self.role.check_leader((topic, partition), current_leader_epoch)

    def check_coordinator(self, group: str) -> None:
        """NOT_COORDINATOR unless this broker leads the group's `__consumer_offsets` partition."""
        self.role.check_coordinator(group)

    def high_watermark(self, topic: str, partition: int, plog: PartitionLog) -> int:
        return self.role.high_watermark((topic, partition), plog)

    def append_as_leader(self, topic: Topic, partition: int, data: bytes) -> AppendResult:
        plog = self.log(topic, partition)
        tp = (topic.name, partition)
        result = plog.append(data, leader_epoch=self.role.leader_epoch(tp))
        self.role.on_leader_append(tp, plog.log_end_offset)
        self.notifier.notify()  # fetches (followers' too) long-poll for it
        return result

    async def wait_for_offsets_replicated(self, group: str, timeout_ms: int) -> None:
        """An offset commit is answered once the ISR has it (Kafka commits with acks=all)."""
        topic = self.offsets_topic()
        index = partition_for(group, topic.partitions)
        end = self.log(topic, index).log_end_offset
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

    def log(self, topic: Topic, partition: int) -> PartitionLog:
        if not 0 <= partition < topic.partitions:
            raise KafkaApiError(
                ErrorCode.unknown_topic_or_partition, f"topic {topic.name!r} has no partition {partition}"
            )
        key = (topic.name, partition)
        log = self._logs.get(key)
        if log is None:
            log = self._logs[key] = self.store.open(topic.name, partition, self.log_config(topic))
            self.producer_ids.seen(log.producers.entries)
        return log

    def load_logs(self) -> int:
        """Open every partition's log at start-up, recovering them in parallel threads (Kafka's
        `LogManager.loadLogs`), so retention and compaction also reach partitions no request touches;
        returns how many were opened."""
        wanted = [(topic.name, index, self.log_config(topic)) for topic in self.topics.all()
                  for index in range(topic.partitions)]
        for key, log in self.store.open_all(wanted).items():
            if key not in self._logs:
                self._logs[key] = log
                self.producer_ids.seen(log.producers.entries)
        return len(wanted)

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
            self.log(topic, index)
        return topic

    def auto_create(self, name: str) -> Topic | bool:
        """Create `name` with the broker defaults when auto.create.topics.enable allows it: the topic when
        created here, True when the controller is creating it (clients retry), False when not allowed."""
        return self.role.auto_create(name)

    # --- committed offsets in __consumer_offsets ----------------------------------------------

    def offsets_topic(self) -> Topic:
        topic = self.topics.get(OFFSETS_TOPIC)
        return topic if topic is not None else self.role.offsets_topic_missing()

    def write_offsets(self, group: str, changes: list[OffsetChange]) -> None:
        """The OffsetStore's journal: one record batch per commit, in the group's partition."""
        topic = self.offsets_topic()
        self.append_as_leader(topic, partition_for(group, topic.partitions),
                              encode_batch(group, changes, int(time.time() * 1000)))

    async def write_group(self, group: str, value: GroupMetadataValue | None) -> None:
        """The GroupCoordinator's journal: the group's metadata record, answered once the ISR has it."""
        topic = self.offsets_topic()
        self.append_as_leader(topic, partition_for(group, topic.partitions),
                              encode_group_batch(group, value, int(time.time() * 1000)))
        await self.wait_for_offsets_replicated(group, 5000)

    def load_offsets(self) -> int:
        """Replay __consumer_offsets (offsets and group metadata) into memory at start; returns the number of
        records applied."""
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return 0
        return sum(replay(self.log(topic, index), self.offsets.load, self.groups.load_group)
                   for index in range(topic.partitions))

    def delete_topic(self, name: str) -> None:
        topic = self.topics.delete(name)
        for index in range(topic.partitions):
            log = self._logs.pop((name, index), None)
            if log is not None:
                log.close()
            self.store.delete(name, index)
        self.notifier.notify()

    def alter_topic_configs(self, topic: Topic, configs: dict[str, str], replicate: bool = True) -> Topic:
        """Replace the topic's overrides; open logs take the new settings at once when the store can.

        In a cluster the change also goes to the controller, which spreads it to every broker."""
        if replicate:
            self.role.propose_configs(topic.name, dict(topic.configs), dict(configs))
        updated = self.topics.update(topic, configs=dict(configs))
        if isinstance(self.store, ReconfigurableStore):
            log_config = self.log_config(updated)
            for index in range(updated.partitions):
                if (updated.name, index) in self._logs:
                    self.store.reconfigure(updated.name, index, log_config)
        return updated

    def add_partitions(self, topic: Topic, count: int) -> Topic:
        updated = self.topics.update(topic, partitions=count)
        for index in range(topic.partitions, count):
            self.log(updated, index)
        return updated
