"""Real processes for lifecycle tests: `changefeed server`s, our broker, the CLI, a topic reader."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest
from confluent_kafka import Consumer

from lakefeed_testing import MySQLServer
from lakefeed_testing.net import free_port, port_open, wait_until

FAST = ["--lease-ttl", "2", "--retry-initial", "1", "--retry-max", "4", "--healthy-after", "3",
        "--delivery-timeout-ms", "3000", "--log-level", "INFO"]


@dataclass
class Process:
    name: str
    port: int
    log_path: Path
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def kill(self) -> None:
        self.process.kill()  # SIGKILL: no cleanup, leases simply stop being renewed
        self.process.wait(timeout=10)


def _spawn(name: str, command: list[str], log_path: Path, port: int) -> Process:
    with log_path.open("ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    proc = Process(name, port, log_path, process)
    try:
        wait_until(lambda: port_open(port), timeout=30, what=name, alive=lambda: process.poll() is None)
    except Exception:
        proc.stop()
        raise
    return proc


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    """Every process a test starts goes here and is stopped after the test."""
    started: list[Process] = []
    yield started
    for proc in reversed(started):
        proc.stop()


StartServer = Callable[..., Process]


@pytest.fixture
def start_server(tmp_path: Path, processes: list[Process]) -> StartServer:
    def start(name: str = "s1", metadata_url: str | None = None, *extra: str) -> Process:
        port = free_port()
        command = [sys.executable, "-m", "changefeed.cli", "server", "--data-dir", str(tmp_path / name),
                   "--listen", f"127.0.0.1:{port}", "--server-id", name, *FAST, *extra]
        if metadata_url:
            command += ["--metadata-url", metadata_url]
        proc = _spawn(f"changefeed server {name}", command, tmp_path / f"{name}.log", port)
        processes.append(proc)
        return proc

    return start


def start_broker(root: Path, port: int | None = None) -> Process:
    root.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    command = [sys.executable, "-m", "broker.cli", "start", "--data-dir", str(root / "broker-data"),
               "--listeners", f"PLAINTEXT://127.0.0.1:{port}"]
    return _spawn("broker", command, root / "broker.log", port)


@pytest.fixture
def broker(tmp_path: Path, processes: list[Process]) -> Process:
    proc = start_broker(tmp_path)
    processes.append(proc)
    return proc


def source_uri(mysql: MySQLServer) -> str:
    return f"mysql://{quote(mysql.user)}:{quote(mysql.password)}@{mysql.host}:{mysql.port}?tls=false"


def cli(server: Process | str, *args: str, output: str | None = "json") -> subprocess.CompletedProcess[str]:
    url = server.url if isinstance(server, Process) else server
    command = [sys.executable, "-m", "changefeed.cli", *args, "--server", url]
    if output:
        command += ["--output", output]
    return subprocess.run(command, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


def cli_json(server: Process | str, *args: str) -> Any:
    result = cli(server, *args)
    assert result.returncode == 0, f"{args}: exit {result.returncode}: {result.stderr}"
    return json.loads(result.stdout)


def wait_for(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.3) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class TopicReader:
    """Reads a topic from the beginning; collects the ids of every INSERT seen (duplicates counted)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.consumer.subscribe([topic])
        self.inserts: list[int] = []

    def poll(self, seconds: float = 1.0) -> None:
        for record in self.consumer.consume(1000, timeout=seconds):
            if record.error() is not None:
                continue
            message = orjson.loads(record.value())
            if not message["isDdl"] and message["type"] == "INSERT":
                self.inserts.extend(int(row["id"]) for row in message["data"])

    def wait_ids(self, wanted: set[int], timeout: float) -> None:
        def seen() -> bool:
            self.poll()
            return wanted <= set(self.inserts)

        wait_for(seen, timeout, f"{len(wanted - set(self.inserts))} ids missing from the topic", interval=0)

    def close(self) -> None:
        self.consumer.close()


def insert_rows(mysql: MySQLServer, database: str, ids: range) -> None:
    with mysql.connect(database, autocommit=False) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO t (id, v) VALUES (%s, %s)", [(i, f"row-{i}") for i in ids])
        conn.commit()
