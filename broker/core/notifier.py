"""Wakes long-polling fetches when any partition gets new data."""

from __future__ import annotations

import asyncio
import contextlib


class DataNotifier:
    def __init__(self) -> None:
        self._waiter: asyncio.Future[None] | None = None

    def notify(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    async def wait(self, timeout: float) -> None:
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._waiter), timeout)
