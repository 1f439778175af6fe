"""The dev-cluster process manager with real `broker start` processes (each still a single-node
broker: they do not know of each other yet)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from broker.dev_cluster import DevCluster, DevClusterError


def free_base_port(n: int) -> int:
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = int(s.getsockname()[1])
        if base + n < 65535 and all(_free(base + i) for i in range(n)):
            return base
    raise AssertionError("no free consecutive ports")


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_starts_nodes_writes_cluster_json_and_stops_them(tmp_path: Path) -> None:
    base = free_base_port(3)
    cluster = DevCluster(3, tmp_path, base)
    try:
        infos = cluster.start()
        data = json.loads((tmp_path / "cluster.json").read_text())
        assert [(n["node_id"], n["port"]) for n in data["nodes"]] == [(1, base), (2, base + 1), (3, base + 2)]
        for node in data["nodes"]:
            assert alive(node["pid"])
            md = AdminClient({"bootstrap.servers": f"127.0.0.1:{node['port']}"}).list_topics(timeout=10)
            assert node["port"] in [b.port for b in md.brokers.values()]  # a real Kafka client gets metadata
        pids = [i.pid for i in infos]
    finally:
        cluster.stop()
    assert not any(alive(p) for p in pids)
    assert not (tmp_path / "cluster.json").exists()


def test_sigterm_to_the_foreground_manager_stops_every_node(tmp_path: Path) -> None:
    base = free_base_port(2)
    proc = subprocess.Popen([sys.executable, "-m", "broker.dev_cluster", "2", str(tmp_path), str(base)])
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "cluster.json").exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        pids = [n["pid"] for n in json.loads((tmp_path / "cluster.json").read_text())["nodes"]]
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not any(alive(p) for p in pids)


def test_bad_arguments_and_busy_port_are_named(tmp_path: Path) -> None:
    with pytest.raises(DevClusterError, match="--nodes must be at least 1"):
        DevCluster(0, tmp_path, 20000)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        with pytest.raises(DevClusterError, match=f"port {busy} is already in use"):
            DevCluster(1, tmp_path, busy).start()
