"""`SingleNode`: the `ClusterRole` of a broker alone, a cluster of one.

It leads every partition at epoch 0, its ISR is itself (so the high watermark is the log end and acks=all
is met by the local append), it is every group's coordinator and its own controller; topic changes apply
to the local copy at once. Producer ids come from the broker's own block file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from broker.coordinator.internal_topics import BY_NAME, GROUP, InternalTopic
from broker.core.role import BrokerView, PartitionView, TopicPartition
from broker.log_store import PartitionLog
from broker.protocol.errors import KafkaApiError
from broker.security.listeners import CURRENT_LISTENER, advertised
from broker.topics import Topic

if TYPE_CHECKING:
    from broker.core.state import BrokerState

LEADER_EPOCH = 0


class SingleNode:
    def __init__(self, state: BrokerState) -> None:
        self.state = state

    @property
    def node_id(self) -> int:
        return self.state.config.node_id

    # --- leadership and replication -----------------------------------------------------------
    def check_leader(self, tp: TopicPartition, current_leader_epoch: int = -1) -> None:
        pass  # every partition is led here

    def check_coordinator(self, key: str, key_type: int = GROUP) -> None:
        pass

    def leader_epoch(self, tp: TopicPartition) -> int:
        return LEADER_EPOCH

    def on_leader_append(self, tp: TopicPartition, log_end_offset: int) -> None:
        pass

    def high_watermark(self, tp: TopicPartition, plog: PartitionLog) -> int:
        return plog.high_watermark

    def check_min_insync(self, topic: Topic, partition: int, min_insync: int) -> None:
        if min_insync > 1:
            raise KafkaApiError(
                ErrorCode.not_enough_replicas,
                f"acks=all on {topic.name!r} needs min.insync.replicas={min_insync} in-sync replicas; this"
                " single-node broker has 1",
            )

    def wait_for_isr(self, tp: TopicPartition, end: int, timeout_ms: int) -> Awaitable[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)  # the ISR is this broker, which has the data
        return done

    def on_follower_fetch(self, tp: TopicPartition, replica_id: int, fetch_offset: int, log_start: int) -> None:
        pass  # no followers

    def wait_for_low_watermark(self, tp: TopicPartition, plog: PartitionLog, offset: int,
                               timeout_ms: int) -> Awaitable[int]:
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        done.set_result(plog.log_start_offset)  # the only replica
        return done

    def offset_lag(self, tp: TopicPartition, plog: PartitionLog) -> int:
        return max(plog.high_watermark - plog.log_end_offset, 0)

    def end_offset_for_epoch(self, tp: TopicPartition, plog: PartitionLog, current_epoch: int,
                             epoch: int) -> tuple[int, int]:
        if current_epoch > LEADER_EPOCH:
            raise KafkaApiError(ErrorCode.unknown_leader_epoch,
                                f"leader epoch {current_epoch} of {tp[0]}-{tp[1]} is newer than {LEADER_EPOCH}")
        if epoch < LEADER_EPOCH:
            return -1, -1  # before the first epoch: undefined, as Kafka answers
        return LEADER_EPOCH, plog.log_end_offset

    # --- metadata -------------------------------------------------------------------------------
    def brokers(self) -> list[BrokerView]:
        """This node, at the advertised address of the listener the request came in on (each connection's
        task sets it: broker/server.py), so a client on the SASL_SSL port is told that port."""
        config = self.state.config
        host, port = advertised(config, CURRENT_LISTENER.get())
        return [BrokerView(config.node_id, host, port, config.get("broker.rack") or None)]

    def controller_id(self) -> int:
        return self.node_id

    def knows_topic(self, name: str) -> bool:
        return True

    def partitions(self, topic: Topic) -> list[PartitionView]:
        node = self.node_id
        return [PartitionView(node, LEADER_EPOCH, (node,), (node,), ()) for _ in range(topic.partitions)]

    def hosted(self, topic: Topic) -> Sequence[int]:
        return range(topic.partitions)

    def coordinator(self, key: str, key_type: int = GROUP) -> BrokerView:
        return self.brokers()[0]

    # --- administration -------------------------------------------------------------------------
    def auto_create(self, name: str) -> Topic | bool:
        if name in BY_NAME:
            return self.state.internal_topic(BY_NAME[name])  # always its own partition count and compaction
        if not self.state.config.bool("auto.create.topics.enable"):
            return False
        return self.state.create_topic(name, -1, {})

    def internal_topic_missing(self, spec: InternalTopic) -> Topic:
        return self.state.create_topic(spec.name, self.state.config.int(spec.partitions_key), dict(spec.configs))

    def check_replication_factor(self, replication_factor: int) -> None:
        if replication_factor not in (-1, 1):
            raise KafkaApiError(
                ErrorCode.invalid_replication_factor,
                f"replication factor {replication_factor} is larger than the 1 available broker",
            )

    async def create_topic(self, name: str, partitions: int, replication_factor: int, configs: dict[str, str],
                           assignment: list[list[int]] | None) -> tuple[object, int]:
        return self.state.create_topic(name, partitions, configs).topic_id, 1

    async def delete_topic(self, name: str) -> None:
        self.state.delete_topic(name)
        self.state.offsets.delete_topic(name)

    async def create_partitions(self, topic: Topic, count: int, assignment: list[list[int]] | None,
                                validate_only: bool) -> None:
        if count <= topic.partitions:
            raise KafkaApiError(
                ErrorCode.invalid_partitions,
                f"topic {topic.name!r} has {topic.partitions} partitions; the new count {count} must be higher",
            )
        if assignment is not None:
            if len(assignment) != count - topic.partitions:
                raise KafkaApiError(
                    ErrorCode.invalid_replica_assignment,
                    f"{len(assignment)} assignments for {count - topic.partitions} new partitions",
                )
            if any(tuple(a) != (self.node_id,) for a in assignment):
                raise KafkaApiError(ErrorCode.invalid_replica_assignment,
                                    f"this single-node broker can only place replicas on broker {self.node_id}")
        if not validate_only:
            self.state.add_partitions(topic, count)

    def propose_configs(self, topic: str, old: dict[str, str], new: dict[str, str]) -> None:
        pass  # the local copy is the only one

    async def next_producer_id(self) -> tuple[int, int]:
        return self.state.producer_ids.init_producer_id()

    async def elect_preferred_leaders(self, partitions: list[TopicPartition], timeout_s: float) -> None:
        pass  # the only replica always leads
