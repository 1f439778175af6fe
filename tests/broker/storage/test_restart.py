"""`broker start` keeps partitions on disk: data produced before a stop (clean or kill -9) is consumed after."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from lakefeed_testing.net import free_port, port_open, wait_until

pytestmark = pytest.mark.integration


@contextmanager
def running_broker(
    data_dir: Path, port: int, log_path: Path, *settings: str
) -> Iterator[subprocess.Popen[bytes]]:
    command = [sys.executable, "-m", "broker.cli", "start", "--data-dir", str(data_dir),
               "--listeners", f"PLAINTEXT://127.0.0.1:{port}", *(f"--set={s}" for s in settings)]
    with log_path.open("ab") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: port_open(port), timeout=20, what="broker", alive=lambda: process.poll() is None)
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=15)


def consume_all(port: int, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "g-restart",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value() or b"")
            if len(values) >= expected:
                break
    finally:
        consumer.close()
    return values


@pytest.mark.parametrize("stop", ["terminate", "kill"])
def test_data_survives_restart(tmp_path: Path, stop: str) -> None:
    port, data_dir, topic = free_port(), tmp_path / "data", "durable"
    sent = [f"message-{i}".encode() * 20 for i in range(300)]
    with running_broker(data_dir, port, tmp_path / "broker.log") as process:
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(20)
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "linger.ms": 5})
        for i, value in enumerate(sent):
            producer.produce(topic, value=value, partition=i % 2)
        assert producer.flush(20) == 0
        process.send_signal(signal.SIGTERM if stop == "terminate" else signal.SIGKILL)
        process.wait(timeout=15)
    segments = sorted((data_dir / f"{topic}-0").glob("*.log"))
    assert segments and segments[0].name == "00000000000000000000.log" and segments[0].stat().st_size > 0
    assert (data_dir / f"{topic}-0" / ".kafka_cleanshutdown").exists() == (stop == "terminate")
    with running_broker(data_dir, port, tmp_path / "broker.log"):
        got = consume_all(port, topic, len(sent))
    assert sorted(got) == sorted(sent)


def test_an_idle_partition_is_trimmed_by_retention_after_a_restart_without_any_request(tmp_path: Path) -> None:
    """Every partition's log is opened at start-up (Kafka's LogManager.loadLogs), so retention reaches a
    partition that no client touches after the restart; checked on disk, since any request would open it."""
    port, data_dir, topic = free_port(), tmp_path / "data", "idle"
    with running_broker(data_dir, port, tmp_path / "broker.log"):
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        admin.create_topics([NewTopic(topic, 1, 1, config={"segment.bytes": "1024"})])[topic].result(20)
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "linger.ms": 0})
        for i in range(12):
            producer.produce(topic, value=b"x" * 400, key=str(i).encode())
            producer.flush(10)  # one batch each: a segment holds two
        assert producer.flush(10) == 0
    directory = data_dir / f"{topic}-0"
    before = sorted(p.name for p in directory.glob("*.log"))
    assert len(before) >= 5 and before[0] == "00000000000000000000.log"
    time.sleep(1.2)  # older than the retention below
    settings = ("log.retention.ms=1000", "log.retention.check.interval.ms=200")
    with running_broker(data_dir, port, tmp_path / "broker.log", *settings):
        # Retention deletes the expired segments one file at a time, oldest first: wait for the listing to
        # settle on the active segment alone, not just for the first one to go (CI read 4, 6, 8, 10 once).
        deadline = time.monotonic() + 15
        after = before
        while time.monotonic() < deadline and after != before[-1:]:
            time.sleep(0.1)
            after = sorted(p.name for p in directory.glob("*.log"))
    assert before[0] not in after, f"retention never ran on the idle partition: segments {after}"
    assert after == before[-1:], "every segment but the active one is past retention.ms"
