"""CreatePartitions on the controller: validation with Kafka's error codes, rack-aware placement of the new
partitions, the quorum op (validate_only proposes nothing) and exact, replay-stable application."""

from __future__ import annotations

import pytest

from broker.controller import records as r
from broker.controller.errors import (
    ControllerError,
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    UnknownTopic,
)
from broker.controller.new_partitions import add_partitions
from broker.controller.placement import assign_replicas
from broker.controller.state import MetadataState, replay
from tests.broker.controller.test_quorum import _registered
from tests.broker.controller.test_state import cluster


def _with_topic(n: int = 3, racks: list[str | None] | None = None, partitions: int = 2, rf: int = 3) -> MetadataState:
    s = cluster(n, racks)
    s.apply(r.CreateTopic("t", "id-t", assign_replicas(s.live_brokers(), partitions, rf, start=1)))
    return s


def test_new_partitions_keep_rf_spread_leaders_and_racks_and_start_fully_in_sync() -> None:
    s = _with_topic(6, ["a", "a", "b", "b", "c", "c"], partitions=2)
    racks = {b.broker_id: b.rack for b in s.live_brokers()}
    rec = add_partitions(s, "t", 6)
    assert rec.first_partition == 2 and len(rec.assignment) == 4
    s.apply(rec)
    parts = s.topics["t"].partitions
    assert len(parts) == 6
    assert sorted(p.leader for p in parts) == [1, 2, 3, 4, 5, 6]  # the topic's rotation continues over all brokers
    for p in parts[2:]:
        assert len(p.replicas) == 3 and len({racks[b] for b in p.replicas}) == 3
        assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (p.replicas[0], p.replicas, 0, 0)


@pytest.mark.parametrize(
    ("topic", "count", "assignment", "error", "message"),
    [
        ("nope", 3, None, UnknownTopic, "does not exist"),
        ("t", 2, None, InvalidPartitions, "already has 2 partition"),
        ("t", 1, None, InvalidPartitions, "currently has 2 partition.*1 would not be an increase"),
        ("t", 4, [[1, 2, 3]], InvalidReplicaAssignment, "needs 2 assignment"),
        ("t", 3, [[1, 2]], InvalidReplicaAssignment, "replication factor 3"),
        ("t", 3, [[1, 2, 9]], InvalidReplicaAssignment, "unknown brokers \\[9\\]"),
        ("t", 3, [[1, 1, 2]], InvalidReplicaAssignment, "twice"),
    ],
)
def test_bad_requests_get_kafkas_errors(
    topic: str, count: int, assignment: list[list[int]] | None, error: type[ControllerError], message: str
) -> None:
    with pytest.raises(error, match=message):
        add_partitions(_with_topic(), topic, count, assignment)


def test_replication_factor_above_live_brokers_and_an_all_fenced_assignment_are_refused() -> None:
    s = _with_topic()
    s.apply(r.FenceBroker(3))
    with pytest.raises(InvalidReplicationFactor, match="larger than the 2 live brokers"):
        add_partitions(s, "t", 3)
    rec = add_partitions(s, "t", 3, [[3, 1, 2]])  # a fenced broker may be named; it is simply not in the ISR
    assert rec.isr == ((1, 2),)
    s2 = _with_topic(partitions=1, rf=1)
    s2.apply(r.FenceBroker(s2.topics["t"].partitions[0].replicas[0]))
    fenced = next(b for b, info in s2.brokers.items() if info.fenced)
    with pytest.raises(InvalidReplicaAssignment, match="fenced"):
        add_partitions(s2, "t", 2, [[fenced]])


def test_a_stale_or_foreign_record_is_ignored_and_replay_gives_the_same_state() -> None:
    s = _with_topic()
    first, raced = add_partitions(s, "t", 3), add_partitions(s, "t", 4)  # both computed against 2 partitions
    other_incarnation = r.AddPartitions("t", "old-id", 3, ((1, 2, 3),), ((1, 2, 3),))
    log: list[r.Record] = [first, raced, other_incarnation, r.AddPartitions("gone", "x", 0, ((1,),), ((1,),))]
    for rec in log:
        s.apply(rec)
    assert len(s.topics["t"].partitions) == 3 and "gone" not in s.topics
    fresh = _with_topic()
    for rec in log:
        fresh.apply(r.from_dict(r.to_dict(rec)))
    assert fresh.snapshot() == s.snapshot()
    assert replay([r.from_dict(r.to_dict(x)) for x in log]).topics == {}  # no topic: nothing to grow


def test_quorum_op_commits_on_every_controller_and_validate_only_proposes_nothing() -> None:
    sim = _registered(1, 2, 3)
    ctl = sim.active()
    ctl.create_topic("t", 2, 3, "id-t")
    sim.run(50)
    ctl = sim.active()
    before = ctl.raft.last_index
    assert ctl.create_partitions("t", 5, validate_only=True) == ctl.raft.commit_index
    assert ctl.raft.last_index == before
    with pytest.raises(InvalidPartitions):
        ctl.create_partitions("t", 2, validate_only=True)
    ctl.create_partitions("t", 5)
    sim.run(50)
    views = [q.state.topics["t"].partitions for q in sim.nodes.values()]
    assert all(v == views[0] for v in views) and len(views[0]) == 5
    assert {p.leader for p in views[0]} == {1, 2, 3}
    assert [d["kind"] for _, d in sim.active().committed_records(0).records][-1] == "add_partitions"
