"""One broker process (`broker start`) per test run, shared by every client test."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lakefeed_testing.net import free_port, port_open, wait_until
from lakefeed_testing.processes import stop_process


@dataclass(frozen=True)
class BrokerProcess:
    port: int
    data_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes]

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "broker" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp("broker")
    port = free_port()
    log_path = root / "broker.log"
    command = [
        sys.executable, "-m", "broker.cli", "start",
        "--data-dir", str(root / "data"),
        "--listeners", f"PLAINTEXT://127.0.0.1:{port}",
        "--set", "group.initial.rebalance.delay.ms=300",
        "--set", "socket.request.max.bytes=1048576",
        "--set", "message.max.bytes=200000",
        "--set", "log.retention.check.interval.ms=300",
    ]  # fmt: skip
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: port_open(port), timeout=20, what="broker", alive=lambda: process.poll() is None)
        yield BrokerProcess(port, root / "data", log_path, process)
    finally:
        stop_process(process)


@dataclass(frozen=True)
class Target:
    """Where a client test runs: our broker, or Apache Kafka 4.3 (the reference the same assertions must hold
    for)."""

    name: str
    bootstrap: str
    log_path: Path | None = None  # our broker's log, shown when a client program fails

    @property
    def port(self) -> int:
        return int(self.bootstrap.rsplit(":", 1)[1])

    def log_tail(self, chars: int = 6000) -> str:
        if self.log_path is None:
            return ""
        return "\n--- broker.log (tail) ---\n" + self.log_path.read_text(errors="replace")[-chars:]


@pytest.fixture(params=["lakefeed", "kafka"])
def target(request: pytest.FixtureRequest) -> Target:
    """Each test using it runs twice: against our broker and against the Kafka reference."""
    if request.param == "lakefeed":
        broker = request.getfixturevalue("broker")
        return Target("lakefeed", broker.bootstrap, broker.log_path)
    kafka = request.getfixturevalue("kafka")
    return Target("kafka", f"127.0.0.1:{kafka.port}")


@pytest.fixture
def topic_name() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"
