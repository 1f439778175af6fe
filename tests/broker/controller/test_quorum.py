from __future__ import annotations

import random

import pytest

from broker.controller import records as r
from broker.controller.errors import (
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    NotController,
    StaleEpoch,
    TopicExists,
)
from broker.controller.quorum import DEFAULT_SNAPSHOT_BYTES, QuorumController
from broker.controller.raft import MemoryStorage, Outgoing


class Sim:
    """Three controllers over a lossless in-process network with a shared millisecond clock."""

    def __init__(self, snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES) -> None:
        self.snapshot_bytes = snapshot_bytes
        self.now = 0
        self.down: set[int] = set()
        self.stores = {v: MemoryStorage() for v in (1, 2, 3)}
        self.nodes = {v: self._make(v) for v in (1, 2, 3)}
        self.queue: list[tuple[int, Outgoing]] = []

    def _make(self, v: int) -> QuorumController:
        q = QuorumController(v, [1, 2, 3], self.stores[v], session_timeout_ms=500,
                             max_record_bytes_between_snapshots=self.snapshot_bytes)
        q.raft._rng = random.Random(v)
        return q

    def run(self, ms: int) -> None:
        for _ in range(ms):
            self.now += 1
            queue, self.queue = self.queue, []
            for src, o in queue:
                if o.to not in self.down and src not in self.down:
                    self.queue += [(o.to, x) for x in self.nodes[o.to].receive(o.message)]
            for v, q in self.nodes.items():
                if v not in self.down:
                    self.queue += [(v, x) for x in q.tick(self.now)]

    def active(self) -> QuorumController:
        return next(q for v, q in self.nodes.items() if v not in self.down and q.is_active)


def _registered(*brokers: int) -> Sim:
    """A settled quorum with `brokers` registered."""
    sim = Sim()
    sim.run(400)
    for b in brokers:
        sim.active().register_broker(b, "127.0.0.1", 9000 + b, None, f"inc{b}")
    sim.run(20)
    return sim


def test_brokers_fenced_after_session_timeout_and_leaders_move() -> None:
    sim = Sim()
    sim.run(400)
    ctl = sim.active()
    for b in (1, 2, 3):
        ctl.register_broker(b, "127.0.0.1", 9000 + b, None, f"inc{b}")
    sim.run(20)
    with pytest.raises(InvalidReplicationFactor):
        ctl.create_topic("t", 3, 4, "id-t")
    ctl.create_topic("t", 3, 3, "id-t")
    sim.run(100)  # followers learn the commit index with the next append (heartbeat every 50 ms)
    for q in sim.nodes.values():
        assert q.state.snapshot() == ctl.state.snapshot()
    # Brokers 1 and 2 heartbeat; broker 3 goes silent and is fenced after the session timeout.
    for _ in range(10):
        sim.active().heartbeat(1)
        sim.active().heartbeat(2)
        sim.run(100)
    state = sim.active().state
    assert state.brokers[3].fenced and not state.brokers[1].fenced
    for p in state.topics["t"].partitions:
        assert p.leader in (1, 2) and 3 not in p.isr


def test_heartbeats_stay_out_of_the_metadata_log() -> None:
    sim = _registered(1, 2)
    length = sim.active().raft.last_index
    for _ in range(50):  # far more heartbeats than sessions: they keep both brokers unfenced...
        sim.active().heartbeat(1)
        sim.active().heartbeat(2)
        sim.run(50)
    state = sim.active().state
    assert not state.brokers[1].fenced and not state.brokers[2].fenced
    assert sim.active().raft.last_index == length  # ...and add nothing to the replicated log
    follower = next(q for q in sim.nodes.values() if not q.is_active)
    with pytest.raises(NotController):
        follower.heartbeat(1)


def test_producer_id_blocks_are_disjoint_and_survive_failover() -> None:
    sim = _registered(1, 2)
    sim.run(100)  # every registration applied
    ctl = sim.active()
    _, first = ctl.allocate_producer_ids(1)
    with pytest.raises(NotController):  # the first block is not applied yet: a second could overlap it
        ctl.allocate_producer_ids(2)
    sim.run(20)
    _, second = ctl.allocate_producer_ids(2)
    sim.run(20)
    assert second == first + 1000 and ctl.state.producer_id_blocks == {1: first, 2: second}
    sim.down.add(ctl.raft.id)
    sim.run(700)
    new = sim.active()
    _, third = new.allocate_producer_ids(1)
    assert third == second + 1000


