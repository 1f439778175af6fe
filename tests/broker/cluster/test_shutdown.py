"""Stopping cluster nodes: SIGTERM always ends a node in bounded time with exit code 0, whether the rest of
the cluster is up, stopping at the same moment, gone, or was never there; a second SIGTERM exits at once."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.dev_cluster import DevCluster
from lakefeed_testing.net import free_port_block, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture
def dev_cluster(tmp_path: Path) -> Iterator[DevCluster]:
    cluster = DevCluster(3, tmp_path / "cluster", free_port_block(6))
    cluster.start(ready_timeout_s=60)
    try:
        yield cluster
    finally:
        cluster.stop()


def _terminate_all(procs: list[subprocess.Popen[bytes]], within_s: float) -> list[int]:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + within_s
    return [proc.wait(max(0.1, deadline - time.monotonic())) for proc in procs]


def test_the_whole_cluster_stopping_at_once_exits_cleanly(dev_cluster: DevCluster) -> None:
    procs = [dev_cluster.procs[n] for n in dev_cluster.node_ids]
    assert _terminate_all(procs, within_s=15) == [0, 0, 0]
    for n in dev_cluster.node_ids:
        text = dev_cluster.log_path(n).read_text()
        assert '"msg":"stopped"' in text, n
        assert '"level":"error"' not in text, f"node {n} logged an error while stopping"


def test_the_last_node_stops_after_the_others_were_killed(dev_cluster: DevCluster) -> None:
    dev_cluster.kill(1)
    dev_cluster.kill(2)
    started = time.monotonic()
    assert _terminate_all([dev_cluster.procs[3]], within_s=15) == [0]
    log = dev_cluster.log_path(3).read_text()
    # No controller is left to hand leaderships to; the node says so and stops anyway.
    assert "controlled shutdown not acknowledged" in log
    assert time.monotonic() - started < 15


def test_a_node_waiting_for_its_quorum_stops_on_sigterm_and_twice_means_now(tmp_path: Path) -> None:
    base = free_port_block(4)
    voters = ",".join(f"{n}@127.0.0.1:{base + n}" for n in (1, 2, 3))  # nodes 2 and 3 never start
    command = [sys.executable, "-m", "broker.cli", "start", "--data-dir", str(tmp_path / "data"),
               "--listeners", f"PLAINTEXT://127.0.0.1:{base}", "--set", "node.id=1",
               "--set", f"controller.quorum.voters={voters}"]
    log_path = tmp_path / "node.log"
    for signals, expected_code in (((signal.SIGTERM,), 0), ((signal.SIGTERM, signal.SIGTERM), 1)):
        with log_path.open("wb") as log:
            proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_until(lambda: "joining the cluster" in log_path.read_text(), timeout=30, what="node waiting to join",
                       alive=lambda proc=proc: proc.poll() is None)
            proc.send_signal(signals[0])
            if len(signals) == 2:  # the controlled shutdown waits for a controller that is not there
                wait_until(lambda: '"msg":"stopping"' in log_path.read_text(), timeout=10, what="stopping")
                proc.send_signal(signals[1])
            assert proc.wait(12) == expected_code
        finally:
            if proc.poll() is None:
                proc.kill()
    assert "second stop signal: exiting without a clean shutdown" in log_path.read_text()
