"""The metadata state as the records that rebuild it: what a Raft snapshot of the metadata log holds.

As KRaft does (KIP-630: a snapshot is a set of records that reproduce the state at an offset), a snapshot
is not a dump of `MetadataState` but the shortest record sequence whose replay from an empty state gives
an equal one, so the state machine has one way in (`MetadataState.apply`) and brokers load a snapshot
with the code that follows the log. `applied` (the count of records behind the state) is carried beside
the records, since replaying fewer records would otherwise lower it.
"""

from __future__ import annotations

from typing import Any

from broker.controller import records as r
from broker.controller.state import PRODUCER_IDS_BLOCK_SIZE, MetadataState


def state_records(state: MetadataState) -> list[r.Record]:
    """Records that rebuild `state` when applied in order to an empty `MetadataState`."""
    out: list[r.Record] = []
    for b in sorted(state.brokers.values(), key=lambda b: b.broker_id):
        out.append(r.RegisterBroker(b.broker_id, b.host, b.port, b.rack, b.incarnation, b.fenced, b.endpoints))
        if b.last_heartbeat_ms:  # only logs from before heartbeats left the log have these
            out.append(r.BrokerHeartbeat(b.broker_id, b.last_heartbeat_ms))
    for t in sorted(state.topics.values(), key=lambda t: t.name):
        # A topic with no partitions, then all of them through AddPartitions: it carries each partition's ISR,
        # which CreateTopic cannot (it starts every ISR as the full replica list).
        out.append(r.CreateTopic(t.name, t.topic_id, (), t.configs))
        if t.partitions:
            out.append(r.AddPartitions(t.name, t.topic_id, 0, tuple(p.replicas for p in t.partitions),
                                       tuple(p.isr for p in t.partitions)))
        for index, p in enumerate(t.partitions):
            # A partition no PartitionChange touched (partition epoch 0) is exactly as AddPartitions makes it.
            if p.partition_epoch > 0:
                out.append(r.PartitionChange(t.name, index, p.leader, p.isr, p.leader_epoch, p.partition_epoch))
    for resource, entries in sorted(state.configs.items()):
        out += [r.ConfigChange(resource, key, value) for key, value in sorted(entries.items())]
    out += [credential for _, mechanisms in sorted(state.scram.items()) for _, credential in sorted(mechanisms.items())]
    out += list(state.acls)
    # Each broker's latest block (what a broker checks its allocation against); the newest block ends at
    # next_producer_id, so the next allocation continues where the original state would.
    blocks = sorted(state.producer_id_blocks.items(), key=lambda kv: kv[1])
    for n, (broker_id, first) in enumerate(blocks):
        size = state.next_producer_id - first if n == len(blocks) - 1 else min(PRODUCER_IDS_BLOCK_SIZE,
                                                                               state.next_producer_id - first)
        out.append(r.ProducerIdsBlock(broker_id, first, size))
    return out


def to_snapshot(state: MetadataState) -> dict[str, Any]:
    """The JSON-serialisable snapshot of `state` stored by Raft and sent to followers and brokers."""
    return {"applied": state.applied, "records": [r.to_dict(rec) for rec in state_records(state)]}


def from_snapshot(data: dict[str, Any]) -> MetadataState:
    """The state a snapshot holds (its records replayed onto an empty state)."""
    try:
        state = MetadataState()
        for item in data["records"]:
            state.apply(r.from_dict(item))
        state.applied = int(data["applied"])
        return state
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"bad metadata snapshot ({e}): expected {{'applied': N, 'records': [...]}}") from e
