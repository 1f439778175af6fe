"""The dev-cluster process manager with real `broker start` processes: ports, per-node settings,
cluster.json, failure injection (kill -9, restart, SIGSTOP/SIGCONT) and Ctrl-C. These hold whether or not
the nodes form one cluster; tests/broker/cluster/ checks the cluster itself."""

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
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from broker.dev_cluster import DevCluster, DevClusterError
from lakefeed_testing.net import free_port_block


def free_base_port(nodes: int) -> int:
    """A base port with 2 * nodes free consecutive ports (Kafka listeners, then controller listeners), below
    the kernel's ephemeral range: a block taken from that range can meanwhile hold the source port of another
    node's outgoing connection (CI saw node 2 fail to bind that way)."""
    return free_port_block(2 * nodes)


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
        assert [(n["node_id"], n["port"], n["controller_port"]) for n in data["nodes"]] == [
            (1, base, base + 3), (2, base + 1, base + 4), (3, base + 2, base + 5)]
        assert all(n["data_dir"] == str(tmp_path / f"node-{n['node_id']}") for n in data["nodes"])
        assert cluster.bootstrap_servers() == f"127.0.0.1:{base},127.0.0.1:{base + 1},127.0.0.1:{base + 2}"
        for node in data["nodes"]:
            assert alive(node["pid"])
            assert node["port"] in _broker_ports(f"127.0.0.1:{node['port']}", node["port"])  # real client metadata
        pids = [i.pid for i in infos]
    finally:
        cluster.stop()
    assert not any(alive(p) for p in pids)
    assert not (tmp_path / "cluster.json").exists()


