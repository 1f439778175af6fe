"""Timing a producer that sends `count` records as fast as librdkafka takes them (shared by the broker
and cluster benchmarks, so both measure the same loop)."""

from __future__ import annotations

import time
from typing import Any

import click
from confluent_kafka import Producer


def timed_produce(producer: Producer, bootstrap: str, topic: str, payload: bytes, count: int) -> float:
    """Seconds until every record is acknowledged; a refused or unacknowledged record fails the run."""
    errors: list[Any] = []

    def report(error: Any, _message: Any) -> None:
        if error is not None:
            errors.append(error)

    started = time.perf_counter()
    for _ in range(count):
        try:
            producer.produce(topic, payload, on_delivery=report)
        except BufferError:  # the local queue is full: let deliveries drain it
            producer.poll(0.01)
            producer.produce(topic, payload, on_delivery=report)
        producer.poll(0)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - started
    if remaining or errors:
        raise click.ClickException(f"produce to {bootstrap}: {remaining} unacknowledged, errors {errors[:3]}")
    return elapsed
