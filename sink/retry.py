"""Exponential backoff with jitter that a pause or remove can cancel at once."""

import random
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    initial: float = 10.0
    maximum: float = 600.0
    multiplier: float = 2.0
    jitter: float = 0.2  # +/- fraction of each delay, so many changefeeds do not retry in step

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Delay before retry number `attempt` (1-based)."""
        base = min(self.maximum, self.initial * self.multiplier ** max(0, attempt - 1))
        spread = base * self.jitter
        return max(0.0, base + (rng or random).uniform(-spread, spread))


class Cancellation:
    """A flag plus an interruptible sleep: `cancel()` wakes every waiter immediately."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def sleep(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True if it slept the whole time, False if cancelled."""
        return not self._event.wait(seconds)
