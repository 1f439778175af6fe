"""The pipeline's log output: `--log-format text|json` on stderr, the same for the JVM's lines.

JSON lines carry `ts` (ISO-8601, UTC, milliseconds), `level`, `logger`, `msg` and every extra field
the record was given (a micro-batch line's `batch_id`, `rows`, `offsets_behind`, ...), one object per
line as log shippers (Fluent Bit, Vector, Loki's promtail) read them.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

FORMATS = ("text", "json")
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname, "logger": record.name, "msg": record.getMessage(),
        }
        entry.update({key: value for key, value in vars(record).items() if key not in _STANDARD})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


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
    handler.setFormatter(JsonFormatter() if log_format == "json"
                         else logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    logging.getLogger("py4j").setLevel(logging.INFO if verbose else logging.WARNING)
    logging.getLogger("spark.jvm").setLevel(logging.DEBUG if verbose else logging.WARNING)
    logging.getLogger("spark.launcher").setLevel(logging.DEBUG if verbose else logging.WARNING)
