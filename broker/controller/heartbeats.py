"""Broker heartbeats, kept in the active controller's memory only (as Kafka's KRaft controller does).

Writing each heartbeat to the metadata log made the log - fsynced on every voter and replayed by every
broker - grow by one record per broker every few seconds forever. Only what a heartbeat decides
(fence, unfence) is a metadata change; the times themselves matter only to the controller that is
active now, and a newly active controller starts every broker with a full session.
"""

from __future__ import annotations

from collections.abc import Iterable


class BrokerHeartbeats:
    def __init__(self) -> None:
        self._last_ms: dict[int, int] = {}
        self._since_ms = 0

    def reset(self, now_ms: int) -> None:
        """A new term of activity: every broker is treated as heard from at `now_ms`."""
        self._last_ms.clear()
        self._since_ms = now_ms

    def touch(self, broker_id: int, now_ms: int) -> None:
        self._last_ms[broker_id] = max(now_ms, self._last_ms.get(broker_id, 0))

    def expired(self, broker_ids: Iterable[int], now_ms: int, session_timeout_ms: int) -> list[int]:
        """The given (unfenced) brokers not heard from within the session timeout, lowest id first."""
        return sorted(b for b in broker_ids if now_ms - self._last_ms.get(b, self._since_ms) > session_timeout_ms)