def test_a_topic_name_is_created_once_even_before_the_first_create_is_applied() -> None:
    sim = _registered(1, 2, 3)
    sim.run(100)
    ctl = sim.active()
    ctl.create_topic("t", 1, 3, "id-first")
    with pytest.raises(TopicExists):  # not applied yet, still taken
        ctl.create_topic("t", 2, 3, "id-second")
    sim.run(50)
    assert ctl.state.topics["t"].topic_id == "id-first"


def test_controller_failover_keeps_metadata() -> None:
    sim = Sim()
    sim.run(400)
    ctl = sim.active()
    ctl.register_broker(1, "127.0.0.1", 9001, "a", "x")
    sim.run(20)
    ctl.create_topic("t", 1, 1, "id-t")
    sim.run(20)
    sim.down.add(ctl.raft.id)
    follower = next(q for v, q in sim.nodes.items() if v != ctl.raft.id)
    with pytest.raises(NotController):
        follower.create_topic("u", 1, 1, "id-u")
    sim.run(700)
    new = sim.active()
    assert new.raft.id != ctl.raft.id and "t" in new.state.topics
    new.heartbeat(1)  # brokers heartbeat to whichever controller is active (unfences if needed)
    sim.run(100)
    new.heartbeat(1)
    sim.run(100)
    assert not new.state.brokers[1].fenced
    new.create_topic("u", 1, 1, "id-u")
    sim.run(20)
    sim.down.clear()
    sim.nodes[ctl.raft.id] = sim._make(ctl.raft.id)  # restart from its storage
    sim.run(300)
    assert set(sim.nodes[ctl.raft.id].state.topics) == {"t", "u"}


def test_config_changes_replicate_and_bad_resources_are_named() -> None:
    sim = Sim()
    sim.run(400)
    ctl = sim.active()
    ctl.alter_config("cluster", "unclean.leader.election.enable", "false")
    ctl.alter_config("broker:1", "log.retention.ms", "5")
    sim.run(100)
    ctl.alter_config("broker:1", "log.retention.ms", None)
    sim.run(100)
    for q in sim.nodes.values():
        assert q.state.configs == {"cluster": {"unclean.leader.election.enable": "false"}}  # no empty resource left
    with pytest.raises(ValueError, match="must be broker:<id>, topic:<name> or cluster"):
        ctl.alter_config("group:g", "k", "v")
    assert [d["kind"] for _, d in ctl.committed_records(0).records][-1] == "config_change"


def test_security_records_replicate_and_nothing_else_passes_through_alter_security() -> None:
    sim = Sim()
    sim.run(400)
    ctl = sim.active()
    credential = r.ScramCredentialChange("alice", "SCRAM-SHA-512", "czE=", "azE=", "azI=", 4096)
    acl = r.AclChange(2, "orders", 3, "User:alice", "*", 4, 3)
    ctl.alter_security([r.to_dict(credential), r.to_dict(acl)])
    sim.run(100)
    for q in sim.nodes.values():
        assert q.state.scram == {"alice": {"SCRAM-SHA-512": credential}} and q.state.acls == (acl,)
    with pytest.raises(ValueError, match="SCRAM credential and ACL records only, not \\['DeleteTopic'\\]"):
        ctl.alter_security([r.to_dict(r.DeleteTopic("orders"))])
    with pytest.raises(ValueError, match="bad security record"):
        ctl.alter_security([{"kind": "acl", "resource_type": 2}])


def test_explicit_assignment_is_checked_and_kept() -> None:
    sim = _registered(1, 2, 3)
    ctl = sim.active()
    with pytest.raises(InvalidReplicaAssignment, match="unknown brokers"):
        ctl.create_topic("bad", 1, -1, "id-bad", assignment=[[1, 7]])
    with pytest.raises(InvalidReplicaAssignment, match="twice"):
        ctl.create_topic("bad", 1, -1, "id-bad", assignment=[[1, 1]])
    with pytest.raises(InvalidReplicaAssignment, match="same"):
        ctl.create_topic("bad", 2, -1, "id-bad", assignment=[[1, 2], [3]])
    ctl.create_topic("t", 2, -1, "id-t", assignment=[[3, 1], [2, 3]])
    sim.run(50)
    parts = sim.active().state.topics["t"].partitions
    assert [(p.replicas, p.leader) for p in parts] == [((3, 1), 3), ((2, 3), 2)]


