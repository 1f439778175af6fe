"""librdkafka's log lines reach Python logging (logger `librdkafka`, so the process's --log-format)
instead of raw `%3|...|FAIL|...` lines on stderr: a real producer against a port nobody listens on."""

import logging
import time

import pytest
from confluent_kafka import Producer

from lakefeed_testing.net import free_port
from sink.uri import parse_sink_uri


def test_librdkafka_connection_errors_are_python_log_records(caplog: pytest.LogCaptureFixture) -> None:
    config = parse_sink_uri(f"kafka://127.0.0.1:{free_port()}/t")
    producer = Producer(config.client_config())
    with caplog.at_level(logging.DEBUG, logger="librdkafka"):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(r.name == "librdkafka" for r in caplog.records):
            producer.poll(0.2)  # serves the forwarded log queue
    lines = [r.getMessage() for r in caplog.records if r.name == "librdkafka"]
    assert any("Connection refused" in line or "failed" in line.lower() for line in lines), lines
