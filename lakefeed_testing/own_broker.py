"""Our broker (`broker start`) as a real process that a test or benchmark can stop and start again on one port."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lakefeed_testing.net import free_port, port_open, wait_until
from lakefeed_testing.processes import stop_process

# Small enough that oversized-row tests stay small; the sink URIs below say the same limit.
MESSAGE_MAX_BYTES = 200_000
# Tests also pass the limit in the sink URI, so a test states the limit it relies on.
SINK_LIMIT = MESSAGE_MAX_BYTES - 1024


class OwnBroker:
    def __init__(self, root: Path, settings: dict[str, str] | None = None, event_loop: str = "auto",
                 code: str | None = None) -> None:
        self.root = root
        self.settings = settings or {}
        self.event_loop = event_loop  # `broker start --event-loop`
        self.code = code  # another checkout whose broker runs (first on PYTHONPATH, this virtualenv), or None
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def uri(self, topic: str, **params: object) -> str:
        query = {"max-message-bytes": SINK_LIMIT, **params}
        tail = "&".join(f"{name.replace('_', '-')}={value}" for name, value in query.items())
        return f"kafka://{self.bootstrap}/{topic}?{tail}"

    def start(self) -> None:
        assert self.process is None
        self.starts += 1
        command = [
            sys.executable, "-m", "broker.cli", "start",
            "--data-dir", str(self.root / "data"),
            "--listeners", f"PLAINTEXT://127.0.0.1:{self.port}",
            "--event-loop", self.event_loop,
            "--set", "group.initial.rebalance.delay.ms=300",
            "--set", f"message.max.bytes={MESSAGE_MAX_BYTES}",
            *(arg for key, value in self.settings.items() for arg in ("--set", f"{key}={value}")),
        ]  # fmt: skip
        with (self.root / f"broker-{self.starts}.log").open("wb") as log_file:
            env = None if self.code is None else {**os.environ, "PYTHONPATH": self.code}
            process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=env)
        self.process = process
        wait_until(lambda: port_open(self.port), timeout=20, what="broker", alive=lambda: process.poll() is None)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        stop_process(process)
