"""Changefeed states and the decision taken on an error (sans-I/O: pure functions of time and error).

    normal   -- running
    stopped  -- paused by the operator (pause, or update in progress)
    warning  -- a retriable error; retried with exponential backoff and jitter (10 s .. 10 min)
    failed   -- a non-retriable error, or errors without progress for changefeed-error-stuck-duration
    finished -- the target position was reached
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass

from sink.retry import Backoff


class State(enum.StrEnum):
    NORMAL = "normal"
    STOPPED = "stopped"
    WARNING = "warning"
    FAILED = "failed"
    FINISHED = "finished"


# States in which the owner should have a runner going (warning: after its next retry time).
RUNNING_STATES = (State.NORMAL, State.WARNING)
# States that only an operator leaves (resume, update, remove).
RESTING_STATES = (State.STOPPED, State.FAILED, State.FINISHED)


@dataclass(frozen=True)
class ErrorDecision:
    state: State
    retry_count: int
    next_retry: float | None  # unix seconds; None when not retrying
    first_error_at: float  # start of the current run of errors without progress


def decide_on_error(
    *,
    retriable: bool,
    now: float,
    retry_count: int,
    first_error_at: float | None,
    stuck_duration_s: float,
    backoff: Backoff,
    rng: random.Random | None = None,
) -> ErrorDecision:
    """What to do after a runner died with an error.

    `first_error_at` is when the current series of errors began (None if this is the first): the
    series is reset by progress (the owner clears it when the checkpoint moves), so a changefeed
    that keeps failing without progress for longer than the stuck duration becomes failed.
    """
    started = now if first_error_at is None else first_error_at
    if not retriable or now - started >= stuck_duration_s:
        return ErrorDecision(State.FAILED, retry_count, None, started)
    attempt = retry_count + 1
    return ErrorDecision(State.WARNING, attempt, now + backoff.delay(attempt, rng), started)
