"""Read a topic back from the beginning with a real confluent-kafka consumer (no group, assigned)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes

    @property
    def message(self) -> Any:
        return orjson.loads(self.value)


def read_topic(bootstrap: str, topic: str, partitions: int, *, expected: int, timeout: float = 30.0) -> list[Record]:
    """Every record of `topic` in partition order; stops at `expected` records or after 1 s idle past it."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    records: list[Record] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and len(records) < expected:
            for item in consumer.consume(1000, timeout=0.5):
                error = item.error()
                if error is not None:
                    if error.code() == error._PARTITION_EOF:
                        continue
                    raise AssertionError(f"consume failed: {error}")
                records.append(Record(item.partition(), item.offset(), item.key(), item.value()))
    finally:
        consumer.close()
    return sorted(records, key=lambda r: (r.partition, r.offset))


def rebuild(records: list[Record]) -> dict[str, dict[str, str | None]]:
    """Apply row messages in order per partition (per-key order is per partition) keyed by `id`."""
    state: dict[str, dict[str, str | None]] = {}
    for record in records:
        message = record.message
        if message["isDdl"] or message["type"] not in ("INSERT", "UPDATE", "DELETE"):
            continue
        row = message["data"][0]
        if message["type"] == "DELETE":
            state.pop(row["id"], None)
        else:
            state[row["id"]] = row
    return state
