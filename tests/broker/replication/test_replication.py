from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.replication.errors import (
    FencedLeaderEpoch,
    NotEnoughReplicas,
    NotEnoughReplicasAfterAppend,
    UnknownLeaderEpoch,
)
from broker.replication.leader_epochs import (
    EpochEnd,
    LeaderEpochCache,
    diverging_epoch,
    truncate_on_diverging,
    truncation_offset,
)
from broker.replication.partition import PartitionReplication
from broker.replication.purgatory import Delayed, Purgatory


def part(**kw: int) -> PartitionReplication:
    return PartitionReplication(leader_id=1, leader_epoch=0, replicas=(1, 2, 3), isr=(1, 2, 3),
                                min_insync_replicas=2, replica_lag_time_max_ms=1000, **kw)


def test_high_watermark_is_min_leo_over_isr_and_never_goes_back() -> None:
    p = part()
    p.on_leader_append(10, 0)
    assert p.high_watermark == 0
    p.on_follower_fetch(2, 10, 5)
    assert p.high_watermark == 0  # replica 3 is in the ISR and at 0
    assert p.on_follower_fetch(3, 7, 5)
    assert p.high_watermark == 7
    p.apply_leader_and_isr(0, (1, 2), 1)
    assert p.high_watermark == 10
    p.on_follower_fetch(2, 3, 6)  # a stale fetch offset never moves the HW back
    assert p.high_watermark == 10


def test_isr_shrinks_after_lag_time_and_expands_on_catch_up() -> None:
    p = part()
    p.on_leader_append(5, 0)
    p.on_follower_fetch(2, 5, 100)
    p.on_follower_fetch(3, 5, 100)
    p.on_leader_append(9, 200)
    p.on_follower_fetch(2, 9, 900)
    assert p.pending_isr(1000) is None  # replica 3 lagging for 900 ms < 1000 ms
    assert p.pending_isr(1101) == (1, 2)
    p.apply_leader_and_isr(0, (1, 2), 2)
    assert p.high_watermark == 9
    p.on_follower_fetch(3, 8, 1200)
    assert p.pending_isr(1200) is None  # not yet at the HW
    p.on_follower_fetch(3, 9, 1300)
    assert p.pending_isr(1300) == (1, 2, 3)


def test_min_insync_replicas_refuses_acks_all_before_append() -> None:
    p = part()
    p.apply_leader_and_isr(0, (1,), 3)
    with pytest.raises(NotEnoughReplicas, match=r"fewer than min\.insync\.replicas=2") as e:
        p.check_produce(acks=-1)
    assert e.value.kafka_error == "NOT_ENOUGH_REPLICAS" and e.value.retriable
    p.check_produce(acks=1)  # acks=1 does not need the ISR


def test_epoch_checks() -> None:
    p = part()
    p.apply_leader_and_isr(3, (1, 2, 3), 4)
    p.check_epoch(3)
    p.check_epoch(-1)
    with pytest.raises(FencedLeaderEpoch):
        p.check_epoch(2)
    with pytest.raises(UnknownLeaderEpoch):
        p.check_epoch(4)
    with pytest.raises(FencedLeaderEpoch):
        p.apply_leader_and_isr(2, (1,), 5)


def test_purgatory_completes_acks_all_on_hw_and_times_out() -> None:
    p = part()
    purg: Purgatory[str] = Purgatory()
    p.on_leader_append(10, 0)
    a = Delayed(keys=(("t", 0),), deadline_ms=500, ready=lambda: p.acks_all_satisfied(10), payload="a")
    b = Delayed(keys=(("t", 0),), deadline_ms=100, ready=lambda: p.acks_all_satisfied(20), payload="b")
    assert not purg.try_complete_else_watch(a)
    assert not purg.try_complete_else_watch(b)
    p.on_follower_fetch(2, 10, 1)
    assert purg.check(("t", 0)) == []  # replica 3 still behind
    assert [op.payload for op in purg.expire(100)] == ["b"]
    p.on_follower_fetch(3, 10, 2)
    assert [op.payload for op in purg.check(("t", 0))] == ["a"]
    assert len(purg) == 0 and purg.expire(10_000) == []
    ready = Delayed(keys=("x",), deadline_ms=1, ready=lambda: True, payload="now")
    assert purg.try_complete_else_watch(ready) and ready.done


