"""Delayed operations (Kafka's purgatory): acks=all produces waiting for the high watermark and
fetches waiting for bytes, completed when a watched key changes or expired by a deadline.

Sans-I/O: `check(key)` is called after a HW/LEO change of that partition, `expire(now_ms)` from a
timer; each returns the operations that finished so the caller can send their responses.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(eq=False)
class Delayed(Generic[T]):
    """One waiting request: `ready()` says whether it can complete; `payload` is the caller's."""

    keys: tuple[Hashable, ...]
    deadline_ms: int
    ready: Callable[[], bool]
    payload: T
    done: bool = False
    timed_out: bool = False


@dataclass
class Purgatory(Generic[T]):
    watchers: dict[Hashable, list[Delayed[T]]] = field(default_factory=dict)
    _timeouts: list[tuple[int, int, Delayed[T]]] = field(default_factory=list)
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    def try_complete_else_watch(self, op: Delayed[T]) -> bool:
        """Complete `op` now if it is ready (returns True); else park it under its keys."""
        if op.ready():
            op.done = True
            return True
        for k in op.keys:
            self.watchers.setdefault(k, []).append(op)
        heapq.heappush(self._timeouts, (op.deadline_ms, next(self._seq), op))
        return False

    def check(self, key: Hashable) -> list[Delayed[T]]:
        finished = []
        waiting = self.watchers.pop(key, [])
        still = []
        for op in waiting:
            if op.done:
                continue
            if op.ready():
                op.done = True
                finished.append(op)
            else:
                still.append(op)
        if still:
            self.watchers[key] = still
        return finished

    def check_all(self, keys: Iterable[Hashable]) -> list[Delayed[T]]:
        return [op for k in keys for op in self.check(k)]

    def expire(self, now_ms: int) -> list[Delayed[T]]:
        out = []
        while self._timeouts and self._timeouts[0][0] <= now_ms:
            _, _, op = heapq.heappop(self._timeouts)
            if not op.done:
                op.done = op.timed_out = True
                out.append(op)
        if out:  # drop expired operations from the watch lists
            for k in list(self.watchers):
                self.watchers[k] = [o for o in self.watchers[k] if not o.done]
                if not self.watchers[k]:
                    del self.watchers[k]
        return out

    def __len__(self) -> int:
        return sum(1 for _, _, op in self._timeouts if not op.done)
