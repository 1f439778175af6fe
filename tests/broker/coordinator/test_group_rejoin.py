"""Kafka's rule for a known member's JoinGroup (ClassicGroup doCurrentMemberJoinGroup): unchanged protocols
from a follower of a Stable group get the current generation back, no new rebalance."""

from __future__ import annotations

import asyncio

from broker.coordinator.groups import GroupCoordinator, GroupState

PROTOCOLS = [("range", b"\x00\x01")]


async def _stable_group() -> tuple[GroupCoordinator, str, str]:
    coordinator = GroupCoordinator(initial_rebalance_delay_ms=0, min_session_timeout_ms=1000,
                                   max_session_timeout_ms=60_000)

    async def join(member_id: str = "") -> str:
        result = await coordinator.join("g", member_id, None, "c", "/127.0.0.1", 10_000, 10_000, "consumer",
                                        PROTOCOLS)
        return result.member_id

    first = await join()
    await coordinator.sync("g", 1, first, {first: b"a"})
    second_task = asyncio.ensure_future(join())
    await asyncio.sleep(0)
    rejoin_first = asyncio.ensure_future(join(first))  # the leader rejoins for the rebalance
    second, _ = await asyncio.gather(second_task, rejoin_first)
    leader = coordinator.groups["g"].leader_id
    assert leader is not None
    await asyncio.gather(coordinator.sync("g", 2, leader, {first: b"a", second: b"b"}),
                         coordinator.sync("g", 2, second if leader == first else first, {}))
    return coordinator, leader, second if leader == first else first


def test_a_follower_rejoining_unchanged_gets_the_current_generation() -> None:
    async def scenario() -> None:
        coordinator, _, follower = await _stable_group()
        group = coordinator.groups["g"]
        assert group.state is GroupState.STABLE and group.generation == 2
        again = await coordinator.join("g", follower, None, "c", "/127.0.0.1", 10_000, 10_000, "consumer", PROTOCOLS)
        assert again.generation == 2 and again.members == ()
        assert group.state is GroupState.STABLE and group.generation == 2

    asyncio.run(scenario())


def test_a_follower_rejoining_with_new_protocols_starts_a_rebalance() -> None:
    async def scenario() -> None:
        coordinator, _, follower = await _stable_group()
        task = asyncio.ensure_future(coordinator.join("g", follower, None, "c", "/127.0.0.1", 10_000, 10_000,
                                                      "consumer", [("range", b"\x00\x02")]))
        await asyncio.sleep(0)
        assert coordinator.groups["g"].state is GroupState.PREPARING_REBALANCE
        task.cancel()

    asyncio.run(scenario())
