"""A local development cluster: N `broker start` processes on consecutive ports.

Process management only (the click command `broker dev-cluster` will call `run_foreground`):
each node gets `DIR/node-N` as its data dir, `127.0.0.1:BASE_PORT+N-1` as its listener and
`node.id=N`; `DIR/cluster.json` lists every node's id, port and pid; Ctrl-C / SIGTERM stops all of
them (SIGTERM, then SIGKILL after a grace period).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType


class DevClusterError(Exception):
    retriable = False


@dataclass(frozen=True)
class NodeInfo:
    node_id: int
    port: int
    pid: int
    data_dir: str


class DevCluster:
    def __init__(self, nodes: int, data_dir: Path, base_port: int, extra_args: tuple[str, ...] = ()) -> None:
        if nodes < 1:
            raise DevClusterError(f"--nodes must be at least 1, got {nodes}")
        if not 1024 <= base_port <= 65535 - nodes:
            raise DevClusterError(f"--base-port {base_port} leaves no room for {nodes} ports in 1024..65535")
        self.nodes = nodes
        self.data_dir = data_dir
        self.base_port = base_port
        self.extra_args = extra_args
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def cluster_file(self) -> Path:
        return self.data_dir / "cluster.json"

    def command(self, node_id: int) -> list[str]:
        port = self.base_port + node_id - 1
        return [
            sys.executable, "-m", "broker.cli", "start",
            "--data-dir", str(self.data_dir / f"node-{node_id}"),
            "--listeners", f"PLAINTEXT://127.0.0.1:{port}",
            "--set", f"node.id={node_id}",
            *self.extra_args,
        ]

    def start(self, ready_timeout_s: float = 30.0) -> list[NodeInfo]:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for n in range(1, self.nodes + 1):
            port = self.base_port + n - 1
            if _port_open(port):
                self.stop()
                raise DevClusterError(f"port {port} is already in use; pick another --base-port")
            (self.data_dir / f"node-{n}").mkdir(exist_ok=True)
            log = open(self.data_dir / f"node-{n}.log", "ab")  # noqa: SIM115 - the child keeps it open
            self.procs[n] = subprocess.Popen(self.command(n), stdout=log, stderr=log, start_new_session=True)
            log.close()
        deadline = time.monotonic() + ready_timeout_s
        for n, proc in self.procs.items():
            port = self.base_port + n - 1
            while not _port_open(port):
                if proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise DevClusterError(f"node {n} did not start on port {port}; see {self.data_dir}/node-{n}.log")
                time.sleep(0.05)
        infos = self.infos()
        tmp = self.cluster_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"nodes": [asdict(i) for i in infos]}, indent=2))
        os.replace(tmp, self.cluster_file)
        return infos

    def infos(self) -> list[NodeInfo]:
        return [
            NodeInfo(n, self.base_port + n - 1, p.pid, str(self.data_dir / f"node-{n}")) for n, p in self.procs.items()
        ]

    def stop(self, grace_s: float = 10.0) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for p in self.procs.values():
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.cluster_file.unlink(missing_ok=True)

    def run_foreground(self) -> int:
        """Start, then wait until Ctrl-C/SIGTERM or until any node exits; always stop every node."""
        stop = threading.Event()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stop.set()

        old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.start()
            while not stop.wait(0.2):
                dead = [n for n, p in self.procs.items() if p.poll() is not None]
                if dead:
                    print(f"node(s) {dead} exited; stopping the cluster", file=sys.stderr)
                    return 1
            return 0
        finally:
            self.stop()
            for s, h in old.items():
                signal.signal(s, h)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def main(argv: list[str] | None = None) -> int:
    """`python -m broker.dev_cluster NODES DATA_DIR BASE_PORT` until the click command exists."""
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 3:
        print("usage: python -m broker.dev_cluster NODES DATA_DIR BASE_PORT", file=sys.stderr)
        return 2
    try:
        return DevCluster(int(args[0]), Path(args[1]), int(args[2])).run_foreground()
    except (DevClusterError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
