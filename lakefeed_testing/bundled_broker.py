"""Our own broker (`broker start`) as a real process on a free 127.0.0.1 port, for examples and bench."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lakefeed_testing.net import free_port, port_open, wait_until


@dataclass(frozen=True)
class BundledBroker:
    port: int
    data_dir: Path
    log: Path

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"


@contextlib.contextmanager
def bundled_broker(data_dir: Path | None = None, **properties: str) -> Iterator[BundledBroker]:
    """Start `broker start` and stop it (SIGTERM, then SIGKILL) when done. `properties` are Kafka
    config names with '_' for '.', e.g. message_max_bytes='200000'."""
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lakefeed-broker-")))
        data_dir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        log = data_dir / "broker.log"
        command = [sys.executable, "-m", "broker.cli", "start", "--data-dir", str(data_dir / "data"),
                   "--listeners", f"PLAINTEXT://127.0.0.1:{port}"]
        for name, value in properties.items():
            command += ["--set", f"{name.replace('_', '.')}={value}"]
        with log.open("wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_until(lambda: port_open(port), timeout=30, what=f"broker on port {port} (log: {log})",
                       alive=lambda: process.poll() is None)
            yield BundledBroker(port, data_dir, log)
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
