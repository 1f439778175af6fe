"""A controller quorum member: the Raft log carrying metadata records, applied to `MetadataState`.

Sans-I/O like `RaftNode`: feed it time and messages, send what it returns. Only the Raft leader
(the active controller) proposes records. Automatic changes (fencing brokers whose session
expired, re-electing partition leaders) are proposed only when every earlier proposal has been
applied, so they are always computed against the state they will be applied to.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from broker.controller import records as r
from broker.controller.election import alter_isr, on_broker_fenced, on_broker_unfenced, preferred_leader_changes
from broker.controller.errors import NotController, TopicExists, UnknownTopic
from broker.controller.heartbeats import BrokerHeartbeats
from broker.controller.new_partitions import add_partitions
from broker.controller.placement import assign_replicas, check_assignment
from broker.controller.raft import LEADER, Message, NotLeader, Outgoing, RaftNode, RaftStorage
from broker.controller.snapshot import from_snapshot, to_snapshot
from broker.controller.state import PRODUCER_IDS_BLOCK_SIZE, MetadataState

log = logging.getLogger("broker.controller")

# Kafka's default for metadata.log.max.record.bytes.between.snapshots (20 MiB).
DEFAULT_SNAPSHOT_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class CommittedRecords:
    """What a broker following the metadata reads: committed records after the index it has applied, or,
    when the entries it needs were compacted away, first a snapshot (`snapshot_index`, `snapshot`) to
    replace its state with, then the records after it."""

    records: list[tuple[int, dict[str, Any]]]
    snapshot_index: int | None = None
    snapshot: dict[str, Any] | None = None


class QuorumController:
    def __init__(
        self,
        node_id: int,
        voters: list[int],
        storage: RaftStorage,
        *,
        session_timeout_ms: int = 9000,
        unclean_leader_election: bool = False,
        election_timeout_ms: tuple[int, int] = (150, 300),
        heartbeat_ms: int = 50,
        max_record_bytes_between_snapshots: int = DEFAULT_SNAPSHOT_BYTES,
    ) -> None:
        self.raft = RaftNode(
            node_id, voters, storage, election_timeout_ms=election_timeout_ms, heartbeat_ms=heartbeat_ms
        )
        self.state = MetadataState()
        self.session_timeout_ms = session_timeout_ms
        self.unclean = unclean_leader_election
        self.now_ms = 0
        self._active_since_ms: int | None = None
        self.heartbeats = BrokerHeartbeats()
        self._creating: dict[str, int] = {}  # topic -> Raft index of its CreateTopic, until applied
        if max_record_bytes_between_snapshots < 1:
            raise ValueError("metadata.log.max.record.bytes.between.snapshots must be at least 1, "
                             f"got {max_record_bytes_between_snapshots}")
        self.snapshot_bytes = max_record_bytes_between_snapshots
        self._bytes_since_snapshot = 0  # record bytes applied since the last snapshot (Kafka counts the same)
        self._apply_committed()  # the state the stored snapshot holds, before the first message or tick

    @property
    def is_active(self) -> bool:
        return self.raft.role == LEADER

    def _apply_committed(self) -> None:
        snap = self.raft.snapshot_to_load()
        if snap is not None:  # the node started from it, or the leader installed it: it replaces the state
            self.state = from_snapshot(snap.data)
            self._bytes_since_snapshot = 0
        for _, entry in self.raft.committed_entries():
            if entry.data is not None:
                self.state.apply(r.from_dict(entry.data))
                self._bytes_since_snapshot += len(json.dumps(entry.data))
        # Each member snapshots on its own (Raft paper, section 7), as KRaft does once
        # metadata.log.max.record.bytes.between.snapshots of records were applied since the last one.
        if self._bytes_since_snapshot >= self.snapshot_bytes:
            self.take_snapshot()

    def take_snapshot(self) -> None:
        """Compact the metadata log up to the last applied entry into a snapshot of the state."""
        index = self.raft.last_applied
        if index > self.raft.snapshot_index:
            self.raft.compact(index, to_snapshot(self.state))
            log.info("metadata snapshot at index %d (%d bytes of records since the last one)",
                     index, self._bytes_since_snapshot)
        self._bytes_since_snapshot = 0

    def tick(self, now_ms: int) -> list[Outgoing]:
        self.now_ms = now_ms
        out = self.raft.tick(now_ms)
        self._apply_committed()
        if self.is_active:
            if self._active_since_ms is None:
                self._active_since_ms = now_ms
                self.heartbeats.reset(now_ms)
            out += self._maintain()
        else:
            self._active_since_ms = None
        return out

    def receive(self, message: Message) -> list[Outgoing]:
        out = self.raft.receive(message)
        self._apply_committed()
        return out

    def _settled(self) -> bool:
        return self.raft.commit_index == self.raft.last_index and self.raft.last_applied == self.raft.commit_index

    def _maintain(self) -> list[Outgoing]:
        # A new active controller gives brokers one session to heartbeat before fencing them,
        # since heartbeats live in the memory of the controller they were sent to.
        assert self._active_since_ms is not None
        if not self._settled() or self.now_ms - self._active_since_ms < self.session_timeout_ms:
            return []
        proposals: list[r.Record] = []
        live = [b.broker_id for b in self.state.live_brokers()]
        for broker_id in self.heartbeats.expired(live, self.now_ms, self.session_timeout_ms):
            proposals.append(r.FenceBroker(broker_id))
            proposals += on_broker_fenced(self.state, broker_id, self.unclean)
            break  # one broker per round: the next round sees the first one's changes applied
        for rec in proposals:
            self.raft.propose(r.to_dict(rec))
        return self.raft.flush() if proposals else []

    # --- requests from brokers and admin clients (only on the active controller) ---------------
    def _require_caught_up(self) -> None:
        """Requests decide from `state`: a newly elected controller answers them only once it has applied its
        own term's no-op, and with it every entry of earlier terms (KRaft's controller, likewise, is active
        only after replaying the log up to its leader epoch's start). Before that its state may lack what
        earlier leaders committed - a controller restarted and elected at once took a restarted broker for a
        new one and registered it unfenced, leader of its old partitions with a log recovery had cut, and the
        followers truncated acknowledged records to it (the [safety] nemesis, seed 7). Retriable."""
        if not self.is_active:
            raise NotController(f"this node is not the active controller; try node {self.raft.leader}")
        if self.raft.last_applied < self.raft.term_start_index:
            raise NotController(f"controller {self.raft.id} was just elected and is still applying the metadata "
                                f"log ({self.raft.last_applied} of {self.raft.term_start_index}); try again")

    def _propose(self, records: list[r.Record]) -> int:
        try:
            index = 0
            for rec in records:
                index = self.raft.propose(r.to_dict(rec))
            return index
        except NotLeader as e:
            raise NotController(f"this node is not the active controller; try node {e.leader}") from e

    def register_broker(self, broker_id: int, host: str, port: int, rack: str | None, incarnation: str,
                        endpoints: tuple[tuple[str, str, int], ...] = ()) -> int:
        """Register a broker process (Kafka's BrokerRegistration).

        A broker id seen before with another incarnation is a restarted process: its log may have lost what
        the page cache held, or what recovery cut at a damaged batch. As KRaft does, it is fenced first - its
        leaderships move to an in-sync replica and it leaves every ISR (never emptying one) - and registered
        fenced; its next heartbeat unfences it, and its leaders add it back to the ISRs only once it has caught
        up under the current leader epoch. Keeping it as leader with its old epoch would make the followers
        truncate acknowledged records to its shorter log.
        """
        self._require_caught_up()
        known = self.state.brokers.get(broker_id)
        recs: list[r.Record] = []
        if known is None or known.incarnation == incarnation:
            # A new broker, or the same process registering again: it lost nothing, nothing to fence.
            recs.append(r.RegisterBroker(broker_id, host, port, rack, incarnation, endpoints=endpoints))
            if known is not None and known.fenced:
                recs += on_broker_unfenced(self.state, broker_id)
        else:
            if not known.fenced:
                recs += [r.FenceBroker(broker_id), *on_broker_fenced(self.state, broker_id, self.unclean)]
            recs.append(r.RegisterBroker(broker_id, host, port, rack, incarnation, fenced=True, endpoints=endpoints))
        index = self._propose(recs)
        self.heartbeats.touch(broker_id, self.now_ms)
        return index

    def shutdown_broker(self, broker_id: int) -> int:
        """Controlled shutdown: fence the broker now and move its leaderships, instead of waiting a session."""
        self._require_caught_up()
        if broker_id not in self.state.brokers or self.state.brokers[broker_id].fenced:
            return self.raft.commit_index
        return self._propose([r.FenceBroker(broker_id), *on_broker_fenced(self.state, broker_id, self.unclean)])

    def alter_partition(
        self, topic: str, partition: int, leader: int, leader_epoch: int, partition_epoch: int, isr: tuple[int, ...]
    ) -> int:
        """A leader's ISR change (Kafka's AlterPartition); stale leaders get StaleEpoch, a change made
        against an older state of the partition StalePartitionEpoch."""
        self._require_caught_up()
        return self._propose([alter_isr(self.state, topic, partition, leader, leader_epoch, partition_epoch, isr)])

    def heartbeat(self, broker_id: int) -> int:
        """Noted in memory; only unfencing a fenced broker is proposed to the log."""
        if not self.is_active:
            raise NotController(f"this node is not the active controller; try node {self.raft.leader}")
        self.heartbeats.touch(broker_id, self.now_ms)
        b = self.state.brokers.get(broker_id)
        if b is not None and b.fenced and self._settled():
            return self._propose([r.UnfenceBroker(broker_id), *on_broker_unfenced(self.state, broker_id)])
        return self.raft.commit_index

    def allocate_producer_ids(self, broker_id: int) -> tuple[int, int]:
        """A block of producer ids for `broker_id`: (Raft index to wait for, first id). Only once every earlier
        record is applied, so two blocks can never overlap (a refusal is retried by the broker)."""
        if not self.is_active or not self._settled():
            raise NotController(f"this node cannot allocate producer ids now; try node {self.raft.leader}")
        first = self.state.next_producer_id
        return self._propose([r.ProducerIdsBlock(broker_id, first, PRODUCER_IDS_BLOCK_SIZE)]), first

    def create_topic(
        self, name: str, partitions: int, replication_factor: int, topic_id: str, configs: dict[str, str] | None = None,
        assignment: list[list[int]] | None = None,
    ) -> int:
        self._require_caught_up()
        # A create proposed but not applied yet counts too: two brokers auto-creating one topic at once
        # must not both be told they created it.
        self._creating = {t: i for t, i in self._creating.items() if i > self.raft.last_applied}
        if name in self.state.topics or name in self._creating:
            raise TopicExists(f"topic {name!r} already exists")
        if assignment:
            placed = check_assignment(assignment, set(self.state.brokers))
        else:
            placed = assign_replicas(
                self.state.live_brokers(), partitions, replication_factor, start=len(self.state.topics)
            )
        index = self._propose([r.CreateTopic(name, topic_id, placed, tuple(sorted((configs or {}).items())))])
        self._creating[name] = index
        return index

    def create_partitions(
        self, topic: str, count: int, assignment: list[list[int]] | None = None, validate_only: bool = False
    ) -> int:
        """Grow `topic` to `count` partitions (Kafka's CreatePartitions); `validate_only` proposes nothing."""
        self._require_caught_up()
        record = add_partitions(self.state, topic, count, assignment)
        if validate_only:  # answered from the active controller's state (_require_caught_up), the one it changes
            return self.raft.commit_index
        return self._propose([record])

    def delete_topic(self, name: str) -> int:
        self._require_caught_up()
        if name not in self.state.topics:
            raise UnknownTopic(f"topic {name!r} does not exist")
        return self._propose([r.DeleteTopic(name)])

    def alter_config(self, resource: str, key: str, value: str | None) -> int:
        """Set (or, with None, delete) one config of `broker:<id>`, `topic:<name>` or `cluster`."""
        self._require_caught_up()
        kind, _, name = resource.partition(":")
        if kind == "topic" and name not in self.state.topics:
            raise UnknownTopic(f"topic {name!r} does not exist")
        if kind not in ("broker", "topic", "cluster"):
            raise ValueError(f"config resource {resource!r} must be broker:<id>, topic:<name> or cluster")
        return self._propose([r.ConfigChange(resource, key, value)])

    def alter_security(self, changes: list[dict[str, Any]]) -> int:
        """SCRAM credential and ACL changes a broker made for CreateAcls/DeleteAcls/AlterUserScramCredentials
        (Kafka forwards these to the controller, which keeps them in the metadata log): every broker applies
        them, so a user or ACL made through one broker holds on all. The broker checked them; here only that
        they are security records."""
        self._require_caught_up()
        try:
            records = [r.from_dict(change) for change in changes]
        except TypeError as exc:  # a field missing or unknown: a broker of another version, or a bug
            raise ValueError(f"bad security record: {exc}") from None
        wrong = [type(rec).__name__ for rec in records if not isinstance(rec, r.SECURITY_RECORDS)]
        if wrong:
            raise ValueError(f"alter_security takes SCRAM credential and ACL records only, not {wrong}")
        return self._propose(records) if records else self.raft.commit_index

    def committed_records(self, from_index: int, limit: int = 1000) -> CommittedRecords:
        """Committed records after `from_index` (1-based Raft index), for brokers that follow the
        metadata: they apply them to their own `MetadataState`. A broker behind the snapshot (a restart,
        a long pause) gets the snapshot first, as a KRaft broker fetches the snapshot (KIP-630)."""
        snapshot_index, snapshot = None, None
        if from_index < self.raft.snapshot_index and self.raft.snapshot is not None:
            snapshot_index, snapshot = self.raft.snapshot_index, self.raft.snapshot.data
            from_index = self.raft.snapshot_index
        end = min(self.raft.commit_index, from_index + limit)
        records = [(i, e.data) for i, e in enumerate(self.raft.entries(from_index + 1, end), from_index + 1)
                   if e.data is not None]
        return CommittedRecords(records, snapshot_index, snapshot)

    def elect_preferred_leaders(self, partitions: list[tuple[str, int]] | None = None) -> int:
        """Move leadership back to each partition's first replica (all partitions, or the given ones)."""
        self._require_caught_up()
        changes = preferred_leader_changes(self.state)
        if partitions is not None:
            wanted = {(t, p) for t, p in partitions}
            changes = [c for c in changes if (c.topic, c.partition) in wanted]
        return self._propose(list(changes)) if changes else self.raft.commit_index

    def status(self) -> dict[str, Any]:
        return {
            "node_id": self.raft.id,
            "role": self.raft.role,
            "term": self.raft.term,
            "leader": self.raft.leader,
            "commit_index": self.raft.commit_index,
            "last_index": self.raft.last_index,
            "snapshot_index": self.raft.snapshot_index,
            "brokers": {b.broker_id: {"fenced": b.fenced, "rack": b.rack} for b in self.state.brokers.values()},
            "topics": {
                t.name: [
                    {"leader": p.leader, "epoch": p.leader_epoch, "isr": list(p.isr), "replicas": list(p.replicas)}
                    for p in t.partitions
                ]
                for t in self.state.topics.values()
            },
        }

