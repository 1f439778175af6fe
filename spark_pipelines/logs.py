"""The pipeline's log output: `--log-format text|json` on stderr, the same for the JVM's lines.

The formats are the broker's and the changefeed server's (lakefeed_common/logs.py). JSON lines carry `ts`
(ISO-8601, UTC, milliseconds), `level`, `logger`, `msg` and every extra field the record was given (a
micro-batch line's `batch_id`, `rows`, `offsets_behind`, ...), one object per line as log shippers (Fluent
Bit, Vector, Loki's promtail) read them.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from lakefeed_common.logs import formatter


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is at the moment (click's test runner swaps it)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def configure(log_format: str = "text", *, verbose: bool = False) -> None:
    """One handler on the root logger. Quiet by default: py4j's INFO chatter and the JVM's launch output
    (Ivy's resolution report) only with `verbose`, which also shows INFO lines of the JVM."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _Stderr)]:
        root.removeHandler(handler)
    handler = _Stderr()
    handler.setFormatter(formatter(log_format))  # the format the broker and the changefeed server write
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    logging.getLogger("py4j").setLevel(logging.INFO if verbose else logging.WARNING)
    # py4j logs an exception raised in our foreachBatch function with its whole trace ("An exception was
    # raised by the Python Proxy"); the runner prints its root cause on one line, the trace with --verbose.
    logging.getLogger("py4j.clientserver").setLevel(logging.INFO if verbose else logging.CRITICAL)
    logging.getLogger("spark.jvm").setLevel(logging.DEBUG if verbose else logging.WARNING)
    logging.getLogger("spark.launcher").setLevel(logging.DEBUG if verbose else logging.WARNING)
