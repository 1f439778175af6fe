"""One log format for every Lakefeed process: `--log-format text|json` on broker, changefeed and spark-pipeline.

Each line carries the same things in both formats: an ISO-8601 UTC timestamp with milliseconds, the level,
the logger name, the message, then the record's structured fields (`log.info("listening", extra={"port": 9092})`)
and an exception trace when there is one:

    text: 2026-11-24T00:35:49.123Z INFO broker.server: listening host=127.0.0.1 port=9092
    json: {"ts":"2026-11-24T00:35:49.123Z","level":"info","logger":"broker.server","msg":"listening",
           "host":"127.0.0.1","port":9092}

librdkafka's own log lines (the `%3|...|FAIL|...` lines it writes to stderr by default) come through the
logger `librdkafka` (`LIBRDKAFKA_LOGGER`): confluent-kafka forwards them to the Python logger given as the
client's `logger` setting, so they take this format and level filtering too.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, Final, Literal

import orjson

LogFormat = Literal["text", "json"]
LOG_FORMATS: Final = ("text", "json")
LIBRDKAFKA_LOGGER: Final = logging.getLogger("librdkafka")

# Attributes every LogRecord has; anything else on a record came from `extra=` and is a field.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


def iso_timestamp(created: float) -> str:
    """`created` (epoch seconds) as ISO-8601 UTC with milliseconds, e.g. 2026-11-24T00:35:49.123Z."""
    seconds = int(created)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int((created - seconds) * 1000):03d}Z"


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """The structured fields a record carries (its `extra=` values)."""
    return {k: v for k, v in vars(record).items() if k not in _STANDARD}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, the record's fields, exc."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": iso_timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update(fields(record))
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class TextFormatter(logging.Formatter):
    """`<ts> <LEVEL> <logger>: <message> key=value ...`, then the trace on the next lines."""

    def format(self, record: logging.LogRecord) -> str:
        parts = [iso_timestamp(record.created), record.levelname, f"{record.name}:", record.getMessage()]
        parts.extend(f"{key}={_text_value(value)}" for key, value in fields(record).items())
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _text_value(value: Any) -> str:
    text = str(value)
    return orjson.dumps(text).decode() if (not text or any(c in text for c in ' ="\n')) else text


def formatter(log_format: str) -> logging.Formatter:
    if log_format == "json":
        return JsonFormatter()
    if log_format == "text":
        return TextFormatter()
    raise ValueError(f"log format {log_format!r} is not one of {', '.join(LOG_FORMATS)}; pass --log-format text|json")


def configure(level: str = "INFO", log_format: str = "text") -> None:
    """Send every logger's records to stderr in `log_format` at `level` (replaces the root's handlers)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(log_format))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
