"""Error decisions: retriable errors back off exponentially with jitter; others, or stuck ones, fail."""

import random

from changefeed.lifecycle.state import State, decide_on_error
from sink.retry import Backoff

BACKOFF = Backoff(initial=10.0, maximum=600.0)


def test_retriable_errors_back_off_from_10s_to_10min_with_jitter() -> None:
    rng = random.Random(7)
    delays = []
    count, first = 0, None
    for _ in range(12):
        d = decide_on_error(retriable=True, now=1000.0, retry_count=count, first_error_at=first,
                            stuck_duration_s=1e9, backoff=BACKOFF, rng=rng)
        assert d.state is State.WARNING and d.next_retry is not None
        delays.append(d.next_retry - 1000.0)
        count, first = d.retry_count, d.first_error_at
    assert 8.0 <= delays[0] <= 12.0
    assert 16.0 <= delays[1] <= 24.0
    assert all(480.0 <= x <= 720.0 for x in delays[8:])  # capped at 10 min (+/- 20 % jitter)
    assert len({round(x, 6) for x in delays[8:]}) > 1  # jitter: not in lockstep


def test_non_retriable_fails_at_once() -> None:
    d = decide_on_error(retriable=False, now=5.0, retry_count=0, first_error_at=None, stuck_duration_s=60,
                        backoff=BACKOFF)
    assert d.state is State.FAILED and d.next_retry is None


def test_stuck_beyond_the_duration_fails() -> None:
    d = decide_on_error(retriable=True, now=100.0, retry_count=3, first_error_at=30.0, stuck_duration_s=60,
                        backoff=BACKOFF)
    assert d.state is State.FAILED
    d = decide_on_error(retriable=True, now=80.0, retry_count=3, first_error_at=30.0, stuck_duration_s=60,
                        backoff=BACKOFF)
    assert d.state is State.WARNING and d.retry_count == 4
