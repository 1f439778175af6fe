"""Who leads what: brokers, leaders, epochs, replicas and ISRs as the metadata handlers report them.

A single node leads every partition at epoch 0; a cluster member answers from the metadata log it
follows, so every broker reports the same current leaders.
"""

from __future__ import annotations

from broker.core.role import BrokerView, PartitionView
from broker.handlers.context import BrokerState
from broker.topics import Topic

__all__ = ["BrokerView", "PartitionView", "brokers", "controller_id", "known_topics", "leader_of", "partitions"]


def brokers(state: BrokerState) -> list[BrokerView]:
    return state.role.brokers()


def controller_id(state: BrokerState) -> int:
    return state.role.controller_id()


def known_topics(state: BrokerState) -> list[Topic]:
    """Topics clients may see: in a cluster, only those the metadata log has (and this broker synced)."""
    return [t for t in state.topics.all() if state.role.knows_topic(t.name)]


def partitions(state: BrokerState, topic: Topic) -> list[PartitionView]:
    return state.role.partitions(topic)


def leader_of(state: BrokerState, topic: Topic, partition: int) -> BrokerView | None:
    views = partitions(state, topic)
    if not 0 <= partition < len(views):
        return None
    return next((b for b in brokers(state) if b.node_id == views[partition].leader), None)
