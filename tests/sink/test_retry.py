"""Backoff grows exponentially within its bounds, and cancellation interrupts a sleep at once."""

import random
import threading
import time

from sink.retry import Backoff, Cancellation


def test_backoff_doubles_from_ten_seconds_to_ten_minutes_with_jitter() -> None:
    backoff = Backoff()
    rng = random.Random(7)
    delays = [backoff.delay(attempt, rng) for attempt in range(1, 12)]
    assert 8 <= delays[0] <= 12
    assert 16 <= delays[1] <= 24
    assert all(480 <= delay <= 720 for delay in delays[7:])
    assert len({round(d, 6) for d in delays[7:]}) > 1, "jitter must spread retries"


def test_cancel_wakes_a_sleeper_immediately() -> None:
    cancellation = Cancellation()
    threading.Timer(0.1, cancellation.cancel).start()
    started = time.monotonic()
    assert cancellation.sleep(30) is False
    assert time.monotonic() - started < 1.0
    assert cancellation.cancelled
