"""`ClusterRole`: everything that differs between a single broker and a member of a cluster.

As in Apache Kafka, a single broker is a cluster of one: it leads every partition, its ISR is itself, and
its high watermark is its log end. The core (`BrokerState`) and the handlers call the role and never ask
which kind of broker they run in. Implementations: `broker/core/single_node.py` (`SingleNode`) and
`broker/cluster/member.py` (`ClusterMember`, over the metadata log, the controller and the ISR).
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Protocol

from broker.coordinator.internal_topics import GROUP, InternalTopic
from broker.log_store import PartitionLog
from broker.topics import Topic

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class BrokerView:
    node_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True)
class PartitionView:
    leader: int  # -1: no leader right now (LEADER_NOT_AVAILABLE)
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]


class ClusterRole(Protocol):
    # --- leadership and replication (Kafka's ReplicaManager / Partition) ---------------------
    def check_leader(self, tp: TopicPartition, current_leader_epoch: int = -1) -> None:
        """NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH (a KafkaApiError) unless this broker leads `tp`."""

    def check_coordinator(self, key: str, key_type: int = GROUP) -> None:
        """NOT_COORDINATOR unless this broker leads the key's partition of its internal topic (a group's
        `__consumer_offsets` partition, a transactional id's `__transaction_state` partition)."""

    def leader_epoch(self, tp: TopicPartition) -> int:
        """The epoch a leader append is stamped with."""

    def on_leader_append(self, tp: TopicPartition, log_end_offset: int) -> None: ...

    def high_watermark(self, tp: TopicPartition, plog: PartitionLog) -> int: ...

    def check_min_insync(self, topic: Topic, partition: int, min_insync: int) -> None:
        """acks=all: NOT_ENOUGH_REPLICAS unless at least `min_insync` replicas are in sync."""

    def wait_for_isr(self, tp: TopicPartition, end: int, timeout_ms: int) -> Awaitable[None]:
        """Done once every in-sync replica has offsets below `end` (raises ReplicationError/TimeoutError)."""

    def on_follower_fetch(self, tp: TopicPartition, replica_id: int, fetch_offset: int, log_start: int) -> None:
        """A follower fetched from `fetch_offset` with its log starting at `log_start` (-1: not told)."""

    def wait_for_low_watermark(self, tp: TopicPartition, plog: PartitionLog, offset: int,
                               timeout_ms: int) -> Awaitable[int]:
        """DeleteRecords: the low watermark once every live replica's log starts at `offset` or later
        (raises ReplicationError/TimeoutError)."""

    def offset_lag(self, tp: TopicPartition, plog: PartitionLog) -> int:
        """DescribeLogDirs: how far this replica's log end is behind the high watermark it knows (>= 0)."""

    def end_offset_for_epoch(self, tp: TopicPartition, plog: PartitionLog, current_epoch: int,
                             epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset) of the largest epoch <= `epoch`."""

    # --- the metadata clients see -------------------------------------------------------------
    def brokers(self) -> list[BrokerView]: ...

    def controller_id(self) -> int: ...

    def knows_topic(self, name: str) -> bool:
        """Whether clients may see `name` (a cluster member shows only topics of the metadata log)."""

    def partitions(self, topic: Topic) -> list[PartitionView]: ...

    def hosted(self, topic: Topic) -> Sequence[int]:
        """The partitions of `topic` with a replica on this broker."""

    def coordinator(self, key: str, key_type: int = GROUP) -> BrokerView:
        """The broker coordinating a group or transactional id (FindCoordinator)."""

    # --- administration -------------------------------------------------------------------------
    def auto_create(self, name: str) -> Topic | bool:
        """The topic when created here; True when the controller is creating it; False when not allowed."""

    def internal_topic_missing(self, spec: InternalTopic) -> Topic:
        """Create an internal topic (or raise COORDINATOR_NOT_AVAILABLE while the controller does)."""

    def check_replication_factor(self, replication_factor: int) -> None: ...

    async def create_topic(self, name: str, partitions: int, replication_factor: int, configs: dict[str, str],
                           assignment: list[list[int]] | None) -> tuple[object, int]:
        """(topic id, replication factor) once the topic exists here."""

    async def delete_topic(self, name: str) -> None: ...

    async def create_partitions(self, topic: Topic, count: int, assignment: list[list[int]] | None,
                                validate_only: bool) -> None: ...

    def propose_configs(self, topic: str, old: dict[str, str], new: dict[str, str]) -> None:
        """Spread new topic configs (the local copy is updated by the caller)."""

    async def next_producer_id(self) -> tuple[int, int]:
        """(producer id, epoch) for InitProducerId."""

    async def elect_preferred_leaders(self, partitions: list[TopicPartition], timeout_s: float) -> None: ...