def test_sigterm_to_the_foreground_manager_stops_every_node(tmp_path: Path) -> None:
    base = free_base_port(2)
    proc = subprocess.Popen([sys.executable, "-m", "broker.cli", "dev-cluster", "--nodes", "2",
                             "--data-dir", str(tmp_path), "--base-port", str(base)])
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
        with pytest.raises(DevClusterError, match=f"port {busy} is already in use"):
            DevCluster(2, tmp_path, busy - 3).start()  # node 2's controller port
    with pytest.raises(DevClusterError, match="--rack-count must be at least 1"):
        DevCluster(3, tmp_path, 20000, rack_count=0)
    result = subprocess.run([sys.executable, "-m", "broker.cli", "dev-cluster", "--nodes", "0", "--data-dir",
                             str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--nodes must be at least 1" in result.stderr
    # --listener-names reaches every node's listeners: an unmapped name is refused before any node starts
    result = subprocess.run([sys.executable, "-m", "broker.cli", "dev-cluster", "--nodes", "1", "--data-dir",
                             str(tmp_path), "--listener-names", "CLIENT,INTERNAL"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2, result.stderr
    assert "CLIENT is not a security protocol and has no entry in listener.security.protocol.map" in result.stderr


def test_node_settings_follow_the_port_layout_roles_racks_and_overrides(tmp_path: Path) -> None:
    five = DevCluster(5, tmp_path, 30000, rack_count=2, settings={"min.insync.replicas": "1", "cluster.id": "z"})
    voters = "1@127.0.0.1:30005,2@127.0.0.1:30006,3@127.0.0.1:30007"
    assert five.node_settings(1) == {
        "node.id": "1", "process.roles": "broker,controller", "controller.quorum.voters": voters,
        "broker.rack": "rack-1", "default.replication.factor": "3", "min.insync.replicas": "1",
        "offsets.topic.replication.factor": "3", "cluster.id": "z",
    }
    assert five.node_settings(4)["process.roles"] == "broker" and five.node_settings(4)["broker.rack"] == "rack-0"
    command = five.command(4)
    assert command[command.index("--listeners") + 1] == "PLAINTEXT://127.0.0.1:30003"
    assert command[command.index("--data-dir") + 1] == str(tmp_path / "node-4")
    assert "controller.quorum.voters=" + voters in command
    two = DevCluster(2, tmp_path, 30000)
    assert two.node_settings(2) == {
        "node.id": "2", "process.roles": "broker,controller",
        "controller.quorum.voters": "1@127.0.0.1:30002,2@127.0.0.1:30003",
    }  # fewer than 3 nodes: no RF 3 default (it could never be met)


def test_kill_restart_pause_resume_act_on_the_real_processes(tmp_path: Path) -> None:
    base = free_base_port(1)
    cluster = DevCluster(1, tmp_path, base)
    try:
        cluster.start()
        first = cluster.procs[1].pid
        cluster.pause(1)
        assert _stopped(first, True)
        cluster.resume(1)
        assert not _stopped(first, False)
        with pytest.raises(DevClusterError, match="still running"):
            cluster.restart(1)
        cluster.kill(1)
        assert cluster.procs[1].returncode == -signal.SIGKILL and not cluster.alive(1)
        cluster.restart(1)
        second = cluster.procs[1].pid
        assert second != first and alive(second)
        assert json.loads((tmp_path / "cluster.json").read_text())["nodes"][0]["pid"] == second
        assert cluster.alive(1), cluster.log_path(1).read_text()[-3000:]
        assert _broker_ports(cluster.bootstrap_servers(), base) == [base], cluster.log_path(1).read_text()[-3000:]
        cluster.pause(1)  # stop() must end a paused node too
    finally:
        cluster.stop(grace_s=5)
    assert not alive(second)


def _broker_ports(bootstrap: str, expected: int) -> list[int]:
    """Ports of the brokers in Metadata, polled (bounded) until `expected` is among them: a clustered node is
    listed once it has registered with the controller, which may be a moment after its port opens.
    A transport error (the connection dropped, or refused while a restarted node opens its listener) is
    retried within the deadline, as a Kafka client retries it; the last one is raised if it never answers."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 30
    while True:
        try:
            ports = sorted(b.port for b in admin.list_topics(timeout=10).brokers.values())
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
            continue
        if expected in ports or time.monotonic() > deadline:
            return ports
        time.sleep(0.2)


def _stopped(pid: int, expected: bool) -> bool:
    """Whether /proc shows the process stopped by a signal (state T), polled until `expected` or 5 s."""
    deadline = time.monotonic() + 5
    while True:
        stopped = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("T", "t")
        if stopped == expected or time.monotonic() > deadline:
            return stopped
        time.sleep(0.02)


def _pids(data_dir: Path) -> dict[int, int]:
    try:
        nodes = json.loads((data_dir / "cluster.json").read_text())["nodes"]
    except (OSError, ValueError):
        return {}
    return {n["node_id"]: n["pid"] for n in nodes}


@pytest.mark.parametrize("restart", [False, True])
def test_a_node_that_dies_is_reported_and_the_others_keep_running(tmp_path: Path, restart: bool) -> None:
    """Issue 14: a local cluster is what an operator expects: one node's death is reported, the others keep
    serving, and `--restart` brings the node back on its data dir."""
    base = free_base_port(3)
    log_file = (tmp_path / "manager.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "broker.cli", "dev-cluster", "--nodes", "3", "--data-dir",
                             str(tmp_path), "--base-port", str(base), *(["--restart"] if restart else [])],
                            stderr=log_file)
    try:
        deadline = time.monotonic() + 30
        while len(_pids(tmp_path)) < 3:
            assert time.monotonic() < deadline and proc.poll() is None, "the cluster did not start"
            time.sleep(0.05)
        before = _pids(tmp_path)
        os.kill(before[2], signal.SIGKILL)
        deadline = time.monotonic() + 40
        while "node 2 exited" not in (tmp_path / "manager.log").read_text() or (
                restart and _pids(tmp_path).get(2) in (None, before[2])):
            assert time.monotonic() < deadline, (tmp_path / "manager.log").read_text()
            time.sleep(0.1)
        assert proc.poll() is None, "the manager stopped the cluster when one node died"
        assert alive(before[1]) and alive(before[3])
        # With --restart node 2 is back in Metadata; without, it leaves Metadata once its session expires.
        wanted = [base, base + 1, base + 2] if restart else [base, base + 2]
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{base}"})
        deadline = time.monotonic() + 40
        while (ports := sorted(b.port for b in admin.list_topics(timeout=10).brokers.values())) != wanted:
            assert time.monotonic() < deadline, f"Metadata lists brokers on {ports}, expected {wanted}"
            time.sleep(0.2)
        last = _pids(tmp_path)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log_file.close()
    assert not any(alive(p) for p in last.values())
