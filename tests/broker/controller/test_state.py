from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.controller import records as r
from broker.controller.election import (
    alter_isr,
    on_broker_fenced,
    on_broker_unfenced,
    preferred_leader_changes,
)
from broker.controller.errors import InvalidReplicationFactor, StaleEpoch, StalePartitionEpoch
from broker.controller.heartbeats import BrokerHeartbeats
from broker.controller.new_partitions import add_partitions
from broker.controller.placement import assign_replicas
from broker.controller.state import MetadataState, replay


def cluster(n: int = 3, racks: list[str | None] | None = None) -> MetadataState:
    s = MetadataState()
    for i in range(n):
        s.apply(r.RegisterBroker(i + 1, "127.0.0.1", 9092 + i, racks[i] if racks else None))
        s.apply(r.BrokerHeartbeat(i + 1, 1000))
    return s


def create(s: MetadataState, name: str, partitions: int, rf: int) -> None:
    s.apply(r.CreateTopic(name, f"id-{name}", assign_replicas(s.live_brokers(), partitions, rf)))


def apply_all(s: MetadataState, changes: list[r.PartitionChange]) -> None:
    for c in changes:
        s.apply(c)


def test_replication_factor_larger_than_live_brokers_is_refused() -> None:
    s = cluster(3)
    s.apply(r.FenceBroker(3))
    with pytest.raises(InvalidReplicationFactor, match="larger than the 2 live brokers") as e:
        create(s, "t", 1, 3)
    assert e.value.kafka_error == "INVALID_REPLICATION_FACTOR"


def test_placement_spreads_leaders_and_racks() -> None:
    s = cluster(6, ["a", "a", "b", "b", "c", "c"])
    racks = {b.broker_id: b.rack for b in s.live_brokers()}
    assignment = assign_replicas(s.live_brokers(), 6, 3)
    assert sorted(reps[0] for reps in assignment) == [1, 2, 3, 4, 5, 6]  # each broker leads one
    for reps in assignment:
        assert len(set(reps)) == 3 and len({racks[b] for b in reps}) == 3


def test_failover_elects_from_isr_and_goes_offline_without_unclean() -> None:
    s = cluster(3)
    create(s, "t", 3, 3)
    p0 = s.partition("t", 0)
    assert p0 is not None and p0.leader == p0.replicas[0]
    old_leader = p0.leader
    s.apply(r.FenceBroker(old_leader))
    apply_all(s, on_broker_fenced(s, old_leader))
    p0 = s.partition("t", 0)
    assert p0 is not None and p0.leader == p0.replicas[1] and p0.leader_epoch == 1
    assert old_leader not in p0.isr
    # ISR shrinks to the leader only, then the leader dies: offline, no unclean election.
    s.apply(alter_isr(s, "t", 0, p0.leader, p0.leader_epoch, p0.partition_epoch, (p0.leader,)))
    lone = p0.leader
    s.apply(r.FenceBroker(lone))
    apply_all(s, on_broker_fenced(s, lone))
    p0 = s.partition("t", 0)
    assert p0 is not None and p0.leader == -1 and p0.isr == (lone,)
    # The last ISR member comes back: it leads again with a new epoch.
    s.apply(r.UnfenceBroker(lone))
    apply_all(s, on_broker_unfenced(s, lone))
    p0 = s.partition("t", 0)
    assert p0 is not None and p0.leader == lone and p0.leader_epoch == 3


def test_unclean_election_when_enabled() -> None:
    s = cluster(2)
    create(s, "t", 1, 2)
    p = s.partition("t", 0)
    assert p is not None
    s.apply(alter_isr(s, "t", 0, p.leader, 0, p.partition_epoch, (p.leader,)))
    s.apply(r.FenceBroker(p.leader))
    apply_all(s, on_broker_fenced(s, p.leader, unclean=True))
    q = s.partition("t", 0)
    assert q is not None and q.leader == p.replicas[1] and q.isr == (p.replicas[1],)


def test_alter_isr_with_stale_epoch_is_fenced() -> None:
    s = cluster(3)
    create(s, "t", 1, 3)
    p = s.partition("t", 0)
    assert p is not None
    s.apply(r.FenceBroker(p.leader))
    apply_all(s, on_broker_fenced(s, p.leader))
    with pytest.raises(StaleEpoch) as e:
        alter_isr(s, "t", 0, p.leader, 0, p.partition_epoch, (p.leader,))
    assert e.value.kafka_error == "FENCED_LEADER_EPOCH"


def test_alter_isr_made_against_an_older_partition_state_is_refused() -> None:
    """Kafka's INVALID_UPDATE_VERSION: a proposal that reaches the controller after another change of the
    partition (here: an earlier proposal of the same leader) must not overwrite it."""
    s = cluster(3)
    create(s, "t", 1, 3)
    p = s.partition("t", 0)
    assert p is not None
    shrink = alter_isr(s, "t", 0, p.leader, p.leader_epoch, p.partition_epoch, (p.leader, p.replicas[1]))
    s.apply(shrink)
    with pytest.raises(StalePartitionEpoch) as e:
        alter_isr(s, "t", 0, p.leader, p.leader_epoch, p.partition_epoch, (p.leader,))
    assert e.value.kafka_error == "INVALID_UPDATE_VERSION"
    q = s.partition("t", 0)
    assert q is not None and q.isr == (p.leader, p.replicas[1])
    s.apply(alter_isr(s, "t", 0, q.leader, q.leader_epoch, q.partition_epoch, (q.leader,)))


