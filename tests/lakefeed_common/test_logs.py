"""The one log format (lakefeed_common.logs): the same fields as text and as JSON, ISO-8601 UTC timestamps."""

import json
import logging

import pytest

from lakefeed_common.logs import JsonFormatter, TextFormatter, formatter, iso_timestamp


def _record(exc: bool = False) -> logging.LogRecord:
    record = logging.LogRecord("broker.server", logging.WARNING, __file__, 1, "closing %s", ("conn",), None)
    record.created = 1795480549.1234
    record.peer = "127.0.0.1:5000"  # an `extra=` field
    record.note = "two words"
    if exc:
        try:
            raise ValueError("boom")
        except ValueError:
            import sys

            record.exc_info = sys.exc_info()
    return record


def test_iso_timestamp_is_utc_with_milliseconds() -> None:
    assert iso_timestamp(1795480549.1234) == "2026-11-24T00:35:49.123Z"


def test_json_and_text_carry_the_same_fields() -> None:
    entry = json.loads(JsonFormatter().format(_record()))
    assert entry == {"ts": "2026-11-24T00:35:49.123Z", "level": "warning", "logger": "broker.server",
                     "msg": "closing conn", "peer": "127.0.0.1:5000", "note": "two words"}
    text = TextFormatter().format(_record())
    assert text == '2026-11-24T00:35:49.123Z WARNING broker.server: closing conn peer=127.0.0.1:5000 note="two words"'


def test_traces_are_kept() -> None:
    assert "ValueError: boom" in json.loads(JsonFormatter().format(_record(exc=True)))["exc"]
    assert TextFormatter().format(_record(exc=True)).splitlines()[-1] == "ValueError: boom"


def test_unknown_format_names_the_choices() -> None:
    with pytest.raises(ValueError, match="not one of text, json"):
        formatter("xml")
