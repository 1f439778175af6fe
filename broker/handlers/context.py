"""What every handler can reach: configuration, topics, partition logs, coordinators."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from kio.schema.errors import ErrorCode

from broker.config import BrokerConfig
from broker.config_catalog import topic_entry
from broker.coordinator.groups import GroupCoordinator
from broker.coordinator.offsets import OffsetChange, OffsetStore
from broker.coordinator.offsets_codec import GroupMetadataValue
from broker.coordinator.offsets_topic import (
    OFFSETS_TOPIC,
    OFFSETS_TOPIC_CONFIGS,
    encode_batch,
    encode_group_batch,
    partition_for,
    replay,
)
from broker.coordinator.producers import ProducerStateManager
from broker.log_store import AppendResult, LogConfig, LogStore, PartitionLog
from broker.protocol.errors import KafkaApiError
from broker.protocol.framing import RequestHeader
from broker.replication.errors import ReplicationError
from broker.topics import Topic, TopicRegistry

if TYPE_CHECKING:
    from broker.cluster.node import ClusterNode


def replication_error(exc: ReplicationError) -> KafkaApiError:
    return KafkaApiError(ErrorCode[exc.kafka_error.lower()], str(exc))


class DataNotifier:
    """Wakes long-polling fetches when any partition gets new data."""

    def __init__(self) -> None:
        self._waiter: asyncio.Future[None] | None = None

    def notify(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    async def wait(self, timeout: float) -> None:
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._waiter), timeout)


@runtime_checkable
class ReconfigurableStore(Protocol):
    """A store that can take new topic configs for an open log (retention, segments, timestamp type)."""

    def reconfigure(self, topic: str, partition: int, config: LogConfig) -> None: ...


@runtime_checkable
class ProducerStateLog(Protocol):
    """A log that keeps its producers' state with its data (the disk store: `producers.entries`)."""

    @property
    def producers(self) -> Any: ...


@dataclass
class BrokerState:
    config: BrokerConfig
    topics: TopicRegistry
    store: LogStore
    groups: GroupCoordinator
    offsets: OffsetStore
    producers: ProducerStateManager
    notifier: DataNotifier = field(default_factory=DataNotifier)
    cluster: ClusterNode | None = None  # None: a single-node broker, every partition led here
    _logs: dict[tuple[str, int], PartitionLog] = field(default_factory=dict)

    # --- replication: what differs between a single node and a cluster member -----------------------
    def check_leader(self, topic: str, partition: int, current_leader_epoch: int = -1) -> None:
        """NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH unless this broker leads the partition."""
        if self.cluster is None:
            return
        try:
            self.cluster.replicas.leader((topic, partition)).check_epoch(current_leader_epoch)
        except ReplicationError as exc:
            raise replication_error(exc) from None

    def check_coordinator(self, group: str) -> None:
        """NOT_COORDINATOR unless this broker leads the group's `__consumer_offsets` partition."""
        if self.cluster is None:
            return
        topic = self.topics.get(OFFSETS_TOPIC)
        leads = topic is not None and self.cluster.replicas.is_leader(
            (OFFSETS_TOPIC, partition_for(group, topic.partitions))
        )
        if not leads:
            raise KafkaApiError(ErrorCode.not_coordinator, f"broker {self.config.node_id} does not coordinate {group}")

    def high_watermark(self, topic: str, partition: int, plog: PartitionLog) -> int:
        if self.cluster is None:
            return plog.high_watermark
        return min(self.cluster.replicas.high_watermark((topic, partition)), plog.log_end_offset)

    def append_as_leader(self, topic: Topic, partition: int, data: bytes) -> AppendResult:
        plog = self.log(topic, partition)
        if self.cluster is None:
            return plog.append(data, leader_epoch=0)
        tp = (topic.name, partition)
        try:
            epoch = self.cluster.replicas.leader(tp).leader_epoch
        except ReplicationError as exc:
            raise replication_error(exc) from None
        result = plog.append(data, leader_epoch=epoch)
        self.cluster.replicas.on_leader_append(tp, plog.log_end_offset)
        self.notifier.notify()  # followers long-poll for it
        return result

    async def wait_for_offsets_replicated(self, group: str, timeout_ms: int) -> None:
        """In a cluster, an offset commit is answered once the ISR has it (Kafka commits with acks=all)."""
        if self.cluster is None:
            return
        topic = self.offsets_topic()
        index = partition_for(group, topic.partitions)
        end = self.log(topic, index).log_end_offset
        await self.cluster.replicas.wait_for_isr((OFFSETS_TOPIC, index), end, timeout_ms)

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
            if isinstance(log, ProducerStateLog):
                self.producers.restore(topic.name, partition, log.producers.entries.values())
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
                if isinstance(log, ProducerStateLog):
                    self.producers.restore(key[0], key[1], log.producers.entries.values())
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

    def auto_create(self, name: str) -> Topic | None:
        """Create `name` with the broker defaults when auto.create.topics.enable allows it."""
        if self.cluster is not None:
            self.cluster.topic_admin.auto_create(name)  # the controller creates it; clients retry meanwhile
            return None
        if name == OFFSETS_TOPIC:
            return self.offsets_topic()  # internal: always its own partition count and compaction
        if not self.config.bool("auto.create.topics.enable"):
            return None
        return self.create_topic(name, -1, {})

    # --- committed offsets in __consumer_offsets ----------------------------------------------

    def offsets_topic(self) -> Topic:
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is None and self.cluster is not None:
            self.cluster.topic_admin.auto_create(OFFSETS_TOPIC)
            raise KafkaApiError(ErrorCode.coordinator_not_available, f"{OFFSETS_TOPIC} is being created; retry")
        if topic is None:
            partitions = self.config.int("offsets.topic.num.partitions")
            topic = self.create_topic(OFFSETS_TOPIC, partitions, dict(OFFSETS_TOPIC_CONFIGS))
        return topic

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
        if self.cluster is not None and replicate:
            self.cluster.topic_admin.propose_configs(topic.name, dict(topic.configs), dict(configs))
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


@dataclass(frozen=True)
class Request:
    header: RequestHeader
    body: Any
    client_host: str = ""
