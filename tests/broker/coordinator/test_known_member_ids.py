"""KIP-394 in the coordinator (Kafka's ClassicGroup): a member id given out with MEMBER_ID_REQUIRED is pending
until its member joins with it or its session times out, and a rebalance completes only once none is pending."""

from __future__ import annotations

import asyncio
import time

import pytest

from broker.coordinator.groups import GroupCoordinator, GroupState, MemberIdRequired
from broker.protocol.errors import KafkaApiError

PROTOCOLS = [("range", b"\x00\x01")]
SESSION_MS = 1_000


def _coordinator() -> GroupCoordinator:
    return GroupCoordinator(initial_rebalance_delay_ms=0, min_session_timeout_ms=100, max_session_timeout_ms=60_000)


async def _join(coordinator: GroupCoordinator, member_id: str = "") -> str:
    result = await coordinator.join("g", member_id, None, "c", "/127.0.0.1", SESSION_MS, 10_000, "consumer",
                                    PROTOCOLS, require_known_member_id=True)
    return result.member_id


async def _given_id(coordinator: GroupCoordinator) -> str:
    with pytest.raises(MemberIdRequired) as raised:
        await _join(coordinator)
    return raised.value.member_id


async def _stable_with_one_member(coordinator: GroupCoordinator) -> str:
    first = await _join(coordinator, await _given_id(coordinator))
    await coordinator.sync("g", 1, first, {first: b"a"})
    assert coordinator.groups["g"].state is GroupState.STABLE
    return first


def test_a_rebalance_waits_for_a_pending_member_to_join() -> None:
    async def scenario() -> None:
        coordinator = _coordinator()
        first = await _stable_with_one_member(coordinator)
        second_id = await _given_id(coordinator)
        assert coordinator.groups["g"].state is GroupState.STABLE  # being given an id joins nothing
        rejoin = asyncio.ensure_future(_join(coordinator, first))  # the leader rejoins: a rebalance starts
        await asyncio.sleep(0.05)
        assert not rejoin.done(), "the rebalance completed while a member id was pending"
        second = await _join(coordinator, second_id)
        assert await rejoin == first and second == second_id
        group = coordinator.groups["g"]
        assert group.generation == 2 and set(group.members) == {first, second} and not group.pending

    asyncio.run(scenario())


def test_a_pending_id_that_never_joins_expires_after_its_session_and_the_rebalance_goes_on() -> None:
    async def scenario() -> None:
        coordinator = _coordinator()
        first = await _stable_with_one_member(coordinator)
        orphan = await _given_id(coordinator)
        rejoin = asyncio.ensure_future(_join(coordinator, first))
        await asyncio.sleep(0.05)
        assert coordinator.expire_sessions() == [] and not rejoin.done()
        await asyncio.sleep(SESSION_MS / 1000 + 0.1)
        assert coordinator.expire_sessions() == [orphan]
        assert await asyncio.wait_for(rejoin, 1) == first
        assert coordinator.groups["g"].generation == 2 and not coordinator.groups["g"].pending
        with pytest.raises(KafkaApiError) as raised:  # an expired id is no longer known
            await _join(coordinator, orphan)
        assert raised.value.code.name == "unknown_member_id"

    started = time.monotonic()
    asyncio.run(scenario())
    assert time.monotonic() - started < 5
