"""The broker-wide budget of bytes held by requests being read and handled (`queued.max.request.bytes`).

After Apache Kafka's KIP-72 (`SimpleMemoryPool`, non-strict): a connection reserves a request's
announced size before reading its body; while the budget is spent, connections that need a new
reservation are muted - their sockets are not read, so TCP back-pressure reaches the clients - and they
resume, oldest first, when a request's bytes are released. As in Kafka's non-strict pool a reservation
succeeds whenever any budget is left, so a single request as large as socket.request.max.bytes always
gets through and the bytes held stay below capacity + socket.request.max.bytes.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

log = logging.getLogger("broker.server")


class MemoryPool:
    def __init__(self, capacity: int) -> None:
        """`capacity` <= 0 means unbounded, as Kafka's queued.max.request.bytes=-1."""
        self.capacity = capacity
        self.available = capacity
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def bounded(self) -> bool:
        return self.capacity > 0

    @property
    def muted(self) -> int:
        """How many connections wait for memory (their sockets are not being read)."""
        return len(self._waiters)

    async def reserve(self, size: int) -> None:
        if not self.bounded:
            return
        if self.available <= 0 or self._waiters:  # first come, first served
            if not self._waiters:
                log.info("queued.max.request.bytes=%d reached: reading pauses until requests finish", self.capacity)
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                self._wake()  # a cancelled connection passes its turn on
                raise
        self.available -= size
        self._wake()

    def release(self, size: int) -> None:
        if self.bounded:
            self.available += size
            self._wake()

    def _wake(self) -> None:
        # One at a time: the woken connection reserves, then wakes the next if budget is still left.
        if self.available > 0 and self._waiters:
            self._waiters.popleft().set_result(None)
