"""`ClusterMember`: the `ClusterRole` of a broker in a cluster.

Leadership, epochs and the ISR come from the metadata log this broker follows (`ClusterNode.meta`) and
from its `ReplicaManager`; topic changes, producer-id blocks and elections go to the active controller,
which spreads them to every broker through the metadata log.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Awaitable, Iterator, Sequence
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from broker.cluster.controller_client import ControllerRejected, ControllerUnavailable
from broker.cluster.replicas import now_ms
from broker.cluster.txn_markers import MarkerSender
from broker.coordinator.internal_topics import GROUP, InternalTopic, for_key_type
from broker.core.role import BrokerView, PartitionView, TopicPartition
from broker.core.transaction_effects import BrokerTxnEffects
from broker.log_store import PartitionLog
from broker.protocol.errors import KafkaApiError, named_error
from broker.replication.errors import ReplicationError
from broker.replication.leader_epochs import epoch_cache
from broker.replication.partition import PartitionReplication
from broker.security.listeners import CURRENT_LISTENER
from broker.topics import Topic

if TYPE_CHECKING:
    from broker.cluster.node import ClusterNode


@contextlib.contextmanager
def replication_errors() -> Iterator[None]:
    try:
        yield
    except ReplicationError as exc:
        raise named_error(exc.kafka_error, str(exc)) from None


@contextlib.contextmanager
def controller_errors() -> Iterator[None]:
    """A refusal keeps the controller's Kafka error (INVALID_REQUEST if unnamed); no controller in time is
    REQUEST_TIMED_OUT, which clients retry."""
    try:
        yield
    except ControllerRejected as exc:
        raise named_error(exc.kafka_error, str(exc), ErrorCode.invalid_request) from None
    except ControllerUnavailable as exc:
        raise KafkaApiError(ErrorCode.request_timed_out, str(exc)) from None


class ClusterMember:
    def __init__(self, node: ClusterNode) -> None:
        self.node = node
        self.replicas = node.replicas
        # Markers of transactions this broker coordinates, for partitions other brokers lead.
        effects = node.state.transactions.effects
        if isinstance(effects, BrokerTxnEffects):
            effects.remote = MarkerSender(node).send

    @property
    def node_id(self) -> int:
        return self.node.node_id

    # --- leadership and replication -----------------------------------------------------------
    def check_leader(self, tp: TopicPartition, current_leader_epoch: int = -1) -> None:
        with replication_errors():
            self.replicas.leader(tp).check_epoch(current_leader_epoch)

    def check_coordinator(self, key: str, key_type: int = GROUP) -> None:
        spec = for_key_type(key_type)
        topic = self.node.state.topics.get(spec.name)
        if topic is None or not self.replicas.is_leader((spec.name, spec.partition(key, topic.partitions))):
            raise KafkaApiError(ErrorCode.not_coordinator, f"broker {self.node_id} does not coordinate {key!r}")

    def leader_epoch(self, tp: TopicPartition) -> int:
        with replication_errors():
            return self.replicas.leader(tp).leader_epoch

    def on_leader_append(self, tp: TopicPartition, log_end_offset: int) -> None:
        self.replicas.on_leader_append(tp, log_end_offset)

    def high_watermark(self, tp: TopicPartition, plog: PartitionLog) -> int:
        return min(self.replicas.high_watermark(tp), plog.log_end_offset)

    def check_min_insync(self, topic: Topic, partition: int, min_insync: int) -> None:
        with replication_errors():  # the leader's own min.insync.replicas, set when it took the leadership
            self.replicas.leader((topic.name, partition)).check_produce(-1, now_ms())

    def wait_for_isr(self, tp: TopicPartition, end: int, timeout_ms: int) -> Awaitable[None]:
        return self.replicas.wait_for_isr(tp, end, timeout_ms)

    def on_follower_fetch(self, tp: TopicPartition, replica_id: int, fetch_offset: int, log_start: int) -> None:
        with contextlib.suppress(ReplicationError):  # answered per partition when the fetch reads it
            self.replicas.on_follower_fetch(tp, replica_id, fetch_offset, log_start)

    def wait_for_low_watermark(self, tp: TopicPartition, plog: PartitionLog, offset: int,
                               timeout_ms: int) -> Awaitable[int]:
        def low_watermark(repl: PartitionReplication) -> int:
            live = {b.broker_id for b in self.node.meta.live_brokers()}
            return repl.low_watermark(plog.log_start_offset, live)

        with replication_errors():
            return self.replicas.wait_for_low_watermark(tp, offset, timeout_ms, low_watermark)

    def offset_lag(self, tp: TopicPartition, plog: PartitionLog) -> int:
        return max(self.replicas.high_watermark(tp) - plog.log_end_offset, 0)

    def end_offset_for_epoch(self, tp: TopicPartition, plog: PartitionLog, current_epoch: int,
                             epoch: int) -> tuple[int, int]:
        self.check_leader(tp, current_epoch)
        answer = epoch_cache(plog).end_offset_for(epoch, plog.log_end_offset)
        return answer.epoch, answer.end_offset

    # --- metadata -------------------------------------------------------------------------------
    def brokers(self) -> list[BrokerView]:
        """Every live broker at its address on the listener the request came in on (Kafka answers Metadata per
        listener), so a client of the SSL client listener is never sent to the inter-broker one."""
        listener = CURRENT_LISTENER.get()
        return [BrokerView(b.broker_id, *b.address(listener), b.rack) for b in self.node.meta.live_brokers()]

    def controller_id(self) -> int:
        return self.node.active_controller()

    def knows_topic(self, name: str) -> bool:
        return name in self.node.meta.topics

    def partitions(self, topic: Topic) -> list[PartitionView]:
        info = self.node.meta.topics.get(topic.name)
        if info is None:
            return []
        live = {b.broker_id for b in self.node.meta.live_brokers()}
        return [
            PartitionView(p.leader, p.leader_epoch, p.replicas, p.isr, tuple(r for r in p.replicas if r not in live))
            for p in info.partitions
        ]

    def hosted(self, topic: Topic) -> Sequence[int]:
        info = self.node.meta.topics.get(topic.name)
        if info is None:
            return ()
        return tuple(i for i, part in enumerate(info.partitions) if self.node_id in part.replicas)

    def coordinator(self, key: str, key_type: int = GROUP) -> BrokerView:
        spec = for_key_type(key_type)
        topic = self.node.state.internal_topic(spec)  # raises COORDINATOR_NOT_AVAILABLE while it is being created
        views = self.partitions(topic)
        index = spec.partition(key, topic.partitions)
        leader = views[index].leader if index < len(views) else -1
        found = next((b for b in self.brokers() if b.node_id == leader), None)
        if found is None:
            raise KafkaApiError(ErrorCode.coordinator_not_available, f"the coordinator of {key!r} has no leader yet")
        return found

    # --- administration -------------------------------------------------------------------------
    def auto_create(self, name: str) -> Topic | bool:
        return self.node.topic_admin.auto_create(name)  # the controller creates it; clients retry meanwhile

    def internal_topic_missing(self, spec: InternalTopic) -> Topic:
        self.node.topic_admin.auto_create(spec.name)
        raise KafkaApiError(ErrorCode.coordinator_not_available, f"{spec.name} is being created; retry")

    def check_replication_factor(self, replication_factor: int) -> None:
        pass  # the controller checks it against the live brokers

    async def create_topic(self, name: str, partitions: int, replication_factor: int, configs: dict[str, str],
                           assignment: list[list[int]] | None) -> tuple[object, int]:
        """The controller places the replicas; answers once this broker has the topic in its metadata."""
        with controller_errors():
            info = await self.node.topic_admin.create_topic(name, partitions, replication_factor, configs,
                                                            assignment)
        return uuid.UUID(info.topic_id), len(info.partitions[0].replicas) if info.partitions else -1

    async def delete_topic(self, name: str) -> None:
        with controller_errors():  # every broker deletes it as the record arrives
            await self.node.topic_admin.delete_topic(name)

    async def create_partitions(self, topic: Topic, count: int, assignment: list[list[int]] | None,
                                validate_only: bool) -> None:
        # The controller checks against the cluster's metadata, not this copy.
        with controller_errors():
            await self.node.topic_admin.create_partitions(topic.name, count, assignment, validate_only)
        info = self.node.meta.topics.get(topic.name)
        if not validate_only and (info is None or len(info.partitions) != count):
            # Accepted, but another change to the topic was applied first and this one was dropped.
            raise KafkaApiError(ErrorCode.invalid_partitions,
                                f"topic {topic.name!r} changed while adding partitions; describe it and retry")

    def propose_configs(self, topic: str, old: dict[str, str], new: dict[str, str]) -> None:
        self.node.topic_admin.propose_configs(topic, old, new)

    async def next_producer_id(self) -> tuple[int, int]:
        try:  # ids come in blocks from the controller, unique across brokers
            return await self.node.producer_ids.next_id(), 0
        except ControllerUnavailable as exc:
            raise KafkaApiError(ErrorCode.coordinator_not_available, str(exc)) from None

    async def elect_preferred_leaders(self, partitions: list[TopicPartition], timeout_s: float) -> None:
        await self.node.client.call("elect_preferred_leaders", partitions=[list(tp) for tp in partitions])
        await self.node.wait_for_metadata(
            lambda: all((info := self.node.meta.partition(t, p)) is not None and info.leader == info.replicas[0]
                        for t, p in partitions), timeout_s)
