"""ReplicaManager: acks=all waits, leadership changes and the HW reads may see (no processes)."""

from __future__ import annotations

import asyncio

import pytest

from broker.cluster.replicas import ReplicaManager
from broker.replication.errors import NotEnoughReplicasAfterAppend, NotLeaderOrFollower

TP = ("t", 0)


def _leader(manager: ReplicaManager, leo: int = 0, isr: tuple[int, ...] = (1, 2, 3)) -> None:
    manager.become_leader(TP, 5, (1, 2, 3), isr, leo, min_insync=2, lag_ms=30_000, partition_epoch=5)


def test_acks_all_completes_when_every_isr_member_has_fetched_past_it() -> None:
    async def go() -> None:
        manager = ReplicaManager(1)
        _leader(manager)
        manager.on_leader_append(TP, 10)
        done = manager.wait_for_isr(TP, 10, 5000)
        manager.on_follower_fetch(TP, 2, 10, 0)
        assert not done.done() and manager.high_watermark(TP) == 0  # 3 has nothing yet
        manager.on_follower_fetch(TP, 3, 10, 0)
        await asyncio.wait_for(done, 1)
        assert manager.high_watermark(TP) == 10

    asyncio.run(go())


def test_isr_shrinking_below_min_insync_fails_waiting_writes_after_append() -> None:
    async def go() -> None:
        manager = ReplicaManager(1)
        _leader(manager)
        manager.on_leader_append(TP, 4)
        waiting = manager.wait_for_isr(TP, 4, 5000)
        _leader(manager, 4, isr=(1,))  # the controller accepted ISR [1]: HW jumps, but one copy only
        with pytest.raises(NotEnoughReplicasAfterAppend):
            await asyncio.wait_for(waiting, 1)

    asyncio.run(go())


def test_losing_leadership_fails_waiting_writes_and_keeps_the_last_hw() -> None:
    async def go() -> None:
        manager = ReplicaManager(1)
        _leader(manager)
        manager.on_leader_append(TP, 3)
        for follower in (2, 3):
            manager.on_follower_fetch(TP, follower, 3, 0)
        manager.on_leader_append(TP, 6)
        waiting = manager.wait_for_isr(TP, 6, 5000)
        manager.stop_leading(TP)
        with pytest.raises(NotLeaderOrFollower):
            await asyncio.wait_for(waiting, 1)
        assert manager.high_watermark(TP) == 3
        with pytest.raises(NotLeaderOrFollower):
            manager.leader(TP)

    asyncio.run(go())


def test_a_new_leader_starts_from_the_hw_it_heard_as_a_follower() -> None:
    manager = ReplicaManager(2)
    manager.follower_hw[TP] = 7
    manager.become_leader(TP, 6, (1, 2, 3), (2, 3), 9, min_insync=2, lag_ms=30_000, partition_epoch=6)
    assert manager.high_watermark(TP) == 7  # 7..8 become visible once 3 confirms them
    manager.on_follower_fetch(TP, 3, 9, 0)
    assert manager.high_watermark(TP) == 9