def cache(epochs: list[int]) -> LeaderEpochCache:
    c = LeaderEpochCache()
    for offset, e in enumerate(epochs):
        c = c.assign(e, offset)
    return c


def test_offset_for_leader_epoch_and_diverging_epoch() -> None:
    leader = cache([0, 0, 2, 2, 2])
    assert leader.end_offset_for(0, 5) == EpochEnd(0, 2)
    assert leader.end_offset_for(1, 5) == EpochEnd(0, 2)
    assert leader.end_offset_for(2, 5) == EpochEnd(2, 5)
    assert leader.end_offset_for(-5, 5).epoch == -1
    assert diverging_epoch(leader, 5, fetch_epoch=1, fetch_offset=4) == EpochEnd(0, 2)
    assert diverging_epoch(leader, 5, fetch_epoch=2, fetch_offset=4) is None
    assert truncation_offset(cache([0, 0, 1, 1]), 4, leader, 5) == 2


@st.composite
def diverged_logs(draw: st.DrawFn) -> tuple[list[int], list[int], int]:
    """A leader log and a follower log (epoch per offset) sharing exactly `k` offsets."""
    epochs = sorted(set(draw(st.lists(st.integers(0, 12), min_size=1, max_size=6))))
    leader = [e for e in epochs for _ in range(draw(st.integers(1, 3)))]
    k = draw(st.integers(0, len(leader)))
    leader_set = set(leader)
    base = leader[k - 1] if k else -1
    # The follower's suffix: more of the last common epoch only if the leader moved on right there,
    # then epochs the leader never had (a follower that led once without replicating).
    suffix: list[int] = []
    if k and (k == len(leader) or leader[k] != base):
        suffix += [base] * draw(st.integers(0, 2))
    own = sorted(set(draw(st.lists(st.integers(base + 1, 14), max_size=3))) - leader_set)
    for e in own:
        suffix += [e] * draw(st.integers(1, 2))
    follower = leader[:k] + suffix
    return leader, follower, k


@settings(max_examples=60, deadline=None)
@given(diverged_logs())
def test_follower_truncates_exactly_to_the_common_prefix(logs: tuple[list[int], list[int], int]) -> None:
    leader, follower, k = logs
    offset = truncation_offset(cache(follower), len(follower), cache(leader), len(leader))
    assert offset == min(k, len(follower))


def test_acks_all_after_isr_shrink_is_not_enough_replicas_after_append() -> None:
    p = part()
    p.on_leader_append(5, 0)
    assert not p.acks_all_done(5)
    p.apply_leader_and_isr(0, (1,), 6)  # followers dropped out: the HW jumps to the leader's LEO
    with pytest.raises(NotEnoughReplicasAfterAppend) as e:
        p.acks_all_done(5)
    assert e.value.kafka_error == "NOT_ENOUGH_REPLICAS_AFTER_APPEND"


def test_purgatory_completes_a_waiting_fetch_when_the_leader_appends() -> None:
    p = part()
    p.on_leader_append(4, 0)
    purg: Purgatory[str] = Purgatory()
    fetch = Delayed(keys=(("t", 0),), deadline_ms=500, ready=lambda: p.leader_leo > 4, payload="fetch@4")
    assert not purg.try_complete_else_watch(fetch)
    assert purg.check(("t", 1)) == []  # another partition's change does not complete it
    p.on_leader_append(6, 10)
    assert [op.payload for op in purg.check_all([("t", 0), ("t", 1)])] == ["fetch@4"]
    assert not fetch.timed_out


def test_follower_that_keeps_up_with_steady_writes_counts_as_caught_up() -> None:
    """Kafka's rule: a follower fetching at the leader's LEO of its previous fetch is caught up then."""
    p = PartitionReplication(1, 0, (1, 2), (1, 2), min_insync_replicas=2, replica_lag_time_max_ms=1000)
    leo = 0
    for now in range(0, 5000, 100):
        p.on_follower_fetch(2, leo, now)  # the follower has what the leader had at its last fetch
        leo += 10
        p.on_leader_append(leo, now)  # ...and the leader is always a little ahead again
    assert p.pending_isr(5000) is None
    p.check_produce(-1, 5000)


