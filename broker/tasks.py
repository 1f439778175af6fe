"""Stopping background tasks in bounded time.

Python 3.11's `asyncio.wait_for` can lose a cancellation when its inner future finishes at the same
moment (fixed in 3.12), so a `while True` loop that was cancelled may keep running. Loops therefore
also check a stop flag, and shutdown never waits on a task without a time limit: a broker that does
not exit after SIGTERM is worse than one that logs what it left behind.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger("broker.tasks")


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]], timeout_s: float, what: str) -> None:
    """Cancel `tasks` and wait up to `timeout_s` for them to end; log the ones that did not."""
    pending = [task for task in tasks if not task.done()]
    for task in pending:
        task.cancel()
    if not pending:
        return
    _, still_running = await asyncio.wait(pending, timeout=timeout_s)
    for task in still_running:
        task.cancel()  # once more, in case the first cancellation was swallowed
    if still_running:
        log.warning("%s: %d task(s) did not stop within %g s: %s", what, len(still_running), timeout_s,
                    ", ".join(sorted(task.get_name() for task in still_running)))
