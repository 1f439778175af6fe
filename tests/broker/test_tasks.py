"""cancel_and_wait: shutdown never waits without a limit, even on a task that swallowed its cancellation."""

from __future__ import annotations

import asyncio
import logging

import pytest

from broker.tasks import cancel_and_wait


async def _swallows_one_cancel(seen: list[str]) -> None:
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        seen.append("swallowed")  # what Python 3.11's wait_for can do by accident
    await asyncio.sleep(60)


def test_a_task_that_swallows_its_cancellation_is_reported_and_cancelled_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> tuple[list[str], asyncio.Task[None], asyncio.Task[None], float]:
        seen: list[str] = []
        stubborn = asyncio.create_task(_swallows_one_cancel(seen), name="stubborn")
        polite = asyncio.create_task(asyncio.sleep(60), name="polite")
        await asyncio.sleep(0)
        started = asyncio.get_running_loop().time()
        await cancel_and_wait([stubborn, polite], 0.2, "test shutdown")
        elapsed = asyncio.get_running_loop().time() - started
        await asyncio.sleep(0)  # let the second cancellation land
        return seen, stubborn, polite, elapsed

    with caplog.at_level(logging.WARNING, logger="broker.tasks"):
        seen, stubborn, polite, elapsed = asyncio.run(scenario())
    assert seen == ["swallowed"]
    assert elapsed < 2
    assert polite.cancelled() and stubborn.cancelled()
    assert "test shutdown: 1 task(s) did not stop within 0.2 s: stubborn" in caplog.text


def test_nothing_to_wait_for_returns_at_once() -> None:
    async def scenario() -> None:
        done = asyncio.create_task(asyncio.sleep(0))
        await done
        await cancel_and_wait([done], 5.0, "idle")

    asyncio.run(scenario())
