"""The Go client program (tests/broker/sarama_client: Sarama and segmentio/kafka-go scenarios), built with the
machine's Go from the module cache scripts/setup.sh filled, and run against a Target."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.broker.conftest import Target

PROGRAM_DIR = Path(__file__).parent / "sarama_client"


def build(tmp_path_factory: pytest.TempPathFactory, program_dir: Path = PROGRAM_DIR) -> Path:
    """A Go test program (this one, or another such as tests/broker/franz_txn), built offline (GOPROXY=off): its
    modules come from the module cache `go mod download` filled."""
    go = shutil.which("go")
    if go is None:
        pytest.fail(f"`go` is not on PATH: {program_dir} needs the machine's Go toolchain (scripts/setup.sh)")
    binary = tmp_path_factory.mktemp(program_dir.name) / program_dir.name
    env = {**os.environ, "GOPROXY": "off", "GOFLAGS": "-mod=readonly -buildvcs=false", "GOTOOLCHAIN": "local"}
    result = subprocess.run([go, "build", "-o", str(binary), "."], cwd=program_dir, env=env, capture_output=True,
                            text=True, timeout=300)
    if result.returncode != 0:
        pytest.fail(f"go build of {program_dir} failed (are its modules downloaded? run scripts/setup.sh):\n"
                    f"{result.stdout}{result.stderr}")
    return binary


def run(binary: Path, target: Target, scenario: str, version: str = "default", timeout: float = 60) -> dict[str, Any]:
    """Runs one scenario to its end (the program gives up by itself after `timeout`); its JSON summary."""
    command = [str(binary), "-brokers", target.bootstrap, "-scenario", scenario, "-version", version,
               "-timeout", f"{int(timeout)}s"]
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 30)
    assert result.returncode == 0, (f"{target.name}: {scenario} (version {version}) exited {result.returncode} "
                                    f"after {time.monotonic() - started:.1f} s\n{result.stderr[-12000:]}"
                                    f"{target.log_tail()}")
    summary: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return summary