def test_check_produce_discounts_followers_that_stopped_fetching() -> None:
    p = PartitionReplication(1, 0, (1, 2, 3), (1, 2, 3), min_insync_replicas=2, replica_lag_time_max_ms=1000)
    p.on_leader_append(10, 0)
    p.on_follower_fetch(2, 10, 0)
    p.on_follower_fetch(3, 10, 0)
    p.check_produce(-1, 900)  # everyone fetched within the lag time
    p.on_follower_fetch(2, 10, 1500)
    p.check_produce(-1, 1800)  # 3 is silent, but 1 and 2 still make two
    with pytest.raises(NotEnoughReplicas):
        p.check_produce(-1, 2600)  # 2 silent as well: the ISR (not yet shrunk) would never acknowledge
    p.check_produce(1, 2600)  # acks=1 does not care


def test_truncate_on_diverging_is_the_rule_the_fetcher_runs() -> None:
    """The three cases of the follower's rule; the last is where the fetcher's own rule (before issue 18) kept
    a record from an epoch the leader never had: follower [epoch 1 at offset 0], leader [epoch 0 at 0]."""
    follower = cache([0, 0, 1, 1, 3])  # epochs 0@0, 1@2, 3@4; log end 5
    assert truncate_on_diverging(follower, 5, EpochEnd(1, 3)) == 3  # both had epoch 1: the smaller end
    assert truncate_on_diverging(follower, 5, EpochEnd(2, 5)) == 4  # never had 2: our end of epoch 1
    assert truncate_on_diverging(cache([1]), 1, EpochEnd(0, 1)) == 0  # no epoch that old: keep nothing
    assert truncation_offset(cache([1]), 1, cache([0]), 1) == 0


def test_the_low_watermark_is_the_lowest_log_start_over_the_leader_and_live_followers() -> None:
    p = PartitionReplication(leader_id=1, leader_epoch=0, replicas=(1, 2, 3), isr=(1, 2, 3))
    assert p.on_follower_fetch(2, 10, 1, log_start=5)  # a moved log start counts as progress
    p.on_follower_fetch(3, 10, 1, log_start=0)
    assert p.low_watermark(7, live={1, 2, 3}) == 0
    assert p.low_watermark(7, live={1, 2}) == 5  # a follower on a fenced broker does not hold it back
    assert not p.on_follower_fetch(3, 10, 2, log_start=-1)  # not told: kept
    p.on_follower_fetch(3, 10, 3, log_start=9)
    assert p.low_watermark(7, live={1, 2, 3}) == 5


def test_a_proposed_joiner_holds_the_high_watermark_until_the_proposal_is_resolved() -> None:
    """Kafka's maximal ISR (KIP-497): the controller may have let 3 in already, so the leader must not
    acknowledge what 3 lacks; a repeated metadata update of the same partition epoch resolves nothing."""
    p = PartitionReplication(1, 0, (1, 2, 3), (1, 2), min_insync_replicas=2, partition_epoch=4)
    p.on_leader_append(10, 0)
    p.on_follower_fetch(3, 10, 0)  # caught up: the leader proposes it
    p.propose_isr((1, 2, 3))
    p.on_leader_append(20, 1)
    p.on_follower_fetch(2, 20, 1)
    assert p.high_watermark == 10  # 2 has 20, the proposed 3 only 10
    p.apply_leader_and_isr(0, (1, 2), 4)  # the same committed state again: still unresolved
    assert p.high_watermark == 10
    p.on_follower_fetch(3, 20, 2)
    assert p.high_watermark == 20
    p.on_leader_append(30, 3)
    p.on_follower_fetch(2, 30, 3)
    p.proposal_refused()  # e.g. 3 was fenced meanwhile: nothing changed on the controller
    assert p.maximal_isr() == {1, 2}
    p.on_follower_fetch(2, 30, 4)
    assert p.high_watermark == 30
    p.propose_isr((1, 2, 3))
    p.apply_leader_and_isr(0, (1, 2, 3), 5)  # applied: the committed ISR now holds it
    assert p.proposed_isr is None and p.maximal_isr() == {1, 2, 3}