def test_shutdown_moves_leadership_and_registering_again_brings_back_an_offline_partition() -> None:
    sim = _registered(1, 2)
    ctl = sim.active()
    ctl.create_topic("solo", 1, -1, "id-solo", assignment=[[2]])
    ctl.create_topic("pair", 1, -1, "id-pair", assignment=[[2, 1]])
    sim.run(50)
    sim.active().shutdown_broker(2)  # controlled shutdown: no session timeout to wait for
    sim.run(50)
    state = sim.active().state
    assert state.brokers[2].fenced
    assert state.partition("pair", 0).leader == 1  # type: ignore[union-attr]
    assert state.partition("solo", 0).leader == -1  # type: ignore[union-attr]  # its only replica is gone
    sim.active().register_broker(2, "127.0.0.1", 9002, None, "inc2-again")
    sim.run(50)
    assert sim.active().state.brokers[2].fenced  # a new process is fenced until it heartbeats
    sim.active().heartbeat(2)
    sim.run(50)
    state = sim.active().state
    assert not state.brokers[2].fenced
    assert state.partition("solo", 0).leader == 2  # type: ignore[union-attr]


def test_alter_partition_from_a_stale_leader_is_refused() -> None:
    sim = _registered(1, 2, 3)
    ctl = sim.active()
    ctl.create_topic("t", 1, -1, "id-t", assignment=[[1, 2, 3]])
    sim.run(50)
    sim.active().alter_partition("t", 0, 1, 0, 0, (1, 2))
    sim.run(50)
    assert sim.active().state.partition("t", 0).isr == (1, 2)  # type: ignore[union-attr]
    with pytest.raises(StaleEpoch):
        sim.active().alter_partition("t", 0, 2, 0, 1, (2,))  # broker 2 does not lead


def test_a_restarted_broker_is_fenced_and_loses_its_leaderships_until_it_heartbeats() -> None:
    """Issue 14: a broker that comes back inside its session with a new incarnation (its log possibly cut by
    recovery) must not stay leader at its old epoch, or the followers truncate acknowledged records to it."""
    sim = _registered(1, 2, 3)
    sim.active().create_topic("t", 1, -1, "id-t", assignment=[[1, 2, 3]])
    sim.run(50)
    before = sim.active().state.partition("t", 0)
    assert before is not None and before.leader == 1
    sim.active().register_broker(1, "127.0.0.1", 9001, None, "inc1")  # the same process: nothing changes
    sim.run(50)
    assert sim.active().state.partition("t", 0) == before
    sim.active().register_broker(1, "127.0.0.1", 9001, None, "inc1-restarted")
    sim.run(50)
    state = sim.active().state
    after = state.partition("t", 0)
    assert state.brokers[1].fenced
    assert after is not None and after.leader == 2 and after.isr == (2, 3)
    assert after.leader_epoch == before.leader_epoch + 1
    # Fenced, it may not rejoin the ISR even if its leader asks (Kafka's INELIGIBLE_REPLICA) ...
    with pytest.raises(ValueError, match="fenced"):
        sim.active().alter_partition("t", 0, 2, after.leader_epoch, after.partition_epoch, (1, 2, 3))
    # ... until its heartbeat unfences it; it stays a follower and rejoins through its leader.
    sim.active().heartbeat(1)
    sim.run(50)
    state = sim.active().state
    assert not state.brokers[1].fenced and state.partition("t", 0) == after
    sim.active().alter_partition("t", 0, 2, after.leader_epoch, after.partition_epoch, (1, 2, 3))
    sim.run(50)
    assert sim.active().state.partition("t", 0).isr == (1, 2, 3)  # type: ignore[union-attr]


