"""Who leads what: brokers, leaders, epochs, replicas and ISRs as the metadata handlers report them.

A single node leads every partition at epoch 0; a cluster member answers from the metadata log it
follows, so every broker reports the same current leaders.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.handlers.context import BrokerState
from broker.security.listeners import CURRENT_LISTENER, advertised
from broker.topics import Topic


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


def brokers(state: BrokerState) -> list[BrokerView]:
    if state.cluster is None:
        host, port = advertised(state.config, CURRENT_LISTENER.get())
        return [BrokerView(state.config.node_id, host, port, state.config.get("broker.rack") or None)]
    return [BrokerView(b.broker_id, b.host, b.port, b.rack) for b in state.cluster.meta.live_brokers()]


def controller_id(state: BrokerState) -> int:
    return state.config.node_id if state.cluster is None else state.cluster.active_controller()


def known_topics(state: BrokerState) -> list[Topic]:
    """Topics clients may see: in a cluster, only those the metadata log has (and this broker synced)."""
    if state.cluster is None:
        return state.topics.all()
    return [t for t in state.topics.all() if t.name in state.cluster.meta.topics]


def partitions(state: BrokerState, topic: Topic) -> list[PartitionView]:
    if state.cluster is None:
        node = state.config.node_id
        return [PartitionView(node, 0, (node,), (node,), ()) for _ in range(topic.partitions)]
    info = state.cluster.meta.topics.get(topic.name)
    if info is None:
        return []
    live = {b.broker_id for b in state.cluster.meta.live_brokers()}
    return [
        PartitionView(p.leader, p.leader_epoch, p.replicas, p.isr, tuple(r for r in p.replicas if r not in live))
        for p in info.partitions
    ]


def leader_of(state: BrokerState, topic: Topic, partition: int) -> BrokerView | None:
    views = partitions(state, topic)
    if not 0 <= partition < len(views):
        return None
    return next((b for b in brokers(state) if b.node_id == views[partition].leader), None)