def test_preferred_leader_election_moves_leadership_back() -> None:
    s = cluster(3)
    create(s, "t", 1, 3)
    p = s.partition("t", 0)
    assert p is not None
    s.apply(r.FenceBroker(p.replicas[0]))
    apply_all(s, on_broker_fenced(s, p.replicas[0]))
    s.apply(r.UnfenceBroker(p.replicas[0]))
    assert preferred_leader_changes(s) == []  # not in the ISR yet
    q = s.partition("t", 0)
    assert q is not None
    s.apply(alter_isr(s, "t", 0, q.leader, q.leader_epoch, q.partition_epoch, (*q.isr, p.replicas[0])))
    apply_all(s, preferred_leader_changes(s))
    q = s.partition("t", 0)
    assert q is not None and q.leader == p.replicas[0]


def test_heartbeats_find_expired_brokers_and_a_new_term_gives_everyone_a_session() -> None:
    beats = BrokerHeartbeats()
    beats.reset(now_ms=0)
    beats.touch(1, 9000)
    beats.touch(2, 9000)
    beats.touch(2, 4000)  # a late, older heartbeat never moves the time back
    assert beats.expired([1, 2, 3], now_ms=10_000, session_timeout_ms=6000) == [3]
    assert beats.expired([1, 2, 3], now_ms=15_001, session_timeout_ms=6000) == [1, 2, 3]
    beats.reset(now_ms=15_000)
    assert beats.expired([1, 2, 3], now_ms=20_000, session_timeout_ms=6000) == []


def test_the_first_create_of_a_topic_name_wins_on_replay() -> None:
    log: list[r.Record] = [
        r.RegisterBroker(1, "127.0.0.1", 9092),
        r.CreateTopic("t", "id-first", ((1,),)),
        r.CreateTopic("t", "id-second", ((1,), (1,))),  # a racing create that reached the log too
    ]
    state = replay(log)
    assert state.topics["t"].topic_id == "id-first" and len(state.topics["t"].partitions) == 1


def test_records_round_trip_and_bad_kind_is_named() -> None:
    rec = r.CreateTopic("t", "id", ((1, 2), (2, 1)), (("retention.ms", "1"),))
    assert r.from_dict(r.to_dict(rec)) == rec
    with pytest.raises(ValueError, match="unknown metadata record kind 'nope'"):
        r.from_dict({"kind": "nope"})


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["fence", "unfence", "create", "grow", "delete", "config", "preferred"]),
                          st.integers(1, 4)), max_size=30))
def test_replay_is_deterministic_and_isr_invariants_hold(ops: list[tuple[str, int]]) -> None:
    s = cluster(4)
    log: list[r.Record] = [rec for i in range(4) for rec in (
        r.RegisterBroker(i + 1, "127.0.0.1", 9092 + i, None), r.BrokerHeartbeat(i + 1, 1000))]
    n = 0

    def emit(rec: r.Record) -> None:
        log.append(rec)
        s.apply(rec)

    for kind, arg in ops:
        live = {b.broker_id for b in s.live_brokers()}
        if kind == "fence" and arg in live:
            emit(r.FenceBroker(arg))
            for c in on_broker_fenced(s, arg):
                emit(c)
        elif kind == "unfence" and arg not in live:
            emit(r.UnfenceBroker(arg))
            for c in on_broker_unfenced(s, arg):
                emit(c)
        elif kind == "create":
            n += 1
            try:
                emit(r.CreateTopic(f"t{n}", f"id{n}", assign_replicas(s.live_brokers(), 2, min(arg, 3))))
            except InvalidReplicationFactor:
                assert min(arg, 3) > len(live)
        elif kind == "grow" and s.topics:
            try:
                grown = sorted(s.topics)[-1]
                emit(add_partitions(s, grown, len(s.topics[grown].partitions) + arg))
            except InvalidReplicationFactor:
                assert len(s.topics[grown].partitions[0].replicas) > len(live)
        elif kind == "delete" and s.topics:
            emit(r.DeleteTopic(sorted(s.topics)[0]))
        elif kind == "config":
            emit(r.ConfigChange(f"broker:{arg}", "k", str(arg)))
        elif kind == "preferred":
            for c in preferred_leader_changes(s):
                emit(c)
        live = {b.broker_id for b in s.live_brokers()}
        for t in s.topics.values():
            for p in t.partitions:
                assert p.isr and set(p.isr) <= set(p.replicas)  # ISR never empty, only replicas
                assert p.leader == -1 or (p.leader in p.isr and p.leader in live)
    assert replay([r.from_dict(r.to_dict(x)) for x in log]).snapshot() == s.snapshot()