def test_a_newly_elected_controller_answers_only_once_it_has_applied_the_earlier_terms() -> None:
    """The [safety] nemesis (seed 7) once lost acknowledged writes this way: a broker killed with its controller
    restarted, the controller was elected at once and took the broker's registration before it had applied the
    log of earlier terms; not knowing the broker, it registered the new incarnation unfenced, still leader of its
    partitions with a log recovery had cut, and the followers truncated acknowledged records to it."""
    sim = _registered(1, 2, 3)
    sim.active().create_topic("t", 1, -1, "id-t", assignment=[[2, 1, 3]])
    sim.run(100)
    before = sim.active().state.partition("t", 0)
    assert before is not None and before.leader == 2
    sim.nodes = {v: sim._make(v) for v in (1, 2, 3)}  # every controller restarts: state from the log alone
    sim.queue = []
    refused = 0
    while not any(q.is_active for q in sim.nodes.values()):
        sim.run(1)
    new = sim.active()
    assert new.raft.last_applied < new.raft.term_start_index  # elected, its no-op not yet applied
    for request in (lambda: new.register_broker(2, "127.0.0.1", 9002, None, "inc2-restarted"),
                    lambda: new.create_topic("t", 1, -1, "id-t2", assignment=[[1, 2, 3]]),
                    lambda: new.alter_partition("t", 0, 2, before.leader_epoch, before.partition_epoch, (2, 1)),
                    lambda: new.shutdown_broker(2)):
        with pytest.raises(NotController, match="still applying"):
            request()
        refused += 1
    sim.run(100)
    assert sim.active() is new and new.state.partition("t", 0) == before  # the earlier terms, applied
    new.register_broker(2, "127.0.0.1", 9002, None, "inc2-restarted")
    sim.run(50)
    state = sim.active().state
    after = state.partition("t", 0)
    assert refused == 4 and state.brokers[2].fenced
    assert after is not None and after.leader == 1 and after.leader_epoch == before.leader_epoch + 1


def test_a_restarted_last_isr_member_leads_again_only_after_its_heartbeat() -> None:
    sim = _registered(1, 2)
    sim.active().create_topic("solo", 1, -1, "id-solo", assignment=[[2]])
    sim.run(50)
    sim.active().register_broker(2, "127.0.0.1", 9002, None, "inc2-restarted")
    sim.run(50)
    part = sim.active().state.partition("solo", 0)
    assert part is not None and part.leader == -1 and part.isr == (2,)  # offline, its last ISR member kept
    sim.active().heartbeat(2)
    sim.run(50)
    assert sim.active().state.partition("solo", 0).leader == 2  # type: ignore[union-attr]


def test_controllers_snapshot_and_a_restarted_one_catches_up_from_the_leaders_snapshot() -> None:
    sim = Sim(snapshot_bytes=2000)
    sim.run(400)
    ctl = sim.active()
    for b in (1, 2, 3):
        ctl.register_broker(b, "127.0.0.1", 9000 + b, None, f"inc{b}")
    sim.run(50)
    ctl.create_topic("t", 3, 3, "id-t")
    sim.run(50)
    down = next(v for v in (1, 2, 3) if v != ctl.raft.id)
    sim.down.add(down)
    before = sim.nodes[down].raft.last_index
    for i in range(100):  # ~100 bytes each: several snapshots' worth
        ctl.alter_config("cluster", f"k{i % 7}", str(i))
        for b in (1, 2, 3):
            ctl.heartbeat(b)
        sim.run(5)
    ctl.delete_topic("t")
    ctl.create_topic("u", 2, 2, "id-u")
    sim.run(100)
    assert ctl.raft.snapshot_index > before + 50  # what the stopped node lacks is only in the snapshot now
    assert len(ctl.raft.log) < 40
    sim.down.discard(down)
    sim.nodes[down] = sim._make(down)  # restarted from its storage
    sim.run(300)
    restarted = sim.nodes[down]
    assert restarted.raft.snapshot_index >= ctl.raft.snapshot_index - 40 > before
    assert restarted.state.snapshot() == ctl.state.snapshot() and restarted.state.applied == ctl.state.applied
    assert "t" not in restarted.state.topics and restarted.state.configs["cluster"]["k1"] == "99"
    # A broker that follows the log from the start gets the snapshot, then the records after it.
    got = restarted.committed_records(0)
    assert got.snapshot_index == restarted.raft.snapshot_index and got.snapshot is not None
    assert all(i > got.snapshot_index for i, _ in got.records)
    assert restarted.committed_records(got.snapshot_index).snapshot is None


def test_compaction_threshold_must_be_positive() -> None:
    with pytest.raises(ValueError, match=r"metadata\.log\.max\.record\.bytes\.between\.snapshots must be at least 1"):
        QuorumController(1, [1], MemoryStorage(), max_record_bytes_between_snapshots=0)
